//! Tables reproducing Kueue's `pod_termination_controller_test.go` (adapted to our message and
//! reason), and a generated product over the state space asserting the safety invariant.

use std::collections::BTreeMap;

use super::facts::{PodCondition, Taint, UNREACHABLE_TAINT_KEY};
use super::read::{node_facts, pod_facts};
use super::record::{StatusChange, format_seconds, recovery_recorded, status_change};
use super::*;
use crate::kueue::{
    CONDITION_TYPE, REASON_FORCEFULLY_DELETED, REASON_FORCEFULLY_TERMINATED,
    SAFE_TO_FORCEFULLY_DELETE, SAFE_TO_FORCEFULLY_TERMINATE,
};
use serde_json::json;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("test timestamp")
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
    }
}

fn node(name: &str, taints: Vec<Taint>) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        taints,
        ..NodeFacts::default()
    }
}

fn unreachable_node() -> NodeFacts {
    node(
        "unreachable-node",
        vec![taint(UNREACHABLE_TAINT_KEY, "NoExecute")],
    )
}

fn healthy_node() -> NodeFacts {
    node("healthy-node", vec![])
}

const NOW: &str = "2026-11-21T20:00:00Z";

/// Kueue's `podToForcefullyTerminate`: Running, annotated, on the unreachable node, deleted
/// three minutes before `now`.
fn pod_to_forcefully_terminate() -> PodFacts {
    PodFacts {
        annotations: [(SAFE_TO_FORCEFULLY_TERMINATE.to_string(), "true".to_string())].into(),
        deletion_timestamp: Some(ts("2026-11-21T19:57:00Z")),
        deletion_grace_period_seconds: None,
        phase: Some("Running".into()),
        node_name: Some("unreachable-node".into()),
        conditions: vec![],
        finalizers: vec![],
    }
}

fn nodes_named(name: &str) -> Option<NodeFacts> {
    [unreachable_node(), healthy_node()]
        .into_iter()
        .find(|n| n.name == name)
}

/// jobgate's decision where it stands in for Kueue's controller (Kueue's own recovery off, so
/// jobgate recovers Kueue's key too).
fn decide_like_kueue(pod: &PodFacts) -> Decision {
    let node = pod.node_name.as_deref().and_then(nodes_named);
    let config = RecoveryConfig {
        kueue_recovers: false,
        ..RecoveryConfig::default()
    };
    decide(pod, node.as_ref(), ts(NOW), &config)
}

// Two recoverers, one pod each: Kueue 0.15.6+ with FailureRecoveryPolicy recovers every pod
// annotated `kueue.x-k8s.io/safe-to-forcefully-delete: "true"` (pod_termination_controller.go),
// so by default jobgate leaves such a pod to it, whatever other key opts it in, and recovers
// the pods opted in with any other key. `--kueue-recovers=false` (Kueue's recovery off) takes
// them back.
#[test]
fn a_pod_kueue_recovers_is_left_to_kueue_unless_kueues_recovery_is_off() {
    let node = pod_to_forcefully_terminate()
        .node_name
        .as_deref()
        .and_then(nodes_named);
    let decide_with = |annotations: &[(&str, &str)], kueue_recovers: bool| {
        let mut pod = pod_to_forcefully_terminate();
        pod.annotations = annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let config = RecoveryConfig {
            kueue_recovers,
            ..RecoveryConfig::default()
        };
        decide(&pod, node.as_ref(), ts(NOW), &config)
    };
    let kueues = Decision::Ignore(Ignored::KueueRecovers);
    assert_eq!(
        decide_with(&[(SAFE_TO_FORCEFULLY_DELETE, "true")], true),
        kueues
    );
    assert_eq!(
        decide_with(
            &[
                (SAFE_TO_FORCEFULLY_TERMINATE, "true"),
                (SAFE_TO_FORCEFULLY_DELETE, "true")
            ],
            true
        ),
        kueues
    );
    assert!(matches!(
        decide_with(&[(SAFE_TO_FORCEFULLY_TERMINATE, "true")], true),
        Decision::Recover(_)
    ));
    // Kueue reads only "true": any other value leaves the pod to jobgate's other keys.
    assert!(matches!(
        decide_with(
            &[
                (SAFE_TO_FORCEFULLY_TERMINATE, "true"),
                (SAFE_TO_FORCEFULLY_DELETE, "True")
            ],
            true
        ),
        Decision::Recover(_)
    ));
    assert!(matches!(
        decide_with(&[(SAFE_TO_FORCEFULLY_DELETE, "true")], false),
        Decision::Recover(_)
    ));
    assert_eq!(Ignored::KueueRecovers.as_str(), "kueue-recovers");
}

fn recovery(node: &str, key: &str, deadline: &str, total_secs: u64, set_failed: bool) -> Recovery {
    Recovery {
        node: node.into(),
        annotation_key: key.into(),
        deadline: ts(deadline),
        total_grace_period: Duration::from_secs(total_secs),
        set_failed,
    }
}

