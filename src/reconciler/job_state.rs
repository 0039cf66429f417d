//! The Job side of recovery episodes: read the Job's `jobgate.dev/recovery-state` annotation, ask
//! [`decide_episode`] what to do, record the new state through the [`Writer`] with optimistic
//! concurrency (and `spec.suspend: true` when the limit says so), and post the Job's events.
//!
//! `reconcile::job_gate` calls [`begin_episode`] between a pod's `Decision::Recover` and its
//! recovery, with the Job's due pods, and maps the decision to its pod with
//! [`crate::recovery::episode::pod_gate`].
//!
//! Concurrent reconciles of sibling pods are safe: all but one lose the state write with 409,
//! re-read, and find their pod a leftover of the episode just recorded (`Continue`), so the
//! episode is counted and announced once. The events are posted here, after the write that made
//! them true; a failed event is logged, not retried. Under `--dry-run` the writer sends nothing:
//! the decision is returned as if it had been recorded, without an event.
//!
//! A 409 Conflict on the state write means someone else changed the Job: [`EpisodeStart::Conflict`]
//! ends this pass, and the reconcile's one retry level re-reads the pod, plans again and comes
//! back here with a fresh read of the Job (never act on stale data). Other API errors are
//! returned for the caller's retry policy.

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
    DuePod, EPISODE_REASON, EpisodeConfig, EpisodeDecision, JobKey, JobView, LIMIT_EXCEEDED_REASON,
    LimitAction, RECOVERY_STATE_ANNOTATION, RecoveryState, decide_episode, episode_note,
    limit_note,
};
use crate::recovery::plan::{deactivates_workload, suspend_without_workload};

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
}

/// The outcome of [`begin_episode`].
// Returned once per episode; boxing the reference would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EpisodeStart {
    /// The Job is gone, or a new Job with the same name has another uid: the pods are orphans,
    /// recover them without state.
    JobGone,
    /// The state needed a write and this replica is not the leader: do nothing.
    NotLeader,
    /// The state write met a newer resourceVersion: read again and decide again.
    Conflict,
    /// The decision, already recorded on the Job when it needed a write (Recover and the first
    /// LimitExceeded; under `--dry-run` not written). `job` refers to the Job for the events.
    Decided {
        decision: EpisodeDecision,
        job: ObjectReference,
    },
}

