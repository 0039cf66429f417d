//! The Job side of recovery episodes, as I/O around the pure step (`recovery::plan::plan_job`):
//! [`read_job`] reads the Job and its `jobgate.dev/recovery-state` annotation, [`record`] writes
//! what the step says to write (a [`JobRecord`]) through the [`Writer`] with optimistic
//! concurrency, then posts the Job's event.
//!
//! Concurrent reconciles of sibling pods are safe: all but one lose the state write with 409,
//! which the reconcile hands to its error policy; the next pass reads again and finds its pod a
//! leftover of the episode just recorded, so the episode is counted and announced once. The
//! event is posted after the write that made it true; a failed event is logged, not retried.
//! Under `--dry-run` the writer sends nothing and no event is posted.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::{Value, json};

use super::event::EventText;
use super::writer::{Skipped, Writer, workload_resource};
use crate::kueue::{JOB_UID_LABEL, WORKLOAD_VERSIONS};
use crate::recovery::episode::{
    EPISODE_REASON, JobKey, JobView, LIMIT_EXCEEDED_REASON, LimitAction, RECOVERY_STATE_ANNOTATION,
    RecoveryState,
};
use crate::recovery::plan::{JobEvent, JobRecord};

/// `action` of the episode event (the same action as the pod events).
pub(crate) const EPISODE_ACTION: &str = "ForcefulTermination";
/// `action` of the limit event.
pub(crate) const LIMIT_ACTION_STOP: &str = "StopRecovery";
pub(crate) const LIMIT_ACTION_SUSPEND: &str = "SuspendJob";
pub(crate) const LIMIT_ACTION_DEACTIVATE: &str = "DeactivateWorkload";

#[derive(Debug, thiserror::Error)]
pub(crate) enum JobStateError {
    #[error("Kubernetes API: {0}")]
    Api(#[from] kube::Error),
    #[error("job {namespace}/{name} has no metadata.resourceVersion")]
    NoResourceVersion { namespace: String, name: String },
    /// The state write met a newer resourceVersion, or the Job is gone: what was planned
    /// rests on a stale read.
    #[error("job {namespace}/{name} changed since it was read")]
    Conflict { namespace: String, name: String },
}

/// The Job as read, with its recovery state parsed once.
#[derive(Debug, Clone)]
pub(crate) struct ReadJob {
    job: Job,
    state: Option<RecoveryState>,
}

impl ReadJob {
    /// What the Job's step reads of it.
    pub(crate) fn view(&self) -> JobView<'_> {
        JobView {
            suspended: self.job.spec.as_ref().and_then(|s| s.suspend) == Some(true),
            state: self.state.as_ref(),
            resource_version: self.job.metadata.resource_version.as_deref(),
        }
    }
}

/// GETs the Job; `None` when it is gone or is another Job with the same name (another uid).
pub(crate) async fn read_job(
    client: &Client,
    key: &JobKey,
) -> Result<Option<ReadJob>, kube::Error> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), &key.namespace);
    let Some(job) = jobs.get_opt(&key.name).await? else {
        return Ok(None);
    };
    if !key.uid.is_empty() && job.metadata.uid.as_deref() != Some(key.uid.as_str()) {
        return Ok(None);
    }
    let state = read_state(&job);
    Ok(Some(ReadJob { job, state }))
}

/// What became of a [`JobRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// Written (the event posted, or its failure logged).
    Written,
    /// `--dry-run`: nothing written, no event.
    DryRun,
    /// This replica is not the leader: nothing written.
    NotLeader,
}

/// Writes `record` on the Job: deactivates its Kueue Workload first when the record says so
/// (without one, [`JobRecord::without_workload`]), then the state conditional on the
/// resourceVersion read, then the event.
pub(crate) async fn record(
    client: &Client,
    writer: &Writer,
    key: &JobKey,
    record: &JobRecord,
    now: Timestamp,
) -> Result<Recorded, JobStateError> {
    let record = if record.deactivate_workload {
        match deactivate_workload(client, writer, key).await? {
            Deactivated::Yes => record.clone(),
            Deactivated::NoWorkload => record.clone().without_workload(),
            Deactivated::Skipped(skipped) => return Ok(skipped.into()),
        }
    } else {
        record.clone()
    };
    let Some(resource_version) = record.resource_version.as_deref() else {
        return Err(JobStateError::NoResourceVersion {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        });
    };
    let patch = state_patch(resource_version, &record.state, record.suspend);
    match writer.patch_job(&key.namespace, &key.name, patch).await {
        Ok(Ok(_)) => {}
        Ok(Err(skipped)) => return Ok(skipped.into()),
        // Changed or deleted since it was read: read again, plan again.
        Err(kube::Error::Api(status)) if status.is_conflict() || status.is_not_found() => {
            tracing::debug!(job = %key.name, code = status.code, "recovery state write met a changed Job");
            return Err(JobStateError::Conflict {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            });
        }
        Err(err) => return Err(err.into()),
    }
    writer.count_recorded(record.event);
    // The event follows the write that made it true, once per episode (or limit).
    let note = record.note();
    let _ = writer
        .event(&job_reference(key), &job_event_text(&record, &note), now)
        .await;
    Ok(Recorded::Written)
}

