//! What the reconciler would do with each opted-in terminating pod: the reconciler's own plan
//! ([`plan::plan`]: the pod's decision, a recovery already recorded, the partition brake) and,
//! for a due pod of a Job, [`decide_episode`] + [`pod_gate`] over the Job's due pods. Nothing
//! here decides on its own.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;

use super::Snapshot;
use crate::recovery::brake::{self, BrakeConfig, Disruption};
use crate::recovery::episode::{
    DuePod, EpisodeConfig, JobKey, JobView, PodGate, RecoveryState, decide_episode, group_by_job,
    job_owner, pod_gate,
};
use crate::recovery::plan::{self, Plan, PlanFacts};
use crate::recovery::{self, Ignored, NodeFacts};

/// The settings of the decisions (the reconciler's flags, see `RecoveryArgs`).
#[derive(Debug, Clone)]
pub(crate) struct RenderOptions {
    pub(crate) config: recovery::Config,
    pub(crate) episode: EpisodeConfig,
    pub(crate) brake: BrakeConfig,
}

/// The node of a pod as the status shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeState {
    NotScheduled,
    Missing,
    Reachable,
    Unreachable,
}

impl NodeState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NodeState::NotScheduled => "not scheduled",
            NodeState::Missing => "missing",
            NodeState::Reachable => "reachable",
            NodeState::Unreachable => "unreachable",
        }
    }
}

/// What the reconciler does with a pod on its next pass.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PodVerdict {
    /// `Plan::WaitForDeadline`.
    WaitingForDeadline(Timestamp),
    /// `Plan::Ignore(NotScheduled)`.
    NotScheduled,
    /// `Plan::Ignore(NodeNotFound)`.
    NodeMissing,
    /// `Plan::WaitForNode`.
    WaitingForNode,
    /// `Plan::Recover` on a pod whose recovery is recorded: only the delete is left.
    Recorded,
    /// `Plan::Hold`: the partition brake holds the pod's zone.
    Held(Disruption),
    /// `Plan::Recover` on a pod without a Job: no episode, no backoff.
    DueWithoutJob,
    /// `Plan::AskJob`: what the Job's episode decision says, with the
    /// Job's recorded episode count.
    Job { gate: PodGate, count: u32 },
}

/// One opted-in terminating pod.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PodRow {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) job: Option<JobKey>,
    pub(crate) node: Option<String>,
    pub(crate) node_state: NodeState,
    /// `deletionTimestamp + grace period`.
    pub(crate) deadline: Option<Timestamp>,
    pub(crate) verdict: PodVerdict,
}

/// (namespace, name) -> (state, `spec.suspend`, annotation parse error).
pub(crate) type JobStates =
    BTreeMap<(String, String), (Option<RecoveryState>, bool, Option<String>)>;

/// The Jobs of the snapshot that carry a recovery state annotation (readable or not).
pub(crate) fn job_states(snapshot: &Snapshot) -> JobStates {
    let mut states = JobStates::new();
    for job in &snapshot.jobs {
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let name = job.metadata.name.clone().unwrap_or_default();
        let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
        let (state, error) = match RecoveryState::from_annotation(job.metadata.annotations.as_ref())
        {
            Ok(state) => (state, None),
            Err(err) => (None, Some(err.to_string())),
        };
        if state.is_none() && error.is_none() {
            continue;
        }
        states.insert((ns, name), (state, suspended, error));
    }
    states
}

/// Every opted-in terminating pod of the snapshot ([`recovery::is_eligible`]), sorted by
/// namespace and name, with the reconciler's verdict at `now`.
pub(crate) fn pod_rows(
    snapshot: &Snapshot,
    options: &RenderOptions,
    now: Timestamp,
) -> Vec<PodRow> {
    let config = &options.config;
    let all_nodes: Vec<NodeFacts> = snapshot.nodes.values().map(recovery::node_facts).collect();
    let zones = brake::zones(&all_nodes);
    let mut rows: Vec<(PodRow, Option<DuePod>)> = Vec::new();
    for pod in &snapshot.pods {
        let facts = recovery::pod_facts(pod);
        if !recovery::is_eligible(&facts, config) {
            continue;
        }
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let job = pod
            .metadata
            .owner_references
            .as_deref()
            .and_then(|refs| job_owner(&namespace, refs));
        let node = facts
            .node_name
            .as_deref()
            .and_then(|n| snapshot.nodes.get(n))
            .map(recovery::node_facts);
        let node_state = match (&facts.node_name, &node) {
            (None, _) => NodeState::NotScheduled,
            (Some(_), None) => NodeState::Missing,
            (Some(_), Some(n)) if recovery::is_unreachable(n) => NodeState::Unreachable,
            (Some(_), Some(_)) => NodeState::Reachable,
        };
        // The reconciler's plan, without its memory of the zone's last throttled release.
        let facts_of = PlanFacts {
            pod: &facts,
            node: node.as_ref(),
            zones: &zones,
            last_release: None,
            job: job.as_ref(),
            now,
        };
        let mut due = None;
        let verdict = match plan::plan(facts_of, config, &options.brake) {
            Plan::WaitForDeadline(at) => PodVerdict::WaitingForDeadline(at),
            Plan::Ignore(Ignored::NotScheduled) => PodVerdict::NotScheduled,
            // Eligible pods are opted in and terminating: only a missing node is left.
            Plan::Ignore(_) => PodVerdict::NodeMissing,
            Plan::WaitForNode { .. } => PodVerdict::WaitingForNode,
            Plan::Recover { recorded: true, .. } => PodVerdict::Recorded,
            Plan::Hold { disruption, .. } => PodVerdict::Held(disruption),
            Plan::Recover {
                recorded: false, ..
            } => PodVerdict::DueWithoutJob,
            Plan::AskJob { recovery: r, .. } => {
                due = Some(DuePod {
                    namespace: namespace.clone(),
                    name: pod.metadata.name.clone().unwrap_or_default(),
                    node: r.node.clone(),
                    deadline: r.deadline,
                });
                // Filled in below, once every due pod of the Job is known.
                PodVerdict::Job {
                    gate: PodGate::NotCovered,
                    count: 0,
                }
            }
        };
        rows.push((
            PodRow {
                namespace,
                name: pod.metadata.name.clone().unwrap_or_default(),
                job,
                node: facts.node_name.clone(),
                node_state,
                deadline: facts
                    .deletion_timestamp
                    .map(|d| recovery::deadline(d, config.grace_period)),
                verdict,
            },
            due,
        ));
    }

    // All due pods of a Job form one episode, as in the reconciler's `due_with_siblings`.
    let states = job_states(snapshot);
    let episodes = group_by_job(
        rows.iter()
            .filter_map(|(row, due)| due.clone().map(|d| (row.job.clone(), d))),
    );
    let mut decisions = BTreeMap::new();
    for (job, pods) in &episodes.by_job {
        let (state, suspended) = match states.get(&(job.namespace.clone(), job.name.clone())) {
            Some((state, suspended, _)) => (state.as_ref(), *suspended),
            None => (None, false),
        };
        let view = JobView { suspended, state };
        let decision = decide_episode(pods, view, &options.episode, now, 0.0);
        decisions.insert(job.clone(), (decision, state.map_or(0, |s| s.count)));
    }
    let mut out: Vec<PodRow> = rows
        .into_iter()
        .map(|(mut row, due)| {
            if let (Some(due), Some(job)) = (due, &row.job)
                && let Some((decision, count)) = decisions.get(job)
            {
                row.verdict = PodVerdict::Job {
                    gate: pod_gate(decision, &due),
                    count: *count,
                };
            }
            row
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    out
}
