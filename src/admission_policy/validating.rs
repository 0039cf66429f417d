//! One ValidatingAdmissionPolicy per jobgate policy at `warn` or `deny` (`job::policy`), bound
//! with `validationActions: [Warn]` or `[Deny]`; none for a policy that is `off`.
//!
//! Each finding `/validate` can report is one validation: one per recovery annotation key (and,
//! for `recovery-annotation-on-job`, per place), so a Job gets as many warnings as the webhook
//! gives it. A validation fails exactly when the webhook reports its finding: on UPDATE only
//! when `oldObject` did not already have it with the same value (the webhook's ratcheting), and
//! never for an object being deleted (the webhook's `matchConditions`). Its `messageExpression`
//! is the webhook's text: the `jobgate: ...` warning for a `warn` policy, the field error for a
//! `deny` one.

use serde_json::{Value, json};

use super::cel;
use super::install::Install;
use super::object::{Object, named_metadata, resource_rules};
use crate::job::Config;
use crate::job::levels::Level;
use crate::job::levels::PolicyName;
use crate::job::policy::{
    ANNOTATION_ON_JOB_DETAIL, ANNOTATION_VALUE_DETAIL, COUNTS_TOWARD_BACKOFF_DETAIL,
    INDEXED_TERMINATING_OR_FAILED_DETAIL, NEEDS_FAILED_DETAIL,
};

/// One validation: the condition that holds when the webhook finds nothing, and the parts of
/// the finding's message: the printed field, the value (a CEL expression quoting it as the
/// webhook quotes it; `None` for a finding without one) and the detail.
struct Check {
    expression: String,
    field: Vec<Part>,
    value: Option<String>,
    detail: Vec<Part>,
}

/// A piece of a message: text, or a CEL expression giving text.
#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Cel(String),
}

fn text(s: impl Into<String>) -> Part {
    Part::Text(s.into())
}

/// The field of the Job spec (`spec.` or `spec.jobTemplate.spec.`) `rest`.
fn spec_field(rest: &str) -> Vec<Part> {
    vec![Part::Cel("variables.specField".to_string()), text(rest)]
}

/// `parts` as one CEL string expression, adjacent texts joined into one literal.
fn concat(parts: Vec<Part>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut pending = String::new();
    for part in parts {
        match part {
            Part::Text(t) => pending.push_str(&t),
            Part::Cel(e) => {
                if !pending.is_empty() {
                    out.push(cel::string(&std::mem::take(&mut pending)));
                }
                out.push(e);
            }
        }
    }
    if !pending.is_empty() {
        out.push(cel::string(&pending));
    }
    out.join(" + ")
}

/// Every variable a policy's checks may read, in an order where each uses only those before
/// it; a policy declares the ones it uses (`variable_names`), in this order.
fn all_variables(recognized: &str) -> Vec<(&'static str, String)> {
    let mut out = object_variables();
    out.extend(annotation_variables());
    out.extend(decision_variables(recognized));
    out
}

/// Which object, which spec, and the old one's on UPDATE.
fn object_variables() -> Vec<(&'static str, String)> {
    vec![
        ("cronJob", cel::CRON_JOB.to_string()),
        (
            "update",
            "request.operation == 'UPDATE' && oldObject != null".to_string(),
        ),
        (
            "specField",
            "variables.cronJob ? 'spec.jobTemplate.spec' : 'spec'".to_string(),
        ),
        ("spec", cel::spec("variables.cronJob")),
        (
            "oldSpec",
            "!variables.update ? {} : variables.cronJob \
             ? oldObject.spec.?jobTemplate.?spec.orValue({}) : oldObject.?spec.orValue({})"
                .to_string(),
        ),
    ]
}

/// The annotations of the pod template, of the object itself and of a CronJob's job template,
/// new and old.
fn annotation_variables() -> Vec<(&'static str, String)> {
    vec![
        (
            "annotations",
            "variables.spec.?template.?metadata.?annotations.orValue({})".to_string(),
        ),
        (
            "oldAnnotations",
            "variables.oldSpec.?template.?metadata.?annotations.orValue({})".to_string(),
        ),
        (
            "ownAnnotations",
            "object.metadata.?annotations.orValue({})".to_string(),
        ),
        (
            "oldOwnAnnotations",
            "!variables.update ? {} : oldObject.metadata.?annotations.orValue({})".to_string(),
        ),
        (
            "jobTemplateAnnotations",
            "!variables.cronJob ? {} : object.spec.?jobTemplate.?metadata.?annotations.orValue({})"
                .to_string(),
        ),
        (
            "oldJobTemplateAnnotations",
            "!variables.update || !variables.cronJob ? {} \
             : oldObject.spec.?jobTemplate.?metadata.?annotations.orValue({})"
                .to_string(),
        ),
    ]
}

