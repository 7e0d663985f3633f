//! The stored 4 KiB page: a block of bytes with the number of images
//! holding it (clones share blocks copy-on-write), its allocation and
//! release.

use super::{Line, PageBytes, LINE, PAGE_BYTES};
use std::alloc::{alloc, alloc_zeroed, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A page's bytes with the number of images holding it: pages are shared
/// copy-on-write between clones, so identical 4 KiB pages are stored once.
#[repr(C)]
pub(super) struct Block {
    /// Images (map entries) holding this block; atomic because images that
    /// share blocks may be moved to different threads.
    pub(super) refs: AtomicUsize,
    pub(super) bytes: PageBytes,
}

pub(super) const BLOCK_LAYOUT: Layout = Layout::new::<Block>();

/// A zeroed block held once.
pub(super) fn alloc_block() -> *mut Block {
    // SAFETY: the layout has a non-zero size; all-zero bytes are a valid
    // `Block` (refs 0, zero page), then `refs` is set to 1.
    unsafe {
        let p = alloc_zeroed(BLOCK_LAYOUT) as *mut Block;
        if p.is_null() {
            std::alloc::handle_alloc_error(BLOCK_LAYOUT);
        }
        (*p).refs = AtomicUsize::new(1);
        p
    }
}

/// A block held once whose bytes are not initialised: the caller fills
/// them before any read.
pub(super) fn alloc_block_uninit() -> *mut Block {
    // SAFETY: the layout has a non-zero size; `refs` is initialised here,
    // the bytes by the caller.
    unsafe {
        let p = alloc(BLOCK_LAYOUT) as *mut Block;
        if p.is_null() {
            std::alloc::handle_alloc_error(BLOCK_LAYOUT);
        }
        std::ptr::addr_of_mut!((*p).refs).write(AtomicUsize::new(1));
        p
    }
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

/// A zero page.
pub(super) const ZEROS: PageBytes = [0u8; PAGE_BYTES as usize];
