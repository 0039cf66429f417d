use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn pod(name: &str, node: &str) -> DuePod {
    due_since(name, node, "2026-11-21T00:00:00Z")
}

/// A pod due since `deadline`, deleted with no grace period under a 60 s threshold: its
/// deletion was asked 60 s before.
fn due_since(name: &str, node: &str, deadline: &str) -> DuePod {
    let deadline = ts(deadline);
    DuePod {
        namespace: "ns".into(),
        name: name.into(),
        node: node.into(),
        deadline,
        deletion_asked: deadline - SignedDuration::from_secs(60),
    }
}

/// A pod whose deletion was asked at `asked`, due since `deadline`.
fn asked_at(name: &str, node: &str, asked: &str, deadline: &str) -> DuePod {
    DuePod {
        deletion_asked: ts(asked),
        ..due_since(name, node, deadline)
    }
}

fn job(name: &str) -> JobKey {
    JobKey {
        namespace: "ns".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
    }
}

fn config(limit: Option<u32>, on_limit: LimitAction) -> EpisodeConfig {
    EpisodeConfig {
        backoff: Backoff::default(),
        limit_count: limit,
        on_limit,
    }
}

fn owner(kind: &str, api_version: &str, name: &str, controller: Option<bool>) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller,
        block_owner_deletion: Some(true),
    }
}

/// The Job's due pods as the first of `pods` sees them.
fn job_due(pods: &[DuePod]) -> JobDue {
    JobDue::new(pods[0].clone(), pods.iter().skip(1).cloned())
}

fn recovered(d: EpisodeDecision) -> (Vec<DuePod>, RecoveryState, bool) {
    match d {
        EpisodeDecision::Recover {
            pods,
            new_state,
            reset,
        } => (pods, new_state, reset),
        other => panic!("expected Recover, got {other:?}"),
    }
}

// ---- state annotation ----

/// docs/src/recovery-backoff.md: `{"count": n, "requeueAt": "<RFC3339>", "lastRecoveryTime": "<RFC3339>",
/// "lastNodes": ["..."]}`.
#[test]
fn state_annotation_uses_the_issue_json_keys_and_rfc3339() {
    let state = RecoveryState {
        count: 2,
        requeue_at: Some(ts("2026-11-21T19:44:00.004Z")),
        last_recovery_time: Some(ts("2026-11-21T19:42:00Z")),
        last_nodes: vec!["node-a".into(), "node-b".into()],
        limit_exceeded: None,
    };
    assert_eq!(
        state.to_annotation(),
        r#"{"count":2,"requeueAt":"2026-11-21T19:44:00.004Z","lastRecoveryTime":"2026-11-21T19:42:00Z","lastNodes":["node-a","node-b"]}"#
    );
    let limited = RecoveryState {
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T20:00:00Z"),
            action: LimitAction::Suspend,
        }),
        ..state.clone()
    };
    assert!(
        limited
            .to_annotation()
            .ends_with(r#""limitExceeded":{"time":"2026-11-21T20:00:00Z","action":"Suspend"}}"#)
    );
    let annotations = BTreeMap::from([(
        RECOVERY_STATE_ANNOTATION.to_string(),
        limited.to_annotation(),
    )]);
    assert_eq!(
        RecoveryState::from_annotation(Some(&annotations)).unwrap(),
        Some(limited)
    );
}