/// What the policies decide on: opt-in, replacement policy, disruption rule, new and old.
fn decision_variables(recognized: &str) -> Vec<(&'static str, String)> {
    vec![
        // Opted in: "true" under any key jobgate or Kueue reads.
        (
            "optedIn",
            format!("{recognized}.exists(k, variables.annotations[?k].orValue('') == 'true')"),
        ),
        (
            "oldOptedIn",
            format!("{recognized}.exists(k, variables.oldAnnotations[?k].orValue('') == 'true')"),
        ),
        // What the Job runs with: its podReplacementPolicy, else KEP-3939's default (also for a
        // CronJob's template, whose Jobs are defaulted when created).
        ("replacement", cel::replacement_policy("variables.spec")),
        (
            "oldReplacement",
            cel::replacement_policy("variables.oldSpec"),
        ),
        // An Ignore rule on DisruptionTarget (status True, the default), which is how a
        // forcefully deleted pod fails.
        ("ignoresDisruption", ignores_disruption("variables.spec")),
        (
            "oldIgnoresDisruption",
            ignores_disruption("variables.oldSpec"),
        ),
    ]
}

fn ignores_disruption(spec: &str) -> String {
    format!(
        "{}.exists(r, r.?action.orValue('') == 'Ignore' \
         && r.?onPodConditions.orValue([]).exists(c, c.?type.orValue('') == 'DisruptionTarget' \
         && c.?status.orValue('') in ['', 'True']))",
        cel::list(&format!("{spec}.?podFailurePolicy"), "rules")
    )
}

/// The variables `policy`'s checks read (in `all_variables`' order, whatever the order here).
fn variable_names(policy: PolicyName) -> Vec<&'static str> {
    // Which object, which spec, and the old one's on UPDATE: every policy reads them.
    let mut names = vec!["cronJob", "update", "specField", "spec", "oldSpec"];
    let opted_in = ["annotations", "oldAnnotations", "optedIn", "oldOptedIn"];
    names.extend(match policy {
        PolicyName::RecoveryAnnotationValue => &["annotations", "oldAnnotations"][..],
        PolicyName::RecoveryAnnotationOnJob => &[
            "ownAnnotations",
            "oldOwnAnnotations",
            "jobTemplateAnnotations",
            "oldJobTemplateAnnotations",
        ][..],
        PolicyName::RecoveryNeedsFailed | PolicyName::RecoveryCountsTowardBackoff => &opted_in[..],
        PolicyName::IndexedTerminatingOrFailed => &[][..],
    });
    names.extend(match policy {
        PolicyName::RecoveryNeedsFailed | PolicyName::IndexedTerminatingOrFailed => {
            &["replacement", "oldReplacement"][..]
        }
        PolicyName::RecoveryCountsTowardBackoff => {
            &["ignoresDisruption", "oldIgnoresDisruption"][..]
        }
        _ => &[][..],
    });
    names
}

/// `policy`'s checks, in the order the webhook reports its findings.
fn checks(policy: PolicyName, config: &Config) -> Vec<Check> {
    let keys = config.recognized_recovery_keys();
    match policy {
        PolicyName::RecoveryAnnotationValue => {
            keys.iter().map(|&key| annotation_value_check(key)).collect()
        }
        PolicyName::RecoveryAnnotationOnJob => annotation_on_job_checks(&keys),
        PolicyName::RecoveryNeedsFailed => vec![Check {
            expression: "!variables.optedIn || variables.replacement == 'Failed' \
                         || (variables.update && variables.oldOptedIn && variables.oldReplacement == variables.replacement)"
                .to_string(),
            field: spec_field(".podReplacementPolicy"),
            value: Some("strings.quote(variables.replacement)".to_string()),
            detail: vec![text(NEEDS_FAILED_DETAIL)],
        }],
        PolicyName::RecoveryCountsTowardBackoff => vec![Check {
            expression: "!variables.optedIn || variables.ignoresDisruption \
                         || (variables.update && variables.oldOptedIn && !variables.oldIgnoresDisruption)"
                .to_string(),
            field: spec_field(".podFailurePolicy"),
            value: None,
            detail: vec![text(COUNTS_TOWARD_BACKOFF_DETAIL)],
        }],
        PolicyName::IndexedTerminatingOrFailed => vec![Check {
            expression: "variables.spec.?completionMode.orValue('') != 'Indexed' \
                         || variables.replacement != 'TerminatingOrFailed' \
                         || (variables.update && variables.oldSpec.?completionMode.orValue('') == 'Indexed' \
                         && variables.oldReplacement == 'TerminatingOrFailed')"
                .to_string(),
            field: spec_field(".podReplacementPolicy"),
            value: Some("strings.quote(variables.replacement)".to_string()),
            detail: vec![text(INDEXED_TERMINATING_OR_FAILED_DETAIL)],
        }],
    }
}

