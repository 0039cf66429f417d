//! Kueue's wire names that both wings speak: the pod annotations that opt into forced recovery,
//! the pod condition and reasons that record it (KEP-6757,
//! `pkg/controller/failurerecovery/pod_termination_controller.go`), and how a Job's Workload is
//! found (`pkg/controller/constants`, the Workload API versions).

/// The annotation Kueue's failure-recovery controller reads on pods (KEP-6757; Kueue < 0.15.6,
/// < 0.16.3).
pub(crate) const SAFE_TO_FORCEFULLY_TERMINATE: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";
/// The key Kueue 0.15.6+, 0.16.3+ and 0.17+ read instead (kueue#9651).
pub(crate) const SAFE_TO_FORCEFULLY_DELETE: &str = "kueue.x-k8s.io/safe-to-forcefully-delete";
/// Both keys Kueue has read: the reconciler's default for `--read-recovery-annotation-key`, and the
/// keys whose values the webhook always checks and respects (an explicit `"false"` under either
/// is an opt-out).
pub(crate) const RECOVERY_ANNOTATION_KEYS: [&str; 2] =
    [SAFE_TO_FORCEFULLY_TERMINATE, SAFE_TO_FORCEFULLY_DELETE];
/// The only annotation value that opts a pod in. `"True"`, `"1"`, `""` do not.
pub(crate) const OPT_IN_VALUE: &str = "true";

/// Pod condition type written on recovery (`KueueFailureRecoveryConditionType`).
pub(crate) const CONDITION_TYPE: &str = "KueueFailureRecovery";
/// Condition and event reason jobgate writes: Kueue's original `KueueForcefulTerminationReason`
/// (Kueue 0.15.0 to 0.15.5 and 0.16.0 to 0.16.2).
pub(crate) const REASON_FORCEFULLY_TERMINATED: &str = "KueueForcefullyTerminated";
/// The value of `KueueForcefulTerminationReason` from Kueue 0.15.6, 0.16.3 and 0.17.0 on
/// (kueue#9651). jobgate never writes it.
pub(crate) const REASON_FORCEFULLY_DELETED: &str = "KueueForcefullyDeleted";
/// Reasons of a `KueueFailureRecovery` condition that record a forced recovery.
pub(crate) const RECORDED_REASONS: [&str; 2] =
    [REASON_FORCEFULLY_TERMINATED, REASON_FORCEFULLY_DELETED];
/// events.k8s.io/v1 `action` of the recovery event (Kueue's `Eventf(..., "ForcefulTermination", ...)`).
pub(crate) const EVENT_ACTION: &str = "ForcefulTermination";

/// The label on a Job's Workload holding the Job's UID (`constants.JobUIDLabel`).
pub(crate) const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// The versions of the Workload API, newest first: `v1beta2` is served from Kueue 0.15 and
/// stored from 0.16 (kueue#8020); `v1beta1`, the only version before, is no longer served from
/// Kueue 0.20 (kueue#14558). `spec.active` is the same field in both.
pub(crate) const WORKLOAD_VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];
