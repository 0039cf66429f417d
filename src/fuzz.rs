//! The invariants the fuzz targets (`fuzz/`) and their proptest twin (`tests/fuzz_twin.rs`)
//! check on every input. Public for them only.

use axum::http::StatusCode;
use base64::Engine;
use serde_json::Value;

use crate::admission::{self, Endpoint};
use crate::job::Config;

/// Reviews `body` at `endpoint` and checks what any answer must satisfy:
/// - HTTP 200 carries a valid `admission.k8s.io/v1` AdmissionReview whose `response.uid` is the
///   request's uid, `allowed` a bool, `patch` and `patchType: JSONPatch` both or neither, a patch
///   only when allowed;
/// - any other status is 400 with a `metav1.Status` body;
/// - a patch applies to `request.object`, and reviewing the patched object again yields no patch
///   (the mutation is idempotent).
///
/// Panics (what a fuzzer reports) when an invariant breaks.
pub fn check_review(endpoint: Endpoint, body: &[u8], config: &Config) {
    if let Err(broken) = review_invariants(endpoint, body, config) {
        panic!(
            "{broken}\nendpoint: {}\ninput: {}",
            endpoint.path(),
            String::from_utf8_lossy(body)
        );
    }
}

fn review_invariants(endpoint: Endpoint, body: &[u8], config: &Config) -> Result<(), String> {
    let outcome = admission::review(endpoint, body, config);
    let answer: Value = serde_json::from_slice(&outcome.body)
        .map_err(|e| format!("the answer is not JSON: {e}"))?;
    if outcome.http_status != 200 {
        return status_invariants(outcome.http_status, &answer);
    }
    let body = &*crate::job::wire::strict::go_surrogates(body);
    let Some(patch) = review_patch(body, &answer)? else {
        return Ok(());
    };
    patch_invariants(endpoint, body, patch, config)
}

/// An answer other than 200 is a 400 `metav1.Status`.
fn status_invariants(http_status: StatusCode, answer: &Value) -> Result<(), String> {
    if http_status != 400 || answer["kind"] != "Status" || answer["code"] != 400 {
        return Err(format!(
            "HTTP {} with a body that is not a 400 Status: {answer}",
            http_status.as_u16()
        ));
    }
    Ok(())
}

/// The 200 answer to `body` is an AdmissionReview v1 for the request's uid, with `allowed` a
/// bool and `patch` and `patchType: JSONPatch` both or neither, a patch only when allowed;
/// returns its `patch`, if any.
fn review_patch<'a>(body: &[u8], answer: &'a Value) -> Result<Option<&'a Value>, String> {
    let uid = crate::job::wire::envelope::parse(body)
        .map(|p| p.uid)
        .map_err(|e| format!("answered 200 to a review that cannot be parsed: {e}"))?;
    if answer["apiVersion"] != "admission.k8s.io/v1" || answer["kind"] != "AdmissionReview" {
        return Err(format!("not an AdmissionReview v1: {answer}"));
    }
    let response = &answer["response"];
    if response["uid"] != Value::String(uid) {
        return Err(format!("uid differs from the request's: {answer}"));
    }
    let Some(allowed) = response["allowed"].as_bool() else {
        return Err(format!("allowed is not a bool: {answer}"));
    };
    let patch = response.get("patch");
    if patch.is_some() != response.get("patchType").is_some() {
        return Err(format!("patch and patchType not both or neither: {answer}"));
    }
    let Some(patch) = patch else {
        return Ok(None);
    };
    if !allowed {
        return Err(format!("a patch on a denial: {answer}"));
    }
    if response["patchType"] != "JSONPatch" {
        return Err(format!("patchType is not JSONPatch: {answer}"));
    }
    Ok(Some(patch))
}

/// `patch` (base64 JSON Patch) applies to `body`'s `request.object`, and reviewing the patched
/// object again yields no patch (the mutation is idempotent).
fn patch_invariants(
    endpoint: Endpoint,
    body: &[u8],
    patch: &Value,
    config: &Config,
) -> Result<(), String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch.as_str().unwrap_or_default())
        .map_err(|e| format!("patch is not base64: {e}"))?;
    let patch: json_patch::Patch =
        serde_json::from_slice(&bytes).map_err(|e| format!("patch is not JSON Patch: {e}"))?;
    // The patch must apply to the object as sent. (A body serde_json cannot read as a tree, e.g.
    // with a repeated key, is not checked further.)
    let Ok(mut request_body) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    let Some(object) = request_body.pointer_mut("/request/object") else {
        return Err("a patch for a review without request.object".into());
    };
    json_patch::patch(object, &patch)
        .map_err(|e| format!("the patch does not apply to request.object: {e}"))?;
    let again = serde_json::to_vec(&request_body).unwrap_or_default();
    let second = admission::review(endpoint, &again, config);
    let second: Value = serde_json::from_slice(&second.body)
        .map_err(|e| format!("the second answer is not JSON: {e}"))?;
    if second["response"].get("patch").is_some() {
        return Err(format!(
            "not idempotent: the patched object gets another patch: {second}"
        ));
    }
    Ok(())
}

/// `jobgate check`'s reader and rules on one input: no panic, whatever the text.
pub fn check_reader(text: &str, config: &Config) {
    let source = crate::check::input::Input {
        name: "fuzz".into(),
        text: text.to_string(),
    };
    let mut report = crate::check::Report::default();
    let chain = crate::check::Chain {
        config,
        mutate: true,
        recovery_namespaces: &[],
        default_namespace: "default",
        field_validation: crate::check::FieldValidation::Strict,
        kueue_recovers: Some(true),
    };
    crate::check::check_source(&source, &chain, &mut report);
}

/// The config file reader (`--config`): an error or a config, never a panic.
pub fn config_file(text: &str) {
    let mut config = Config::default();
    let _ = config.merge_yaml(text);
}
