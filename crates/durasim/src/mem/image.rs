//! Sparse byte-addressed memory images. A 512 GB address space costs only
//! the 4 KiB pages that were touched.

use crate::types::{Addr, LineData, LINE_BYTES};
use rustc_hash::FxHashMap;
use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Entries of [`SparseImage`]'s page cache (direct-mapped by a hash of the
/// page number). 256 entries (4 KiB of tags and pointers) keep the hot pages
/// of 8 thread regions plus scheme areas; measured: 64 -> 256 entries -1.3%
/// instructions (hoop), 1024 no better.
const PAGE_CACHE_ENTRIES: usize = 256;
const _: () = assert!(PAGE_CACHE_ENTRIES == 1 << 8, "the hash keeps 8 bits");

/// Page cache entry of `page_no`: the top 8 bits of its Fibonacci hash.
/// Thread regions are 2 MiB-aligned (a power-of-two page stride), so the
/// page number modulo 256 put every thread's root page, and each equal
/// heap offset, in one entry; the hash spreads them (measured: the
/// btree workload's read misses 83 k -> 68 k per 20k-tx run of `hoop`, for
/// one more instruction per lookup).
#[inline(always)]
fn cache_entry(page_no: u64) -> usize {
    (page_no.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
}

/// Lines of a page touched by `len > 0` bytes at offset `off` (bit i =
/// line i).
#[inline(always)]
fn line_mask(off: usize, len: usize) -> u64 {
    let first = off / LINE;
    let last = (off + len - 1) / LINE;
    // `2 << 63` is 0: the subtraction then sets every bit from `first` up.
    (2u64 << last).wrapping_sub(1u64 << first)
}

/// A page's bytes with the number of images holding it: pages are shared
/// copy-on-write between clones, so identical 4 KiB pages are stored once.
#[repr(C)]
struct Block {
    /// Images (map entries) holding this block; atomic because images that
    /// share blocks may be moved to different threads.
    refs: AtomicUsize,
    bytes: PageBytes,
}

const BLOCK_LAYOUT: Layout = Layout::new::<Block>();

/// A zeroed block held once.
fn alloc_block() -> *mut Block {
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
fn alloc_block_uninit() -> *mut Block {
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
fn bytes_of(b: *mut Block) -> *mut PageBytes {
    // SAFETY: only the address is computed (no read), within the block.
    unsafe { std::ptr::addr_of_mut!((*b).bytes) }
}

/// Drop one holder's reference; frees the block when it was the last.
/// Returns the block if this holder was the only one (not freed: the
/// caller may reuse it).
fn release(b: *mut Block) -> Option<*mut Block> {
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
fn line_of(page: &PageBytes, i: usize) -> &Line {
    page[i * LINE..(i + 1) * LINE].try_into().unwrap()
}

/// A page of a *dependent* image stored as "the base image's page plus the
/// lines that differ" (the NVM media's home pages differ
/// from the architectural image in a few lines per page, so storing whole
/// pages kept the footprint twice). Lines whose bit is set in `shared` read
/// from the base image's block; the others are stored in `own`, in line
/// order. Invariant, kept by the base image: before the base changes a
/// line still shared (or lets go of the block), it copies the old line into
/// `own` and clears the bit, so the dependent never sees the base's writes.
///
/// Held by the dependent's page slot and, while linked, by the base's page
/// slot (`holders`); the side that leaves last frees it. A base page may
/// have several dependents (an NVM home page and a DRAM cache slot), kept
/// in a list through `next`.
struct Dep {
    /// The base page's block (held alone by the base image, never shared
    /// with a clone); null once the base let go (then `shared` is 0).
    base: *mut Block,
    /// Lines read from `base` (bit i = line i).
    shared: u64,
    /// The lines not shared, in line order (`rank` gives the index).
    own: Vec<Line>,
    /// The base page's next dependent (null: the last one); meaningful
    /// while the base holds this `Dep`.
    next: *mut Dep,
    /// Slots pointing here: 2 while linked, 1 once either side left.
    holders: u8,
}

impl Dep {
    /// Index in `own` of line `i` (not shared).
    #[inline]
    fn rank(&self, i: usize) -> usize {
        (!self.shared & ((1u64 << i) - 1)).count_ones() as usize
    }

    fn line(&self, i: usize) -> &Line {
        if self.shared & (1 << i) != 0 {
            // SAFETY: a linked base block is live and, while this
            // dependent reads it, not written (the base saves first).
            line_of(unsafe { &*bytes_of(self.base) }, i)
        } else {
            &self.own[self.rank(i)]
        }
    }

    /// Store `value` as line `i`, which stops being shared if it was.
    fn set_line(&mut self, i: usize, value: &Line) {
        let r = self.rank(i);
        if self.shared & (1 << i) != 0 {
            self.shared &= !(1 << i);
            if self.own.len() == self.own.capacity() {
                // Grow by a quarter, not double: these vectors are what
                // the sharing saves memory with.
                self.own.reserve_exact((self.own.len() / 4).max(2));
            }
            self.own.insert(r, *value);
        } else {
            self.own[r] = *value;
        }
    }

    /// The base leaves: keep a copy of every shared line.
    fn detach(&mut self) {
        if self.base.is_null() {
            return;
        }
        let mut own = Vec::with_capacity(LINES_PER_PAGE as usize);
        for i in 0..LINES_PER_PAGE as usize {
            own.push(*self.line(i));
        }
        self.own = own;
        self.shared = 0;
        self.base = std::ptr::null_mut();
    }

    /// Fill `out` with the page's bytes.
    fn read_page(&self, out: &mut PageBytes) {
        for i in 0..LINES_PER_PAGE as usize {
            out[i * LINE..(i + 1) * LINE].copy_from_slice(self.line(i));
        }
    }
}

/// Drop one holder of a dependent page (`d` from a `Box::into_raw`).
///
/// # Safety
/// `d` is live and held by the caller's slot, which forgets it.
unsafe fn leave(d: *mut Dep) {
    if (*d).holders == 1 {
        drop(Box::from_raw(d));
    } else {
        (*d).holders -= 1;
    }
}

/// Drop the dependents that left from a base slot's list (`head` is the
/// slot's `dep`); returns the lines the others still share (their union).
///
/// # Safety
/// `head` is a base slot's list of live `Dep`s.
unsafe fn prune(head: &mut *mut Dep) -> u64 {
    let mut link: *mut *mut Dep = head;
    let mut shared = 0;
    while !(*link).is_null() {
        let d = *link;
        if (*d).holders == 1 {
            *link = (*d).next;
            drop(Box::from_raw(d));
        } else {
            shared |= (*d).shared;
            link = std::ptr::addr_of_mut!((*d).next);
        }
    }
    shared
}

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

/// A dependent page's slot lets go of its `Dep`: its lines are garbage now
/// (the base frees the rest when it next touches the page).
///
/// # Safety
/// `d` is a live `Dep` held by the caller's dependent slot, which forgets it.
unsafe fn leave_dependent(d: *mut Dep) {
    (*d).own = Vec::new();
    (*d).shared = 0;
    leave(d);
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
                // SAFETY: the last reference, allocated with this layout.
                unsafe { dealloc(b as *mut u8, BLOCK_LAYOUT) };
            }
        }
        for &b in &self.free_pages {
            // SAFETY: free blocks are held by this image alone.
            unsafe { dealloc(b as *mut u8, BLOCK_LAYOUT) };
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

const ZEROS: PageBytes = [0u8; PAGE_BYTES as usize];

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

    /// Lines of page `page_no` read from `base`'s page `base_page` (this
    /// page depends on it), or None if it does not depend on it.
    pub fn lines_shared_with(
        &self,
        page_no: u64,
        base: &SparseImage,
        base_page: u64,
    ) -> Option<u32> {
        let mine = self.pages.get(&page_no)?;
        let theirs = base.pages.get(&base_page)?;
        if !mine.block.is_null() || theirs.block.is_null() {
            return None;
        }
        let mut d = theirs.dep;
        while !d.is_null() {
            if d == mine.dep {
                // SAFETY: a live `Dep` of `self`.
                return Some(unsafe { (*d).shared.count_ones() });
            }
            // SAFETY: the live list of `base`'s slot.
            d = unsafe { (*d).next };
        }
        None
    }

    /// Store page `page_no` as one block if it is a dependent page (same
    /// bytes; no simulated effect): the DRAM cache calls this before a fill
    /// overwrites a slot, which then takes the block write path instead of
    /// storing 64 lines one by one into the dependent page.
    pub fn unlink_page(&mut self, page_no: u64) {
        let Some(s) = self.pages.get_mut(&page_no) else {
            return;
        };
        if !s.block.is_null() {
            return;
        }
        let b = self.free_pages.pop().unwrap_or_else(alloc_block_uninit);
        // SAFETY: `b` is this image's alone; `s.dep` a live `Dep` of this
        // slot, which forgets it.
        unsafe {
            (*s.dep).read_page(&mut *bytes_of(b));
            leave_dependent(s.dep);
        }
        s.block = b;
        s.dep = std::ptr::null_mut();
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
                // SAFETY: the last reference, allocated with this layout.
                unsafe { dealloc(b as *mut u8, BLOCK_LAYOUT) };
            }
        }
        true
    }

    /// Set page `page_no` of `self` to the bytes of page `page_no` of
    /// `base`, stored as a dependent page sharing all of its lines (setup
    /// preloads the NVM media this way). Returns false, changing nothing,
    /// if `base` has no such page or it is itself a dependent page.
    ///
    /// # Safety
    /// `self` and `base` are used from one thread at a time for as long as
    /// either holds the link (they point to common, non-atomic data).
    pub unsafe fn link_page(&mut self, page_no: u64, base: &mut SparseImage) -> bool {
        if !base.make_linkable(page_no) {
            return false;
        }
        let b = base.pages.get_mut(&page_no).expect("linkable");
        let d = Box::into_raw(Box::new(Dep {
            base: b.block,
            shared: u64::MAX,
            own: Vec::new(),
            next: b.dep,
            holders: 2,
        }));
        b.dep = d;
        self.forget_cached(page_no);
        let slot = Slot {
            block: std::ptr::null_mut(),
            dep: d,
            written: false,
        };
        if let Some(old) = self.pages.insert(page_no, slot) {
            if let Some(blk) = release_slot(old) {
                self.free_pages.push(blk);
                // SAFETY: held by this image alone now.
                unsafe { (*blk).bytes.fill(0) };
            }
        }
        true
    }

    /// Store page `page_no` of `self` as a dependent of page `base_page`
    /// of `base`, sharing every line that holds the same bytes on both
    /// sides (a line compare for each line not shared yet); the content of
    /// both images is unchanged. A page depending on another base page
    /// first becomes a stored block. Returns the number of lines shared now
    /// (0 if not linked: a missing page on either side, `self`'s page a
    /// base of another image, `base`'s a dependent page, or fewer than two
    /// equal lines on a page stored whole).
    ///
    /// # Safety
    /// As [`Self::link_page`].
    pub unsafe fn link_equal_lines(
        &mut self,
        page_no: u64,
        base: &mut SparseImage,
        base_page: u64,
    ) -> u32 {
        let Some(&mine) = self.pages.get(&page_no) else {
            return 0;
        };
        if !mine.block.is_null() && !mine.dep.is_null() {
            // `self`'s page is a base itself.
            return 0;
        }
        if !base.make_linkable(base_page) {
            return 0;
        }
        let b = base.pages.get_mut(&base_page).expect("linkable");
        // SAFETY: `b.block` is a live block held by `base` alone.
        let bp = unsafe { &*bytes_of(b.block) };
        if mine.block.is_null() {
            let d = mine.dep;
            // SAFETY: a live `Dep` of `self`.
            let dep = unsafe { &mut *d };
            if dep.base.is_null() {
                // Detached (the base let go): link to the current base.
                dep.base = b.block;
                dep.holders = 2;
                dep.next = b.dep;
                b.dep = d;
            } else if dep.base != b.block {
                // Linked to another page: store it whole, then link below.
                self.unlink_page(page_no);
                // SAFETY: the caller's promise.
                return unsafe { self.link_equal_lines(page_no, base, base_page) };
            }
            // Lines stored here that equal the base's again are shared.
            let mut own = Vec::new();
            let mut k = 0;
            for i in 0..LINES_PER_PAGE as usize {
                if dep.shared & (1 << i) != 0 {
                    continue;
                }
                if dep.own[k] == *line_of(bp, i) {
                    dep.shared |= 1 << i;
                } else {
                    own.push(dep.own[k]);
                }
                k += 1;
            }
            if own.len() != dep.own.len() {
                dep.own = own;
            }
            base.forget_write_cache(base_page);
            return dep.shared.count_ones();
        }
        // A stored block: keep only the lines that differ.
        // SAFETY: a live block of `self` (only read).
        let mp = unsafe { &*bytes_of(mine.block) };
        let mut shared = 0u64;
        for i in 0..LINES_PER_PAGE as usize {
            if line_of(mp, i) == line_of(bp, i) {
                shared |= 1 << i;
            }
        }
        if shared.count_ones() < 2 {
            // A `Dep` costs about a line: not worth it.
            return 0;
        }
        let mut own = Vec::with_capacity((!shared).count_ones() as usize);
        for i in 0..LINES_PER_PAGE as usize {
            if shared & (1 << i) == 0 {
                own.push(*line_of(mp, i));
            }
        }
        let d = Box::into_raw(Box::new(Dep {
            base: b.block,
            shared,
            own,
            next: b.dep,
            holders: 2,
        }));
        b.dep = d;
        base.forget_write_cache(base_page);
        self.forget_cached(page_no);
        let s = self.pages.get_mut(&page_no).expect("present");
        s.block = std::ptr::null_mut();
        s.dep = d;
        if let Some(blk) = release(mine.block) {
            // SAFETY: the last reference, allocated with this layout.
            unsafe { dealloc(blk as *mut u8, BLOCK_LAYOUT) };
        }
        shared.count_ones()
    }

    /// Whether page `page_no` can become the base of a new dependent: a
    /// stored block (its dependents that left are dropped), held by this
    /// image alone (copied first if shared with a clone).
    fn make_linkable(&mut self, page_no: u64) -> bool {
        let Some(s) = self.pages.get_mut(&page_no) else {
            return false;
        };
        if s.block.is_null() {
            return false;
        }
        // SAFETY: the list of live `Dep`s of this base slot.
        unsafe { prune(&mut s.dep) };
        // SAFETY: a live block of this image (never shared while it has a
        // dependent).
        if unsafe { (*s.block).refs.load(Ordering::Acquire) } > 1 {
            let copy = self.free_pages.pop().unwrap_or_else(alloc_block_uninit);
            let b = s.block;
            // SAFETY: distinct live blocks; `b` only read.
            unsafe { std::ptr::copy_nonoverlapping(bytes_of(b), bytes_of(copy), 1) };
            s.block = copy;
            if let Some(last) = release(b) {
                // SAFETY: the last reference.
                unsafe { dealloc(last as *mut u8, BLOCK_LAYOUT) };
            }
        }
        self.forget_cached(page_no);
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

    fn clear_write_cache(&self) {
        for t in &self.wcache_tag {
            t.set(0);
        }
    }

    /// Drop `page_no` from the write cache (it may be shared now).
    fn forget_write_cache(&self, page_no: u64) {
        let e = cache_entry(page_no);
        if self.wcache_tag[e].get() == page_no + 1 {
            self.wcache_tag[e].set(0);
        }
    }

    /// Drop `page_no` from both caches (its block changes or leaves).
    fn forget_cached(&self, page_no: u64) {
        let e = cache_entry(page_no);
        if self.cache_tag[e].get() == page_no + 1 {
            self.cache_tag[e].set(0);
        }
        self.forget_write_cache(page_no);
    }

    /// A page's bytes if stored as one block (None if absent or stored as
    /// a dependent page: read those with `read_bytes`), through the page
    /// cache. The hit path is inlined into every caller; the map lookup
    /// stays out of line.
    #[inline(always)]
    pub fn page(&self, page_no: u64) -> Option<&[u8; PAGE_BYTES as usize]> {
        let e = cache_entry(page_no);
        if self.cache_tag[e].get() == page_no + 1 {
            // SAFETY: a tagged entry points to the bytes of `page_no`'s
            // block, still held by this image (a block change or removal
            // clears the tag); `&self` excludes writers through this image,
            // and other holders never write a shared block.
            return Some(unsafe { &*self.cache_page[e].get() });
        }
        self.page_uncached(page_no)
    }

    #[cold]
    #[inline(never)]
    fn page_uncached(&self, page_no: u64) -> Option<&[u8; PAGE_BYTES as usize]> {
        let s = self.pages.get(&page_no)?;
        if s.block.is_null() {
            return None;
        }
        let e = cache_entry(page_no);
        let ptr = bytes_of(s.block);
        self.cache_tag[e].set(page_no + 1);
        self.cache_page[e].set(ptr);
        // SAFETY: `&self` excludes writers for the returned lifetime.
        Some(unsafe { &*ptr })
    }

    /// Read `buf.len()` bytes at `off` of page `page_no` (within the page)
    /// when the page cache missed: stored blocks enter the cache, dependent
    /// pages are read line by line.
    #[cold]
    #[inline(never)]
    fn read_uncached(&self, page_no: u64, off: usize, buf: &mut [u8]) {
        let Some(s) = self.pages.get(&page_no) else {
            buf.fill(0);
            return;
        };
        if s.block.is_null() {
            // SAFETY: a live `Dep` of `self`.
            let d = unsafe { &*s.dep };
            let mut k = 0;
            while k < buf.len() {
                let o = off + k;
                let n = (LINE - o % LINE).min(buf.len() - k);
                buf[k..k + n].copy_from_slice(&d.line(o / LINE)[o % LINE..o % LINE + n]);
                k += n;
            }
            return;
        }
        // A stored block enters the read cache (one map lookup).
        let e = cache_entry(page_no);
        let ptr = bytes_of(s.block);
        self.cache_tag[e].set(page_no + 1);
        self.cache_page[e].set(ptr);
        // SAFETY: `&self` excludes writers while the bytes are copied.
        buf.copy_from_slice(unsafe { &(&*ptr)[off..off + buf.len()] });
    }

    /// Write `data` at `off` of page `page_no` (within the page). Hit path
    /// inlined: one compare plus one mask test.
    #[inline(always)]
    fn write_in_page(&mut self, page_no: u64, off: usize, data: &[u8]) {
        let e = cache_entry(page_no);
        if self.wcache_tag[e].get() == page_no + 1
            && self.wcache_save[e].get() & line_mask(off, data.len()) == 0
        {
            // SAFETY: the write cache holds only blocks this image holds
            // alone (sharing clears the entry), and the lines written are
            // not shared by a dependent; `&mut self` makes this the only
            // borrow.
            let page = unsafe { &mut *self.wcache_page[e].get() };
            page[off..off + data.len()].copy_from_slice(data);
            return;
        }
        self.write_uncached(page_no, off, data);
    }

    /// The write slow path: allocate a missing page, copy a shared block,
    /// save lines a dependent still shares, or write into a dependent page.
    #[cold]
    #[inline(never)]
    fn write_uncached(&mut self, page_no: u64, off: usize, data: &[u8]) {
        let e = cache_entry(page_no);
        let slot = match self.pages.get(&page_no) {
            Some(&s) => s,
            None => {
                let s = Slot {
                    block: self.free_pages.pop().unwrap_or_else(alloc_block),
                    dep: std::ptr::null_mut(),
                    written: false,
                };
                self.pages.insert(page_no, s);
                s
            }
        };
        if self.track_written && !slot.written {
            self.pages.get_mut(&page_no).expect("present").written = true;
            self.written.push(page_no);
        }
        if slot.block.is_null() {
            // A dependent page: the written lines become its own.
            // SAFETY: a live `Dep` of `self`; `&mut self` is exclusive.
            let d = unsafe { &mut *slot.dep };
            let mut k = 0;
            while k < data.len() {
                let o = off + k;
                let n = (LINE - o % LINE).min(data.len() - k);
                let mut l = *d.line(o / LINE);
                l[o % LINE..o % LINE + n].copy_from_slice(&data[k..k + n]);
                d.set_line(o / LINE, &l);
                k += n;
            }
            return;
        }
        let mut block = slot.block;
        // SAFETY: a live block of this image.
        if unsafe { (*block).refs.load(Ordering::Acquire) } > 1 {
            // Shared with a clone (never with a dependent): copy it first,
            // into a block not zeroed first (no 4 KiB memset per copy).
            let copy = self.free_pages.pop().unwrap_or_else(alloc_block_uninit);
            // SAFETY: distinct live blocks; `block` only read.
            unsafe { std::ptr::copy_nonoverlapping(bytes_of(block), bytes_of(copy), 1) };
            if let Some(last) = release(block) {
                // Another holder released it meanwhile (other thread).
                // SAFETY: the last reference.
                unsafe { dealloc(last as *mut u8, BLOCK_LAYOUT) };
            }
            self.pages.get_mut(&page_no).expect("present").block = copy;
            block = copy;
        }
        let ptr = bytes_of(block);
        let mut save = 0;
        if !slot.dep.is_null() {
            // Save the old lines each dependent still reads.
            let written = line_mask(off, data.len());
            let mut d = slot.dep;
            while !d.is_null() {
                // SAFETY: the live list of this base slot; the block is
                // this image's alone and not yet written (only read here).
                unsafe {
                    let mut m = (*d).shared & written;
                    while m != 0 {
                        let i = m.trailing_zeros() as usize;
                        (*d).set_line(i, line_of(&*ptr, i));
                        m &= m - 1;
                    }
                    d = (*d).next;
                }
            }
            let s = self.pages.get_mut(&page_no).expect("present");
            // SAFETY: as above; dependents that left are dropped.
            save = unsafe { prune(&mut s.dep) };
        }
        self.cache_tag[e].set(page_no + 1);
        self.cache_page[e].set(ptr);
        self.wcache_tag[e].set(page_no + 1);
        self.wcache_page[e].set(ptr);
        self.wcache_save[e].set(save);
        // SAFETY: held by this image alone; `&mut self` is exclusive.
        let page = unsafe { &mut *ptr };
        page[off..off + data.len()].copy_from_slice(data);
    }

    /// Read the 8-byte aligned word at `addr` (the workloads' loads): an
    /// aligned word never crosses a page, so the hit path is the cache tag
    /// compare and the read.
    #[inline(always)]
    pub fn read_word(&self, addr: Addr) -> u64 {
        debug_assert_eq!(addr % 8, 0, "an aligned word");
        let page_no = addr / PAGE_BYTES;
        // Masked to the word: the read below stays inside the page.
        let off = (addr % PAGE_BYTES) as usize & !7;
        let e = cache_entry(page_no);
        if self.cache_tag[e].get() == page_no + 1 {
            // SAFETY: as in `page`.
            let p = unsafe { &*self.cache_page[e].get() };
            return u64::from_le_bytes(p[off..off + 8].try_into().unwrap());
        }
        let mut b = [0u8; 8];
        self.read_uncached(page_no, off, &mut b);
        u64::from_le_bytes(b)
    }

    /// Write the 8-byte aligned word at `addr` (the workloads' stores):
    /// one line of one page.
    #[inline(always)]
    pub fn write_word(&mut self, addr: Addr, value: u64) {
        debug_assert_eq!(addr % 8, 0, "an aligned word");
        let page_no = addr / PAGE_BYTES;
        let off = (addr % PAGE_BYTES) as usize & !7;
        let e = cache_entry(page_no);
        if self.wcache_tag[e].get() == page_no + 1
            && self.wcache_save[e].get() & (1u64 << (off / LINE)) == 0
        {
            // SAFETY: as in `write_in_page`.
            let page = unsafe { &mut *self.wcache_page[e].get() };
            page[off..off + 8].copy_from_slice(&value.to_le_bytes());
            return;
        }
        self.write_uncached(page_no, off, &value.to_le_bytes());
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

impl MemRead for SparseImage {
    /// Untouched pages read as zero: skip them (one map probe per page).
    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let mut a = addr;
        while a < end {
            if self.page(a / PAGE_BYTES).is_some() || self.pages.contains_key(&(a / PAGE_BYTES)) {
                return a;
            }
            a = (a / PAGE_BYTES + 1) * PAGE_BYTES;
        }
        end
    }

    /// Fast path for a word inside one page (workloads' loads).
    #[inline]
    fn read_u64(&self, addr: Addr) -> u64 {
        let off = (addr % PAGE_BYTES) as usize;
        let page_no = addr / PAGE_BYTES;
        let e = cache_entry(page_no);
        let mut b = [0u8; 8];
        if off + 8 <= PAGE_BYTES as usize {
            if self.cache_tag[e].get() == page_no + 1 {
                // SAFETY: as in `page`.
                let p = unsafe { &*self.cache_page[e].get() };
                return u64::from_le_bytes(p[off..off + 8].try_into().unwrap());
            }
            self.read_uncached(page_no, off, &mut b);
        } else {
            self.read_bytes(addr, &mut b);
        }
        u64::from_le_bytes(b)
    }

    #[inline]
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr + done as u64;
            let off = (a % PAGE_BYTES) as usize;
            let n = (PAGE_BYTES as usize - off).min(buf.len() - done);
            let page_no = a / PAGE_BYTES;
            let e = cache_entry(page_no);
            if self.cache_tag[e].get() == page_no + 1 {
                // SAFETY: as in `page`.
                let p = unsafe { &*self.cache_page[e].get() };
                buf[done..done + n].copy_from_slice(&p[off..off + n]);
            } else {
                self.read_uncached(page_no, off, &mut buf[done..done + n]);
            }
            done += n;
        }
    }
}

impl MemWrite for SparseImage {
    /// Fast path for a word inside one page (workloads' stores).
    #[inline(always)]
    fn write_u64(&mut self, addr: Addr, value: u64) {
        let off = (addr % PAGE_BYTES) as usize;
        if off + 8 <= PAGE_BYTES as usize {
            self.write_in_page(addr / PAGE_BYTES, off, &value.to_le_bytes());
        } else {
            self.write_bytes(addr, &value.to_le_bytes());
        }
    }

    #[inline]
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let off = (a % PAGE_BYTES) as usize;
            let n = (PAGE_BYTES as usize - off).min(data.len() - done);
            self.write_in_page(a / PAGE_BYTES, off, &data[done..done + n]);
            done += n;
        }
    }
}

