//! Sparse byte-addressed memory images. A 512 GB address space costs only
//! the 4 KiB pages that were touched.
//!
//! Files: `mod.rs` (the `MemRead`/`MemWrite` traits, the [`SparseImage`]
//! state: its page map and page caches, clones, sharing, written-page
//! tracking), `block.rs` (the stored 4 KiB block, reference-counted between
//! clones), `dep.rs` (dependent pages: a base image's page plus the lines
//! that differ, and linking), `access.rs` (the read and write paths through
//! the page caches), `overlay.rs` ([`Overlay`], recovery's copy-on-write
//! view), `tests.rs`.

mod access;
mod block;
mod dep;
mod overlay;
#[cfg(test)]
mod tests;

pub use overlay::Overlay;

use crate::types::{Addr, LineData, LINE_BYTES};
use access::PAGE_CACHE_ENTRIES;
use block::{alloc_block_uninit, bytes_of, free_block, release, Block, ZEROS};
use dep::{leave, leave_dependent, Dep};
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::sync::atomic::Ordering;

pub const PAGE_BYTES: u64 = 4096;

/// Read access to a byte image; implemented by plain images and by
/// copy-on-write overlays used during crash recovery.
pub trait MemRead {
    /// Copy `buf.len()` bytes starting at `addr`; untouched bytes read as 0.
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]);

    fn read_u64(&self, addr: Addr) -> u64 {
        let mut b = [0u8; 8];
        self.read_bytes(addr, &mut b);
        u64::from_le_bytes(b)
    }

    fn read_line(&self, line_addr: Addr) -> LineData {
        let mut l = [0u8; LINE_BYTES as usize];
        self.read_bytes(line_addr, &mut l);
        l
    }

    /// Host-speed hint for scans of large, mostly unwritten areas: an
    /// address in `[addr, end]` such that every byte of `[addr, result)`
    /// reads as zero. A scan may jump there and sees exactly the bytes it
    /// would have read (zeros), so recovery still runs on bytes alone; only
    /// host time changes. The default knows nothing (returns `addr`).
    fn zeros_until(&self, addr: Addr, _end: Addr) -> Addr {
        addr
    }
}

/// Write access to a byte image.
pub trait MemWrite: MemRead {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]);

    fn write_u64(&mut self, addr: Addr, value: u64) {
        self.write_bytes(addr, &value.to_le_bytes());
    }
}

type PageBytes = [u8; PAGE_BYTES as usize];
type Line = [u8; LINE];

const LINE: usize = LINE_BYTES as usize;
const LINES_PER_PAGE: u64 = PAGE_BYTES / LINE as u64;

/// One present page of an image: a stored block (`dep` the first of the
/// pages of other images that depend on it, if any: this image is their
/// base), or a dependent page (`block` null, `dep` its lines).
#[derive(Clone, Copy)]
struct Slot {
    block: *mut Block,
    dep: *mut Dep,
    /// Written since the last [`SparseImage::take_written`] (when tracking).
    written: bool,
}

/// A sparse image made of 4 KiB pages allocated on first write.
///
/// Two ways of not storing bytes twice (host memory):
/// - *Clones* share pages: reference-counted blocks, copy-on-write (a write
///   to a shared block first copies it), so no image sees another's writes.
/// - *Dependent pages* ([`Self::link_page`], [`Self::link_equal_lines`]): a
///   page of this image stored as the lines of a page of a *base* image
///   that hold the same bytes plus the lines that differ ([`Dep`]). The
///   base saves a line into its dependents before overwriting it. The NVM
///   media's home pages and the DRAM cache's slots depend on the
///   architectural image this way.
///
/// A page freed by [`Self::zero_range`] is kept zeroed for reuse.
///
/// Two small direct-mapped caches of recent (page number, page pointer)
/// pairs sit in front of the hash map: a workload walking a node or a log
/// written sequentially hits them instead of probing the map. The read cache
/// holds stored blocks (never dependent pages). The write cache holds only
/// blocks this image holds alone, with the mask of their lines still shared
/// by a dependent (`wcache_save`): the write hit path is one compare plus
/// one mask test. Linking clears the base's write-cache entry (the caches
/// are interior-mutable `Cell`s; the image is `Send`, not `Sync`).
pub struct SparseImage {
    pages: FxHashMap<u64, Slot>,
    /// Zeroed blocks released by `zero_range`, held by this image alone.
    free_pages: Vec<*mut Block>,
    /// Page number + 1 (0 = empty) per cache entry, and the page's bytes.
    /// Entries are invalidated whenever a page leaves the map or changes.
    cache_tag: [Cell<u64>; PAGE_CACHE_ENTRIES],
    cache_page: [Cell<*mut PageBytes>; PAGE_CACHE_ENTRIES],
    /// The same for writes: only blocks held by this image alone, with the
    /// lines a dependent still shares (a write to them takes the slow path,
    /// which saves them first).
    wcache_tag: [Cell<u64>; PAGE_CACHE_ENTRIES],
    wcache_page: [Cell<*mut PageBytes>; PAGE_CACHE_ENTRIES],
    wcache_save: [Cell<u64>; PAGE_CACHE_ENTRIES],
    /// Record written pages for [`Self::take_written`].
    track_written: bool,
    written: Vec<u64>,
}

