//! Reviews a hostile client could send straight to the webhook port, reviewed in-process: each
//! gets a bounded answer, and a rule that cannot read what it compares never passes silently.

use std::time::Instant;

use jobgate::admission::{Endpoint, review};
use jobgate::job::Config;
use serde_json::{Value, json};

fn job_review(operation: &str, object: Value, old: Option<Value>) -> Vec<u8> {
    let mut request = json!({
        "uid": "u-1",
        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
        "operation": operation,
        "namespace": "default",
        "name": "pi",
        "object": object,
    });
    if let Some(old) = old {
        request["oldObject"] = old;
    }
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    }))
    .unwrap()
}

fn job(template: Value, extra_spec: Value) -> Value {
    let mut spec = json!({"template": template});
    if let Value::Object(extra) = extra_spec {
        spec.as_object_mut().unwrap().extend(extra);
    }
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"}, "spec": spec})
}

fn template() -> Value {
    json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}})
}

fn response(body: &[u8]) -> Value {
    serde_json::from_slice::<Value>(body).unwrap()["response"].clone()
}

/// A pod failure policy rule listing `n` times the exit code 1.
fn duplicate_exit_codes(n: usize) -> Vec<u8> {
    let policy = json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": vec![1; n]}}]});
    job_review(
        "CREATE",
        job(template(), json!({"podFailurePolicy": policy})),
        None,
    )
}

/// kube-apiserver would list one Duplicate error per repeated value (and echo the whole list in
/// "must be ordered" style messages); jobgate's answer stays small whatever the count.
#[test]
fn a_review_with_200k_duplicate_exit_codes_gets_a_bounded_denial() {
    let body = duplicate_exit_codes(200_000);
    let started = Instant::now();
    let outcome = review(Endpoint::Validate, &body, &Config::default());
    let elapsed = started.elapsed();
    eprintln!(
        "200k duplicates: request {} bytes, answer {} bytes, {elapsed:?}",
        body.len(),
        outcome.body.len()
    );
    assert_eq!(outcome.http_status, 200);
    assert!(
        outcome.body.len() < 64 * 1024,
        "answer of {} bytes",
        outcome.body.len()
    );
    let r = response(&outcome.body);
    assert_eq!(r["allowed"], false);
    let status = &r["status"];
    assert_eq!(status["code"], 422);
    let causes = status["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 100);
    assert_eq!(
        causes[0]["field"],
        "spec.podFailurePolicy.rules[0].onExitCodes.values"
    );
    assert_eq!(causes[0]["reason"], "FieldValueTooMany");
    assert_eq!(
        causes[1]["field"],
        "spec.podFailurePolicy.rules[0].onExitCodes.values[1]"
    );
    assert_eq!(causes[1]["message"], "Duplicate value: 1");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(r#"Job.batch "pi" is invalid: [spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 200000: must have at most 255 items, "#),
        "{message}"
    );
    assert!(
        message.ends_with(", and at least 900 more errors]"),
        "{message}"
    );
}

#[test]
fn a_3mb_review_of_duplicate_exit_codes_is_bounded_too() {
    let body = duplicate_exit_codes(1_500_000);
    assert!(body.len() > 3_000_000);
    let started = Instant::now();
    let outcome = review(Endpoint::Validate, &body, &Config::default());
    eprintln!(
        "1.5M duplicates: request {} bytes, answer {} bytes, {:?}",
        body.len(),
        outcome.body.len(),
        started.elapsed()
    );
    assert!(outcome.body.len() < 64 * 1024);
    assert_eq!(
        response(&outcome.body)["status"]["details"]["causes"]
            .as_array()
            .unwrap()
            .len(),
        100
    );
}

#[test]
fn an_echoed_value_is_cut_in_causes_and_message() {
    // Unordered values: "must be ordered" echoes the whole list.
    let values: Vec<i32> = (1_000_000..1_000_250).rev().collect();
    let policy = json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": values}}]});
    let body = job_review(
        "CREATE",
        job(template(), json!({"podFailurePolicy": policy})),
        None,
    );
    let r = response(&review(Endpoint::Validate, &body, &Config::default()).body);
    let cause = &r["status"]["details"]["causes"][0];
    assert_eq!(
        cause["field"],
        "spec.podFailurePolicy.rules[0].onExitCodes.values"
    );
    let message = cause["message"].as_str().unwrap();
    assert!(
        message.starts_with("Invalid value: [1000249,1000248,"),
        "{message}"
    );
    assert!(message.ends_with(" bytes truncated)"), "{message}");
    assert!(message.len() < 1100);
}

fn template_update(new_template: &str, old_template: &str) -> Vec<u8> {
    let object = |t: &str| {
        format!(
            r#"{{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"pi"}},"spec":{{"template":{t}}}}}"#
        )
    };
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u-2","kind":{{"group":"batch","version":"v1","kind":"Job"}},"operation":"UPDATE","name":"pi","object":{},"oldObject":{}}}}}"#,
        object(new_template),
        object(old_template)
    )
    .into_bytes()
}

