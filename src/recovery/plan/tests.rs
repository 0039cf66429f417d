use std::time::Duration;

use super::*;
use crate::kueue::{
    CONDITION_TYPE, REASON_FORCEFULLY_DELETED, REASON_FORCEFULLY_TERMINATED,
    RECOVERY_ANNOTATION_KEYS,
};
use crate::recovery::facts::PodCondition;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

const NOW: &str = "2026-11-21T20:00:00Z";

/// The brake's inputs for the pod's node (zone `""`) and what `brake::brake` answers for them.
struct BrakeCase {
    name: &'static str,
    zones: BTreeMap<String, Zone>,
    last_release: Option<LastRelease>,
    /// How settled the node stream is (one of [`SETTLE_CASES`]).
    settle: &'static str,
    edges: Edges,
}

/// The node stream's rising edges: the last 60 s ago; the last (on another node) 5 s ago and
/// the pod's node's 30 s ago; the last 1 s ago, but the pod's node's 61 s ago, past the longest
/// wait for a settled view.
const SETTLE_CASES: [(&str, Option<&str>, Option<&str>); 3] = [
    (
        "settled",
        Some("2026-11-21T19:59:00Z"),
        Some("2026-11-21T19:59:00Z"),
    ),
    (
        "settling",
        Some("2026-11-21T19:59:55Z"),
        Some("2026-11-21T19:59:30Z"),
    ),
    (
        "never settling",
        Some("2026-11-21T19:59:59Z"),
        Some("2026-11-21T19:58:59Z"),
    ),
];

fn zones(own: (u32, u32), other: (u32, u32)) -> BTreeMap<String, Zone> {
    [("", own), ("b", other)]
        .into_iter()
        .map(|(key, (size, unreachable))| (key.to_string(), Zone { size, unreachable }))
        .collect()
}

fn brake_cases() -> Vec<BrakeCase> {
    let recent = LastRelease {
        zone: String::new(),
        node: "n0".into(),
        at: ts("2026-11-21T19:59:30Z"),
    };
    let zone_cases = [
        ("normal zone", zones((10, 1), (10, 0)), None),
        (
            "small zone partially disrupted",
            zones((5, 3), (10, 0)),
            None,
        ),
        (
            "large zone partially disrupted, nothing released yet",
            zones((100, 60), (10, 0)),
            None,
        ),
        (
            "large zone partially disrupted, another node released 30s ago",
            zones((100, 60), (10, 0)),
            Some(recent),
        ),
        ("every zone fully disrupted", zones((5, 5), (3, 3)), None),
    ];
    let mut cases = vec![];
    for (name, zones, last_release) in zone_cases {
        for (settle, last, node) in SETTLE_CASES {
            cases.push(BrakeCase {
                name,
                zones: zones.clone(),
                last_release: last_release.clone(),
                settle,
                edges: Edges {
                    last: last.map(ts),
                    run: None,
                    node: node.map(ts),
                },
            });
        }
    }
    cases
}

