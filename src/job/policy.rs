//! jobgate's own policies: Jobs that kube-apiserver accepts but that will silently not get what
//! their author meant with failure recovery. Each is `off`, `warn` (a `jobgate:` warning in the
//! AdmissionReview response) or `deny` (a field error).
//!
//! On UPDATE a policy reports only what the old object did not already have (ratcheting), so a
//! Job created before jobgate was installed can still be updated (finalizers, suspend, labels).

use super::config::Config;
use super::defaults::{FAILED, TERMINATING_OR_FAILED, pod_replacement_policy_default};
use super::field::{BadValue, FieldError, FieldPath, ValueStyle};
use super::finding::{Finding, Source};
use super::levels::{Level, PolicyName};
use super::review::Review;
use super::wire::envelope::Operation;
use super::wire::interned::InternedStr;
use super::wire::model::{JobObject, Kind, ObjectMeta};

/// What each policy says about what it found (the `detail` of its warning or field error); the
/// rendered ValidatingAdmissionPolicies (`crate::admission_policy`) say the same.
pub(crate) const ANNOTATION_VALUE_DETAIL: &str =
    r#"must be "true" or "false"; Kueue reads any other value as not opted in"#;
/// Followed by the pod template's annotations path.
pub(crate) const ANNOTATION_ON_JOB_DETAIL: &str = "has no effect here; it belongs on";
pub(crate) const NEEDS_FAILED_DETAIL: &str =
    r#"recovery needs "Failed", else replacements start early"#;
pub(crate) const COUNTS_TOWARD_BACKOFF_DETAIL: &str =
    "no Ignore rule on DisruptionTarget; each recovered pod counts toward backoffLimit";
pub(crate) const INDEXED_TERMINATING_OR_FAILED_DETAIL: &str =
    r#"may run two pods for one index; use "Failed""#;

/// One thing a policy found, before its level decides whether it warns or denies.
#[derive(Debug, Clone, PartialEq)]
struct Violation {
    policy: PolicyName,
    /// The field, printed.
    path: String,
    value: BadValue,
    detail: String,
}

impl Violation {
    fn warning(&self) -> String {
        let value = self
            .value
            .render(ValueStyle::Json)
            .map_or_else(String::new, |v| format!("{v}: "));
        format!("jobgate: {}: {value}{}", self.path, self.detail)
    }

    fn error(self) -> FieldError {
        // A root holding the printed path prints as the path did.
        FieldError::invalid(
            FieldPath::new(&self.path),
            self.value,
            format!("{} (jobgate policy {})", self.detail, self.policy),
        )
    }
}

/// What the policies say about `review`, each finding attributed to its policy, at its level.
pub(crate) fn evaluate(review: &Review<'_>, config: &Config) -> Vec<Finding> {
    let mut found = findings(review.object, config);
    if let (Operation::Update, Some(old)) = (review.operation, review.old_object) {
        let before = findings(old, config);
        found.retain(|f| !before.contains(f));
    }
    let mut out = Vec::new();
    for f in found {
        let source = Source::Policy(f.policy);
        match config.policies.level(f.policy) {
            Level::Off => {}
            Level::Warn => {
                let warning = f.warning();
                out.push(Finding::warning(source, Some(f.path), warning));
            }
            Level::Deny => out.push(Finding::error(source, f.error())),
        }
    }
    out
}

