//! Recovery episodes of one Job: its due pods, backoff, limit and reset (KEP-1282 requeuing backoff).
//!
//! An *episode* is the forced recovery of all due pods of one Job at once. After episode `n` the
//! next one may not start before `requeueAt = t + d(n)` ([`Backoff`]); when the next one would
//! exceed `--recovery-backoff-limit-count`, jobgate stops (and may suspend the Job). The state lives
//! in the Job annotation [`RECOVERY_STATE_ANNOTATION`], modelled on Kueue's
//! `Workload.status.requeueState {count, requeueAt}` (KEP-1282).
//!
//! # Where this plugs into the reconciler
//!
//! The reconciler (KEP-6757) reconciles one pod at a time. For a due pod of a Job (its plan is
//! `Plan::AskJob`), the Job's step is planned purely by `plan::plan_job` over:
//!
//! 1. [`job_owner`] on the pod's `ownerReferences`: its Job (none: the pod is recovered without
//!    state, like bare pods and other controllers' pods);
//! 2. [`due_pods`]: the Job's due pods as that pod sees them (itself and every due sibling known),
//!    the one definition `jobgate reconcile` and `jobgate status` share, so a node that dies with
//!    8 pods of a Job makes one episode;
//! 3. the Job as read, and [`decide_episode`]: start an episode (write the state, then recover),
//!    a leftover of the recorded one (recover, no write), wait for the backoff, or the limit.
//!
//! The state is written *before* the pods are recovered: the annotation is the commit point, so
//! an episode is never uncounted. A pod of the Job whose deletion was asked before the episode
//! started is not made to wait for the next one: whether its recovery failed (a conflict on its
//! status, an API error, a restart) or it became due only after the episode started (its node was
//! tainted later in the same failure), it is recognised during the backoff as a leftover of the
//! recorded episode ([`EpisodeDecision::Leftover`]): one burst, one episode.
//!
//! # Kueue's requeues are not episodes
//!
//! The state is modelled on Kueue's `Workload.status.requeueState`, but it is a count of its own:
//! only jobgate's forced recoveries. Kueue's evictions of the Job's Workload are Kueue requeues,
//! counted in `requeueState` and toward Kueue's `backoffLimitCount`, never here, and an episode
//! is never a Kueue requeue. That includes Kueue 0.20's `waitForPodsReady.unscheduledTimeout`
//! (gate `WaitForPodsReadyUnscheduledTimeout`, kueue#15402): it evicts an admitted Workload whose
//! required pods stay unscheduled past the timeout through the path of the other PodsReady
//! timeouts (`reconcileNotReadyTimeout`: deactivation at `backoffLimitCount`, else `Evict` with
//! `UpdateRequeueState`, reason `PodsReadyTimeout`, underlying cause `WaitForScheduling`, event
//! `EvictedDueToPodsReadyTimeoutDueToWaitForScheduling`). Its pods have no node, so jobgate never
//! acts on them (`Ignored::NotScheduled`); the two meet only through the Job (the replacements of
//! recovered pods may be what stays unscheduled; the pods an eviction deletes may be stuck on an
//! unreachable node), so one partition can spend from both budgets. Reading `requeueState` here
//! would count those evictions twice, or make jobgate's limit depend on Kueue's API version.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use super::backoff::Backoff;

/// The Job annotation holding [`RecoveryState`] as JSON.
pub(crate) const RECOVERY_STATE_ANNOTATION: &str = "jobgate.dev/recovery-state";

/// Reason of the `Normal` event on the Job for each episode.
pub(crate) const EPISODE_REASON: &str = "RecoveryEpisode";
/// Reason of the `Warning` event on the Job when the limit stops recovery.
pub(crate) const LIMIT_EXCEEDED_REASON: &str = "RecoveryLimitExceeded";
/// `events.k8s.io/v1` `note` is limited to 1024 bytes (`NoteLengthLimit` in kube validation).
pub(crate) const EVENT_NOTE_LIMIT: usize = 1024;