/// Reads the Job, decides the episode for `due` and records it; see the module docs.
///
/// After the write succeeded it posts the Job's event: `Normal RecoveryEpisode` naming the
/// episode's pods and nodes for `Recover`, `Warning RecoveryLimitExceeded` for the first
/// `LimitExceeded`. Nothing is written or posted for `Continue`, `WaitUntil`, a recorded limit,
/// or `NothingDue`.
pub(crate) async fn begin_episode(
    client: &Client,
    writer: &Writer,
    job_key: &JobKey,
    due: &[DuePod],
    config: &EpisodeConfig,
    now: Timestamp,
    jitter: f64,
) -> Result<EpisodeStart, JobStateError> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), &job_key.namespace);
    {
        let Some((job, decision)) =
            read_and_decide(&jobs, job_key, due, config, now, jitter).await?
        else {
            return Ok(EpisodeStart::JobGone);
        };
        let job_ref = job_reference(&job, job_key);
        // --on-recovery-limit=deactivate-workload: deactivate the Workload first (idempotent),
        // then record the state; without a Workload, fall back to suspend.
        let mut decision = decision;
        let mut fallback = false;
        if deactivates_workload(&decision) {
            let deactivated = match find_workload(client, job_key).await? {
                None => false,
                Some((name, version)) => match writer
                    .patch_workload(
                        &job_key.namespace,
                        &name,
                        version,
                        json!({"spec": {"active": false}}),
                    )
                    .await
                {
                    Ok(Ok(_)) => true,
                    Ok(Err(Skipped::NotLeader)) => return Ok(EpisodeStart::NotLeader),
                    Ok(Err(Skipped::DryRun)) => {
                        return Ok(EpisodeStart::Decided {
                            decision,
                            job: job_ref,
                        });
                    }
                    Err(kube::Error::Api(status)) if status.is_not_found() => false,
                    Err(err) => return Err(err.into()),
                },
            };
            if !deactivated {
                decision = suspend_without_workload(decision);
                fallback = true;
            }
        }
        let write = match &decision {
            EpisodeDecision::Recover { new_state, .. } => Some((new_state, false)),
            EpisodeDecision::LimitExceeded {
                new_state: Some(new_state),
                suspend,
            } => Some((new_state, *suspend)),
            _ => None,
        };
        let Some((new_state, suspend)) = write else {
            return Ok(EpisodeStart::Decided {
                decision,
                job: job_ref,
            });
        };
        let Some(resource_version) = job.metadata.resource_version.as_deref() else {
            return Err(JobStateError::NoResourceVersion {
                namespace: job_key.namespace.clone(),
                name: job_key.name.clone(),
            });
        };
        let patch = state_patch(resource_version, new_state, suspend);
        match writer
            .patch_job(&job_key.namespace, &job_key.name, patch)
            .await
        {
            Ok(Ok(_)) => writer.count_recorded(&decision),
            Ok(Err(Skipped::NotLeader)) => return Ok(EpisodeStart::NotLeader),
            // Dry run: what would have been recorded, nothing written, no event.
            Ok(Err(Skipped::DryRun)) => {
                return Ok(EpisodeStart::Decided {
                    decision,
                    job: job_ref,
                });
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                tracing::debug!(job = %job_key.name, "recovery state write conflicted");
                return Ok(EpisodeStart::Conflict);
            }
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                return Ok(EpisodeStart::JobGone);
            }
            Err(err) => return Err(err.into()),
        }
        // The event follows the write that made it true, once per episode (or limit).
        let event = match &decision {
            EpisodeDecision::Recover {
                pods, new_state, ..
            } => Some((EventKind::Episode, episode_note(pods, new_state))),
            EpisodeDecision::LimitExceeded { new_state, .. } => {
                let action = new_state
                    .as_ref()
                    .and_then(|s| s.limit_exceeded.as_ref())
                    .map_or(LimitAction::Stop, |l| l.action);
                let mut note = limit_note(due, config.limit_count.unwrap_or(0), action);
                if fallback {
                    note = format!(
                        "No Kueue Workload owns this Job: --on-recovery-limit=deactivate-workload \
                         fell back to suspend. {note}"
                    );
                }
                Some((EventKind::LimitExceeded(action), note))
            }
            _ => None,
        };
        if let Some((kind, note)) = event {
            let _ = writer
                .event(&job_ref, &job_event_text(kind, &note), now)
                .await;
        }
        Ok(EpisodeStart::Decided {
            decision,
            job: job_ref,
        })
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

/// GETs the Job and decides; `None` when the Job is gone or is another Job with the same name.
async fn read_and_decide(
    jobs: &Api<Job>,
    job_key: &JobKey,
    due: &[DuePod],
    config: &EpisodeConfig,
    now: Timestamp,
    jitter: f64,
) -> Result<Option<(Job, EpisodeDecision)>, kube::Error> {
    let Some(job) = jobs.get_opt(&job_key.name).await? else {
        return Ok(None);
    };
    if !job_key.uid.is_empty() && job.metadata.uid.as_deref() != Some(job_key.uid.as_str()) {
        return Ok(None);
    }
    let state = read_state(&job);
    let view = JobView {
        suspended: job.spec.as_ref().and_then(|s| s.suspend) == Some(true),
        state: state.as_ref(),
    };
    let decision = decide_episode(due, view, config, now, jitter);
    Ok(Some((job, decision)))
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

fn job_reference(job: &Job, key: &JobKey) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".to_string()),
        kind: Some("Job".to_string()),
        name: Some(key.name.clone()),
        namespace: Some(key.namespace.clone()),
        uid: job.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// Which of the two Job events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Episode,
    LimitExceeded(LimitAction),
}

/// Type, reason and action of a Job event, with its note.
pub(crate) fn job_event_text(kind: EventKind, note: &str) -> EventText<'_> {
    let (type_, reason, action) = match kind {
        EventKind::Episode => ("Normal", EPISODE_REASON, EPISODE_ACTION),
        EventKind::LimitExceeded(LimitAction::Stop) => {
            ("Warning", LIMIT_EXCEEDED_REASON, LIMIT_ACTION_STOP)
        }
        EventKind::LimitExceeded(LimitAction::Suspend) => {
            ("Warning", LIMIT_EXCEEDED_REASON, LIMIT_ACTION_SUSPEND)
        }
        EventKind::LimitExceeded(LimitAction::DeactivateWorkload) => {
            ("Warning", LIMIT_EXCEEDED_REASON, LIMIT_ACTION_DEACTIVATE)
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
