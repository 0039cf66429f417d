//! Table tests named after kubernetes `pkg/apis/batch/validation/validation_test.go` cases
//! (`TestValidateJob` "..." keys) and KEP sentences; each asserts the exact message.

use super::*;
use crate::job::config::Config;
use crate::job::review::Verdict;
use crate::job::version::{FeatureGate, KubernetesVersion};
use serde_json::{Value, json};

/// `/validate`'s verdict: the review pipeline's validating stage.
fn validate(review: &Review<'_>, config: &Config) -> Verdict {
    crate::job::pipeline::validate(review, config).into_verdict()
}

/// A Job spec with one container `main`, one init container `init`, `restartPolicy: Never`,
/// then `extra` merged in (JSON object text).
fn job_with(extra: Value) -> JobObject {
    let mut spec = json!({
        "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main"}], "initContainers": [{"name": "init"}]}}
    });
    merge(&mut spec, extra);
    JobObject::from_value(Kind::Job, json!({"metadata": {"name": "j"}, "spec": spec})).unwrap()
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// `validateJobSpec` as Kubernetes 1.34 words it (the release these cases were written for).
fn errors(extra: Value) -> Vec<String> {
    validate_object(&job_with(extra), &on_1_34())
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn on_1_34() -> Cluster {
    Cluster::new(KubernetesVersion::V1_34)
}

fn pfp(rules: Value) -> Value {
    json!({"podFailurePolicy": {"rules": rules}})
}

const P: &str = "spec.podFailurePolicy.rules[0]";

#[test]
fn valid_pod_failure_policy_and_replacement_policy() {
    let spec = json!({
        "podReplacementPolicy": "Failed",
        "podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [1, 2, 3]}},
            {"action": "Ignore", "onExitCodes": {"containerName": "init", "operator": "NotIn", "values": [-1, 0, 5]}},
            {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "Ignore", "onPodConditions": [{"type": "example.com/Custom-Condition_1.x", "status": "Unknown"}]},
        ]}
    });
    assert_eq!(errors(spec), Vec::<String>::new());
}

