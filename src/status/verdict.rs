//! What the reconciler would do with each opted-in terminating pod: the reconciler's own plans,
//! [`plan::plan`] (the pod's decision, a recovery already recorded, the partition brake) and, for
//! a due pod of a Job, [`plan::plan_job`] over the Job's due pods as [`episode::due_pods`]
//! defines them for both commands. Nothing here decides on its own.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::options::RenderOptions;
use super::snapshot::Snapshot;
use crate::recovery::brake::{self, Disruption, Edges, Zone};
use crate::recovery::episode::{self, DuePod, JobKey, JobView, KnownPod, RecoveryState, job_owner};
use crate::recovery::plan::{self, JobFacts, JobPlan, Plan, PlanFacts};
use crate::recovery::{self, Ignored, NodeFacts, PodFacts, Recovery};

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
    /// `Plan::Ignore(KueueRecovers)`: Kueue's failure-recovery controller recovers it.
    KueueRecovers,
    /// `Plan::WaitForNode`.
    WaitingForNode,
    /// `Plan::WaitForSettle`.
    Settling(Timestamp),
    /// `Plan::Recover` on a pod whose recovery is recorded: only the delete is left.
    Recorded,
    /// `Plan::WaitForFinalizers`: recovered and force-deleted; these finalizers keep it.
    HeldByFinalizers(Vec<String>),
    /// `Plan::Hold`: the partition brake holds the pod's zone.
    Held(Disruption),
    /// `Plan::Recover` on a pod without a Job: no episode, no backoff.
    DueWithoutJob,
    /// `Plan::AskJob`: the Job's step ([`plan::plan_job`]), with the Job's recorded episode
    /// count.
    Job { plan: JobPlan, count: u32 },
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

/// Every pod of the snapshot the reconciler tracks (opted in and terminating: its plan does not
/// ignore it for that), sorted by namespace and name, with the reconciler's verdict at `now`.
pub(crate) fn pod_rows(
    snapshot: &Snapshot,
    options: &RenderOptions,
    now: Timestamp,
) -> Vec<PodRow> {
    let view = SnapshotView::new(snapshot, &options.config);
    let mut rows: Vec<PodRow> = view
        .pods
        .iter()
        .filter_map(|(pod, facts)| view.row(pod, facts, options, now))
        .collect();
    rows.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    rows
}

/// The snapshot as the plans read it: the facts of every pod and node, the zones.
struct SnapshotView<'a> {
    jobs: &'a [Job],
    pods: Vec<(&'a Pod, PodFacts)>,
    nodes: BTreeMap<&'a str, NodeFacts>,
    zones: BTreeMap<String, Zone>,
}

