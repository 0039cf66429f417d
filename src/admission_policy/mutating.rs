//! The MutatingAdmissionPolicy that does what `/mutate` and `/mutate/recovery` do
//! (`job::mutate`), and its binding.
//!
//! One policy serves both endpoints: the namespace opt-in the webhook configuration expresses
//! with two `namespaceSelector`s (`jobgate.dev/failure-recovery` `NotIn`/`In` `[enabled]`) is
//! read from `namespaceObject` instead. The patch is `JSONPatch`, op for op the webhook's: the
//! KEP-3939 default (or `Failed` for an opted-in Job) `add`ed where `podReplacementPolicy` is
//! unset or `replace`d where it is `TerminatingOrFailed`, then each missing recovery annotation
//! `add`ed, the whole `metadata` or `annotations` map where there is none. Nothing the user
//! wrote is overwritten, and the policy applied to its own output patches nothing
//! (`reinvocationPolicy: IfNeeded`).
//!
//! Patch values are CEL map literals, never `Object{...}` initializers: an initializer inside a
//! list panicked kube-apiserver's patch evaluation before kubernetes#142181 was fixed
//! (k8s.io/apiserver `pkg/cel/mutation/dynamic/objects.go`, `ConvertToNative` to
//! `*structpb.Value`: 1.36.3 returns a `*structpb.Struct`, 1.37.2 a `*structpb.Value`).
//!
//! One difference the apiserver makes unobservable: for an `annotations: {}` the webhook adds
//! each key into the map, the policy adds the map. kube-apiserver never shows either an empty
//! map (`omitempty`: the object the webhook receives and the one the patch applies to have no
//! `annotations` at all), and the objects patched are the same.

use serde_json::{Value, json};

use super::{Install, Object, cel, named_metadata, resource_rules};
use crate::job::Config;
use crate::job::mutate::FAILURE_RECOVERY;
use crate::job::mutate::FAILURE_RECOVERY_ENABLED;

/// The MutatingAdmissionPolicy's name suffix.
pub(crate) const SUFFIX: &str = "mutate";

/// The policy's variables, in order (each may use the ones before it).
fn variables(config: &Config) -> Vec<(&'static str, String)> {
    let recognized = cel::string_list(config.recognized_recovery_keys());
    let injected = cel::string_list(config.injected_recovery_keys());
    let opt_in = cel::string(FAILURE_RECOVERY);
    let enabled = cel::string(FAILURE_RECOVERY_ENABLED);
    vec![
        ("cronJob", cel::CRON_JOB.to_string()),
        ("spec", cel::SPEC.to_string()),
        (
            "specPointer",
            "variables.cronJob ? '/spec/jobTemplate/spec' : '/spec'".to_string(),
        ),
        (
            "template",
            "variables.spec.?template.orValue({})".to_string(),
        ),
        (
            "templateAnnotations",
            "variables.template.?metadata.?annotations.orValue({})".to_string(),
        ),
        // An object without containers is invalid and its template may not exist to patch.
        (
            "hasContainers",
            "size(variables.template.?spec.?containers.orValue([])) > 0".to_string(),
        ),
        // The opt-in: a Job's own annotation, a CronJob's job template's (the CronJob's own is
        // not copied to its Jobs); without one, the namespace's label.
        (
            "optIn",
            format!(
                "variables.cronJob ? object.spec.?jobTemplate.?metadata.?annotations[?{opt_in}] \
                 : object.metadata.?annotations[?{opt_in}]"
            ),
        ),
        (
            "optedIn",
            format!(
                "variables.optIn.hasValue() ? variables.optIn.value() == {enabled} \
                 : namespaceObject.metadata.?labels[?{opt_in}].orValue('') == {enabled}"
            ),
        ),
        // An explicit "false" under any key jobgate or Kueue reads is the pods' own opt-out.
        (
            "podsOptedOut",
            format!(
                "{recognized}.exists(k, variables.templateAnnotations[?k].orValue('') == 'false')"
            ),
        ),
        (
            "recover",
            "variables.optedIn && !variables.podsOptedOut".to_string(),
        ),
        (
            "missingKeys",
            format!(
                "variables.recover ? {injected}.filter(k, !(k in variables.templateAnnotations)) : []"
            ),
        ),
        ("policy", cel::replacement_policy("variables.spec")),
        // With a podFailurePolicy only Failed is valid: an explicit TerminatingOrFailed is left
        // for the apiserver to reject, as the webhook leaves it.
        (
            "wanted",
            "variables.recover && variables.policy == 'TerminatingOrFailed' \
             && !variables.spec.?podFailurePolicy.hasValue() ? 'Failed' : variables.policy"
                .to_string(),
        ),
    ]
}

