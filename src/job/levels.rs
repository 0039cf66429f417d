//! jobgate's policies by name, and the level (`off`, `warn`, `deny`) each runs at.

use std::fmt;

/// How a policy acts when it finds something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Off,
    Warn,
    Deny,
}

impl Level {
    pub(crate) fn parse(s: &str) -> Option<Level> {
        match s {
            "off" => Some(Level::Off),
            "warn" => Some(Level::Warn),
            "deny" => Some(Level::Deny),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Off => "off",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The policies, in the order they are evaluated and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum PolicyName {
    /// The recovery annotation on the pod template must be `"true"` or `"false"`.
    RecoveryAnnotationValue,
    /// The recovery annotation on the Job's (or CronJob's) own metadata has no effect.
    RecoveryAnnotationOnJob,
    /// Pods opted into recovery need `podReplacementPolicy: Failed`.
    RecoveryNeedsFailed,
    /// Pods opted into recovery should have an `Ignore` rule on `DisruptionTarget`.
    RecoveryCountsTowardBackoff,
    /// An Indexed Job with `TerminatingOrFailed` may run two pods for one index.
    IndexedTerminatingOrFailed,
}

impl PolicyName {
    pub(crate) const ALL: [PolicyName; 5] = [
        PolicyName::RecoveryAnnotationValue,
        PolicyName::RecoveryAnnotationOnJob,
        PolicyName::RecoveryNeedsFailed,
        PolicyName::RecoveryCountsTowardBackoff,
        PolicyName::IndexedTerminatingOrFailed,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PolicyName::RecoveryAnnotationValue => "recovery-annotation-value",
            PolicyName::RecoveryAnnotationOnJob => "recovery-annotation-on-job",
            PolicyName::RecoveryNeedsFailed => "recovery-needs-failed",
            PolicyName::RecoveryCountsTowardBackoff => "recovery-counts-toward-backoff",
            PolicyName::IndexedTerminatingOrFailed => "indexed-terminating-or-failed",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<PolicyName> {
        PolicyName::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// One line on what the policy finds.
    pub(crate) fn description(self) -> &'static str {
        match self {
            PolicyName::RecoveryAnnotationValue => {
                "the pod template's recovery annotation is neither \"true\" nor \"false\" (Kueue reads it as not opted in)"
            }
            PolicyName::RecoveryAnnotationOnJob => {
                "the recovery annotation is on the Job (or CronJob) itself, where it has no effect"
            }
            PolicyName::RecoveryNeedsFailed => {
                "pods opted into recovery without podReplacementPolicy: Failed (replacements start early)"
            }
            PolicyName::RecoveryCountsTowardBackoff => {
                "pods opted into recovery without an Ignore rule on DisruptionTarget (recoveries count toward backoffLimit)"
            }
            PolicyName::IndexedTerminatingOrFailed => {
                "an Indexed Job with podReplacementPolicy: TerminatingOrFailed may run two pods for one index"
            }
        }
    }

    pub(crate) fn default_level(self) -> Level {
        match self {
            PolicyName::RecoveryAnnotationValue => Level::Deny,
            PolicyName::RecoveryAnnotationOnJob
            | PolicyName::RecoveryNeedsFailed
            | PolicyName::RecoveryCountsTowardBackoff => Level::Warn,
            PolicyName::IndexedTerminatingOrFailed => Level::Off,
        }
    }
}

impl fmt::Display for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The level of each policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policies {
    levels: [Level; 5],
}

impl Default for Policies {
    fn default() -> Self {
        Policies {
            levels: PolicyName::ALL.map(PolicyName::default_level),
        }
    }
}

impl Policies {
    pub(crate) fn level(&self, name: PolicyName) -> Level {
        self.levels[name as usize]
    }

    pub(crate) fn set(&mut self, name: PolicyName, level: Level) {
        self.levels[name as usize] = level;
    }

    /// Every policy at `level` (tests, `--policy` shorthands).
    pub(crate) fn all(level: Level) -> Policies {
        Policies { levels: [level; 5] }
    }
}