// kueue TestReconciler "pod is in failed phase": since kueue#10853 a Failed pod stuck on an
// unreachable node is deleted too; its phase stays Failed.
#[test]
fn kueue_reconciler_pod_is_in_failed_phase() {
    let mut pod = pod_to_forcefully_terminate();
    pod.phase = Some("Failed".into());
    assert_eq!(
        decide_like_kueue(&pod),
        Decision::Recover(recovery(
            "unreachable-node",
            SAFE_TO_FORCEFULLY_TERMINATE,
            "2026-11-21T19:58:00Z",
            60,
            false
        ))
    );
}

// kueue TestReconciler "pod is in succeeded phase" (kueue#10853 review: "When the pod is
// Succeeded, we should delete but not change the phase").
#[test]
fn kueue_reconciler_pod_is_in_succeeded_phase() {
    let mut pod = pod_to_forcefully_terminate();
    pod.phase = Some("Succeeded".into());
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    assert!(!r.set_failed);
    let change = status_change(&pod, &r, "7", ts(NOW));
    assert_eq!(
        change.patch,
        Some(json!({
            "metadata": {"resourceVersion": "7"},
            "status": {"conditions": [{
                "type": "KueueFailureRecovery",
                "status": "True",
                "reason": "KueueForcefullyTerminated",
                "message": "Pod forcefully terminated after 60s grace period due to unreachable node `unreachable-node` (triggered by `kueue.x-k8s.io/safe-to-forcefully-terminate` annotation)",
                "lastTransitionTime": "2026-11-21T20:00:00Z",
            }]},
        }))
    );
}

// kueue TestReconciler "pod is not scheduled on an unreachable node".
#[test]
fn kueue_reconciler_pod_is_not_scheduled_on_an_unreachable_node() {
    let mut pod = pod_to_forcefully_terminate();
    pod.node_name = Some("healthy-node".into());
    assert_eq!(
        decide_like_kueue(&pod),
        Decision::WaitForNode {
            node: "healthy-node".into()
        }
    );
}

// kueue TestReconciler "forceful termination grace period did not elapse for pod": requeue at
// deletionTimestamp (second precision) + 1m, without reading the node.
#[test]
fn kueue_reconciler_grace_period_did_not_elapse() {
    let mut pod = pod_to_forcefully_terminate();
    pod.deletion_timestamp = Some(ts(NOW));
    let now = ts("2026-11-21T20:00:00.25Z");
    assert_eq!(
        decide(&pod, None, now, &RecoveryConfig::default()),
        Decision::RequeueAt(ts("2026-11-21T20:01:00Z"))
    );
}

// kueue TestReconciler "forceful termination grace period elapsed for pod": phase Failed and
// the condition; Kueue's message says "1m0s", ours "60s" (see `format_seconds`).
#[test]
fn kueue_reconciler_grace_period_elapsed() {
    let pod = pod_to_forcefully_terminate();
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    assert_eq!(
        r.message(),
        "Pod forcefully terminated after 60s grace period due to unreachable node `unreachable-node` (triggered by `kueue.x-k8s.io/safe-to-forcefully-terminate` annotation)"
    );
    let change = status_change(&pod, &r, "42", ts(NOW));
    assert!(change.condition_changed);
    assert_eq!(
        change.patch,
        Some(json!({
            "metadata": {"resourceVersion": "42"},
            "status": {
                "phase": "Failed",
                "conditions": [{
                    "type": "KueueFailureRecovery",
                    "status": "True",
                    "reason": "KueueForcefullyTerminated",
                    "message": r.message(),
                    "lastTransitionTime": "2026-11-21T20:00:00Z",
                }],
            },
        }))
    );
}

// kueue TestReconciler "pod is scheduled on a node that does not exist".
#[test]
fn kueue_reconciler_node_does_not_exist() {
    let mut pod = pod_to_forcefully_terminate();
    pod.node_name = Some("missing-node".into());
    assert_eq!(
        decide_like_kueue(&pod),
        Decision::Ignore(Ignored::NodeNotFound)
    );
}

// kueue TestReconciler "pod is not marked for termination": nothing, whatever the node.
#[test]
fn kueue_reconciler_pod_is_not_marked_for_termination() {
    let mut pod = pod_to_forcefully_terminate();
    pod.deletion_timestamp = None;
    assert_eq!(
        decide_like_kueue(&pod),
        Decision::Ignore(Ignored::NotTerminating)
    );
}

// kueue Reconcile: `if now.Before(forcefulTerminationThreshold) { return RequeueAfter:
// threshold.Sub(now) }`. One nanosecond before the threshold the pod is requeued for exactly the
// threshold; at the threshold `Before` is false and the pod is acted on.
#[test]
fn kueue_threshold_boundary_before_requeues_at_the_threshold_acts() {
    let pod = pod_to_forcefully_terminate();
    let node = unreachable_node();
    let threshold = ts("2026-11-21T19:58:00Z");
    let just_before = threshold
        .checked_sub(SignedDuration::from_nanos(1))
        .expect("ts");
    assert_eq!(
        decide(&pod, Some(&node), just_before, &RecoveryConfig::default()),
        Decision::RequeueAt(threshold)
    );
    assert!(matches!(
        decide(&pod, Some(&node), threshold, &RecoveryConfig::default()),
        Decision::Recover(r) if r.deadline == threshold
    ));
}

