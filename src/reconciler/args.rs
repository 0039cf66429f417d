//! `jobgate reconcile` flags; every flag also reads a `JOBGATE_*` environment variable.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::backoff_args::RecoveryBackoffArgs;
use crate::duration::parse_duration;
use crate::recovery;
use crate::recovery::brake::{self, BrakeConfig};
use crate::recovery::episode::EpisodeConfig;

/// The recovery flags `reconcile` and `status` share (one declaration), so that `status` given
/// the reconciler's values predicts exactly what it decides.
#[derive(Debug, Clone, Args)]
pub(crate) struct RecoveryArgs {
    /// Time after a pod's deletionTimestamp (which already includes the pod's own grace
    /// period) before an opted-in pod on an unreachable node is forcefully terminated.
    #[arg(
        long,
        env = "JOBGATE_FORCEFUL_TERMINATION_GRACE_PERIOD",
        default_value = "60s",
        value_parser = parse_duration
    )]
    pub(crate) forceful_termination_grace_period: Duration,
    /// Pod annotation keys read as the opt-in: a pod is recovered when one of them is "true"
    /// (repeatable; comma-separated in the environment variable; default: both Kueue keys,
    /// kueue.x-k8s.io/safe-to-forcefully-terminate and kueue.x-k8s.io/safe-to-forcefully-delete).
    #[arg(
        long = "read-recovery-annotation-key",
        env = "JOBGATE_READ_RECOVERY_ANNOTATION_KEY",
        value_name = "KEY",
        value_delimiter = ','
    )]
    pub(crate) recovery_annotation_keys: Vec<String>,
    /// The deprecated name of --read-recovery-annotation-key (`serve` has a flag of the same old
    /// name meaning the keys it sets).
    #[arg(
        long = "recovery-annotation-key",
        env = "JOBGATE_RECOVERY_ANNOTATION_KEY",
        value_name = "KEY",
        value_delimiter = ',',
        hide = true
    )]
    pub(crate) deprecated_recovery_annotation_keys: Vec<String>,
    /// --kueue-recovers: leave to Kueue's failure-recovery controller the pods it recovers.
    #[command(flatten)]
    pub(crate) kueue: crate::rule_flags::KueueRecoversArg,
    /// Per-Job recovery backoff and limit.
    #[command(flatten)]
    pub(crate) backoff: RecoveryBackoffArgs,
    /// Hold recoveries in a zone where many nodes are unreachable at once (a partition, not dead
    /// machines), like kube-controller-manager holds taint-based evictions.
    #[arg(
        long,
        env = "JOBGATE_PARTITION_BRAKE",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub(crate) partition_brake: bool,
    /// Fraction of a zone's nodes (and at least 3) unreachable from which the zone is disrupted
    /// (kube-controller-manager's --unhealthy-zone-threshold).
    #[arg(
        long,
        env = "JOBGATE_UNHEALTHY_ZONE_THRESHOLD",
        default_value_t = brake::DEFAULT_UNHEALTHY_ZONE_THRESHOLD,
        value_parser = parse_fraction,
        value_name = "FRACTION"
    )]
    pub(crate) unhealthy_zone_threshold: f32,
    /// A disrupted zone of at most this many nodes holds all recoveries; a larger one releases
    /// nodes at --secondary-recovery-rate (kube-controller-manager's
    /// --large-cluster-size-threshold, compared with the zone's size).
    #[arg(
        long,
        env = "JOBGATE_LARGE_CLUSTER_SIZE_THRESHOLD",
        default_value_t = brake::DEFAULT_LARGE_CLUSTER_SIZE_THRESHOLD,
        value_name = "NODES"
    )]
    pub(crate) large_cluster_size_threshold: u32,
    /// Nodes per second whose pods are recovered in a disrupted zone larger than
    /// --large-cluster-size-threshold (kube-controller-manager's --secondary-node-eviction-rate);
    /// 0 holds them all.
    #[arg(
        long,
        env = "JOBGATE_SECONDARY_RECOVERY_RATE",
        default_value_t = brake::DEFAULT_SECONDARY_RATE,
        value_parser = parse_rate,
        value_name = "NODES_PER_SECOND"
    )]
    pub(crate) secondary_recovery_rate: f64,
    /// How long no node may have become unreachable, or reachable again, before the partition
    /// brake judges the zones, so the nodes of one partition (or of one heal) are judged
    /// together, as kube-controller-manager judges a whole node monitor pass; a pod waits at
    /// most 6 times this after its node became unreachable or the changes began. 0s judges each
    /// node as it arrives.
    #[arg(
        long,
        env = "JOBGATE_PARTITION_SETTLE_PERIOD",
        default_value = "10s",
        value_parser = parse_duration,
        value_name = "DURATION"
    )]
    pub(crate) partition_settle_period: Duration,
}

