//! The stored 4 KiB page: a block of bytes with the number of images
//! holding it (clones share blocks copy-on-write), its allocation and
//! release.

use super::{Line, PageBytes, LINE, PAGE_BYTES};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// A page's bytes with the number of images holding it: pages are shared
/// copy-on-write between clones, so identical 4 KiB pages are stored once.
#[repr(C)]
pub(super) struct Block {
    /// Images (map entries) holding this block; atomic because images that
    /// share blocks may be moved to different threads.
    pub(super) refs: AtomicUsize,
    pub(super) bytes: PageBytes,
}

/// Bytes of a pool chunk.
const CHUNK_BYTES: usize = 2 << 20;
const BLOCKS_PER_CHUNK: usize = CHUNK_BYTES / std::mem::size_of::<Block>();
/// A chunk: zeroed, aligned for blocks.
const CHUNK_LAYOUT: Layout =
    match Layout::from_size_align(CHUNK_BYTES, std::mem::align_of::<Block>()) {
        Ok(l) => l,
        Err(_) => panic!("chunk layout"),
    };

/// Where blocks come from and go back to. An image that grows during a run
/// takes a block per fresh page; allocated one by one, each would cost the
/// host a page fault per 4 KiB, so blocks are cut from chunks faulted in by
/// one call ([`crate::alloc::prefault`]). The chunks come from [`System`],
/// with 4 KiB pages whatever the process allocator: a fresh huge page costs
/// the most to fault in (on virtual machines whose balloon takes free 2 MiB
/// blocks back from the guest, several times a 4 KiB page's cost per
/// byte). Released blocks are kept for reuse; chunks are never returned
/// (as the heap keeps most of what it was given).
struct Pool {
    /// Released blocks, bytes arbitrary (initialised).
    free: Vec<*mut Block>,
    /// The next block not yet cut from the current chunk (zero bytes), and
    /// how many of them are left.
    next: *mut Block,
    left: usize,
}

// SAFETY: the pool's pointers are to blocks no image holds (released or
// never handed out); a block taken from the pool belongs to its taker.
unsafe impl Send for Pool {}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    free: Vec::new(),
    next: std::ptr::null_mut(),
    left: 0,
});

/// A block nobody holds, and whether its bytes are known to be zero.
fn take() -> (*mut Block, bool) {
    // A panic while holding the lock cannot leave the pool inconsistent
    // (each update is one push, pop or pointer step).
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = pool.free.pop() {
        return (b, false);
    }
    if pool.left == 0 {
        // SAFETY: the layout has a non-zero size.
        let c = unsafe { System.alloc_zeroed(CHUNK_LAYOUT) } as *mut Block;
        if c.is_null() {
            std::alloc::handle_alloc_error(CHUNK_LAYOUT);
        }
        // SAFETY: the chunk just allocated, owned by the pool.
        unsafe { crate::alloc::prefault(c.cast(), CHUNK_BYTES) };
        pool.next = c;
        pool.left = BLOCKS_PER_CHUNK;
    }
    let b = pool.next;
    // SAFETY: `left > 0` blocks remain in the chunk from `next` on, so the
    // step stays within it (or one past its last block).
    pool.next = unsafe { b.add(1) };
    pool.left -= 1;
    (b, true)
}

/// A zeroed block held once.
pub(super) fn alloc_block() -> *mut Block {
    let (b, zero) = take();
    // SAFETY: `b` is a block of initialised bytes owned by this caller.
    unsafe {
        if !zero {
            (*b).bytes.fill(0);
        }
        std::ptr::addr_of_mut!((*b).refs).write(AtomicUsize::new(1));
    }
    b
}

/// A block held once whose bytes are arbitrary: the caller fills them
/// before any read.
pub(super) fn alloc_block_uninit() -> *mut Block {
    let (b, _) = take();
    // SAFETY: `b` is owned by this caller.
    unsafe { std::ptr::addr_of_mut!((*b).refs).write(AtomicUsize::new(1)) };
    b
}

