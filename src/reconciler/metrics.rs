//! Prometheus metrics of `jobgate reconcile` (`prometheus-client`, names prefixed `jobgate_`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabels {
    pub node: String,
}

/// The reconciler's metrics; cheap to clone (all handles are shared).
#[derive(Clone, Debug, Default)]
pub struct RecoveryMetrics {
    /// `jobgate_recovery_pods_terminated_total{node}`: pods whose recovery was recorded
    /// (status patched to the recovery condition), by the unreachable node.
    pub terminated: Family<NodeLabels, Counter>,
    /// `jobgate_recovery_pending_pods`: opted-in terminating pods waiting for their deadline or
    /// for their node to become unreachable.
    pub pending: Gauge,
    /// `jobgate_recovery_errors_total`: failed API calls and watch errors.
    pub errors: Counter,
    /// `jobgate_recovery_leader`: 1 while this replica holds the Lease and may act.
    pub leader: Gauge,
    /// `jobgate_recovery_episodes_total`: recovery episodes recorded on Jobs.
    pub episodes: Counter,
    /// `jobgate_recovery_limit_exceeded_total`: Jobs whose recovery the limit stopped (counted
    /// when the limit is recorded on the Job, once per Job).
    pub limit_exceeded: Counter,
}

impl RecoveryMetrics {
    pub fn register(registry: &mut Registry) -> RecoveryMetrics {
        let metrics = RecoveryMetrics::default();
        registry.register(
            "jobgate_recovery_pods_terminated",
            "Pods forcefully terminated (status recorded as Failed with the KueueFailureRecovery condition), by node",
            metrics.terminated.clone(),
        );
        registry.register(
            "jobgate_recovery_pending_pods",
            "Opted-in terminating pods waiting for their deadline or for their node to become unreachable",
            metrics.pending.clone(),
        );
        registry.register(
            "jobgate_recovery_errors",
            "Failed Kubernetes API calls and watch errors of the reconciler",
            metrics.errors.clone(),
        );
        registry.register(
            "jobgate_recovery_leader",
            "1 while this replica holds the leader Lease and may act, else 0",
            metrics.leader.clone(),
        );
        registry.register(
            "jobgate_recovery_episodes",
            "Recovery episodes recorded on Jobs (--recovery-backoff-*)",
            metrics.episodes.clone(),
        );
        registry.register(
            "jobgate_recovery_limit_exceeded",
            "Jobs whose recovery stopped at --recovery-backoff-limit-count (counted once per Job, when recorded)",
            metrics.limit_exceeded.clone(),
        );
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        m.errors.inc();
        m.leader.set(1);
        m.episodes.inc();
        m.limit_exceeded.inc();
        let text = crate::server::metrics::encode(&registry);
        assert!(
            text.contains("jobgate_recovery_pods_terminated_total{node=\"node-a\"} 1"),
            "{text}"
        );
        assert!(text.contains("jobgate_recovery_pending_pods 3"), "{text}");
        assert!(text.contains("jobgate_recovery_errors_total 1"), "{text}");
        assert!(text.contains("jobgate_recovery_leader 1"), "{text}");
        assert!(text.contains("jobgate_recovery_episodes_total 1"), "{text}");
        assert!(
            text.contains("jobgate_recovery_limit_exceeded_total 1"),
            "{text}"
        );
    }
}