#[test]
fn state_annotation_reads_hand_edited_values() {
    let read = |v: &str| {
        let a = BTreeMap::from([(RECOVERY_STATE_ANNOTATION.to_string(), v.to_string())]);
        RecoveryState::from_annotation(Some(&a))
    };
    assert_eq!(read("{}").unwrap(), Some(RecoveryState::default()));
    let offset = read(r#"{"count":1,"requeueAt":"2026-11-21T20:44:00+01:00","x":1}"#)
        .unwrap()
        .unwrap();
    assert_eq!(offset.requeue_at, Some(ts("2026-11-21T19:44:00Z")));
    assert!(read(r#"{"count":-1}"#).is_err());
    assert!(read("not json").is_err());
    assert!(read(r#"{"requeueAt":"yesterday"}"#).is_err());
    assert_eq!(RecoveryState::from_annotation(None).unwrap(), None);
    assert_eq!(
        RecoveryState::from_annotation(Some(&BTreeMap::new())).unwrap(),
        None
    );
}

// ---- grouping ----

#[test]
fn job_owner_is_the_controller_reference_of_a_batch_v1_job() {
    let refs = [
        owner("ConfigMap", "v1", "cm", None),
        owner("Job", "batch/v1", "train", Some(true)),
    ];
    assert_eq!(job_owner("ns", &refs), Some(job("train")));
    // A Job that is only an owner, not the controller, does not make an episode.
    assert_eq!(
        job_owner("ns", &[owner("Job", "batch/v1", "train", Some(false))]),
        None
    );
    assert_eq!(
        job_owner("ns", &[owner("Job", "batch/v1", "train", None)]),
        None
    );
    assert_eq!(
        job_owner("ns", &[owner("ReplicaSet", "apps/v1", "rs", Some(true))]),
        None
    );
    assert_eq!(
        job_owner("ns", &[owner("Job", "example.com/v1", "x", Some(true))]),
        None
    );
    assert_eq!(job_owner("ns", &[]), None);
}

fn meta(name: &str, owner: Option<OwnerReference>, deleted: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ns".into()),
        owner_references: owner.map(|o| vec![o]),
        deletion_timestamp: deleted
            .map(|d| k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(d))),
        ..ObjectMeta::default()
    }
}

fn known<'a>(m: &'a ObjectMeta, node: &'a str) -> KnownPod<'a> {
    KnownPod {
        meta: m,
        node: Some(node),
        node_unreachable: true,
        recorded: false,
    }
}

/// docs/src/recovery-backoff.md: "a node that dies with 8 pods of a Job must not have them
/// recovered one backoff apart": whichever of the 8 is reconciled first sees all 8 due, and
/// starts one episode for them; pods of another Job and pods without a Job are not in it.
#[test]
fn all_due_pods_of_a_job_form_one_episode_and_pods_without_a_job_none() {
    let deleted = Some("2026-11-21T19:00:00Z");
    let train = || Some(owner("Job", "batch/v1", "train", Some(true)));
    let mut metas: Vec<ObjectMeta> = (0..8)
        .rev()
        .map(|i| meta(&format!("train-{i}"), train(), deleted))
        .collect();
    metas.push(meta(
        "other-0",
        Some(owner("Job", "batch/v1", "other", Some(true))),
        deleted,
    ));
    metas.push(meta("bare", None, deleted));
    for first in ["train-0", "train-5"] {
        let this = due_since(first, "node-a", "2026-11-21T19:01:00Z");
        let due = due_pods(
            this.clone(),
            &job("train"),
            metas.iter().map(|m| known(m, "node-a")),
            std::time::Duration::from_secs(60),
            ts("2026-11-21T19:40:00Z"),
        );
        assert_eq!(due.this(), &this);
        assert_eq!(
            due.pods()
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>(),
            (0..8).map(|i| format!("train-{i}")).collect::<Vec<_>>()
        );
        // One decision for all eight: one episode, count 1.
        let (pods, state, _) = recovered(decide_episode(
            &due,
            JobView::default(),
            &EpisodeConfig::default(),
            ts("2026-11-21T19:40:00Z"),
            0.0,
        ));
        assert_eq!(pods.len(), 8);
        assert_eq!(state.count, 1);
        assert_eq!(state.last_nodes, vec!["node-a"]);
    }
}

#[test]
fn due_pods_of_a_job_are_its_pods_past_the_deadline_on_unreachable_nodes_not_recorded() {
    let train = || Some(owner("Job", "batch/v1", "train", Some(true)));
    let mut recreated = owner("Job", "batch/v1", "train", Some(true));
    recreated.uid = "uid-other".into();
    let metas = [
        meta("a-due", train(), Some("2026-11-21T19:38:00Z")),
        meta("b-at-deadline", train(), Some("2026-11-21T19:39:00Z")),
        meta("c-before-deadline", train(), Some("2026-11-21T19:39:01Z")),
        meta("d-reachable-node", train(), Some("2026-11-21T19:00:00Z")),
        meta("e-node-unknown", train(), Some("2026-11-21T19:00:00Z")),
        meta(
            "f-other-job",
            Some(owner("Job", "batch/v1", "x", Some(true))),
            Some("2026-11-21T19:00:00Z"),
        ),
        // A recreated Job with the same name is another Job: another episode.
        meta(
            "g-recreated-job",
            Some(recreated),
            Some("2026-11-21T19:00:00Z"),
        ),
        meta("h-not-terminating", train(), None),
        meta("i-bare", None, Some("2026-11-21T19:00:00Z")),
        // Recorded already (its delete is left): no new intervention.
        meta("j-recorded", train(), Some("2026-11-21T19:00:00Z")),
    ];
    let known: Vec<KnownPod> = metas
        .iter()
        .map(|m| {
            let name = m.name.as_deref().unwrap_or_default();
            KnownPod {
                meta: m,
                node: (name != "e-node-unknown").then_some("node-a"),
                node_unreachable: name != "d-reachable-node",
                recorded: name == "j-recorded",
            }
        })
        .collect();
    // The pod at hand, due by its own plan, read afresh: its entry in `known` gives way.
    let this = due_since("a-due", "node-b", "2026-11-21T19:39:00Z");
    let due = due_pods(
        this.clone(),
        &job("train"),
        known,
        std::time::Duration::from_secs(60),
        ts("2026-11-21T19:40:00Z"),
    );
    assert_eq!(
        due.pods(),
        [
            this,
            due_since("b-at-deadline", "node-a", "2026-11-21T19:40:00Z"),
        ]
    );
}

// ---- episodes and backoff ----

/// docs/src/recovery-backoff.md: "after episode n, the next episode for that Job may not start before requeueAt =
/// now + d(n)".
#[test]
fn first_episode_recovers_and_records_count_one_with_requeue_at_now_plus_60s() {
    let due = [
        pod("p-1", "node-b"),
        pod("p-0", "node-a"),
        pod("p-2", "node-a"),
    ];
    let (pods, state, reset) = recovered(decide_episode(
        &job_due(&due),
        JobView::default(),
        &EpisodeConfig::default(),
        ts("2026-11-21T19:40:00.700Z"),
        0.0,
    ));
    assert!(!reset);
    assert_eq!(
        pods.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["p-0", "p-1", "p-2"]
    );
    assert_eq!(
        state,
        RecoveryState {
            count: 1,
            requeue_at: Some(ts("2026-11-21T19:41:00Z")),
            last_recovery_time: Some(ts("2026-11-21T19:40:00Z")),
            last_nodes: vec!["node-a".into(), "node-b".into()],
            limit_exceeded: None,
        }
    );
}

/// docs/src/recovery-backoff.md: "Pods due earlier are requeued for requeueAt, not dropped."
#[test]
fn pods_due_before_requeue_at_wait_until_requeue_at() {
    let prior = RecoveryState {
        count: 2,
        requeue_at: Some(ts("2026-11-21T19:44:00Z")),
        last_recovery_time: Some(ts("2026-11-21T19:42:00Z")),
        last_nodes: vec!["node-a".into()],
        limit_exceeded: None,
    };
    let view = JobView {
        suspended: false,
        state: Some(&prior),
        resource_version: None,
    };
    // Deleted after episode 2 started: not one of its leftovers.
    let due = [asked_at(
        "p",
        "node-c",
        "2026-11-21T19:43:00Z",
        "2026-11-21T19:43:30Z",
    )];
    let cfg = EpisodeConfig::default();
    assert_eq!(
        decide_episode(
            &job_due(&due),
            view,
            &cfg,
            ts("2026-11-21T19:43:59.999Z"),
            0.3
        ),
        EpisodeDecision::WaitUntil(ts("2026-11-21T19:44:00Z"))
    );
    // At requeueAt exactly, episode 3 starts and waits d(3) = 240s.
    let (_, state, _) = recovered(decide_episode(
        &job_due(&due),
        view,
        &cfg,
        ts("2026-11-21T19:44:00Z"),
        0.0,
    ));
    assert_eq!(state.count, 3);
    assert_eq!(state.requeue_at, Some(ts("2026-11-21T19:48:00Z")));
    assert_eq!(state.last_nodes, vec!["node-c"]);
}

#[test]
fn the_kep_1282_series_over_successive_episodes() {
    let cfg = EpisodeConfig::default();
    let due = [pod("p", "n")];
    let mut state: Option<RecoveryState> = None;
    let mut now = ts("2026-11-21T00:00:00Z");
    let mut waits = vec![];
    for _ in 0..9 {
        let view = JobView {
            suspended: false,
            state: state.as_ref(),
            resource_version: None,
        };
        let (_, next, _) = recovered(decide_episode(&job_due(&due), view, &cfg, now, 0.0));
        let at = next.requeue_at.unwrap();
        waits.push(now.until(at).unwrap().get_seconds());
        now = at;
        state = Some(next);
    }
    assert_eq!(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
}

/// The due pods a decision is made over always hold the pod at hand, whatever its siblings
/// say of it, so no decision leaves it undecided.
#[test]
fn the_pod_at_hand_is_always_among_the_due_pods() {
    let this = pod("p", "node-a");
    let stale = DuePod {
        node: "node-b".into(),
        ..this.clone()
    };
    let alone = JobDue::new(this.clone(), []);
    assert_eq!(alone.pods(), std::slice::from_ref(&this));
    let with_stale_self = JobDue::new(
        this.clone(),
        [stale, pod("q", "node-a"), pod("q", "node-a")],
    );
    assert_eq!(with_stale_self.pods(), [this, pod("q", "node-a")]);
}

/// One burst, one episode: the pods of the Job already being deleted when the episode started
/// belong to it, whether their recovery failed or was interrupted (pod status conflict, API
/// error, restart) or their node was tainted later in the same failure; they were counted
/// already and must not wait a whole backoff. A pod deleted after the start makes the next one.
#[test]
fn one_burst_one_episode_pods_deleted_before_it_started_continue_it_during_its_backoff() {
    let recorded = RecoveryState {
        count: 1,
        requeue_at: Some(ts("2026-11-21T19:41:00Z")),
        last_recovery_time: Some(ts("2026-11-21T19:40:00Z")),
        last_nodes: vec!["node-a".into()],
        limit_exceeded: None,
    };
    let view = JobView {
        suspended: false,
        state: Some(&recorded),
        resource_version: None,
    };
    let cfg = EpisodeConfig::default();
    let now = ts("2026-11-21T19:40:15Z");
    // Due when the episode started; its recovery failed (a conflict, a restart).
    let retried = asked_at(
        "p-0",
        "node-a",
        "2026-11-21T19:38:00Z",
        "2026-11-21T19:39:00Z",
    );
    // Deleted within the episode's second (the episode time is truncated).
    let same_second = asked_at(
        "p-1",
        "node-a",
        "2026-11-21T19:40:00Z",
        "2026-11-21T19:40:10Z",
    );
    // The same failure reached its node 10 s later (kube-controller-manager taints one node of
    // a healthy zone every 10 s): deleted before the episode started, due after.
    let tainted_later = asked_at(
        "p-2",
        "node-b",
        "2026-11-21T19:39:10Z",
        "2026-11-21T19:40:10Z",
    );
    // Deleted after the episode started: a replacement it made room for, or a new failure.
    let replacement = asked_at(
        "p-3",
        "node-c",
        "2026-11-21T19:40:01Z",
        "2026-11-21T19:40:11Z",
    );
    let again_on_a = asked_at(
        "p-4",
        "node-a",
        "2026-11-21T19:40:05Z",
        "2026-11-21T19:40:12Z",
    );
    let all = [
        retried.clone(),
        same_second.clone(),
        tainted_later.clone(),
        replacement.clone(),
        again_on_a.clone(),
    ];
    let decide = |this: &DuePod, state: JobView<'_>| {
        let due = JobDue::new(this.clone(), all.iter().cloned());
        decide_episode(&due, state, &cfg, now, 0.0)
    };
    for this in [&retried, &same_second, &tainted_later] {
        assert_eq!(
            decide(this, view),
            EpisodeDecision::Leftover,
            "{}",
            this.name
        );
    }
    for this in [&replacement, &again_on_a] {
        assert_eq!(
            decide(this, view),
            EpisodeDecision::WaitUntil(ts("2026-11-21T19:41:00Z")),
            "{}",
            this.name
        );
    }
    // Once the limit stopped recovery, nothing continues.
    let stopped = RecoveryState {
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T19:40:03Z"),
            action: LimitAction::Stop,
        }),
        ..recorded.clone()
    };
    let stopped_view = JobView {
        state: Some(&stopped),
        ..view
    };
    for this in [&retried, &tainted_later] {
        assert_eq!(
            decide(this, stopped_view),
            EpisodeDecision::WaitUntil(ts("2026-11-21T19:41:00Z"))
        );
    }
}

/// A sibling's deletion was asked `deletionGracePeriodSeconds` before its `deletionTimestamp`.
#[test]
fn a_siblings_deletion_was_asked_its_grace_period_before_its_deletion_timestamp() {
    let train = || Some(owner("Job", "batch/v1", "train", Some(true)));
    let mut graceful = meta("graceful", train(), Some("2026-11-21T19:38:30Z"));
    graceful.deletion_grace_period_seconds = Some(30);
    let this = due_since("this", "node-a", "2026-11-21T19:39:30Z");
    let due = due_pods(
        this,
        &job("train"),
        [known(&graceful, "node-b")],
        std::time::Duration::from_secs(60),
        ts("2026-11-21T19:40:00Z"),
    );
    let sibling = due.pods().iter().find(|p| p.name == "graceful");
    assert_eq!(
        sibling.map(|p| (p.deletion_asked, p.deadline)),
        Some((ts("2026-11-21T19:38:00Z"), ts("2026-11-21T19:39:30Z")))
    );
}

// ---- limit ----

/// docs/src/recovery-backoff.md: "When the next episode would exceed N, jobgate does not recover; it emits Warning
/// RecoveryLimitExceeded on the Job, records it in the state" (Kueue:
/// `count+1 > backoffLimitCount` deactivates, the count is not incremented).
#[test]
fn limit_allows_n_episodes_and_stops_the_next_one_with_stop() {
    let cfg = config(Some(2), LimitAction::Stop);
    let due = [pod("p", "node-a")];
    let now = ts("2026-11-21T19:50:00Z");
    let at_one = RecoveryState {
        count: 1,
        requeue_at: Some(ts("2026-11-21T19:41:00Z")),
        ..Default::default()
    };
    let view = |s| JobView {
        suspended: false,
        state: Some(s),
        resource_version: None,
    };
    let (_, second, _) = recovered(decide_episode(
        &job_due(&due),
        view(&at_one),
        &cfg,
        now,
        0.0,
    ));
    assert_eq!(second.count, 2);

    let later = ts("2026-11-21T20:00:00.5Z");
    let decision = decide_episode(&job_due(&due), view(&second), &cfg, later, 0.0);
    let expected = RecoveryState {
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T20:00:00Z"),
            action: LimitAction::Stop,
        }),
        ..second.clone()
    };
    assert_eq!(
        decision,
        EpisodeDecision::LimitExceeded {
            suspend: false,
            new_state: Some(expected.clone()),
        }
    );
    // Recorded once: later passes neither recover nor write nor emit again.
    assert_eq!(
        decide_episode(
            &job_due(&due),
            view(&expected),
            &cfg,
            ts("2026-11-21T21:00:00Z"),
            0.0
        ),
        EpisodeDecision::LimitExceeded {
            suspend: false,
            new_state: None,
        }
    );
}

