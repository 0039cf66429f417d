//! Failure recovery of pods stuck terminating on unreachable nodes (Kueue KEP-6757), as pure
//! functions: `(pod, node, now, config) -> Decision`, the node's rising-edge predicate, and the
//! status patch that records a recovery. No I/O, no async, no clock: `now` is a parameter.
//!
//! Semantics follow Kueue's `pkg/controller/failurerecovery/pod_termination_controller.go`
//! (after kueue#9651 "forcefully remove stuck pods" and kueue#10853 "forcefully delete
//! Failed/Succeeded pods that are stuck on unreachable nodes"), with these deliberate differences:
//! - the annotation key is configurable (any of `RecoveryConfig::annotation_keys`), and the message names
//!   the key that actually opted the pod in;
//! - a pod without `spec.nodeName` is ignored (Kueue asks the API for a node named "" and errors);
//! - the grace period in the message is `deletionGracePeriodSeconds + threshold` in seconds
//!   (`90s`); Kueue adds the seconds as nanoseconds and prints Go's `Duration` (`1m0.00000003s`).
//! - the reason jobgate writes is `KueueForcefullyTerminated`, Kueue's original
//!   `KueueForcefulTerminationReason`. Kueue 0.15.6, 0.16.3 and 0.17.0 renamed the value to
//!   `KueueForcefullyDeleted` (kueue#9651, backported as kueue#9672 and kueue#9673); a `True`
//!   condition with either reason counts as a recorded recovery ([`RECORDED_REASONS`]) and is
//!   left as written, in either form Kueue has written it: appended on every reconcile without a
//!   `lastTransitionTime` before kueue#16033, set once with one from it (v0.20.0). So a pod
//!   Kueue's own controller already recovered gets no second condition, event or episode.

pub(crate) mod backoff;
pub(crate) mod brake;
pub(crate) mod episode;
pub(crate) mod facts;
pub(crate) mod plan;
pub(crate) mod read;
pub(crate) mod record;

#[cfg(test)]
mod tests;

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::kueue::OPT_IN_VALUE;
// The `pub(crate)` ones are for code outside `recovery` (`recovery::PodFacts`). The files here
// take them from `facts` and `record` themselves: a file this one imports never imports it back.
use facts::is_terminal_phase;
pub(crate) use facts::{NodeFacts, PodFacts, is_unreachable};
pub(crate) use record::Recovery;
use record::recovery_recorded;

/// Reason of the `Normal` event `--dry-run` emits instead of acting.
pub(crate) const DRY_RUN_REASON: &str = "WouldForcefullyTerminate";
/// Default `--forceful-termination-grace-period` (Kueue's default `time.Minute`).
pub(crate) const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(60);

/// Settings of the decision.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveryConfig {
    /// Annotation keys that opt a pod in with the value `"true"`, in priority order.
    pub(crate) annotation_keys: Vec<String>,
    /// Time after `metadata.deletionTimestamp` before a pod may be recovered
    /// (`--forceful-termination-grace-period`).
    pub(crate) grace_period: Duration,
    /// Kueue's own failure-recovery controller recovers the pods opted in with the key it reads
    /// ([`SAFE_TO_FORCEFULLY_DELETE`](crate::kueue::SAFE_TO_FORCEFULLY_DELETE)): jobgate leaves
    /// them to it, so no pod is acted on by both (`--kueue-recovers`).
    pub(crate) kueue_recovers: bool,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            annotation_keys: crate::kueue::RECOVERY_ANNOTATION_KEYS
                .iter()
                .map(|k| k.to_string())
                .collect(),
            grace_period: DEFAULT_GRACE_PERIOD,
            kueue_recovers: true,
        }
    }
}

/// What to do with one pod now.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Decision {
    /// Never act on this pod in its current state.
    Ignore(Ignored),
    /// Opted in and terminating, but the deadline has not come: look again at exactly this time.
    RequeueAt(Timestamp),
    /// Past the deadline, but the node is reachable: wait for the node watch to see the node
    /// gain the unreachable taint (rising edge), then decide again.
    WaitForNode { node: String },
    /// Past the deadline on an unreachable node: record the recovery and delete the pod.
    Recover(Recovery),
}

/// Why a pod is ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// No configured annotation key has the value `"true"`.
    NotOptedIn,
    /// `metadata.deletionTimestamp` is not set.
    NotTerminating,
    /// `spec.nodeName` is empty: no node to be unreachable.
    NotScheduled,
    /// The pod's node does not exist (Kueue: `client.IgnoreNotFound`).
    NodeNotFound,
    /// Opted in with the key Kueue's failure-recovery controller reads, which recovers it
    /// (`--kueue-recovers`): jobgate leaves it to Kueue.
    KueueRecovers,
}

impl Ignored {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Ignored::NotOptedIn => "not-opted-in",
            Ignored::NotTerminating => "not-terminating",
            Ignored::NotScheduled => "not-scheduled",
            Ignored::NodeNotFound => "node-not-found",
            Ignored::KueueRecovers => "kueue-recovers",
        }
    }
}

/// The first configured annotation key whose value is exactly `"true"`.
pub(crate) fn opted_in_key<'a>(pod: &PodFacts, config: &'a RecoveryConfig) -> Option<&'a str> {
    config
        .annotation_keys
        .iter()
        .find(|key| pod.annotations.get(key.as_str()).map(String::as_str) == Some(OPT_IN_VALUE))
        .map(String::as_str)
}

