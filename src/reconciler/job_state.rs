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
//! A 409 Conflict on the state write means someone else changed the Job: re-read it and decide
//! again (never act on stale data). Other API errors are returned for the caller's retry policy.

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

/// `action` of the episode event (the same action as the pod events).
pub const EPISODE_ACTION: &str = "ForcefulTermination";
/// `action` of the limit event.
pub const LIMIT_ACTION_STOP: &str = "StopRecovery";
pub const LIMIT_ACTION_SUSPEND: &str = "SuspendJob";
pub const LIMIT_ACTION_DEACTIVATE: &str = "DeactivateWorkload";
/// How many times a conflicting state write is re-read and re-decided before giving up.
pub const MAX_CONFLICT_ATTEMPTS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum JobStateError {
    #[error("Kubernetes API: {0}")]
    Api(#[from] kube::Error),
    #[error("job {namespace}/{name}: still conflicting after {attempts} attempts")]
    Conflict {
        namespace: String,
        name: String,
        attempts: usize,
    },
    #[error("job {namespace}/{name} has no metadata.resourceVersion")]
    NoResourceVersion { namespace: String, name: String },
}

/// The outcome of [`begin_episode`].
// Returned once per episode; boxing the reference would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EpisodeStart {
    /// The Job is gone, or a new Job with the same name has another uid: the pods are orphans,
    /// recover them without state.
    JobGone,
    /// The state needed a write and this replica is not the leader: do nothing.
    NotLeader,
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
pub async fn begin_episode(
    client: &Client,
    writer: &Writer,
    job_key: &JobKey,
    due: &[DuePod],
    config: &EpisodeConfig,
    now: Timestamp,
    jitter: f64,
) -> Result<EpisodeStart, JobStateError> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), &job_key.namespace);
    for _ in 0..MAX_CONFLICT_ATTEMPTS {
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
        if let EpisodeDecision::LimitExceeded {
            new_state: Some(state),
            suspend,
        } = &mut decision
            && state.limit_exceeded.as_ref().map(|l| l.action)
                == Some(LimitAction::DeactivateWorkload)
        {
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
                fallback = true;
                *suspend = true;
                if let Some(limit) = state.limit_exceeded.as_mut() {
                    limit.action = LimitAction::Suspend;
                }
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
                tracing::debug!(job = %job_key.name, "recovery state write conflicted; re-reading");
                continue;
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
        return Ok(EpisodeStart::Decided {
            decision,
            job: job_ref,
        });
    }
    Err(JobStateError::Conflict {
        namespace: job_key.namespace.clone(),
        name: job_key.name.clone(),
        attempts: MAX_CONFLICT_ATTEMPTS,
    })
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
pub fn read_state(job: &Job) -> Option<RecoveryState> {
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
pub fn state_patch(resource_version: &str, state: &RecoveryState, suspend: bool) -> Value {
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
pub enum EventKind {
    Episode,
    LimitExceeded(LimitAction),
}

/// Type, reason and action of a Job event, with its note.
pub fn job_event_text(kind: EventKind, note: &str) -> EventText<'_> {
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
pub fn pod_job(meta: &ObjectMeta) -> Option<JobKey> {
    let namespace = meta.namespace.as_deref()?;
    crate::recovery::episode::job_owner(namespace, meta.owner_references.as_deref()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconciler::lease::Leadership;
    use crate::reconciler::metrics::RecoveryMetrics;
    use crate::reconciler::scripted::{Exchange, exchange, mock, serve};
    use crate::recovery::backoff::Backoff;
    use crate::recovery::episode::LimitExceeded;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn writer(client: Client, dry_run: bool) -> Writer {
        Writer::new(
            client,
            Leadership::always(),
            dry_run,
            "jobgate-7d9f-abcde".into(),
            RecoveryMetrics::default(),
        )
    }

    fn key() -> JobKey {
        JobKey {
            namespace: "team-a".into(),
            name: "train".into(),
            uid: "uid-train".into(),
        }
    }

    fn due() -> Vec<DuePod> {
        vec![
            DuePod {
                namespace: "team-a".into(),
                name: "train-0-abc".into(),
                node: "node-a".into(),
                deadline: ts("2026-11-21T19:39:00Z"),
            },
            DuePod {
                namespace: "team-a".into(),
                name: "train-1-def".into(),
                node: "node-a".into(),
                deadline: ts("2026-11-21T19:39:30Z"),
            },
        ]
    }

    fn job_json(rv: &str, state: Option<&RecoveryState>, suspend: bool) -> Value {
        let mut annotations = serde_json::Map::new();
        if let Some(state) = state {
            annotations.insert(
                RECOVERY_STATE_ANNOTATION.into(),
                Value::String(state.to_annotation()),
            );
        }
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "train", "namespace": "team-a", "uid": "uid-train",
                "resourceVersion": rv, "annotations": annotations,
            },
            "spec": {"suspend": suspend, "template": {"spec": {"containers": []}}},
        })
    }

    fn status(code: u16, reason: &str) -> Value {
        json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": format!("{reason} for test"), "reason": reason, "code": code,
        })
    }

    fn get_job(response: Value) -> Exchange {
        exchange(
            "GET",
            "/apis/batch/v1/namespaces/team-a/jobs/train?",
            200,
            response,
        )
    }

    /// A merge patch of the Job with jobgate's field manager; `body` is compared unless `Null`.
    fn patch_job(body: Value, status: u16, response: Value) -> Exchange {
        exchange(
            "PATCH",
            "/apis/batch/v1/namespaces/team-a/jobs/train?&fieldManager=jobgate-reconciler",
            status,
            response,
        )
        .checking(move |_, content_type, actual| {
            assert_eq!(content_type, Some("application/merge-patch+json"));
            if !body.is_null() {
                assert_eq!(actual, &body);
            }
        })
    }

    fn post_event(body: Value) -> Exchange {
        exchange(
            "POST",
            "/apis/events.k8s.io/v1/namespaces/team-a/events?",
            201,
            body.clone(),
        )
        .with_body(body)
    }

    /// An event creation whose body another test checks.
    fn any_event(status_code: u16) -> Exchange {
        let response = if status_code == 201 {
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                   "metadata": {"name": "e", "namespace": "team-a"}})
        } else {
            status(status_code, "Forbidden")
        };
        exchange(
            "POST",
            "/apis/events.k8s.io/v1/namespaces/team-a/events?",
            status_code,
            response,
        )
    }

    /// The annotation is the durable record: a failed event creation is logged, and the episode
    /// goes on (a retry would not post it again anyway).
    #[tokio::test]
    async fn a_failed_event_does_not_fail_the_episode() {
        let start = run(
            vec![
                get_job(job_json("100", None, false)),
                patch_job(Value::Null, 200, job_json("101", None, false)),
                any_event(403),
            ],
            EpisodeConfig::default(),
            ts("2026-11-21T19:40:00Z"),
        )
        .await
        .unwrap();
        assert!(matches!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::Recover { .. },
                ..
            }
        ));
    }

    async fn run(
        script: Vec<Exchange>,
        config: EpisodeConfig,
        now: Timestamp,
    ) -> Result<EpisodeStart, JobStateError> {
        let (client, handle) = mock();
        let server = tokio::spawn(serve(handle, script));
        let writer = writer(client.clone(), false);
        let result = begin_episode(&client, &writer, &key(), &due(), &config, now, 0.0).await;
        tokio::time::timeout(std::time::Duration::from_secs(5), server)
            .await
            .expect("script not finished")
            .expect("script assertions");
        result
    }

    fn first_state() -> RecoveryState {
        RecoveryState {
            count: 1,
            requeue_at: Some(ts("2026-11-21T19:41:00Z")),
            last_recovery_time: Some(ts("2026-11-21T19:40:00Z")),
            last_nodes: vec!["node-a".into()],
            limit_exceeded: None,
        }
    }

    fn job_ref() -> ObjectReference {
        ObjectReference {
            api_version: Some("batch/v1".into()),
            kind: Some("Job".into()),
            name: Some("train".into()),
            namespace: Some("team-a".into()),
            uid: Some("uid-train".into()),
            ..Default::default()
        }
    }

    /// README "Recovery backoff and limit per Job": the state is "written with optimistic concurrency": a merge patch carrying the
    /// resourceVersion that was read; then "a Normal event on the Job per episode naming the pods
    /// and nodes".
    #[tokio::test]
    async fn first_episode_writes_the_state_then_posts_a_normal_event_naming_pods_and_nodes() {
        let now = ts("2026-11-21T19:40:00.250Z");
        let expected_patch = json!({"metadata": {
            "resourceVersion": "100",
            "annotations": {RECOVERY_STATE_ANNOTATION: first_state().to_annotation()},
        }});
        let start = run(
            vec![
                get_job(job_json("100", None, false)),
                patch_job(
                    expected_patch,
                    200,
                    job_json("101", Some(&first_state()), false),
                ),
                post_event(json!({
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": {"name": "train.18ea26be4db65280", "namespace": "team-a"},
                    "eventTime": "2026-11-21T19:40:00.250000Z",
                    "type": "Normal",
                    "reason": "RecoveryEpisode",
                    "action": "ForcefulTermination",
                    "note": "Recovery episode 1: forcefully terminating 2 pod(s) on unreachable \
                             node(s) node-a: train-0-abc, train-1-def; next episode not before \
                             2026-11-21T19:41:00Z",
                    "regarding": {
                        "apiVersion": "batch/v1", "kind": "Job", "name": "train",
                        "namespace": "team-a", "uid": "uid-train",
                    },
                    "reportingController": "jobgate.dev/reconciler",
                    "reportingInstance": "jobgate-7d9f-abcde",
                })),
            ],
            EpisodeConfig::default(),
            now,
        )
        .await
        .unwrap();
        assert_eq!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::Recover {
                    pods: due(),
                    new_state: first_state(),
                    reset: false,
                },
                job: job_ref(),
            }
        );
    }

    /// KEP-6757 and KEP-1282: "Conflict ... retry; never act on stale data": on 409 the Job is re-read and the
    /// episode decided again from the fresh state; here another writer recorded an episode (on
    /// another node), so the pods now wait for its requeueAt and nothing is written.
    #[tokio::test]
    async fn conflict_rereads_the_job_and_decides_again_from_fresh_state() {
        let now = ts("2026-11-21T19:40:30Z");
        let theirs = RecoveryState {
            last_nodes: vec!["node-b".into()],
            ..first_state()
        };
        let mut mine = first_state();
        mine.last_recovery_time = Some(ts("2026-11-21T19:40:30Z"));
        mine.requeue_at = Some(ts("2026-11-21T19:41:30Z"));
        let attempted = json!({"metadata": {
            "resourceVersion": "100",
            "annotations": {RECOVERY_STATE_ANNOTATION: mine.to_annotation()},
        }});
        let start = run(
            vec![
                get_job(job_json("100", None, false)),
                patch_job(attempted, 409, status(409, "Conflict")),
                get_job(job_json("101", Some(&theirs), false)),
            ],
            EpisodeConfig::default(),
            now,
        )
        .await
        .unwrap();
        assert_eq!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::WaitUntil(ts("2026-11-21T19:41:00Z")),
                job: job_ref(),
            }
        );
    }

    #[tokio::test]
    async fn conflict_then_success_writes_against_the_new_resource_version() {
        let now = ts("2026-11-21T19:40:00Z");
        let patch_at = |rv: &str| {
            json!({"metadata": {
                "resourceVersion": rv,
                "annotations": {RECOVERY_STATE_ANNOTATION: first_state().to_annotation()},
            }})
        };
        let start = run(
            vec![
                get_job(job_json("100", None, false)),
                patch_job(patch_at("100"), 409, status(409, "Conflict")),
                get_job(job_json("105", None, false)),
                patch_job(
                    patch_at("105"),
                    200,
                    job_json("106", Some(&first_state()), false),
                ),
                any_event(201),
            ],
            EpisodeConfig::default(),
            now,
        )
        .await
        .unwrap();
        assert!(matches!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::Recover { .. },
                ..
            }
        ));
    }

    #[tokio::test]
    async fn endless_conflicts_give_up_after_max_attempts() {
        let now = ts("2026-11-21T19:40:00Z");
        let mut script = vec![];
        for _ in 0..MAX_CONFLICT_ATTEMPTS {
            script.push(get_job(job_json("100", None, false)));
            script.push(patch_job(Value::Null, 409, status(409, "Conflict")));
        }
        let err = run(script, EpisodeConfig::default(), now)
            .await
            .unwrap_err();
        assert!(
            matches!(err, JobStateError::Conflict { attempts, .. } if attempts == MAX_CONFLICT_ATTEMPTS),
            "{err}"
        );
    }

    /// README "Recovery backoff and limit per Job": "with --on-recovery-limit=suspend also sets spec.suspend: true" and "emits
    /// Warning RecoveryLimitExceeded on the Job" (after the write succeeded).
    #[tokio::test]
    async fn limit_with_suspend_patches_state_and_spec_suspend_then_posts_the_warning() {
        let now = ts("2026-11-21T19:45:00Z");
        let config = EpisodeConfig {
            backoff: Backoff::default(),
            limit_count: Some(1),
            on_limit: LimitAction::Suspend,
        };
        let recorded = RecoveryState {
            limit_exceeded: Some(LimitExceeded {
                time: now,
                action: LimitAction::Suspend,
            }),
            ..first_state()
        };
        let expected_patch = json!({
            "metadata": {
                "resourceVersion": "200",
                "annotations": {RECOVERY_STATE_ANNOTATION: recorded.to_annotation()},
            },
            "spec": {"suspend": true},
        });
        let expected_event = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "train.18ea270418345800", "namespace": "team-a"},
            "eventTime": "2026-11-21T19:45:00.000000Z",
            "type": "Warning",
            "reason": "RecoveryLimitExceeded",
            "action": "SuspendJob",
            "note": limit_note(&due(), 1, LimitAction::Suspend),
            "regarding": {
                "apiVersion": "batch/v1", "kind": "Job", "name": "train",
                "namespace": "team-a", "uid": "uid-train",
            },
            "reportingController": "jobgate.dev/reconciler",
            "reportingInstance": "jobgate-7d9f-abcde",
        });
        let start = run(
            vec![
                get_job(job_json("200", Some(&first_state()), false)),
                patch_job(expected_patch, 200, job_json("201", Some(&recorded), true)),
                post_event(expected_event),
            ],
            config,
            now,
        )
        .await
        .unwrap();
        assert_eq!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::LimitExceeded {
                    suspend: true,
                    new_state: Some(recorded),
                },
                job: job_ref(),
            }
        );
    }

    /// The Workload list at `version`, selected by the Job's UID label.
    fn workload_list_at(version: &str, status: u16, body: Value) -> Exchange {
        exchange(
            "GET",
            &format!(
                "/apis/kueue.x-k8s.io/{version}/namespaces/team-a/workloads?&labelSelector=kueue.x-k8s.io%2Fjob-uid%3Duid-train"
            ),
            status,
            body,
        )
    }

    fn workload_list(items: Vec<Value>) -> Exchange {
        workload_list_at(
            "v1beta2",
            200,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadList",
                   "metadata": {}, "items": items}),
        )
    }

    fn workload(name: &str, owner_uid: &str) -> Value {
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "team-a", "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": owner_uid,
                "controller": true}]},
            "spec": {"active": true},
        })
    }

    fn deactivate_config() -> EpisodeConfig {
        EpisodeConfig {
            backoff: Backoff::default(),
            limit_count: Some(1),
            on_limit: LimitAction::DeactivateWorkload,
        }
    }

    /// `--on-recovery-limit=deactivate-workload`: Kueue unsuspends an admitted Job
    /// (jobframework), so the limit deactivates the Job's Workload (the one whose controller
    /// reference is the Job, as Kueue links them), `spec.active: false` as Kueue does at its own
    /// requeuing limit; then the state is recorded (no `spec.suspend`) and the Warning posted.
    #[tokio::test]
    async fn limit_with_deactivate_workload_deactivates_the_jobs_workload() {
        let now = ts("2026-11-21T19:45:00Z");
        let recorded = RecoveryState {
            limit_exceeded: Some(LimitExceeded {
                time: now,
                action: LimitAction::DeactivateWorkload,
            }),
            ..first_state()
        };
        let expected_state = json!({"metadata": {
            "resourceVersion": "200",
            "annotations": {RECOVERY_STATE_ANNOTATION: recorded.to_annotation()},
        }});
        let start = run(
            vec![
                get_job(job_json("200", Some(&first_state()), false)),
                workload_list(vec![
                    workload("other-job-wl", "uid-other"),
                    workload("job-train-1a2b3", "uid-train"),
                ]),
                exchange(
                    "PATCH",
                    "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/job-train-1a2b3?&fieldManager=jobgate-reconciler",
                    200,
                    workload("job-train-1a2b3", "uid-train"),
                )
                .checking(|_, content_type, body| {
                    assert_eq!(content_type, Some("application/merge-patch+json"));
                    assert_eq!(body, &json!({"spec": {"active": false}}));
                }),
                patch_job(expected_state, 200, job_json("201", Some(&recorded), false)),
                any_event(201).checking(|_, _, body| {
                    assert_eq!(body["type"], "Warning");
                    assert_eq!(body["reason"], "RecoveryLimitExceeded");
                    assert_eq!(body["action"], "DeactivateWorkload");
                    assert!(
                        body["note"]
                            .as_str()
                            .is_some_and(|n| n.contains("deactivated the Job's Kueue Workload")),
                        "{body}"
                    );
                }),
            ],
            deactivate_config(),
            now,
        )
        .await
        .unwrap();
        assert!(matches!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::LimitExceeded {
                    suspend: false,
                    new_state: Some(_)
                },
                ..
            }
        ));
    }

    /// Without a Workload owning the Job (not Kueue-managed, or Kueue not installed: 404),
    /// deactivate-workload falls back to suspend, and the Warning says so.
    #[tokio::test]
    async fn deactivate_workload_without_a_workload_falls_back_to_suspend() {
        let now = ts("2026-11-21T19:45:00Z");
        let recorded = RecoveryState {
            limit_exceeded: Some(LimitExceeded {
                time: now,
                action: LimitAction::Suspend,
            }),
            ..first_state()
        };
        let not_served = || status(404, "NotFound");
        for listing in [
            // A label match whose controller is another Job is not this Job's Workload.
            vec![workload_list(vec![workload("other-job-wl", "uid-other")])],
            // No Kueue: neither API version is served.
            vec![
                workload_list_at("v1beta2", 404, not_served()),
                workload_list_at("v1beta1", 404, not_served()),
            ],
        ] {
            let expected = json!({
                "metadata": {
                    "resourceVersion": "200",
                    "annotations": {RECOVERY_STATE_ANNOTATION: recorded.to_annotation()},
                },
                "spec": {"suspend": true},
            });
            let start = run(
                [
                    vec![get_job(job_json("200", Some(&first_state()), false))],
                    listing,
                    vec![
                        patch_job(expected, 200, job_json("201", Some(&recorded), true)),
                        any_event(201).checking(|_, _, body| {
                            assert_eq!(body["action"], "SuspendJob");
                            assert!(
                                body["note"].as_str().is_some_and(|n| n.starts_with(
                                    "No Kueue Workload owns this Job: \
                                 --on-recovery-limit=deactivate-workload fell back to suspend."
                                )),
                                "{body}"
                            );
                        }),
                    ],
                ]
                .into_iter()
                .flatten()
                .collect(),
                deactivate_config(),
                now,
            )
            .await
            .unwrap();
            assert!(matches!(
                start,
                EpisodeStart::Decided {
                    decision: EpisodeDecision::LimitExceeded { suspend: true, .. },
                    ..
                }
            ));
        }
    }

    /// A Kueue older than 0.15 serves only `v1beta1`: the Workload is found and deactivated
    /// there.
    #[tokio::test]
    async fn deactivate_workload_on_a_kueue_that_serves_only_v1beta1() {
        let now = ts("2026-11-21T19:45:00Z");
        let recorded = RecoveryState {
            limit_exceeded: Some(LimitExceeded {
                time: now,
                action: LimitAction::DeactivateWorkload,
            }),
            ..first_state()
        };
        let expected_state = json!({"metadata": {
            "resourceVersion": "200",
            "annotations": {RECOVERY_STATE_ANNOTATION: recorded.to_annotation()},
        }});
        let mut old_workload = workload("job-train-1a2b3", "uid-train");
        old_workload["apiVersion"] = json!("kueue.x-k8s.io/v1beta1");
        run(
            vec![
                get_job(job_json("200", Some(&first_state()), false)),
                workload_list_at("v1beta2", 404, status(404, "NotFound")),
                workload_list_at(
                    "v1beta1",
                    200,
                    json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "WorkloadList",
                           "metadata": {}, "items": [old_workload.clone()]}),
                ),
                exchange(
                    "PATCH",
                    "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads/job-train-1a2b3?&fieldManager=jobgate-reconciler",
                    200,
                    old_workload,
                )
                .with_body(json!({"spec": {"active": false}})),
                patch_job(expected_state, 200, job_json("201", Some(&recorded), false)),
                any_event(201),
            ],
            deactivate_config(),
            now,
        )
        .await
        .unwrap();
    }

    /// Already recorded: no write, no second Warning.
    #[tokio::test]
    async fn limit_already_recorded_neither_writes_nor_posts_again() {
        let now = ts("2026-11-21T19:50:00Z");
        let config = EpisodeConfig {
            limit_count: Some(1),
            ..EpisodeConfig::default()
        };
        let recorded = RecoveryState {
            limit_exceeded: Some(LimitExceeded {
                time: ts("2026-11-21T19:45:00Z"),
                action: LimitAction::Stop,
            }),
            ..first_state()
        };
        let start = run(
            vec![get_job(job_json("300", Some(&recorded), false))],
            config,
            now,
        )
        .await
        .unwrap();
        assert!(matches!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::LimitExceeded {
                    suspend: false,
                    new_state: None
                },
                ..
            }
        ));
    }

    /// A retry after a failed pod recovery reads the Job, recognises the leftovers of the
    /// recorded episode and writes nothing.
    #[tokio::test]
    async fn leftovers_of_the_recorded_episode_are_continued_without_a_write() {
        let start = run(
            vec![get_job(job_json("101", Some(&first_state()), false))],
            EpisodeConfig::default(),
            ts("2026-11-21T19:40:10Z"),
        )
        .await
        .unwrap();
        assert_eq!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::Continue {
                    pods: due(),
                    others_wait_until: None,
                },
                job: job_ref(),
            }
        );
    }

    /// `--dry-run` changes nothing: one GET, no patch, no event, even at the limit; the writer
    /// is where dry run is honoured.
    #[tokio::test]
    async fn dry_run_reads_the_job_and_writes_nothing() {
        let (client, handle) = mock();
        let server = tokio::spawn(serve(
            handle,
            vec![get_job(job_json("100", Some(&first_state()), false))],
        ));
        let config = EpisodeConfig {
            limit_count: Some(1),
            on_limit: LimitAction::Suspend,
            ..EpisodeConfig::default()
        };
        let start = begin_episode(
            &client,
            &writer(client.clone(), true),
            &key(),
            &due(),
            &config,
            ts("2026-11-21T19:45:00Z"),
            0.0,
        )
        .await
        .unwrap();
        server.await.unwrap();
        assert!(matches!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::LimitExceeded {
                    suspend: true,
                    new_state: Some(_)
                },
                ..
            }
        ));
    }

    #[tokio::test]
    async fn a_missing_job_means_recover_without_state() {
        let start = run(
            vec![exchange(
                "GET",
                "/apis/batch/v1/namespaces/team-a/jobs/train?",
                404,
                status(404, "NotFound"),
            )],
            EpisodeConfig::default(),
            ts("2026-11-21T19:40:00Z"),
        )
        .await
        .unwrap();
        assert_eq!(start, EpisodeStart::JobGone);
    }

    #[tokio::test]
    async fn a_recreated_job_with_another_uid_means_recover_without_state() {
        let mut other = job_json("1", None, false);
        other["metadata"]["uid"] = json!("uid-new");
        let start = run(
            vec![get_job(other)],
            EpisodeConfig::default(),
            ts("2026-11-21T19:40:00Z"),
        )
        .await
        .unwrap();
        assert_eq!(start, EpisodeStart::JobGone);
    }

    #[tokio::test]
    async fn other_api_errors_are_returned_without_retry() {
        let err = run(
            vec![
                get_job(job_json("100", None, false)),
                patch_job(Value::Null, 500, status(500, "InternalError")),
            ],
            EpisodeConfig::default(),
            ts("2026-11-21T19:40:00Z"),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, JobStateError::Api(_)), "{err}");
    }

    /// An unreadable annotation counts as removed and is overwritten with a valid state.
    #[tokio::test]
    async fn an_unreadable_annotation_counts_as_removed() {
        let mut garbage = job_json("100", None, false);
        garbage["metadata"]["annotations"][RECOVERY_STATE_ANNOTATION] = json!("{oops");
        let expected_patch = json!({"metadata": {
            "resourceVersion": "100",
            "annotations": {RECOVERY_STATE_ANNOTATION: first_state().to_annotation()},
        }});
        let start = run(
            vec![
                get_job(garbage),
                patch_job(expected_patch, 200, job_json("101", None, false)),
                any_event(201),
            ],
            EpisodeConfig::default(),
            ts("2026-11-21T19:40:00Z"),
        )
        .await
        .unwrap();
        assert!(matches!(
            start,
            EpisodeStart::Decided {
                decision: EpisodeDecision::Recover { .. },
                ..
            }
        ));
    }

    /// The Job events go through the same builder as the pod events: a 200-byte identity
    /// (a long pod name plus the suffix) is cut to events.k8s.io's 128-byte `reportingInstance`
    /// instead of making every Job event fail validation.
    #[tokio::test]
    async fn a_long_identity_is_cut_to_128_bytes_on_job_events() {
        let (client, handle) = mock();
        let script = vec![
            get_job(job_json("100", None, false)),
            patch_job(Value::Null, 200, job_json("101", None, false)),
            any_event(201).checking(|_, _, body| {
                assert_eq!(body["reportingInstance"], json!("i".repeat(128)));
                assert_eq!(body["regarding"]["kind"], "Job");
            }),
        ];
        let server = tokio::spawn(serve(handle, script));
        let writer = Writer::new(
            client.clone(),
            Leadership::always(),
            false,
            "i".repeat(200),
            RecoveryMetrics::default(),
        );
        let start = begin_episode(
            &client,
            &writer,
            &key(),
            &due(),
            &EpisodeConfig::default(),
            ts("2026-11-21T19:40:00Z"),
            0.0,
        )
        .await
        .unwrap();
        server.await.unwrap();
        assert!(matches!(start, EpisodeStart::Decided { .. }));
    }

    #[test]
    fn state_patch_without_suspend_touches_only_metadata() {
        let patch = state_patch("7", &RecoveryState::default(), false);
        assert_eq!(
            patch,
            json!({"metadata": {"resourceVersion": "7", "annotations": {
                RECOVERY_STATE_ANNOTATION: r#"{"count":0,"lastNodes":[]}"#}}})
        );
    }
}
