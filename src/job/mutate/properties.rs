//! Property test over generated Jobs and CronJobs: the patch applies to the JSON it was computed
//! from, every operation changes something at an allowed path, and jobgate applied to its own
//! output patches nothing (the apiserver may call it again: `reinvocationPolicy: IfNeeded`).
//! The objects come from `strategies`, as the admission-policy corpus's do.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::strategies::*;
use super::*;
use crate::job::finding::Severity;
use crate::job::review::Review;
use crate::job::wire::envelope::Operation;
use crate::job::{Config, JobObject, Kind};

#[derive(Debug, Clone)]
struct Case {
    object: Value,
    /// For an UPDATE (CronJobs only), the old object.
    old: Option<Value>,
    scope: RecoveryScope,
    keys: Vec<String>,
}

fn case() -> impl Strategy<Value = Case> {
    let scope = prop_oneof![
        Just(RecoveryScope::JobAnnotation),
        Just(RecoveryScope::Namespace)
    ];
    let keys = prop::collection::vec(prop::sample::select(KEYS.to_vec()), 0..4)
        .prop_map(|ks| ks.into_iter().map(String::from).collect::<Vec<_>>());
    let job = (opt_in_annotations(), job_spec()).prop_map(|(a, spec)| {
        (
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata(a), "spec": spec}),
            None,
        )
    });
    let cron_job = (
        opt_in_annotations(),
        opt_in_annotations(),
        job_spec(),
        prop_oneof![Just(None), Just(Some(false)), Just(Some(true))],
    )
        .prop_map(|(own, template, spec, update)| {
            let object = json!({
                "apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata(own),
                "spec": {"schedule": "0 3 * * *", "jobTemplate": {"metadata": metadata(template), "spec": spec}}
            });
            // UPDATE with the template unchanged, or with an older template.
            let old = update.map(|template_changed| {
                let mut old = object.clone();
                old["spec"]["schedule"] = json!("0 4 * * *");
                if template_changed {
                    old["spec"]["jobTemplate"]["spec"]["backoffLimit"] = json!(6);
                }
                old
            });
            (object, old)
        });
    (prop_oneof![job, cron_job], scope, keys).prop_map(|((object, old), scope, keys)| Case {
        object,
        old,
        scope,
        keys,
    })
}

fn mutate_json(case: &Case, object: &Value) -> Judgment {
    let kind = Kind::from_kind(object["kind"].as_str().unwrap_or("")).unwrap();
    let parsed = JobObject::from_json(kind, &object.to_string()).unwrap();
    let old = case
        .old
        .as_ref()
        .map(|o| JobObject::from_json(kind, &o.to_string()).unwrap());
    let review = Review {
        operation: if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        },
        object: &parsed,
        old_object: old.as_ref(),
    };
    let config = Config {
        recovery_annotation_keys: case.keys.clone(),
        ..Config::default()
    };
    mutate(&review, &config, case.scope)
}

fn allowed_paths(case: &Case) -> Vec<String> {
    let kind = Kind::from_kind(case.object["kind"].as_str().unwrap()).unwrap();
    let spec: Vec<&str> = kind.spec_pointer().to_vec();
    let at = |rest: &[&str]| {
        crate::job::patch::pointer(spec.iter().copied().chain(rest.iter().copied()))
            .as_str()
            .to_string()
    };
    let mut paths = vec![
        at(&["podReplacementPolicy"]),
        at(&["template", "metadata"]),
        at(&["template", "metadata", "annotations"]),
    ];
    for key in &case.keys {
        paths.push(at(&["template", "metadata", "annotations", key]));
    }
    paths
}

