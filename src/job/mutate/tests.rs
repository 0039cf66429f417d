//! One table per rule. Every case parses real JSON with `JobObject::from_json`, mutates, applies
//! the patch to that JSON with `json_patch::patch`, and checks the patch, the result and the
//! warnings. Case names quote the KEP sentence or the README rule they prove.

use serde_json::{Value, json};

use super::*;
use crate::job::review::Review;
use crate::job::wire::envelope::Operation;
use crate::job::{Config, JobObject, Kind};

const TERMINATE: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";
const DELETE: &str = "kueue.x-k8s.io/safe-to-forcefully-delete";
const POLICY_WARNING: &str =
    "jobgate: set spec.podReplacementPolicy=Failed because failure recovery is enabled";
/// The pod template annotation jobgate adds to an opted-in Job is a change, so it is explained.
const ANNOTATION_WARNING: &str = "jobgate: set spec.template.metadata.annotations[kueue.x-k8s.io/safe-to-forcefully-terminate]=\"true\" because failure recovery is enabled";

/// A Job with `metadata` and `spec`, given a pod template with one container unless `spec` has one.
fn job(metadata: Value, spec: Value) -> Value {
    let mut spec = spec;
    let template = spec
        .as_object_mut()
        .unwrap()
        .entry("template")
        .or_insert_with(|| json!({}));
    template
        .as_object_mut()
        .unwrap()
        .entry("spec")
        .or_insert_with(|| json!({"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}));
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec})
}

/// A CronJob whose `spec.jobTemplate` is `{metadata: template_metadata, spec: <job(.., spec).spec>}`.
fn cron_job(metadata: Value, template_metadata: Value, spec: Value) -> Value {
    let job_spec = job(json!({}), spec)["spec"].take();
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata,
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"metadata": template_metadata, "spec": job_spec}}
    })
}

fn kind_of(object: &Value) -> Kind {
    Kind::from_kind(object["kind"].as_str().unwrap()).unwrap()
}

struct Mutated {
    ops: Value,
    patched: Value,
    warnings: Vec<String>,
}

fn run_with(
    operation: Operation,
    object: &Value,
    old: Option<&Value>,
    scope: RecoveryScope,
    config: &Config,
) -> Mutated {
    let kind = kind_of(object);
    let parsed = JobObject::from_json(kind, &object.to_string()).unwrap();
    let old = old.map(|o| JobObject::from_json(kind, &o.to_string()).unwrap());
    let review = Review {
        operation,
        object: &parsed,
        old_object: old.as_ref(),
    };
    let verdict = mutate(&review, config, scope);
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &verdict.patch.0).unwrap();
    Mutated {
        ops: serde_json::to_value(&verdict.patch).unwrap(),
        patched,
        warnings: verdict.findings.iter().map(|f| f.message()).collect(),
    }
}

fn create(object: &Value, scope: RecoveryScope) -> Mutated {
    run_with(Operation::Create, object, None, scope, &Config::default())
}

fn enabled() -> Value {
    json!({"name": "train", "annotations": {"jobgate.dev/failure-recovery": "enabled"}})
}

/// What the default configuration sets: the key KEP-6757 names.
fn terminate_true() -> Value {
    json!({TERMINATE: "true"})
}

#[test]
fn kep_3939_absent_or_null_defaults_to_terminating_or_failed_without_a_pod_failure_policy() {
    for spec in [json!({}), json!({"podReplacementPolicy": null})] {
        let object = job(json!({"name": "pi"}), spec.clone());
        let out = create(&object, RecoveryScope::JobAnnotation);
        assert_eq!(
            out.ops,
            json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "TerminatingOrFailed"}]),
            "{spec}"
        );
        assert_eq!(
            out.patched["spec"]["podReplacementPolicy"],
            "TerminatingOrFailed"
        );
        assert!(out.warnings.is_empty());
    }
}

