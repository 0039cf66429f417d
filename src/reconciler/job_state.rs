//! The Job side of recovery episodes: read the Job's `jobgate.dev/recovery-state` annotation, ask
//! [`decide_episode`] what to do, record the new state with optimistic concurrency (and
//! `spec.suspend: true` when the limit says so), and post the Job's events.
//!
//! # How the pod reconciler uses this (issue 5 + issue 6)
//!
//! In `reconciler::reconcile_pod`, arm `Decision::Recover(recovery)`, after the fresh node read
//! confirmed the taint and before `recover_pod` (with `now` as read for the decision):
//!
//! ```text
//! match pod_job(&pod.metadata) {
//!     None => recover_pod(..)                                  // no Job: no state
//!     Some(job) => {
//!         let mut due = due_pods_of_job(&job, <KnownPod per pod of ctx's store: metadata,
//!             tracked node, node cache says unreachable>, ctx.config.grace_period, now);
//!         due.push(DuePod { <this pod>, node: recovery.node, deadline: recovery.deadline });
//!         let start = if dry_run { peek_episode(..) } else {
//!             begin_episode(&client, &reporter, &job, &due, &ctx.episode, now, rand::random())
//!         }.await?;
//!         match start {
//!             JobGone => recover_pod(..),                      // orphan: no state
//!             Decided { decision: Recover { pods, .. }, .. } =>
//!                 { trigger the other `pods` (their own reconciles find Continue);
//!                   recover_pod(this pod) }
//!             Decided { decision: Continue { pods, others_wait_until }, .. } =>
//!                 if pods contains this pod { recover_pod(..) }
//!                 else { Action::requeue(until(others_wait_until)) }
//!             Decided { decision: WaitUntil(t), .. } => Action::requeue(until(t, now)),
//!             Decided { decision: LimitExceeded { .. }, .. } =>
//!                 Action::requeue(WAIT_FOR_NODE_RESYNC),      // no Job watch: notice a reset
//!             Decided { decision: NothingDue, .. } => unreachable: `due` holds this pod
//!         }
//!     }
//! }
//! ```
//!
//! Concurrent reconciles of sibling pods are safe: all but one lose the state write with 409,
//! re-read, and find their pod a leftover of the episode just recorded (`Continue`), so the
//! episode is counted and announced once. The events are posted here, after the write that made
//! them true; a failed event is logged, not retried.
//!
//! A 409 Conflict on the state write means someone else changed the Job: re-read it and decide
//! again (never act on stale data). Other API errors are returned for the caller's retry policy.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::recovery::episode::{
    DuePod, EPISODE_REASON, EpisodeConfig, EpisodeDecision, JobKey, JobView, LIMIT_EXCEEDED_REASON,
    LimitAction, RECOVERY_STATE_ANNOTATION, RecoveryState, decide_episode, episode_note,
    limit_note,
};

/// `reportingController` of every event jobgate's reconciler posts.
pub const REPORTING_CONTROLLER: &str = "jobgate.dev/reconciler";
/// `fieldManager` of jobgate's Job patches (visible in `managedFields`).
pub const FIELD_MANAGER: &str = "jobgate-reconciler";
/// `action` of the episode event (the same action as the pod events).
pub const EPISODE_ACTION: &str = "ForcefulTermination";
/// `action` of the limit event.
pub const LIMIT_ACTION_STOP: &str = "StopRecovery";
pub const LIMIT_ACTION_SUSPEND: &str = "SuspendJob";
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

/// Who posts events: `reportingController` is always [`REPORTING_CONTROLLER`]; `instance` is this
/// replica (the pod name), `reportingInstance`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reporter {
    pub instance: String,
}

/// The outcome of [`begin_episode`].
// Returned once per episode; boxing the reference would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EpisodeStart {
    /// The Job is gone, or a new Job with the same name has another uid: the pods are orphans,
    /// recover them without state.
    JobGone,
    /// The decision, already recorded on the Job when it needed a write (Recover and the first
    /// LimitExceeded). `job` refers to the Job for the events.
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
    reporter: &Reporter,
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
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        match jobs
            .patch(&job_key.name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
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
            } => Some(job_event(
                &job_ref,
                reporter,
                EventKind::Episode,
                episode_note(pods, new_state),
                now,
            )),
            EpisodeDecision::LimitExceeded { suspend, .. } => {
                let action = if *suspend {
                    LimitAction::Suspend
                } else {
                    LimitAction::Stop
                };
                Some(job_event(
                    &job_ref,
                    reporter,
                    EventKind::LimitExceeded(action),
                    limit_note(due, config.limit_count.unwrap_or(0), action),
                    now,
                ))
            }
            _ => None,
        };
        if let Some(event) = event {
            post_event(client, &event).await;
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

/// `--dry-run`: what [`begin_episode`] would decide, without writing anything (no state, no
/// `spec.suspend`, no event).
pub async fn peek_episode(
    client: &Client,
    job_key: &JobKey,
    due: &[DuePod],
    config: &EpisodeConfig,
    now: Timestamp,
    jitter: f64,
) -> Result<EpisodeStart, JobStateError> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), &job_key.namespace);
    Ok(
        match read_and_decide(&jobs, job_key, due, config, now, jitter).await? {
            None => EpisodeStart::JobGone,
            Some((job, decision)) => EpisodeStart::Decided {
                decision,
                job: job_reference(&job, job_key),
            },
        },
    )
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