/// The mutation rules (KEP-3939 defaulting, the recovery opt-in) read straight off the JSON, as an
/// oracle for the final podReplacementPolicy
/// and pod-template annotations (`None` when jobgate must not patch at all).
fn expected(case: &Case) -> Option<(Value, Value)> {
    let kind = Kind::from_kind(case.object["kind"].as_str().unwrap()).unwrap();
    let spec_ptr = crate::job::patch::pointer(kind.spec_pointer().iter().copied())
        .as_str()
        .to_string();
    let spec = case.object.pointer(&spec_ptr)?;
    if let Some(old) = &case.old
        && old["spec"]["jobTemplate"] == case.object["spec"]["jobTemplate"]
    {
        return None;
    }
    let opt_in_meta = match kind {
        Kind::Job => &case.object["metadata"],
        Kind::CronJob => &case.object["spec"]["jobTemplate"]["metadata"],
    };
    let opted_in = match opt_in_meta["annotations"]["jobgate.dev/failure-recovery"].as_str() {
        Some("enabled") => true,
        None => case.scope == RecoveryScope::Namespace,
        Some(_) => false,
    };
    let has_pfp = !spec["podFailurePolicy"].is_null();
    let mut policy = match &spec["podReplacementPolicy"] {
        Value::Null if has_pfp => json!("Failed"),
        Value::Null => json!("TerminatingOrFailed"),
        explicit => explicit.clone(),
    };
    let mut annotations = spec["template"]["metadata"]["annotations"].clone();
    // "false" under a configured key or either Kueue key is the pods' opt-out.
    let pods_opted_out = case
        .keys
        .iter()
        .map(String::as_str)
        .chain(crate::kueue::RECOVERY_ANNOTATION_KEYS)
        .any(|k| !k.is_empty() && annotations[k] == json!("false"));
    if opted_in && !pods_opted_out {
        for key in case.keys.iter().filter(|k| !k.is_empty()) {
            if annotations.get(key.as_str()).is_none() {
                if annotations.is_null() {
                    annotations = json!({});
                }
                annotations[key.as_str()] = json!("true");
            }
        }
        if policy == json!("TerminatingOrFailed") && !has_pfp {
            policy = json!("Failed");
        }
    }
    Some((policy, annotations))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_patch_applies_is_minimal_and_jobgate_on_its_own_output_patches_nothing(case in case()) {
        let verdict = mutate_json(&case, &case.object);
        // The webhook that mutates never denies: it notes and warns.
        prop_assert!(verdict.findings.iter().all(|f| f.severity() < Severity::Error));

        // (c) It applies cleanly to the JSON it was computed from.
        let mut patched = case.object.clone();
        prop_assert!(json_patch::patch(&mut patched, &verdict.patch.0).is_ok(), "{:?}", verdict.patch);

        // (b) Every operation is an add or replace at an allowed path, and changes the document;
        // an add never lands on an existing non-null member (nothing the user wrote is replaced).
        let allowed = allowed_paths(&case);
        let mut doc = case.object.clone();
        for op in &verdict.patch.0 {
            let path = op.path().as_str().to_string();
            prop_assert!(allowed.contains(&path), "{path} not in {allowed:?}");
            let before = doc.pointer(&path).cloned();
            match op {
                json_patch::PatchOperation::Add(_) => {
                    prop_assert!(before.is_none() || before == Some(Value::Null), "add over {before:?} at {path}")
                }
                json_patch::PatchOperation::Replace(_) => {
                    prop_assert_eq!(before.as_ref().and_then(Value::as_str), Some("TerminatingOrFailed"))
                }
                other => prop_assert!(false, "unexpected op {other:?}"),
            }
            let snapshot = doc.clone();
            prop_assert!(json_patch::patch(&mut doc, std::slice::from_ref(op)).is_ok());
            prop_assert_ne!(&doc, &snapshot, "{} changed nothing", path);
        }
        prop_assert_eq!(&doc, &patched);

        // Nothing outside the spec's policy and pod-template metadata moved.
        let kind = Kind::from_kind(case.object["kind"].as_str().unwrap()).unwrap();
        let spec_ptr = crate::job::patch::pointer(kind.spec_pointer().iter().copied()).as_str().to_string();
        let mut a = case.object.clone();
        let mut b = patched.clone();
        for v in [&mut a, &mut b] {
            if let Some(spec) = v.pointer_mut(&spec_ptr).and_then(Value::as_object_mut) {
                spec.remove("podReplacementPolicy");
                if let Some(t) = spec.get_mut("template").and_then(Value::as_object_mut) {
                    t.remove("metadata");
                }
            }
        }
        prop_assert_eq!(a, b);
        // Existing template annotations keep their values.
        let annotations = format!("{spec_ptr}/template/metadata/annotations");
        if let Some(Value::Object(before)) = case.object.pointer(&annotations) {
            for (k, v) in before {
                prop_assert_eq!(patched.pointer(&annotations).and_then(|a| a.get(k)), Some(v));
            }
        }

        // The rules, as an independent reading of the JSON, agree with the result.
        match expected(&case) {
            None => prop_assert!(verdict.patch.0.is_empty()),
            Some((policy, annotations)) => {
                let spec = patched.pointer(&spec_ptr).unwrap_or(&Value::Null);
                prop_assert_eq!(&spec["podReplacementPolicy"], &policy);
                prop_assert_eq!(&spec["template"]["metadata"]["annotations"], &annotations);
            }
        }

        // (a) Idempotence: jobgate on its own output yields no patch.
        let again = mutate_json(&case, &patched);
        prop_assert!(again.patch.0.is_empty(), "second patch {:?} on {}", again.patch, patched);
    }
}
