//! Prometheus metrics of `jobgate reconcile` (`prometheus-client`, names prefixed `jobgate_`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `node` label of `jobgate_recovery_pods_terminated_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabels {
    /// The name of the unreachable node the pod was on.
    pub node: String,
}

/// `error` label of `jobgate_recovery_errors_total`: what failed, as a short fixed word (kube-rs
/// `controller-rs` `Error::metric_label`), never a message (bounded cardinality).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// One of [`ERROR_KINDS`].
    pub error: &'static str,
}

/// Labels of `jobgate_recovery_writes_total`: the write verb and how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// The write (`patch_pod_status`, `delete_pod`, `patch_job`, `patch_workload`, `create_event`).
    pub verb: &'static str,
    /// How it ended: `ok`, a failure class, `not_leader` or `dry_run`.
    pub result: &'static str,
}

/// The `error` values of `jobgate_recovery_errors_total` (reconcile.rs `metric_label`, lease,
/// watch, writer), all exported from the start.
pub(crate) const ERROR_KINDS: [&str; 7] = [
    "reconcile_api",
    "reconcile_conflicts",
    "reconcile_job_state",
    "event",
    "lease",
    "watch_pods",
    "watch_nodes",
];

/// The reconciler's metrics; cheap to clone (all handles are shared).
#[derive(Clone, Debug)]
pub struct RecoveryMetrics {
    /// `jobgate_recovery_pods_terminated_total{node}`: pods whose recovery was recorded
    /// (status patched to the recovery condition), by the unreachable node.
    pub terminated: Family<NodeLabels, Counter>,
    /// `jobgate_recovery_pending_pods`: opted-in terminating pods waiting for their deadline or
    /// for their node to become unreachable.
    pub pending: Gauge,
    /// `jobgate_recovery_errors_total{error}`: failed reconciles, failed event creations, watch
    /// and lease errors, by kind.
    pub errors: Family<ErrorLabels, Counter>,
    /// `jobgate_recovery_writes_total{verb, result}`: every write the writer sent (or skipped).
    pub writes: Family<WriteLabels, Counter>,
    /// `jobgate_recovery_reconcile_duration_seconds`: time of one pod reconcile.
    pub(crate) reconcile_duration: Histogram,
    /// `jobgate_recovery_leader`: 1 while this replica holds the Lease and may act.
    pub leader: Gauge,
    /// `jobgate_recovery_episodes_total`: recovery episodes recorded on Jobs.
    pub episodes: Counter,
    /// `jobgate_recovery_limit_exceeded_total`: Jobs whose recovery the limit stopped (counted
    /// when the limit is recorded on the Job, once per Job).
    pub(crate) limit_exceeded: Counter,
    /// `jobgate_recovery_held_pods`: due pods held by the partition brake.
    pub held: Gauge,
    /// `jobgate_recovery_finalizer_held_pods`: recovered pods still present after the force
    /// delete, held by finalizers.
    pub finalizer_held: Gauge,
    /// `jobgate_recovery_disrupted_zones`: zones whose recoveries the partition brake holds or
    /// slows.
    pub(crate) disrupted_zones: Gauge,
}

impl Default for RecoveryMetrics {
    fn default() -> Self {
        RecoveryMetrics {
            terminated: Family::default(),
            pending: Gauge::default(),
            errors: Family::default(),
            writes: Family::default(),
            // 1 ms .. ~33 s: a reconcile is a few API round trips, or a conflict retry loop.
            reconcile_duration: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            leader: Gauge::default(),
            held: Gauge::default(),
            finalizer_held: Gauge::default(),
            disrupted_zones: Gauge::default(),
            episodes: Counter::default(),
            limit_exceeded: Counter::default(),
        }
    }
}

