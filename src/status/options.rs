//! The settings `jobgate status` decides with: the reconciler's own, so it shows what the
//! reconciler would do.

use crate::recovery::RecoveryConfig;
use crate::recovery::brake::BrakeConfig;
use crate::recovery::episode::EpisodeConfig;

/// The settings of the decisions (the reconciler's flags, see `RecoveryArgs`).
#[derive(Debug, Clone)]
pub(crate) struct RenderOptions {
    pub(crate) config: RecoveryConfig,
    pub(crate) episode: EpisodeConfig,
    pub(crate) brake: BrakeConfig,
}