/// docs/src/recovery-backoff.md: "with --on-recovery-limit=suspend also sets spec.suspend: true".
#[test]
fn limit_with_suspend_asks_to_suspend_the_job_once() {
    let cfg = config(Some(1), LimitAction::Suspend);
    let prior = RecoveryState {
        count: 1,
        requeue_at: Some(ts("2026-11-21T19:41:00Z")),
        ..Default::default()
    };
    let now = ts("2026-11-21T19:45:00Z");
    let decision = decide_episode(
        &job_due(&[pod("p", "n")]),
        JobView {
            suspended: false,
            state: Some(&prior),
            resource_version: None,
        },
        &cfg,
        now,
        0.0,
    );
    let recorded = RecoveryState {
        limit_exceeded: Some(LimitExceeded {
            time: now,
            action: LimitAction::Suspend,
        }),
        ..prior
    };
    assert_eq!(
        decision,
        EpisodeDecision::LimitExceeded {
            suspend: true,
            new_state: Some(recorded.clone()),
        }
    );
    // The Job is suspended now: nothing more.
    assert_eq!(
        decide_episode(
            &job_due(&[pod("p", "n")]),
            JobView {
                suspended: true,
                state: Some(&recorded),
                resource_version: None,
            },
            &cfg,
            ts("2026-11-21T19:46:00Z"),
            0.0
        ),
        EpisodeDecision::LimitExceeded {
            suspend: true,
            new_state: None,
        }
    );
}