#[test]
fn kep_3939_absent_or_null_defaults_to_failed_when_a_pod_failure_policy_is_present_even_empty() {
    for spec in [
        json!({"podFailurePolicy": {}}),
        json!({"podFailurePolicy": {"rules": []}}),
        json!({"podFailurePolicy": {"rules": null}, "podReplacementPolicy": null}),
        json!({"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
    ] {
        let object = job(json!({"name": "pi"}), spec.clone());
        let out = create(&object, RecoveryScope::JobAnnotation);
        assert_eq!(
            out.ops,
            json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "Failed"}]),
            "{spec}"
        );
        assert!(out.warnings.is_empty());
    }
}

#[test]
fn kep_3939_an_explicit_value_including_empty_is_never_overwritten_by_defaulting() {
    for value in ["", "Failed", "TerminatingOrFailed", "Sometimes"] {
        for pfp in [None, Some(json!({"rules": []}))] {
            let mut spec = json!({"podReplacementPolicy": value});
            if let Some(p) = &pfp {
                spec["podFailurePolicy"] = p.clone();
            }
            let object = job(json!({"name": "pi"}), spec);
            for scope in [RecoveryScope::JobAnnotation, RecoveryScope::Namespace] {
                let out = run_with(Operation::Create, &object, None, scope, &Config::default());
                if scope == RecoveryScope::Namespace && value == "TerminatingOrFailed" {
                    continue; // recovery's own rule, tested below
                }
                assert_eq!(
                    out.ops
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|op| op["path"] == "/spec/podReplacementPolicy"),
                    None,
                    "{value:?} {pfp:?} {scope:?}"
                );
            }
        }
    }
}

#[test]
fn opt_in_by_job_annotation_adds_safe_to_forcefully_terminate_and_sets_failed_with_the_warning() {
    let object = job(enabled(), json!({}));
    let out = create(&object, RecoveryScope::JobAnnotation);
    assert_eq!(
        out.ops,
        json!([
            {"op": "add", "path": "/spec/podReplacementPolicy", "value": "Failed"},
            {"op": "add", "path": "/spec/template/metadata", "value": {"annotations": terminate_true()}}
        ])
    );
    assert_eq!(
        out.patched["spec"]["template"]["metadata"]["annotations"],
        terminate_true()
    );
    assert_eq!(out.warnings, [POLICY_WARNING, ANNOTATION_WARNING]);
}

#[test]
fn sets_failed_when_an_explicit_terminating_or_failed_is_indistinguishable_from_the_default() {
    let object = job(
        enabled(),
        json!({"podReplacementPolicy": "TerminatingOrFailed"}),
    );
    let out = create(&object, RecoveryScope::JobAnnotation);
    assert_eq!(
        out.ops[0],
        json!({"op": "replace", "path": "/spec/podReplacementPolicy", "value": "Failed"})
    );
    assert_eq!(out.warnings, [POLICY_WARNING, ANNOTATION_WARNING]);
}

#[test]
fn no_policy_warning_when_recovery_does_not_change_the_policy() {
    for spec in [
        json!({"podReplacementPolicy": "Failed"}),
        // The KEP-3939 default is already Failed: defaulting, not recovery, sets it.
        json!({"podFailurePolicy": {"rules": []}}),
    ] {
        let object = job(enabled(), spec.clone());
        let out = create(&object, RecoveryScope::JobAnnotation);
        assert_eq!(out.warnings, [ANNOTATION_WARNING], "{spec}");
        assert_eq!(out.patched["spec"]["podReplacementPolicy"], "Failed");
    }
}

#[test]
fn mutate_without_the_annotation_does_not_opt_in() {
    for metadata in [
        json!({"name": "pi"}),
        json!({"name": "pi", "annotations": null}),
        json!({"name": "pi", "annotations": {"jobgate.dev/failure-recovery": "disabled"}}),
    ] {
        let out = create(
            &job(metadata.clone(), json!({})),
            RecoveryScope::JobAnnotation,
        );
        assert_eq!(
            out.ops,
            json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "TerminatingOrFailed"}]),
            "{metadata}"
        );
    }
}

