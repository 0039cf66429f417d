//! The one review pipeline: what kube-apiserver does with a decoded Job or CronJob write, as far
//! as it decides a verdict (k8s.io/apiserver `pkg/endpoints/handlers/create.go` and `update.go`,
//! `registry/generic/registry/store.go`): mutating admission (jobgate's `/mutate`), the
//! defaulting of the mutated object, the strategy's `PrepareForCreate`, then validating
//! admission (`/validate`, after kube-apiserver's own validation, which jobgate mirrors for
//! `check`). The webhook runs one stage per endpoint, `jobgate check` runs both, `jobgate audit`
//! the last; each reads its objects with the wire (`job::wire::read`), calls [`run`], and renders the findings its
//! own way (AdmissionReview, text/JSON/YAML/CI annotations, PolicyReports), so none of them can
//! judge a write differently.

use super::config::Config;
use super::defaults;
use super::finding::{Finding, Judgment, Source};
use super::mutate::{self, RecoveryScope};
use super::policy;
use super::review::Review;
use super::validate as rules;
use super::wire::envelope::Operation;
use super::wire::model::{JobObject, Kind};
use super::wire::read::ParseError;

/// A write to judge: the object and, for an UPDATE, the object it replaces, as read.
pub(crate) struct Write {
    pub(crate) operation: Operation,
    pub(crate) object: JobObject,
    pub(crate) old_object: Option<JobObject>,
}

/// The stages of the chain a caller stands for.
pub(crate) enum Stages<'a, E> {
    /// `/mutate` or `/mutate/recovery` alone.
    Mutate(RecoveryScope),
    /// `/validate` alone: a webhook call, or objects already stored (`audit`).
    Validate,
    /// Both, as the cluster runs them for one write (`check`). kube-apiserver applies the
    /// webhook's patch to the object and decodes it again: `reread` does that to the document
    /// the object was read from.
    MutateThenValidate(
        RecoveryScope,
        &'a mut dyn FnMut(&json_patch::Patch) -> Result<JobObject, E>,
    ),
}

/// What the chain says about a write.
pub(crate) struct Judged {
    pub(crate) judgment: Judgment,
    /// The object as the last stage saw it (mutated and defaulted when those stages ran).
    pub(crate) object: JobObject,
    /// Whether jobgate's patch changes what kube-apiserver stores (a patch that only writes what
    /// the apiserver defaults anyway does not); known when the patch was applied.
    pub(crate) mutation_changes: bool,
}

/// Runs `stages` over `write`. The only error is `reread`'s.
pub(crate) fn run<E>(write: Write, stages: Stages<'_, E>, config: &Config) -> Result<Judged, E> {
    let Write {
        operation,
        mut object,
        mut old_object,
    } = write;
    let (scope, reread) = match stages {
        Stages::Mutate(scope) => (Some(scope), None),
        Stages::Validate => (None, None),
        Stages::MutateThenValidate(scope, reread) => (Some(scope), Some(reread)),
    };
    let validates = scope.is_none() || reread.is_some();
    let mut judgment = Judgment::default();
    let mut mutation_changes = false;
    if let Some(scope) = scope {
        let review = Review {
            operation,
            object: &object,
            old_object: old_object.as_ref(),
        };
        judgment = mutate(&review, config, scope);
        if let Some(reread) = reread.filter(|_| !judgment.patch.0.is_empty()) {
            let patched = reread(&judgment.patch)?;
            mutation_changes = changes_what_is_stored(&object, &patched, config);
            object = patched;
        }
    }
    if validates {
        // kube-apiserver defaults the object (again, after mutation) and prepares a CREATE
        // before validating admission sees it. An object that arrives undefaulted (a manifest, a
        // client calling `/validate` directly) is judged as the apiserver would store it.
        defaults::apply_apiserver_defaults(&mut object, &config.cluster);
        if operation == Operation::Create {
            defaults::prepare_job_for_create(&mut object, &config.cluster);
        }
        if let Some(old) = old_object.as_mut() {
            defaults::apply_apiserver_defaults(old, &config.cluster);
        }
        let review = Review {
            operation,
            object: &object,
            old_object: old_object.as_ref(),
        };
        judgment.findings.extend(validate(&review, config).findings);
    }
    Ok(Judged {
        judgment,
        object,
        mutation_changes,
    })
}

/// Why the object at `at` (`request.object`; empty for a document that is the object) cannot be
/// read as `kind`, naming the field that is wrong.
pub(crate) fn unreadable(kind: Kind, at: &str, error: &ParseError) -> String {
    let whole = error.path.is_empty() || error.path == ".";
    match (at, whole) {
        ("", _) => format!("not a valid {}: {error}", kind.as_str()),
        (at, true) => format!("{at} is not a valid {}: {}", kind.as_str(), error.message),
        (at, false) => format!("{at}.{}: {}", error.path, error.message),
    }
}

