//! The policy core: a Job in, a verdict (field errors, warnings, a JSON Patch) out.
//! Pure functions over plain data: no I/O, no async, no clock.

pub mod config;
pub mod defaults;
pub mod field;
pub mod model;
pub mod patch;
pub mod policy;
pub mod strict;
pub mod template;

pub use field::{BadValue, ErrorType, FieldError};
pub use model::{Field, JobObject, Kind};

/// The annotation Kueue's failure-recovery controller reads on pods (KEP-6757).
pub const SAFE_TO_FORCEFULLY_TERMINATE: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";
/// The key Kueue >= 0.15.6 reads instead.
pub const SAFE_TO_FORCEFULLY_DELETE: &str = "kueue.x-k8s.io/safe-to-forcefully-delete";
/// Both keys Kueue has read: the reconciler's default for `--recovery-annotation-key`, and the
/// keys whose values the webhook always checks and respects (an explicit `"false"` under either
/// is an opt-out).
pub const DEFAULT_RECOVERY_ANNOTATION_KEYS: [&str; 2] =
    [SAFE_TO_FORCEFULLY_TERMINATE, SAFE_TO_FORCEFULLY_DELETE];
/// The key the mutating webhook sets by default: the one KEP-6757 names. The reconciler reads
/// both keys, so the pods are recovered whichever Kueue version runs beside it.
pub const DEFAULT_INJECTED_RECOVERY_ANNOTATION_KEYS: [&str; 1] = [SAFE_TO_FORCEFULLY_TERMINATE];

/// The admission operation under review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn parse(s: &str) -> Option<Operation> {
        match s {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What the rules see of one admission request (or one `jobgate check` document).
#[derive(Debug, Clone, Copy)]
pub struct Review<'a> {
    pub operation: Operation,
    pub object: &'a JobObject,
    /// Present on UPDATE.
    pub old_object: Option<&'a JobObject>,
}

/// The outcome of the rules: denied when `errors` is non-empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    pub errors: Vec<FieldError>,
    pub warnings: Vec<String>,
    pub patch: json_patch::Patch,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        self.errors.is_empty()
    }
}

mod mutate;
pub mod validate;

pub use mutate::{
    FAILURE_RECOVERY, FAILURE_RECOVERY_DISABLED, FAILURE_RECOVERY_ENABLED, RecoveryScope, mutate,
};
pub use policy::{Level, Policies, PolicyName};
pub use validate::validate;

/// Settings of the rules, shared by `serve` and `check`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Pod-template annotation keys the mutating webhook sets to `"true"` for an opted-in Job
    /// (`--recovery-annotation-key`; default: Kueue's `safe-to-forcefully-terminate`).
    pub recovery_annotation_keys: Vec<String>,
    /// The level of each jobgate policy (`--policy NAME=off|warn|deny`, `policies:` in `--config`).
    pub policies: Policies,
}

impl Config {
    /// The keys `/mutate` sets: the configured ones, once each, in order.
    pub fn injected_recovery_keys(&self) -> Vec<&str> {
        distinct_keys(self.recovery_annotation_keys.iter().map(String::as_str))
    }

    /// The keys whose pod-template values mean something: the configured ones, then both of
    /// Kueue's, once each, in that order.
    pub fn recognized_recovery_keys(&self) -> Vec<&str> {
        let configured = self.recovery_annotation_keys.iter().map(String::as_str);
        distinct_keys(configured.chain(DEFAULT_RECOVERY_ANNOTATION_KEYS))
    }
}

/// Each key once, in order; an empty key is no annotation.
fn distinct_keys<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for key in keys {
        if !key.is_empty() && !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

impl Default for Config {
    fn default() -> Self {
        Config {
            recovery_annotation_keys: DEFAULT_INJECTED_RECOVERY_ANNOTATION_KEYS
                .iter()
                .map(|k| k.to_string())
                .collect(),
            policies: Policies::default(),
        }
    }
}