#[test]
fn any_int32_is_a_legal_exit_code_including_negative_windows_codes() {
    let spec = pfp(json!([{"action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [-2147483648, -1073741819, 2147483647]}}]));
    assert_eq!(errors(spec), Vec::<String>::new());
}

#[test]
fn invalid_pod_failure_policy_empty_action_and_unknown_action() {
    let spec = pfp(json!([
        {"onExitCodes": {"operator": "In", "values": [1]}},
        {"action": "failjob", "onExitCodes": {"operator": "In", "values": [1]}},
    ]));
    assert_eq!(
        errors(spec),
        vec![
            format!(r#"{P}.action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#),
            r#"spec.podFailurePolicy.rules[1].action: Unsupported value: "failjob": supported values: "Count", "FailIndex", "FailJob", "Ignore""#.to_string(),
        ]
    );
}

#[test]
fn fail_index_requires_backoff_limit_per_index() {
    let spec =
        pfp(json!([{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]));
    assert_eq!(
        errors(spec),
        vec![format!(
            r#"{P}.action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set"#
        )]
    );
    let mut ok =
        pfp(json!([{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]));
    merge(
        &mut ok,
        json!({"completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1}),
    );
    assert_eq!(errors(ok), Vec::<String>::new());
}

#[test]
fn invalid_pod_failure_policy_both_and_neither_requirement() {
    let spec = pfp(json!([
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]},
         "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "FailJob"},
        {"action": "FailJob", "onPodConditions": []},
    ]));
    assert_eq!(
        errors(spec),
        vec![
            format!("{P}: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"),
            "spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required".to_string(),
            "spec.podFailurePolicy.rules[2]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required".to_string(),
        ]
    );
}

#[test]
fn at_most_20_rules_boundary() {
    let rule = json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]});
    assert_eq!(
        errors(pfp(Value::Array(vec![rule.clone(); 20]))),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(pfp(Value::Array(vec![rule; 21]))),
        vec!["spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"]
    );
}

#[test]
fn on_exit_codes_operator_required_and_supported() {
    let spec = pfp(json!([
        {"action": "FailJob", "onExitCodes": {"values": [1]}},
        {"action": "FailJob", "onExitCodes": {"operator": "in", "values": [1]}},
    ]));
    assert_eq!(
        errors(spec),
        vec![
            format!(r#"{P}.onExitCodes.operator: Required value: valid values: ["In" "NotIn"]"#),
            r#"spec.podFailurePolicy.rules[1].onExitCodes.operator: Unsupported value: "in": supported values: "In", "NotIn""#.to_string(),
        ]
    );
}

#[test]
fn container_name_must_name_a_container_or_init_container_even_when_empty() {
    let spec = pfp(json!([
        {"action": "FailJob", "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [1]}},
        {"action": "FailJob", "onExitCodes": {"containerName": "", "operator": "In", "values": [1]}},
    ]));
    assert_eq!(
        errors(spec),
        vec![
            format!(r#"{P}.onExitCodes.containerName: Invalid value: "sidecar": must be one of the container or initContainer names in the pod template"#),
            r#"spec.podFailurePolicy.rules[1].onExitCodes.containerName: Invalid value: "": must be one of the container or initContainer names in the pod template"#.to_string(),
        ]
    );
}

#[test]
fn values_empty_list_and_missing_list() {
    let spec = pfp(json!([
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": []}},
        {"action": "FailJob", "onExitCodes": {"operator": "In"}},
    ]));
    assert_eq!(
        errors(spec),
        vec![
            format!("{P}.onExitCodes.values: Invalid value: []: at least one value is required"),
            "spec.podFailurePolicy.rules[1].onExitCodes.values: Invalid value: null: at least one value is required".to_string(),
        ]
    );
}

#[test]
fn at_most_255_values_boundary() {
    let ok: Vec<i32> = (1..=255).collect();
    let spec = pfp(json!([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": ok}}]));
    assert_eq!(errors(spec), Vec::<String>::new());
    let too_many: Vec<i32> = (1..=256).collect();
    let spec =
        pfp(json!([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": too_many}}]));
    assert_eq!(
        errors(spec),
        vec![format!(
            "{P}.onExitCodes.values: Too many: 256: must have at most 255 items"
        )]
    );
}

#[test]
fn zero_with_in_duplicates_and_order_errors_come_per_value_then_ordering() {
    let spec = pfp(json!([{"action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [0, 3, 3, 2]}}]));
    assert_eq!(
        errors(spec),
        vec![
            format!(
                "{P}.onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"
            ),
            format!("{P}.onExitCodes.values[2]: Duplicate value: 3"),
            format!("{P}.onExitCodes.values: Invalid value: [0,3,3,2]: must be ordered"),
        ]
    );
    // Zero is allowed with NotIn.
    let spec =
        pfp(json!([{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0, 1]}}]));
    assert_eq!(errors(spec), Vec::<String>::new());
}

#[test]
fn at_most_20_on_pod_conditions_patterns_boundary() {
    let pat = json!({"type": "DisruptionTarget", "status": "True"});
    let rule = |n| json!([{"action": "Ignore", "onPodConditions": vec![pat.clone(); n]}]);
    assert_eq!(errors(pfp(rule(20))), Vec::<String>::new());
    assert_eq!(
        errors(pfp(rule(21))),
        vec![format!(
            "{P}.onPodConditions: Too many: 21: must have at most 20 items"
        )]
    );
}

#[test]
fn on_pod_conditions_status_required_and_supported() {
    let spec = pfp(json!([{"action": "Ignore", "onPodConditions": [
        {"type": "DisruptionTarget"}, {"type": "DisruptionTarget", "status": "true"}]}]));
    assert_eq!(
        errors(spec),
        vec![
            format!(
                r#"{P}.onPodConditions[0].status: Required value: valid values: ["False" "True" "Unknown"]"#
            ),
            format!(
                r#"{P}.onPodConditions[1].status: Unsupported value: "true": supported values: "False", "True", "Unknown""#
            ),
        ]
    );
}

const QNAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn type_errors(type_: &str) -> Vec<String> {
    let spec =
        pfp(json!([{"action": "Ignore", "onPodConditions": [{"type": type_, "status": "True"}]}]));
    errors(spec)
}

#[test]
fn on_pod_conditions_type_is_a_qualified_name_with_63_character_name_part() {
    let t = format!("{P}.onPodConditions[0].type");
    assert_eq!(type_errors(&"a".repeat(63)), Vec::<String>::new());
    let long = "a".repeat(64);
    assert_eq!(
        type_errors(&long),
        vec![format!(
            r#"{t}: Invalid value: "{long}": name part must be no more than 63 characters"#
        )]
    );
    assert_eq!(
        type_errors(""),
        vec![
            format!(r#"{t}: Invalid value: "": name part must be non-empty"#),
            format!(r#"{t}: Invalid value: "": name part {QNAME_ERR}"#),
        ]
    );
    assert_eq!(
        type_errors("-Bad"),
        vec![format!(
            r#"{t}: Invalid value: "-Bad": name part {QNAME_ERR}"#
        )]
    );
}

#[test]
fn on_pod_conditions_type_prefix_is_a_dns_subdomain() {
    let t = format!("{P}.onPodConditions[0].type");
    assert_eq!(type_errors("example.com/Ready"), Vec::<String>::new());
    assert_eq!(
        type_errors("/Ready"),
        vec![format!(
            r#"{t}: Invalid value: "/Ready": prefix part must be non-empty"#
        )]
    );
    assert_eq!(
        type_errors("Example.com/Ready"),
        vec![format!(
            r#"{t}: Invalid value: "Example.com/Ready": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
        )]
    );
    let prefix = format!("{}.com", "a".repeat(250));
    assert_eq!(
        type_errors(&format!("{prefix}/Ready")),
        vec![format!(
            r#"{t}: Invalid value: "{prefix}/Ready": prefix part must be no more than 253 characters"#
        )]
    );
    assert_eq!(
        type_errors("a/b/c"),
        vec![format!(
            r#"{t}: Invalid value: "a/b/c": a qualified name {QNAME_ERR} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#
        )]
    );
}

/// apimachinery v0.35 (Kubernetes 1.35) made `IsQualifiedName` an alias of
/// `content.IsLabelKey` (`pkg/api/validate/content/kube.go`): "a valid label key" for a value
/// with more than one `/`, and `MaxLenError` counts "bytes" (`content/errors.go`).
#[test]
fn on_pod_conditions_type_messages_use_label_key_wording_from_1_35() {
    let t = format!("{P}.onPodConditions[0].type");
    let long = "a".repeat(64);
    let prefix = format!("{}.com", "a".repeat(250));
    for version in KubernetesVersion::all() {
        let (what, unit) = if version < KubernetesVersion::V1_35 {
            ("a qualified name", "characters")
        } else {
            ("a valid label key", "bytes")
        };
        let spec = |type_: &str| {
            pfp(
                json!([{"action": "Ignore", "onPodConditions": [{"type": type_, "status": "True"}]}]),
            )
        };
        let got = |type_: &str| -> Vec<String> {
            validate_object(&job_with(spec(type_)), &Cluster::new(version))
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(
            got(&long),
            vec![format!(
                r#"{t}: Invalid value: "{long}": name part must be no more than 63 {unit}"#
            )],
            "{version}"
        );
        assert_eq!(
            got(&format!("{prefix}/Ready")),
            vec![format!(
                r#"{t}: Invalid value: "{prefix}/Ready": prefix part must be no more than 253 {unit}"#
            )],
            "{version}"
        );
        assert_eq!(
            got("a/b/c"),
            vec![format!(
                r#"{t}: Invalid value: "a/b/c": {what} {QNAME_ERR} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#
            )],
            "{version}"
        );
    }
}

#[test]
fn pod_replacement_policy_with_pod_failure_policy_only_failed_even_empty_policy() {
    for policy in [json!({}), json!({"rules": []})] {
        let spec =
            json!({"podFailurePolicy": policy, "podReplacementPolicy": "TerminatingOrFailed"});
        assert_eq!(
            errors(spec),
            vec![
                r#"spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#
            ]
        );
    }
}

#[test]
fn pod_replacement_policy_without_pod_failure_policy_failed_or_terminating_or_failed() {
    for ok in ["Failed", "TerminatingOrFailed"] {
        assert_eq!(
            errors(json!({"podReplacementPolicy": ok})),
            Vec::<String>::new()
        );
    }
    assert_eq!(
        errors(json!({"podReplacementPolicy": ""})),
        vec![
            r#"spec.podReplacementPolicy: Unsupported value: "": supported values: "Failed", "TerminatingOrFailed""#
        ]
    );
}

#[test]
fn restart_policy_always_or_empty_is_required_value() {
    assert_eq!(
        errors(json!({"template": {"spec": {"restartPolicy": "Always"}}})),
        vec![
            r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#
        ]
    );
}

/// Upstream case `spec.template.spec.restartPolicy: Unsupported value`: `ValidatePodTemplateSpec`
/// (core `validateRestartPolicy`) reports the field first, then `validateJobSpec` does again with
/// the Job's own choices. An unset value is defaulted to `Always` before upstream validates, so
/// it gets the Job's one `Required value` (as `Always` does), not two.
#[test]
fn upstream_validate_job_restart_policy_pod_template_error_then_job_error() {
    assert_eq!(
        errors(json!({"template": {"spec": {"restartPolicy": ""}}})),
        vec![
            r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#
        ]
    );
    assert_eq!(
        errors(json!({"template": {"spec": {"restartPolicy": "Sometimes"}}})),
        vec![
            r#"spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#,
            r#"spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never""#,
        ]
    );
}

#[test]
fn restart_policy_on_failure_with_pod_failure_policy_is_invalid() {
    let mut spec =
        pfp(json!([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]));
    merge(
        &mut spec,
        json!({"template": {"spec": {"restartPolicy": "OnFailure"}}}),
    );
    assert_eq!(
        errors(spec),
        vec![
            r#"spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#
        ]
    );
}

#[test]
fn errors_are_ordered_rules_then_replacement_then_restart_policy() {
    let mut spec =
        pfp(json!([{"action": "Bogus", "onExitCodes": {"operator": "In", "values": [2, 1]}}]));
    merge(
        &mut spec,
        json!({"podReplacementPolicy": "TerminatingOrFailed", "template": {"spec": {"restartPolicy": "Always"}}}),
    );
    let got = errors(spec);
    let paths: Vec<&str> = got.iter().map(|e| e.split(": ").next().unwrap()).collect();
    assert_eq!(
        paths,
        vec![
            "spec.podFailurePolicy.rules[0].action",
            "spec.podFailurePolicy.rules[0].onExitCodes.values",
            "spec.podReplacementPolicy",
            "spec.template.spec.restartPolicy",
        ]
    );
}

#[test]
fn backoff_limit_per_index_and_max_failed_indexes_require_indexed() {
    assert_eq!(
        errors(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 1})),
        vec![
            "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
            "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
        ]
    );
    assert_eq!(
        errors(json!({"completionMode": "NonIndexed", "backoffLimitPerIndex": -1})),
        vec![
            "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0",
            "spec.backoffLimitPerIndex: Invalid value: -1: requires indexed completion mode",
        ]
    );
}

#[test]
fn max_failed_indexes_requires_backoff_limit_per_index_and_at_most_completions() {
    assert_eq!(
        errors(json!({"completionMode": "Indexed", "completions": 5, "maxFailedIndexes": 6})),
        vec![
            "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
            "spec.maxFailedIndexes: Invalid value: 6: must be less than or equal to completions",
        ]
    );
    assert_eq!(
        errors(
            json!({"completionMode": "Indexed", "completions": 5, "backoffLimitPerIndex": 0, "maxFailedIndexes": 5})
        ),
        Vec::<String>::new()
    );
}

#[test]
fn indexed_limits_at_100000_and_high_completions_with_backoff_limit_per_index() {
    assert_eq!(
        errors(
            json!({"completionMode": "Indexed", "completions": 100000, "parallelism": 100000,
            "backoffLimitPerIndex": 1})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(
            json!({"completionMode": "Indexed", "completions": 100001, "parallelism": 100001,
            "backoffLimitPerIndex": 1, "maxFailedIndexes": 100001})
        ),
        vec![
            "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed",
            "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
            "spec.parallelism: Invalid value: 100001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
        ]
    );
    assert_eq!(
        errors(
            json!({"completionMode": "Indexed", "completions": 100001, "backoffLimitPerIndex": 1})
        ),
        vec![
            "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000"
        ]
    );
}

#[test]
fn completion_mode_supported_values_and_indexed_requires_completions() {
    assert_eq!(
        errors(json!({"completionMode": "Sequential", "completions": 1})),
        vec![
            r#"spec.completionMode: Unsupported value: "Sequential": supported values: "NonIndexed", "Indexed""#
        ]
    );
    assert_eq!(
        errors(json!({"completionMode": "Indexed", "parallelism": 2})),
        vec!["spec.completions: Required value: when completion mode is Indexed"]
    );
}

#[test]
fn success_policy_requires_indexed_completion_mode() {
    assert_eq!(
        errors(json!({"successPolicy": {"rules": [{"succeededCount": 1}]}})),
        vec![
            r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":null,"SucceededCount":1}]}: requires indexed completion mode"#
        ]
    );
}

#[test]
fn success_policy_rules_on_an_indexed_job() {
    let indexed = |sp: Value| {
        errors(json!({"completionMode": "Indexed", "completions": 10, "successPolicy": sp}))
    };
    assert_eq!(
        indexed(json!({"rules": [{"succeededIndexes": "0-2,5", "succeededCount": 4}]})),
        Vec::<String>::new()
    );
    assert_eq!(
        indexed(json!({"rules": []})),
        vec![
            "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"
        ]
    );
    assert_eq!(
        indexed(json!({"rules": [{}]})),
        vec![
            "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified"
        ]
    );
    assert_eq!(
        indexed(json!({"rules": [{"succeededIndexes": "3-1,x", "succeededCount": 11}]})),
        vec![
            r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "3-1,x": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"#,
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 11: must be less than or equal to 10 (the number of specified completions)",
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 11: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
        ]
    );
    assert_eq!(
        indexed(
            json!({"rules": [{"succeededIndexes": "1-2-3"}, {"succeededIndexes": "10"}, {"succeededIndexes": "a"}]})
        ),
        vec![
            r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'"#,
            r#"spec.successPolicy.rules[1].succeededIndexes: Invalid value: "10": error parsing succeededIndexes: too large index: "10""#,
            r#"spec.successPolicy.rules[2].succeededIndexes: Invalid value: "a": error parsing succeededIndexes: cannot convert string to integer for index: "a""#,
        ]
    );
}

#[test]
fn nonnegative_counts() {
    assert_eq!(
        errors(
            json!({"parallelism": -1, "completions": -2, "activeDeadlineSeconds": -3, "backoffLimit": -4, "ttlSecondsAfterFinished": -5})
        ),
        vec![
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            "spec.completions: Invalid value: -2: must be greater than or equal to 0",
            "spec.activeDeadlineSeconds: Invalid value: -3: must be greater than or equal to 0",
            "spec.backoffLimit: Invalid value: -4: must be greater than or equal to 0",
            "spec.ttlSecondsAfterFinished: Invalid value: -5: must be greater than or equal to 0",
        ]
    );
}

#[test]
fn cron_job_paths_are_prefixed_spec_job_template() {
    let cj = JobObject::from_value(
        Kind::CronJob,
        json!({"spec": {"schedule": "@daily", "jobTemplate": {"spec": {
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]},
            "podReplacementPolicy": "TerminatingOrFailed",
            "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c"}]}}}}}}),
    )
    .unwrap();
    let got: Vec<String> = validate_object(&cj, &on_1_34())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        vec![
            r#"spec.jobTemplate.spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#,
            r#"spec.jobTemplate.spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#,
        ]
    );
}

// ---- UPDATE (ValidateJobSpecUpdate) ----

fn stored(extra: Value) -> JobObject {
    let mut spec = json!({
        "completionMode": "NonIndexed", "completions": 1, "parallelism": 1, "suspend": false,
        "podReplacementPolicy": "TerminatingOrFailed",
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}]}}
    });
    merge(&mut spec, extra);
    let doc = json!({"metadata": {"name": "j"}, "spec": spec});
    let mut o = JobObject::from_value(Kind::Job, doc.clone()).unwrap();
    o.keep_whole_template(&doc, KubernetesVersion::V1_37);
    o
}

/// The UPDATE rules as Kubernetes 1.34 has them (the behaviour these cases were written for).
fn update_errors(new: &JobObject, old: &JobObject) -> Vec<String> {
    update_errors_on(KubernetesVersion::V1_34, new, old)
}

fn update_errors_on(version: KubernetesVersion, new: &JobObject, old: &JobObject) -> Vec<String> {
    validate_job_update(new, old, &Cluster::new(version))
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn update_pod_failure_policy_is_immutable() {
    let old = stored(json!({}));
    let new = stored(pfp(
        json!([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]),
    ));
    assert_eq!(
        update_errors(&new, &old),
        vec![
            r#"spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"FailJob","OnExitCodes":{"ContainerName":null,"Operator":"In","Values":[1]},"OnPodConditions":null}]}: field is immutable"#
        ]
    );
    assert_eq!(
        update_errors(&old, &new),
        vec!["spec.podFailurePolicy: Invalid value: null: field is immutable"]
    );
    // Semantic equality: `rules: []` and `{}` are the same policy.
    assert_eq!(
        update_errors(
            &stored(json!({"podFailurePolicy": {}})),
            &stored(json!({"podFailurePolicy": {"rules": []}}))
        ),
        Vec::<String>::new()
    );
}

/// The decoded slice of `rules: []` is empty, not nil: `json.Marshal` prints `[]`; a missing or
/// `null` list prints `null` (upstream case `spec.successPolicy: Invalid value: {"Rules":[]}`).
#[test]
fn upstream_validate_job_empty_list_prints_brackets_and_missing_list_null() {
    assert_eq!(
        errors(json!({"successPolicy": {}})),
        vec![
            r#"spec.successPolicy: Invalid value: {"Rules":null}: requires indexed completion mode"#
        ]
    );
    assert_eq!(
        errors(json!({"successPolicy": {"rules": null}})),
        vec![
            r#"spec.successPolicy: Invalid value: {"Rules":null}: requires indexed completion mode"#
        ]
    );
    let old = stored(json!({}));
    let empty_rules = stored(json!({"podFailurePolicy": {"rules": []}}));
    assert_eq!(
        update_errors(&empty_rules, &old),
        vec![r#"spec.podFailurePolicy: Invalid value: {"Rules":[]}: field is immutable"#]
    );
    let no_rules = stored(json!({"podFailurePolicy": {}}));
    assert_eq!(
        update_errors(&no_rules, &old),
        vec![r#"spec.podFailurePolicy: Invalid value: {"Rules":null}: field is immutable"#]
    );
    let empty_conditions = stored(pfp(json!([{"action": "FailJob", "onPodConditions": [],
        "onExitCodes": {"operator": "In", "values": [1]}}])));
    assert_eq!(
        update_errors(&empty_conditions, &old),
        vec![
            r#"spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"FailJob","OnExitCodes":{"ContainerName":null,"Operator":"In","Values":[1]},"OnPodConditions":[]}]}: field is immutable"#
        ]
    );
}

#[test]
fn update_immutable_pod_failure_policy_prints_go_field_names_in_declaration_order() {
    let old = stored(json!({}));
    let new = stored(pfp(
        json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
    ));
    assert_eq!(
        update_errors(&new, &old),
        vec![
            r#"spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"Ignore","OnExitCodes":null,"OnPodConditions":[{"Type":"DisruptionTarget","Status":"True"}]}]}: field is immutable"#
        ]
    );
}

#[test]
fn update_backoff_limit_per_index_completion_mode_success_policy_are_immutable() {
    let old = stored(
        json!({"completionMode": "Indexed", "completions": 4, "parallelism": 4, "backoffLimitPerIndex": 1}),
    );
    let new = stored(
        json!({"completionMode": "Indexed", "completions": 4, "parallelism": 4, "backoffLimitPerIndex": 2,
        "successPolicy": {"rules": [{"succeededIndexes": "0"}]}}),
    );
    assert_eq!(
        update_errors(&new, &old),
        vec![
            "spec.backoffLimitPerIndex: Invalid value: 2: field is immutable",
            r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"0","SucceededCount":null}]}: field is immutable"#,
        ]
    );
    let non_indexed = stored(json!({}));
    assert_eq!(
        update_errors(&non_indexed, &old),
        vec![
            "spec.completions: Invalid value: 1: field is immutable",
            r#"spec.completionMode: Invalid value: "NonIndexed": field is immutable"#,
            "spec.backoffLimitPerIndex: Invalid value: null: field is immutable",
        ]
    );
}

#[test]
fn update_pod_replacement_policy_is_mutable_but_still_validated() {
    let old = stored(json!({}));
    let new = stored(json!({"podReplacementPolicy": "Failed"}));
    assert_eq!(update_errors(&new, &old), Vec::<String>::new());
}

/// Upstream `TestJobStrategy_PrepareForUpdate` ("update job with a new field; updated when
/// JobPodReplacementPolicy enabled" and the disabled case): with the 1.33 gate off,
/// `dropDisabledFields` drops `podReplacementPolicy` from the new Job unless the old one already
/// had it (`podReplacementPolicyInUse`); a kept value is validated. `check` drops it while
/// defaulting each object, and `validate` restores it on such an UPDATE.
#[test]
fn test_job_strategy_prepare_for_update_keeps_pod_replacement_policy_in_use_with_the_gate_off() {
    let off = Config {
        cluster: Cluster::with_gates(
            KubernetesVersion::V1_33,
            &[(FeatureGate::JobPodReplacementPolicy, false)].into(),
        )
        .unwrap(),
        ..Config::default()
    };
    let defaulted = |spec: Value| {
        let mut o = job_with(spec);
        crate::job::defaults::apply_apiserver_defaults(&mut o, &off.cluster);
        o
    };
    let bogus = json!({"podReplacementPolicy": "Bogus"});
    let review_errors = |new: &JobObject, old: &JobObject| -> Vec<String> {
        let review = Review {
            operation: Operation::Update,
            object: new,
            old_object: Some(old),
        };
        validate(&review, &off)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    // The old Job had one: kept, and validated (twice: 1.33's `ValidateUpdate` runs
    // `validateJobSpec` in `ValidateJob` and again in `ValidateJobUpdate`).
    let old_in_use = defaulted(json!({"podReplacementPolicy": "Failed"}));
    let unsupported = r#"spec.podReplacementPolicy: Unsupported value: "Bogus": supported values: "Failed", "TerminatingOrFailed""#;
    assert_eq!(
        review_errors(&defaulted(bogus.clone()), &old_in_use),
        vec![unsupported, unsupported]
    );
    // It had none: dropped, so nothing to validate.
    let old_without = defaulted(json!({}));
    assert_eq!(
        review_errors(&defaulted(bogus.clone()), &old_without),
        Vec::<String>::new()
    );
    // A CREATE drops it too.
    let create = Review {
        operation: Operation::Create,
        object: &defaulted(bogus),
        old_object: None,
    };
    assert!(validate(&create, &off).errors.is_empty());
}

#[test]
fn update_elastic_indexed_job_completions_in_tandem_with_parallelism() {
    let old = stored(json!({"completionMode": "Indexed", "completions": 4, "parallelism": 4}));
    let ok = stored(json!({"completionMode": "Indexed", "completions": 6, "parallelism": 6}));
    assert_eq!(update_errors(&ok, &old), Vec::<String>::new());
    let bad = stored(json!({"completionMode": "Indexed", "completions": 6, "parallelism": 4}));
    assert_eq!(
        update_errors(&bad, &old),
        vec![
            "spec.completions: Invalid value: 6: can only be modified in tandem with spec.parallelism"
        ]
    );
}

#[test]
fn update_template_is_immutable() {
    let old = stored(json!({}));
    let new = stored(
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}}),
    );
    assert_eq!(
        update_errors(&new, &old),
        vec!["spec.template: Invalid value: field is immutable"]
    );
    // Absent, null and [] are the same value.
    let same = stored(
        json!({"template": {"metadata": {"creationTimestamp": null}, "spec": {"volumes": []}}}),
    );
    assert_eq!(update_errors(&same, &old), Vec::<String>::new());
}

#[test]
fn update_mutable_scheduling_directives_of_a_suspended_job_that_never_started() {
    let directives = json!({"template": {"metadata": {"labels": {"queue": "a"}, "annotations": {"x": "y"}},
        "spec": {"nodeSelector": {"zone": "b"}, "tolerations": [{"key": "k", "operator": "Exists"}],
        "schedulingGates": [{"name": "g"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}}});
    let old = stored(json!({"suspend": true}));
    let mut extra = directives.clone();
    merge(&mut extra, json!({"suspend": true}));
    let new = stored(extra);
    assert_eq!(update_errors(&new, &old), Vec::<String>::new());
    // Started (status.startTime set): the template is immutable again.
    let mut started = old.clone();
    started.started = true;
    assert_eq!(
        update_errors(&new, &started),
        vec!["spec.template: Invalid value: field is immutable"]
    );
    // Not suspended: immutable.
    let running = stored(json!({}));
    let new_running = stored(directives);
    assert_eq!(
        update_errors(&new_running, &running),
        vec!["spec.template: Invalid value: field is immutable"]
    );
    // Pod affinity is not a scheduling directive jobgate (and upstream) lets change.
    let pod_affinity =
        stored(json!({"suspend": true, "template": {"spec": {"affinity": {"podAffinity": {}}}}}));
    assert_eq!(
        update_errors(&pod_affinity, &old),
        vec!["spec.template: Invalid value: field is immutable"]
    );
}

/// The old Job: `stored(extra)` with `status` (`startTime`, `active`, `conditions`).
fn stored_with_status(extra: Value, status: Value) -> JobObject {
    let mut o = stored(extra.clone());
    let mut spec = json!({
        "completionMode": "NonIndexed", "completions": 1, "parallelism": 1, "suspend": false,
        "podReplacementPolicy": "TerminatingOrFailed",
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}]}}
    });
    merge(&mut spec, extra);
    let doc = json!({"metadata": {"name": "j"}, "spec": spec, "status": status});
    let parsed = JobObject::from_value(Kind::Job, doc).unwrap();
    o.started = parsed.started;
    o.active = parsed.active;
    o.suspended_condition = parsed.suspended_condition;
    o
}

fn resized() -> Value {
    json!({"suspend": true, "template": {"spec": {"containers": [{"name": "main", "image": "busybox",
        "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}})
}

fn on_every_release(new: &JobObject, old: &JobObject) -> Vec<Vec<String>> {
    KubernetesVersion::all()
        .map(|v| update_errors_on(v, new, old))
        .collect()
}

const TEMPLATE_IMMUTABLE: &str = "spec.template: Invalid value: field is immutable";

/// KEP-5440 (MutablePodResourcesForSuspendedJobs, alpha in 1.35, beta and on from 1.36): a queue
/// controller may resize a suspended Job's containers before it starts. 1.35 (v1.35.4) admits
/// that only with the `JobSuspended` condition (kubernetes#132441), which a Job that never
/// started does not have; 1.36 (v1.36.3; not v1.36.1, kubernetes#136077, #139287) and later admit
/// it once no pod is active.
#[test]
fn kep_5440_resources_of_a_suspended_job_that_never_started_change_from_1_36() {
    let old = stored(json!({"suspend": true}));
    let new = stored(resized());
    let immutable = vec![TEMPLATE_IMMUTABLE.to_string()];
    assert_eq!(
        on_every_release(&new, &old),
        [
            immutable.clone(),
            immutable.clone(),
            immutable.clone(),
            vec![],
            vec![],
            vec![]
        ]
    );
    // A 1.35 cluster with the alpha gate on accepts it once the Job is fully suspended.
    let alpha = Cluster::with_gates(
        KubernetesVersion::V1_35,
        &[(FeatureGate::MutablePodResourcesForSuspendedJobs, true)].into(),
    )
    .unwrap();
    assert_eq!(
        validate_job_update(&new, &old, &alpha)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        immutable
    );
    let fully_suspended = stored_with_status(
        json!({"suspend": true}),
        json!({"startTime": "2026-11-01T00:00:00Z", "active": 0,
            "conditions": [{"type": "Suspended", "status": "True"}]}),
    );
    assert_eq!(validate_job_update(&new, &fully_suspended, &alpha), vec![]);
    // A 1.37 cluster that turned the beta gate off does not.
    assert_eq!(
        update_errors_with_resources_gate(KubernetesVersion::V1_37, false, &new, &old),
        vec![TEMPLATE_IMMUTABLE]
    );
}

/// The UPDATE rules of `version` with `MutablePodResourcesForSuspendedJobs` set to `on`.
fn update_errors_with_resources_gate(
    version: KubernetesVersion,
    on: bool,
    new: &JobObject,
    old: &JobObject,
) -> Vec<String> {
    let cluster = Cluster::with_gates(
        version,
        &[(FeatureGate::MutablePodResourcesForSuspendedJobs, on)].into(),
    )
    .unwrap();
    validate_job_update(new, old, &cluster)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// From 1.36 (gates on by default): both KEP-5440 relaxations need `status.active == 0`, also
/// for a Job that never started; on 1.33-1.35's defaults such a Job could always change its
/// scheduling directives.
#[test]
fn kep_5440_from_1_36_no_active_pods_also_before_the_job_started() {
    let old = stored_with_status(json!({"suspend": true}), json!({"active": 1}));
    let moved =
        stored(json!({"suspend": true, "template": {"spec": {"nodeSelector": {"pool": "b"}}}}));
    let mut expected = vec![Vec::<String>::new(); 3];
    expected.extend(vec![vec![TEMPLATE_IMMUTABLE.to_string()]; 3]);
    assert_eq!(on_every_release(&moved, &old), expected);
}

/// `validatePodResourceUpdatesOnly` compares the pod specs, so anything but resources (here the
/// image) is reported on `spec.template.spec`; init containers' resources may change too, a
/// renamed container's may not.
#[test]
fn kep_5440_only_container_resources_change_and_the_error_is_on_the_pod_spec() {
    let old = stored(json!({"suspend": true}));
    let mut image = resized();
    merge(
        &mut image,
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "busybox:2",
        "resources": {"requests": {"cpu": "2"}}}]}}}),
    );
    let new = stored(image);
    assert_eq!(
        update_errors_on(KubernetesVersion::V1_37, &new, &old),
        vec!["spec.template.spec: Invalid value: field is immutable"]
    );
    let old_init = stored(
        json!({"suspend": true, "template": {"spec": {"initContainers": [{"name": "init"}]}}}),
    );
    let new_init = stored(
        json!({"suspend": true, "template": {"spec": {"initContainers": [{"name": "init",
        "resources": {"limits": {"memory": "1Gi"}}}]}}}),
    );
    assert_eq!(
        update_errors_on(KubernetesVersion::V1_37, &new_init, &old_init),
        Vec::<String>::new()
    );
    let renamed = stored(
        json!({"suspend": true, "template": {"spec": {"initContainers": [{"name": "init2",
        "resources": {"limits": {"memory": "1Gi"}}}]}}}),
    );
    assert_eq!(
        update_errors_on(KubernetesVersion::V1_37, &renamed, &old_init),
        vec!["spec.template.spec: Invalid value: field is immutable"]
    );
    // Not suspended: the whole template is immutable, as before.
    let running = stored(json!({}));
    let mut running_resized = resized();
    merge(&mut running_resized, json!({"suspend": false}));
    assert_eq!(
        update_errors_on(KubernetesVersion::V1_37, &stored(running_resized), &running),
        vec![TEMPLATE_IMMUTABLE]
    );
}

/// `ValidateJobSpecUpdate` compares templates with `apiequality.Semantic.DeepEqual`, which
/// compares quantities by value: a running Job re-applied with its quantities spelled in another
/// format (kube-apiserver keeps each quantity's format) plus an allowed change is accepted on
/// every release; a changed value is not.
#[test]
fn update_template_quantities_compare_by_value_on_every_release() {
    let running = json!({"startTime": "2026-11-01T00:00:00Z", "active": 2});
    let with = |memory: &str, cpu: Value, size: &str| {
        json!({"parallelism": 1, "template": {"spec": {
            "containers": [{"name": "main", "image": "busybox",
                "resources": {"limits": {"memory": memory}, "requests": {"cpu": cpu}}}],
            "overhead": {"memory": memory},
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": size}}]}}})
    };
    let old = stored_with_status(with("1Gi", json!("500m"), "512Mi"), running);
    let mut respelled = with("1073741824", json!(0.5), "536870912");
    respelled["parallelism"] = json!(2);
    assert_eq!(
        on_every_release(&stored(respelled), &old),
        vec![Vec::<String>::new(); 6]
    );
    let changed = with("1G", json!("500m"), "512Mi");
    assert_eq!(
        on_every_release(&stored(changed), &old),
        vec![vec![TEMPLATE_IMMUTABLE.to_string()]; 6]
    );
}

/// kubernetes#140459: a 1.38 apiserver writes `cpu: 1000E` as `1e21` (1.33-1.37 wrote `1`), so
/// the old and new templates of an UPDATE may spell one value past 10^18 both ways; the
/// immutability check compares the values.
#[test]
fn kubernetes_140459_template_quantities_past_1e18_compare_by_value() {
    let running = json!({"startTime": "2026-11-01T00:00:00Z", "active": 1});
    let with = |cpu: &str| {
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "busybox",
            "resources": {"limits": {"cpu": cpu}}}]}}})
    };
    let old = stored_with_status(with("1e21"), running);
    for same in ["1000E", "1000000000000000000000", "1E21"] {
        assert_eq!(
            update_errors_on(KubernetesVersion::V1_38, &stored(with(same)), &old),
            Vec::<String>::new(),
            "{same}"
        );
    }
    assert_eq!(
        update_errors_on(KubernetesVersion::V1_38, &stored(with("1")), &old),
        vec![TEMPLATE_IMMUTABLE]
    );
}

/// KEP-5440 with MutableSchedulingDirectivesForSuspendedJobs: a Job that ran and was suspended
/// (the Job controller set `Suspended=True` and its pods are gone) may be moved and resized
/// before it resumes; while pods are still active it may not.
#[test]
fn kep_5440_a_started_job_suspended_with_no_active_pods_changes_from_1_36() {
    let suspended = json!({"startTime": "2026-11-01T00:00:00Z", "active": 0,
        "conditions": [{"type": "Suspended", "status": "True"}]});
    let old = stored_with_status(json!({"suspend": true}), suspended.clone());
    let moved =
        stored(json!({"suspend": true, "template": {"spec": {"nodeSelector": {"pool": "b"}}}}));
    let immutable = vec![TEMPLATE_IMMUTABLE.to_string()];
    assert_eq!(
        on_every_release(&moved, &old),
        [
            immutable.clone(),
            immutable.clone(),
            immutable.clone(),
            vec![],
            vec![],
            vec![]
        ]
    );
    assert_eq!(
        on_every_release(&stored(resized()), &old),
        [
            immutable.clone(),
            immutable.clone(),
            immutable.clone(),
            vec![],
            vec![],
            vec![]
        ]
    );
    let mut active = suspended;
    active["active"] = json!(2);
    let still_running = stored_with_status(json!({"suspend": true}), active);
    assert_eq!(
        update_errors_on(KubernetesVersion::V1_37, &moved, &still_running),
        immutable
    );
}

/// Upstream `TestJobStrategy_ValidateUpdate_MutablePodResources` (kubernetes#136077): "feature
/// gate enabled - job resuming (suspend=false) but JobSuspended condition still true - resource
/// updates rejected". The stored Job is no longer suspended, so nothing is relaxed, whatever the
/// condition still says.
#[test]
fn upstream_job_resuming_but_job_suspended_condition_still_true_resource_updates_rejected() {
    let old = stored_with_status(
        json!({"suspend": false}),
        json!({"startTime": "2026-11-01T00:00:00Z", "active": 0,
            "conditions": [{"type": "Suspended", "status": "True"}]}),
    );
    let mut resumed_and_resized = resized();
    merge(&mut resumed_and_resized, json!({"suspend": false}));
    let new = stored(resumed_and_resized);
    assert_eq!(
        on_every_release(&new, &old),
        vec![vec![TEMPLATE_IMMUTABLE.to_string()]; 6]
    );
    // v1.35.4 sets `AllowMutablePodResources` from the condition alone, but
    // `validatePodTemplateUpdate` reads `spec.suspend` itself: the verdict is the same.
    assert_eq!(
        update_errors_with_resources_gate(KubernetesVersion::V1_35, true, &new, &old),
        vec![TEMPLATE_IMMUTABLE]
    );
}

/// KEP-5440 "controllers make a single API call for both updating resources and unsuspending":
/// the stored Job is fully suspended, so resizing and resuming in one UPDATE is accepted from
/// 1.36.
#[test]
fn kep_5440_resize_and_resume_in_one_update() {
    let old = stored_with_status(
        json!({"suspend": true}),
        json!({"startTime": "2026-11-01T00:00:00Z", "active": 0,
            "conditions": [{"type": "Suspended", "status": "True"}]}),
    );
    let mut resize_and_resume = resized();
    merge(&mut resize_and_resume, json!({"suspend": false}));
    let new = stored(resize_and_resume);
    let immutable = vec![TEMPLATE_IMMUTABLE.to_string()];
    assert_eq!(
        on_every_release(&new, &old),
        [
            immutable.clone(),
            immutable.clone(),
            immutable,
            vec![],
            vec![],
            vec![]
        ]
    );
}

/// kubernetes#139287: a suspended Job that never started keeps its mutable scheduling
/// directives on 1.36+ even before the Job controller set `Suspended=True` (MultiKueue).
#[test]
fn kubernetes_139287_scheduling_directives_before_the_suspended_condition() {
    let old = stored(json!({"suspend": true}));
    let moved =
        stored(json!({"suspend": true, "template": {"spec": {"nodeSelector": {"pool": "b"}}}}));
    assert_eq!(
        on_every_release(&moved, &old),
        vec![Vec::<String>::new(); 6]
    );
}

#[test]
fn update_of_a_cron_job_has_no_immutable_job_template_fields() {
    let cj = |pr: &str| {
        JobObject::from_value(Kind::CronJob, json!({"spec": {"jobTemplate": {"spec": {"backoffLimitPerIndex": null,
            "podFailurePolicy": {"rules": [{"action": pr, "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
            "template": {"spec": {"restartPolicy": "Never"}}}}}}))
        .unwrap()
    };
    let (old, new) = (cj("Ignore"), cj("FailJob"));
    let review = Review {
        operation: Operation::Update,
        object: &new,
        old_object: Some(&old),
    };
    assert_eq!(validate(&review, &Config::default()).errors, vec![]);
}

/// `TestValidateJob` error cases of kubernetes `pkg/apis/batch/validation/validation_test.go`,
/// named by their upstream case name (the first error upstream expects; upstream's names show
/// 1.34's values, `[19,11]`, where 1.31 named them `[]int32{19, 11}`). jobgate's first error must
/// be that message; where upstream's name is `field:detail` or omits the value, the third column
/// holds the whole message jobgate prints.
#[test]
fn test_validate_job_upstream_error_cases() {
    let on_exit = |values: Value| {
        pfp(json!([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": values}}]))
    };
    let indexed = |extra: Value| {
        let mut spec = json!({"completionMode": "Indexed"});
        merge(&mut spec, extra);
        spec
    };
    let success =
        |rules: Value| indexed(json!({"completions": 5, "successPolicy": {"rules": rules}}));
    let cases: Vec<(&str, Value, String)> = vec![
        (r#"spec.successPolicy: Invalid value: {"Rules":[]}: requires indexed completion mode"#,
            json!({"successPolicy": {"rules": []}}), String::new()),
        ("spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
            pfp(json!([{"action": "FailJob"}])), String::new()),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Duplicate value: 11", on_exit(json!([11, 11])), String::new()),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 256: must have at most 255 items",
            on_exit(json!((0..256).collect::<Vec<i32>>())), String::new()),
        ("spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items",
            pfp(Value::Array((1..=21).map(|i| json!({"action": "FailJob", "onExitCodes": {"operator": "In", "values": [i]}})).collect())),
            String::new()),
        ("spec.podFailurePolicy.rules[0].onPodConditions: Too many: 21: must have at most 20 items",
            pfp(json!([{"action": "FailJob", "onPodConditions":
                (0..21).map(|i| json!({"type": format!("CustomType_{i}"), "status": "True"})).collect::<Vec<_>>()}])),
            String::new()),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 13", on_exit(json!([12, 13, 13, 13])), String::new()),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [19,11]: must be ordered",
            on_exit(json!([19, 11])), String::new()),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []: at least one value is required",
            on_exit(json!([])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
            pfp(json!([{"action": "", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}}])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]"#,
            pfp(json!([{"action": "FailJob", "onExitCodes": {"operator": "", "values": [1, 2, 3]}}])), String::new()),
        ("spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
            pfp(json!([{"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [1, 2, 3]},
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}])), String::new()),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
            pfp(json!([{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 0, 2]}}])), String::new()),
        (r#"spec.podFailurePolicy.rules[1].onExitCodes.containerName: Invalid value: "xyz": must be one of the container or initContainer names in the pod template"#,
            pfp(json!([{"action": "Ignore", "onExitCodes": {"containerName": "main", "operator": "In", "values": [1, 2, 3]}},
                {"action": "FailJob", "onExitCodes": {"containerName": "xyz", "operator": "In", "values": [5, 6, 7]}}])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].action: Unsupported value: "UnknownAction": supported values: "Count", "FailIndex", "FailJob", "Ignore""#,
            pfp(json!([{"action": "UnknownAction", "onExitCodes": {"containerName": "main", "operator": "In", "values": [1, 2, 3]}}])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].onExitCodes.operator: Unsupported value: "UnknownOperator": supported values: "In", "NotIn""#,
            pfp(json!([{"action": "Ignore", "onExitCodes": {"operator": "UnknownOperator", "values": [1, 2, 3]}}])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Required value: valid values: ["False" "True" "Unknown"]"#,
            pfp(json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "UnknownStatus": supported values: "False", "True", "Unknown""#,
            pfp(json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "UnknownStatus"}]}])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "": name part must be non-empty"#,
            pfp(json!([{"action": "Ignore", "onPodConditions": [{"status": "True"}]}])), String::new()),
        (r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Invalid Condition Type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            pfp(json!([{"action": "Ignore", "onPodConditions": [{"type": "Invalid Condition Type", "status": "True"}]}])), String::new()),
        (r#"spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#,
            json!({"podReplacementPolicy": "TerminatingOrFailed", "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}), String::new()),
        (r#"spec.podReplacementPolicy: Unsupported value: "": supported values: "Failed", "TerminatingOrFailed""#,
            json!({"podReplacementPolicy": ""}), String::new()),
        (r#"spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#,
            json!({"podFailurePolicy": {"rules": []}, "template": {"spec": {"restartPolicy": "OnFailure"}}}), String::new()),
        ("spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode", json!({"backoffLimitPerIndex": 1}), String::new()),
        ("spec.maxFailedIndexes: Invalid value: 11: must be less than or equal to completions",
            indexed(json!({"completions": 10, "maxFailedIndexes": 11, "backoffLimitPerIndex": 1})), String::new()),
        ("spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
            indexed(json!({"completions": 100_001, "backoffLimitPerIndex": 1})), String::new()),
        ("spec.parallelism: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            indexed(json!({"completions": 100_001, "parallelism": 50_000, "backoffLimitPerIndex": 1, "maxFailedIndexes": 1})), String::new()),
        ("spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
            indexed(json!({"completions": 100_001, "backoffLimitPerIndex": 1, "maxFailedIndexes": 100_001})), String::new()),
        ("spec.maxFailedIndexes: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            indexed(json!({"completions": 100_001, "backoffLimitPerIndex": 1, "maxFailedIndexes": 50_000})), String::new()),
        ("spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
            indexed(json!({"completions": 1, "maxFailedIndexes": 1})), String::new()),
        (r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "invalid-format": error parsing succeededIndexes: cannot convert string to integer for index: "invalid""#,
            success(json!([{"succeededIndexes": "invalid-format"}])), String::new()),
        ("spec.successPolicy.rules[0].succeededIndexes: Too long: may not be more than 65536 bytes",
            success(json!([{"succeededIndexes": "1".repeat(65_537)}])), String::new()),
        ("spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified",
            success(json!([])), String::new()),
        ("spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
            success(json!([{}])), String::new()),
        ("spec.parallelism:must be greater than or equal to 0", json!({"parallelism": -1}),
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.backoffLimit:must be greater than or equal to 0", json!({"backoffLimit": -1}),
            "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.backoffLimitPerIndex:must be greater than or equal to 0",
            indexed(json!({"backoffLimitPerIndex": -1})),
            "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.maxFailedIndexes:must be greater than or equal to 0",
            indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": -1})),
            "spec.maxFailedIndexes: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.completions:must be greater than or equal to 0", json!({"completions": -1}),
            "spec.completions: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.activeDeadlineSeconds:must be greater than or equal to 0", json!({"activeDeadlineSeconds": -1}),
            "spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.ttlSecondsAfterFinished: must be greater than or equal to 0", json!({"ttlSecondsAfterFinished": -1}),
            "spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.completions: Required value: when completion mode is Indexed", indexed(json!({})), String::new()),
        ("spec.parallelism: must be less than or equal to 100000 when completion mode is Indexed",
            indexed(json!({"completions": 2, "parallelism": 100_001})),
            "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed".into()),
        // podtest.MakePodSpec's restartPolicy is Always.
        ("spec.template.spec.restartPolicy: Required value",
            json!({"template": {"spec": {"restartPolicy": "Always"}}}),
            r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#.into()),
        ("spec.template.spec.restartPolicy: Unsupported value",
            json!({"template": {"spec": {"restartPolicy": "Invalid"}}}),
            r#"spec.template.spec.restartPolicy: Unsupported value: "Invalid": supported values: "Always", "OnFailure", "Never""#.into()),
        ("spec.successPolicy.rules[0].succeededCount: must be greater than or equal to 0",
            success(json!([{"succeededCount": -1}])),
            "spec.successPolicy.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0".into()),
        ("spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
            success(json!([{"succeededCount": 6}])), String::new()),
        ("spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)",
            success(json!([{"succeededCount": 4, "succeededIndexes": "0-2"}])), String::new()),
        ("spec.successPolicy.rules: Too many: 21: must have at most 20 items",
            success(Value::Array(vec![json!({"succeededCount": 5}); 21])), String::new()),
    ];
    for (name, spec, jobgate_form) in cases {
        let expected = if jobgate_form.is_empty() {
            name.to_string()
        } else {
            jobgate_form
        };
        let got = errors(spec);
        assert_eq!(
            got.first(),
            Some(&expected),
            "upstream case {name:?}: all errors {got:?}"
        );
    }
}

/// Kubernetes 1.34 `field.Error.ErrorBody` (kubernetes#132314) prints only the exact type
/// `string` with `%q`; named string types (`PodFailurePolicyAction`, `...OnExitCodesOperator`,
/// `ConditionStatus`, `PodReplacementPolicy`, `RestartPolicy`, `*CompletionMode`) go through
/// `json.Marshal`: `<` is `\u003c`, a control byte `\u0001`, a zero-width space stays raw.
/// `onPodConditions[].type` (`string(pattern.Type)`), `containerName` and `succeededIndexes`
/// (`*string`) stay `%q`.
#[test]
fn upstream_validate_job_named_string_values_print_as_json_in_1_34() {
    let odd = "a<b>&\u{1}\u{200b}";
    let json_form = r#""a\u003cb\u003e\u0026\u0001"#.to_string() + "\u{200b}\"";
    let go_form = r#""a<b>&\x01\u200b""#;
    let spec = json!({
        "podFailurePolicy": {"rules": [
            {"action": odd, "onExitCodes": {"containerName": odd, "operator": odd, "values": [1]}},
            {"action": "Ignore", "onPodConditions": [{"type": "Ready", "status": odd}]},
            {"action": "Ignore", "onPodConditions": [{"type": odd, "status": "True"}]},
        ]},
        "podReplacementPolicy": odd,
        "completionMode": odd, "completions": 1,
        "successPolicy": {"rules": [{"succeededIndexes": odd}]},
        "template": {"spec": {"restartPolicy": odd}},
    });
    let got = errors(spec);
    let want_prefixes = [
        format!("spec.completionMode: Unsupported value: {json_form}: "),
        format!("{P}.action: Unsupported value: {json_form}: "),
        format!("{P}.onExitCodes.operator: Unsupported value: {json_form}: "),
        format!("{P}.onExitCodes.containerName: Invalid value: {go_form}: "),
        format!(
            "spec.podFailurePolicy.rules[1].onPodConditions[0].status: Unsupported value: {json_form}: "
        ),
        format!(
            "spec.podFailurePolicy.rules[2].onPodConditions[0].type: Invalid value: {go_form}: "
        ),
        // The whole struct goes through json.Marshal: Go escaping inside it too.
        format!(
            r#"spec.successPolicy: Invalid value: {{"Rules":[{{"SucceededIndexes":{json_form},"SucceededCount":null}}]}}: "#
        ),
        format!("spec.podReplacementPolicy: Unsupported value: {json_form}: "),
        format!("spec.template.spec.restartPolicy: Unsupported value: {json_form}: "),
    ];
    for want in &want_prefixes {
        assert!(
            got.iter().any(|e| e.starts_with(want.as_str())),
            "missing {want:?} in {got:#?}"
        );
    }
}

#[test]
fn upstream_validate_job_update_immutable_values_print_as_json_in_1_34() {
    let old = stored(json!({"completionMode": "Indexed", "completions": 2, "parallelism": 2}));
    let new = stored(
        json!({"completionMode": "<I>", "completions": 2, "parallelism": 2,
        "podFailurePolicy": {"rules": [{"action": "<A>", "onExitCodes":
            {"containerName": "<c>", "operator": "<o>", "values": [1]}}]}}),
    );
    assert_eq!(
        update_errors(&new, &old),
        vec![
            r#"spec.completionMode: Invalid value: "\u003cI\u003e": field is immutable"#,
            r#"spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"\u003cA\u003e","OnExitCodes":{"ContainerName":"\u003cc\u003e","Operator":"\u003co\u003e","Values":[1]},"OnPodConditions":null}]}: field is immutable"#,
        ]
    );
}

/// `TestValidateJob` success cases that touch jobgate's fields (upstream's pod template has a
/// container `ctr` and an init container `def`).
#[test]
fn test_validate_job_upstream_success_cases() {
    let job = |extra: Value| {
        let mut spec = json!({"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "ctr"}], "initContainers": [{"name": "def"}]}}});
        merge(&mut spec, extra);
        JobObject::from_value(
            Kind::Job,
            json!({"metadata": {"name": "myjob"}, "spec": spec}),
        )
        .unwrap()
    };
    let cases = [
        (
            "valid success policy",
            json!({"completionMode": "Indexed", "completions": 10,
            "successPolicy": {"rules": [{"succeededCount": 1, "succeededIndexes": "0,2,4"}, {"succeededIndexes": "1,3,5-9"}]}}),
        ),
        (
            "valid pod failure policy with negative exitCodes - need for Windows support",
            pfp(
                json!([{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [-1073741819, -1073741676, -1073741510]}}]),
            ),
        ),
        (
            "valid pod failure policy",
            pfp(json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onPodConditions": [{"type": "CustomConditionType", "status": "False"}]},
            {"action": "Count", "onExitCodes": {"containerName": "ctr", "operator": "In", "values": [1, 2, 3]}},
            {"action": "Ignore", "onExitCodes": {"containerName": "def", "operator": "In", "values": [4]}},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5, 6, 7]}}])),
        ),
        ("valid pod failure policy with FailIndex", {
            let mut s = pfp(
                json!([{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [10]}}]),
            );
            merge(
                &mut s,
                json!({"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1}),
            );
            s
        }),
        (
            "valid pod replacement",
            json!({"podReplacementPolicy": "TerminatingOrFailed"}),
        ),
        (
            "valid pod replacement with failed",
            json!({"podReplacementPolicy": "Failed"}),
        ),
        (
            "valid NonIndexed completion mode",
            json!({"completionMode": "NonIndexed"}),
        ),
        (
            "valid Indexed completion mode",
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 100_000}),
        ),
        (
            "valid parallelism and maxFailedIndexes for high completions when backoffLimitPerIndex is used",
            json!({"completionMode": "Indexed", "completions": 100_000, "parallelism": 100_000,
                "maxFailedIndexes": 100_000, "backoffLimitPerIndex": 1}),
        ),
        (
            "valid parallelism and maxFailedIndexes for unlimited completions when backoffLimitPerIndex is used",
            json!({"completionMode": "Indexed", "completions": 1_000_000_000, "parallelism": 10_000,
                "maxFailedIndexes": 10_000, "backoffLimitPerIndex": 1}),
        ),
    ];
    for (name, extra) in cases {
        let got: Vec<String> = validate_object(&job(extra), &on_1_34())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, Vec::<String>::new(), "upstream success case {name:?}");
    }
}

