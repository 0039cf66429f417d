//! Bytes in, AdmissionReview out, at `validate`: the invariants of `jobgate::fuzz::check_review`.
#![no_main]

use jobgate::admission::Endpoint;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    jobgate::fuzz::check_review(Endpoint::Validate, body, &jobgate::job::Config::default());
});
