//! Where the policies and the webhook differ, on purpose or because kube-apiserver words it so;
//! each is listed in `jobgate render`'s header and in docs/src/admission-policies.md.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::corpus::{Admission, NAMESPACE, apiserver_form};
use super::differential::{
    on_a_large_stack, policy_findings, rendered, webhook_findings, webhook_mutation,
};
use super::engine::RenderedPolicies;
use crate::job::Config;
use crate::job::levels::Level;
use crate::job::levels::Policies;
use crate::job::levels::PolicyName;

const KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";
const NEW_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-delete";

fn create(object: Value) -> Admission {
    Admission {
        operation: "CREATE",
        kind: if object["kind"] == "CronJob" {
            "CronJob"
        } else {
            "Job"
        },
        namespace: NAMESPACE.to_string(),
        namespace_labels: BTreeMap::new(),
        object,
        old_object: None,
    }
}

fn job(annotations: Value, spec: Value) -> Value {
    let mut spec = spec;
    spec["template"] = json!({
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "trainer:1"}]},
    });
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "train", "annotations": {"jobgate.dev/failure-recovery": "enabled"}},
           "spec": spec})
}

fn config(level: Level) -> Config {
    Config {
        policies: Policies::all(level),
        ..Config::default()
    }
}

#[test]
fn a_mutation_warning_has_no_counterpart_the_patch_is_the_same() {
    on_a_large_stack(|| {
        let config = Config::default();
        let admission = create(job(
            json!({"team": "a"}),
            json!({"podReplacementPolicy": "TerminatingOrFailed"}),
        ));
        let (ops, warnings) = webhook_mutation(&admission, &config);
        assert_eq!(
            warnings,
            vec![
                "jobgate: set spec.podReplacementPolicy=Failed because failure recovery is enabled",
                "jobgate: set spec.template.metadata.annotations[kueue.x-k8s.io/safe-to-forcefully-terminate]=\"true\" because failure recovery is enabled",
            ]
        );
        let policy = RenderedPolicies::new(&rendered(&config))
            .mutate(&admission)
            .unwrap()
            .unwrap();
        assert_eq!(policy, ops);
        assert_eq!(
            Value::from(ops),
            json!([
                {"op": "replace", "path": "/spec/podReplacementPolicy", "value": "Failed"},
                {"op": "add", "path": "/spec/template/metadata/annotations/kueue.x-k8s.io~1safe-to-forcefully-terminate", "value": "true"},
            ])
        );
    });
}

#[test]
fn a_denial_names_only_the_first_failed_validation_every_finding_is_one() {
    on_a_large_stack(|| {
        let config = config(Level::Deny);
        let admission = create(job(json!({KEY: "True", NEW_KEY: "yes"}), json!({})));
        let cluster = RenderedPolicies::new(&rendered(&config));
        let answer = cluster.validate(&admission).unwrap();
        let webhook = webhook_findings(&admission, &config);
        assert_eq!(policy_findings(&answer), webhook);
        let errors = &webhook[&PolicyName::RecoveryAnnotationValue].0;
        assert_eq!(
            errors,
            &vec![
                format!(
                    r#"spec.template.metadata.annotations[{KEY}]: Invalid value: "True": must be "true" or "false"; Kueue reads any other value as not opted in (jobgate policy recovery-annotation-value)"#
                ),
                format!(
                    r#"spec.template.metadata.annotations[{NEW_KEY}]: Invalid value: "yes": must be "true" or "false"; Kueue reads any other value as not opted in (jobgate policy recovery-annotation-value)"#
                ),
            ]
        );
        // The webhook answers one 422 with both causes; kube-apiserver answers the first
        // denied validation only.
        assert_eq!(
            answer.denial_message().unwrap(),
            format!(
                "ValidatingAdmissionPolicy 'jobgate-recovery-annotation-value' with binding \
                 'jobgate-recovery-annotation-value' denied request: {}",
                errors[0]
            )
        );
    });
}