/// The JSONPatch expression.
fn patch(config: &Config) -> String {
    let all_keys = cel::true_map(config.injected_recovery_keys());
    format!(
        "!variables.hasContainers ? [] :
(variables.spec.?podReplacementPolicy.hasValue()
  ? (variables.spec.podReplacementPolicy == variables.wanted ? []
    : [JSONPatch{{op: 'replace', path: variables.specPointer + '/podReplacementPolicy', value: variables.wanted}}])
  : [JSONPatch{{op: 'add', path: variables.specPointer + '/podReplacementPolicy', value: variables.wanted}}])
+ (size(variables.missingKeys) == 0 ? []
  : !variables.template.?metadata.hasValue()
    ? [JSONPatch{{op: 'add', path: variables.specPointer + '/template/metadata', value: {{'annotations': {all_keys}}}}}]
  : size(variables.templateAnnotations) == 0
    ? [JSONPatch{{op: 'add', path: variables.specPointer + '/template/metadata/annotations', value: {all_keys}}}]
  : variables.missingKeys.map(k, JSONPatch{{op: 'add', path: variables.specPointer + '/template/metadata/annotations/' + jsonpatch.escapeKey(k), value: 'true'}}))"
    )
}

/// The policy and its binding.
pub(crate) fn objects(config: &Config, install: &Install, api_version: &str) -> [Object; 2] {
    let name = install.object_name(SUFFIX);
    let variables: Vec<Value> = variables(config)
        .into_iter()
        .map(|(name, expression)| json!({"name": name, "expression": expression}))
        .collect();
    let policy = json!({
        "apiVersion": api_version,
        "kind": "MutatingAdmissionPolicy",
        "metadata": named_metadata(&name),
        "spec": {
            // Best effort, as the mutating webhooks: a policy that cannot run admits the Job as
            // upstream Kubernetes would.
            "failurePolicy": "Ignore",
            "reinvocationPolicy": "IfNeeded",
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "namespaceSelector": install.namespace_selector(),
                // A CronJob's job template is defaulted when it is written: the apiserver
                // defaults no Job spec inside a CronJob.
                "resourceRules": resource_rules(&[
                    ("jobs", &["CREATE"]),
                    ("cronjobs", &["CREATE", "UPDATE"]),
                ]),
            },
            // As the webhooks' matchConditions and `job::mutate`'s first checks: a CronJob
            // UPDATE only when its job template is written, never an object being deleted.
            "matchConditions": [
                {"name": "not-being-deleted", "expression": cel::NOT_BEING_DELETED},
                {
                    "name": "template-written",
                    "expression": "request.operation == 'CREATE' || object.spec.?jobTemplate != oldObject.spec.?jobTemplate",
                },
            ],
            "variables": variables,
            "mutations": [{
                "patchType": "JSONPatch",
                "jsonPatch": {"expression": patch(config)},
            }],
        },
    });
    let binding = json!({
        "apiVersion": api_version,
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": named_metadata(&name),
        "spec": {"policyName": name},
    });
    [policy, binding]
}
