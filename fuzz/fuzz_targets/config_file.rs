//! The `--config` file reader on any text: an error or a config, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &[u8]| {
    jobgate::fuzz::config_file(&String::from_utf8_lossy(text));
});
