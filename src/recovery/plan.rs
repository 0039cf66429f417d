//! The one answer to "what happens to this pod now": the pod's own decision ([`decide`]: opt-in,
//! terminating, deadline, then the node, in Kueue's order), a recovery already recorded on the
//! pod, the partition brake ([`brake::brake`]), then the Job's recovery episode. `jobgate
//! reconcile` executes a [`Plan`]; `jobgate status` prints it. Neither composes these steps on
//! its own.
//!
//! The Job's episode is decided over all due pods of the Job (`episode::decide_episode`), which
//! the reconciler reads from the apiserver and status from its snapshot; [`after_episode`] turns
//! that decision into the pod's last step, for both.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;

use super::brake::{self, BrakeConfig, BrakeDecision, Disruption, LastRelease, Zone};
use super::episode::{EpisodeDecision, JobKey, LimitAction, PodGate};
use super::{Config, Decision, Ignored, NodeFacts, PodFacts, Recovery, decide, recovery_recorded};

/// Everything the plan reads about one pod, at one instant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlanFacts<'a> {
    pub(crate) pod: &'a PodFacts,
    /// The node named by the pod's `spec.nodeName` as read; `None` when it does not exist.
    pub(crate) node: Option<&'a NodeFacts>,
    /// Every node's zone (`brake::zones`), for the partition brake.
    pub(crate) zones: &'a BTreeMap<String, Zone>,
    /// The last throttled release of the pod's node's zone, as the reconciler remembers it
    /// (status has no such memory: `None`).
    pub(crate) last_release: Option<&'a LastRelease>,
    /// The Job whose recovery episode gates the pod; `None` without a Job (or with the episode
    /// gate off).
    pub(crate) job: Option<&'a JobKey>,
    pub(crate) now: Timestamp,
}

/// What happens to one pod now.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Plan {
    /// Never act on this pod in its current state.
    Ignore(Ignored),
    /// Opted in and terminating, before its deadline: look again at exactly this time.
    WaitForDeadline(Timestamp),
    /// Past the deadline on a reachable node: wait for the node's unreachable edge.
    WaitForNode { node: String },
    /// Due, but the partition brake holds the pod's zone: until the zone heals, or (`until`) the
    /// zone's next throttled release.
    Hold {
        disruption: Disruption,
        until: Option<Timestamp>,
    },
    /// Due: record the recovery (unless `recorded`: only the delete is left) and delete the pod.
    /// `release`: the throttled release of the zone to remember.
    Recover {
        recovery: Recovery,
        recorded: bool,
        release: Option<LastRelease>,
    },
    /// Due, of a Job: the Job's recovery episode decides first ([`after_episode`]), then the
    /// pod is recovered as in `Recover` (never recorded yet).
    AskJob {
        recovery: Recovery,
        job: JobKey,
        release: Option<LastRelease>,
    },
}