/// A copy-on-write view over a base image: reads fall through to the base,
/// writes land in an overlay. Crash recovery runs on one of these so that
/// checking thousands of crash points never copies the media image.
///
/// Copy-on-write is per 64 B line, not per page: a recovery that replays
/// scattered lines would otherwise copy 4 KiB per line it writes (measured:
/// a quarter of opt-redo's verification time went to those copies). A
/// per-page mask of written lines keeps reads of untouched pages at one
/// lookup.
pub struct Overlay<'a, B: MemRead + ?Sized> {
    base: &'a B,
    /// Page number -> mask of written lines (bit i = line i of the page).
    pages: FxHashMap<u64, u64>,
    /// Line number -> the line's bytes (base + writes).
    lines: FxHashMap<u64, [u8; LINE]>,
}

const LINE: usize = LINE_BYTES as usize;
const LINES_PER_PAGE: u64 = PAGE_BYTES / LINE as u64;

impl<'a, B: MemRead + ?Sized> Overlay<'a, B> {
    pub fn new(base: &'a B) -> Self {
        Overlay {
            base,
            pages: FxHashMap::default(),
            lines: FxHashMap::default(),
        }
    }

    /// Pages written through the overlay.
    pub fn dirty_pages(&self) -> usize {
        self.pages.len()
    }
}

