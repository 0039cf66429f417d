pub mod backoff_args;
pub mod job_state;
pub mod status;