/// `deactivate-workload`: the limit is news once (recorded with that action), then in force
/// whatever the Job's `spec.suspend` says (the Workload, not the Job, carries it); a limit
/// recorded as `Stop` becomes news when the operator switches to it.
#[test]
fn limit_with_deactivate_workload_is_recorded_once_and_never_reset_by_resume() {
    let deactivate = config(Some(1), LimitAction::DeactivateWorkload);
    let prior = RecoveryState {
        count: 1,
        ..Default::default()
    };
    let now = ts("2026-11-21T20:00:00Z");
    let view = |state| JobView {
        suspended: false,
        state: Some(state),
        resource_version: None,
    };
    let EpisodeDecision::LimitExceeded {
        suspend: false,
        new_state: Some(recorded),
    } = decide_episode(
        &job_due(&[pod("p", "n")]),
        view(&prior),
        &deactivate,
        now,
        0.0,
    )
    else {
        panic!("limit news")
    };
    assert_eq!(
        recorded.limit_exceeded.as_ref().map(|l| l.action),
        Some(LimitAction::DeactivateWorkload)
    );
    assert!(!resumed_after_suspend(&recorded, false));
    assert_eq!(
        decide_episode(
            &job_due(&[pod("p", "n")]),
            view(&recorded),
            &deactivate,
            now,
            0.0
        ),
        EpisodeDecision::LimitExceeded {
            suspend: false,
            new_state: None
        }
    );
    let stopped = RecoveryState {
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T19:00:00Z"),
            action: LimitAction::Stop,
        }),
        ..prior.clone()
    };
    assert!(matches!(
        decide_episode(
            &job_due(&[pod("p", "n")]),
            view(&stopped),
            &deactivate,
            now,
            0.0
        ),
        EpisodeDecision::LimitExceeded {
            new_state: Some(_),
            ..
        }
    ));
    assert_eq!(
        serde_json::to_value(LimitAction::DeactivateWorkload).unwrap(),
        serde_json::json!("DeactivateWorkload")
    );
}

