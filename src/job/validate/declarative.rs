//! Declarative validation (KEP-5073) where it changes what kube-apiserver answers for a Job or
//! CronJob. From 1.38 the strategies run the `+k8s:` rules of the batch/v1 types
//! (k8s.io/kubernetes `pkg/apis/batch/v1/zz_generated.validations.go`) after the handwritten
//! validation (`rest.ValidateDeclarativelyWithMigrationChecks`, k8s.io/apiserver
//! `pkg/registry/rest/validate.go`): an enforced declarative error (a beta rule with the gate
//! `DeclarativeValidationBeta` on, or a standard one) removes the handwritten errors it covers
//! (same type, origin and field: apimachinery `validate.FilterCoveredHandwrittenErrors`) and is
//! appended after every handwritten error. Alpha rules (the counts' `minimum`s in 1.38) only
//! shadow the handwritten ones and change nothing a user sees.
//!
//! 1.38's one enforced rule on the fields jobgate validates is beta: `+k8s:dependentRequired`,
//! `backoffLimitPerIndex` must be set when `maxFailedIndexes` is (apimachinery
//! `validate.DependentRequired`, origin `dependentRequired`), which on UPDATE is skipped when
//! neither field's presence changed, so a handwritten error found then stays as it was.

use super::super::field::{ErrorType, FieldError};
use super::super::review::Review;
use super::super::version::{Cluster, FeatureGate, KubernetesVersion};
use super::super::wire::envelope::Operation;
use super::super::wire::model::JobSpec;

/// The handwritten error `validateJobSpec` reports for the same rule (origin
/// `dependentRequired`, marked covered by declarative validation).
pub(super) const HANDWRITTEN_REQUIRED_WITH_MAX_FAILED_INDEXES: &str =
    "when maxFailedIndexes is specified";

/// `validate.DependentRequired`'s detail.
const DECLARATIVE: &str = "must be set when maxFailedIndexes is set";

/// `errors` (the handwritten validation of `review`, in upstream's order) as kube-apiserver
/// answers them once declarative validation has run.
pub(super) fn apply(errors: &mut Vec<FieldError>, review: &Review<'_>, cluster: &Cluster) {
    let enforced = cluster.version() >= KubernetesVersion::V1_38
        && cluster.enabled(FeatureGate::DeclarativeValidationBeta);
    let old = match (review.operation, review.old_object) {
        (Operation::Update, Some(old)) => Some(&old.spec),
        _ => None,
    };
    if !enforced || !backoff_limit_per_index_required(&review.object.spec, old) {
        return;
    }
    let spec = review.object.spec_path();
    let field = spec.child("backoffLimitPerIndex");
    let path = field.to_string();
    errors.retain(|e| {
        (e.kind, e.path.as_str(), e.detail.as_str())
            != (
                ErrorType::Required,
                path.as_str(),
                HANDWRITTEN_REQUIRED_WITH_MAX_FAILED_INDEXES,
            )
    });
    errors.push(FieldError::required(field, DECLARATIVE));
}

