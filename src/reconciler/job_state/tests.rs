use super::*;
use crate::reconciler::metrics::RecoveryMetrics;
use crate::recovery::backoff::Backoff;
use crate::recovery::episode::{DuePod, EpisodeConfig, JobDue, LimitExceeded, limit_note};
use crate::recovery::plan::{JobFacts, JobPlan, plan_job};
use crate::runtime::Leadership;
use crate::runtime::scripted::{Exchange, exchange, mock, serve};

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
            deletion_asked: ts("2026-11-21T19:38:00Z"),
        },
        DuePod {
            namespace: "team-a".into(),
            name: "train-1-def".into(),
            node: "node-a".into(),
            deadline: ts("2026-11-21T19:39:30Z"),
            deletion_asked: ts("2026-11-21T19:38:30Z"),
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
    let (plan, recorded) = run(
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
    assert!(matches!(plan, JobPlan::Start(_)), "{plan:?}");
    assert_eq!(recorded, Some(Recorded::Written));
}

/// The Job's step as a reconcile takes it: read the Job, plan the step over the Job's due pods
/// (the first of `due()` at hand), write what the plan records.
async fn step(
    client: &Client,
    writer: &Writer,
    config: EpisodeConfig,
    now: Timestamp,
) -> Result<(JobPlan, Option<Recorded>), JobStateError> {
    let read = read_job(client, &key()).await?;
    let due = JobDue::new(due()[0].clone(), due());
    let facts = JobFacts {
        job: read.as_ref().map(ReadJob::view),
        due: &due,
        now,
        jitter: 0.0,
    };
    let plan = plan_job(facts, &config);
    let recorded = match plan.record() {
        Some(r) => Some(record(client, writer, &key(), r, now).await?),
        None => None,
    };
    Ok((plan, recorded))
}

async fn run(
    script: Vec<Exchange>,
    config: EpisodeConfig,
    now: Timestamp,
) -> Result<(JobPlan, Option<Recorded>), JobStateError> {
    let (client, handle) = mock();
    let server = tokio::spawn(serve(handle, script));
    let writer = writer(client.clone(), false);
    let result = step(&client, &writer, config, now).await;
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

/// docs/src/recovery-backoff.md: the state is "written with optimistic concurrency": a merge patch carrying the
/// resourceVersion that was read; then "a Normal event on the Job per episode naming the pods
/// and nodes".
#[tokio::test]
async fn first_episode_writes_the_state_then_posts_a_normal_event_naming_pods_and_nodes() {
    let now = ts("2026-11-21T19:40:00.250Z");
    let expected_patch = json!({"metadata": {
        "resourceVersion": "100",
        "annotations": {RECOVERY_STATE_ANNOTATION: first_state().to_annotation()},
    }});
    let step = run(
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
                "metadata": {"name": "train.18ea26be4db652b8", "namespace": "team-a"},
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
        step,
        (
            JobPlan::Start(JobRecord {
                resource_version: Some("100".into()),
                state: first_state(),
                suspend: false,
                deactivate_workload: false,
                event: JobEvent::Episode,
                pods: due(),
            }),
            Some(Recorded::Written)
        )
    );
}

/// KEP-6757 and KEP-1282: "Conflict ... retry; never act on stale data": a 409 on the state
/// write ends the step with a conflict (nothing more is written or posted, no retry here: the
/// reconcile's error policy reads again); the next pass decides again from the fresh
/// state. Here another writer recorded episode 3, for a failure before these pods were deleted
/// (on another node, its backoff 240 s), so the pods now wait for its requeueAt and nothing is
/// written.
#[tokio::test]
async fn conflict_ends_the_pass_and_the_next_decides_from_fresh_state() {
    let now = ts("2026-11-21T19:40:30Z");
    let theirs = RecoveryState {
        count: 3,
        last_recovery_time: Some(ts("2026-11-21T19:37:00Z")),
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
    let first = run(
        vec![
            get_job(job_json("100", None, false)),
            patch_job(attempted, 409, status(409, "Conflict")),
        ],
        EpisodeConfig::default(),
        now,
    )
    .await;
    assert!(
        matches!(first, Err(JobStateError::Conflict { .. })),
        "{first:?}"
    );
    let next = run(
        vec![get_job(job_json("101", Some(&theirs), false))],
        EpisodeConfig::default(),
        now,
    )
    .await
    .unwrap();
    assert_eq!(next, (JobPlan::Backoff(ts("2026-11-21T19:41:00Z")), None));
}

#[tokio::test]
async fn after_a_conflict_the_next_pass_writes_against_the_new_resource_version() {
    let now = ts("2026-11-21T19:40:00Z");
    let patch_at = |rv: &str| {
        json!({"metadata": {
            "resourceVersion": rv,
            "annotations": {RECOVERY_STATE_ANNOTATION: first_state().to_annotation()},
        }})
    };
    let first = run(
        vec![
            get_job(job_json("100", None, false)),
            patch_job(patch_at("100"), 409, status(409, "Conflict")),
        ],
        EpisodeConfig::default(),
        now,
    )
    .await;
    assert!(
        matches!(first, Err(JobStateError::Conflict { .. })),
        "{first:?}"
    );
    let next = run(
        vec![
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
    assert!(
        matches!(next, (JobPlan::Start(_), Some(Recorded::Written))),
        "{next:?}"
    );
}

/// docs/src/recovery-backoff.md: "with --on-recovery-limit=suspend also sets spec.suspend: true" and "emits
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
        "metadata": {"name": "train.18ea270418345884", "namespace": "team-a"},
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
    let (plan, written) = run(
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
    let Some(record) = plan.record() else {
        panic!("the limit is news: {plan:?}");
    };
    assert!(record.suspend);
    assert_eq!(record.state, recorded);
    assert_eq!(written, Some(Recorded::Written));
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
    let (plan, written) = run(
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
    assert!(
        matches!(&plan, JobPlan::Limit(Some(r)) if !r.suspend && r.deactivate_workload),
        "{plan:?}"
    );
    assert_eq!(written, Some(Recorded::Written));
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
        let (plan, written) = run(
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
        // The plan asked to deactivate; without a Workload the record suspended instead.
        assert!(
            matches!(&plan, JobPlan::Limit(Some(r)) if r.deactivate_workload),
            "{plan:?}"
        );
        assert_eq!(written, Some(Recorded::Written));
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
    let step = run(
        vec![get_job(job_json("300", Some(&recorded), false))],
        config,
        now,
    )
    .await
    .unwrap();
    assert_eq!(step, (JobPlan::Limit(None), None));
}

/// A retry after a failed pod recovery reads the Job, recognises the leftovers of the
/// recorded episode and writes nothing.
#[tokio::test]
async fn leftovers_of_the_recorded_episode_are_continued_without_a_write() {
    let step = run(
        vec![get_job(job_json("101", Some(&first_state()), false))],
        EpisodeConfig::default(),
        ts("2026-11-21T19:40:10Z"),
    )
    .await
    .unwrap();
    assert_eq!(step, (JobPlan::Leftover, None));
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
    let (plan, written) = step(
        &client,
        &writer(client.clone(), true),
        config,
        ts("2026-11-21T19:45:00Z"),
    )
    .await
    .unwrap();
    server.await.unwrap();
    assert!(
        matches!(&plan, JobPlan::Limit(Some(r)) if r.suspend),
        "{plan:?}"
    );
    assert_eq!(written, Some(Recorded::DryRun));
}

#[tokio::test]
async fn a_missing_job_means_recover_without_state() {
    let step = run(
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
    assert_eq!(step, (JobPlan::Orphan, None));
}

#[tokio::test]
async fn a_recreated_job_with_another_uid_means_recover_without_state() {
    let mut other = job_json("1", None, false);
    other["metadata"]["uid"] = json!("uid-new");
    let step = run(
        vec![get_job(other)],
        EpisodeConfig::default(),
        ts("2026-11-21T19:40:00Z"),
    )
    .await
    .unwrap();
    assert_eq!(step, (JobPlan::Orphan, None));
}

/// The Job was deleted between the read and the state write: what was planned rests on a stale
/// read, so the step ends as for a conflict (the next pass finds the pod an orphan).
#[tokio::test]
async fn a_job_deleted_after_the_read_is_a_conflict() {
    let err = run(
        vec![
            get_job(job_json("100", None, false)),
            patch_job(Value::Null, 404, status(404, "NotFound")),
        ],
        EpisodeConfig::default(),
        ts("2026-11-21T19:40:00Z"),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, JobStateError::Conflict { .. }), "{err}");
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
    let step = run(
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
    assert!(
        matches!(step, (JobPlan::Start(_), Some(Recorded::Written))),
        "{step:?}"
    );
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
    let (_, written) = step(
        &client,
        &writer,
        EpisodeConfig::default(),
        ts("2026-11-21T19:40:00Z"),
    )
    .await
    .unwrap();
    server.await.unwrap();
    assert_eq!(written, Some(Recorded::Written));
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
