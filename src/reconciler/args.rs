//! `jobgate reconcile` flags; every flag also reads a `JOBGATE_*` environment variable.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::backoff_args::RecoveryBackoffArgs;
use crate::duration::parse_duration;
use crate::recovery;
use crate::recovery::episode::EpisodeConfig;

/// The recovery flags `reconcile` and `status` share (one declaration), so that `status` given
/// the reconciler's values predicts exactly what it decides.
#[derive(Debug, Clone, Args)]
pub struct RecoveryArgs {
    /// Time after a pod's deletionTimestamp (which already includes the pod's own grace
    /// period) before an opted-in pod on an unreachable node is forcefully terminated.
    #[arg(
        long,
        env = "JOBGATE_FORCEFUL_TERMINATION_GRACE_PERIOD",
        default_value = "60s",
        value_parser = parse_duration
    )]
    pub forceful_termination_grace_period: Duration,
    /// Pod annotation keys that opt a pod in with the value "true" (repeatable; comma-separated
    /// in the environment variable).
    #[arg(
        long = "recovery-annotation-key",
        env = "JOBGATE_RECOVERY_ANNOTATION_KEY",
        value_delimiter = ',',
        default_values_t = crate::job::DEFAULT_RECOVERY_ANNOTATION_KEYS.map(String::from)
    )]
    pub recovery_annotation_keys: Vec<String>,
    /// Per-Job recovery backoff and limit.
    #[command(flatten)]
    pub backoff: RecoveryBackoffArgs,
}

impl RecoveryArgs {
    /// The pod decision's settings.
    pub fn config(&self) -> recovery::Config {
        recovery::Config {
            annotation_keys: self.recovery_annotation_keys.clone(),
            grace_period: self.forceful_termination_grace_period,
        }
    }

    /// The Job episode decision's settings.
    pub fn episode_config(&self) -> EpisodeConfig {
        self.backoff.episode_config()
    }
}

#[derive(Debug, Clone, Args)]
pub struct ReconcileArgs {
    #[command(flatten)]
    pub cluster: super::cluster::ClusterArgs,
    /// The decision's flags, shared with `jobgate status`.
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    /// Record the recovery (phase Failed, condition, event) but do not delete the pod.
    #[arg(long, env = "JOBGATE_NO_DELETE")]
    pub no_delete: bool,
    /// Change nothing: log and emit a Normal "would forcefully terminate" event per pod.
    #[arg(long, env = "JOBGATE_DRY_RUN")]
    pub dry_run: bool,
    /// Name of the coordination.k8s.io/v1 Lease used for leader election.
    #[arg(long, env = "JOBGATE_LEASE_NAME", default_value = "jobgate-reconciler")]
    pub lease_name: String,
    /// Namespace of the Lease (default: the client's namespace, in a pod its own namespace).
    #[arg(long, env = "JOBGATE_LEASE_NAMESPACE")]
    pub lease_namespace: Option<String>,
    /// Leader-election identity (default: $POD_NAME or $HOSTNAME plus a random suffix).
    #[arg(long, env = "JOBGATE_LEADER_ELECTION_ID")]
    pub leader_election_id: Option<String>,
    /// Admin (plain HTTP) listen address for /livez, /readyz, /metrics. Defaults to 8081 so the
    /// sidecar does not collide with `serve`'s 8080 in the same pod.
    #[arg(long, env = "JOBGATE_ADMIN_ADDR", default_value = "0.0.0.0:8081")]
    pub admin_addr: SocketAddr,
    /// On SIGTERM, how long in-flight reconciles get to finish (no new one starts) before the
    /// Lease is released and the process exits.
    #[arg(
        long,
        env = "JOBGATE_SHUTDOWN_TIMEOUT",
        default_value = "10s",
        value_parser = parse_duration
    )]
    pub shutdown_timeout: Duration,
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
            a.recovery.recovery_annotation_keys,
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
    }

    #[test]
    fn flags() {
        let cli = Cli::try_parse_from([
            "jobgate",
            "--forceful-termination-grace-period=1m30s",
            "--recovery-annotation-key=example.com/a",
            "--recovery-annotation-key",
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
            a.recovery.recovery_annotation_keys,
            vec!["example.com/a", "example.com/b"]
        );
        assert!(a.no_delete && a.dry_run);
        assert_eq!(a.lease_name, "l");
        assert_eq!(a.lease_namespace.as_deref(), Some("ns"));
        assert_eq!(a.cluster.context.as_deref(), Some("kind-kind"));
    }
}