// SAFETY: a block is written only by an image that holds it alone (the
// write cache and the write slow path check that); shared blocks are
// read-only and their counts atomic, so clones holding common blocks may
// live on different threads. Dependent pages are the exception: a base
// image and its dependents point to common `Dep`s without atomics, which
// the `unsafe` linking functions make the caller promise to keep on one
// thread at a time. The caches are `Cell`s, hence not `Sync`.
unsafe impl Send for SparseImage {}

impl Default for SparseImage {
    fn default() -> Self {
        SparseImage {
            pages: FxHashMap::default(),
            free_pages: Vec::new(),
            cache_tag: std::array::from_fn(|_| Cell::new(0)),
            cache_page: std::array::from_fn(|_| Cell::new(std::ptr::null_mut())),
            wcache_tag: std::array::from_fn(|_| Cell::new(0)),
            wcache_page: std::array::from_fn(|_| Cell::new(std::ptr::null_mut())),
            wcache_save: std::array::from_fn(|_| Cell::new(0)),
            track_written: false,
            written: Vec::new(),
        }
    }
}

/// Let go of a slot's page; returns its block if this image held it alone
/// (the caller reuses or frees it). A base page's dependent first copies
/// the lines it shared.
fn release_slot(s: Slot) -> Option<*mut Block> {
    if s.block.is_null() {
        // SAFETY: a live `Dep` held by this slot.
        unsafe { leave_dependent(s.dep) };
    } else {
        // The base leaves: each dependent still linked keeps its lines.
        let mut d = s.dep;
        while !d.is_null() {
            // SAFETY: the live list of this base slot.
            unsafe {
                let next = (*d).next;
                (*d).next = std::ptr::null_mut();
                if (*d).holders == 2 {
                    (*d).detach();
                }
                leave(d);
                d = next;
            }
        }
    }
    if s.block.is_null() {
        None
    } else {
        release(s.block)
    }
}

impl Drop for SparseImage {
    fn drop(&mut self) {
        for (_, s) in self.pages.drain() {
            if let Some(b) = release_slot(s) {
                // SAFETY: the last reference.
                unsafe { free_block(b) };
            }
        }
        for &b in &self.free_pages {
            // SAFETY: free blocks are held by this image alone.
            unsafe { free_block(b) };
        }
    }
}

/// Clones share every block without a dependent copy-on-write (a block is
/// copied when either side writes it); dependent pages and blocks with a
/// dependent are copied (a `Dep` links exactly two images).
impl Clone for SparseImage {
    fn clone(&self) -> Self {
        let mut copy = SparseImage::default();
        copy.pages.reserve(self.pages.len());
        for (&n, s) in &self.pages {
            let block = if s.dep.is_null() {
                // SAFETY: a live block of `self`.
                unsafe { (*s.block).refs.fetch_add(1, Ordering::Relaxed) };
                s.block
            } else {
                let b = alloc_block_uninit();
                // SAFETY: `b` fresh; the source is a live block or `Dep`.
                unsafe {
                    if s.block.is_null() {
                        (*s.dep).read_page(&mut *bytes_of(b));
                    } else {
                        std::ptr::copy_nonoverlapping(bytes_of(s.block), bytes_of(b), 1);
                    }
                }
                b
            };
            copy.pages.insert(
                n,
                Slot {
                    block,
                    dep: std::ptr::null_mut(),
                    written: false,
                },
            );
        }
        // Pages of `self` may be shared now: none may be written in place.
        self.clear_write_cache();
        copy
    }
}