impl<'a> SnapshotView<'a> {
    fn new(snapshot: &'a Snapshot, config: &recovery::RecoveryConfig) -> SnapshotView<'a> {
        let nodes: BTreeMap<&str, NodeFacts> = snapshot
            .nodes
            .iter()
            .map(|(name, node)| (name.as_str(), recovery::read::node_facts(node)))
            .collect();
        SnapshotView {
            jobs: &snapshot.jobs,
            pods: snapshot
                .pods
                .iter()
                .map(|p| (p, recovery::read::pod_facts(p)))
                .filter(|(_, facts)| recovery::is_eligible(facts, config))
                .collect(),
            zones: brake::zones(nodes.values()),
            nodes,
        }
    }

    /// The pod's row, `None` when the reconciler does not track it. The plan is the
    /// reconciler's, without its memory of the zone's last throttled release and of when nodes
    /// became unreachable: the snapshot is judged as a settled view.
    fn row(
        &self,
        pod: &Pod,
        facts: &PodFacts,
        options: &RenderOptions,
        now: Timestamp,
    ) -> Option<PodRow> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let job = pod
            .metadata
            .owner_references
            .as_deref()
            .and_then(|refs| job_owner(&namespace, refs));
        let node = facts.node_name.as_deref().and_then(|n| self.nodes.get(n));
        let node_state = match (&facts.node_name, node) {
            (None, _) => NodeState::NotScheduled,
            (Some(_), None) => NodeState::Missing,
            (Some(_), Some(n)) if recovery::is_unreachable(n) => NodeState::Unreachable,
            (Some(_), Some(_)) => NodeState::Reachable,
        };
        let plan_facts = PlanFacts {
            pod: facts,
            node,
            zones: &self.zones,
            last_release: None,
            edges: Edges::default(),
            job: job.as_ref(),
            now,
        };
        let verdict = match plan::plan(plan_facts, &options.config, &options.brake) {
            Plan::Ignore(Ignored::NotOptedIn | Ignored::NotTerminating) => return None,
            Plan::Ignore(Ignored::NotScheduled) => PodVerdict::NotScheduled,
            Plan::Ignore(Ignored::NodeNotFound) => PodVerdict::NodeMissing,
            Plan::Ignore(Ignored::KueueRecovers) => PodVerdict::KueueRecovers,
            Plan::WaitForDeadline(at) => PodVerdict::WaitingForDeadline(at),
            Plan::WaitForNode { .. } => PodVerdict::WaitingForNode,
            Plan::WaitForSettle(at) => PodVerdict::Settling(at),
            Plan::Hold { disruption, .. } => PodVerdict::Held(disruption),
            Plan::Recover { recorded: true, .. } => PodVerdict::Recorded,
            Plan::WaitForFinalizers(finalizers) => PodVerdict::HeldByFinalizers(finalizers),
            Plan::Recover {
                recorded: false, ..
            } => PodVerdict::DueWithoutJob,
            Plan::AskJob { recovery, job, .. } => {
                self.job_verdict(pod, &recovery, &job, options, now)
            }
        };
        Some(PodRow {
            name: pod.metadata.name.clone().unwrap_or_default(),
            namespace,
            job,
            node: facts.node_name.clone(),
            node_state,
            deadline: facts
                .deletion_timestamp
                .map(|d| recovery::deadline(d, options.config.grace_period)),
            verdict,
        })
    }

    /// The Job's step for a due pod of `job`, over the Job's due pods among the snapshot's.
    fn job_verdict(
        &self,
        pod: &Pod,
        recovery: &Recovery,
        job: &JobKey,
        options: &RenderOptions,
        now: Timestamp,
    ) -> PodVerdict {
        let this = DuePod {
            namespace: job.namespace.clone(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            node: recovery.node.clone(),
            deadline: recovery.deadline,
            deletion_asked: recovery.deletion_asked(),
        };
        let known = self.pods.iter().map(|(pod, facts)| {
            let node = facts.node_name.as_deref();
            KnownPod {
                meta: &pod.metadata,
                node,
                node_unreachable: node
                    .and_then(|n| self.nodes.get(n))
                    .is_some_and(recovery::is_unreachable),
                recorded: recovery::record::recovery_recorded(facts),
            }
        });
        let due = episode::due_pods(this, job, known, options.config.grace_period, now);
        let (state, view) = self.job_view(job);
        let facts = JobFacts {
            job: view.map(|suspended| JobView {
                suspended,
                state: state.as_ref(),
                resource_version: None,
            }),
            due: &due,
            now,
            jitter: 0.0,
        };
        PodVerdict::Job {
            plan: plan::plan_job(facts, &options.episode),
            count: state.map_or(0, |s| s.count),
        }
    }

    /// The Job's recovery state and whether it exists (`Some(spec.suspend)`). The snapshot holds
    /// only the Jobs that carry a state: a Job not in it is taken for one without state; a Job of
    /// that name with another uid is another Job (the pod's is gone).
    fn job_view(&self, key: &JobKey) -> (Option<RecoveryState>, Option<bool>) {
        let same_name = self.jobs.iter().find(|j| {
            j.metadata.namespace.as_deref() == Some(key.namespace.as_str())
                && j.metadata.name.as_deref() == Some(key.name.as_str())
        });
        match same_name {
            None => (None, Some(false)),
            Some(job) if job.metadata.uid.as_deref() != Some(key.uid.as_str()) => (None, None),
            // An unreadable state counts as removed, as in the reconciler (the Jobs table says why).
            Some(job) => (
                RecoveryState::from_annotation(job.metadata.annotations.as_ref())
                    .ok()
                    .flatten(),
                Some(job.spec.as_ref().and_then(|s| s.suspend) == Some(true)),
            ),
        }
    }
}