#[test]
fn mutate_recovery_opts_in_every_job_not_annotated_disabled() {
    for metadata in [
        json!({"generateName": "pi-", "name": ""}),
        json!({"name": "pi", "annotations": {"team": "a"}}),
        enabled(),
    ] {
        let out = create(&job(metadata.clone(), json!({})), RecoveryScope::Namespace);
        assert_eq!(
            out.patched["spec"]["podReplacementPolicy"], "Failed",
            "{metadata}"
        );
        assert_eq!(
            out.patched["spec"]["template"]["metadata"]["annotations"],
            terminate_true(),
            "{metadata}"
        );
        assert_eq!(out.warnings, [POLICY_WARNING, ANNOTATION_WARNING]);
    }
    let disabled =
        json!({"name": "pi", "annotations": {"jobgate.dev/failure-recovery": "disabled"}});
    let out = create(&job(disabled, json!({})), RecoveryScope::Namespace);
    assert_eq!(
        out.ops,
        json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "TerminatingOrFailed"}])
    );
    assert!(out.warnings.is_empty());
}

#[test]
fn an_unknown_opt_in_value_does_not_opt_in_at_either_scope_and_is_reported() {
    let metadata =
        json!({"name": "pi", "annotations": {"jobgate.dev/failure-recovery": "Disabled"}});
    for scope in [RecoveryScope::JobAnnotation, RecoveryScope::Namespace] {
        let out = create(&job(metadata.clone(), json!({})), scope);
        assert_eq!(
            out.patched["spec"]["podReplacementPolicy"],
            "TerminatingOrFailed"
        );
        assert_eq!(out.patched["spec"]["template"].get("metadata"), None);
        assert_eq!(
            out.warnings,
            [
                r#"jobgate: ignored metadata.annotations[jobgate.dev/failure-recovery]="Disabled": expected "enabled" or "disabled"; failure recovery is not enabled"#
            ]
        );
    }
}

#[test]
fn creates_missing_or_null_maps_with_add_and_never_replaces_existing_annotations() {
    let cases = [
        (
            "template metadata absent",
            json!({}),
            json!([{"op": "add", "path": "/spec/template/metadata", "value": {"annotations": terminate_true()}}]),
        ),
        (
            "template metadata null",
            json!({"metadata": null}),
            json!([{"op": "add", "path": "/spec/template/metadata", "value": {"annotations": terminate_true()}}]),
        ),
        (
            "annotations absent",
            json!({"metadata": {"labels": {"app": "pi"}}}),
            json!([{"op": "add", "path": "/spec/template/metadata/annotations", "value": terminate_true()}]),
        ),
        (
            "annotations null",
            json!({"metadata": {"annotations": null}}),
            json!([{"op": "add", "path": "/spec/template/metadata/annotations", "value": terminate_true()}]),
        ),
        (
            "annotations with other keys",
            json!({"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}}),
            json!([
                {"op": "add", "path": "/spec/template/metadata/annotations/kueue.x-k8s.io~1safe-to-forcefully-terminate", "value": "true"}
            ]),
        ),
        (
            "only the newer Kueue key, true",
            json!({"metadata": {"annotations": {DELETE: "true"}}}),
            json!([{"op": "add", "path": "/spec/template/metadata/annotations/kueue.x-k8s.io~1safe-to-forcefully-terminate", "value": "true"}]),
        ),
        (
            "key already true",
            json!({"metadata": {"annotations": terminate_true()}}),
            json!([]),
        ),
    ];
    for (name, template, want) in cases {
        let mut template = template;
        template["spec"] = json!({"containers": [{"name": "main"}]});
        let object = job(
            enabled(),
            json!({"podReplacementPolicy": "Failed", "template": template}),
        );
        let out = create(&object, RecoveryScope::JobAnnotation);
        assert_eq!(out.ops, want, "{name}");
        let annotations = &out.patched["spec"]["template"]["metadata"]["annotations"];
        assert_eq!(annotations[TERMINATE], "true", "{name}");
        if name != "only the newer Kueue key, true" {
            assert_eq!(annotations.get(DELETE), None, "{name}");
        }
        if name == "annotations with other keys" {
            assert_eq!(annotations["sidecar.istio.io/inject"], "false");
        }
        if name == "annotations absent" {
            assert_eq!(
                out.patched["spec"]["template"]["metadata"]["labels"],
                json!({"app": "pi"})
            );
        }
    }
}

#[test]
fn an_explicit_false_is_left_alone_with_a_warning_and_recovery_is_not_applied() {
    for annotations in [
        json!({TERMINATE: "false"}),
        json!({DELETE: "false"}),
        json!({TERMINATE: "true", DELETE: "false"}),
    ] {
        let object = job(
            enabled(),
            json!({"template": {"metadata": {"annotations": annotations.clone()}, "spec": {"containers": [{"name": "main"}]}}}),
        );
        let out = create(&object, RecoveryScope::JobAnnotation);
        // Only KEP-3939 defaulting: no key added, the policy not switched to Failed.
        assert_eq!(
            out.ops,
            json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "TerminatingOrFailed"}]),
            "{annotations}"
        );
        assert_eq!(
            out.patched["spec"]["template"]["metadata"]["annotations"],
            annotations
        );
        let key = if annotations.get(DELETE) == Some(&json!("false")) {
            DELETE
        } else {
            TERMINATE
        };
        assert_eq!(
            out.warnings,
            [format!(
                "jobgate: left spec.template.metadata.annotations[{key}]=\"false\" unchanged: the pods opted out of forced termination, so failure recovery is not applied"
            )]
        );
    }
}