impl<B: MemRead + ?Sized> MemRead for Overlay<'_, B> {
    /// A word inside one line (oracle checks and workload checkers read
    /// recovered images word by word): one probe, no copy loop.
    #[inline]
    fn read_u64(&self, addr: Addr) -> u64 {
        let off = (addr % LINE as u64) as usize;
        if off + 8 > LINE {
            let mut b = [0u8; 8];
            self.read_bytes(addr, &mut b);
            return u64::from_le_bytes(b);
        }
        // A line is in `lines` exactly when its page's mask has its bit
        // (both set by `write_bytes` alone): one probe.
        match self.lines.get(&(addr / LINE as u64)) {
            Some(line) => u64::from_le_bytes(line[off..off + 8].try_into().unwrap()),
            None => self.base.read_u64(addr),
        }
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let mut a = addr;
        while a < end {
            let page_no = a / PAGE_BYTES;
            if self.pages.contains_key(&page_no) {
                return a;
            }
            let page_end = ((page_no + 1) * PAGE_BYTES).min(end);
            let z = self.base.zeros_until(a, page_end);
            if z < page_end {
                return z;
            }
            a = page_end;
        }
        end
    }

    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr + done as u64;
            let page_no = a / PAGE_BYTES;
            let off = (a % PAGE_BYTES) as usize;
            let n = (PAGE_BYTES as usize - off).min(buf.len() - done);
            match self.pages.get(&page_no) {
                None => self.base.read_bytes(a, &mut buf[done..done + n]),
                Some(&mask) => {
                    // Line by line within the page.
                    let mut d = 0usize;
                    while d < n {
                        let la = a + d as u64;
                        let loff = (la % LINE as u64) as usize;
                        let ln = (LINE - loff).min(n - d);
                        let line_no = la / LINE as u64;
                        let out = &mut buf[done + d..done + d + ln];
                        if mask & (1 << (line_no % LINES_PER_PAGE)) != 0 {
                            out.copy_from_slice(&self.lines[&line_no][loff..loff + ln]);
                        } else {
                            self.base.read_bytes(la, out);
                        }
                        d += ln;
                    }
                }
            }
            done += n;
        }
    }
}