fn findings(object: &JobObject, config: &Config) -> Vec<Violation> {
    let policies = &config.policies;
    let on = |p: PolicyName| policies.level(p) != Level::Off;
    let spec_path = object.spec_path();
    let spec = &object.spec;
    let template = &spec.template;
    let recovery_keys = config.recognized_recovery_keys();
    let mut out = annotation_violations(object, &recovery_keys, on);

    let opted_in = recovery_keys
        .iter()
        .any(|k| template.annotation(k).as_deref() == Some("true"));
    // What the Job runs with: the value, else KEP-3939's default (also for a CronJob's
    // template, whose Jobs are defaulted when created).
    let replacement = spec
        .pod_replacement_policy
        .value()
        .map(InternedStr::as_str)
        .unwrap_or_else(|| pod_replacement_policy_default(spec));

    if opted_in && on(PolicyName::RecoveryNeedsFailed) && replacement != FAILED {
        out.push(Violation {
            policy: PolicyName::RecoveryNeedsFailed,
            path: spec_path.child("podReplacementPolicy").to_string(),
            value: BadValue::str(replacement),
            detail: NEEDS_FAILED_DETAIL.into(),
        });
    }

    if opted_in && on(PolicyName::RecoveryCountsTowardBackoff) && !ignores_disruption(object) {
        out.push(Violation {
            policy: PolicyName::RecoveryCountsTowardBackoff,
            path: spec_path.child("podFailurePolicy").to_string(),
            value: BadValue::Omit,
            detail: COUNTS_TOWARD_BACKOFF_DETAIL.into(),
        });
    }

    if on(PolicyName::IndexedTerminatingOrFailed)
        && spec.completion_mode.as_deref() == Some("Indexed")
        && replacement == TERMINATING_OR_FAILED
    {
        out.push(Violation {
            policy: PolicyName::IndexedTerminatingOrFailed,
            path: spec_path.child("podReplacementPolicy").to_string(),
            value: BadValue::str(replacement),
            detail: INDEXED_TERMINATING_OR_FAILED_DETAIL.into(),
        });
    }
    out
}

/// The recovery annotation's value on the pod template, and the annotation where it has no
/// effect (the Job's or CronJob's own metadata).
fn annotation_violations(
    object: &JobObject,
    recovery_keys: &[&str],
    on: impl Fn(PolicyName) -> bool,
) -> Vec<Violation> {
    let template = &object.spec.template;
    let spec_path = object.spec_path();
    let template_path = spec_path.child("template");
    let template_metadata_path = template_path.child("metadata");
    let template_annotations = template_metadata_path.child("annotations");
    let mut out = Vec::new();
    if on(PolicyName::RecoveryAnnotationValue) {
        for &key in recovery_keys {
            if let Some(v) = template.annotation(key)
                && v != "true"
                && v != "false"
            {
                out.push(Violation {
                    policy: PolicyName::RecoveryAnnotationValue,
                    path: template_annotations.key(key).to_string(),
                    value: BadValue::str(v),
                    detail: ANNOTATION_VALUE_DETAIL.into(),
                });
            }
        }
    }

    if on(PolicyName::RecoveryAnnotationOnJob) {
        let mut misplaced = |meta: &ObjectMeta, at: FieldPath| {
            for &key in recovery_keys {
                if let Some(v) = meta.annotation(key) {
                    out.push(Violation {
                        policy: PolicyName::RecoveryAnnotationOnJob,
                        path: at.child("annotations").key(key).to_string(),
                        value: BadValue::str(v),
                        detail: format!("{ANNOTATION_ON_JOB_DETAIL} {template_annotations}"),
                    });
                }
            }
        };
        misplaced(&object.metadata, object.metadata_path());
        if let (Kind::CronJob, Some(meta)) = (object.kind, &object.job_template_metadata) {
            misplaced(
                meta,
                FieldPath::new("spec")
                    .child("jobTemplate")
                    .child("metadata"),
            );
        }
    }
    out
}

