//! Generated Jobs and CronJobs as JSON: the pieces `job::mutate`'s property test and the
//! admission-policy corpus (`admission_policy::tests::corpus`) build objects from.
//!
//! Self-contained (proptest and serde_json only): the real-apiserver test
//! (tests/cluster_admission_policies.rs) includes this file as it is, so the objects it sends
//! kube-apiserver come from the same generator.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

pub(crate) const KEYS: [&str; 3] = [
    "kueue.x-k8s.io/safe-to-forcefully-terminate",
    "kueue.x-k8s.io/safe-to-forcefully-delete",
    "example.com/Odd_key.v2",
];

/// `None` = absent; `Some(Value::Null)` = explicit null.
pub(crate) fn member(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.to_string(), v);
    }
}

pub(crate) fn opt_in_annotations() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!({"team": "a"}))),
        Just(Some(json!({"jobgate.dev/failure-recovery": "enabled"}))),
        Just(Some(json!({"jobgate.dev/failure-recovery": "disabled"}))),
        Just(Some(json!({"jobgate.dev/failure-recovery": "Enabled"}))),
    ]
}

pub(crate) fn policy() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!(""))),
        Just(Some(json!("Failed"))),
        Just(Some(json!("TerminatingOrFailed"))),
        Just(Some(json!("Sometimes"))),
    ]
}

pub(crate) fn pod_failure_policy() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!({}))),
        Just(Some(json!({"rules": []}))),
        Just(Some(
            json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})
        )),
    ]
}

pub(crate) fn annotation_value() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        4 => Just(None),
        2 => Just(Some("true")),
        1 => Just(Some("false")),
        1 => Just(Some("True")),
        1 => Just(Some("")),
    ]
}

/// The pod template's `metadata`: absent, null, without annotations, null annotations, or a map.
pub(crate) fn template_metadata() -> impl Strategy<Value = Option<Value>> {
    let map = (
        annotation_value(),
        annotation_value(),
        annotation_value(),
        any::<bool>(),
    )
        .prop_map(|(a, b, c, other)| {
            let mut m = Map::new();
            for (key, value) in KEYS.iter().zip([a, b, c]) {
                if let Some(v) = value {
                    m.insert(key.to_string(), json!(v));
                }
            }
            if other {
                m.insert("sidecar.istio.io/inject".into(), json!("false"));
            }
            Some(json!({"labels": {"app": "x"}, "annotations": m}))
        });
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!({"labels": {"app": "x"}}))),
        Just(Some(json!({"annotations": null}))),
        map,
    ]
}

pub(crate) fn job_spec() -> impl Strategy<Value = Value> {
    (policy(), pod_failure_policy(), template_metadata()).prop_map(|(prp, pfp, meta)| {
        let mut template = Map::new();
        member(&mut template, "metadata", meta);
        template.insert(
            "spec".into(),
            json!({"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}),
        );
        let mut spec = Map::new();
        spec.insert("backoffLimit".into(), json!(2));
        member(&mut spec, "podReplacementPolicy", prp);
        member(&mut spec, "podFailurePolicy", pfp);
        spec.insert("template".into(), Value::Object(template));
        Value::Object(spec)
    })
}

pub(crate) fn metadata(annotations: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("generateName".into(), json!("gen-"));
    member(&mut m, "annotations", annotations);
    Value::Object(m)
}