/// What `--on-recovery-limit` does once the limit is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum LimitAction {
    /// Only stop recovering the Job's pods.
    Stop,
    /// Also set `spec.suspend: true` (the Job analogue of Kueue deactivating a Workload).
    Suspend,
    /// Also deactivate the Job's Kueue Workload (`spec.active: false`, what Kueue itself does at
    /// its requeuing limit, KEP-1282); Kueue would undo a `spec.suspend` of an admitted Job.
    DeactivateWorkload,
}

/// The limit marker: when the limit stopped recovery and what jobgate did then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LimitExceeded {
    pub(crate) time: Timestamp,
    pub(crate) action: LimitAction,
}

/// The value of [`RECOVERY_STATE_ANNOTATION`]:
/// `{"count": n, "requeueAt": "<RFC3339>", "lastRecoveryTime": "<RFC3339>", "lastNodes": [...]}`
/// plus `"limitExceeded": {"time": "<RFC3339>", "action": "Stop"|"Suspend"}` once the limit hit.
///
/// Missing keys read as zero/empty and unknown keys are ignored, so a hand-edited value stays
/// readable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecoveryState {
    /// Episodes so far (Kueue: `requeueState.count`).
    #[serde(default)]
    pub(crate) count: u32,
    /// The next episode may not start before this time (Kueue: `requeueState.requeueAt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) requeue_at: Option<Timestamp>,
    /// When the last episode started (second precision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_recovery_time: Option<Timestamp>,
    /// The unreachable nodes of the last episode, sorted.
    #[serde(default)]
    pub(crate) last_nodes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) limit_exceeded: Option<LimitExceeded>,
}

impl RecoveryState {
    /// Parses the annotation value. `None` when the annotation is absent.
    ///
    /// The caller treats an unreadable value like a removed one (a user edited it: count from zero)
    /// and logs the error.
    pub(crate) fn from_annotation(
        annotations: Option<&BTreeMap<String, String>>,
    ) -> Result<Option<RecoveryState>, serde_json::Error> {
        match annotations.and_then(|a| a.get(RECOVERY_STATE_ANNOTATION)) {
            None => Ok(None),
            Some(value) => serde_json::from_str(value).map(Some),
        }
    }

    /// The annotation value (compact JSON).
    pub(crate) fn to_annotation(&self) -> String {
        // Serializing plain strings, integers and timestamps cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// `--recovery-backoff-*` and `--on-recovery-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EpisodeConfig {
    pub(crate) backoff: Backoff,
    /// `--recovery-backoff-limit-count`: at most this many episodes per Job; `None`: unlimited.
    pub(crate) limit_count: Option<u32>,
    pub(crate) on_limit: LimitAction,
}

impl Default for EpisodeConfig {
    fn default() -> Self {
        EpisodeConfig {
            backoff: Backoff::default(),
            limit_count: None,
            on_limit: LimitAction::Stop,
        }
    }
}

/// A pod whose own recovery decision is "recover now" (terminating, annotated, past its deadline,
/// on an unreachable node).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct DuePod {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) node: String,
    /// `deletionTimestamp + --forceful-termination-grace-period`: due since then.
    pub(crate) deadline: Timestamp,
    /// When its deletion was asked: `deletionTimestamp - deletionGracePeriodSeconds`.
    pub(crate) deletion_asked: Timestamp,
}

/// The Job owning pods: the controller owner reference of kind `Job` in `batch/v1`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct JobKey {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
}

/// The Job that controls a pod, from the pod's namespace and `metadata.ownerReferences`.
/// Only the controller reference counts (the Job controller sets `controller: true`).
pub(crate) fn job_owner(
    pod_namespace: &str,
    owner_references: &[OwnerReference],
) -> Option<JobKey> {
    owner_references
        .iter()
        .find(|r| r.controller == Some(true))
        .filter(|r| r.kind == "Job" && r.api_version == "batch/v1")
        .map(|r| JobKey {
            namespace: pod_namespace.to_string(),
            name: r.name.clone(),
            uid: r.uid.clone(),
        })
}

