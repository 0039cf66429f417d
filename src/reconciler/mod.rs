pub mod backoff_args;
pub mod job_state;
pub mod status;
#[cfg(test)]
mod test_api;
