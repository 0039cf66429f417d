//! The policy core: a Job in, a verdict (field errors, warnings, a JSON Patch) out.
//! Pure functions over plain data: no I/O, no async, no clock.
//!
//! What turns bytes into a Job is the wire (`wire`: the envelope, `model`, the readers); shared
//! types live in leaf modules (`review`, `finding`, `levels`, `field`), so the modules that use
//! them import each other in one direction only (`tests/import_graph.rs`).

pub(crate) mod config;
pub(crate) mod defaults;
pub(crate) mod field;
pub(crate) mod finding;
mod go_values;
pub(crate) mod levels;
pub(crate) mod mutate;
pub(crate) mod patch;
pub(crate) mod pipeline;
pub(crate) mod policy;
pub(crate) mod review;
pub(crate) mod template;
pub(crate) mod validate;
pub mod version;
pub(crate) mod wire;

// The crate's public face for benches, fuzz targets and integration tests.
pub use config::Config;
pub use wire::model::{JobObject, Kind};
