//! The `jobgate reconcile` flags of the per-Job recovery backoff (KEP-1282 requeuing backoff), for
//! `#[command(flatten)]` into the reconcile arguments.

use clap::{Args, ValueEnum};

use crate::recovery::backoff::{Backoff, DEFAULT_BASE_SECONDS, DEFAULT_MAX_SECONDS};
use crate::recovery::episode::{EpisodeConfig, LimitAction};

/// KEP-1282's `requeuingStrategy` (`backoffBaseSeconds`, `backoffMaxSeconds`,
/// `backoffLimitCount`) applied to forced recoveries of a Job's pods.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct RecoveryBackoffArgs {
    /// Wait after a Job's first recovery episode; doubles per episode (0: no wait).
    #[arg(
        long,
        env = "JOBGATE_RECOVERY_BACKOFF_BASE_SECONDS",
        default_value_t = DEFAULT_BASE_SECONDS as u32,
        value_name = "SECONDS"
    )]
    pub(crate) recovery_backoff_base_seconds: u32,
    /// Cap of the wait between two episodes of a Job (0: no cap).
    #[arg(
        long,
        env = "JOBGATE_RECOVERY_BACKOFF_MAX_SECONDS",
        default_value_t = DEFAULT_MAX_SECONDS as u32,
        value_name = "SECONDS"
    )]
    pub(crate) recovery_backoff_max_seconds: u32,
    /// Most recovery episodes per Job; the next one is refused (default: unlimited).
    #[arg(long, env = "JOBGATE_RECOVERY_BACKOFF_LIMIT_COUNT", value_name = "N")]
    pub(crate) recovery_backoff_limit_count: Option<u32>,
    /// What to do when a Job reaches the limit: `stop` recovering, also `suspend` the Job, or
    /// also `deactivate-workload` (its Kueue Workload).
    #[arg(
        long,
        env = "JOBGATE_ON_RECOVERY_LIMIT",
        value_enum,
        default_value_t = OnRecoveryLimit::Stop
    )]
    pub(crate) on_recovery_limit: OnRecoveryLimit,
}

/// `--on-recovery-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnRecoveryLimit {
    /// Stop recovering the Job's pods; leave the Job alone.
    Stop,
    /// Stop and set `spec.suspend: true` on the Job.
    Suspend,
    /// Stop and deactivate the Job's Kueue Workload (`spec.active: false`); Kueue unsuspends
    /// an admitted Job, so under Kueue this is the action that holds. Without a Workload: suspend.
    DeactivateWorkload,
}

impl RecoveryBackoffArgs {
    pub(crate) fn episode_config(&self) -> EpisodeConfig {
        EpisodeConfig {
            backoff: Backoff {
                base_seconds: u64::from(self.recovery_backoff_base_seconds),
                max_seconds: u64::from(self.recovery_backoff_max_seconds),
            },
            limit_count: self.recovery_backoff_limit_count,
            on_limit: match self.on_recovery_limit {
                OnRecoveryLimit::Stop => LimitAction::Stop,
                OnRecoveryLimit::Suspend => LimitAction::Suspend,
                OnRecoveryLimit::DeactivateWorkload => LimitAction::DeactivateWorkload,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Reconcile {
        #[command(flatten)]
        backoff: RecoveryBackoffArgs,
    }

    fn parse(args: &[&str]) -> Result<EpisodeConfig, clap::Error> {
        let argv = std::iter::once("reconcile").chain(args.iter().copied());
        Reconcile::try_parse_from(argv).map(|r| r.backoff.episode_config())
    }

    /// The defaults (docs/src/recovery-backoff.md): base 60, max 3600 (Kueue's), no limit, stop.
    #[test]
    fn defaults_are_kueue_60_3600_unlimited_stop() {
        assert_eq!(parse(&[]).unwrap(), EpisodeConfig::default());
        assert_eq!(
            parse(&[]).unwrap().backoff,
            Backoff {
                base_seconds: 60,
                max_seconds: 3600
            }
        );
    }

    #[test]
    fn every_flag_is_read() {
        let config = parse(&[
            "--recovery-backoff-base-seconds",
            "0",
            "--recovery-backoff-max-seconds",
            "0",
            "--recovery-backoff-limit-count",
            "3",
            "--on-recovery-limit",
            "suspend",
        ])
        .unwrap();
        assert_eq!(
            config,
            EpisodeConfig {
                backoff: Backoff {
                    base_seconds: 0,
                    max_seconds: 0
                },
                limit_count: Some(3),
                on_limit: LimitAction::Suspend,
            }
        );
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse(&["--recovery-backoff-base-seconds", "-1"]).is_err());
        assert!(parse(&["--recovery-backoff-limit-count", "many"]).is_err());
        assert!(parse(&["--on-recovery-limit", "delete"]).is_err());
        assert_eq!(
            parse(&["--on-recovery-limit", "deactivate-workload"])
                .unwrap()
                .on_limit,
            LimitAction::DeactivateWorkload
        );
    }
}