/// Whether Kueue's failure-recovery controller recovers this pod (Kueue 0.15.6+ with its
/// `FailureRecoveryPolicy` gate reads `kueue.x-k8s.io/safe-to-forcefully-delete: "true"`,
/// `pkg/controller/failurerecovery/pod_termination_controller.go`), whichever other key opts it
/// in: a pod recovered by both would be patched, evented and deleted twice, and Kueue's
/// recoveries would escape jobgate's brake and backoff unseen.
pub(crate) fn left_to_kueue(pod: &PodFacts, config: &RecoveryConfig) -> bool {
    config.kueue_recovers
        && pod
            .annotations
            .get(crate::kueue::SAFE_TO_FORCEFULLY_DELETE)
            .map(String::as_str)
            == Some(OPT_IN_VALUE)
}

/// The controller that recovers a pod opted into recovery, read as the reconciler reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recoverer<'a> {
    /// Kueue's failure-recovery controller ([`left_to_kueue`]).
    Kueue,
    /// jobgate's reconciler, for a pod opted in with `key`.
    Jobgate { key: &'a str },
}

/// Who recovers `pod` once it is stuck terminating on an unreachable node; `None` when no key
/// opts it in. What `check` says of a Job template and `status` of a pod: one reading.
pub(crate) fn recoverer<'a>(pod: &PodFacts, config: &'a RecoveryConfig) -> Option<Recoverer<'a>> {
    if left_to_kueue(pod, config) {
        return Some(Recoverer::Kueue);
    }
    opted_in_key(pod, config).map(|key| Recoverer::Jobgate { key })
}

/// The finalizers holding a pod whose recovery is recorded and that was force-deleted already
/// (`deletionGracePeriodSeconds: 0`, what jobgate's delete sets): only their controllers can let
/// it go, so another delete does nothing; `None` when none holds it.
pub(crate) fn held_by_finalizers(pod: &PodFacts) -> Option<&[String]> {
    (recovery_recorded(pod)
        && pod.deletion_grace_period_seconds == Some(0)
        && !pod.finalizers.is_empty())
    .then_some(pod.finalizers.as_slice())
}

/// Finalizer names as the event, the log and `jobgate status` print them: `` `a`, `b` ``.
pub(crate) fn finalizer_names(finalizers: &[String]) -> String {
    finalizers
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Opted in and terminating: the pods the reconciler tracks (Kueue's `podEligibleForTermination`).
/// Memory of the reconciler grows with these pods only.
pub(crate) fn is_eligible(pod: &PodFacts, config: &RecoveryConfig) -> bool {
    opted_in_key(pod, config).is_some() && pod.deletion_timestamp.is_some()
}

/// `deletionTimestamp + grace period`. Saturates at the largest timestamp (never reached) when
/// the sum does not fit.
pub(crate) fn deadline(deletion_timestamp: Timestamp, grace_period: Duration) -> Timestamp {
    SignedDuration::try_from(grace_period)
        .ok()
        .and_then(|d| deletion_timestamp.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// The node watch's trigger: the node was created with the unreachable taint (`old` is `None`),
/// or updated from untainted to tainted (Kueue's `nodeEventsPredicate`). Removal of the taint,
/// other updates of a tainted node, and deletions do not trigger.
pub(crate) fn became_unreachable(old: Option<&NodeFacts>, new: &NodeFacts) -> bool {
    is_unreachable(new) && !old.is_some_and(is_unreachable)
}

/// The decision. Checks run in Kueue's order: opt-in, terminating, deadline, then the node, so
/// a pod before its deadline is requeued without looking at its node.
///
/// `node` is the node named by `pod.node_name` as the caller found it; `None` when it does not
/// exist. A node whose name differs from `pod.node_name` counts as not found.
pub(crate) fn decide(
    pod: &PodFacts,
    node: Option<&NodeFacts>,
    now: Timestamp,
    config: &RecoveryConfig,
) -> Decision {
    let annotation_key = match recoverer(pod, config) {
        None => return Decision::Ignore(Ignored::NotOptedIn),
        Some(Recoverer::Kueue) => return Decision::Ignore(Ignored::KueueRecovers),
        Some(Recoverer::Jobgate { key }) => key,
    };
    let Some(deletion_timestamp) = pod.deletion_timestamp else {
        return Decision::Ignore(Ignored::NotTerminating);
    };
    let deadline = deadline(deletion_timestamp, config.grace_period);
    if now < deadline {
        return Decision::RequeueAt(deadline);
    }
    let Some(node_name) = pod.node_name.as_deref().filter(|n| !n.is_empty()) else {
        return Decision::Ignore(Ignored::NotScheduled);
    };
    let Some(node) = node.filter(|n| n.name == node_name) else {
        return Decision::Ignore(Ignored::NodeNotFound);
    };
    if !is_unreachable(node) {
        return Decision::WaitForNode {
            node: node_name.to_string(),
        };
    }
    let pod_grace = u64::try_from(pod.deletion_grace_period_seconds.unwrap_or(0)).unwrap_or(0);
    Decision::Recover(Recovery {
        node: node_name.to_string(),
        annotation_key: annotation_key.to_string(),
        deadline,
        total_grace_period: Duration::from_secs(pod_grace).saturating_add(config.grace_period),
        set_failed: !is_terminal_phase(pod.phase.as_deref()),
    })
}