#[test]
fn kueue_honours_only_the_exact_value_true_so_other_values_are_left_with_a_warning() {
    // Kueue podOptedInToFailurePolicy: annotationValue == "true".
    for value in ["True", "", "yes"] {
        let object = job(
            enabled(),
            json!({"template": {"metadata": {"annotations": {TERMINATE: value}}, "spec": {"containers": [{"name": "main"}]}}}),
        );
        let out = create(&object, RecoveryScope::JobAnnotation);
        assert_eq!(
            out.ops,
            json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "Failed"}]),
            "{value:?}"
        );
        assert_eq!(
            out.patched["spec"]["template"]["metadata"]["annotations"][TERMINATE],
            value
        );
        assert_eq!(
            out.warnings,
            [
                format!(
                    "jobgate: left spec.template.metadata.annotations[{TERMINATE}]={value:?} unchanged: Kueue forcefully terminates only pods annotated \"true\""
                ),
                POLICY_WARNING.to_string()
            ]
        );
    }
}

#[test]
fn apiserver_rejects_terminating_or_failed_with_a_pod_failure_policy_so_it_is_left_with_a_warning()
{
    // kubernetes validatePodReplacementPolicy: with a podFailurePolicy only Failed is supported.
    let object = job(
        enabled(),
        json!({"podReplacementPolicy": "TerminatingOrFailed", "podFailurePolicy": {"rules": []}}),
    );
    let out = create(&object, RecoveryScope::JobAnnotation);
    assert_eq!(
        out.ops,
        json!([{"op": "add", "path": "/spec/template/metadata", "value": {"annotations": terminate_true()}}])
    );
    assert_eq!(
        out.warnings,
        [
            "jobgate: left spec.podReplacementPolicy=TerminatingOrFailed unchanged although failure recovery is enabled: with spec.podFailurePolicy set, the apiserver accepts only Failed",
            ANNOTATION_WARNING
        ]
    );
}