// kueue TestCreateEventFilter / TestUpdateEventFilter: which pods are tracked at all.
#[test]
fn kueue_event_filter_eligibility() {
    let config = RecoveryConfig::default();
    let annotated_and_deleted = pod_to_forcefully_terminate();
    assert!(is_eligible(&annotated_and_deleted, &config));

    let mut not_annotated = annotated_and_deleted.clone();
    not_annotated
        .annotations
        .insert(SAFE_TO_FORCEFULLY_TERMINATE.into(), "false".into());
    assert!(!is_eligible(&not_annotated, &config));

    let mut not_deleted = annotated_and_deleted.clone();
    not_deleted.deletion_timestamp = None;
    assert!(!is_eligible(&not_deleted, &config));
}

// kueue nodeEventsPredicate: Create fires when tainted; Update only untainted -> tainted.
#[test]
fn kueue_node_events_predicate_rising_edge() {
    let tainted = node("n", vec![taint(UNREACHABLE_TAINT_KEY, "NoExecute")]);
    let tainted_noschedule = node("n", vec![taint(UNREACHABLE_TAINT_KEY, "NoSchedule")]);
    let untainted = node("n", vec![]);
    let not_ready = node(
        "n",
        vec![taint("node.kubernetes.io/not-ready", "NoExecute")],
    );
    // create
    assert!(became_unreachable(None, &tainted));
    assert!(became_unreachable(None, &tainted_noschedule));
    assert!(!became_unreachable(None, &untainted));
    assert!(!became_unreachable(None, &not_ready));
    // update
    assert!(became_unreachable(Some(&untainted), &tainted));
    assert!(became_unreachable(Some(&not_ready), &tainted));
    assert!(!became_unreachable(Some(&tainted), &tainted));
    assert!(!became_unreachable(Some(&tainted), &tainted_noschedule));
    assert!(!became_unreachable(Some(&tainted), &untainted));
    assert!(!became_unreachable(Some(&untainted), &not_ready));
    assert!(!became_unreachable(Some(&untainted), &untainted));
}

// KEP-6757: "90s = deletion grace period + threshold" — deletionGracePeriodSeconds is added as
// seconds (Kueue adds it as nanoseconds and prints `1m0.00000003s`).
#[test]
fn message_grace_period_is_pod_grace_plus_threshold_in_seconds() {
    let mut pod = pod_to_forcefully_terminate();
    pod.deletion_grace_period_seconds = Some(30);
    pod.node_name = Some("node-a".into());
    let node_a = node("node-a", vec![taint(UNREACHABLE_TAINT_KEY, "NoExecute")]);
    let Decision::Recover(r) = decide(&pod, Some(&node_a), ts(NOW), &RecoveryConfig::default())
    else {
        panic!("expected Recover");
    };
    assert_eq!(
        r.message(),
        "Pod forcefully terminated after 90s grace period due to unreachable node `node-a` (triggered by `kueue.x-k8s.io/safe-to-forcefully-terminate` annotation)"
    );
    assert_eq!(
        r.dry_run_message(),
        "Dry run: would forcefully terminate pod after 90s grace period due to unreachable node `node-a` (triggered by `kueue.x-k8s.io/safe-to-forcefully-terminate` annotation)"
    );
    // The deadline does not add the pod's grace period twice: deletionTimestamp already has it.
    assert_eq!(r.deadline, ts("2026-11-21T19:58:00Z"));
}

#[test]
fn message_names_the_first_configured_key_that_opted_in() {
    let mut pod = pod_to_forcefully_terminate();
    pod.annotations = [
        (
            SAFE_TO_FORCEFULLY_TERMINATE.to_string(),
            "false".to_string(),
        ),
        (SAFE_TO_FORCEFULLY_DELETE.to_string(), "true".to_string()),
    ]
    .into();
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    assert_eq!(r.annotation_key, SAFE_TO_FORCEFULLY_DELETE);
    assert!(
        r.message()
            .ends_with("(triggered by `kueue.x-k8s.io/safe-to-forcefully-delete` annotation)")
    );
}

#[test]
fn format_seconds_examples() {
    assert_eq!(format_seconds(Duration::from_secs(90)), "90s");
    assert_eq!(format_seconds(Duration::from_secs(0)), "0s");
    assert_eq!(format_seconds(Duration::from_secs(3600)), "3600s");
    assert_eq!(format_seconds(Duration::from_millis(1500)), "1.5s");
    assert_eq!(format_seconds(Duration::from_nanos(1)), "0.000000001s");
}

#[test]
fn deadline_saturates_instead_of_overflowing() {
    assert_eq!(
        deadline(Timestamp::MAX, Duration::from_secs(60)),
        Timestamp::MAX
    );
    assert_eq!(deadline(ts(NOW), Duration::MAX), Timestamp::MAX);
    let mut pod = pod_to_forcefully_terminate();
    pod.deletion_timestamp = Some(Timestamp::MAX);
    assert_eq!(decide_like_kueue(&pod), Decision::RequeueAt(Timestamp::MAX));
}

#[test]
fn negative_pod_grace_period_counts_as_zero_in_the_message() {
    let mut pod = pod_to_forcefully_terminate();
    pod.deletion_grace_period_seconds = Some(-5);
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    assert_eq!(r.total_grace_period, Duration::from_secs(60));
}