/// A `podFailurePolicy` rule `action: Ignore` matching the `DisruptionTarget` condition
/// (status `True`, the default), which is how a forcefully deleted pod fails.
fn ignores_disruption(object: &JobObject) -> bool {
    object.spec.pod_failure_policy.value().is_some_and(|p| {
        p.rules.iter().any(|r| {
            r.action.as_deref() == Some("Ignore")
                && r.on_pod_conditions.iter().any(|c| {
                    c.type_.as_deref() == Some("DisruptionTarget")
                        && matches!(c.status.as_deref(), None | Some("" | "True"))
                })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::finding::Judgment;
    use crate::job::levels::Policies;

    /// What the policies found in one review, as errors and warnings.
    #[derive(Debug, Clone, Default, PartialEq)]
    struct Findings {
        errors: Vec<FieldError>,
        warnings: Vec<String>,
    }

    const KEY: &str = crate::kueue::SAFE_TO_FORCEFULLY_TERMINATE;

    fn job(spec: &str, job_annotations: &str) -> JobObject {
        JobObject::from_json(
            Kind::Job,
            &format!(
                r#"{{"metadata":{{"name":"train","annotations":{{{job_annotations}}}}},"spec":{spec}}}"#
            ),
        )
        .unwrap()
    }

    fn template(annotation: &str, extra: &str) -> String {
        format!(
            r#"{{{extra}"template":{{"metadata":{{"annotations":{{"{KEY}":"{annotation}"}}}},"spec":{{"restartPolicy":"Never","containers":[{{"name":"main"}}]}}}}}}"#
        )
    }

    fn run(object: &JobObject, config: &Config) -> Findings {
        split(evaluate(
            &Review {
                operation: Operation::Create,
                object,
                old_object: None,
            },
            config,
        ))
    }

    fn split(found: Vec<Finding>) -> Findings {
        let verdict = Judgment {
            findings: found,
            patch: Default::default(),
        }
        .into_verdict();
        Findings {
            errors: verdict.errors,
            warnings: verdict.warnings,
        }
    }

    #[test]
    fn default_levels_are_the_documented_ones() {
        let p = Policies::default();
        assert_eq!(p.level(PolicyName::RecoveryAnnotationValue), Level::Deny);
        assert_eq!(p.level(PolicyName::RecoveryAnnotationOnJob), Level::Warn);
        assert_eq!(p.level(PolicyName::RecoveryNeedsFailed), Level::Warn);
        assert_eq!(
            p.level(PolicyName::RecoveryCountsTowardBackoff),
            Level::Warn
        );
        assert_eq!(p.level(PolicyName::IndexedTerminatingOrFailed), Level::Off);
    }

    #[test]
    fn recovery_annotation_value_true_capitalized_is_denied() {
        let j = job(&template("True", ""), "");
        let f = run(&j, &Config::default());
        assert_eq!(
            f.errors[0].to_string(),
            format!(
                r#"spec.template.metadata.annotations[{KEY}]: Invalid value: "True": must be "true" or "false"; Kueue reads any other value as not opted in (jobgate policy recovery-annotation-value)"#
            )
        );
        // "True" is not opted in, so the opted-in policies stay quiet.
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    }

    #[test]
    fn both_kueue_keys_are_checked_whatever_key_the_webhook_is_configured_to_set() {
        // Policy 1 names `...-terminate` "(and `...-delete`)"; the webhook's key list only says
        // what /mutate sets, so a custom list must not hide a "yes" under a Kueue key.
        let delete = crate::kueue::SAFE_TO_FORCEFULLY_DELETE;
        let spec = format!(
            r#"{{"template":{{"metadata":{{"annotations":{{"{delete}":"yes"}}}},"spec":{{"restartPolicy":"Never","containers":[{{"name":"main"}}]}}}}}}"#
        );
        for keys in [vec![], vec!["example.com/recover".to_string()]] {
            let config = Config {
                recovery_annotation_keys: keys.clone(),
                ..Config::default()
            };
            let f = run(&job(&spec, ""), &config);
            assert_eq!(f.errors.len(), 1, "{keys:?}");
            assert_eq!(
                f.errors[0].path,
                format!("spec.template.metadata.annotations[{delete}]")
            );
        }
    }

    #[test]
    fn recovery_annotation_value_false_is_fine() {
        let j = job(&template("false", ""), "");
        assert_eq!(run(&j, &Config::default()), Findings::default());
    }

    #[test]
    fn opted_in_without_failed_and_ignore_rule_warns_twice() {
        let j = job(&template("true", ""), "");
        let f = run(&j, &Config::default());
        assert!(f.errors.is_empty());
        assert_eq!(
            f.warnings,
            vec![
                r#"jobgate: spec.podReplacementPolicy: "TerminatingOrFailed": recovery needs "Failed", else replacements start early"#,
                "jobgate: spec.podFailurePolicy: no Ignore rule on DisruptionTarget; each recovered pod counts toward backoffLimit",
            ]
        );
        assert!(
            f.warnings.iter().all(|w| w.len() <= 120),
            "{:?}",
            f.warnings
        );
    }

    #[test]
    fn opted_in_with_ignore_on_disruption_target_is_quiet() {
        let extra = r#""podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},"#;
        let j = job(&template("true", extra), "");
        assert_eq!(run(&j, &Config::default()), Findings::default());
    }

    #[test]
    fn annotation_on_the_job_itself_warns() {
        let j = job(
            r#"{"template":{"spec":{"restartPolicy":"Never"}}}"#,
            &format!(r#""{KEY}":"true""#),
        );
        let f = run(&j, &Config::default());
        assert_eq!(
            f.warnings,
            vec![format!(
                r#"jobgate: metadata.annotations[{KEY}]: "true": has no effect here; it belongs on spec.template.metadata.annotations"#
            )]
        );
    }

    #[test]
    fn indexed_terminating_or_failed_is_off_by_default_and_warns_when_on() {
        let spec = r#"{"completionMode":"Indexed","completions":4,"podReplacementPolicy":"TerminatingOrFailed","template":{"spec":{"restartPolicy":"Never"}}}"#;
        let j = job(spec, "");
        assert_eq!(run(&j, &Config::default()), Findings::default());
        let mut config = Config::default();
        config
            .policies
            .set(PolicyName::IndexedTerminatingOrFailed, Level::Warn);
        assert_eq!(
            run(&j, &config).warnings,
            vec![
                r#"jobgate: spec.podReplacementPolicy: "TerminatingOrFailed": may run two pods for one index; use "Failed""#
            ]
        );
    }

    #[test]
    fn off_silences_and_deny_turns_warnings_into_errors() {
        let j = job(&template("true", ""), "");
        let off = Config {
            policies: Policies::all(Level::Off),
            ..Config::default()
        };
        assert_eq!(run(&j, &off), Findings::default());
        let deny = Config {
            policies: Policies::all(Level::Deny),
            ..Config::default()
        };
        let f = run(&j, &deny);
        assert!(f.warnings.is_empty());
        assert_eq!(f.errors.len(), 2);
        assert_eq!(f.errors[1].path, "spec.podFailurePolicy");
    }

    #[test]
    fn cron_job_paths_are_under_the_job_template() {
        let cj = JobObject::from_json(
            Kind::CronJob,
            &format!(
                r#"{{"metadata":{{"name":"nightly"}},"spec":{{"jobTemplate":{{"metadata":{{"annotations":{{"{KEY}":"yes"}}}},"spec":{}}}}}}}"#,
                template("yes", "")
            ),
        )
        .unwrap();
        let f = run(&cj, &Config::default());
        assert_eq!(
            f.errors[0].path,
            format!("spec.jobTemplate.spec.template.metadata.annotations[{KEY}]")
        );
        assert_eq!(
            f.warnings,
            vec![format!(
                r#"jobgate: spec.jobTemplate.metadata.annotations[{KEY}]: "yes": has no effect here; it belongs on spec.jobTemplate.spec.template.metadata.annotations"#
            )]
        );
    }

    #[test]
    fn update_reports_only_what_the_old_object_did_not_have() {
        let old = job(&template("True", ""), "");
        let new = job(&template("True", ""), "");
        let review = Review {
            operation: Operation::Update,
            object: &new,
            old_object: Some(&old),
        };
        assert_eq!(
            split(evaluate(&review, &Config::default())),
            Findings::default()
        );
        let fine = job(&template("false", ""), "");
        let review = Review {
            operation: Operation::Update,
            object: &old,
            old_object: Some(&fine),
        };
        assert_eq!(split(evaluate(&review, &Config::default())).errors.len(), 1);
    }
}