#[test]
fn a_warning_is_prefixed_with_the_policy_and_binding() {
    on_a_large_stack(|| {
        let config = Config::default();
        let admission = create(job(
            json!({KEY: "true"}),
            json!({"podReplacementPolicy": "TerminatingOrFailed"}),
        ));
        let answer = RenderedPolicies::new(&rendered(&config))
            .validate(&admission)
            .unwrap();
        let webhook = webhook_findings(&admission, &config);
        assert_eq!(policy_findings(&answer), webhook);
        let warnings: Vec<String> = webhook.values().flat_map(|(_, w)| w.clone()).collect();
        assert_eq!(
            answer.warning_texts(),
            vec![
                format!(
                    "Validation failed for ValidatingAdmissionPolicy 'jobgate-recovery-needs-failed' with binding 'jobgate-recovery-needs-failed': {}",
                    warnings[0]
                ),
                format!(
                    "Validation failed for ValidatingAdmissionPolicy 'jobgate-recovery-counts-toward-backoff' with binding 'jobgate-recovery-counts-toward-backoff': {}",
                    warnings[1]
                ),
            ]
        );
    });
}

#[test]
fn a_non_printable_value_is_quoted_by_cel_not_by_go() {
    on_a_large_stack(|| {
        let config = config(Level::Deny);
        let admission = create(job(json!({KEY: "ok\u{1}"}), json!({})));
        let answer = RenderedPolicies::new(&rendered(&config))
            .validate(&admission)
            .unwrap();
        let webhook = webhook_findings(&admission, &config);
        let go = &webhook[&PolicyName::RecoveryAnnotationValue].0[0];
        let cel = &answer.denials[0].message;
        assert!(go.contains(r#"Invalid value: "ok\x01": "#), "{go}");
        assert!(cel.contains("Invalid value: \"ok\u{1}\": "), "{cel}");
        assert_eq!(go.replace(r"\x01", "\u{1}"), *cel);
    });
}

/// Objects kube-apiserver never hands to admission (`apiserver_form`: it decodes `null` as
/// unset and drops an empty map): on them the webhook and the policy patch otherwise. As
/// kube-apiserver hands them over, the two agree op for op.
#[test]
fn an_empty_annotations_map_or_an_explicit_null_never_reaches_admission() {
    on_a_large_stack(|| {
        let config = Config::default();
        let cluster = RenderedPolicies::new(&rendered(&config));
        // `annotations: {}`: the webhook adds the key into the map, the policy adds the map;
        // the objects patched are the same.
        let object = job(json!({}), json!({"podReplacementPolicy": "Failed"}));
        let raw = create(object.clone());
        let (webhook, _) = webhook_mutation(&raw, &config);
        let policy = cluster.mutate(&raw).unwrap().unwrap();
        assert_eq!(
            Value::from(webhook.clone()),
            json!([{"op": "add", "path": "/spec/template/metadata/annotations/kueue.x-k8s.io~1safe-to-forcefully-terminate", "value": "true"}])
        );
        assert_eq!(
            Value::from(policy.clone()),
            json!([{"op": "add", "path": "/spec/template/metadata/annotations", "value": {KEY: "true"}}])
        );
        let apply = |ops: Vec<Value>| {
            let mut doc = object.clone();
            let patch: json_patch::Patch = serde_json::from_value(Value::from(ops)).unwrap();
            json_patch::patch(&mut doc, &patch).unwrap();
            doc
        };
        assert_eq!(apply(webhook), apply(policy));

        // `podReplacementPolicy: null`: the webhook defaults it, the policy reads a value (CEL's
        // null) and leaves it.
        let object = job(
            json!({KEY: "true"}),
            json!({"podReplacementPolicy": null, "podFailurePolicy": {"rules": []}}),
        );
        let raw = create(object.clone());
        assert_eq!(
            Value::from(webhook_mutation(&raw, &config).0),
            json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "Failed"}])
        );
        assert_eq!(cluster.mutate(&raw).unwrap(), None);

        for object in [
            job(json!({}), json!({"podReplacementPolicy": "Failed"})),
            job(
                json!({KEY: "true"}),
                json!({"podReplacementPolicy": null, "podFailurePolicy": {"rules": []}}),
            ),
        ] {
            let stored = create(apiserver_form(&object));
            let (webhook, _) = webhook_mutation(&stored, &config);
            assert!(!webhook.is_empty());
            assert_eq!(webhook, cluster.mutate(&stored).unwrap().unwrap());
        }
    });
}
