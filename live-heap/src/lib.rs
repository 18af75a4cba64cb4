//! A global allocator that counts live heap bytes, for memory figures that do
//! not depend on how the allocator happens to return pages to the system.
//!
//! The bench installs it for the figures it measures in its own process; the
//! browser app installs it too, so that the phone bench can read what the
//! page's Rust heap holds, not only how far its wasm memory ever grew (wasm
//! memory never shrinks, so a leak and a busy minute long ago look alike
//! there). Its cost is two relaxed additions per allocation.
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: watchlife_live_heap::Counting = watchlife_live_heap::Counting;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` with the same arguments; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

/// Heap bytes allocated and not yet freed, by the whole program; 0 where
/// [`Counting`] is not the global allocator.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}
