//! The one answer to "what happens to this pod now", in two pure steps that `jobgate reconcile`
//! executes and `jobgate status` prints; neither composes them on its own:
//!
//! - [`plan`], the pod's step: the pod's own decision ([`decide`]: opt-in, terminating, deadline,
//!   then the node, in Kueue's order), a recovery already recorded on the pod, the partition
//!   brake on a settled view of the nodes ([`brake::settling`], [`brake::brake`]); a due pod of
//!   a Job ends in [`Plan::AskJob`];
//! - [`plan_job`], the Job's step for such a pod: over the Job as read and its due pods
//!   ([`episode::due_pods`], one definition for both commands), the Job's recovery episode
//!   (`episode::decide_episode`) and the one Job write it needs ([`JobRecord`]).

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use k8s_openapi::jiff::Timestamp;

use super::brake::{self, BrakeConfig, BrakeDecision, Disruption, Edges, LastRelease, Zone};
use super::episode::{
    self, DuePod, EpisodeConfig, EpisodeDecision, JobDue, JobKey, JobView, LimitAction,
    RecoveryState, episode_note, limit_note,
};
use super::facts::{NodeFacts, PodFacts};
use super::record::{Recovery, recovery_recorded};
use super::{Decision, Ignored, RecoveryConfig, decide, held_by_finalizers};

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
    /// When the node stream delivered rising edges of the unreachable taint, as the reconciler
    /// remembers them (status has no such memory: none, a settled view).
    pub(crate) edges: Edges,
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
    /// Due, but the node stream has not settled (a node became unreachable within the settle
    /// period): the partition brake judges the zones at this time, on everything the stream
    /// delivered by then.
    WaitForSettle(Timestamp),
    /// Due, but the partition brake holds the pod's zone: until the zone heals, or (`until`) the
    /// zone's next throttled release.
    Hold {
        disruption: Disruption,
        until: Option<Timestamp>,
    },
    /// Recovered and force-deleted, but still present: these finalizers hold it. Nothing to do
    /// until their controllers remove them (a delete again would change nothing).
    WaitForFinalizers(Vec<String>),
    /// Due: record the recovery (unless `recorded`: only the delete is left) and delete the pod.
    /// `release`: the throttled release of the zone to remember.
    Recover {
        recovery: Recovery,
        recorded: bool,
        release: Option<LastRelease>,
    },
    /// Due, of a Job: the Job's step decides next ([`plan_job`]); the pod is recovered as in
    /// `Recover` (never recorded yet) when it says so.
    AskJob {
        recovery: Recovery,
        job: JobKey,
        release: Option<LastRelease>,
    },
}

/// The plan for one pod. A recovery already recorded on the pod is no new intervention: the
/// brake and the Job's episode do not apply to it.
pub(crate) fn plan(
    facts: PlanFacts<'_>,
    config: &RecoveryConfig,
    brake_config: &BrakeConfig,
) -> Plan {
    let recovery = match pod_recovery(facts, config) {
        ControlFlow::Continue(recovery) => recovery,
        ControlFlow::Break(plan) => return plan,
    };
    if recovery_recorded(facts.pod) {
        return Plan::Recover {
            recovery,
            recorded: true,
            release: None,
        };
    }
    let release = match zone_release(facts, brake_config) {
        ControlFlow::Continue(release) => release,
        ControlFlow::Break(plan) => return plan,
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

/// The pod's own step ([`decide`]): the recovery it is due, or the plan that ends here.
fn pod_recovery(facts: PlanFacts<'_>, config: &RecoveryConfig) -> ControlFlow<Plan, Recovery> {
    let decision = decide(facts.pod, facts.node, facts.now, config);
    // Recovered and force-deleted: the delete moved `deletionTimestamp` to its own time, so the
    // deadline and the node say nothing more; only the finalizers' controllers can let it go.
    if !matches!(decision, Decision::Ignore(_))
        && let Some(finalizers) = held_by_finalizers(facts.pod)
    {
        return ControlFlow::Break(Plan::WaitForFinalizers(finalizers.to_vec()));
    }
    match decision {
        Decision::Ignore(reason) => ControlFlow::Break(Plan::Ignore(reason)),
        Decision::RequeueAt(at) => ControlFlow::Break(Plan::WaitForDeadline(at)),
        Decision::WaitForNode { node } => ControlFlow::Break(Plan::WaitForNode { node }),
        Decision::Recover(recovery) => ControlFlow::Continue(recovery),
    }
}

/// The partition brake's step, on a settled view of the nodes: the throttled release of the
/// pod's zone to remember (if any), or the plan that waits or holds the pod.
fn zone_release(
    facts: PlanFacts<'_>,
    brake_config: &BrakeConfig,
) -> ControlFlow<Plan, Option<LastRelease>> {
    // `decide` recovers only with the pod's node in hand.
    let Some(node) = facts.node else {
        return ControlFlow::Continue(None);
    };
    if let Some(at) = brake::settling(node, facts.edges, facts.now, brake_config) {
        return ControlFlow::Break(Plan::WaitForSettle(at));
    }
    match brake::brake(
        node,
        facts.zones,
        facts.last_release,
        facts.now,
        brake_config,
    ) {
        BrakeDecision::Release => ControlFlow::Continue(None),
        BrakeDecision::ReleaseThrottled => ControlFlow::Continue(Some(LastRelease {
            zone: node.zone.clone(),
            node: node.name.clone(),
            at: facts.now,
        })),
        BrakeDecision::Throttled(disruption, at) => ControlFlow::Break(Plan::Hold {
            disruption,
            until: Some(at),
        }),
        BrakeDecision::Hold(disruption) => ControlFlow::Break(Plan::Hold {
            disruption,
            until: None,
        }),
    }
}

/// What [`plan_job`] reads, at one instant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobFacts<'a> {
    /// The Job as read; `None` when it is gone, or another Job (another uid) has its name.
    pub(crate) job: Option<JobView<'a>>,
    /// The Job's due pods as the pod at hand sees them ([`episode::due_pods`]).
    pub(crate) due: &'a JobDue,
    pub(crate) now: Timestamp,
    /// The backoff jitter, in [0, 1) (`rand::random`; 0 in `jobgate status`).
    pub(crate) jitter: f64,
}

/// The Job's step for one of its due pods ([`Plan::AskJob`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum JobPlan {
    /// The Job is gone (or replaced): the pod is an orphan, recovered without state.
    Orphan,
    /// A leftover of the recorded episode: recovered without a Job write.
    Leftover,
    /// A new episode: record it on the Job, then recover the pod; its due siblings join the
    /// episode as leftovers.
    Start(JobRecord),
    /// The Job's backoff: look again at this time.
    Backoff(Timestamp),
    /// The Job's limit stops recovery. `Some`: the limit is news, record it now.
    Limit(Option<JobRecord>),
}

