//! What the rules see of one admission request (or one `jobgate check` document), and the
//! AdmissionReview-shaped verdict they give: field errors, warnings, a JSON Patch.

use super::field::FieldError;
use super::wire::envelope::Operation;
use super::wire::model::JobObject;

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