#[test]
fn limit_recorded_as_stop_suspends_after_the_operator_switches_to_suspend() {
    let stopped = RecoveryState {
        count: 1,
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T19:00:00Z"),
            action: LimitAction::Stop,
        }),
        ..Default::default()
    };
    let decision = decide_episode(
        &job_due(&[pod("p", "n")]),
        JobView {
            suspended: false,
            state: Some(&stopped),
            resource_version: None,
        },
        &config(Some(1), LimitAction::Suspend),
        ts("2026-11-21T20:00:00Z"),
        0.0,
    );
    let EpisodeDecision::LimitExceeded {
        suspend: true,
        new_state: Some(state),
    } = decision
    else {
        panic!("{decision:?}")
    };
    assert_eq!(
        state.limit_exceeded.map(|l| l.action),
        Some(LimitAction::Suspend)
    );
}

#[test]
fn raising_the_limit_lets_recovery_continue_and_clears_the_marker() {
    let stopped = RecoveryState {
        count: 2,
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T19:00:00Z"),
            action: LimitAction::Stop,
        }),
        ..Default::default()
    };
    let (_, state, _) = recovered(decide_episode(
        &job_due(&[pod("p", "n")]),
        JobView {
            suspended: false,
            state: Some(&stopped),
            resource_version: None,
        },
        &config(Some(5), LimitAction::Stop),
        ts("2026-11-21T20:00:00Z"),
        0.0,
    ));
    assert_eq!(state.count, 3);
    assert_eq!(state.limit_exceeded, None);
}

