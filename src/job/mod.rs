//! The policy core: a Job in, a verdict (field errors, warnings, a JSON Patch) out.
//! Pure functions over plain data: no I/O, no async, no clock.

mod annotations;
pub(crate) mod config;
pub(crate) mod defaults;
pub(crate) mod field;
mod go_values;
pub(crate) mod model;
pub(crate) mod patch;
pub(crate) mod policy;
pub(crate) mod quantity;
pub(crate) mod read;
pub(crate) mod review;
pub(crate) mod schema;
pub(crate) mod strict;
pub(crate) mod template;
pub mod version;

pub(crate) use field::{BadValue, FieldError};
pub use model::{JobObject, Kind};

/// The key the mutating webhook sets by default: the one KEP-6757 names. The reconciler reads
/// both keys, so the pods are recovered whichever Kueue version runs beside it.
pub(crate) const DEFAULT_INJECTED_RECOVERY_ANNOTATION_KEYS: [&str; 1] =
    [crate::kueue::SAFE_TO_FORCEFULLY_TERMINATE];

/// The admission operation under review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub(crate) fn parse(s: &str) -> Option<Operation> {
        match s {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) struct Review<'a> {
    pub(crate) operation: Operation,
    pub(crate) object: &'a JobObject,
    /// Present on UPDATE.
    pub(crate) old_object: Option<&'a JobObject>,
}

/// The outcome of the rules: denied when `errors` is non-empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Verdict {
    pub(crate) errors: Vec<FieldError>,
    pub(crate) warnings: Vec<String>,
    pub(crate) patch: json_patch::Patch,
}

impl Verdict {
    pub(crate) fn allowed(&self) -> bool {
        self.errors.is_empty()
    }
}

pub(crate) mod mutate;
pub(crate) mod validate;

pub use config::Config;
pub(crate) use mutate::{FAILURE_RECOVERY, FAILURE_RECOVERY_ENABLED, RecoveryScope, mutate};
pub(crate) use policy::Policies;
pub(crate) use policy::{Level, PolicyName};
#[cfg(test)]
pub(crate) use validate::validate;
