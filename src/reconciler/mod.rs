pub mod job_state;