#[test]
fn zero_grace_period_acts_at_the_deletion_timestamp() {
    let config = RecoveryConfig {
        grace_period: Duration::ZERO,
        ..RecoveryConfig::default()
    };
    let mut pod = pod_to_forcefully_terminate();
    pod.deletion_timestamp = Some(ts(NOW));
    let node = unreachable_node();
    assert!(matches!(
        decide(&pod, Some(&node), ts(NOW), &config),
        Decision::Recover(_)
    ));
    assert_eq!(
        decide(&pod, Some(&node), ts("2026-11-21T19:59:59Z"), &config),
        Decision::RequeueAt(ts(NOW))
    );
}

// ---- status patch: idempotence and no duplicate condition ----

fn recovery_condition(message: &str, status: &str, ltt: Option<&str>) -> PodCondition {
    PodCondition {
        type_: CONDITION_TYPE.into(),
        status: status.into(),
        reason: Some(REASON_FORCEFULLY_TERMINATED.into()),
        message: Some(message.into()),
        last_transition_time: ltt.map(ts),
    }
}

#[test]
fn status_change_is_empty_when_already_recorded() {
    let mut pod = pod_to_forcefully_terminate();
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    pod.phase = Some("Failed".into());
    pod.conditions = vec![
        PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            ..PodCondition::default()
        },
        recovery_condition(&r.message(), "True", Some("2026-11-21T19:58:30Z")),
    ];
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    assert_eq!(
        status_change(&pod, &r, "9", ts(NOW)),
        StatusChange {
            patch: None,
            condition_changed: false
        }
    );
}

#[test]
fn status_change_sets_phase_only_when_condition_already_present() {
    // A partial earlier run wrote the condition, then the kubelet flipped the phase back?
    // Not possible in practice, but the change must still only fix the phase and not re-emit.
    let mut pod = pod_to_forcefully_terminate();
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    pod.conditions = vec![recovery_condition(
        &r.message(),
        "True",
        Some("2026-11-21T19:58:30Z"),
    )];
    let change = status_change(&pod, &r, "9", ts(NOW));
    assert!(!change.condition_changed);
    assert_eq!(
        change.patch,
        Some(json!({"metadata": {"resourceVersion": "9"}, "status": {"phase": "Failed"}}))
    );
}

/// A recorded recovery is left as written even when its message is not the one jobgate would
/// write now (another grace period or key then, or Kueue 0.15.0 to 0.15.5, which wrote the same
/// reason with its own message): no second condition, no second event. A `True` condition whose
/// reason records nothing is replaced, keeping its transition time.
#[test]
fn status_change_replaces_only_a_condition_that_records_nothing_keeping_its_transition_time() {
    let mut pod = pod_to_forcefully_terminate();
    pod.phase = Some("Failed".into());
    pod.conditions = vec![recovery_condition(
        "old message",
        "True",
        Some("2026-11-21T19:58:30Z"),
    )];
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    assert_eq!(
        status_change(&pod, &r, "9", ts(NOW)),
        StatusChange {
            patch: None,
            condition_changed: false
        }
    );
    pod.conditions[0].reason = Some("SomethingElse".into());
    let change = status_change(&pod, &r, "9", ts(NOW));
    assert!(change.condition_changed);
    let patch = change.patch.expect("patch");
    let conditions = patch["status"]["conditions"]
        .as_array()
        .expect("conditions");
    assert_eq!(conditions.len(), 1, "one condition, merged by type");
    assert_eq!(conditions[0]["lastTransitionTime"], "2026-11-21T19:58:30Z");
    assert_eq!(conditions[0]["message"], r.message().as_str());
    assert!(patch["status"].get("phase").is_none());
}

#[test]
fn status_change_new_transition_time_when_condition_was_false() {
    let mut pod = pod_to_forcefully_terminate();
    pod.conditions = vec![recovery_condition(
        "x",
        "False",
        Some("2026-01-01T00:00:00Z"),
    )];
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    let patch = status_change(&pod, &r, "1", ts("2026-11-21T20:00:00.9Z"))
        .patch
        .expect("patch");
    // metav1.Time has whole seconds on the wire.
    assert_eq!(
        patch["status"]["conditions"][0]["lastTransitionTime"],
        "2026-11-21T20:00:00Z"
    );
}

#[test]
fn recovery_recorded_needs_a_terminal_phase_and_our_true_condition() {
    let recorded = |phase: &str, condition: PodCondition| PodFacts {
        phase: Some(phase.into()),
        conditions: vec![condition],
        ..pod_to_forcefully_terminate()
    };
    let ours = recovery_condition("m", "True", Some("2026-11-21T19:58:30Z"));
    assert!(recovery_recorded(&recorded("Failed", ours.clone())));
    assert!(recovery_recorded(&recorded("Succeeded", ours.clone())));
    assert!(!recovery_recorded(&recorded("Running", ours.clone())));
    assert!(!recovery_recorded(&recorded(
        "Failed",
        recovery_condition("m", "False", None)
    )));
    // Kueue 0.15.6+/0.16.3+/0.17+ records the same recovery with reason KueueForcefullyDeleted
    // (kueue#9651): recorded too. Any other reason is not.
    let kueue_deleted = PodCondition {
        reason: Some("KueueForcefullyDeleted".into()),
        ..ours.clone()
    };
    assert!(recovery_recorded(&recorded(
        "Failed",
        kueue_deleted.clone()
    )));
    assert!(!recovery_recorded(&recorded("Running", kueue_deleted)));
    let other = PodCondition {
        reason: Some("KueueForcefullyEvicted".into()),
        ..ours
    };
    assert!(!recovery_recorded(&recorded("Failed", other)));
    let mut failed_without = pod_to_forcefully_terminate();
    failed_without.phase = Some("Failed".into());
    assert!(!recovery_recorded(&failed_without));
}