/// `TestValidateJobUpdate` cases on jobgate's fields: (name, old spec, new spec, errors).
/// Upstream's `AllowMutableSchedulingDirectives` is the strategy's "old Job suspended and never
/// started", here `suspend: true` on the old object.
#[test]
fn test_validate_job_update_upstream_cases() {
    let indexed = |extra: Value| {
        let mut s = json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3});
        merge(&mut s, extra);
        s
    };
    let ignore_rule = json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]});
    let count_rule = json!({"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]});
    let node_affinity = |value: &str| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", value]}]}]}}})
    };
    let immutable_template = vec!["spec.template: Invalid value: field is immutable"];
    let suspended = json!({"suspend": true});
    let template = |t: Value| json!({"template": t});
    let with = |base: &Value, extra: Value| {
        let mut s = base.clone();
        merge(&mut s, extra);
        s
    };
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "mutable fields",
            json!({"parallelism": 5, "activeDeadlineSeconds": 2, "ttlSecondsAfterFinished": 1}),
            json!({"parallelism": 2, "activeDeadlineSeconds": 3, "ttlSecondsAfterFinished": 2}),
            vec![],
        ),
        (
            "immutable completions for non-indexed jobs",
            json!({}),
            json!({"completions": 2}),
            vec!["spec.completions: Invalid value: 2: field is immutable"],
        ),
        (
            "add success policy",
            indexed(json!({})),
            indexed(json!({"successPolicy": {"rules": [{"succeededCount": 2}]}})),
            vec![
                r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":null,"SucceededCount":2}]}: field is immutable"#,
            ],
        ),
        (
            "update success policy",
            indexed(json!({"successPolicy": {"rules": [{"succeededIndexes": "1-2"}]}})),
            indexed(
                json!({"successPolicy": {"rules": [{"succeededIndexes": "1-2"}, {"succeededCount": 2}]}}),
            ),
            vec![
                r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"1-2","SucceededCount":null},{"SucceededIndexes":null,"SucceededCount":2}]}: field is immutable"#,
            ],
        ),
        (
            "remove success policy",
            indexed(json!({"successPolicy": {"rules": [{"succeededIndexes": "1-2"}]}})),
            indexed(json!({})),
            vec!["spec.successPolicy: Invalid value: null: field is immutable"],
        ),
        (
            "add pod failure policy",
            json!({}),
            pfp(json!([ignore_rule])),
            vec![
                r#"spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"Ignore","OnExitCodes":null,"OnPodConditions":[{"Type":"DisruptionTarget","Status":"True"}]}]}: field is immutable"#,
            ],
        ),
        (
            "update pod failure policy",
            pfp(json!([ignore_rule])),
            pfp(json!([ignore_rule, count_rule])),
            vec![
                r#"spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"Ignore","OnExitCodes":null,"OnPodConditions":[{"Type":"DisruptionTarget","Status":"True"}]},{"Action":"Count","OnExitCodes":null,"OnPodConditions":[{"Type":"DisruptionTarget","Status":"True"}]}]}: field is immutable"#,
            ],
        ),
        (
            "remove pod failure policy",
            pfp(json!([ignore_rule])),
            json!({}),
            vec!["spec.podFailurePolicy: Invalid value: null: field is immutable"],
        ),
        (
            "set backoff limit per index",
            indexed(json!({})),
            indexed(json!({"backoffLimitPerIndex": 1})),
            vec!["spec.backoffLimitPerIndex: Invalid value: 1: field is immutable"],
        ),
        (
            "unset backoff limit per index",
            indexed(json!({"backoffLimitPerIndex": 1})),
            indexed(json!({})),
            vec!["spec.backoffLimitPerIndex: Invalid value: null: field is immutable"],
        ),
        (
            "update backoff limit per index",
            indexed(json!({"backoffLimitPerIndex": 1})),
            indexed(json!({"backoffLimitPerIndex": 2})),
            vec!["spec.backoffLimitPerIndex: Invalid value: 2: field is immutable"],
        ),
        (
            "set max failed indexes",
            indexed(json!({"backoffLimitPerIndex": 1})),
            indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 1})),
            vec![],
        ),
        (
            "unset max failed indexes",
            indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 1})),
            indexed(json!({"backoffLimitPerIndex": 1})),
            vec![],
        ),
        (
            "update max failed indexes",
            indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 1})),
            indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 2})),
            vec![],
        ),
        (
            "immutable pod template",
            indexed(json!({})),
            indexed(template(
                json!({"spec": {"dnsPolicy": "ClusterFirstWithHostNet"}}),
            )),
            immutable_template.clone(),
        ),
        (
            "immutable completion mode",
            indexed(json!({})),
            json!({"completionMode": "NonIndexed", "completions": 3, "parallelism": 3}),
            vec![r#"spec.completionMode: Invalid value: "NonIndexed": field is immutable"#],
        ),
        (
            "immutable completions for non-indexed job",
            json!({"completions": 2}),
            json!({"completions": 4}),
            vec!["spec.completions: Invalid value: 4: field is immutable"],
        ),
        (
            "immutable node affinity",
            json!({}),
            template(json!({"spec": {"affinity": node_affinity("value2")}})),
            immutable_template.clone(),
        ),
        (
            "add node affinity",
            suspended.clone(),
            with(
                &suspended,
                template(json!({"spec": {"affinity": node_affinity("value2")}})),
            ),
            vec![],
        ),
        (
            "update node affinity",
            with(
                &suspended,
                template(json!({"spec": {"affinity": node_affinity("value")}})),
            ),
            with(
                &suspended,
                template(json!({"spec": {"affinity": node_affinity("value2")}})),
            ),
            vec![],
        ),
        (
            "remove node affinity",
            with(
                &suspended,
                template(json!({"spec": {"affinity": node_affinity("value")}})),
            ),
            with(&suspended, template(json!({"spec": {"affinity": {}}}))),
            vec![],
        ),
        (
            "remove affinity",
            with(
                &suspended,
                template(json!({"spec": {"affinity": node_affinity("value")}})),
            ),
            suspended.clone(),
            vec![],
        ),
        (
            "immutable tolerations",
            json!({}),
            template(
                json!({"spec": {"tolerations": [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]}}),
            ),
            immutable_template.clone(),
        ),
        (
            "mutable tolerations",
            suspended.clone(),
            with(
                &suspended,
                template(
                    json!({"spec": {"tolerations": [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]}}),
                ),
            ),
            vec![],
        ),
        (
            "immutable node selector",
            json!({}),
            template(json!({"spec": {"nodeSelector": {"foo": "bar"}}})),
            immutable_template.clone(),
        ),
        (
            "mutable node selector",
            suspended.clone(),
            with(
                &suspended,
                template(json!({"spec": {"nodeSelector": {"foo": "bar"}}})),
            ),
            vec![],
        ),
        (
            "immutable annotations",
            json!({}),
            template(json!({"metadata": {"annotations": {"foo": "baz"}}})),
            immutable_template.clone(),
        ),
        (
            "mutable annotations",
            suspended.clone(),
            with(
                &suspended,
                template(json!({"metadata": {"annotations": {"foo": "baz"}}})),
            ),
            vec![],
        ),
        (
            "immutable labels",
            json!({}),
            template(json!({"metadata": {"labels": {"bar": "baz"}}})),
            immutable_template.clone(),
        ),
        (
            "mutable labels",
            suspended.clone(),
            with(
                &suspended,
                template(json!({"metadata": {"labels": {"bar": "baz"}}})),
            ),
            vec![],
        ),
        (
            "immutable schedulingGates",
            json!({}),
            template(json!({"spec": {"schedulingGates": [{"name": "gate"}]}})),
            immutable_template.clone(),
        ),
        (
            "mutable schedulingGates",
            suspended.clone(),
            with(
                &suspended,
                template(json!({"spec": {"schedulingGates": [{"name": "gate"}]}})),
            ),
            vec![],
        ),
        (
            "update completions and parallelism to same value is valid",
            json!({"completionMode": "Indexed", "completions": 1, "parallelism": 1}),
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 2}),
            vec![],
        ),
        (
            "previous parallelism != previous completions, new parallelism == new completions",
            json!({"completionMode": "Indexed", "completions": 1, "parallelism": 2}),
            json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3}),
            vec![],
        ),
        (
            "indexed job updating completions and parallelism to different values is invalid",
            json!({"completionMode": "Indexed", "completions": 1, "parallelism": 1}),
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 3}),
            vec![
                "spec.completions: Invalid value: 2: can only be modified in tandem with spec.parallelism",
            ],
        ),
        (
            "indexed job with completions unchanged, parallelism reduced to less than completions",
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 2}),
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 1}),
            vec![],
        ),
        (
            "indexed job with completions unchanged, parallelism increased higher than completions",
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 2}),
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 3}),
            vec![],
        ),
    ];
    for (name, old, new, want) in cases {
        let got = update_errors(&stored(new), &stored(old));
        assert_eq!(got, want, "upstream case {name:?}");
    }
    // "indexed job with completions set updated to nil does not panic": the only error is
    // validateJobSpec's Required; the update check adds none.
    let old = stored(json!({"completionMode": "Indexed", "completions": 1, "parallelism": 1}));
    let mut new = stored(json!({"completionMode": "Indexed", "parallelism": 3}));
    new.spec.completions = None;
    let review = Review {
        operation: Operation::Update,
        object: &new,
        old_object: Some(&old),
    };
    let got: Vec<String> = validate(&review, &Config::default())
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        vec!["spec.completions: Required value: when completion mode is Indexed"]
    );
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("FailJob".to_string()),
            Just("FailIndex".to_string()),
            Just("In".to_string()),
            Just("True".to_string()),
            "[a-zA-Z0-9./_ -]{0,70}",
            any::<String>(),
        ]
    }

    fn indexes() -> impl Strategy<Value = String> {
        prop_oneof!["[0-9,-]{0,12}", "[-+0-9a-z,]{0,20}", any::<String>()]
    }

    prop_compose! {
        fn rule()(action in word(), op in word(), name in proptest::option::of(word()),
                  values in proptest::collection::vec(any::<i32>(), 0..6),
                  conditions in proptest::collection::vec((word(), word()), 0..3),
                  with_codes in any::<bool>()) -> Value {
            let mut r = json!({"action": action, "onPodConditions":
                conditions.iter().map(|(t, s)| json!({"type": t, "status": s})).collect::<Vec<_>>()});
            if with_codes {
                r["onExitCodes"] = json!({"containerName": name, "operator": op, "values": values});
            }
            r
        }
    }

    proptest! {
        /// Whatever the field values, validation answers with errors on `spec.` paths and never
        /// panics (a panic in a webhook is an outage).
        #[test]
        fn validation_of_arbitrary_values_never_panics(
            rules in proptest::collection::vec(rule(), 0..4),
            mode in proptest::option::of(word()),
            completions in proptest::option::of(any::<i32>()),
            parallelism in proptest::option::of(any::<i32>()),
            blpi in proptest::option::of(any::<i32>()),
            mfi in proptest::option::of(any::<i32>()),
            replacement in proptest::option::of(word()),
            restart in word(),
            success in proptest::option::of(proptest::collection::vec(
                (proptest::option::of(indexes()), proptest::option::of(any::<i32>())), 0..3)),
        ) {
            let mut spec = json!({
                "podFailurePolicy": {"rules": rules}, "completionMode": mode, "completions": completions,
                "parallelism": parallelism, "backoffLimitPerIndex": blpi, "maxFailedIndexes": mfi,
                "podReplacementPolicy": replacement, "template": {"spec": {"restartPolicy": restart}},
            });
            if let Some(rules) = success {
                spec["successPolicy"] = json!({"rules": rules.iter().map(|(i, c)|
                    json!({"succeededIndexes": i, "succeededCount": c})).collect::<Vec<_>>()});
            }
            for e in validate_object(&job_with(spec), &Cluster::default()) {
                prop_assert!(e.path.as_str().starts_with("spec."), "{}", e);
            }
        }
    }
}