impl RecoveryMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> RecoveryMetrics {
        let metrics = RecoveryMetrics::default();
        metrics.register_reconciler(registry);
        metrics.register_episodes_and_holds(registry);
        // Every error kind at 0 from the start, so JobgateRecoveryErrors and the dashboard see
        // a series (and its first increase) on a fresh install.
        for error in ERROR_KINDS {
            metrics.errors.get_or_create_owned(&ErrorLabels { error });
        }
        metrics
    }

    /// The reconciler's own work: pods terminated and pending, errors, writes, reconcile time,
    /// leadership. (Registration order is the order `/metrics` lists them in.)
    fn register_reconciler(&self, registry: &mut Registry) {
        registry.register(
            "jobgate_recovery_pods_terminated",
            "Pods forcefully terminated (status recorded as Failed with the KueueFailureRecovery condition), by node",
            self.terminated.clone(),
        );
        registry.register(
            "jobgate_recovery_pending_pods",
            "Opted-in terminating pods waiting for their deadline or for their node to become unreachable",
            self.pending.clone(),
        );
        registry.register(
            "jobgate_recovery_errors",
            "Errors of the reconciler (failed reconciles, events, watches, lease rounds), by kind",
            self.errors.clone(),
        );
        registry.register(
            "jobgate_recovery_writes",
            "Writes of the reconciler to the apiserver, by verb and result",
            self.writes.clone(),
        );
        registry.register(
            "jobgate_recovery_reconcile_duration_seconds",
            "Duration of one pod reconcile",
            self.reconcile_duration.clone(),
        );
        registry.register(
            "jobgate_recovery_leader",
            "1 while this replica holds the leader Lease and may act, else 0",
            self.leader.clone(),
        );
    }

    /// What paces or holds recovery back: Jobs' episodes and limit, finalizers, the partition
    /// brake.
    fn register_episodes_and_holds(&self, registry: &mut Registry) {
        registry.register(
            "jobgate_recovery_episodes",
            "Recovery episodes recorded on Jobs (--recovery-backoff-*)",
            self.episodes.clone(),
        );
        registry.register(
            "jobgate_recovery_limit_exceeded",
            "Jobs whose recovery stopped at --recovery-backoff-limit-count (counted once per Job, when recorded)",
            self.limit_exceeded.clone(),
        );
        registry.register(
            "jobgate_recovery_finalizer_held_pods",
            "Recovered pods still present after the force delete: finalizers hold them",
            self.finalizer_held.clone(),
        );
        registry.register(
            "jobgate_recovery_held_pods",
            "Due pods held by the partition brake (their zone looks partitioned)",
            self.held.clone(),
        );
        registry.register(
            "jobgate_recovery_disrupted_zones",
            "Zones whose recoveries the partition brake holds or slows",
            self.disrupted_zones.clone(),
        );
    }

    /// Counts one error of kind `error` (one of [`ERROR_KINDS`]).
    pub fn error(&self, error: &'static str) {
        debug_assert!(
            ERROR_KINDS.contains(&error),
            "error kind {error} is not in ERROR_KINDS"
        );
        self.errors.get_or_create(&ErrorLabels { error }).inc();
    }

    /// `jobgate_recovery_errors_total{error="lease"}`, the counter the elector increments on a
    /// failed round.
    pub(crate) fn lease_errors(&self) -> Counter {
        self.errors
            .get_or_create_owned(&ErrorLabels { error: "lease" })
    }

    /// The count of errors of kind `error` (tests).
    #[cfg(test)]
    pub(crate) fn error_count(&self, error: &'static str) -> u64 {
        self.errors.get_or_create(&ErrorLabels { error }).get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh reconciler exports every error kind at 0: JobgateRecoveryErrors and the
    /// dashboard's error panel read them.
    #[test]
    fn a_fresh_reconciler_exports_every_error_kind_at_zero() {
        let mut registry = Registry::default();
        RecoveryMetrics::register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        for error in ERROR_KINDS {
            let line = format!("jobgate_recovery_errors_total{{error=\"{error}\"}} 0");
            assert!(text.contains(&line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn metric_names_as_documented() {
        let mut registry = Registry::default();
        let m = RecoveryMetrics::register(&mut registry);
        m.terminated
            .get_or_create(&NodeLabels {
                node: "node-a".into(),
            })
            .inc();
        m.pending.set(3);
        m.error("reconcile_api");
        m.writes
            .get_or_create(&WriteLabels {
                verb: "delete_pod",
                result: "ok",
            })
            .inc();
        m.reconcile_duration.observe(0.003);
        m.leader.set(1);
        m.episodes.inc();
        m.limit_exceeded.inc();
        m.held.set(6);
        m.disrupted_zones.set(1);
        let text = crate::runtime::encode(&registry);
        assert!(
            text.contains("jobgate_recovery_pods_terminated_total{node=\"node-a\"} 1"),
            "{text}"
        );
        assert!(text.contains("jobgate_recovery_pending_pods 3"), "{text}");
        assert!(
            text.contains("jobgate_recovery_errors_total{error=\"reconcile_api\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("jobgate_recovery_writes_total{verb=\"delete_pod\",result=\"ok\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("jobgate_recovery_reconcile_duration_seconds_count 1"),
            "{text}"
        );
        assert!(
            text.contains("jobgate_recovery_reconcile_duration_seconds_bucket{le=\"0.004\"} 1"),
            "{text}"
        );
        assert!(text.contains("jobgate_recovery_leader 1"), "{text}");
        assert!(text.contains("jobgate_recovery_episodes_total 1"), "{text}");
        assert!(
            text.contains("jobgate_recovery_limit_exceeded_total 1"),
            "{text}"
        );
        assert!(text.contains("jobgate_recovery_held_pods 6"), "{text}");
        assert!(
            text.contains("jobgate_recovery_disrupted_zones 1"),
            "{text}"
        );
    }
}