/// A condition as Kueue 0.15.6+/0.16.3+/0.17+ writes it (`pod_termination_controller.go`:
/// reason `KueueForcefullyDeleted`, message with a Go duration and the `-delete` key).
fn kueue_deleted_condition() -> PodCondition {
    PodCondition {
        type_: CONDITION_TYPE.into(),
        status: "True".into(),
        reason: Some(REASON_FORCEFULLY_DELETED.into()),
        message: Some(
            "Pod forcefully terminated after 1m0.00000003s grace period due to unreachable node \
             `node-a` (triggered by `kueue.x-k8s.io/safe-to-forcefully-delete` annotation)"
                .into(),
        ),
        last_transition_time: Some(ts("2026-11-21T19:58:30Z")),
    }
}

// kueue#9651: a pod Kueue's own controller recovered is not recovered a second time: no second
// condition (jobgate's reason would replace Kueue's, merged by type) and no second event.
#[test]
fn a_condition_kueue_wrote_with_reason_kueue_forcefully_deleted_is_left_alone() {
    let mut pod = pod_to_forcefully_terminate();
    pod.phase = Some("Failed".into());
    pod.conditions = vec![kueue_deleted_condition()];
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    assert_eq!(
        status_change(&pod, &r, "9", ts(NOW)),
        StatusChange {
            patch: None,
            condition_changed: false
        }
    );
    assert!(recovery_recorded(&pod));
    // Phase not terminal yet (never seen: Kueue patches both at once): only the phase is fixed.
    pod.phase = Some("Running".into());
    let Decision::Recover(r) = decide_like_kueue(&pod) else {
        panic!("expected Recover");
    };
    let change = status_change(&pod, &r, "9", ts(NOW));
    assert!(!change.condition_changed);
    assert_eq!(
        change.patch,
        Some(json!({"metadata": {"resourceVersion": "9"}, "status": {"phase": "Failed"}}))
    );
    // A False condition with that reason records nothing: jobgate writes its own.
    pod.conditions[0].status = "False".into();
    let change = status_change(&pod, &r, "9", ts(NOW));
    assert!(change.condition_changed);
    let patch = change.patch.expect("patch");
    assert_eq!(
        patch["status"]["conditions"][0]["reason"],
        REASON_FORCEFULLY_TERMINATED
    );
}

/// A pod Kueue's failure-recovery controller recovered, as the apiserver returns it, in each
/// generation's form (`pkg/controller/failurerecovery/pod_termination_controller.go`):
///
/// - before kueue#16033 (0.15.0 up to 0.19.x; v0.19.2 is the newest release-0.19 commit in the
///   stored snapshot): every reconcile `append`s the condition and `utilclient.PatchStatus`
///   sends the whole list as a JSON merge patch, so a pod reconciled twice (its delete failed)
///   carries it twice; `LastTransitionTime` is never set (the zero `metav1.Time`, `null` on the
///   wire); the event is emitted on every reconcile;
/// - from kueue#16033 (v0.20.0 release notes: "Kueue now sets the condition once and emits the
///   event only when the condition changes"): `updatePodCondition` (copied from Kubernetes'
///   `pkg/api/v1/pod/util.go`) replaces it by type with `lastTransitionTime` set when it was
///   added, and the event follows only a change.
///
/// With the reason either release wrote (`KueueForcefullyTerminated` up to 0.15.5/0.16.2,
/// `KueueForcefullyDeleted` after), Kueue's message and key, on a Failed pod (or a Succeeded
/// one: Kueue keeps a terminal phase, kueue#10853).
fn kueue_recorded_pod(
    reason: &str,
    generation: &str,
    phase: &str,
) -> k8s_openapi::api::core::v1::Pod {
    let key = if reason == REASON_FORCEFULLY_DELETED {
        SAFE_TO_FORCEFULLY_DELETE
    } else {
        SAFE_TO_FORCEFULLY_TERMINATE
    };
    let condition = |transition: serde_json::Value| {
        json!({
            "type": CONDITION_TYPE, "status": "True", "reason": reason,
            "message": format!("Pod forcefully terminated after 1m0.00000003s grace period due to \
                                unreachable node `unreachable-node` (triggered by `{key}` annotation)"),
            "lastProbeTime": null, "lastTransitionTime": transition,
        })
    };
    let conditions = match generation {
        "appended" => json!([
            {"type": "Ready", "status": "False", "lastProbeTime": null,
             "lastTransitionTime": "2026-11-21T19:56:10Z"},
            condition(json!(null)),
            condition(json!(null)),
        ]),
        "set once" => json!([condition(json!("2026-11-21T19:58:02Z"))]),
        other => panic!("{other}"),
    };
    serde_json::from_value(json!({
        "metadata": {
            "name": "pod", "namespace": "ns", "annotations": {key: "true"},
            "deletionTimestamp": "2026-11-21T19:57:00Z", "deletionGracePeriodSeconds": 30
        },
        "spec": {"nodeName": "unreachable-node", "containers": []},
        "status": {"phase": phase, "conditions": conditions},
    }))
    .expect("pod")
}

