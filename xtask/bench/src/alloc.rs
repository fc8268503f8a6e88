//! A counting global allocator: allocations, bytes and peak live heap of the client threads.
//!
//! The loopback servers run in the same process, so their threads mark themselves
//! [untracked](untrack_this_thread): the counts are the client's alone. `realloc` counts as
//! one allocation of its new size (a growing `Vec` shows up as the copies it makes).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// Wraps the system allocator and counts what tracked threads allocate.
#[derive(Debug)]
pub(crate) struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

thread_local! {
    // `const` and without a destructor: reading it never allocates, even inside `alloc`.
    static UNTRACKED: Cell<bool> = const { Cell::new(false) };
}

/// Counters since the start of the process (tracked threads only).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) allocs: u64,
    pub(crate) bytes: u64,
}

/// Totals so far.
pub(crate) fn snapshot() -> Counts {
    Counts { allocs: ALLOCS.load(Relaxed), bytes: BYTES.load(Relaxed) }
}

/// Restarts the peak-live-heap watermark; returns the live heap now, in bytes.
pub(crate) fn reset_peak() -> i64 {
    let live = LIVE.load(Relaxed);
    PEAK.store(live, Relaxed);
    live
}

/// The highest live heap since [`reset_peak`], in bytes.
pub(crate) fn peak() -> i64 {
    PEAK.load(Relaxed)
}

/// Stops counting what this thread allocates (the servers' threads call it).
pub(crate) fn untrack_this_thread() {
    UNTRACKED.with(|u| u.set(true));
}

fn tracked() -> bool {
    UNTRACKED.try_with(|u| !u.get()).unwrap_or(true)
}

fn on_alloc(size: usize) {
    if tracked() {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(size as u64, Relaxed);
        let live = LIVE.fetch_add(size as i64, Relaxed) + size as i64;
        PEAK.fetch_max(live, Relaxed);
    }
}

fn on_free(size: usize) {
    if tracked() {
        LIVE.fetch_sub(size as i64, Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counting touches only atomics and a `const` thread-local, and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        // SAFETY: forwarded as received; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        on_free(layout.size());
        // SAFETY: `ptr` came from `System` through this allocator with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        on_free(layout.size());
        on_alloc(new_size);
        // SAFETY: `ptr` came from `System` through this allocator with this `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