/// One eligible pod (opted in, terminating) as a caller knows it: the reconciler from its store
/// of pods and what it remembers of them, `jobgate status` from its snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KnownPod<'a> {
    pub(crate) meta: &'a ObjectMeta,
    /// `spec.nodeName` as last read; `None` when not read yet or not scheduled.
    pub(crate) node: Option<&'a str>,
    /// Whether that node carries the `node.kubernetes.io/unreachable` taint.
    pub(crate) node_unreachable: bool,
    /// Its recovery is recorded on it already (`recovery_recorded`): no new intervention, so it
    /// joins no episode.
    pub(crate) recorded: bool,
}

/// The due pods of one Job as the pod at hand sees them: that pod and its due siblings, sorted,
/// without duplicates. The pod at hand is always among them, so every decision made over them
/// covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobDue {
    this: DuePod,
    pods: Vec<DuePod>,
}

impl JobDue {
    /// `this` and `others`; an entry of `others` for the same pod (namespace and name) gives way
    /// to `this`, which was read just now.
    pub(crate) fn new(this: DuePod, others: impl IntoIterator<Item = DuePod>) -> JobDue {
        let mut pods: Vec<DuePod> = others
            .into_iter()
            .filter(|p| p.namespace != this.namespace || p.name != this.name)
            .collect();
        pods.push(this.clone());
        pods.sort();
        pods.dedup();
        JobDue { this, pods }
    }

    /// The pod at hand.
    pub(crate) fn this(&self) -> &DuePod {
        &self.this
    }

    /// Every due pod of the Job, the pod at hand included, sorted.
    pub(crate) fn pods(&self) -> &[DuePod] {
        &self.pods
    }
}

/// The one definition of a Job's due pods: `this` (due by its own plan) and every pod among
/// `known` controlled by `job` (same uid), past `deletionTimestamp + grace_period`, on a node
/// known to be unreachable, and not recorded yet. The reconciler passes the eligible pods of
/// its store, `jobgate status` those of its snapshot, so one episode covers every pod of the Job
/// that is due, not only the pod being reconciled.
pub(crate) fn due_pods<'a>(
    this: DuePod,
    job: &JobKey,
    known: impl IntoIterator<Item = KnownPod<'a>>,
    grace_period: Duration,
    now: Timestamp,
) -> JobDue {
    let grace = SignedDuration::try_from(grace_period).unwrap_or(SignedDuration::MAX);
    let siblings = known.into_iter().filter_map(|pod| {
        let namespace = pod.meta.namespace.as_deref()?;
        let owner = job_owner(namespace, pod.meta.owner_references.as_deref()?)?;
        let deleted = pod.meta.deletion_timestamp.as_ref()?.0;
        // Saturation means "never": such a pod is not due.
        let deadline = deleted.checked_add(grace).ok()?;
        let pod_grace = pod.meta.deletion_grace_period_seconds.unwrap_or(0).max(0);
        let deletion_asked = deleted
            .checked_sub(SignedDuration::from_secs(pod_grace))
            .unwrap_or(Timestamp::MIN);
        let node = pod.node.filter(|n| !n.is_empty() && pod.node_unreachable)?;
        (owner == *job && deadline <= now && !pod.recorded).then(|| DuePod {
            namespace: namespace.to_string(),
            name: pod.meta.name.clone().unwrap_or_default(),
            node: node.to_string(),
            deadline,
            deletion_asked,
        })
    });
    JobDue::new(this, siblings)
}

/// What the Job's step reads of the Job.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JobView<'a> {
    /// `spec.suspend == true`.
    pub(crate) suspended: bool,
    /// The parsed annotation; `None` when absent (or unreadable).
    pub(crate) state: Option<&'a RecoveryState>,
    /// `metadata.resourceVersion` as read: the precondition of a state write.
    pub(crate) resource_version: Option<&'a str>,
}

