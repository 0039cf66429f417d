//! The one review pipeline: an object (and the old object) plus the configuration in, findings
//! out, each keeping who says it (a kube-apiserver rule, a jobgate policy, the mutating webhook),
//! its field and its severity, plus the JSON Patch. The webhook renders the findings as an
//! AdmissionReview, `jobgate check` as text/JSON/YAML/CI annotations, `jobgate audit` as
//! PolicyReports; each reviews an object once.

use super::config::Config;
use super::finding::{Finding, Judgment, Source};
use super::mutate::{self, RecoveryScope};
use super::policy;
use super::review::Review;
use super::validate as rules;

/// What the mutating webhook does with `review` at `scope` (`/mutate` or `/mutate/recovery`).
pub(crate) fn mutate(review: &Review<'_>, config: &Config, scope: RecoveryScope) -> Judgment {
    let verdict = mutate::mutate(review, config, scope);
    Judgment {
        findings: verdict
            .warnings
            .into_iter()
            .map(|w| Finding::warning(Source::Mutation, None, w))
            .collect(),
        patch: verdict.patch,
    }
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