/// `--recovery-backoff-limit-count 0`: no episode at all for Jobs (bare pods still recover).
#[test]
fn limit_zero_never_recovers_pods_of_a_job() {
    assert!(matches!(
        decide_episode(
            &job_due(&[pod("p", "n")]),
            JobView::default(),
            &config(Some(0), LimitAction::Stop),
            ts("2026-11-21T20:00:00Z"),
            0.0
        ),
        EpisodeDecision::LimitExceeded {
            suspend: false,
            new_state: Some(_)
        }
    ));
}

/// The limit is evaluated when the episode could start, not during the backoff: a node that
/// comes back in the meantime must not get the Job stopped or suspended.
#[test]
fn backoff_is_waited_out_before_the_limit_is_declared() {
    let prior = RecoveryState {
        count: 3,
        requeue_at: Some(ts("2026-11-21T19:44:00Z")),
        ..Default::default()
    };
    assert_eq!(
        decide_episode(
            &job_due(&[pod("p", "n")]),
            JobView {
                suspended: false,
                state: Some(&prior),
                resource_version: None,
            },
            &config(Some(3), LimitAction::Suspend),
            ts("2026-11-21T19:43:00Z"),
            0.0
        ),
        EpisodeDecision::WaitUntil(ts("2026-11-21T19:44:00Z"))
    );
}