impl JobPlan {
    /// The Job write this step starts with, if any.
    pub(crate) fn record(&self) -> Option<&JobRecord> {
        match self {
            JobPlan::Start(record) | JobPlan::Limit(Some(record)) => Some(record),
            JobPlan::Orphan | JobPlan::Leftover | JobPlan::Backoff(_) | JobPlan::Limit(None) => {
                None
            }
        }
    }
}

/// The one Job write of a step: its recovery state (with `spec.suspend: true` when `suspend`),
/// conditional on the resourceVersion read, after deactivating its Kueue Workload when
/// `deactivate_workload`; then its event.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JobRecord {
    /// `metadata.resourceVersion` as read: the write's precondition.
    pub(crate) resource_version: Option<String>,
    pub(crate) state: RecoveryState,
    pub(crate) suspend: bool,
    /// `--on-recovery-limit=deactivate-workload`: set the Job's Kueue Workload `spec.active:
    /// false` first; without a Workload, [`JobRecord::without_workload`].
    pub(crate) deactivate_workload: bool,
    pub(crate) event: JobEvent,
    /// The Job's due pods the record is about: the episode's pods, or those the limit stops.
    pub(crate) pods: Vec<DuePod>,
}

/// The event that follows a [`JobRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobEvent {
    /// `Normal RecoveryEpisode`, naming the episode's pods and nodes.
    Episode,
    /// `Warning RecoveryLimitExceeded` at `limit` episodes, after `action`; `fallback`:
    /// deactivate-workload fell back to suspend.
    LimitExceeded {
        limit: u32,
        action: LimitAction,
        fallback: bool,
    },
}

impl JobRecord {
    /// The event's note, at most 1 KiB.
    pub(crate) fn note(&self) -> String {
        match self.event {
            JobEvent::Episode => episode_note(&self.pods, &self.state),
            JobEvent::LimitExceeded {
                limit,
                action,
                fallback,
            } => {
                let note = limit_note(&self.pods, limit, action);
                if fallback {
                    format!(
                        "No Kueue Workload owns this Job: --on-recovery-limit=deactivate-workload \
                         fell back to suspend. {note}"
                    )
                } else {
                    note
                }
            }
        }
    }

    /// `--on-recovery-limit=deactivate-workload` for a Job no Kueue Workload owns: the Job is
    /// suspended instead, the state records that action, and the Warning says so.
    pub(crate) fn without_workload(mut self) -> JobRecord {
        if !self.deactivate_workload {
            return self;
        }
        self.deactivate_workload = false;
        self.suspend = true;
        if let Some(limit) = self.state.limit_exceeded.as_mut() {
            limit.action = LimitAction::Suspend;
        }
        if let JobEvent::LimitExceeded {
            action, fallback, ..
        } = &mut self.event
        {
            *action = LimitAction::Suspend;
            *fallback = true;
        }
        self
    }
}

/// The Job's step for a due pod of the Job: its episode decision over the Job's due pods, and
/// the Job write that goes with it.
pub(crate) fn plan_job(facts: JobFacts<'_>, config: &EpisodeConfig) -> JobPlan {
    let Some(job) = facts.job else {
        return JobPlan::Orphan;
    };
    let record = |state, suspend, deactivate_workload, event, pods| JobRecord {
        resource_version: job.resource_version.map(String::from),
        state,
        suspend,
        deactivate_workload,
        event,
        pods,
    };
    match episode::decide_episode(facts.due, job, config, facts.now, facts.jitter) {
        EpisodeDecision::Recover {
            pods, new_state, ..
        } => JobPlan::Start(record(new_state, false, false, JobEvent::Episode, pods)),
        EpisodeDecision::Leftover => JobPlan::Leftover,
        EpisodeDecision::WaitUntil(at) => JobPlan::Backoff(at),
        EpisodeDecision::LimitExceeded { new_state, suspend } => {
            JobPlan::Limit(new_state.map(|state| {
                let event = JobEvent::LimitExceeded {
                    limit: config.limit_count.unwrap_or(0),
                    action: config.on_limit,
                    fallback: false,
                };
                let deactivate = config.on_limit == LimitAction::DeactivateWorkload;
                record(state, suspend, deactivate, event, facts.due.pods().to_vec())
            }))
        }
    }
}

#[cfg(test)]
mod tests;