/// The plan as the KEP and Kueue's controller state it, step by step, written out once per
/// case: opt-in, terminating, deadline (before the node is read), node, a recovery already
/// recorded (no new intervention), a settled view of the nodes (10 s without a new unreachable
/// node, at most 60 s after the pod's node's), the partition brake (kube-controller-manager's
/// zone states), then the Job.
#[allow(clippy::too_many_arguments)]
fn expected(
    opted_in: bool,
    deletion: Option<Timestamp>,
    node_name: Option<&str>,
    node: Option<&NodeFacts>,
    recorded: bool,
    brake: &BrakeCase,
    job: Option<&JobKey>,
    phase_failed: bool,
) -> Plan {
    let now = ts(NOW);
    let grace = Duration::from_secs(60);
    if !opted_in {
        return Plan::Ignore(Ignored::NotOptedIn);
    }
    let Some(deleted) = deletion else {
        return Plan::Ignore(Ignored::NotTerminating);
    };
    let deadline = crate::recovery::deadline(deleted, grace);
    if now < deadline {
        return Plan::WaitForDeadline(deadline);
    }
    let Some(node_name) = node_name else {
        return Plan::Ignore(Ignored::NotScheduled);
    };
    let Some(node) = node.filter(|n| n.name == node_name) else {
        return Plan::Ignore(Ignored::NodeNotFound);
    };
    if !crate::recovery::is_unreachable(node) {
        return Plan::WaitForNode {
            node: node_name.into(),
        };
    }
    let recovery = Recovery {
        node: node_name.into(),
        annotation_key: RECOVERY_ANNOTATION_KEYS[0].into(),
        deadline,
        total_grace_period: Duration::from_secs(30) + grace,
        set_failed: !phase_failed,
    };
    if recorded {
        return Plan::Recover {
            recovery,
            recorded: true,
            release: None,
        };
    }
    match brake.settle {
        "settling" => return Plan::WaitForSettle(ts("2026-11-21T20:00:05Z")),
        "settled" | "never settling" => {}
        other => unreachable!("{other}"),
    }
    let own = &brake.zones[""];
    let disruption = |everywhere| Disruption {
        zone: String::new(),
        unreachable: own.unreachable,
        size: own.size,
        everywhere,
    };
    let release = match brake.name {
        "normal zone" => None,
        "small zone partially disrupted" => {
            return Plan::Hold {
                disruption: disruption(false),
                until: None,
            };
        }
        "large zone partially disrupted, nothing released yet" => Some(LastRelease {
            zone: String::new(),
            node: node_name.into(),
            at: now,
        }),
        // --secondary-recovery-rate 0.01: one node per 100 s.
        "large zone partially disrupted, another node released 30s ago" => {
            return Plan::Hold {
                disruption: disruption(false),
                until: Some(ts("2026-11-21T20:01:10Z")),
            };
        }
        "every zone fully disrupted" => {
            return Plan::Hold {
                disruption: disruption(true),
                until: None,
            };
        }
        other => unreachable!("{other}"),
    };
    match job {
        Some(job) => Plan::AskJob {
            recovery,
            job: job.clone(),
            release,
        },
        None => Plan::Recover {
            recovery,
            recorded: false,
            release,
        },
    }
}