/// kube-apiserver re-encodes what it sends, so such templates come only from a client talking
/// to jobgate directly: the answer is a warning naming the field, never a denial, never silence.
#[test]
fn a_template_that_cannot_be_read_is_a_warning_naming_spec_template() {
    let readable = r#"{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}"#;
    let deep = format!(
        r#"{{"spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"i"}}],"x":{}1{}}}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    for unreadable in [
        r#"{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}],"x":1e400}}"#
            .to_string(),
        r#"{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}],"x":1,"x":2}}"#
            .to_string(),
        deep,
    ] {
        for (new, old) in [
            (readable, unreadable.as_str()),
            (unreadable.as_str(), readable),
        ] {
            let outcome = review(
                Endpoint::Validate,
                &template_update(new, old),
                &Config::default(),
            );
            let r = response(&outcome.body);
            assert_eq!(
                r["allowed"],
                true,
                "{}",
                String::from_utf8_lossy(&outcome.body)
            );
            let warnings = r["warnings"].as_array().cloned().unwrap_or_default();
            assert!(
                warnings.iter().any(|w| w
                    .as_str()
                    .unwrap_or("")
                    .starts_with("spec.template: the templates cannot be compared")),
                "{r}"
            );
        }
    }
    // A readable change is still denied as immutable.
    let changed = r#"{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"j"}]}}"#;
    let r = response(
        &review(
            Endpoint::Validate,
            &template_update(changed, readable),
            &Config::default(),
        )
        .body,
    );
    assert_eq!(r["allowed"], false);
    assert_eq!(
        r["status"]["details"]["causes"][0]["field"],
        "spec.template"
    );
}

/// serde reads a struct from a JSON array (`["a"]` as a request whose uid is "a");
/// kube-apiserver's decoder reads objects only from JSON objects.
#[test]
fn a_request_that_is_an_array_is_not_an_admission_request() {
    for request in [r#"["a"]"#, r#"["u","",""]"#] {
        let body = format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{request}}}"#
        );
        let outcome = review(Endpoint::Validate, body.as_bytes(), &Config::default());
        assert_eq!(outcome.http_status, 400, "{request}");
        let message = serde_json::from_slice::<Value>(&outcome.body).unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains("invalid type: sequence"), "{message}");
    }
}

/// Go's decoder reads an unpaired surrogate escape as U+FFFD; serde_json refused the whole body
/// ("unexpected end of hex escape"). Every entry point now reads it as Go does.
#[test]
fn a_lone_surrogate_is_the_replacement_character_everywhere() {
    let with = |s: &str| {
        format!(
            r#"{{"spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"i","args":["{s}"]}}]}}}}"#
        )
    };
    let outcome = review(
        Endpoint::Validate,
        &template_update(&with("\\ud800"), &with("\\ufffd")),
        &Config::default(),
    );
    let r = response(&outcome.body);
    assert_eq!(r["allowed"], true, "{r}");
    assert!(r.get("warnings").is_none(), "{r}");
    let changed = review(
        Endpoint::Validate,
        &template_update(&with("\\ud800"), &with("x")),
        &Config::default(),
    );
    assert_eq!(response(&changed.body)["allowed"], false);
    // The envelope too: a lone surrogate in the uid is answered, as U+FFFD.
    let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a\udc00","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE"}}"#;
    let outcome = review(Endpoint::Mutate, body, &Config::default());
    assert_eq!(outcome.http_status, 200);
    assert_eq!(response(&outcome.body)["uid"], "a\u{fffd}");
}

/// `"backoffLimit": -0` was answered "invalid type: floating point -0.0"; Go reads 0.
#[test]
fn minus_zero_is_read_as_zero() {
    let body = job_review("CREATE", job(template(), json!({})), None);
    let body = String::from_utf8(body)
        .unwrap()
        .replace(r#""spec":{"#, r#""spec":{"backoffLimit":-0,"#);
    for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
        let outcome = review(endpoint, body.as_bytes(), &Config::default());
        let r = response(&outcome.body);
        assert_eq!(r["allowed"], true, "{r}");
    }
}

/// A template whose `metadata` is an array is not an object to patch into.
#[test]
fn a_template_metadata_array_is_unreadable_not_patched() {
    let t = json!({"metadata": ["a"], "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}});
    let mut object = job(t, json!({}));
    object["metadata"]["annotations"] = json!({"jobgate.dev/failure-recovery": "enabled"});
    let body = job_review("CREATE", object, None);
    for endpoint in [
        Endpoint::Mutate,
        Endpoint::MutateRecovery,
        Endpoint::Validate,
    ] {
        let outcome = review(endpoint, &body, &Config::default());
        let r = response(&outcome.body);
        assert_eq!(r["allowed"], false, "{r}");
        assert!(r.get("patch").is_none(), "{r}");
        assert_eq!(r["status"]["code"], 400, "{r}");
        let message = r["status"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("request.object.spec.template.metadata: invalid type: sequence"),
            "{message}"
        );
    }
}
