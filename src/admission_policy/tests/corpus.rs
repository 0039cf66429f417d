//! The requests the admission policies and the webhook are compared on: every AdmissionReview
//! fixture of a Job or CronJob, and generated Jobs and CronJobs (CREATE, and UPDATE with an old
//! object), each in a namespace that opted into recovery or not, or one no policy applies to.
//!
//! Self-contained (proptest, serde_json and `super::strategies`): `differential` compares them
//! in process, and tests/cluster_admission_policies.rs includes this file as it is and sends the
//! same requests through a real kube-apiserver.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::strategies;

/// The namespace of a request that names none.
pub(crate) const NAMESPACE: &str = "ml-team";
pub(crate) const RECOVERY_LABEL: &str = "jobgate.dev/failure-recovery";

/// The object as kube-apiserver hands it to admission, decoded into Go types and encoded again:
/// an explicit `null` is an unset field, and an empty `annotations` or `labels` map is none
/// (`omitempty`), but a list field without `omitempty` is written whatever its value, `null`
/// when it has no items: `podFailurePolicy.rules` (k8s.io/api `batch/v1` `PodFailurePolicy`)
/// and a pod template's `containers` (`core/v1` `PodSpec`).
pub(crate) fn apiserver_form(value: &Value) -> Value {
    form(value, &[])
}

/// `value`, found under the keys `path`, in the apiserver's form.
fn form(value: &Value, path: &[&str]) -> Value {
    match value {
        Value::Object(map) => {
            let mut out: Map<String, Value> = map
                .iter()
                .filter(|(k, v)| {
                    let empty_map = matches!(k.as_str(), "annotations" | "labels")
                        && v.as_object().is_some_and(Map::is_empty);
                    !(v.is_null() || empty_map)
                })
                .map(|(k, v)| {
                    let path: Vec<&str> = path.iter().copied().chain([k.as_str()]).collect();
                    (k.clone(), form(v, &path))
                })
                .collect();
            let always = match path {
                [.., "spec", "podFailurePolicy"] => Some("rules"),
                [.., "template", "spec"] => Some("containers"),
                _ => None,
            };
            if let Some(list) = always {
                out.entry(list).or_insert(Value::Null);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| form(v, &[])).collect()),
        other => other.clone(),
    }
}

/// One admission request as kube-apiserver presents it to the policies (and the webhook).
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    /// `CREATE` or `UPDATE`.
    pub(crate) operation: &'static str,
    /// `Job` or `CronJob`.
    pub(crate) kind: &'static str,
    pub(crate) namespace: String,
    pub(crate) namespace_labels: BTreeMap<String, String>,
    pub(crate) object: Value,
    pub(crate) old_object: Option<Value>,
}
/// Every Job and CronJob CREATE or UPDATE among the AdmissionReview fixtures
/// (`tests/fixtures/**/*.request.json`), with its path, in a namespace without labels.
pub(crate) fn fixtures() -> Vec<(String, Admission)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().ends_with(".request.json") {
                let text = std::fs::read_to_string(&path).expect("readable");
                let review: Value = serde_json::from_str(&text).expect("JSON");
                if let Some(admission) = fixture_admission(&review["request"]) {
                    out.push((path.display().to_string(), admission));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn fixture_admission(request: &Value) -> Option<Admission> {
    let kind = match request["kind"]["kind"].as_str() {
        Some("Job") => "Job",
        Some("CronJob") => "CronJob",
        _ => return None,
    };
    let operation = match request["operation"].as_str() {
        Some("CREATE") => "CREATE",
        Some("UPDATE") => "UPDATE",
        _ => return None,
    };
    // A review whose object is not of the kind it says (the webhook answers 400; kube-apiserver
    // never sends one).
    if !request["object"].is_object()
        || request["object"]["kind"]
            .as_str()
            .is_some_and(|k| k != kind)
    {
        return None;
    }
    Some(Admission {
        operation,
        kind,
        namespace: request["namespace"]
            .as_str()
            .unwrap_or(NAMESPACE)
            .to_string(),
        namespace_labels: BTreeMap::new(),
        object: request["object"].clone(),
        old_object: request["oldObject"]
            .as_object()
            .map(|o| Value::Object(o.clone())),
    })
}

// ---------------------------------------------------------------------------------------------
// Generated Jobs and CronJobs.

/// Extra fields the policies read, beyond the mutation's strategies: completionMode, a
/// podFailurePolicy whose rules do or do not ignore DisruptionTarget, recovery keys on the
/// object's own metadata (and a CronJob's job template's), a deletionTimestamp.
#[derive(Debug, Clone)]
struct Extras {
    completion_mode: Option<&'static str>,
    pod_failure_policy: Option<Value>,
    own_keys: Vec<(&'static str, &'static str)>,
    template_keys: Vec<(&'static str, &'static str)>,
    deleting: bool,
}

fn extras() -> impl Strategy<Value = Extras> {
    let key_value = (
        prop::sample::select(strategies::KEYS.to_vec()),
        prop::sample::select(vec!["true", "false", "True", ""]),
    );
    (
        prop_oneof![Just(None), Just(Some("Indexed")), Just(Some("NonIndexed"))],
        prop_oneof![
            4 => Just(None),
            1 => Just(Some(json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}))),
            1 => Just(Some(json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]}]}))),
            1 => Just(Some(json!({"rules": [{"action": "Count", "onPodConditions": [{"type": "DisruptionTarget"}]}]}))),
            1 => Just(Some(json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}, {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": ""}]}]}))),
        ],
        prop::collection::vec(key_value.clone(), 0..2),
        prop::collection::vec(key_value, 0..2),
        prop::bool::weighted(0.05),
    )
        .prop_map(|(completion_mode, pod_failure_policy, own_keys, template_keys, deleting)| Extras {
            completion_mode,
            pod_failure_policy,
            own_keys,
            template_keys,
            deleting,
        })
}

