//! The policy core: a Job in, a verdict (field errors, warnings, a JSON Patch) out.
//! Pure functions over plain data: no I/O, no async, no clock.

pub mod config;
pub mod defaults;
pub mod field;
mod go_values;
pub mod model;
pub mod patch;
pub mod policy;
pub mod strict;
pub mod template;
pub mod version;

pub use field::{BadValue, ErrorType, FieldError};
pub use model::{Field, JobObject, Kind};

/// The key the mutating webhook sets by default: the one KEP-6757 names. The reconciler reads
/// both keys, so the pods are recovered whichever Kueue version runs beside it.
pub const DEFAULT_INJECTED_RECOVERY_ANNOTATION_KEYS: [&str; 1] =
    [crate::kueue::SAFE_TO_FORCEFULLY_TERMINATE];

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

pub use config::Config;
pub use mutate::{
    FAILURE_RECOVERY, FAILURE_RECOVERY_DISABLED, FAILURE_RECOVERY_ENABLED, RecoveryScope, mutate,
};
pub use policy::{Level, Policies, PolicyName};
pub use validate::validate;
