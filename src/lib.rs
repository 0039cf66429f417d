//! jobgate: a Kubernetes admission webhook and sidecar reconciler that make batch Jobs safe on
//! clusters where nodes and pods disappear. See README.md.

pub mod admission;
pub mod admission_policy;
pub mod api_error;
pub mod audit;
pub mod certs;
pub mod check;
pub mod duration;
pub mod embedded;
#[doc(hidden)]
pub mod fuzz;
pub mod job;
mod json_str;
pub(crate) mod kueue;
mod names;
pub mod pki;
pub mod reconciler;
pub mod recovery;
pub mod rule_flags;
pub mod runtime;
mod schema;
pub mod server;
pub mod status;