/// A number in [0, 1].
fn parse_fraction(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("{text:?} is not a number from 0 to 1")),
    }
}

/// A finite number >= 0.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!("{text:?} is not a number >= 0")),
    }
}

impl RecoveryArgs {
    /// The pod decision's settings.
    pub(crate) fn config(&self) -> recovery::RecoveryConfig {
        recovery::RecoveryConfig {
            annotation_keys: self.annotation_keys(),
            grace_period: self.forceful_termination_grace_period,
            kueue_recovers: self.kueue.kueue_recovers,
        }
    }

    /// --read-recovery-annotation-key, else its deprecated name (with a warning), else both
    /// Kueue keys.
    fn annotation_keys(&self) -> Vec<String> {
        if !self.recovery_annotation_keys.is_empty() {
            return self.recovery_annotation_keys.clone();
        }
        if !self.deprecated_recovery_annotation_keys.is_empty() {
            tracing::warn!(
                "--recovery-annotation-key (JOBGATE_RECOVERY_ANNOTATION_KEY) is deprecated for \
                 reconcile and status: use --read-recovery-annotation-key \
                 (JOBGATE_READ_RECOVERY_ANNOTATION_KEY)"
            );
            return self.deprecated_recovery_annotation_keys.clone();
        }
        crate::kueue::RECOVERY_ANNOTATION_KEYS
            .map(String::from)
            .to_vec()
    }

    /// The Job episode decision's settings.
    pub(crate) fn episode_config(&self) -> EpisodeConfig {
        self.backoff.episode_config()
    }

    /// The partition brake's settings.
    pub(crate) fn brake_config(&self) -> BrakeConfig {
        BrakeConfig {
            enabled: self.partition_brake,
            unhealthy_zone_threshold: self.unhealthy_zone_threshold,
            large_cluster_size_threshold: self.large_cluster_size_threshold,
            secondary_rate: self.secondary_recovery_rate,
            settle: self.partition_settle_period,
        }
    }
}