#[test]
fn recovery_leaves_an_explicit_empty_policy_for_the_apiserver_to_reject() {
    let object = job(enabled(), json!({"podReplacementPolicy": ""}));
    let out = create(&object, RecoveryScope::JobAnnotation);
    assert_eq!(out.patched["spec"]["podReplacementPolicy"], "");
    assert_eq!(out.warnings, [ANNOTATION_WARNING]);
}

#[test]
fn cron_job_is_mutated_through_spec_job_template_spec_and_opts_in_by_the_job_template_annotation() {
    let object = cron_job(
        json!({"name": "nightly"}),
        json!({"annotations": {"jobgate.dev/failure-recovery": "enabled"}}),
        json!({}),
    );
    let out = create(&object, RecoveryScope::JobAnnotation);
    assert_eq!(
        out.ops,
        json!([
            {"op": "add", "path": "/spec/jobTemplate/spec/podReplacementPolicy", "value": "Failed"},
            {"op": "add", "path": "/spec/jobTemplate/spec/template/metadata", "value": {"annotations": terminate_true()}}
        ])
    );
    assert_eq!(
        out.warnings,
        [
            "jobgate: set spec.jobTemplate.spec.podReplacementPolicy=Failed because failure recovery is enabled",
            "jobgate: set spec.jobTemplate.spec.template.metadata.annotations[kueue.x-k8s.io/safe-to-forcefully-terminate]=\"true\" because failure recovery is enabled"
        ]
    );
    // The Job the CronJob controller creates from this template is already mutated.
    let created = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": out.patched["spec"]["jobTemplate"]["metadata"].clone(),
        "spec": out.patched["spec"]["jobTemplate"]["spec"].clone()});
    let again = create(&created, RecoveryScope::JobAnnotation);
    assert_eq!(again.ops, json!([]));
}

#[test]
fn cron_job_own_annotation_is_not_inherited_by_its_jobs_so_it_is_ignored_with_a_warning() {
    let own =
        json!({"name": "nightly", "annotations": {"jobgate.dev/failure-recovery": "disabled"}});
    let out = create(
        &cron_job(own, json!({}), json!({})),
        RecoveryScope::Namespace,
    );
    assert_eq!(
        out.patched["spec"]["jobTemplate"]["spec"]["podReplacementPolicy"],
        "Failed"
    );
    assert_eq!(
        out.warnings,
        [
            r#"jobgate: ignored metadata.annotations[jobgate.dev/failure-recovery]="disabled" on the CronJob: its Jobs do not inherit it; set it in spec.jobTemplate.metadata.annotations"#,
            "jobgate: set spec.jobTemplate.spec.podReplacementPolicy=Failed because failure recovery is enabled",
            "jobgate: set spec.jobTemplate.spec.template.metadata.annotations[kueue.x-k8s.io/safe-to-forcefully-terminate]=\"true\" because failure recovery is enabled"
        ]
    );
    // The same value on both: no warning, the template's value decides.
    let same = json!({"annotations": {"jobgate.dev/failure-recovery": "disabled"}});
    let out = create(
        &cron_job(same.clone(), same, json!({})),
        RecoveryScope::Namespace,
    );
    assert!(out.warnings.is_empty());
    assert_eq!(
        out.patched["spec"]["jobTemplate"]["spec"]["podReplacementPolicy"],
        "TerminatingOrFailed"
    );
}