/// Creates an event. A failure is logged, not returned: the annotation is the durable record,
/// and retrying the episode would not post it again.
async fn post_event(client: &Client, event: &Event) {
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    if let Err(err) = events.create(&PostParams::default(), event).await {
        tracing::warn!(
            namespace,
            job = event.regarding.as_ref().and_then(|r| r.name.as_deref()).unwrap_or(""),
            reason = event.reason.as_deref().unwrap_or(""),
            error = %err,
            "could not create event"
        );
    }
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

/// An `events.k8s.io/v1` Event regarding `job`, named like client-go's recorder
/// (`<name>.<hex unix nanos>`).
pub fn job_event(
    job: &ObjectReference,
    reporter: &Reporter,
    kind: EventKind,
    note: String,
    now: Timestamp,
) -> Event {
    let (type_, reason, action) = match kind {
        EventKind::Episode => ("Normal", EPISODE_REASON, EPISODE_ACTION),
        EventKind::LimitExceeded(LimitAction::Stop) => {
            ("Warning", LIMIT_EXCEEDED_REASON, LIMIT_ACTION_STOP)
        }
        EventKind::LimitExceeded(LimitAction::Suspend) => {
            ("Warning", LIMIT_EXCEEDED_REASON, LIMIT_ACTION_SUSPEND)
        }
    };
    let name = job.name.as_deref().unwrap_or("job");
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            namespace: job.namespace.clone(),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        type_: Some(type_.to_string()),
        reason: Some(reason.to_string()),
        action: Some(action.to_string()),
        note: Some(note),
        regarding: Some(job.clone()),
        reporting_controller: Some(REPORTING_CONTROLLER.to_string()),
        reporting_instance: Some(reporter.instance.clone()),
        ..Event::default()
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
    use crate::reconciler::test_api::{Exchange, serve};
    use crate::recovery::backoff::Backoff;
    use crate::recovery::episode::LimitExceeded;
    use hyper::{Method, Request, Response};
    use kube::client::Body;
    use tower_test::mock::pair;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn reporter() -> Reporter {
        Reporter {
            instance: "jobgate-7d9f-abcde".into(),
        }
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
        Exchange {
            method: Method::GET,
            path_and_query: "/apis/batch/v1/namespaces/team-a/jobs/train",
            body: None,
            status: 200,
            response,
        }
    }

    fn patch_job(body: Value, status: u16, response: Value) -> Exchange {
        Exchange {
            method: Method::PATCH,
            path_and_query: "/apis/batch/v1/namespaces/team-a/jobs/train?&fieldManager=jobgate-reconciler",
            body: Some(body),
            status,
            response,
        }
    }

    fn post_event(body: Value) -> Exchange {
        Exchange {
            method: Method::POST,
            path_and_query: "/apis/events.k8s.io/v1/namespaces/team-a/events?",
            response: body.clone(),
            body: Some(body),
            status: 201,
        }
    }

    /// An event creation whose body another test checks.
    fn any_event(status_code: u16) -> Exchange {
        Exchange {
            body: None,
            status: status_code,
            response: if status_code == 201 {
                json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                       "metadata": {"name": "e", "namespace": "team-a"}})
            } else {
                status(status_code, "Forbidden")
            },
            ..post_event(Value::Null)
        }
    }

    /// The annotation is the durable record: a failed event creation is logged, and the episode
    /// goes on (a retry would not post it again anyway).
    #[tokio::test]
    async fn a_failed_event_does_not_fail_the_episode() {
        let start = run(
            vec![
                get_job(job_json("100", None, false)),
                Exchange {
                    body: None,
                    ..patch_job(Value::Null, 200, job_json("101", None, false))
                },
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
        let (service, handle) = pair::<Request<Body>, Response<Body>>();
        let server = serve(handle, script);
        let client = Client::new(service, "default");
        let result = begin_episode(&client, &reporter(), &key(), &due(), &config, now, 0.0).await;
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

    /// Issue 6: the state is "written with optimistic concurrency": a merge patch carrying the
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

    /// Issue 5/6: "Conflict ... retry; never act on stale data": on 409 the Job is re-read and the
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
            script.push(Exchange {
                body: None,
                ..patch_job(Value::Null, 409, status(409, "Conflict"))
            });
        }
        let err = run(script, EpisodeConfig::default(), now)
            .await
            .unwrap_err();
        assert!(
            matches!(err, JobStateError::Conflict { attempts, .. } if attempts == MAX_CONFLICT_ATTEMPTS),
            "{err}"
        );
    }

    /// Issue 6: "with --on-recovery-limit=suspend also sets spec.suspend: true" and "emits
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

    /// `--dry-run` changes nothing: one GET, no patch, no event, even at the limit.
    #[tokio::test]
    async fn dry_run_peek_reads_the_job_and_writes_nothing() {
        let (service, handle) = pair::<Request<Body>, Response<Body>>();
        let server = serve(
            handle,
            vec![get_job(job_json("100", Some(&first_state()), false))],
        );
        let client = Client::new(service, "default");
        let config = EpisodeConfig {
            limit_count: Some(1),
            on_limit: LimitAction::Suspend,
            ..EpisodeConfig::default()
        };
        let start = peek_episode(
            &client,
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
            vec![Exchange {
                status: 404,
                response: status(404, "NotFound"),
                ..get_job(Value::Null)
            }],
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
                Exchange {
                    body: None,
                    ..patch_job(Value::Null, 500, status(500, "InternalError"))
                },
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