/// `jobgate reconcile`.
#[derive(Debug, Clone, Args)]
pub struct ReconcileArgs {
    #[command(flatten)]
    pub(crate) cluster: crate::runtime::client::ClusterArgs,
    /// The decision's flags, shared with `jobgate status`.
    #[command(flatten)]
    pub(crate) recovery: RecoveryArgs,
    /// Record the recovery (phase Failed, condition, event) but do not delete the pod.
    #[arg(long, env = "JOBGATE_NO_DELETE")]
    pub(crate) no_delete: bool,
    /// Change nothing: log and emit a Normal "would forcefully terminate" event per pod.
    #[arg(long, env = "JOBGATE_DRY_RUN")]
    pub(crate) dry_run: bool,
    /// Name of the coordination.k8s.io/v1 Lease used for leader election.
    #[arg(long, env = "JOBGATE_LEASE_NAME", default_value = "jobgate-reconciler")]
    pub(crate) lease_name: String,
    /// Namespace of the Lease (default: the client's namespace, in a pod its own namespace).
    #[arg(long, env = "JOBGATE_LEASE_NAMESPACE")]
    pub(crate) lease_namespace: Option<String>,
    /// Leader-election identity (default: $POD_NAME or $HOSTNAME plus a random suffix).
    #[arg(long, env = "JOBGATE_LEADER_ELECTION_ID")]
    pub(crate) leader_election_id: Option<String>,
    /// Admin (plain HTTP) listen address for /livez, /readyz, /metrics. Defaults to 8081 so the
    /// sidecar does not collide with `serve`'s 8080 in the same pod.
    #[arg(long, env = "JOBGATE_ADMIN_ADDR", default_value = "0.0.0.0:8081")]
    pub(crate) admin_addr: SocketAddr,
    /// On SIGTERM, how long in-flight reconciles get to finish (no new one starts) before the
    /// Lease is released and the process exits.
    #[arg(
        long,
        env = "JOBGATE_SHUTDOWN_TIMEOUT",
        default_value = "10s",
        value_parser = parse_duration
    )]
    pub(crate) shutdown_timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: ReconcileArgs,
    }

    #[test]
    fn defaults() {
        let cli = Cli::try_parse_from(["jobgate"]).expect("parse");
        let a = cli.args;
        assert_eq!(
            a.recovery.forceful_termination_grace_period,
            Duration::from_secs(60)
        );
        assert_eq!(
            a.recovery.config().annotation_keys,
            vec![
                "kueue.x-k8s.io/safe-to-forcefully-terminate".to_string(),
                "kueue.x-k8s.io/safe-to-forcefully-delete".to_string()
            ]
        );
        assert!(!a.no_delete && !a.dry_run);
        assert_eq!(a.lease_name, "jobgate-reconciler");
        assert_eq!(a.lease_namespace, None);
        assert_eq!(a.admin_addr.port(), 8081);
        assert_eq!(a.shutdown_timeout, Duration::from_secs(10));
        assert_eq!(a.recovery.brake_config(), BrakeConfig::default());
    }

    #[test]
    fn brake_flags() {
        let cli = Cli::try_parse_from([
            "jobgate",
            "--partition-brake=false",
            "--unhealthy-zone-threshold=0.7",
            "--large-cluster-size-threshold=20",
            "--secondary-recovery-rate=0.5",
            "--partition-settle-period=2s500ms",
        ])
        .expect("parse");
        assert_eq!(
            cli.args.recovery.brake_config(),
            BrakeConfig {
                enabled: false,
                unhealthy_zone_threshold: 0.7,
                large_cluster_size_threshold: 20,
                secondary_rate: 0.5,
                settle: Duration::from_millis(2500),
            }
        );
        for bad in [
            "--unhealthy-zone-threshold=1.5",
            "--unhealthy-zone-threshold=x",
            "--secondary-recovery-rate=-1",
            "--secondary-recovery-rate=inf",
            "--partition-brake=maybe",
            "--partition-settle-period=-1s",
            "--partition-settle-period=10",
        ] {
            assert!(Cli::try_parse_from(["jobgate", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags() {
        let cli = Cli::try_parse_from([
            "jobgate",
            "--forceful-termination-grace-period=1m30s",
            "--read-recovery-annotation-key=example.com/a",
            "--read-recovery-annotation-key",
            "example.com/b",
            "--no-delete",
            "--dry-run",
            "--lease-name=l",
            "--lease-namespace=ns",
            "--context=kind-kind",
        ])
        .expect("parse");
        let a = cli.args;
        assert_eq!(
            a.recovery.forceful_termination_grace_period,
            Duration::from_secs(90)
        );
        assert_eq!(
            a.recovery.config().annotation_keys,
            vec!["example.com/a", "example.com/b"]
        );
        assert!(a.no_delete && a.dry_run);
        assert_eq!(a.lease_name, "l");
        assert_eq!(a.lease_namespace.as_deref(), Some("ns"));
        assert_eq!(a.cluster.context.as_deref(), Some("kind-kind"));
    }

    /// The old name still works (hidden from --help); the new one wins when both are given.
    #[test]
    fn the_deprecated_flag_name_still_sets_the_keys_read() {
        let old = Cli::try_parse_from(["jobgate", "--recovery-annotation-key=example.com/old"])
            .expect("parse");
        assert_eq!(
            old.args.recovery.config().annotation_keys,
            vec!["example.com/old"]
        );
        let both = Cli::try_parse_from([
            "jobgate",
            "--recovery-annotation-key=example.com/old",
            "--read-recovery-annotation-key=example.com/new",
        ])
        .expect("parse");
        assert_eq!(
            both.args.recovery.config().annotation_keys,
            vec!["example.com/new"]
        );
    }
}