fn add_annotations(metadata: &mut Value, keys: &[(&str, &str)]) {
    if keys.is_empty() {
        return;
    }
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = json!({});
    }
    for (k, v) in keys {
        metadata["annotations"][*k] = json!(v);
    }
}

/// A Job or CronJob: the mutation strategies' spec and opt-in annotations, with `extras`.
fn object() -> impl Strategy<Value = Value> {
    (
        any::<bool>(),
        strategies::opt_in_annotations(),
        strategies::opt_in_annotations(),
        strategies::job_spec(),
        extras(),
    )
        .prop_map(|(cron, own, template_opt_in, mut spec, extras)| {
            if let Some(mode) = extras.completion_mode {
                spec["completionMode"] = json!(mode);
            }
            if let Some(pfp) = &extras.pod_failure_policy
                && spec.get("podFailurePolicy").is_none_or(Value::is_null)
            {
                spec["podFailurePolicy"] = pfp.clone();
            }
            let mut metadata = strategies::metadata(own);
            add_annotations(&mut metadata, &extras.own_keys);
            if extras.deleting {
                metadata["deletionTimestamp"] = json!("2026-12-16T03:00:00Z");
            }
            if cron {
                let mut template_metadata = strategies::metadata(template_opt_in);
                add_annotations(&mut template_metadata, &extras.template_keys);
                json!({
                    "apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata,
                    "spec": {"schedule": "0 3 * * *", "jobTemplate": {"metadata": template_metadata, "spec": spec}},
                })
            } else {
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec})
            }
        })
}

/// How an UPDATE's new object relates to its old one.
#[derive(Debug, Clone)]
enum Edit {
    /// Unchanged (a label, a finalizer: the policies' inputs are as they were).
    Same,
    /// Another generated object's spec (and job template metadata) under the old metadata.
    Spec(Value),
    /// The old object with another object's metadata annotations.
    Annotations(Value),
}

pub(crate) fn request() -> impl Strategy<Value = Admission> {
    let labels = prop_oneof![
        2 => Just(BTreeMap::new()),
        1 => Just(BTreeMap::from([(RECOVERY_LABEL.to_string(), "enabled".to_string())])),
        1 => Just(BTreeMap::from([(RECOVERY_LABEL.to_string(), "disabled".to_string())])),
    ];
    let namespace = prop_oneof![
        20 => Just(NAMESPACE),
        1 => Just("kube-system"),
        1 => Just("jobgate-system"),
    ];
    let edit = prop_oneof![
        Just(Edit::Same),
        object().prop_map(Edit::Spec),
        object().prop_map(Edit::Annotations),
    ];
    (
        object(),
        prop::option::weighted(0.4, edit),
        labels,
        namespace,
    )
        .prop_map(|(object, edit, namespace_labels, namespace)| {
            let kind = if object["kind"] == "CronJob" {
                "CronJob"
            } else {
                "Job"
            };
            let Some(edit) = edit else {
                return Admission {
                    operation: "CREATE",
                    kind,
                    namespace: namespace.to_string(),
                    namespace_labels,
                    object,
                    old_object: None,
                };
            };
            let old = object;
            let mut new = old.clone();
            match edit {
                Edit::Same => {
                    new["metadata"]["labels"] = json!({"edited": "true"});
                }
                Edit::Spec(other) if other["kind"] == old["kind"] => {
                    new["spec"] = other["spec"].clone();
                }
                Edit::Spec(other) | Edit::Annotations(other) => {
                    new["metadata"]["annotations"] = other["metadata"]["annotations"].clone();
                }
            }
            Admission {
                operation: "UPDATE",
                kind,
                namespace: namespace.to_string(),
                namespace_labels,
                object: new,
                old_object: Some(old),
            }
        })
}
