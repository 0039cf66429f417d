//! `jobgate check`'s YAML/JSON reader and rules on any text: no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &[u8]| {
    let text = String::from_utf8_lossy(text);
    jobgate::fuzz::check_reader(&text, &jobgate::job::Config::default());
});
