//! The wire: everything that turns bytes, or `jobgate check`'s decoded YAML, into a
//! [`JobObject`](model::JobObject), and nothing that judges one.
//!
//! - `envelope`: an AdmissionReview v1 request, read in one serde pass with its objects;
//! - `model`: the Job and CronJob fields the rules read, each declared once;
//! - `read`: the readers into `model`, with the field path of a failure;
//! - `strict`: where kube-apiserver's decoder (Go's `encoding/json`) and serde differ;
//! - `annotations`, `interned`: the two value shapes that keep a review from allocating.
//!
//! `admission` answers a review and `check` reads manifests; both come here for the object.

pub(crate) mod annotations;
pub(crate) mod envelope;
pub(crate) mod interned;
pub(crate) mod model;
pub(crate) mod read;
pub(crate) mod strict;
