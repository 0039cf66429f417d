//! The MutatingAdmissionPolicies that do what `/mutate` and `/mutate/recovery` do
//! (`job::mutate`), and their bindings.
//!
//! Two policies, as the webhook configuration has two webhooks: `<name>-mutate` for namespaces
//! without the opt-in label (`jobgate.dev/failure-recovery` `NotIn [enabled]`: a Job opts in with
//! its annotation) and `<name>-mutate-recovery` for namespaces with it (`In [enabled]`: every Job
//! is opted in that does not opt out). The patch is `JSONPatch`, op for op the webhook's: the
//! KEP-3939 default (or `Failed` for an opted-in Job) `add`ed where `podReplacementPolicy` is
//! unset or `replace`d where it is `TerminatingOrFailed`, then each missing recovery annotation
//! `add`ed, the whole `metadata` or `annotations` map where there is none. Nothing the user
//! wrote is overwritten, and the policy applied to its own output patches nothing
//! (`reinvocationPolicy: IfNeeded`).
//!
//! A policy applies only to a request it patches (the `patches` match condition). Whenever a
//! MutatingAdmissionPolicy applies, kube-apiserver encodes the object and decodes it anew, patch
//! or none (k8s.io/apiserver `admission/plugin/policy/mutating/patch/json_patch.go`), and a Job
//! decoded anew keeps its own labels apart from its pod template's: the `job-name` and
//! `controller-uid` labels kube-apiserver then generates go on the template only (defaulting
//! gives a Job without labels its template's label map itself: k8s.io/kubernetes
//! `pkg/apis/batch/v1/defaults.go`). The webhook changes a Job only when it patches it; so does
//! the policy. A match condition sees no `variables` and no `namespaceObject` (kube-apiserver
//! binds none there), which is why the opt-in label is each policy's namespace selector and the
//! condition spells out what the variables say.
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

use super::cel;
use super::install::Install;
use super::object::{Object, named_metadata, resource_rules};
use crate::job::Config;
use crate::job::mutate::FAILURE_RECOVERY;
use crate::job::mutate::FAILURE_RECOVERY_ENABLED;
use crate::job::mutate::RecoveryScope;

/// The policies' name suffixes, as the webhook's paths: namespaces without the opt-in label,
/// and with it.
pub(crate) fn suffix(scope: RecoveryScope) -> &'static str {
    match scope {
        RecoveryScope::JobAnnotation => "mutate",
        RecoveryScope::Namespace => "mutate-recovery",
    }
}

/// What a Job without its own opt-in annotation is, where `scope` applies: opted in only in a
/// namespace labelled for recovery.
fn opt_in_default(scope: RecoveryScope) -> &'static str {
    match scope {
        RecoveryScope::JobAnnotation => "",
        RecoveryScope::Namespace => FAILURE_RECOVERY_ENABLED,
    }
}

/// The policy's variables, in order (each may use the ones before it).
fn variables(config: &Config, scope: RecoveryScope) -> Vec<(&'static str, String)> {
    let mut out = template_variables();
    out.extend(recovery_variables(config, scope));
    out.extend(replacement_variables());
    out
}

/// The Job spec (a CronJob's job template's), where to patch it, and its pod template.
fn template_variables() -> Vec<(&'static str, String)> {
    vec![
        ("cronJob", cel::CRON_JOB.to_string()),
        ("spec", cel::spec("variables.cronJob")),
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
            format!(
                "size({}) > 0",
                cel::list("variables.template.?spec", "containers")
            ),
        ),
    ]
}

