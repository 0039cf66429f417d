pub mod backoff;
pub mod episode;