/// KEP-4368 `spec.managedBy` (`validateJobSpec`: apimachinery's `IsDomainPrefixedPath`, then
/// `maxManagedByLength`), as k8s.io/kubernetes v1.33.13-v1.37.2 word it.
#[test]
fn managed_by_is_a_domain_prefixed_path_of_at_most_63_bytes() {
    for ok in [
        "kubernetes.io/job-controller",
        "kueue.x-k8s.io/multikueue",
        "example.com/a/b",
    ] {
        assert_eq!(
            errors(json!({"managedBy": ok})),
            Vec::<String>::new(),
            "{ok}"
        );
    }
    assert_eq!(
        errors(json!({"managedBy": ""})),
        vec!["spec.managedBy: Required value"]
    );
    assert_eq!(
        errors(json!({"managedBy": "controller"})),
        vec![
            r#"spec.managedBy: Invalid value: "controller": must be a domain-prefixed path (such as "acme.io/foo")"#
        ]
    );
    assert_eq!(
        errors(json!({"managedBy": "Example.com/x"})),
        vec![
            r#"spec.managedBy: Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
        ]
    );
    assert_eq!(
        errors(json!({"managedBy": "example.com/a b"})),
        vec![
            r#"spec.managedBy: Invalid value: "a b": Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"#
        ]
    );
    let long = format!("example.com/{}", "x".repeat(52));
    assert_eq!(
        errors(json!({ "managedBy": long })),
        vec!["spec.managedBy: Too long: may not be more than 63 bytes"]
    );
}

