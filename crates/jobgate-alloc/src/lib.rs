//! The allocator calls jobgate needs, and with them all of the project's unsafe code, so that the
//! `jobgate` crate itself can `forbid(unsafe_code)` (as linkerd2 keeps its few system calls out of
//! the crates that hold its logic).
//!
//! - [`fixed_mmap_threshold`] and [`trim`]: giving memory back to the system after a burst of
//!   large request bodies (`jobgate serve`'s `server::allocator` says when and why).
//! - [`Counting`]: a global allocator that counts the bytes live and their peak, for the
//!   reconciler's memory test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Makes every block of `bytes` or more its own mapping, returned to the system when freed, and
/// stops glibc from raising that threshold as large blocks are freed (`mallopt(M_MMAP_THRESHOLD)`).
/// Does nothing where the C library is not glibc.
pub fn fixed_mmap_threshold(bytes: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes malloc's tuning parameters; it is thread-safe in glibc.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// Returns the free pages of every malloc arena to the system (`malloc_trim(0)`). Does nothing
/// where the C library is not glibc.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes each arena's lock; it is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A global allocator over [`System`] that counts the bytes allocated and not yet freed, and the
/// most there were at once.
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: jobgate_alloc::Counting = jobgate_alloc::Counting::new();
/// ```
#[derive(Debug, Default)]
pub struct Counting {
    current: AtomicUsize,
    peak: AtomicUsize,
}

impl Counting {
    /// A counter at zero.
    pub const fn new() -> Counting {
        Counting {
            current: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Bytes allocated and not yet freed.
    pub fn current(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    /// The most bytes allocated at once since the last [`Counting::reset_peak`].
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Starts the peak again from the bytes allocated now.
    pub fn reset_peak(&self) {
        self.peak.store(self.current(), Ordering::Relaxed);
    }

    fn grew(&self, by: usize) {
        let now = self.current.fetch_add(by, Ordering::Relaxed) + by;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn shrank(&self, by: usize) {
        self.current.fetch_sub(by, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to `System` unchanged; only the counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are System's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `alloc`/`realloc` above, that is by System, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        self.shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; `new_size` is the caller's, checked by System as documented.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                self.grew(new_size - layout.size());
            } else {
                self.shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_live_bytes_and_their_peak() {
        let counting = Counting::new();
        let small = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: a non-zero layout; each block is freed once with the layout it has.
        unsafe {
            let a = counting.alloc(small);
            assert_eq!((counting.current(), counting.peak()), (64, 64));
            let a = counting.realloc(a, small, 256);
            assert_eq!((counting.current(), counting.peak()), (256, 256));
            let big = Layout::from_size_align(256, 8).unwrap();
            let a = counting.realloc(a, big, 16);
            assert_eq!((counting.current(), counting.peak()), (16, 256));
            counting.reset_peak();
            assert_eq!(counting.peak(), 16);
            counting.dealloc(a, Layout::from_size_align(16, 8).unwrap());
        }
        assert_eq!((counting.current(), counting.peak()), (0, 16));
    }
}