#[test]
fn only_create_and_update_of_a_cron_job_template_are_mutated() {
    let plain_job = job(enabled(), json!({}));
    for op in [Operation::Update, Operation::Delete, Operation::Connect] {
        let out = run_with(
            op,
            &plain_job,
            Some(&plain_job),
            RecoveryScope::Namespace,
            &Config::default(),
        );
        assert_eq!(out.ops, json!([]), "Job {op:?}");
    }
    let meta = json!({"annotations": {"jobgate.dev/failure-recovery": "enabled"}});
    let old = cron_job(json!({"name": "nightly"}), meta.clone(), json!({}));
    // Schedule, suspend and metadata edits leave the template alone.
    let mut unrelated = old.clone();
    unrelated["spec"]["schedule"] = json!("0 4 * * *");
    unrelated["spec"]["suspend"] = json!(true);
    unrelated["metadata"]["labels"] = json!({"team": "a"});
    let out = run_with(
        Operation::Update,
        &unrelated,
        Some(&old),
        RecoveryScope::Namespace,
        &Config::default(),
    );
    assert_eq!(out.ops, json!([]));
    // Reordered keys and whitespace are the same template.
    let reordered: Value =
        serde_json::from_str(&serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let out = run_with(
        Operation::Update,
        &reordered,
        Some(&old),
        RecoveryScope::Namespace,
        &Config::default(),
    );
    assert_eq!(out.ops, json!([]));
    // An image bump writes the template: it is reviewed like a new one.
    let mut bumped = old.clone();
    bumped["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!("busybox:2");
    let out = run_with(
        Operation::Update,
        &bumped,
        Some(&old),
        RecoveryScope::JobAnnotation,
        &Config::default(),
    );
    assert_eq!(
        out.patched["spec"]["jobTemplate"]["spec"]["podReplacementPolicy"],
        "Failed"
    );
    assert_eq!(
        out.patched["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"],
        terminate_true()
    );
    // Reinvoked on its own output (reinvocationPolicy: IfNeeded): nothing more.
    let again = run_with(
        Operation::Update,
        &out.patched,
        Some(&old),
        RecoveryScope::JobAnnotation,
        &Config::default(),
    );
    assert_eq!(again.ops, json!([]));
}

#[test]
fn a_job_being_deleted_is_never_touched() {
    let mut metadata = enabled();
    metadata["deletionTimestamp"] = json!("2026-11-21T10:00:00Z");
    metadata["finalizers"] = json!(["example.com/cleanup"]);
    let object = job(metadata.clone(), json!({}));
    assert_eq!(create(&object, RecoveryScope::Namespace).ops, json!([]));
    let cron = cron_job(metadata, json!({}), json!({}));
    let mut old = cron.clone();
    old["spec"]["jobTemplate"]["spec"]["backoffLimit"] = json!(1);
    let out = run_with(
        Operation::Update,
        &cron,
        Some(&old),
        RecoveryScope::Namespace,
        &Config::default(),
    );
    assert_eq!(out.ops, json!([]));
}

#[test]
fn status_is_never_mutated() {
    let mut object = job(enabled(), json!({}));
    object["status"] = json!({"active": 1, "terminating": 0});
    let out = create(&object, RecoveryScope::Namespace);
    assert!(!out.ops.as_array().unwrap().is_empty());
    for op in out.ops.as_array().unwrap() {
        assert!(op["path"].as_str().unwrap().starts_with("/spec/"), "{op}");
    }
    assert_eq!(out.patched["status"], object["status"]);
}

#[test]
fn an_object_without_containers_is_left_for_the_apiserver_to_reject() {
    for object in [
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": enabled()}),
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": enabled(), "spec": {"template": {"spec": {"containers": []}}}}),
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {"schedule": "* * * * *"}}),
    ] {
        assert_eq!(
            create(&object, RecoveryScope::Namespace).ops,
            json!([]),
            "{object}"
        );
    }
}