/// `ValidateJobSpecUpdate`: `managedBy` is immutable; the value is a `*string`, dereferenced
/// and `%q`-quoted by 1.33, `json.Marshal`ed from 1.34 (`null` when unset).
#[test]
fn update_managed_by_is_immutable() {
    let old = stored(json!({}));
    let new = stored(json!({"managedBy": "example.com/a<b"}));
    let on = |version, new: &JobObject, old: &JobObject| -> Vec<String> {
        validate_job_update(new, old, &Cluster::new(version))
            .into_iter()
            .map(|mut e| {
                e.value = e.value.in_style(Cluster::new(version).value_style());
                e.to_string()
            })
            .collect()
    };
    assert_eq!(
        on(KubernetesVersion::V1_33, &new, &old),
        vec![r#"spec.managedBy: Invalid value: "example.com/a<b": field is immutable"#]
    );
    assert_eq!(
        on(KubernetesVersion::V1_37, &new, &old),
        vec![r#"spec.managedBy: Invalid value: "example.com/a\u003cb": field is immutable"#]
    );
    assert_eq!(
        on(KubernetesVersion::V1_33, &old, &new),
        vec![r#"spec.managedBy: Invalid value: "null": field is immutable"#]
    );
    assert_eq!(
        on(KubernetesVersion::V1_34, &old, &new),
        vec!["spec.managedBy: Invalid value: null: field is immutable"]
    );
}

/// The Job strategy's `ValidateUpdate` up to 1.36 ran `ValidateJob` and then
/// `ValidateJobUpdate`, each with `validateJobSpec`: an UPDATE reports every spec error twice,
/// before the update's own errors. 1.37 runs `ValidateJobUpdate` alone.
#[test]
fn update_reports_spec_errors_twice_before_1_37() {
    let old = stored(json!({}));
    let new = stored(json!({"parallelism": -1, "completionMode": "Indexed"}));
    let review = Review {
        operation: Operation::Update,
        object: &new,
        old_object: Some(&old),
    };
    let on = |version| -> Vec<String> {
        apiserver_errors(&review, &Cluster::new(version))
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let negative = "spec.parallelism: Invalid value: -1: must be greater than or equal to 0";
    let immutable = r#"spec.completionMode: Invalid value: "Indexed": field is immutable"#;
    assert_eq!(
        on(KubernetesVersion::V1_36),
        vec![negative, negative, immutable]
    );
    assert_eq!(on(KubernetesVersion::V1_37), vec![negative, immutable]);
}

/// `TestValidateJob` "invalid pod hostname for indexed job": an Indexed Job's pods take
/// `<name>-<index>` as their hostname, a DNS-1123 label; `validateNameAllowsCompletions` checks
/// the largest index's on CREATE and on UPDATE, once (up to 1.36 through `ValidateJob`, from 1.37
/// through `ValidateJobUpdate`), as each release's judge says.
#[test]
fn indexed_pod_hostname_must_be_a_dns_label() {
    let named = |name: &str, completions: i32| {
        JobObject::from_value(
            Kind::Job,
            json!({"metadata": {"name": name}, "spec": {"completionMode": "Indexed",
                "completions": completions, "parallelism": completions,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}}}),
        )
        .unwrap()
    };
    let name = "j".repeat(61);
    let errors = |operation: Operation, object: &JobObject, release: KubernetesVersion| {
        let review = Review {
            operation,
            object,
            old_object: (operation == Operation::Update).then_some(object),
        };
        apiserver_errors(&review, &Cluster::new(release))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    let too_long = format!(
        "metadata.name: Invalid value: \"{name}\": will not able to create pod with invalid \
         DNS label: {name}-10"
    );
    // `<name>-9` is 63 characters, `<name>-10` is 64.
    for release in KubernetesVersion::all() {
        assert_eq!(
            errors(Operation::Create, &named(&name, 10), release),
            Vec::<String>::new()
        );
        assert_eq!(
            errors(Operation::Create, &named(&name, 11), release),
            vec![too_long.clone()],
            "{release}"
        );
        assert_eq!(
            errors(Operation::Update, &named(&name, 11), release),
            vec![too_long.clone()],
            "{release}"
        );
    }
    // A name still to be generated (`generateName`): the apiserver's random suffix decides.
    let generated = JobObject::from_value(
        Kind::Job,
        json!({"metadata": {"generateName": name}, "spec": {"completionMode": "Indexed",
            "completions": 11, "parallelism": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}}}),
    )
    .unwrap();
    assert_eq!(
        errors(Operation::Create, &generated, KubernetesVersion::V1_37),
        Vec::<String>::new()
    );
    // A CronJob's job template is named by the CronJob controller: not this check.
    let cron = JobObject::from_value(
        Kind::CronJob,
        json!({"metadata": {"name": name}, "spec": {"schedule": "* * * * *", "jobTemplate":
            {"spec": {"completionMode": "Indexed", "completions": 11, "parallelism": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}}}}}),
    )
    .unwrap();
    assert_eq!(
        errors(Operation::Create, &cron, KubernetesVersion::V1_37),
        Vec::<String>::new()
    );
}
