//! Giving memory back to the system after a burst of large request bodies.
//!
//! glibc's malloc (the Deployment's image is distroless/cc, glibc) keeps freed memory in its
//! arenas, and by default raises its mmap threshold each time a large block is freed, so after a
//! burst of 7 MB bodies later ones come from the arenas too and RSS stays where the burst left it
//! (measured: ~100 MiB). Two settings fix that, measured with the hostile-load test
//! (`tests/hostile_load.rs`):
//! - a fixed mmap threshold, so every block of 128 KiB or more (bodies, large strings) is its own
//!   mapping, returned to the system when freed;
//! - `malloc_trim(0)` once the last large body of a burst is released, which returns the free
//!   pages of every arena.

// The only unsafe code of the crate: two glibc calls, each with its SAFETY note.
#![allow(unsafe_code)]

/// Blocks of this size or more are mapped on their own (glibc's default before it adapts).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 128 * 1024;

/// Sets the allocator up; called once when `serve` starts.
pub(crate) fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes malloc's tuning parameters; it is thread-safe in glibc.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Returns free heap pages to the system.
pub(crate) fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes each arena's lock; it is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}
