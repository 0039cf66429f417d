//! The kinds of objects whose controllers create Jobs from templates they hold, and their API
//! versions: a leaf that `jobset`, `trainer` and the module's own code all read.

/// `jobset.x-k8s.io/v1alpha2`, JobSet's served version (upstream's `api/jobset/v1alpha2`).
pub(super) const JOBSET_API_VERSION: &str = "jobset.x-k8s.io/v1alpha2";
/// `trainer.kubeflow.org/v1alpha1`, Kubeflow Trainer's served version.
pub(super) const TRAINER_API_VERSION: &str = "trainer.kubeflow.org/v1alpha1";

/// A kind of object whose controller creates Jobs from templates it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// `jobset.x-k8s.io/v1alpha2` JobSet.
    JobSet,
    /// `trainer.kubeflow.org/v1alpha1` TrainingRuntime (namespaced).
    TrainingRuntime,
    /// `trainer.kubeflow.org/v1alpha1` ClusterTrainingRuntime.
    ClusterTrainingRuntime,
}

impl Owner {
    /// The owner kind of an object of `api_version` and `kind`, if jobgate knows it.
    pub fn of(api_version: &str, kind: &str) -> Option<Owner> {
        match (api_version, kind) {
            (JOBSET_API_VERSION, "JobSet") => Some(Owner::JobSet),
            (TRAINER_API_VERSION, "TrainingRuntime") => Some(Owner::TrainingRuntime),
            (TRAINER_API_VERSION, "ClusterTrainingRuntime") => Some(Owner::ClusterTrainingRuntime),
            _ => None,
        }
    }

    /// `JobSet`, `TrainingRuntime`, `ClusterTrainingRuntime`.
    pub fn kind(self) -> &'static str {
        match self {
            Owner::JobSet => "JobSet",
            Owner::TrainingRuntime => "TrainingRuntime",
            Owner::ClusterTrainingRuntime => "ClusterTrainingRuntime",
        }
    }

    /// Its `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            Owner::JobSet => JOBSET_API_VERSION,
            Owner::TrainingRuntime | Owner::ClusterTrainingRuntime => TRAINER_API_VERSION,
        }
    }

    /// Where its JobSet spec is: the object's `spec`, or a runtime's `spec.template.spec`.
    pub(super) fn jobset_spec(self) -> &'static [&'static str] {
        match self {
            Owner::JobSet => &["spec"],
            Owner::TrainingRuntime | Owner::ClusterTrainingRuntime => &["spec", "template", "spec"],
        }
    }
}
