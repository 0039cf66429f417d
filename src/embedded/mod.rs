//! Jobs that other controllers create from Job templates held in their own objects, built as
//! those controllers build them, so the Job they send to kube-apiserver can be reviewed before
//! the object holding the template is applied:
//! - a JobSet (`jobset.x-k8s.io/v1alpha2`): one Job per replica of each
//!   `spec.replicatedJobs[].template` (`jobset`);
//! - a Kubeflow Trainer `TrainingRuntime` or `ClusterTrainingRuntime`
//!   (`trainer.kubeflow.org/v1alpha1`): a TrainJob that uses it becomes a JobSet built from
//!   `spec.template` (`trainer`), whose Jobs are built as above.
//!
//! (A CronJob's Job template is reviewed as the CronJob itself, by `job::`.)
//!
//! The Jobs are plain `batch/v1` JSON, the way the controller sends them: reviewed by `check`,
//! and usable as they are against a real kube-apiserver.

mod jobset;
mod trainer;

use serde_json::Value;

use crate::check::schema;
use crate::job::Kind;
use crate::job::version::KubernetesVersion;

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
            (jobset::API_VERSION, "JobSet") => Some(Owner::JobSet),
            (trainer::API_VERSION, "TrainingRuntime") => Some(Owner::TrainingRuntime),
            (trainer::API_VERSION, "ClusterTrainingRuntime") => Some(Owner::ClusterTrainingRuntime),
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
            Owner::JobSet => jobset::API_VERSION,
            Owner::TrainingRuntime | Owner::ClusterTrainingRuntime => trainer::API_VERSION,
        }
    }

    /// Where its JobSet spec is: the object's `spec`, or a runtime's `spec.template.spec`.
    fn jobset_spec(self) -> &'static [&'static str] {
        match self {
            Owner::JobSet => &["spec"],
            Owner::TrainingRuntime | Owner::ClusterTrainingRuntime => &["spec", "template", "spec"],
        }
    }
}

/// One Job template of an object, and the Job its controller creates from it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ControllerJob {
    /// Where the template is in the object, as `field.Path` prints it
    /// (`spec.replicatedJobs[0].template`).
    pub template: String,
    /// How many Jobs the controller creates from the template (a replicated job's
    /// `replicas`); `job` is the first of them (index 0).
    pub replicas: u32,
    /// The Job as the controller sends it to kube-apiserver.
    pub job: Value,
}

/// Where each Job template of `object` is: its path as `field.Path` prints it, and as segments.
pub(crate) fn template_paths(owner: Owner, object: &Value) -> Vec<(String, Vec<String>)> {
    let spec = owner.jobset_spec();
    let mut at = object;
    for key in spec {
        match at.get(key) {
            Some(v) => at = v,
            None => return Vec::new(),
        }
    }
    let Some(Value::Array(jobs)) = at.get("replicatedJobs") else {
        return Vec::new();
    };
    let prefix = spec.join(".");
    (0..jobs.len())
        .filter(|&i| jobs[i].get("template").is_some())
        .map(|i| {
            let mut segments: Vec<String> = spec.iter().map(|s| s.to_string()).collect();
            segments.extend(["replicatedJobs".into(), i.to_string(), "template".into()]);
            (format!("{prefix}.replicatedJobs[{i}].template"), segments)
        })
        .collect()
}

/// The Jobs `object` (an `owner`, as written, before its CRD's defaulting) makes its controller
/// create: for each template that creates any, the first (index 0). A namespaced object
/// without a namespace, and a cluster-scoped runtime, take `namespace` (the TrainJob's).
/// Fields a Job of `release` does not have are pruned from the templates, as kube-apiserver
/// prunes what the owner's CRD does not know from an object it stores (`--validate=strict`
/// refuses them first).
pub(crate) fn controller_jobs(
    owner: Owner,
    object: Value,
    namespace: &str,
    release: KubernetesVersion,
) -> Result<Vec<ControllerJob>, String> {
    let jobset = match owner {
        Owner::JobSet => object,
        Owner::TrainingRuntime | Owner::ClusterTrainingRuntime => {
            trainer::jobset(owner, object, namespace)?
        }
    };
    let mut jobs = jobset::jobs(jobset, namespace, release)?;
    let prefix = owner.jobset_spec()[..owner.jobset_spec().len() - 1].join(".");
    for job in &mut jobs {
        if !prefix.is_empty() {
            job.template = format!("{prefix}.{}", job.template);
        }
    }
    Ok(jobs)
}

/// [`controller_jobs`] as `(template path, Job)` pairs. Test support: the Jobs sent to a real
/// kube-apiserver (`tests/cluster_templates.rs`).
#[cfg(any(test, feature = "test-support"))]
pub fn controller_jobs_as_sent(
    owner: Owner,
    object: Value,
    namespace: &str,
    release: KubernetesVersion,
) -> Result<Vec<(String, Value)>, String> {
    let jobs = controller_jobs(owner, object, namespace, release)?;
    Ok(jobs.into_iter().map(|j| (j.template, j.job)).collect())
}

/// Removes from a Job template (`{metadata, spec}`) the fields a Job of `release` does not have.
fn prune_unknown_fields(template: &mut Value, release: KubernetesVersion) {
    let unknown = schema::unknown_fields(Kind::Job, template, release);
    for field in unknown {
        remove(template, &field.0);
    }
    if let Value::Object(t) = template {
        t.retain(|k, _| matches!(k.as_str(), "metadata" | "spec"));
    }
}

fn remove(value: &mut Value, path: &[schema::Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = value;
    for step in parents {
        at = match (step, at) {
            (schema::Step::Key(k), Value::Object(m)) => match m.get_mut(k) {
                Some(v) => v,
                None => return,
            },
            (schema::Step::Index(i), Value::Array(a)) => match a.get_mut(*i) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    if let (schema::Step::Key(k), Value::Object(m)) = (last, at) {
        m.remove(k);
    }
}

#[cfg(test)]
mod tests;