#[test]
fn recovery_annotation_keys_are_configurable_deduplicated_and_may_be_empty() {
    let object = job(enabled(), json!({"podReplacementPolicy": "Failed"}));
    let config = |keys: &[&str]| Config {
        recovery_annotation_keys: keys.iter().map(|k| k.to_string()).collect(),
        ..Config::default()
    };
    let out = run_with(
        Operation::Create,
        &object,
        None,
        RecoveryScope::JobAnnotation,
        &config(&[DELETE, DELETE, ""]),
    );
    assert_eq!(
        out.ops,
        json!([{"op": "add", "path": "/spec/template/metadata", "value": {"annotations": {DELETE: "true"}}}])
    );
    let out = run_with(
        Operation::Create,
        &object,
        None,
        RecoveryScope::JobAnnotation,
        &config(&["example.com/a~b"]),
    );
    assert_eq!(
        out.ops,
        json!([{"op": "add", "path": "/spec/template/metadata", "value": {"annotations": {"example.com/a~b": "true"}}}])
    );
    let mut with_map = object.clone();
    with_map["spec"]["template"]["metadata"] = json!({"annotations": {}});
    let out = run_with(
        Operation::Create,
        &with_map,
        None,
        RecoveryScope::JobAnnotation,
        &config(&["example.com/a~b"]),
    );
    assert_eq!(
        out.ops,
        json!([{"op": "add", "path": "/spec/template/metadata/annotations/example.com~1a~0b", "value": "true"}])
    );
    // No keys: recovery still switches the policy.
    let object = job(enabled(), json!({}));
    let out = run_with(
        Operation::Create,
        &object,
        None,
        RecoveryScope::JobAnnotation,
        &config(&[]),
    );
    assert_eq!(
        out.ops,
        json!([{"op": "add", "path": "/spec/podReplacementPolicy", "value": "Failed"}])
    );
}

#[test]
fn applying_jobgate_to_its_own_output_yields_no_patch() {
    for (object, scope) in [
        (job(enabled(), json!({})), RecoveryScope::JobAnnotation),
        (
            job(json!({"name": "x"}), json!({"podReplacementPolicy": null})),
            RecoveryScope::Namespace,
        ),
        (
            cron_job(json!({}), json!({}), json!({"podFailurePolicy": {}})),
            RecoveryScope::Namespace,
        ),
    ] {
        let first = create(&object, scope);
        assert_ne!(first.ops, json!([]));
        let second = create(&first.patched, scope);
        assert_eq!(second.ops, json!([]), "{object}");
        assert!(second.warnings.is_empty());
    }
}

/// Kubernetes 1.33 with the beta gate `JobPodReplacementPolicy` turned off drops
/// `spec.podReplacementPolicy` (`dropDisabledFields`): jobgate neither defaults it nor switches
/// it to `Failed`, and says so to an opted-in Job; the recovery annotation is still added.
#[test]
fn job_pod_replacement_policy_gate_off_leaves_the_field_alone() {
    use crate::job::version::{Cluster, KubernetesVersion};
    let config = Config {
        cluster: Cluster::with_gates(
            KubernetesVersion::V1_33,
            &[(FeatureGate::JobPodReplacementPolicy, false)].into(),
        )
        .unwrap(),
        ..Config::default()
    };
    let plain = job(json!({"name": "pi"}), json!({}));
    let out = run_with(
        Operation::Create,
        &plain,
        None,
        RecoveryScope::JobAnnotation,
        &config,
    );
    assert_eq!(out.ops, json!([]));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);

    let opted_in = job(enabled(), json!({}));
    let out = run_with(
        Operation::Create,
        &opted_in,
        None,
        RecoveryScope::JobAnnotation,
        &config,
    );
    assert_eq!(
        out.ops,
        json!([{"op": "add", "path": "/spec/template/metadata", "value": {"annotations": terminate_true()}}])
    );
    assert_eq!(
        out.warnings,
        vec![
            "jobgate: left spec.podReplacementPolicy unchanged although failure recovery is enabled: \
              the cluster's JobPodReplacementPolicy feature gate is off, so the apiserver drops the field",
            ANNOTATION_WARNING
        ]
    );
    // With the gate on (its 1.33 default) the same Job gets Failed.
    let on = Config {
        cluster: Cluster::new(KubernetesVersion::V1_33),
        ..Config::default()
    };
    let out = run_with(
        Operation::Create,
        &opted_in,
        None,
        RecoveryScope::JobAnnotation,
        &on,
    );
    assert_eq!(out.patched["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(out.warnings, vec![POLICY_WARNING, ANNOTATION_WARNING]);
}