// kueue#16033: a pod Kueue already recovered is a recorded recovery in either generation's form
// (its condition appended on every reconcile without a transition time, or set once with one),
// with either reason Kueue has written: `reconcile` and `status` see it recorded (no brake, no
// Job episode), and its status is left as Kueue wrote it: no patch, so no second condition and no
// second event; only the delete is left.
#[test]
fn a_pod_kueue_recovered_in_either_generation_is_recorded_and_left_as_written() {
    for reason in crate::kueue::RECORDED_REASONS {
        for generation in ["appended", "set once"] {
            for phase in ["Failed", "Succeeded"] {
                let pod = pod_facts(&kueue_recorded_pod(reason, generation, phase));
                let what = format!("{reason}, {generation}, {phase}");
                assert!(recovery_recorded(&pod), "{what}");
                let Decision::Recover(r) = decide_like_kueue(&pod) else {
                    panic!("{what}: expected Recover");
                };
                assert_eq!(
                    status_change(&pod, &r, "9", ts(NOW)),
                    StatusChange {
                        patch: None,
                        condition_changed: false
                    },
                    "{what}"
                );
            }
        }
    }
}

// ---- generated product over the state space: the safety invariant ----

const KEYS_UNDER_TEST: [&str; 4] = [
    SAFE_TO_FORCEFULLY_TERMINATE,
    SAFE_TO_FORCEFULLY_DELETE,
    "example.com/recover",
    "unrelated.example.com/flag",
];

const VALUES_UNDER_TEST: [&str; 10] = [
    "true", "True", "TRUE", "false", "", " true", "true ", "1", "yes", "\"true\"",
];

fn configs() -> Vec<RecoveryConfig> {
    let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    vec![
        RecoveryConfig::default(),
        RecoveryConfig {
            annotation_keys: keys(&[SAFE_TO_FORCEFULLY_TERMINATE]),
            ..RecoveryConfig::default()
        },
        RecoveryConfig {
            annotation_keys: keys(&[SAFE_TO_FORCEFULLY_DELETE]),
            ..RecoveryConfig::default()
        },
        RecoveryConfig {
            annotation_keys: keys(&["example.com/recover"]),
            grace_period: Duration::from_secs(0),
            kueue_recovers: true,
        },
        RecoveryConfig {
            annotation_keys: vec![],
            grace_period: Duration::from_secs(300),
            kueue_recovers: true,
        },
        // A cluster whose Kueue does not recover: jobgate recovers both keys.
        RecoveryConfig {
            kueue_recovers: false,
            ..RecoveryConfig::default()
        },
    ]
}

fn annotation_cases() -> Vec<BTreeMap<String, String>> {
    let mut cases = vec![BTreeMap::new()];
    for key in KEYS_UNDER_TEST {
        for value in VALUES_UNDER_TEST {
            cases.push([(key.to_string(), value.to_string())].into());
        }
    }
    // Both Kueue keys, disagreeing.
    cases.push(
        [
            (
                SAFE_TO_FORCEFULLY_TERMINATE.to_string(),
                "false".to_string(),
            ),
            (SAFE_TO_FORCEFULLY_DELETE.to_string(), "true".to_string()),
        ]
        .into(),
    );
    cases
}

const PHASES: [Option<&str>; 6] = [
    None,
    Some("Pending"),
    Some("Running"),
    Some("Succeeded"),
    Some("Failed"),
    Some("Unknown"),
];

fn taint_cases() -> Vec<Vec<Taint>> {
    vec![
        vec![],
        vec![taint(UNREACHABLE_TAINT_KEY, "NoExecute")],
        vec![taint(UNREACHABLE_TAINT_KEY, "NoSchedule")],
        vec![taint("node.kubernetes.io/not-ready", "NoExecute")],
        vec![
            taint("node.kubernetes.io/not-ready", "NoSchedule"),
            taint(UNREACHABLE_TAINT_KEY, "NoExecute"),
        ],
        vec![taint("example.com/unreachable", "NoExecute")],
    ]
}

#[derive(Clone, Copy, Debug)]
enum NodeCase {
    /// `spec.nodeName` names a node that exists.
    Present,
    /// `spec.nodeName` names a node that does not exist.
    Missing,
    /// `spec.nodeName` is empty.
    EmptyNodeName,
    /// `spec.nodeName` is absent.
    NoNodeName,
    /// The caller passed a node other than the pod's.
    OtherNode,
}

const NODE_CASES: [NodeCase; 5] = [
    NodeCase::Present,
    NodeCase::Missing,
    NodeCase::EmptyNodeName,
    NodeCase::NoNodeName,
    NodeCase::OtherNode,
];

