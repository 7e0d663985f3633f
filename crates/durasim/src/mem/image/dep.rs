//! Dependent pages: a page of one image stored as the lines of a base
//! image's page that hold the same bytes plus the lines that differ
//! ([`Dep`]), and the [`SparseImage`] operations that link, unlink and
//! inspect them.

use super::block::{
    alloc_block_uninit, bytes_of, free_block, line_of, lines_equal, release, Block,
};
use super::{release_slot, Line, PageBytes, Slot, SparseImage, LINE, LINES_PER_PAGE};
use std::sync::atomic::Ordering;

/// A page of a *dependent* image stored as "the base image's page plus the
/// lines that differ" (the NVM media's home pages differ from the
/// architectural image in a few lines per page, so storing whole pages
/// kept the footprint twice). Lines whose bit is set in `shared` read
/// from the base image's block; the others are stored in `own`, in line
/// order. Invariant, kept by the base image: before the base changes a
/// line still shared (or lets go of the block), it copies the old line into
/// `own` and clears the bit, so the dependent never sees the base's writes.
///
/// Held by the dependent's page slot and, while linked, by the base's page
/// slot (`holders`); the side that leaves last frees it. A base page may
/// have several dependents (an NVM home page and a DRAM cache slot), kept
/// in a list through `next`.
pub(super) struct Dep {
    /// The base page's block (held alone by the base image, never shared
    /// with a clone); null once the base let go (then `shared` is 0).
    pub(super) base: *mut Block,
    /// Lines read from `base` (bit i = line i).
    pub(super) shared: u64,
    /// The lines not shared, in line order (`rank` gives the index).
    pub(super) own: Vec<Line>,
    /// The base page's next dependent (null: the last one); meaningful
    /// while the base holds this `Dep`.
    pub(super) next: *mut Dep,
    /// Slots pointing here: 2 while linked, 1 once either side left.
    pub(super) holders: u8,
}

impl Dep {
    /// Index in `own` of line `i` (not shared).
    #[inline]
    fn rank(&self, i: usize) -> usize {
        (!self.shared & ((1u64 << i) - 1)).count_ones() as usize
    }

    pub(super) fn line(&self, i: usize) -> &Line {
        if self.shared & (1 << i) != 0 {
            // SAFETY: a linked base block is live and, while this
            // dependent reads it, not written (the base saves first).
            line_of(unsafe { &*bytes_of(self.base) }, i)
        } else {
            &self.own[self.rank(i)]
        }
    }

    /// Store `value` as line `i`, which stops being shared if it was.
    pub(super) fn set_line(&mut self, i: usize, value: &Line) {
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
    pub(super) fn detach(&mut self) {
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
    pub(super) fn read_page(&self, out: &mut PageBytes) {
        for i in 0..LINES_PER_PAGE as usize {
            out[i * LINE..(i + 1) * LINE].copy_from_slice(self.line(i));
        }
    }
}

/// Drop one holder of a dependent page (`d` from a `Box::into_raw`).
///
/// # Safety
/// `d` is live and held by the caller's slot, which forgets it.
pub(super) unsafe fn leave(d: *mut Dep) {
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
pub(super) unsafe fn prune(head: &mut *mut Dep) -> u64 {
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

/// A dependent page's slot lets go of its `Dep`: its lines are garbage now
/// (the base frees the rest when it next touches the page).
///
/// # Safety
/// `d` is a live `Dep` held by the caller's dependent slot, which forgets it.
pub(super) unsafe fn leave_dependent(d: *mut Dep) {
    (*d).own = Vec::new();
    (*d).shared = 0;
    leave(d);
}

impl SparseImage {
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
            // Lines stored here that equal the base's again are shared;
            // the others keep their order, compacted in place.
            let (mut k, mut kept) = (0, 0);
            for i in 0..LINES_PER_PAGE as usize {
                if dep.shared & (1 << i) != 0 {
                    continue;
                }
                if lines_equal(&dep.own[k], line_of(bp, i)) {
                    dep.shared |= 1 << i;
                } else {
                    if kept != k {
                        dep.own[kept] = dep.own[k];
                    }
                    kept += 1;
                }
                k += 1;
            }
            if kept != dep.own.len() {
                dep.own.truncate(kept);
                dep.own.shrink_to_fit();
            }
            base.forget_write_cache(base_page);
            return dep.shared.count_ones();
        }
        // A stored block: keep only the lines that differ.
        // SAFETY: a live block of `self` (only read).
        let mp = unsafe { &*bytes_of(mine.block) };
        let mut shared = 0u64;
        for i in 0..LINES_PER_PAGE as usize {
            if lines_equal(line_of(mp, i), line_of(bp, i)) {
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
            // SAFETY: the last reference.
            unsafe { free_block(blk) };
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
                unsafe { free_block(last) };
            }
        }
        self.forget_cached(page_no);
        true
    }
}