impl SparseImage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of touched pages (memory footprint / 4 KiB).
    pub fn touched_pages(&self) -> usize {
        self.pages.len()
    }

    /// Touched pages whose bytes are shared with another image: blocks
    /// held more than once, and dependent pages sharing at least one line.
    pub fn shared_pages(&self) -> usize {
        self.pages
            .values()
            // SAFETY: live blocks and `Dep`s of `self`.
            .filter(|s| unsafe {
                if s.block.is_null() {
                    (*s.dep).shared != 0
                } else {
                    (*s.block).refs.load(Ordering::Relaxed) > 1
                }
            })
            .count()
    }

    /// Host storage of the page data, for measurements: (stored 4 KiB
    /// blocks, counting a block held by n images as 1/n each; lines stored
    /// by dependent pages).
    pub fn stored(&self) -> (f64, usize) {
        let (mut blocks, mut lines) = (0.0, 0);
        for s in self.pages.values() {
            // SAFETY: live blocks and `Dep`s of `self`.
            unsafe {
                if s.block.is_null() {
                    lines += (*s.dep).own.len();
                } else {
                    blocks += 1.0 / (*s.block).refs.load(Ordering::Relaxed) as f64;
                }
            }
        }
        (blocks, lines)
    }

    /// Page numbers that hold data, sorted (deterministic iteration).
    pub fn page_numbers(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.pages.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Set page `page_no` of `self` to the bytes of page `src_page` of
    /// `src`, sharing its block copy-on-write instead of copying (setup
    /// preloads the NVM media this way for schemes that do not checkpoint:
    /// a shared block stays in the page caches, a dependent page does not).
    /// Returns false, changing nothing, if `src` has no such page or it is
    /// a dependent page or a base (a `Dep` links exactly two slots).
    pub fn share_page(&mut self, page_no: u64, src: &SparseImage, src_page: u64) -> bool {
        let Some(theirs) = src.pages.get(&src_page) else {
            return false;
        };
        if theirs.block.is_null() || !theirs.dep.is_null() {
            return false;
        }
        let block = theirs.block;
        // SAFETY: a live block of `src`.
        unsafe { (*block).refs.fetch_add(1, Ordering::Relaxed) };
        src.forget_write_cache(src_page);
        self.forget_cached(page_no);
        let slot = Slot {
            block,
            dep: std::ptr::null_mut(),
            written: false,
        };
        if let Some(old) = self.pages.insert(page_no, slot) {
            if let Some(b) = release_slot(old) {
                // SAFETY: the last reference.
                unsafe { free_block(b) };
            }
        }
        true
    }

    /// Start (or stop) recording which pages are written.
    pub fn set_track_written(&mut self, on: bool) {
        self.track_written = on;
        self.take_written();
    }

    /// Pages written (or allocated) since the last call, unsorted, each
    /// once; tracking must be on ([`Self::set_track_written`]).
    pub fn take_written(&mut self) -> Vec<u64> {
        let w = std::mem::take(&mut self.written);
        for n in &w {
            if let Some(s) = self.pages.get_mut(n) {
                s.written = false;
            }
        }
        // The next write of every page goes through the tracking path.
        self.clear_write_cache();
        w
    }

    /// Set a byte range back to zero (freeing whole pages when possible).
    pub fn zero_range(&mut self, addr: Addr, len: u64) {
        let end = addr + len;
        let mut a = addr;
        while a < end {
            let page_no = a / PAGE_BYTES;
            let off = (a % PAGE_BYTES) as usize;
            let n = ((PAGE_BYTES as usize - off) as u64).min(end - a) as usize;
            if off == 0 && n == PAGE_BYTES as usize {
                self.forget_cached(page_no);
                if let Some(s) = self.pages.remove(&page_no) {
                    if let Some(b) = release_slot(s) {
                        // SAFETY: now held by nobody else; `&mut self` is
                        // exclusive.
                        unsafe { (*b).bytes.fill(0) };
                        self.free_pages.push(b);
                    }
                }
            } else if self.pages.contains_key(&page_no) {
                self.write_in_page(page_no, off, &ZEROS[..n]);
            }
            a += n as u64;
        }
    }
}