#[test]
fn unlimited_by_default_even_at_huge_counts() {
    let prior = RecoveryState {
        count: u32::MAX,
        ..Default::default()
    };
    let (_, state, _) = recovered(decide_episode(
        &job_due(&[pod("p", "n")]),
        JobView {
            suspended: false,
            state: Some(&prior),
            resource_version: None,
        },
        &EpisodeConfig::default(),
        ts("2026-11-21T20:00:00Z"),
        0.0,
    ));
    assert_eq!(state.count, u32::MAX);
    assert_eq!(state.requeue_at, Some(ts("2026-11-21T21:00:00Z")));
}

// ---- reset ----

/// docs/src/recovery-backoff.md: "when a user removes the state annotation ... the count starts again from zero".
#[test]
fn removing_the_annotation_restarts_the_count_from_zero() {
    let (_, state, reset) = recovered(decide_episode(
        &job_due(&[pod("p", "n")]),
        JobView {
            suspended: false,
            state: None,
            resource_version: None,
        },
        &config(Some(3), LimitAction::Stop),
        ts("2026-11-21T20:00:00Z"),
        0.0,
    ));
    assert_eq!(state.count, 1);
    assert!(!reset);
}

/// docs/src/recovery-backoff.md: "or resumes a Job that jobgate suspended, the count starts again from zero"
/// (Kueue: "If a deactivated workload is re-activated, we need to reset the RequeueState").
#[test]
fn resuming_a_job_jobgate_suspended_restarts_the_count_without_waiting() {
    let suspended_by_us = RecoveryState {
        count: 3,
        requeue_at: Some(ts("2026-11-21T21:00:00Z")),
        last_recovery_time: Some(ts("2026-11-21T20:00:00Z")),
        last_nodes: vec!["old".into()],
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T20:10:00Z"),
            action: LimitAction::Suspend,
        }),
    };
    assert!(resumed_after_suspend(&suspended_by_us, false));
    assert!(!resumed_after_suspend(&suspended_by_us, true));
    let (_, state, reset) = recovered(decide_episode(
        &job_due(&[pod("p", "new")]),
        JobView {
            suspended: false,
            state: Some(&suspended_by_us),
            resource_version: None,
        },
        &config(Some(3), LimitAction::Suspend),
        ts("2026-11-21T20:30:00Z"),
        0.0,
    ));
    assert!(reset);
    assert_eq!(state.count, 1);
    assert_eq!(state.requeue_at, Some(ts("2026-11-21T20:31:00Z")));
    assert_eq!(state.limit_exceeded, None);
}

