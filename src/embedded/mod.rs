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

mod controller_job;
mod jobset;
mod owner;
mod trainer;

pub(crate) use controller_job::ControllerJob;
pub use owner::Owner;

use serde_json::Value;

use crate::job::version::KubernetesVersion;

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

#[cfg(test)]
mod tests;