impl<B: MemRead + ?Sized> MemWrite for Overlay<'_, B> {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let line_no = a / LINE as u64;
            let off = (a % LINE as u64) as usize;
            let n = (LINE - off).min(data.len() - done);
            let mask = self.pages.entry(a / PAGE_BYTES).or_insert(0);
            let bit = 1u64 << (line_no % LINES_PER_PAGE);
            let base = self.base;
            let line = if *mask & bit == 0 {
                *mask |= bit;
                let mut l = [0u8; LINE];
                if n < LINE {
                    base.read_bytes(line_no * LINE as u64, &mut l);
                }
                self.lines.entry(line_no).or_insert(l)
            } else {
                self.lines
                    .get_mut(&line_no)
                    .expect("masked line is present")
            };
            line[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_page_roundtrip_and_overlay_isolation() {
        let mut img = SparseImage::new();
        let data: Vec<u8> = (0..200u8).collect();
        img.write_bytes(PAGE_BYTES - 100, &data);
        let mut back = vec![0u8; 200];
        img.read_bytes(PAGE_BYTES - 100, &mut back);
        assert_eq!(back, data);
        assert_eq!(img.touched_pages(), 2);

        let mut ov = Overlay::new(&img);
        ov.write_u64(PAGE_BYTES - 100, 0xdead_beef);
        assert_eq!(ov.read_u64(PAGE_BYTES - 100), 0xdead_beef);
        assert_eq!(
            img.read_u64(PAGE_BYTES - 100),
            u64::from_le_bytes(data[..8].try_into().unwrap())
        );
        assert_eq!(ov.read_u64(PAGE_BYTES - 92), img.read_u64(PAGE_BYTES - 92));
    }

    #[test]
    fn overlay_words_read_what_the_bytes_say() {
        let mut img = SparseImage::new();
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * PAGE_BYTES as usize).collect();
        img.write_bytes(0, &data);
        let mut ov = Overlay::new(&img);
        // Written lines, partly written lines, untouched lines and pages,
        // and words straddling a line or a page.
        ov.write_bytes(PAGE_BYTES + 60, &[0xaa; 72]);
        ov.write_u64(2 * PAGE_BYTES + 8, 7);
        for a in (0..4 * PAGE_BYTES - 8).step_by(4) {
            let mut b = [0u8; 8];
            ov.read_bytes(a, &mut b);
            assert_eq!(ov.read_u64(a), u64::from_le_bytes(b), "{a:#x}");
        }
        assert_eq!(ov.read_u64(2 * PAGE_BYTES + 8), 7);
    }

    #[test]
    fn page_cache_never_serves_freed_pages_and_clones_are_independent() {
        let mut img = SparseImage::new();
        // Pages 3 and 3 + PAGE_CACHE_ENTRIES share a cache entry.
        let far = (PAGE_CACHE_ENTRIES as u64 + 3) * PAGE_BYTES;
        img.write_u64(3 * PAGE_BYTES, 7);
        assert_eq!(img.read_u64(3 * PAGE_BYTES), 7);
        img.write_u64(far, 9);
        assert_eq!((img.read_u64(3 * PAGE_BYTES), img.read_u64(far)), (7, 9));
        img.zero_range(far, PAGE_BYTES);
        assert!(img.page(PAGE_CACHE_ENTRIES as u64 + 3).is_none());
        assert_eq!(img.read_u64(far), 0);
        img.write_u64(far + 8, 1);
        assert_eq!((img.read_u64(far), img.read_u64(far + 8)), (0, 1));
        assert_eq!(img.page_numbers(), vec![3, PAGE_CACHE_ENTRIES as u64 + 3]);
        let mut c = img.clone();
        c.write_u64(3 * PAGE_BYTES, 10);
        img.write_u64(far + 8, 2);
        assert_eq!(
            (img.read_u64(3 * PAGE_BYTES), c.read_u64(3 * PAGE_BYTES)),
            (7, 10)
        );
        assert_eq!((img.read_u64(far + 8), c.read_u64(far + 8)), (2, 1));
    }

    #[test]
    fn dependent_pages_keep_their_bytes_on_either_side() {
        let mut a = SparseImage::new();
        a.write_u64(5 * PAGE_BYTES + 8, 11);
        a.write_u64(6 * PAGE_BYTES, 12);
        let mut b = SparseImage::new();
        // b's own page 5 and a's write cache entries exist before linking.
        b.write_u64(5 * PAGE_BYTES + 16, 99);
        // SAFETY: one thread.
        unsafe {
            assert!(b.link_page(5, &mut a) && b.link_page(6, &mut a));
            assert!(!b.link_page(7, &mut a));
        }
        assert_eq!(b.lines_shared_with(5, &a, 5), Some(64));
        assert_eq!(b.shared_pages(), 2);
        assert_eq!(b.stored(), (0.0, 0));
        // The linked page replaced b's own bytes.
        let rd = |i: &SparseImage, x| i.read_u64(x);
        assert_eq!(
            (rd(&b, 5 * PAGE_BYTES + 8), rd(&b, 5 * PAGE_BYTES + 16)),
            (11, 0)
        );
        // A write to the base (its write cache held page 5) saves the old
        // line into b first: one line stored, 63 still shared.
        a.write_u64(5 * PAGE_BYTES + 8, 21);
        assert_eq!(
            (rd(&a, 5 * PAGE_BYTES + 8), rd(&b, 5 * PAGE_BYTES + 8)),
            (21, 11)
        );
        assert_eq!(b.lines_shared_with(5, &a, 5), Some(63));
        // A second write to the same line takes the fast path (line no
        // longer shared) and b still reads the saved line.
        a.write_u64(5 * PAGE_BYTES + 16, 22);
        assert_eq!(rd(&b, 5 * PAGE_BYTES + 16), 0);
        // A write to b stores the line in b only.
        b.write_u64(6 * PAGE_BYTES + 64, 23);
        assert_eq!(
            (rd(&a, 6 * PAGE_BYTES + 64), rd(&b, 6 * PAGE_BYTES + 64)),
            (0, 23)
        );
        assert_eq!(b.stored(), (0.0, 2));
        // Equal lines are shared again, differing ones are kept.
        a.write_u64(6 * PAGE_BYTES + 64, 23);
        // SAFETY: one thread.
        assert_eq!(unsafe { b.link_equal_lines(6, &mut a, 6) }, 64);
        assert_eq!(unsafe { b.link_equal_lines(5, &mut a, 5) }, 63);
        // A page stored whole becomes a dependent keeping its differing
        // lines only.
        let mut c = SparseImage::new();
        c.write_u64(5 * PAGE_BYTES + 8, 11);
        c.write_u64(9 * PAGE_BYTES, 1);
        let mut d = SparseImage::new();
        d.write_u64(5 * PAGE_BYTES + 8, 12);
        d.write_u64(9 * PAGE_BYTES, 1);
        // SAFETY: one thread.
        unsafe {
            assert_eq!(d.link_equal_lines(5, &mut c, 5), 63);
            assert_eq!(d.link_equal_lines(9, &mut c, 9), 64);
        }
        assert_eq!(d.stored(), (0.0, 1));
        assert_eq!(rd(&d, 5 * PAGE_BYTES + 8), 12);
        // Zeroing the base's page (whole) detaches: b keeps its bytes.
        a.zero_range(6 * PAGE_BYTES, PAGE_BYTES);
        assert_eq!((rd(&a, 6 * PAGE_BYTES), rd(&b, 6 * PAGE_BYTES)), (0, 12));
        assert_eq!(b.lines_shared_with(6, &a, 6), None);
        // Clones copy dependent pages and bases: independent of the link.
        let bc = b.clone();
        let ac = a.clone();
        a.write_u64(5 * PAGE_BYTES + 24, 5);
        assert_eq!(
            (rd(&bc, 5 * PAGE_BYTES + 24), rd(&ac, 5 * PAGE_BYTES + 24)),
            (0, 0)
        );
        assert_eq!(rd(&b, 5 * PAGE_BYTES + 24), 0);
        // Dropping the base leaves the dependent intact, and vice versa.
        drop(a);
        assert_eq!(
            (rd(&b, 5 * PAGE_BYTES + 8), rd(&b, 6 * PAGE_BYTES)),
            (11, 12)
        );
        drop(d);
        c.write_u64(5 * PAGE_BYTES + 8, 3);
        assert_eq!(rd(&c, 5 * PAGE_BYTES + 8), 3);
    }

    #[test]
    fn a_base_page_keeps_several_dependents() {
        let rd = |i: &SparseImage, x| i.read_u64(x);
        let mut a = SparseImage::new();
        a.write_u64(5 * PAGE_BYTES + 8, 11);
        a.write_u64(5 * PAGE_BYTES + 64, 12);
        // b: page 5 linked whole; c: its page 40 holds a's page 5 but line
        // 0 (a DRAM cache slot depending on another page number).
        let (mut b, mut c) = (SparseImage::new(), SparseImage::new());
        c.write_u64(40 * PAGE_BYTES + 64, 12);
        c.write_u64(40 * PAGE_BYTES + 8, 7);
        // SAFETY: one thread.
        unsafe {
            assert!(b.link_page(5, &mut a));
            assert_eq!(c.link_equal_lines(40, &mut a, 5), 63);
        }
        assert_eq!(b.lines_shared_with(5, &a, 5), Some(64));
        assert_eq!(c.lines_shared_with(40, &a, 5), Some(63));
        assert_eq!(c.lines_shared_with(40, &a, 40), None);
        // A write to the base saves the old line into both dependents.
        a.write_u64(5 * PAGE_BYTES + 72, 13);
        assert_eq!(
            (rd(&b, 5 * PAGE_BYTES + 72), rd(&c, 40 * PAGE_BYTES + 72)),
            (0, 0)
        );
        assert_eq!(
            (rd(&b, 5 * PAGE_BYTES + 64), rd(&c, 40 * PAGE_BYTES + 64)),
            (12, 12)
        );
        assert_eq!(c.lines_shared_with(40, &a, 5), Some(62));
        // c's page becomes a block again, then depends on another page.
        c.unlink_page(40);
        assert_eq!(c.lines_shared_with(40, &a, 5), None);
        assert_eq!(rd(&c, 40 * PAGE_BYTES + 8), 7);
        a.write_u64(9 * PAGE_BYTES + 8, 7);
        // SAFETY: one thread.
        assert_eq!(unsafe { c.link_equal_lines(40, &mut a, 9) }, 63);
        // Linked elsewhere: re-linking to page 5 stores the page whole
        // first (it still reads the same bytes).
        // SAFETY: one thread.
        assert_eq!(unsafe { c.link_equal_lines(40, &mut a, 5) }, 62);
        assert_eq!(c.lines_shared_with(40, &a, 9), None);
        assert_eq!(rd(&c, 40 * PAGE_BYTES + 8), 7);
        // One dependent leaves (the base drops it at its next write); the
        // other still gets the saved lines.
        drop(c);
        a.write_u64(5 * PAGE_BYTES + 128, 14);
        assert_eq!(rd(&b, 5 * PAGE_BYTES + 128), 0);
        assert_eq!(b.lines_shared_with(5, &a, 5), Some(62));
        // The base leaves: the dependent keeps its bytes.
        drop(a);
        assert_eq!(
            (rd(&b, 5 * PAGE_BYTES + 8), rd(&b, 5 * PAGE_BYTES + 128)),
            (11, 0)
        );
    }

    #[test]
    fn written_pages_are_tracked_once_per_period() {
        let mut a = SparseImage::new();
        a.set_track_written(true);
        a.write_u64(0, 1);
        a.write_u64(8, 2);
        a.write_u64(3 * PAGE_BYTES, 3);
        let mut w = a.take_written();
        w.sort_unstable();
        assert_eq!(w, vec![0, 3]);
        // The write cache is cleared: the next write is seen again.
        a.write_u64(16, 4);
        assert_eq!(a.take_written(), vec![0]);
        let _ = a.read_u64(3 * PAGE_BYTES);
        assert!(a.take_written().is_empty());
    }

    /// Three images, each with its byte map, under writes, zeroing, links
    /// of a page to another image's (forced, or of the equal lines, also to
    /// a page of another number), block sharing and clones: a base page may
    /// have several dependents, and no page sees another image's writes.
    #[derive(Clone, Debug)]
    enum Op2 {
        Write {
            img: usize,
            page: u64,
            off: u64,
            len: usize,
            seed: u8,
        },
        Zero {
            img: usize,
            page: u64,
            whole: bool,
        },
        Link {
            dep: usize,
            base: usize,
            page: u64,
        },
        LinkEqual {
            dep: usize,
            base: usize,
            page: u64,
            base_page: u64,
        },
        Unlink {
            img: usize,
            page: u64,
        },
        Share {
            dst: usize,
            src: usize,
            page: u64,
        },
        CloneSwap {
            img: usize,
        },
        CloneKeep {
            img: usize,
        },
    }

    const IMGS: usize = 3;

    fn op2() -> impl proptest::strategy::Strategy<Value = Op2> {
        use proptest::prelude::*;
        // Few pages, two far-apart groups (page-cache aliases); writes
        // mostly to few lines, as a program's stores.
        let page = (0..2u64, 0..6u64).prop_map(|(g, p)| g * PAGE_CACHE_ENTRIES as u64 + p);
        let off = prop_oneof![
            0..PAGE_BYTES,
            (0..4u64, 0..64u64).prop_map(|(l, o)| l * 64 + o)
        ];
        // Two distinct images.
        let pair = (0..IMGS, 1..IMGS).prop_map(|(d, k)| (d, (d + k) % IMGS));
        prop_oneof![
            8 => (0..IMGS, page.clone(), off, prop_oneof![1..9usize, 1..200usize], any::<u8>())
                .prop_map(|(img, page, off, len, seed)| Op2::Write { img, page, off, len, seed }),
            1 => (0..IMGS, page.clone(), any::<bool>())
                .prop_map(|(img, page, whole)| Op2::Zero { img, page, whole }),
            2 => (pair.clone(), page.clone()).prop_map(|((dep, base), page)| Op2::Link { dep, base, page }),
            3 => (pair.clone(), page.clone(), page.clone(), any::<bool>()).prop_map(
                |((dep, base), page, other, same)| Op2::LinkEqual {
                    dep,
                    base,
                    page,
                    base_page: if same { page } else { other },
                }
            ),
            1 => (0..IMGS, page.clone()).prop_map(|(img, page)| Op2::Unlink { img, page }),
            1 => (pair, page).prop_map(|((dst, src), page)| Op2::Share { dst, src, page }),
            1 => (0..IMGS).prop_map(|img| Op2::CloneSwap { img }),
            1 => (0..IMGS).prop_map(|img| Op2::CloneKeep { img }),
        ]
    }

    /// Two distinct images of `imgs`, mutably.
    fn two(
        imgs: &mut [SparseImage; IMGS],
        i: usize,
        j: usize,
    ) -> (&mut SparseImage, &mut SparseImage) {
        assert_ne!(i, j);
        let [a, b, c] = imgs;
        match (i, j) {
            (0, 1) => (a, b),
            (0, 2) => (a, c),
            (1, 0) => (b, a),
            (1, 2) => (b, c),
            (2, 0) => (c, a),
            _ => (c, b),
        }
    }

    proptest::proptest! {
        /// Images with dependent pages and clones read back exactly what
        /// plain byte maps say, whatever is shared; re-linking shares every
        /// equal line.
        #[test]
        fn linked_images_equal_byte_maps(ops in proptest::collection::vec(op2(), 1..150)) {
            let mut imgs: [SparseImage; IMGS] = Default::default();
            let mut models: [Vec<u8>; IMGS] = Default::default();
            let mut kept: Vec<(SparseImage, Vec<u8>)> = Vec::new();
            let span = 2 * PAGE_CACHE_ENTRIES as u64 * PAGE_BYTES;
            let idx = |a: u64| a as usize;
            for m in models.iter_mut() {
                m.resize(idx(span), 0);
            }
            let page_range = |p: u64| idx(p * PAGE_BYTES)..idx((p + 1) * PAGE_BYTES);
            let check = |img: &SparseImage, m: &[u8], p: u64| {
                let mut buf = vec![0u8; PAGE_BYTES as usize];
                img.read_bytes(p * PAGE_BYTES, &mut buf);
                assert!(buf[..] == m[page_range(p)], "page {p}");
            };
            for o in ops {
                let touched = match o {
                    Op2::Write { img, page, off, len, seed } => {
                        let addr = page * PAGE_BYTES + off;
                        let len = len.min(idx(span - addr));
                        let data: Vec<u8> = (0..len).map(|k| seed.wrapping_add(k as u8)).collect();
                        if len == 8 {
                            imgs[img].write_u64(addr, u64::from_le_bytes(data[..].try_into().unwrap()));
                        } else {
                            imgs[img].write_bytes(addr, &data);
                        }
                        models[img][idx(addr)..idx(addr) + len].copy_from_slice(&data);
                        page
                    }
                    Op2::Zero { img, page, whole } => {
                        let (a, n) = if whole { (page * PAGE_BYTES, PAGE_BYTES) } else { (page * PAGE_BYTES + 100, 300) };
                        imgs[img].zero_range(a, n);
                        models[img][idx(a)..idx(a + n)].fill(0);
                        page
                    }
                    Op2::Link { dep, base, page } => {
                        let (d, b) = two(&mut imgs, dep, base);
                        // SAFETY: one thread.
                        if unsafe { d.link_page(page, b) } {
                            let src: Vec<u8> = models[base][page_range(page)].to_vec();
                            models[dep][page_range(page)].copy_from_slice(&src);
                            proptest::prop_assert_eq!(d.lines_shared_with(page, b, page), Some(64));
                        }
                        page
                    }
                    Op2::LinkEqual { dep, base, page, base_page } => {
                        let (d, b) = two(&mut imgs, dep, base);
                        let (md, mb) = (&models[dep][page_range(page)], &models[base][page_range(base_page)]);
                        let equal = md.chunks(LINE).zip(mb.chunks(LINE)).filter(|(l, r)| l == r).count() as u32;
                        // SAFETY: one thread.
                        let n = unsafe { d.link_equal_lines(page, b, base_page) };
                        // Linked: exactly the equal lines are shared.
                        if n > 0 {
                            proptest::prop_assert_eq!(n, equal);
                            proptest::prop_assert_eq!(d.lines_shared_with(page, b, base_page), Some(n));
                        }
                        check(b, &models[base], base_page);
                        page
                    }
                    Op2::Unlink { img, page } => {
                        imgs[img].unlink_page(page);
                        page
                    }
                    Op2::Share { dst, src, page } => {
                        let (d, b) = two(&mut imgs, dst, src);
                        if d.share_page(page, b, page) {
                            let bytes: Vec<u8> = models[src][page_range(page)].to_vec();
                            models[dst][page_range(page)].copy_from_slice(&bytes);
                        }
                        page
                    }
                    Op2::CloneSwap { img } => {
                        // The clone replaces the original, which is dropped.
                        imgs[img] = imgs[img].clone();
                        0
                    }
                    Op2::CloneKeep { img } => {
                        kept.push((imgs[img].clone(), models[img].clone()));
                        0
                    }
                };
                for (img, m) in imgs.iter().zip(&models) {
                    check(img, m, touched);
                }
            }
            for (img, m) in imgs.iter().zip(&models).chain(kept.iter().map(|(i, m)| (i, m))) {
                let mut buf = vec![0u8; idx(span)];
                img.read_bytes(0, &mut buf);
                proptest::prop_assert!(buf == *m);
            }
        }
    }

    /// Operations on a small address window that spans more pages than a
    /// chunk and several page-cache aliases.
    #[derive(Clone, Debug)]
    enum Op {
        Write { addr: u64, len: usize, seed: u8 },
        Zero { addr: u64, len: u64 },
        Clone,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        let window = 192 * PAGE_BYTES;
        // Addresses in two far-apart windows (page-cache aliases).
        let addr = (0..2u64, 0..window).prop_map(|(w, a)| w * (1 << 39) + a);
        prop_oneof![
            4 => (addr.clone(), 1..300usize, any::<u8>())
                .prop_map(|(addr, len, seed)| Op::Write { addr, len, seed }),
            // Mostly whole pages, so pages are freed and reused.
            2 => (addr, 0..3u64, 0..2u64).prop_map(|(a, pages, partial)| Op::Zero {
                addr: a / PAGE_BYTES * PAGE_BYTES + partial * 100,
                len: pages * PAGE_BYTES + partial * 50,
            }),
            1 => Just(Op::Clone),
        ]
    }

    proptest::proptest! {
        /// The chunked image (with page reuse and the page cache) reads
        /// back exactly what a byte map says, and a clone is an independent
        /// copy.
        #[test]
        fn equals_a_byte_map(ops in proptest::collection::vec(op(), 1..120)) {
            use std::collections::BTreeMap;
            let mut img = SparseImage::new();
            let mut model: BTreeMap<u64, u8> = BTreeMap::new();
            let mut clones: Vec<(SparseImage, BTreeMap<u64, u8>)> = Vec::new();
            let check = |img: &SparseImage, model: &BTreeMap<u64, u8>, addr: u64, len: usize| {
                let mut buf = vec![0xAAu8; len];
                img.read_bytes(addr, &mut buf);
                for (k, &b) in buf.iter().enumerate() {
                    let want = model.get(&(addr + k as u64)).copied().unwrap_or(0);
                    assert_eq!(b, want, "byte at {:#x}", addr + k as u64);
                }
            };
            for o in ops {
                match o {
                    Op::Write { addr, len, seed } => {
                        let data: Vec<u8> =
                            (0..len).map(|k| seed.wrapping_add(k as u8) | 1).collect();
                        img.write_bytes(addr, &data);
                        for (k, &b) in data.iter().enumerate() {
                            model.insert(addr + k as u64, b);
                        }
                        check(&img, &model, addr.saturating_sub(64), len + 128);
                    }
                    Op::Zero { addr, len } => {
                        img.zero_range(addr, len);
                        for a in addr..addr + len {
                            model.remove(&a);
                        }
                        check(&img, &model, addr, len as usize + 64);
                    }
                    Op::Clone => clones.push((img.clone(), model.clone())),
                }
            }
            for (&a, _) in model.iter().step_by(7) {
                check(&img, &model, a, 1);
            }
            let live_pages: std::collections::BTreeSet<u64> =
                model.keys().map(|a| a / PAGE_BYTES).collect();
            for p in &live_pages {
                proptest::prop_assert!(img.page(*p).is_some());
            }
            for (c, m) in &clones {
                for (&a, _) in m.iter().step_by(5) {
                    check(c, m, a, 1);
                }
                for (&a, _) in model.iter().step_by(11) {
                    check(c, m, a, 1);
                }
            }
        }
    }
}