/// Give back a block nobody holds any more.
///
/// # Safety
/// `b` came from [`alloc_block`] or [`alloc_block_uninit`], its last
/// holder let go of it, and no one uses it after this call.
pub(super) unsafe fn free_block(b: *mut Block) {
    POOL.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .free
        .push(b);
}

/// The page bytes of a block (no reference taken).
#[inline(always)]
pub(super) fn bytes_of(b: *mut Block) -> *mut PageBytes {
    // SAFETY: only the address is computed (no read), within the block.
    unsafe { std::ptr::addr_of_mut!((*b).bytes) }
}

/// Drop one holder's reference; frees the block when it was the last.
/// Returns the block if this holder was the only one (not freed: the
/// caller may reuse it).
pub(super) fn release(b: *mut Block) -> Option<*mut Block> {
    // SAFETY: `b` is a live block held by the caller.
    let refs = unsafe { &(*b).refs };
    if refs.fetch_sub(1, Ordering::AcqRel) == 1 {
        // Last holder: keep it (count back to 1) for the caller to reuse
        // or free.
        refs.store(1, Ordering::Relaxed);
        return Some(b);
    }
    None
}

/// Line `i` of a page's bytes.
#[inline(always)]
pub(super) fn line_of(page: &PageBytes, i: usize) -> &Line {
    page[i * LINE..(i + 1) * LINE].try_into().unwrap()
}

/// Whether two lines hold the same bytes, compared a word at a time: the
/// page sharing after a checkpoint compares every line of every page
/// written since the last one, and a call into `memcmp` per 64-byte line
/// cost more than the compare.
#[inline]
pub(super) fn lines_equal(a: &Line, b: &Line) -> bool {
    let (a, b) = (a.as_chunks::<8>().0, b.as_chunks::<8>().0);
    a.iter().zip(b).fold(0u64, |d, (x, y)| {
        d | (u64::from_ne_bytes(*x) ^ u64::from_ne_bytes(*y))
    }) == 0
}

/// A zero page.
pub(super) const ZEROS: PageBytes = [0u8; PAGE_BYTES as usize];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_blocks_are_distinct_and_zeroed_when_promised() {
        // Enough blocks to span several chunks, from several threads, each
        // filled with a pattern of its own; then all given back and taken
        // again: `alloc_block` must hand out zero pages, whatever the
        // block held before.
        let held: Vec<Vec<usize>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4u8)
                .map(|t| {
                    s.spawn(move || {
                        (0..3 * BLOCKS_PER_CHUNK / 2)
                            .map(|i| {
                                let b = if i % 2 == 0 {
                                    alloc_block()
                                } else {
                                    alloc_block_uninit()
                                };
                                // SAFETY: a fresh block held once.
                                unsafe {
                                    assert_eq!((*b).refs.load(Ordering::Relaxed), 1);
                                    if i % 2 == 0 {
                                        assert!((*b).bytes.iter().all(|&x| x == 0));
                                    }
                                    (*b).bytes.fill(t + 1);
                                }
                                b as usize
                            })
                            .collect()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut all: Vec<usize> = held.iter().flatten().copied().collect();
        for (t, blocks) in held.iter().enumerate() {
            for &b in blocks {
                // SAFETY: still held; no other block overlaps it (checked
                // below), so the pattern is this thread's.
                let bytes = unsafe { &(*(b as *mut Block)).bytes };
                assert!(bytes.iter().all(|&x| x == t as u8 + 1), "block overwritten");
            }
        }
        all.sort_unstable();
        for w in all.windows(2) {
            assert!(
                w[1] - w[0] >= std::mem::size_of::<Block>(),
                "blocks overlap"
            );
        }
        for &b in &all {
            // SAFETY: each block is held once, by this test, and let go.
            unsafe { free_block(b as *mut Block) };
        }
        let again: Vec<*mut Block> = (0..all.len()).map(|_| alloc_block()).collect();
        for &b in &again {
            // SAFETY: a fresh block held once.
            let bytes = unsafe { &(*b).bytes };
            assert!(bytes.iter().all(|&x| x == 0), "reused block not zeroed");
        }
        for b in again {
            // SAFETY: held once, by this test, and let go.
            unsafe { free_block(b) };
        }
    }
}
