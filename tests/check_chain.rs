//! `jobgate check` gives the cluster's verdict: for every AdmissionReview fixture, and for the
//! opt-in example of docs/src/mutation.md, what `check` says equals what a running
//! `jobgate serve` says when
//! kube-apiserver calls `/mutate` (or `/mutate/recovery`), applies the patch, and calls
//! `/validate` with the patched object: allowed or not, the same errors, the same warnings (the
//! mutating webhook's, then the validating one's) and the same patch.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod review;
    pub mod serve;
}

use std::path::Path;
use std::process::Command;

use base64::Engine;
use serde_json::{Value, json};
use support::serve::{Jobgate, curl};

fn post(jg: &Jobgate, path: &str, review: &Value) -> Value {
    let ca = jg.ca.display().to_string();
    let body = review.to_string();
    let reply = curl(&[
        "--cacert",
        &ca,
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &body,
        &jg.url(path),
    ]);
    assert_eq!(reply.status, 200, "{path}: {reply:?}");
    reply.json()
}

/// What the cluster says: /mutate (or /mutate/recovery), the patch applied, /validate.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Not a Job or CronJob CREATE/UPDATE: let through untouched.
    Untouched,
    /// The object cannot be read: why, in the webhook's words (`status.message`).
    Unreadable(String),
    Reviewed {
        allowed: bool,
        /// `field: message` of every error.
        errors: Vec<String>,
        warnings: Vec<String>,
        patch: Value,
    },
}

fn cluster(jg: &Jobgate, mutate_path: &str, review: &Value) -> Verdict {
    let mutated = post(jg, mutate_path, review);
    let response = &mutated["response"];
    if response["allowed"] == false {
        assert_eq!(response["status"]["code"], 400, "{mutated}");
        return Verdict::Unreadable(response["status"]["message"].as_str().unwrap().into());
    }
    let patch: Value = match response["patch"].as_str() {
        Some(b64) => serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64 patch"),
        )
        .expect("JSON patch"),
        None => json!([]),
    };
    let mut patched = review.clone();
    let ops: json_patch::Patch = serde_json::from_value(patch.clone()).expect("RFC 6902");
    json_patch::patch(&mut patched["request"]["object"], &ops.0).expect("the patch applies");
    let validated = post(jg, "/validate", &patched);
    let v = &validated["response"];
    if v["allowed"] == false && v["status"]["code"] == 400 {
        return Verdict::Unreadable(v["status"]["message"].as_str().unwrap().into());
    }
    let strings = |w: &Value| -> Vec<String> {
        w.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let mut warnings = strings(&response["warnings"]);
    warnings.extend(strings(&v["warnings"]));
    let errors = support::review::denial_causes(v);
    let untouched =
        v["allowed"] == true && warnings.is_empty() && patch == json!([]) && is_untouched(review);
    if untouched {
        return Verdict::Untouched;
    }
    Verdict::Reviewed {
        allowed: v["allowed"] == true,
        errors,
        warnings,
        patch,
    }
}

/// A review jobgate lets through without reading: another kind, DELETE, CONNECT.
fn is_untouched(review: &Value) -> bool {
    let r = &review["request"];
    let ours = r["kind"]["group"] == "batch"
        && r["kind"]["version"] == "v1"
        && (r["kind"]["kind"] == "Job" || r["kind"]["kind"] == "CronJob");
    !ours || !(r["operation"] == "CREATE" || r["operation"] == "UPDATE")
}