/// The plan for one pod. A recovery already recorded on the pod is no new intervention: the
/// brake and the Job's episode do not apply to it.
pub(crate) fn plan(facts: PlanFacts<'_>, config: &Config, brake_config: &BrakeConfig) -> Plan {
    let recovery = match decide(facts.pod, facts.node, facts.now, config) {
        Decision::Ignore(reason) => return Plan::Ignore(reason),
        Decision::RequeueAt(at) => return Plan::WaitForDeadline(at),
        Decision::WaitForNode { node } => return Plan::WaitForNode { node },
        Decision::Recover(recovery) => recovery,
    };
    if recovery_recorded(facts.pod) {
        return Plan::Recover {
            recovery,
            recorded: true,
            release: None,
        };
    }
    // `decide` recovers only with the pod's node in hand.
    let release = match facts.node.map(|node| {
        let decision = brake::brake(
            node,
            facts.zones,
            facts.last_release,
            facts.now,
            brake_config,
        );
        (node, decision)
    }) {
        None | Some((_, BrakeDecision::Release)) => None,
        Some((node, BrakeDecision::ReleaseThrottled)) => Some(LastRelease {
            node: node.name.clone(),
            at: facts.now,
        }),
        Some((_, BrakeDecision::Throttled(disruption, at))) => {
            return Plan::Hold {
                disruption,
                until: Some(at),
            };
        }
        Some((_, BrakeDecision::Hold(disruption))) => {
            return Plan::Hold {
                disruption,
                until: None,
            };
        }
    };
    match facts.job {
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

/// A due pod of a Job, once its Job's episode is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterEpisode {
    /// Recover the pod now (a new episode, or a leftover of the recorded one).
    Recover,
    /// Wait for the Job's backoff until this time.
    Backoff(Timestamp),
    /// The Job reached its recovery limit: not recovered.
    LimitReached,
    /// The decision does not cover the pod: never act on what was not decided.
    NotCovered,
}

/// The pod's last step from the gate its Job's episode decision puts on it.
pub(crate) fn after_episode(gate: &PodGate) -> AfterEpisode {
    match gate {
        PodGate::NewEpisode { .. } | PodGate::Leftover => AfterEpisode::Recover,
        PodGate::Backoff(at) => AfterEpisode::Backoff(*at),
        PodGate::LimitExceeded { .. } => AfterEpisode::LimitReached,
        PodGate::NotCovered => AfterEpisode::NotCovered,
    }
}

/// Recording `decision` starts with deactivating the Job's Kueue Workload
/// (`--on-recovery-limit=deactivate-workload`, the limit reached now).
pub(crate) fn deactivates_workload(decision: &EpisodeDecision) -> bool {
    matches!(
        decision,
        EpisodeDecision::LimitExceeded { new_state: Some(state), .. }
            if state.limit_exceeded.as_ref().map(|l| l.action) == Some(LimitAction::DeactivateWorkload)
    )
}

/// `--on-recovery-limit=deactivate-workload` for a Job no Kueue Workload owns: the Job is
/// suspended instead, and the state records that action. Other decisions are returned as they
/// are.
pub(crate) fn suspend_without_workload(decision: EpisodeDecision) -> EpisodeDecision {
    if !deactivates_workload(&decision) {
        return decision;
    }
    match decision {
        EpisodeDecision::LimitExceeded {
            new_state: Some(mut state),
            ..
        } => {
            if let Some(limit) = state.limit_exceeded.as_mut() {
                limit.action = LimitAction::Suspend;
            }
            EpisodeDecision::LimitExceeded {
                new_state: Some(state),
                suspend: true,
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::kueue::{
        CONDITION_TYPE, REASON_FORCEFULLY_DELETED, REASON_FORCEFULLY_TERMINATED,
        RECOVERY_ANNOTATION_KEYS,
    };
    use crate::recovery::PodCondition;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    const NOW: &str = "2026-11-21T20:00:00Z";

    /// The brake's inputs for the pod's node (zone `""`) and what `brake::brake` answers for them.
    struct BrakeCase {
        name: &'static str,
        zones: BTreeMap<String, Zone>,
        last_release: Option<LastRelease>,
    }

    fn zones(own: (u32, u32), other: (u32, u32)) -> BTreeMap<String, Zone> {
        [("", own), ("b", other)]
            .into_iter()
            .map(|(key, (size, unreachable))| (key.to_string(), Zone { size, unreachable }))
            .collect()
    }

    fn brake_cases() -> Vec<BrakeCase> {
        let recent = LastRelease {
            node: "n0".into(),
            at: ts("2026-11-21T19:59:30Z"),
        };
        vec![
            BrakeCase {
                name: "normal zone",
                zones: zones((10, 1), (10, 0)),
                last_release: None,
            },
            BrakeCase {
                name: "small zone partially disrupted",
                zones: zones((5, 3), (10, 0)),
                last_release: None,
            },
            BrakeCase {
                name: "large zone partially disrupted, nothing released yet",
                zones: zones((100, 60), (10, 0)),
                last_release: None,
            },
            BrakeCase {
                name: "large zone partially disrupted, another node released 30s ago",
                zones: zones((100, 60), (10, 0)),
                last_release: Some(recent),
            },
            BrakeCase {
                name: "every zone fully disrupted",
                zones: zones((5, 5), (3, 3)),
                last_release: None,
            },
        ]
    }

    /// The plan as the KEP and Kueue's controller state it, step by step, written out once per
    /// case: opt-in, terminating, deadline (before the node is read), node, a recovery already
    /// recorded (no new intervention), the partition brake (kube-controller-manager's zone
    /// states), then the Job.
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
    /// recorded (no, jobgate's reason, Kueue 0.17's reason) × five brake situations × Job or
    /// none: the plan is the KEP's steps in Kueue's order.
    #[test]
    fn the_plan_follows_the_steps_in_order_over_every_state() {
        let config = Config::default();
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
                                    };
                                    let facts = PlanFacts {
                                        pod: &pod,
                                        node,
                                        zones: &brake.zones,
                                        last_release: brake.last_release.as_ref(),
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
                                        "opt-in {opt_in:?}, deletion {deletion:?}, node name {node_name:?}, node {node:?}, recorded {record:?}, {}, job {job:?}",
                                        brake.name
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
        assert_eq!(cases, 3 * 3 * 2 * 4 * 3 * 5 * 2);
        // Every kind of plan is reached.
        assert_eq!(seen.len(), 6);
    }

    /// The Job's episode decision, as the pod's last step: recovered in a new episode or as a
    /// leftover of the recorded one, otherwise waiting (backoff) or stopped (limit); never acted
    /// on when the decision does not cover it.
    #[test]
    fn after_the_episode_the_gate_decides_the_pod() {
        let at = ts(NOW);
        for (gate, want) in [
            (PodGate::NewEpisode { episode: 2 }, AfterEpisode::Recover),
            (PodGate::Leftover, AfterEpisode::Recover),
            (PodGate::Backoff(at), AfterEpisode::Backoff(at)),
            (
                PodGate::LimitExceeded {
                    news: true,
                    suspend: true,
                },
                AfterEpisode::LimitReached,
            ),
            (
                PodGate::LimitExceeded {
                    news: false,
                    suspend: false,
                },
                AfterEpisode::LimitReached,
            ),
            (PodGate::NotCovered, AfterEpisode::NotCovered),
        ] {
            assert_eq!(after_episode(&gate), want, "{gate:?}");
        }
    }

    /// Without a Workload to deactivate, the limit suspends the Job and records `Suspend`;
    /// every other decision is kept as it is.
    #[test]
    fn without_a_workload_the_limit_suspends_the_job_instead() {
        use crate::recovery::episode::{LimitExceeded, RecoveryState};
        let limit = |action| EpisodeDecision::LimitExceeded {
            new_state: Some(RecoveryState {
                count: 3,
                limit_exceeded: Some(LimitExceeded {
                    time: ts(NOW),
                    action,
                }),
                ..RecoveryState::default()
            }),
            suspend: false,
        };
        let deactivate = limit(LimitAction::DeactivateWorkload);
        assert!(deactivates_workload(&deactivate));
        let EpisodeDecision::LimitExceeded { new_state, suspend } =
            suspend_without_workload(deactivate)
        else {
            panic!("not a limit");
        };
        assert!(suspend);
        assert_eq!(
            new_state.and_then(|s| s.limit_exceeded).map(|l| l.action),
            Some(LimitAction::Suspend)
        );
        for kept in [
            limit(LimitAction::Stop),
            limit(LimitAction::Suspend),
            EpisodeDecision::LimitExceeded {
                new_state: None,
                suspend: false,
            },
            EpisodeDecision::WaitUntil(ts(NOW)),
            EpisodeDecision::NothingDue,
        ] {
            assert!(!deactivates_workload(&kept), "{kept:?}");
            assert_eq!(suspend_without_workload(kept.clone()), kept);
        }
    }
}