/// Whether the Job recovers, and the recovery annotations its pod template lacks.
fn recovery_variables(config: &Config, scope: RecoveryScope) -> Vec<(&'static str, String)> {
    let recognized = cel::string_list(config.recognized_recovery_keys());
    let injected = cel::string_list(config.injected_recovery_keys());
    vec![
        // The opt-in: a Job's own annotation, a CronJob's job template's; without one, the
        // namespace's label, which is the policy's.
        (
            "optedIn",
            format!(
                "({}).orValue({}) == {}",
                cel::opt_in("variables.cronJob", FAILURE_RECOVERY),
                cel::string(opt_in_default(scope)),
                cel::string(FAILURE_RECOVERY_ENABLED)
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
    ]
}

/// The `podReplacementPolicy` the Job runs with, and the one it should have.
fn replacement_variables() -> Vec<(&'static str, String)> {
    vec![
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

/// The match condition that the patch is not empty: the variables' reading, with the spec and
/// its pod template's annotations bound by one-element comprehensions (a match condition has
/// no `variables`). The patch is not empty when the template has containers and
/// `podReplacementPolicy` is unset (KEP-3939's default is added), or the Job recovers and either
/// its explicit `TerminatingOrFailed` becomes `Failed` (no podFailurePolicy) or an injected key
/// is missing.
fn patches(config: &Config, scope: RecoveryScope) -> String {
    let recognized = cel::string_list(config.recognized_recovery_keys());
    let injected = cel::string_list(config.injected_recovery_keys());
    format!(
        "[{spec}].all(spec, [spec.?template.?metadata.?annotations.orValue({{}})].all(annotations,
  size({containers}) > 0
  && (!spec.?podReplacementPolicy.hasValue()
    || (({opt_in}).orValue({default}) == {enabled}
      && !{recognized}.exists(k, annotations[?k].orValue('') == 'false')
      && ((spec.podReplacementPolicy == 'TerminatingOrFailed' && !spec.?podFailurePolicy.hasValue())
        || {injected}.exists(k, !(k in annotations)))))))",
        spec = cel::spec(cel::CRON_JOB),
        containers = cel::list("spec.?template.?spec", "containers"),
        opt_in = cel::opt_in(cel::CRON_JOB, FAILURE_RECOVERY),
        default = cel::string(opt_in_default(scope)),
        enabled = cel::string(FAILURE_RECOVERY_ENABLED),
    )
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

/// The two policies and their bindings: namespaces without the opt-in label, then with it.
pub(crate) fn objects(config: &Config, install: &Install, api_version: &str) -> Vec<Object> {
    [RecoveryScope::JobAnnotation, RecoveryScope::Namespace]
        .into_iter()
        .flat_map(|scope| scoped(config, install, api_version, scope))
        .collect()
}

/// The install's namespace selector, with or without the opt-in label as `scope` says.
fn namespace_selector(install: &Install, scope: RecoveryScope) -> Value {
    let mut namespaces = install.namespace_selector();
    namespaces["matchExpressions"]
        .as_array_mut()
        .expect("matchExpressions")
        .push(json!({
            "key": FAILURE_RECOVERY,
            "operator": if scope == RecoveryScope::Namespace { "In" } else { "NotIn" },
            "values": [FAILURE_RECOVERY_ENABLED],
        }));
    namespaces
}

/// As the webhooks' matchConditions and `job::mutate`'s first checks: a CronJob UPDATE only
/// when its job template is written, never an object being deleted; and only a request the
/// patch changes.
fn match_conditions(config: &Config, scope: RecoveryScope) -> Value {
    json!([
        {"name": "not-being-deleted", "expression": cel::NOT_BEING_DELETED},
        {
            "name": "template-written",
            "expression": "request.operation == 'CREATE' || object.spec.?jobTemplate != oldObject.spec.?jobTemplate",
        },
        {"name": "patches", "expression": patches(config, scope)},
    ])
}

/// The policy for `scope` and its binding.
fn scoped(
    config: &Config,
    install: &Install,
    api_version: &str,
    scope: RecoveryScope,
) -> [Object; 2] {
    let name = install.object_name(suffix(scope));
    let variables: Vec<Value> = variables(config, scope)
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
                "namespaceSelector": namespace_selector(install, scope),
                // A CronJob's job template is defaulted when it is written: the apiserver
                // defaults no Job spec inside a CronJob.
                "resourceRules": resource_rules(&[
                    ("jobs", &["CREATE"]),
                    ("cronjobs", &["CREATE", "UPDATE"]),
                ]),
            },
            "matchConditions": match_conditions(config, scope),
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