impl From<Skipped> for Recorded {
    fn from(skipped: Skipped) -> Recorded {
        match skipped {
            Skipped::NotLeader => Recorded::NotLeader,
            Skipped::DryRun => Recorded::DryRun,
        }
    }
}

/// How deactivating the Job's Workload went.
enum Deactivated {
    Yes,
    /// No Workload owns the Job (not Kueue-managed, or Kueue not installed).
    NoWorkload,
    Skipped(Skipped),
}

/// Sets `spec.active: false` on the Job's Kueue Workload (idempotent).
async fn deactivate_workload(
    client: &Client,
    writer: &Writer,
    job: &JobKey,
) -> Result<Deactivated, kube::Error> {
    let Some((name, version)) = find_workload(client, job).await? else {
        return Ok(Deactivated::NoWorkload);
    };
    let patch = json!({"spec": {"active": false}});
    match writer
        .patch_workload(&job.namespace, &name, version, patch)
        .await
    {
        Ok(Ok(_)) => Ok(Deactivated::Yes),
        Ok(Err(skipped)) => Ok(Deactivated::Skipped(skipped)),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(Deactivated::NoWorkload),
        Err(err) => Err(err),
    }
}

/// The Kueue Workload the Job owns: Kueue's jobframework creates it with a controller owner
/// reference to the Job (`ctrl.SetControllerReference`) and finds it by that reference
/// (`OwnerReferenceIndexFieldMatcher`); no field selector can do that here, so the namespace's
/// Workloads are listed. `None` when there is none, or Kueue is not installed (404).
async fn find_workload(
    client: &Client,
    job: &JobKey,
) -> Result<Option<(String, &'static str)>, kube::Error> {
    // Kueue labels a Job's Workload with the Job's UID (`constants.JobUIDLabel`) and makes the
    // Job its controller; the label keeps the list to that Workload, the reference proves it.
    let params = ListParams::default().labels(&format!("{JOB_UID_LABEL}={}", job.uid));
    for version in WORKLOAD_VERSIONS {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &job.namespace, &workload_resource(version));
        let list = match api.list(&params).await {
            Ok(list) => list,
            // This version is not served (Kueue not installed, too old or too new): next.
            Err(kube::Error::Api(status)) if status.is_not_found() => continue,
            Err(err) => return Err(err),
        };
        return Ok(list.items.into_iter().find_map(|w| {
            let owned = w
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && r.kind == "Job" && r.uid == job.uid);
            owned
                .then(|| w.metadata.name.clone())
                .flatten()
                .map(|name| (name, version))
        }));
    }
    Ok(None)
}

/// The Job's recovery state; an unreadable annotation counts as removed (and is logged).
pub(crate) fn read_state(job: &Job) -> Option<RecoveryState> {
    match RecoveryState::from_annotation(job.metadata.annotations.as_ref()) {
        Ok(state) => state,
        Err(err) => {
            tracing::warn!(
                job = job.metadata.name.as_deref().unwrap_or(""),
                namespace = job.metadata.namespace.as_deref().unwrap_or(""),
                error = %err,
                "unreadable {RECOVERY_STATE_ANNOTATION} annotation; counting from zero"
            );
            None
        }
    }
}

/// The JSON merge patch recording `state`, conditional on `resource_version` (the apiserver
/// answers 409 Conflict when the Job changed since it was read).
pub(crate) fn state_patch(resource_version: &str, state: &RecoveryState, suspend: bool) -> Value {
    let mut patch = json!({
        "metadata": {
            "resourceVersion": resource_version,
            "annotations": { RECOVERY_STATE_ANNOTATION: state.to_annotation() },
        }
    });
    if suspend && let Some(object) = patch.as_object_mut() {
        object.insert("spec".to_string(), json!({ "suspend": true }));
    }
    patch
}

/// The Job as its events regard it (the uid is the one the pods' owner reference names, and
/// [`read_job`] only returns that Job).
fn job_reference(key: &JobKey) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".to_string()),
        kind: Some("Job".to_string()),
        name: Some(key.name.clone()),
        namespace: Some(key.namespace.clone()),
        uid: (!key.uid.is_empty()).then(|| key.uid.clone()),
        ..ObjectReference::default()
    }
}

/// Type, reason and action of the event that follows `record`, with its note.
pub(crate) fn job_event_text<'a>(record: &JobRecord, note: &'a str) -> EventText<'a> {
    let (type_, reason, action) = match record.event {
        JobEvent::Episode => ("Normal", EPISODE_REASON, EPISODE_ACTION),
        JobEvent::LimitExceeded { action, .. } => {
            let action = match action {
                LimitAction::Stop => LIMIT_ACTION_STOP,
                LimitAction::Suspend => LIMIT_ACTION_SUSPEND,
                LimitAction::DeactivateWorkload => LIMIT_ACTION_DEACTIVATE,
            };
            ("Warning", LIMIT_EXCEEDED_REASON, action)
        }
    };
    EventText {
        type_,
        reason,
        action,
        note,
    }
}

/// The pod's namespace and owner references to a Job key, for callers holding a `Pod`.
pub(crate) fn pod_job(meta: &ObjectMeta) -> Option<JobKey> {
    let namespace = meta.namespace.as_deref()?;
    crate::recovery::episode::job_owner(namespace, meta.owner_references.as_deref()?)
}

#[cfg(test)]
mod tests;