/// Every combination of opt-in ("true", "false", absent) × deletion (none, before, after the
/// deadline) × node name × node (missing, another name, reachable, unreachable) × recovery
/// recorded (no, jobgate's reason, Kueue 0.17's reason) × five brake situations × three of the
/// node stream (settled, settling, settling past the longest wait) × Job or none: the plan is
/// the KEP's steps in Kueue's order.
#[test]
fn the_plan_follows_the_steps_in_order_over_every_state() {
    let config = RecoveryConfig::default();
    let brake_config = BrakeConfig::default();
    let job = JobKey {
        namespace: "ns".into(),
        name: "train".into(),
        uid: "uid-train".into(),
    };
    let mut cases = 0;
    let mut seen = std::collections::HashSet::new();
    for opt_in in [None, Some("false"), Some("true")] {
        for deletion in [
            None,
            Some(ts("2026-11-21T19:59:30Z")),
            Some(ts("2026-11-21T19:57:00Z")),
        ] {
            for node_name in [None, Some("n1")] {
                let reachable = NodeFacts::for_test("n1", false);
                let unreachable = NodeFacts::for_test("n1", true);
                let other = NodeFacts::for_test("n2", true);
                for node in [None, Some(&other), Some(&reachable), Some(&unreachable)] {
                    for record in [
                        None,
                        Some(REASON_FORCEFULLY_TERMINATED),
                        Some(REASON_FORCEFULLY_DELETED),
                    ] {
                        for brake in &brake_cases() {
                            for job in [None, Some(&job)] {
                                let pod = PodFacts {
                                    annotations: opt_in
                                        .map(|v| {
                                            [(
                                                RECOVERY_ANNOTATION_KEYS[0].to_string(),
                                                v.to_string(),
                                            )]
                                            .into()
                                        })
                                        .unwrap_or_default(),
                                    deletion_timestamp: deletion,
                                    deletion_grace_period_seconds: Some(30),
                                    phase: Some(
                                        if record.is_some() {
                                            "Failed"
                                        } else {
                                            "Running"
                                        }
                                        .into(),
                                    ),
                                    node_name: node_name.map(String::from),
                                    conditions: record
                                        .map(|reason| {
                                            vec![PodCondition {
                                                type_: CONDITION_TYPE.into(),
                                                status: "True".into(),
                                                reason: Some(reason.into()),
                                                ..PodCondition::default()
                                            }]
                                        })
                                        .unwrap_or_default(),
                                    finalizers: vec![],
                                };
                                let facts = PlanFacts {
                                    pod: &pod,
                                    node,
                                    zones: &brake.zones,
                                    last_release: brake.last_release.as_ref(),
                                    edges: brake.edges,
                                    job,
                                    now: ts(NOW),
                                };
                                let got = plan(facts, &config, &brake_config);
                                let want = expected(
                                    opt_in == Some("true"),
                                    deletion,
                                    node_name,
                                    node,
                                    record.is_some(),
                                    brake,
                                    job,
                                    record.is_some(),
                                );
                                assert_eq!(
                                    got, want,
                                    "opt-in {opt_in:?}, deletion {deletion:?}, node name {node_name:?}, node {node:?}, recorded {record:?}, {}, {}, job {job:?}",
                                    brake.name, brake.settle
                                );
                                seen.insert(std::mem::discriminant(&got));
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 3 * 3 * 2 * 4 * 3 * 5 * 3 * 2);
    // Every kind of plan is reached.
    assert_eq!(seen.len(), 7);
}

// ---- the Job's step ----

fn due_pod(name: &str, node: &str, deadline: &str) -> DuePod {
    DuePod {
        namespace: "ns".into(),
        name: name.into(),
        node: node.into(),
        deadline: ts(deadline),
        deletion_asked: ts(deadline) - k8s_openapi::jiff::SignedDuration::from_secs(60),
    }
}

/// Episode 1 recorded at 19:59:00 on node-a; the next not before 20:01:00.
fn recorded_episode() -> RecoveryState {
    RecoveryState {
        count: 1,
        requeue_at: Some(ts("2026-11-21T20:01:00Z")),
        last_recovery_time: Some(ts("2026-11-21T19:59:00Z")),
        last_nodes: vec!["node-a".into()],
        limit_exceeded: None,
    }
}

fn limit_config(limit: u32, on_limit: LimitAction) -> EpisodeConfig {
    EpisodeConfig {
        limit_count: Some(limit),
        on_limit,
        ..EpisodeConfig::default()
    }
}

/// docs/src/recovery-backoff.md, step by step for one due pod of a Job: a Job that is gone
/// leaves an orphan (no state); the first episode is recorded on the Job (the state with the
/// resourceVersion read, then a Normal event naming every due pod) before the pod is
/// recovered; during the backoff a pod deleted before the episode started is a leftover (no
/// write), on whatever node, and a pod deleted after it waits for `requeueAt`; at the limit the news is recorded once
/// (suspending, or deactivating the Workload, as `--on-recovery-limit` says), then nothing more.
#[test]
fn the_jobs_step_follows_the_episode_rules() {
    let now = ts(NOW);
    let this = due_pod("p-0", "node-a", "2026-11-21T19:58:00Z");
    let sibling = due_pod("p-1", "node-a", "2026-11-21T19:58:30Z");
    let due = JobDue::new(this.clone(), [sibling.clone()]);
    let fresh = || EpisodeConfig::default();
    let plan = |job: Option<JobView<'_>>, due: &JobDue, config: &EpisodeConfig| {
        plan_job(
            JobFacts {
                job,
                due,
                now,
                jitter: 0.0,
            },
            config,
        )
    };
    fn view(state: Option<&RecoveryState>) -> JobView<'_> {
        JobView {
            suspended: false,
            state,
            resource_version: Some("7"),
        }
    }

    assert_eq!(plan(None, &due, &fresh()), JobPlan::Orphan);

    let first = RecoveryState {
        count: 1,
        requeue_at: Some(ts("2026-11-21T20:01:00Z")),
        last_recovery_time: Some(now),
        last_nodes: vec!["node-a".into()],
        limit_exceeded: None,
    };
    let start = plan(Some(view(None)), &due, &fresh());
    assert_eq!(
        start,
        JobPlan::Start(JobRecord {
            resource_version: Some("7".into()),
            state: first.clone(),
            suspend: false,
            deactivate_workload: false,
            event: JobEvent::Episode,
            pods: vec![this.clone(), sibling.clone()],
        })
    );
    assert_eq!(
        start.record().map(JobRecord::note).as_deref(),
        Some(
            "Recovery episode 1: forcefully terminating 2 pod(s) on unreachable node(s) node-a: \
             p-0, p-1; next episode not before 2026-11-21T20:01:00Z"
        )
    );

    // During the backoff of episode 1 (on node-a, started 19:59:00).
    let recorded = recorded_episode();
    assert_eq!(
        plan(Some(view(Some(&recorded))), &due, &fresh()),
        JobPlan::Leftover
    );
    // Deleted before the episode started, on another node: the same failure, the same episode.
    let elsewhere = JobDue::new(due_pod("p-3", "node-c", "2026-11-21T19:59:30Z"), []);
    assert_eq!(
        plan(Some(view(Some(&recorded))), &elsewhere, &fresh()),
        JobPlan::Leftover
    );
    // Deleted after it started, on its node or another: the next episode, after the backoff.
    for node in ["node-a", "node-c"] {
        let late = JobDue::new(
            DuePod {
                deletion_asked: ts("2026-11-21T19:59:01Z"),
                ..due_pod("p-2", node, "2026-11-21T19:59:31Z")
            },
            [],
        );
        assert_eq!(
            plan(Some(view(Some(&recorded))), &late, &fresh()),
            JobPlan::Backoff(ts("2026-11-21T20:01:00Z")),
            "{node}"
        );
    }

    // After the backoff, at a limit of 1 episode.
    let past = RecoveryState {
        requeue_at: Some(ts("2026-11-21T19:59:30Z")),
        ..recorded_episode()
    };
    for (on_limit, suspend, deactivate) in [
        (LimitAction::Stop, false, false),
        (LimitAction::Suspend, true, false),
        (LimitAction::DeactivateWorkload, false, true),
    ] {
        let JobPlan::Limit(Some(record)) =
            plan(Some(view(Some(&past))), &due, &limit_config(1, on_limit))
        else {
            panic!("{on_limit:?}: the limit is news");
        };
        assert_eq!(
            (record.suspend, record.deactivate_workload),
            (suspend, deactivate),
            "{on_limit:?}"
        );
        assert_eq!(
            record.event,
            JobEvent::LimitExceeded {
                limit: 1,
                action: on_limit,
                fallback: false
            }
        );
        assert_eq!(
            record.state.limit_exceeded.as_ref().map(|l| l.action),
            Some(on_limit)
        );
        assert_eq!(record.pods, due.pods());
        assert_eq!(record.resource_version.as_deref(), Some("7"));
        assert_eq!(record.note(), limit_note(due.pods(), 1, on_limit));
        // Recorded (and the Job suspended when the record said so): nothing more to write.
        let stopped = record.state;
        let as_left = JobView {
            suspended: record.suspend,
            ..view(Some(&stopped))
        };
        assert_eq!(
            plan(Some(as_left), &due, &limit_config(1, on_limit)),
            JobPlan::Limit(None),
            "{on_limit:?}"
        );
    }
}

/// Without a Workload to deactivate, the limit suspends the Job instead: the state records
/// `Suspend`, `spec.suspend: true` goes with it, and the Warning says it fell back. Every other
/// record is kept as it is.
#[test]
fn without_a_workload_the_limit_suspends_the_job_instead() {
    let now = ts(NOW);
    let due = JobDue::new(due_pod("p-0", "node-a", "2026-11-21T19:58:00Z"), []);
    let past = RecoveryState {
        requeue_at: Some(ts("2026-11-21T19:59:30Z")),
        ..recorded_episode()
    };
    let record_for = |on_limit| {
        let plan = plan_job(
            JobFacts {
                job: Some(JobView {
                    suspended: false,
                    state: Some(&past),
                    resource_version: Some("7"),
                }),
                due: &due,
                now,
                jitter: 0.0,
            },
            &limit_config(1, on_limit),
        );
        plan.record().cloned().expect("the limit is news")
    };
    let fallen_back = record_for(LimitAction::DeactivateWorkload).without_workload();
    assert!(fallen_back.suspend);
    assert!(!fallen_back.deactivate_workload);
    assert_eq!(
        fallen_back.event,
        JobEvent::LimitExceeded {
            limit: 1,
            action: LimitAction::Suspend,
            fallback: true
        }
    );
    assert_eq!(
        fallen_back.state.limit_exceeded.map(|l| l.action),
        Some(LimitAction::Suspend)
    );
    assert_eq!(
        record_for(LimitAction::DeactivateWorkload)
            .without_workload()
            .note(),
        format!(
            "No Kueue Workload owns this Job: --on-recovery-limit=deactivate-workload fell back \
             to suspend. {}",
            limit_note(due.pods(), 1, LimitAction::Suspend)
        )
    );
    for kept in [
        record_for(LimitAction::Stop),
        record_for(LimitAction::Suspend),
    ] {
        assert_eq!(kept.clone().without_workload(), kept);
    }
}

/// A delete, forced or not, cannot get past finalizers (Kueue's pod finalizer, the Job
/// controller's `batch.kubernetes.io/job-tracking`): a recorded pod that was force-deleted
/// (`deletionGracePeriodSeconds: 0`) and is still there waits for them by name; it is neither
/// deleted again nor taken for recovered. Before its force delete, the delete is what is left.
#[test]
fn a_recovered_pod_held_by_finalizers_waits_for_them_and_is_not_deleted_again() {
    let node = NodeFacts::for_test("node-a", true);
    let recorded = |grace: i64, finalizers: &[&str]| PodFacts {
        annotations: [(RECOVERY_ANNOTATION_KEYS[0].to_string(), "true".to_string())].into(),
        deletion_timestamp: Some(ts("2026-11-21T19:00:00Z")),
        deletion_grace_period_seconds: Some(grace),
        phase: Some("Failed".into()),
        node_name: Some("node-a".into()),
        conditions: vec![PodCondition {
            type_: CONDITION_TYPE.into(),
            status: "True".into(),
            reason: Some(REASON_FORCEFULLY_TERMINATED.into()),
            ..PodCondition::default()
        }],
        finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
    };
    let zones = BTreeMap::new();
    let plan_of = |pod: &PodFacts| {
        let facts = PlanFacts {
            pod,
            node: Some(&node),
            zones: &zones,
            last_release: None,
            edges: Edges::default(),
            job: None,
            now: ts(NOW),
        };
        plan(facts, &RecoveryConfig::default(), &BrakeConfig::default())
    };
    let kueue = "kueue.x-k8s.io/managed";
    assert_eq!(
        plan_of(&recorded(0, &[kueue])),
        Plan::WaitForFinalizers(vec![kueue.to_string()])
    );
    // The force delete moved deletionTimestamp to its own time: a deadline not reached again
    // changes nothing.
    let mut deleted_now = recorded(0, &[kueue]);
    deleted_now.deletion_timestamp = Some(ts(NOW));
    assert_eq!(
        plan_of(&deleted_now),
        Plan::WaitForFinalizers(vec![kueue.to_string()])
    );
    for pod in [recorded(30, &[kueue]), recorded(0, &[])] {
        assert!(
            matches!(plan_of(&pod), Plan::Recover { recorded: true, .. }),
            "{pod:?}"
        );
    }
}