/// Offsets of `now` from the deadline, in nanoseconds.
const TIME_OFFSETS_NS: [i64; 5] = [-1_000_000_000, -1, 0, 1, 1_000_000_000];

#[test]
fn safety_invariant_over_the_state_space() {
    let deletion = ts("2026-11-21T19:00:00Z");
    let mut checked = 0u64;
    let mut recovered = 0u64;
    for config in configs() {
        let deadline_ts = deadline(deletion, config.grace_period);
        for annotations in annotation_cases() {
            for deletion_timestamp in [None, Some(deletion)] {
                for phase in PHASES {
                    for taints in taint_cases() {
                        for node_case in NODE_CASES {
                            for offset in TIME_OFFSETS_NS {
                                let now = deadline_ts
                                    .checked_add(SignedDuration::from_nanos(offset))
                                    .expect("now");
                                let node_name = match node_case {
                                    NodeCase::EmptyNodeName => Some(String::new()),
                                    NodeCase::NoNodeName => None,
                                    _ => Some("node-a".to_string()),
                                };
                                let pod = PodFacts {
                                    annotations: annotations.clone(),
                                    deletion_timestamp,
                                    deletion_grace_period_seconds: Some(30),
                                    phase: phase.map(String::from),
                                    node_name,
                                    conditions: vec![],
                                    finalizers: vec![],
                                };
                                let node = match node_case {
                                    NodeCase::Present
                                    | NodeCase::EmptyNodeName
                                    | NodeCase::NoNodeName => Some(node("node-a", taints.clone())),
                                    NodeCase::Missing => None,
                                    NodeCase::OtherNode => Some(node("node-b", taints.clone())),
                                };
                                let decision = decide(&pod, node.as_ref(), now, &config);
                                checked += 1;

                                // The independent oracle, written from the safety rules of docs/src/recovery.md (KEP-6757).
                                let opted_in = config.annotation_keys.iter().any(|k| {
                                    annotations.get(k).map(String::as_str) == Some("true")
                                });
                                // Kueue's own controller recovers what its key opts in.
                                let kueues = config.kueue_recovers
                                    && annotations
                                        .get(SAFE_TO_FORCEFULLY_DELETE)
                                        .map(String::as_str)
                                        == Some("true");
                                let terminating = deletion_timestamp.is_some();
                                let due = now >= deadline_ts;
                                let on_unreachable_node = matches!(node_case, NodeCase::Present)
                                    && taints.iter().any(|t| t.key == UNREACHABLE_TAINT_KEY);
                                let must_act = opted_in
                                    && !kueues
                                    && terminating
                                    && due
                                    && on_unreachable_node;

                                let ctx = || {
                                    format!(
                                        "annotations={annotations:?} deletion={deletion_timestamp:?} phase={phase:?} taints={taints:?} node={node_case:?} offset_ns={offset} keys={:?} grace={:?} => {decision:?}",
                                        config.annotation_keys, config.grace_period
                                    )
                                };
                                match &decision {
                                    Decision::Recover(r) => {
                                        assert!(must_act, "acted unsafely: {}", ctx());
                                        recovered += 1;
                                        assert_eq!(r.node, "node-a", "{}", ctx());
                                        assert_eq!(r.deadline, deadline_ts, "{}", ctx());
                                        assert_eq!(
                                            r.total_grace_period,
                                            Duration::from_secs(30) + config.grace_period,
                                            "{}",
                                            ctx()
                                        );
                                        assert_eq!(
                                            annotations.get(&r.annotation_key).map(String::as_str),
                                            Some("true"),
                                            "{}",
                                            ctx()
                                        );
                                        let terminal =
                                            matches!(phase, Some("Failed") | Some("Succeeded"));
                                        assert_eq!(r.set_failed, !terminal, "{}", ctx());
                                        let change = status_change(&pod, r, "1", now);
                                        let patch =
                                            change.patch.expect("a fresh pod needs a patch");
                                        assert!(change.condition_changed);
                                        assert_eq!(
                                            patch["status"].get("phase").is_some(),
                                            !terminal,
                                            "never overwrite Failed/Succeeded: {}",
                                            ctx()
                                        );
                                        assert_eq!(patch["metadata"]["resourceVersion"], "1");
                                    }
                                    other => {
                                        assert!(!must_act, "failed to act: {}", ctx());
                                        match other {
                                            Decision::Ignore(Ignored::NotOptedIn) => {
                                                assert!(!opted_in && !kueues, "{}", ctx())
                                            }
                                            // Kueue reads its key whatever keys jobgate reads.
                                            Decision::Ignore(Ignored::KueueRecovers) => {
                                                assert!(kueues, "{}", ctx())
                                            }
                                            Decision::Ignore(Ignored::NotTerminating) => {
                                                assert!(
                                                    opted_in && !kueues && !terminating,
                                                    "{}",
                                                    ctx()
                                                )
                                            }
                                            // The deadline is checked before the node.
                                            Decision::RequeueAt(at) => {
                                                assert!(
                                                    opted_in && terminating && !due,
                                                    "{}",
                                                    ctx()
                                                );
                                                assert_eq!(*at, deadline_ts, "{}", ctx());
                                            }
                                            Decision::Ignore(Ignored::NotScheduled) => assert!(
                                                opted_in
                                                    && terminating
                                                    && due
                                                    && matches!(
                                                        node_case,
                                                        NodeCase::EmptyNodeName
                                                            | NodeCase::NoNodeName
                                                    ),
                                                "{}",
                                                ctx()
                                            ),
                                            Decision::Ignore(Ignored::NodeNotFound) => assert!(
                                                opted_in
                                                    && terminating
                                                    && due
                                                    && matches!(
                                                        node_case,
                                                        NodeCase::Missing | NodeCase::OtherNode
                                                    ),
                                                "{}",
                                                ctx()
                                            ),
                                            Decision::WaitForNode { node } => {
                                                assert!(
                                                    opted_in
                                                        && terminating
                                                        && due
                                                        && matches!(node_case, NodeCase::Present)
                                                        && !on_unreachable_node,
                                                    "{}",
                                                    ctx()
                                                );
                                                assert_eq!(node, "node-a");
                                            }
                                            Decision::Recover(_) => unreachable!(),
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // 6 configs x 42 annotation sets x 2 x 6 phases x 6 taint sets x 5 node cases x 5 times.
    assert_eq!(checked, 6 * 42 * 2 * 6 * 6 * 5 * 5);
    assert!(recovered > 0, "the product must contain acting states");
}

#[test]
fn facts_from_api_objects() {
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "p", "namespace": "ns",
            "annotations": {"kueue.x-k8s.io/safe-to-forcefully-terminate": "true"},
            "deletionTimestamp": "2026-11-21T19:57:00Z",
            "deletionGracePeriodSeconds": 30
        },
        "spec": {"nodeName": "", "containers": []},
        "status": {"phase": "Running", "conditions": [
            {"type": "KueueFailureRecovery", "status": "True", "reason": "KueueForcefullyTerminated",
             "message": "m", "lastTransitionTime": "2026-11-21T19:58:00Z"}
        ]}
    }))
    .expect("pod");
    let facts = pod_facts(&pod);
    assert_eq!(facts.deletion_timestamp, Some(ts("2026-11-21T19:57:00Z")));
    assert_eq!(facts.deletion_grace_period_seconds, Some(30));
    assert_eq!(facts.phase.as_deref(), Some("Running"));
    assert_eq!(facts.node_name, None, "empty nodeName is no node");
    assert_eq!(
        facts.conditions,
        vec![recovery_condition(
            "m",
            "True",
            Some("2026-11-21T19:58:00Z")
        )]
    );

    let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
        "metadata": {"name": "node-a"},
        "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]}
    }))
    .expect("node");
    let facts = node_facts(&node);
    assert!(is_unreachable(&facts));
    assert_eq!(facts.name, "node-a");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn phase() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some("Pending".to_string())),
            Just(Some("Running".to_string())),
            Just(Some("Succeeded".to_string())),
            Just(Some("Failed".to_string())),
            Just(Some("Unknown".to_string())),
            "[A-Za-z]{0,8}".prop_map(Some),
        ]
    }

    proptest! {
        // Random times, grace periods, annotation values and taints: the decision acts iff the
        // safety rule holds, and a requeue is exactly at the deadline.
        #[test]
        fn acts_only_when_safe(
            deletion_s in 0i64..4_000_000_000,
            grace_s in 0u64..1_000_000,
            offset_ns in -2_000_000_000_000i64..2_000_000_000_000,
            value in prop_oneof![Just("true".to_string()), "[a-zA-Z ]{0,5}"],
            deleting in any::<bool>(),
            unreachable in any::<bool>(),
            effect in prop_oneof![Just("NoExecute"), Just("NoSchedule"), Just("")],
            phase in phase(),
            pod_grace in proptest::option::of(-100i64..100_000),
        ) {
            let config = RecoveryConfig { grace_period: Duration::from_secs(grace_s), ..RecoveryConfig::default() };
            let deletion = Timestamp::from_second(deletion_s).expect("ts");
            let dl = deadline(deletion, config.grace_period);
            let now = dl.checked_add(SignedDuration::from_nanos(offset_ns)).expect("now");
            let pod = PodFacts {
                annotations: [(SAFE_TO_FORCEFULLY_TERMINATE.to_string(), value.clone())].into(),
                deletion_timestamp: deleting.then_some(deletion),
                deletion_grace_period_seconds: pod_grace,
                phase: phase.clone(),
                node_name: Some("n".into()),
                conditions: vec![],
                finalizers: vec![],
            };
            let taints = if unreachable {
                vec![taint(UNREACHABLE_TAINT_KEY, effect)]
            } else {
                vec![taint("node.kubernetes.io/not-ready", effect)]
            };
            let n = node("n", taints);
            let decision = decide(&pod, Some(&n), now, &config);
            let safe = value == "true" && deleting && unreachable && now >= dl;
            prop_assert_eq!(matches!(decision, Decision::Recover(_)), safe, "{:?}", decision);
            if let Decision::RequeueAt(at) = decision {
                prop_assert_eq!(at, dl);
                prop_assert!(now < dl);
            }
            if let Decision::Recover(r) = decision {
                prop_assert_eq!(r.set_failed, !is_terminal_phase(phase.as_deref()));
            }
        }
    }
}