/// A Job the *user* suspended (or that Stop left running) keeps its count.
#[test]
fn suspension_by_someone_else_or_stop_does_not_reset() {
    let stopped = RecoveryState {
        count: 3,
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T20:10:00Z"),
            action: LimitAction::Stop,
        }),
        ..Default::default()
    };
    assert!(!resumed_after_suspend(&stopped, false));
    let plain = RecoveryState {
        count: 2,
        ..Default::default()
    };
    assert!(!resumed_after_suspend(&plain, false));
    let (_, state, reset) = recovered(decide_episode(
        &job_due(&[pod("p", "n")]),
        JobView {
            suspended: true,
            state: Some(&plain),
            resource_version: None,
        },
        &EpisodeConfig::default(),
        ts("2026-11-21T20:30:00Z"),
        0.0,
    ));
    assert!(!reset);
    assert_eq!(state.count, 3);
}

// ---- event notes ----

#[test]
fn episode_note_names_pods_nodes_and_the_next_time() {
    let pods = [pod("train-0", "node-a"), pod("train-1", "node-b")];
    let state = RecoveryState {
        count: 2,
        requeue_at: Some(ts("2026-11-21T19:44:00Z")),
        ..Default::default()
    };
    assert_eq!(
        episode_note(&pods, &state),
        "Recovery episode 2: forcefully terminating 2 pod(s) on unreachable node(s) node-a, \
         node-b: train-0, train-1; next episode not before 2026-11-21T19:44:00Z"
    );
    assert_eq!(
        limit_note(&pods, 3, LimitAction::Stop),
        "Recovery limit of 3 episode(s) reached: not forcefully terminating 2 pod(s) on \
         unreachable node(s) node-a, node-b: train-0, train-1; stopped recovering this Job. \
         Remove the annotation jobgate.dev/recovery-state to allow recovery again"
    );
    assert!(limit_note(&pods, 3, LimitAction::Suspend).contains("spec.suspend=true"));
}

#[test]
fn event_notes_fit_the_1024_byte_limit_with_many_long_pod_names() {
    let pods: Vec<DuePod> = (0..500)
        .map(|i| {
            pod(
                &format!("{}-{i}", "x".repeat(60)),
                &format!("node-{}", i % 50),
            )
        })
        .collect();
    let state = RecoveryState {
        count: 7,
        requeue_at: Some(ts("2026-11-21T19:44:00Z")),
        ..Default::default()
    };
    let note = episode_note(&pods, &state);
    assert!(note.len() <= EVENT_NOTE_LIMIT, "{}", note.len());
    assert!(note.contains(" more"));
    assert!(note.ends_with("next episode not before 2026-11-21T19:44:00Z"));
    let warning = limit_note(&pods, 3, LimitAction::Suspend);
    assert!(warning.len() <= EVENT_NOTE_LIMIT, "{}", warning.len());
    assert!(warning.ends_with("to allow recovery again"));
}
