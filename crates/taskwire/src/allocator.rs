//! Settings of mimalloc, the allocator of the `taskwire` binary and the benchmark
//! (built with its `no_thp` feature, see docs/operations.md).
//! (The library crates leave the choice of allocator to the program.)

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (the same index in v2 and v3).
const MI_OPTION_PURGE_DELAY: i32 = 15;

/// How long freed memory stays unused before mimalloc gives it back to the OS.
pub const PURGE_DELAY_MS: i64 = 1000;

/// Lets freed memory sit for [`PURGE_DELAY_MS`] before mimalloc returns it to the
/// OS (its default is 10 ms). Under load the same pages are freed and reused all
/// the time; purging them that early makes the kernel fault and zero them again
/// on every reuse, which profiles of the runtime showed as about a tenth of its
/// CPU. An explicit `MIMALLOC_PURGE_DELAY` in the environment wins. Call it first
/// thing in `main`; it does nothing useful for another allocator.
pub fn tune_mimalloc() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set stores an option value; any value is valid for this
    // option, and mimalloc reads options with atomic loads.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS as _);
    }
}

/// The global allocator of the `taskwire` binary and the benchmark: mimalloc, asked
/// for plain allocations where the layout allows.
///
/// The `mimalloc` crate's allocator passes every request through mimalloc's aligned
/// entry points, which take a longer path than `mi_malloc` (profiles of the runtime
/// bench showed them at about 6% of its instructions). Every mimalloc block is at
/// least word-aligned, so a layout whose alignment is at most [`WORD_ALIGN`] (and
/// not above its size) gets `mi_malloc`; anything else the aligned functions.
pub struct Allocator;

/// The alignment every mimalloc block has.
pub const WORD_ALIGN: usize = std::mem::size_of::<usize>();

#[inline]
fn plain(layout: std::alloc::Layout) -> bool {
    layout.align() <= WORD_ALIGN && layout.align() <= layout.size()
}

// SAFETY: every path hands the request to mimalloc with an alignment it honours:
// plain calls only for alignments every mimalloc block already has, the aligned
// calls otherwise; blocks are freed and resized by the same allocator.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if plain(layout) {
                libmimalloc_sys::mi_malloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if plain(layout) {
                libmimalloc_sys::mi_zalloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator; see the impl for the alignment.
        unsafe {
            if layout.align() <= WORD_ALIGN && layout.align() <= new_size {
                libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    use super::Allocator;

    /// Blocks of every small size and alignment come back aligned as asked, hold
    /// their contents through a resize, and are freed by the same allocator.
    #[test]
    fn blocks_are_aligned_and_resizable() {
        for size in 1..=4096usize {
            for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero-sized layout; the block is freed below.
                unsafe {
                    let p = Allocator.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xab, size);
                    let q = Allocator.realloc(p, layout, size * 2 + 1);
                    assert_eq!(q as usize % align, 0, "resized: size {size} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xab));
                    Allocator.dealloc(q, Layout::from_size_align(size * 2 + 1, align).unwrap());
                    let z = Allocator.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    Allocator.dealloc(z, layout);
                }
            }
        }
    }
}