/// What a Job's recovery episodes say about the pod at hand ([`JobDue::this`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EpisodeDecision {
    /// Start episode `new_state.count`: write `new_state`, then recover exactly `pods` (every due
    /// pod of the Job, the pod at hand among them). `reset` is true when the previous count was
    /// discarded (the Job was resumed).
    Recover {
        pods: Vec<DuePod>,
        new_state: RecoveryState,
        reset: bool,
    },
    /// During the recorded episode's backoff, the pod at hand is one of its leftovers: its
    /// deletion was asked before the episode started (the same failure reached its node later,
    /// or its recovery failed or was interrupted, e.g. a conflict on the pod status or a
    /// restart). Recover it without a new episode and without writing.
    Leftover,
    /// The previous episode was too recent: requeue the pod for this time, do not drop it.
    WaitUntil(Timestamp),
    /// The next episode would exceed the limit: recover nothing. When `new_state` is `Some`, this
    /// is news: write it (with `spec.suspend: true` when `suspend`) and emit the Warning event;
    /// when `None`, it was already recorded.
    LimitExceeded {
        suspend: bool,
        new_state: Option<RecoveryState>,
    },
}

/// Whether the recorded state is void because the user resumed a Job that jobgate suspended
/// (Kueue resets `requeueState` when a deactivated Workload is re-activated).
pub(crate) fn resumed_after_suspend(state: &RecoveryState, job_suspended: bool) -> bool {
    matches!(
        state.limit_exceeded,
        Some(LimitExceeded {
            action: LimitAction::Suspend,
            ..
        })
    ) && !job_suspended
}

/// The episode decision for the pod at hand, over the due pods of its Job at `now`; `jitter`
/// in [0, 1) is random.
///
/// Order: reset, then backoff, then limit. The limit is checked only when the episode could
/// start, like Kueue deactivating a Workload at the eviction that would exceed
/// `backoffLimitCount`: a node that comes back during the backoff must not get the Job
/// suspended.
pub(crate) fn decide_episode(
    due: &JobDue,
    job: JobView<'_>,
    config: &EpisodeConfig,
    now: Timestamp,
    jitter: f64,
) -> EpisodeDecision {
    let reset = job
        .state
        .is_some_and(|s| resumed_after_suspend(s, job.suspended));
    let prior = match job.state {
        Some(state) if !reset => state.clone(),
        _ => RecoveryState::default(),
    };
    if let Some(at) = prior.requeue_at
        && now < at
    {
        return if leftover_of(&prior, due.this()) {
            EpisodeDecision::Leftover
        } else {
            EpisodeDecision::WaitUntil(at)
        };
    }
    let next = prior.count.saturating_add(1);
    if let Some(limit) = config.limit_count
        && next > limit
    {
        return at_the_limit(prior, config, now);
    }
    let pods = due.pods().to_vec();
    let episode_time = truncate_to_second(now);
    let new_state = RecoveryState {
        count: next,
        requeue_at: Some(config.backoff.requeue_at(episode_time, next, jitter)),
        last_recovery_time: Some(episode_time),
        last_nodes: nodes_of(&pods),
        limit_exceeded: None,
    };
    EpisodeDecision::Recover {
        pods,
        new_state,
        reset,
    }
}

/// The next episode would exceed `--recovery-backoff-limit-count`: the limit is news unless the
/// state already records it (and the action it took still holds).
fn at_the_limit(prior: RecoveryState, config: &EpisodeConfig, now: Timestamp) -> EpisodeDecision {
    let already_recorded = match &prior.limit_exceeded {
        None => false,
        // Still suspended (else `decide_episode` reset it): nothing more to do.
        Some(LimitExceeded {
            action: LimitAction::Suspend,
            ..
        }) => true,
        // Deactivated: still in force until the annotation is removed (jobgate cannot see
        // the Workload re-activated here).
        Some(LimitExceeded {
            action: LimitAction::DeactivateWorkload,
            ..
        }) => true,
        // Stopped earlier; act now if the operator switched to an acting action since.
        Some(LimitExceeded {
            action: LimitAction::Stop,
            ..
        }) => config.on_limit == LimitAction::Stop,
    };
    let new_state = (!already_recorded).then(|| RecoveryState {
        limit_exceeded: Some(LimitExceeded {
            time: truncate_to_second(now),
            action: config.on_limit,
        }),
        ..prior
    });
    EpisodeDecision::LimitExceeded {
        suspend: config.on_limit == LimitAction::Suspend,
        new_state,
    }
}