/// Whether `patched` differs from `unpatched` once kube-apiserver has defaulted both. A
/// CronJob's template text differs with any patch; its fields are compared.
fn changes_what_is_stored(unpatched: &JobObject, patched: &JobObject, config: &Config) -> bool {
    let stored = |o: &JobObject| {
        let mut o = JobObject {
            job_template_json: None,
            ..o.clone()
        };
        defaults::apply_apiserver_defaults(&mut o, &config.cluster);
        o
    };
    stored(patched) != stored(unpatched)
}

/// What the mutating webhook does with `review` at `scope` (`/mutate` or `/mutate/recovery`).
pub(crate) fn mutate(review: &Review<'_>, config: &Config, scope: RecoveryScope) -> Judgment {
    mutate::mutate(review, config, scope)
}

/// What `/validate` says about `review` (an object as kube-apiserver stores it, defaulted):
/// kube-apiserver's validation for the cluster's release, then jobgate's policies.
pub(crate) fn validate(review: &Review<'_>, config: &Config) -> Judgment {
    let mut findings: Vec<Finding> = rules::apiserver_errors(review, &config.cluster)
        .into_iter()
        .map(|e| Finding::error(Source::KubeApiserver, e))
        .collect();
    findings.extend(policy::evaluate(review, config));
    if let Some(w) = rules::template_unreadable(review, &config.cluster) {
        let path = review.object.spec_path().child("template").to_string();
        findings.push(Finding::warning(Source::KubeApiserver, Some(path), w));
    }
    Judgment {
        findings,
        patch: json_patch::Patch::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::version::{Cluster, FeatureGate, KubernetesVersion};

    fn job_json(managed_by: &str) -> serde_json::Value {
        serde_json::json!({"metadata": {"name": "pi"}, "spec": {"managedBy": managed_by,
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "pi", "image": "perl"}]}}}})
    }

    fn job(managed_by: &str) -> JobObject {
        JobObject::from_value_ref(Kind::Job, &job_json(managed_by)).unwrap()
    }

    fn errors(
        operation: Operation,
        object: JobObject,
        old: Option<JobObject>,
        config: &Config,
    ) -> Vec<String> {
        let write = Write {
            operation,
            object,
            old_object: old,
        };
        let Ok(judged) = run::<std::convert::Infallible>(write, Stages::Validate, config);
        let errors = judged.judgment.into_verdict().errors;
        errors.iter().map(|e| e.path.clone()).collect()
    }

    /// The Job strategy's `PrepareForCreate` runs before validating admission
    /// (`registry/generic/registry/store.go`: `BeforeCreate`, then `createValidation`): with the
    /// beta gate `JobManagedBy` off, a new Job's `spec.managedBy` is gone before `/validate`
    /// sees it, and the chain judges it so at the webhook as in `check`. An UPDATE keeps it.
    #[test]
    fn prepare_for_create_comes_before_validating_admission() {
        let off = Config {
            cluster: Cluster::with_gates(
                KubernetesVersion::V1_34,
                &[(FeatureGate::JobManagedBy, false)].into(),
            )
            .unwrap(),
            ..Config::default()
        };
        let on = Config::for_release(KubernetesVersion::V1_34);
        let bad = || job("not a domain-prefixed path");
        let managed_by = |fields: Vec<String>| {
            !fields.is_empty() && fields.iter().all(|f| f == "spec.managedBy")
        };
        assert!(managed_by(errors(Operation::Create, bad(), None, &on)));
        assert_eq!(
            errors(Operation::Create, bad(), None, &off),
            Vec::<String>::new()
        );
        assert!(managed_by(errors(
            Operation::Update,
            bad(),
            Some(bad()),
            &off
        )));
    }

    /// With both stages, the patch is applied and the object read again before `/validate`, and
    /// a patch that only writes what the apiserver defaults anyway changes nothing stored.
    #[test]
    fn mutate_then_validate_judges_the_patched_object() {
        let config = Config::default();
        let write = || Write {
            operation: Operation::Create,
            object: job("example.com/queue"),
            old_object: None,
        };
        let Ok(alone) = run::<std::convert::Infallible>(
            write(),
            Stages::Mutate(RecoveryScope::JobAnnotation),
            &config,
        );
        assert!(
            !alone.judgment.patch.0.is_empty(),
            "TerminatingOrFailed is written out"
        );
        let mut patches = 0;
        let mut reread = |patch: &json_patch::Patch| {
            patches += 1;
            let mut doc = job_json("example.com/queue");
            json_patch::patch(&mut doc, &patch.0).map_err(|e| e.to_string())?;
            JobObject::from_value_ref(Kind::Job, &doc).map_err(|e| e.to_string())
        };
        let both = run(
            write(),
            Stages::MutateThenValidate(RecoveryScope::JobAnnotation, &mut reread),
            &config,
        )
        .unwrap();
        assert_eq!(patches, 1);
        assert_eq!(both.judgment.patch, alone.judgment.patch);
        assert!(both.judgment.into_verdict().allowed());
        assert!(
            !both.mutation_changes,
            "the patch writes the apiserver's default"
        );
    }
}