/// `validate.DependentRequired` for `maxFailedIndexes` and `backoffLimitPerIndex`.
fn backoff_limit_per_index_required(spec: &JobSpec, old: Option<&JobSpec>) -> bool {
    let set = |s: &JobSpec| {
        (
            s.max_failed_indexes.is_some(),
            s.backoff_limit_per_index.is_some(),
        )
    };
    if old.is_some_and(|old| set(old) == set(spec)) {
        return false;
    }
    spec.max_failed_indexes.is_some() && spec.backoff_limit_per_index.is_none()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::apiserver_errors;
    use crate::job::review::Review;
    use crate::job::version::{Cluster, FeatureGate, KubernetesVersion};
    use crate::job::wire::envelope::Operation;
    use crate::job::wire::model::{JobObject, Kind};

    fn job(spec: Value) -> JobObject {
        let mut spec_with_template = json!({"completionMode": "Indexed", "completions": 4,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}});
        for (k, v) in spec.as_object().unwrap() {
            spec_with_template[k] = v.clone();
        }
        let doc = json!({"metadata": {"name": "j"}, "spec": spec_with_template});
        let mut o = JobObject::from_value(Kind::Job, doc.clone()).unwrap();
        o.keep_whole_template(&doc, KubernetesVersion::V1_38);
        o
    }

    fn errors(cluster: &Cluster, object: &JobObject, old: Option<&JobObject>) -> Vec<String> {
        let review = Review {
            operation: match old {
                Some(_) => Operation::Update,
                None => Operation::Create,
            },
            object,
            old_object: old,
        };
        let mut errors: Vec<String> = apiserver_errors(&review, cluster)
            .iter()
            .map(ToString::to_string)
            .collect();
        errors.dedup();
        errors
    }

    const HANDWRITTEN: &str =
        "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified";
    const DECLARATIVE: &str =
        "spec.backoffLimitPerIndex: Required value: must be set when maxFailedIndexes is set";
    const TOO_MANY: &str =
        "spec.maxFailedIndexes: Invalid value: 5: must be less than or equal to completions";

    /// KEP-5073 from 1.38: the beta `+k8s:dependentRequired` rule replaces the handwritten error
    /// it covers and comes after every handwritten error (v1.38.0-beta.0, as the 1.38 judge
    /// answers); up to 1.37, and with `DeclarativeValidationBeta` off, the handwritten one stays
    /// in its place.
    #[test]
    fn kep_5073_a_beta_declarative_error_replaces_the_handwritten_one_it_covers() {
        let bad = job(json!({"maxFailedIndexes": 5}));
        let on_1_38 = Cluster::new(KubernetesVersion::V1_38);
        assert_eq!(errors(&on_1_38, &bad, None), [TOO_MANY, DECLARATIVE]);
        let on_1_37 = Cluster::new(KubernetesVersion::V1_37);
        assert_eq!(errors(&on_1_37, &bad, None), [HANDWRITTEN, TOO_MANY]);
        let gate_off = Cluster::with_gates(
            KubernetesVersion::V1_38,
            &[(FeatureGate::DeclarativeValidationBeta, false)].into(),
        )
        .unwrap();
        assert_eq!(errors(&gate_off, &bad, None), [HANDWRITTEN, TOO_MANY]);
        // A CronJob's Job template, under its own path.
        let cron_job = JobObject::from_value(
            Kind::CronJob,
            json!({"spec": {"schedule": "@daily", "jobTemplate": {"spec": {
                "completionMode": "Indexed", "completions": 4, "maxFailedIndexes": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}}}}}),
        )
        .unwrap();
        assert_eq!(
            errors(&on_1_38, &cron_job, None),
            [
                "spec.jobTemplate.spec.backoffLimitPerIndex: Required value: must be set when maxFailedIndexes is set"
            ]
        );
    }

    /// `validate.DependentRequired` ratchets: on UPDATE it is skipped when neither field's
    /// presence changed, and the handwritten error, which nothing then covers, stays.
    #[test]
    fn kep_5073_dependent_required_ratchets_on_update() {
        let on_1_38 = Cluster::new(KubernetesVersion::V1_38);
        let old = job(json!({"maxFailedIndexes": 1}));
        let new = job(json!({"maxFailedIndexes": 2}));
        assert_eq!(errors(&on_1_38, &new, Some(&old)), [HANDWRITTEN]);
        // Dropping `backoffLimitPerIndex` changes its presence (and it is immutable).
        let old = job(json!({"maxFailedIndexes": 1, "backoffLimitPerIndex": 1}));
        assert_eq!(
            errors(&on_1_38, &new, Some(&old)),
            [
                "spec.backoffLimitPerIndex: Invalid value: null: field is immutable",
                DECLARATIVE
            ]
        );
    }
}