/// Whether `pod` belongs to the episode recorded in `state`: its deletion was asked before the
/// episode started (within the episode's second: the episode time is truncated), and the limit
/// has not stopped recovery since. One burst, one episode: the episode takes every pod of the Job
/// that was already being deleted when it started, on whatever node, also those due only later
/// (kube-controller-manager taints the nodes of a healthy zone one every 10 s: its
/// `zoneNoExecuteTainter` is rate-limited at `--node-eviction-rate` 0.1 with a burst of 1,
/// `pkg/controller/nodelifecycle`; so one failure reaches a Job's nodes seconds apart), and the
/// pods whose recovery failed or was interrupted. A replacement the episode's recovery made room
/// for is created, and so deleted, after it started: its recovery is the next episode.
fn leftover_of(state: &RecoveryState, pod: &DuePod) -> bool {
    let Some(started) = state.last_recovery_time else {
        return false;
    };
    let asked_before_start = started
        .checked_add(SignedDuration::from_secs(1))
        .is_ok_and(|next_second| pod.deletion_asked < next_second);
    state.limit_exceeded.is_none() && asked_before_start
}

/// `metav1.Time` precision: whole seconds.
fn truncate_to_second(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// The distinct nodes of `pods`, sorted.
pub(crate) fn nodes_of(pods: &[DuePod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.node.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The note of the `Normal` event on the Job for an episode, at most [`EVENT_NOTE_LIMIT`] bytes.
pub(crate) fn episode_note(pods: &[DuePod], state: &RecoveryState) -> String {
    let nodes = nodes_of(pods);
    let next = match state.requeue_at {
        Some(at) => format!("; next episode not before {at}"),
        None => String::new(),
    };
    let head = format!(
        "Recovery episode {}: forcefully terminating {} pod(s) on unreachable node(s) {}",
        state.count,
        pods.len(),
        join_limited(nodes.iter().map(String::as_str), 300),
    );
    let budget = EVENT_NOTE_LIMIT.saturating_sub(head.len() + next.len() + 2);
    let names = join_limited(pods.iter().map(|p| p.name.as_str()), budget);
    format!("{head}: {names}{next}")
}

/// The note of the `Warning RecoveryLimitExceeded` event, at most [`EVENT_NOTE_LIMIT`] bytes.
pub(crate) fn limit_note(pods: &[DuePod], limit: u32, action: LimitAction) -> String {
    let nodes = nodes_of(pods);
    let tail = match action {
        LimitAction::Suspend => format!(
            "; suspended the Job (spec.suspend=true). Resume the Job or remove the annotation \
             {RECOVERY_STATE_ANNOTATION} to allow recovery again"
        ),
        LimitAction::Stop => format!(
            "; stopped recovering this Job. Remove the annotation {RECOVERY_STATE_ANNOTATION} to \
             allow recovery again"
        ),
        LimitAction::DeactivateWorkload => format!(
            "; deactivated the Job's Kueue Workload (spec.active=false). Remove the annotation \
             {RECOVERY_STATE_ANNOTATION} and re-activate the Workload to allow recovery again"
        ),
    };
    let head = format!(
        "Recovery limit of {limit} episode(s) reached: not forcefully terminating {} pod(s) on \
         unreachable node(s) {}",
        pods.len(),
        join_limited(nodes.iter().map(String::as_str), 300),
    );
    let budget = EVENT_NOTE_LIMIT.saturating_sub(head.len() + tail.len() + 2);
    let names = join_limited(pods.iter().map(|p| p.name.as_str()), budget);
    format!("{head}: {names}{tail}")
}

/// `a, b, c` within `budget` bytes; what does not fit becomes ` and N more`.
fn join_limited<'a>(items: impl ExactSizeIterator<Item = &'a str>, budget: usize) -> String {
    const MORE_RESERVE: usize = " and 4294967295 more".len();
    let total = items.len();
    let mut out = String::new();
    for (i, item) in items.enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let remaining_after = total - i - 1;
        let reserve = if remaining_after == 0 {
            0
        } else {
            MORE_RESERVE
        };
        if out.len() + sep.len() + item.len() + reserve > budget {
            out.push_str(&format!(" and {} more", total - i));
            return out;
        }
        out.push_str(sep);
        out.push_str(item);
    }
    out
}

#[cfg(test)]
mod tests;