/// `recovery-annotation-value` for the pod template's annotation `key`.
fn annotation_value_check(key: &str) -> Check {
    let k = cel::string(key);
    Check {
        expression: format!(
            "!({k} in variables.annotations) || variables.annotations[{k}] in ['true', 'false'] \
             || (variables.update && variables.oldAnnotations[?{k}] == variables.annotations[?{k}])"
        ),
        field: spec_field(&format!(".template.metadata.annotations[{key}]")),
        value: Some(format!(
            "strings.quote(variables.annotations[?{k}].orValue(''))"
        )),
        detail: vec![text(ANNOTATION_VALUE_DETAIL)],
    }
}

/// `recovery-annotation-on-job`: the object's own annotations, then a CronJob's job
/// template's.
fn annotation_on_job_checks(keys: &[&str]) -> Vec<Check> {
    let mut out =
        annotation_on_job_checks_at(keys, "ownAnnotations", "oldOwnAnnotations", "metadata");
    out.extend(annotation_on_job_checks_at(
        keys,
        "jobTemplateAnnotations",
        "oldJobTemplateAnnotations",
        "spec.jobTemplate.metadata",
    ));
    out
}

/// `recovery-annotation-on-job` for each of `keys` in one place: the annotations (and the old
/// ones) in the variables `annotations` and `old`, printed at `at`.
fn annotation_on_job_checks_at(
    keys: &[&str],
    annotations: &str,
    old: &str,
    at: &str,
) -> Vec<Check> {
    keys.iter()
        .map(|&key| {
            let k = cel::string(key);
            Check {
                expression: format!(
                    "!({k} in variables.{annotations}) \
                     || (variables.update && variables.{old}[?{k}] == variables.{annotations}[?{k}])"
                ),
                field: vec![text(format!("{at}.annotations[{key}]"))],
                value: Some(format!(
                    "strings.quote(variables.{annotations}[?{k}].orValue(''))"
                )),
                detail: [text(format!("{ANNOTATION_ON_JOB_DETAIL} "))]
                    .into_iter()
                    .chain(spec_field(".template.metadata.annotations"))
                    .collect(),
            }
        })
        .collect()
}

impl Check {
    /// The webhook's text for this finding at `level`: `jobgate: <field>: <value>: <detail>` as
    /// a warning (`job::policy`'s `Finding::warning`), `<field>: Invalid value: <value>:
    /// <detail> (jobgate policy <name>)` as a field error (`FieldError`'s display).
    fn message(&self, policy: PolicyName, level: Level) -> String {
        let deny = level == Level::Deny;
        let mut parts = Vec::new();
        if !deny {
            parts.push(text("jobgate: "));
        }
        parts.extend(self.field.iter().cloned());
        parts.push(text(if deny { ": Invalid value: " } else { ": " }));
        if let Some(value) = &self.value {
            parts.push(Part::Cel(value.clone()));
            parts.push(text(": "));
        }
        parts.extend(self.detail.iter().cloned());
        if deny {
            parts.push(text(format!(" (jobgate policy {policy})")));
        }
        concat(parts)
    }
}

/// The policies and bindings for every policy not `off`, in jobgate's order.
pub(crate) fn objects(config: &Config, install: &Install) -> Vec<Object> {
    let recognized = cel::string_list(config.recognized_recovery_keys());
    let mut out = Vec::new();
    for policy in PolicyName::ALL {
        let action = match config.policies.level(policy) {
            Level::Off => continue,
            Level::Warn => "Warn",
            Level::Deny => "Deny",
        };
        let level = config.policies.level(policy);
        let name = install.object_name(policy.as_str());
        let used = variable_names(policy);
        let variables: Vec<Value> = all_variables(&recognized)
            .into_iter()
            .filter(|(v, _)| used.contains(v))
            .map(|(v, expression)| json!({"name": v, "expression": expression}))
            .collect();
        let validations: Vec<Value> = checks(policy, config)
            .into_iter()
            .map(|check| {
                json!({
                    "expression": check.expression,
                    "messageExpression": check.message(policy, level),
                    "message": format!("jobgate policy {policy}: {}", policy.description()),
                    "reason": "Invalid",
                })
            })
            .collect();
        out.push(json!({
            "apiVersion": super::api::VALIDATING_API_VERSION,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": named_metadata(&name),
            "spec": {
                "failurePolicy": install.failure_policy.as_str(),
                "matchConstraints": {
                    "matchPolicy": "Equivalent",
                    "namespaceSelector": install.namespace_selector(),
                    "resourceRules": resource_rules(&[("jobs", &["CREATE", "UPDATE"]), ("cronjobs", &["CREATE", "UPDATE"])]),
                },
                "matchConditions": [
                    {"name": "not-being-deleted", "expression": cel::NOT_BEING_DELETED},
                ],
                "variables": variables,
                "validations": validations,
            },
        }));
        out.push(json!({
            "apiVersion": super::api::VALIDATING_API_VERSION,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": named_metadata(&name),
            "spec": {"policyName": name, "validationActions": [action]},
        }));
    }
    out
}