/// What `jobgate check -o json` says about `file`.
fn check(file: &Path, extra: &[&str]) -> Verdict {
    let out = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args(["check", "-o", "json"])
        .args(extra)
        .arg(file)
        .env_remove("JOBGATE_POLICY")
        .env_remove("JOBGATE_CONFIG")
        .env_remove("JOBGATE_KUBERNETES_VERSION")
        .env_remove("JOBGATE_FEATURE_GATES")
        .env_remove("JOBGATE_OUTPUT")
        .output()
        .expect("run jobgate check");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    if let Some(first) = v["unreadable"].as_array().and_then(|u| u.first()) {
        assert_eq!(out.status.code(), Some(2));
        return Verdict::Unreadable(first["reason"].as_str().unwrap().into());
    }
    let Some(object) = v["objects"].as_array().and_then(|o| o.first()) else {
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(v["ignored"].as_array().map(Vec::len), Some(1), "{v}");
        return Verdict::Untouched;
    };
    let of = |severities: &[&str]| -> Vec<String> {
        object["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| severities.iter().any(|s| f["severity"] == *s))
            // Which controller recovers the pods: check's own note, no webhook says it.
            .filter(|f| f["source"] != "jobgate-recovery")
            .filter_map(|f| f["message"].as_str().map(str::to_string))
            .collect()
    };
    let allowed = object["allowed"] == true;
    assert_eq!(out.status.code(), Some(if allowed { 0 } else { 1 }));
    Verdict::Reviewed {
        allowed,
        errors: of(&["error"]),
        // The response carries notes (what the mutation changed) as warnings too.
        warnings: of(&["warning", "note"]),
        patch: object["patch"].clone(),
    }
}

#[test]
fn check_equals_mutate_then_validate_for_every_fixture() {
    let jg = Jobgate::start(&[]);
    let mut compared = 0;
    let mut reviewed = 0;
    for (dir, mutate_path) in [
        ("mutate", "/mutate"),
        ("mutate-recovery", "/mutate/recovery"),
        ("validate", "/mutate"),
        ("validate-by-version", "/mutate"),
    ] {
        let files = support::review::fixture_requests(dir);
        assert!(!files.is_empty(), "no fixtures in {dir}");
        for file in files {
            let review: Value =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).expect("fixture JSON");
            // A namespace labelled for /mutate/recovery is what --recovery-namespace says.
            let namespace = review["request"]["namespace"].as_str().unwrap_or("default");
            let extra: Vec<&str> = if mutate_path == "/mutate/recovery" {
                vec!["--recovery-namespace", namespace]
            } else {
                vec![]
            };
            let expected = cluster(&jg, mutate_path, &review);
            let got = check(&file, &extra);
            assert_eq!(got, expected, "{}", file.display());
            compared += 1;
            if matches!(expected, Verdict::Reviewed { .. }) {
                reviewed += 1;
            }
        }
    }
    assert!(
        compared >= 40 && reviewed >= 35,
        "{compared} compared, {reviewed} reviewed"
    );
}

/// The opt-in example of docs/src/mutation.md: `/mutate` opts it into recovery, and with
/// `recovery-counts-toward-backoff=deny` `/validate` then denies it; so does `check`.
#[test]
fn the_readme_opt_in_example_is_denied_by_check_as_by_the_cluster() {
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\n  annotations:\n    jobgate.dev/failure-recovery: \"enabled\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: trainer, image: ghcr.io/example/trainer:1.4}]\n";
    let deny = ["--policy", "recovery-counts-toward-backoff=deny"];
    let jg = Jobgate::start(&deny);
    let object: Value = serde_yaml_ng::from_str(job).unwrap();
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "operation": "CREATE", "namespace": "ml", "name": "train", "object": object}});
    let expected = cluster(&jg, "/mutate", &review);
    let Verdict::Reviewed { allowed, .. } = &expected else {
        panic!("{expected:?}")
    };
    assert!(!allowed, "the cluster denies it: {expected:?}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("train.yaml");
    std::fs::write(&file, job).unwrap();
    assert_eq!(check(&file, &deny), expected);
    // The same AdmissionReview given to check says the same.
    let as_review = dir.path().join("review.json");
    std::fs::write(&as_review, review.to_string()).unwrap();
    assert_eq!(check(&as_review, &deny), expected);
}

/// The webhook and `check` read a review with one reader: a review whose object cannot be read
/// is refused by both, in the same words.
#[test]
fn an_unreadable_review_is_refused_by_check_in_the_webhooks_words() {
    let jg = Jobgate::start(&[]);
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl"}]}}}});
    let mut wrong_type = job.clone();
    wrong_type["spec"]["backoffLimit"] = json!("many");
    let mut a_pod = job.clone();
    a_pod["kind"] = json!("Pod");
    let cases = [
        ("CREATE", wrong_type.clone(), None),
        ("CREATE", a_pod, None),
        ("CREATE", json!([1]), None),
        ("UPDATE", job.clone(), None),
        ("UPDATE", job.clone(), Some(wrong_type)),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (operation, object, old)) in cases.into_iter().enumerate() {
        let mut review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
                "operation": operation, "namespace": "ml", "name": "pi", "object": object}});
        if let Some(old) = old {
            review["request"]["oldObject"] = old;
        }
        let expected = cluster(&jg, "/mutate", &review);
        assert!(
            matches!(expected, Verdict::Unreadable(_)),
            "{i}: {expected:?}"
        );
        let file = dir.path().join(format!("review-{i}.json"));
        std::fs::write(&file, review.to_string()).unwrap();
        assert_eq!(check(&file, &[]), expected, "{i}: {review}");
    }
}
