//! The heap counter the streaming tests measure with: the system allocator, counting the bytes
//! live now and the most live since the last reset. A test file that uses it holds one test, so
//! nothing else allocates while it measures.

// The counting allocator is this module's only unsafe code: it forwards to the system allocator
// (each block says why that is sound).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting into [`LIVE`] and [`PEAK`].
pub(crate) struct Counting;

/// Bytes allocated and not yet freed.
pub(crate) static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most of [`LIVE`] since a test last stored it here.
pub(crate) static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds GlobalAlloc's
// contract; the counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout (non-zero size, as GlobalAlloc requires).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;
