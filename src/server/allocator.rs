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

/// Blocks of this size or more are mapped on their own (glibc's default before it adapts).
const MMAP_THRESHOLD: i32 = 128 * 1024;

/// Sets the allocator up; called once when `serve` starts.
pub(crate) fn configure() {
    jobgate_alloc::fixed_mmap_threshold(MMAP_THRESHOLD);
}

/// Returns free heap pages to the system.
pub(crate) fn give_back() {
    jobgate_alloc::trim();
}
