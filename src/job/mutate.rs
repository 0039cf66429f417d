//! `/mutate`: KEP-3939 defaulting and failure-recovery opt-in, as a minimal JSON Patch.
//! (The rules arrive with the mutation issue; until then nothing is patched.)

use super::{Config, Review, Verdict};

/// How a Job may opt into failure recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryScope {
    /// `POST /mutate`: only Jobs annotated `jobgate.dev/failure-recovery: "enabled"`.
    JobAnnotation,
    /// `POST /mutate/recovery`: every Job not annotated `jobgate.dev/failure-recovery: "disabled"`.
    Namespace,
}

pub fn mutate(_review: &Review<'_>, _config: &Config, _scope: RecoveryScope) -> Verdict {
    Verdict::default()
}
