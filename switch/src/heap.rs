//! The switch's live heap, counted as it changes: bytes and blocks allocated and not yet
//! freed, and how many allocations were ever made (switch/PROTOCOL.md, `stats` "heap").
//!
//! Why: resident memory (RSS) cannot tell a leak from the allocator keeping freed memory
//! for reuse, whose amount follows the deepest backlog the queues ever had (a loaded
//! machine makes it deeper). The live heap goes back to its level once the queues drain,
//! so a test can hold it to a bound that does not depend on load.
//!
//! Cost: a relaxed atomic add or two per allocation and per free. Forwarding allocates
//! nothing per packet (output buffers are recycled, pipeline.rs); packet-ins and digests
//! allocate their event, whose malloc costs far more than these adds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// The system allocator, counted.
pub struct CountingAllocator;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static LIVE_BLOCKS: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn allocated(size: usize) {
    LIVE_BYTES.fetch_add(size, Relaxed);
    LIVE_BLOCKS.fetch_add(1, Relaxed);
    ALLOCATIONS.fetch_add(1, Relaxed);
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc(layout);
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc_zeroed(layout);
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE_BYTES.fetch_sub(layout.size(), Relaxed);
        LIVE_BLOCKS.fetch_sub(1, Relaxed);
    }

    /// A resize keeps its one block; it counts as an allocation (it may copy).
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = System.realloc(ptr, layout, new_size);
        if !new.is_null() {
            LIVE_BYTES.fetch_add(new_size, Relaxed);
            LIVE_BYTES.fetch_sub(layout.size(), Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        new
    }
}

/// The live heap as `stats` reports it, read before the reply itself allocates.
pub struct HeapCounts {
    pub live_bytes: usize,
    pub live_blocks: usize,
    pub allocations: u64,
}

pub fn counts() -> HeapCounts {
    HeapCounts {
        live_bytes: LIVE_BYTES.load(Relaxed),
        live_blocks: LIVE_BLOCKS.load(Relaxed),
        allocations: ALLOCATIONS.load(Relaxed),
    }
}
