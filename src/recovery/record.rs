//! A due recovery, the `pods/status` change that records it, and its message (with the message's
//! duration format).

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::facts::{PodCondition, PodFacts, is_terminal_phase};
use crate::kueue::{CONDITION_TYPE, REASON_FORCEFULLY_TERMINATED, RECORDED_REASONS};

/// A due recovery: everything the executor needs besides the pod's identity.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Recovery {
    /// The unreachable node the pod is bound to.
    pub(crate) node: String,
    /// The annotation key that opted the pod in (the first configured key set to `"true"`).
    pub(crate) annotation_key: String,
    /// `deletionTimestamp + grace period`; `now >= deadline`.
    pub(crate) deadline: Timestamp,
    /// `deletionGracePeriodSeconds + grace period`, the time the pod had to terminate.
    pub(crate) total_grace_period: Duration,
    /// Whether `status.phase` must become `Failed` (not when already `Failed` or `Succeeded`).
    pub(crate) set_failed: bool,
}

impl Recovery {
    /// When the pod's deletion was asked: `deletionTimestamp - deletionGracePeriodSeconds`, that
    /// is `deadline - total_grace_period`.
    pub(crate) fn deletion_asked(&self) -> Timestamp {
        let total =
            SignedDuration::try_from(self.total_grace_period).unwrap_or(SignedDuration::MAX);
        self.deadline.checked_sub(total).unwrap_or(Timestamp::MIN)
    }

    /// The condition message and the Warning event's note.
    pub(crate) fn message(&self) -> String {
        format!(
            "Pod forcefully terminated after {} grace period due to unreachable node `{}` (triggered by `{}` annotation)",
            format_seconds(self.total_grace_period),
            self.node,
            self.annotation_key
        )
    }

    /// The note of the `Normal` event `--dry-run` emits instead of acting.
    pub(crate) fn dry_run_message(&self) -> String {
        format!(
            "Dry run: would forcefully terminate pod after {} grace period due to unreachable node `{}` (triggered by `{}` annotation)",
            format_seconds(self.total_grace_period),
            self.node,
            self.annotation_key
        )
    }
}

/// What to write on `pods/status` for a due recovery.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StatusChange {
    /// A strategic-merge patch for `pods/status`, carrying `metadata.resourceVersion` so the
    /// apiserver rejects it with 409 Conflict when the pod changed since it was read. `None`
    /// when the status already records this recovery (a retry after a partial run).
    pub(crate) patch: Option<Value>,
    /// The recovery condition was added or changed; the Warning event is emitted only then,
    /// so a retry does not repeat it (Kueue: "Reports false when the condition is already up to
    /// date, so the event is not emitted again").
    pub(crate) condition_changed: bool,
}

/// The status change for `recovery` on `pod` read at `resource_version`, at time `now`.
///
/// - `phase: Failed` unless the phase is already `Failed` or `Succeeded` (kueue#10853: a
///   Succeeded pod is deleted but keeps its phase).
/// - The `KueueFailureRecovery` condition is added, or replaced in place, never appended twice:
///   strategic merge keys `status.conditions` by `type`. Like Kubernetes' `UpdatePodCondition`,
///   `lastTransitionTime` is kept when an existing condition already has status `True`.
/// - A `True` condition with one of [`RECORDED_REASONS`] is a recorded recovery, left as it is
///   whoever wrote it: jobgate, or Kueue in either generation's form (before kueue#16033 the
///   condition appended on every reconcile without a `lastTransitionTime`; from it, set once
///   with one), whatever its message says (Kueue prints a Go duration and its own key). So no
///   second condition and no second event.
pub(crate) fn status_change(
    pod: &PodFacts,
    recovery: &Recovery,
    resource_version: &str,
    now: Timestamp,
) -> StatusChange {
    let message = recovery.message();
    let existing: Option<&PodCondition> = pod.conditions.iter().find(|c| c.type_ == CONDITION_TYPE);
    let condition_changed = !pod.conditions.iter().any(records_a_recovery);
    if !recovery.set_failed && !condition_changed {
        return StatusChange {
            patch: None,
            condition_changed: false,
        };
    }
    let mut status = Map::new();
    if recovery.set_failed {
        status.insert("phase".into(), json!("Failed"));
    }
    if condition_changed {
        let transition = match existing {
            Some(c) if c.status == "True" => c.last_transition_time.unwrap_or(now),
            _ => now,
        };
        status.insert(
            "conditions".into(),
            json!([{
                "type": CONDITION_TYPE,
                "status": "True",
                "reason": REASON_FORCEFULLY_TERMINATED,
                "message": message,
                "lastTransitionTime": rfc3339_seconds(transition),
            }]),
        );
    }
    StatusChange {
        patch: Some(json!({
            "metadata": { "resourceVersion": resource_version },
            "status": status,
        })),
        condition_changed,
    }
}

/// The pod's status already records a forced recovery: phase `Failed` or `Succeeded` and a
/// `KueueFailureRecovery` condition with status `True` and one of [`RECORDED_REASONS`]:
/// `KueueForcefullyTerminated` as [`status_change`] writes it (and Kueue 0.15.0 to 0.15.5), or
/// `KueueForcefullyDeleted` as Kueue 0.15.6+/0.16.3+/0.17+ writes it, in either generation's
/// form (see [`status_change`]). Reconciling such a pod again (its delete failed, jobgate
/// restarted, or `--no-delete` kept it) is no new intervention: only the delete is left.
pub(crate) fn recovery_recorded(pod: &PodFacts) -> bool {
    is_terminal_phase(pod.phase.as_deref()) && pod.conditions.iter().any(records_a_recovery)
}

/// A `KueueFailureRecovery` condition with status `True` and one of [`RECORDED_REASONS`].
fn records_a_recovery(c: &PodCondition) -> bool {
    c.type_ == CONDITION_TYPE
        && c.status == "True"
        && c.reason
            .as_deref()
            .is_some_and(|r| RECORDED_REASONS.contains(&r))
}

/// `metav1.Time` on the wire: RFC 3339 in UTC with whole seconds.
pub(crate) fn rfc3339_seconds(t: Timestamp) -> String {
    let whole = Timestamp::from_second(t.as_second()).unwrap_or(t);
    whole.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A duration in seconds as the message prints it: `90s`, `0s`, `1.5s`.
///
/// docs/src/recovery.md specifies the message with `90s` for a 30 s pod grace period plus the 60 s
/// threshold. Go's `time.Duration.String` (what Kueue prints) would give `1m30s`; we print the
/// seconds, the unit of `deletionGracePeriodSeconds` and `gracePeriodSeconds` in the API.
pub(crate) fn format_seconds(d: Duration) -> String {
    let secs = d.as_secs();
    let nanos = d.subsec_nanos();
    if nanos == 0 {
        format!("{secs}s")
    } else {
        let frac = format!("{nanos:09}");
        format!("{secs}.{}s", frac.trim_end_matches('0'))
    }
}
