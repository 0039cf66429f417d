//! Runs every `/mutate` and `/mutate/recovery` fixture in-process through
//! `jobgate::admission::review`: the answer (patch base64-decoded) must equal `.response.json`, the
//! patch applied to `request.object` must equal `.patched.json`, and jobgate reviewing its own
//! output must patch nothing. (tests/curl-fixtures.sh sends the same files over TLS.)

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod review;
}

use std::path::{Path, PathBuf};

use base64::Engine;
use jobgate::admission::{Endpoint, review};
use jobgate::job::Config;
use serde_json::Value;

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The review's answer with `response.patch` decoded from base64 into its JSON array.
fn answer(endpoint: Endpoint, request: &Value) -> Value {
    let body = serde_json::to_vec(request).unwrap();
    let outcome = review(endpoint, &body, &Config::default());
    assert_eq!(outcome.http_status, 200);
    let mut answer: Value = serde_json::from_slice(&outcome.body).unwrap();
    if let Some(Value::String(b64)) = answer["response"].get("patch") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("patch is base64");
        answer["response"]["patch"] = serde_json::from_slice(&bytes).expect("patch is JSON");
    }
    answer
}

fn check_fixtures(dir: &str, endpoint: Endpoint) -> (usize, usize) {
    let mut patched_count = 0;
    let paths = support::review::fixture_requests(dir);
    for request_path in &paths {
        let name = request_path.to_string_lossy().replace(".request.json", "");
        let request = read_json(request_path);
        let expected = read_json(Path::new(&format!("{name}.response.json")));
        let got = answer(endpoint, &request);
        assert_eq!(got, expected, "{name}.response.json");

        let patched_path = PathBuf::from(format!("{name}.patched.json"));
        match got["response"].get("patch") {
            Some(patch) => {
                patched_count += 1;
                let patch: json_patch::Patch = serde_json::from_value(patch.clone())
                    .unwrap_or_else(|e| panic!("{name}: not an RFC 6902 patch: {e}"));
                let mut object = request["request"]["object"].clone();
                json_patch::patch(&mut object, &patch.0)
                    .unwrap_or_else(|e| panic!("{name}: patch does not apply: {e}"));
                assert!(
                    patched_path.exists(),
                    "{name}: patched without a .patched.json"
                );
                assert_eq!(object, read_json(&patched_path), "{name}.patched.json");

                // Reinvocation (reinvocationPolicy: IfNeeded) on jobgate's own output.
                let mut again = request.clone();
                again["request"]["object"] = object;
                let second = answer(endpoint, &again);
                assert_eq!(
                    second["response"].get("patch"),
                    None,
                    "{name}: second review patched again"
                );
            }
            None => assert!(!patched_path.exists(), "{name}: .patched.json but no patch"),
        }
    }
    (paths.len(), patched_count)
}

#[test]
fn mutate_fixtures_answer_as_expected_and_their_patches_produce_the_patched_objects() {
    let (all, patched) = check_fixtures("mutate", Endpoint::Mutate);
    assert!(
        all >= 13 && patched >= 7,
        "{all} fixtures, {patched} patched"
    );
}

#[test]
fn mutate_recovery_fixtures_answer_as_expected_and_their_patches_produce_the_patched_objects() {
    let (all, patched) = check_fixtures("mutate-recovery", Endpoint::MutateRecovery);
    assert!(
        all >= 7 && patched >= 5,
        "{all} fixtures, {patched} patched"
    );
}
