//! What the rules see of one admission request (or one `jobgate check` document), and the
//! AdmissionReview-shaped verdict they give: field errors, warnings, a JSON Patch.

use super::field::FieldError;
use super::model::JobObject;

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
