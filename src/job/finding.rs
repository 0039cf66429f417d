//! One thing said about one object, keeping who says it (a kube-apiserver rule, a jobgate
//! policy, the mutating webhook, kubectl), its field and its severity: what the review pipeline
//! returns and every renderer (AdmissionReview, `check`, `audit`) reads.

use std::fmt;

use super::field::FieldError;
use super::levels::PolicyName;
use super::review::Verdict;

/// Who says a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// kube-apiserver's own rules (decoding and validation), as jobgate mirrors them.
    KubeApiserver,
    /// One of jobgate's policies.
    Policy(PolicyName),
    /// jobgate's mutating webhook (`/mutate`, `/mutate/recovery`): what it changed or left.
    Mutation,
    /// How kubectl reads a manifest before anything reaches kube-apiserver (`jobgate check`).
    Kubectl,
    /// Which controller recovers the pods (`jobgate check`): jobgate's reconciler or Kueue's.
    Recovery,
    /// What an owner's controller (JobSet, Trainer) does with a Job template (`jobgate check`).
    Template,
}

impl Source {
    /// `kube-apiserver`, the policy's name, or `jobgate-mutation`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::KubeApiserver => "kube-apiserver",
            Source::Policy(p) => p.as_str(),
            Source::Mutation => "jobgate-mutation",
            Source::Kubectl => "kubectl",
            Source::Recovery => "jobgate-recovery",
            Source::Template => "job-template",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a finding denies the object, warns of a problem, or only notes what jobgate did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    /// What jobgate's mutation changed, or an opt-out it honoured: nothing to fix, so
    /// `check --fail-on warning` does not fail on it.
    Note,
    Warning,
    Error,
}

/// What a finding says: a field error (the object is denied) or a warning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Said {
    Error(FieldError),
    /// The request is refused before admission (kube-apiserver's strict decoding): the message.
    Rejected(String),
    /// The warning as the AdmissionReview response carries it.
    Warning(String),
    /// A note; the AdmissionReview response carries it as a warning too (kube-apiserver has
    /// no other channel to the client).
    Note(String),
}

/// One thing said about one object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    pub(crate) source: Source,
    /// The field a warning is about, when there is one (an error carries its own).
    pub(crate) path: Option<String>,
    pub(crate) said: Said,
}

impl Finding {
    pub(crate) fn error(source: Source, error: FieldError) -> Finding {
        Finding {
            source,
            path: None,
            said: Said::Error(error),
        }
    }

    pub(crate) fn warning(source: Source, path: Option<String>, text: String) -> Finding {
        Finding {
            source,
            path,
            said: Said::Warning(text),
        }
    }

    pub(crate) fn note(source: Source, path: Option<String>, text: String) -> Finding {
        Finding {
            source,
            path,
            said: Said::Note(text),
        }
    }

    /// The field the finding is about, when there is one.
    pub(crate) fn field(&self) -> Option<&str> {
        match &self.said {
            Said::Error(e) => Some(&e.path),
            Said::Rejected(_) | Said::Warning(_) | Said::Note(_) => self.path.as_deref(),
        }
    }

    pub(crate) fn severity(&self) -> Severity {
        match self.said {
            Said::Error(_) | Said::Rejected(_) => Severity::Error,
            Said::Warning(_) => Severity::Warning,
            Said::Note(_) => Severity::Note,
        }
    }

    /// The message as kube-apiserver and kubectl print it: `<path>: <body>` for an error, the
    /// warning's text for a warning.
    pub(crate) fn message(&self) -> String {
        match &self.said {
            Said::Error(e) => e.to_string(),
            Said::Rejected(m) | Said::Warning(m) | Said::Note(m) => m.clone(),
        }
    }
}

/// The findings of one stage (or of the whole chain) and the patch of the mutating stage.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Judgment {
    pub(crate) findings: Vec<Finding>,
    pub(crate) patch: json_patch::Patch,
}

impl Judgment {
    /// The AdmissionReview-shaped verdict: errors, warnings, patch.
    pub(crate) fn into_verdict(self) -> Verdict {
        let mut verdict = Verdict {
            patch: self.patch,
            ..Verdict::default()
        };
        for finding in self.findings {
            match finding.said {
                Said::Error(e) => verdict.errors.push(e),
                Said::Warning(w) | Said::Note(w) => verdict.warnings.push(w),
                // Decoding happens before admission; a webhook never gets here.
                Said::Rejected(_) => {}
            }
        }
        verdict
    }
}
