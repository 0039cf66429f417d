//! Bytes in, AdmissionReview out, at `mutate/recovery`: the invariants of `jobgate::fuzz::check_review`.
#![no_main]

use jobgate::admission::Endpoint;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    jobgate::fuzz::check_review(Endpoint::MutateRecovery, body, &jobgate::job::Config::default());
});
