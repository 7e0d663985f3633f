//! The read and write paths of [`SparseImage`]: the two direct-mapped page
//! caches in front of its page map (hit paths inlined into every caller,
//! misses out of line), the write slow path (allocation, copy-on-write,
//! saving the lines a dependent still shares) and its `MemRead`/`MemWrite`.

use super::block::{alloc_block, alloc_block_uninit, bytes_of, free_block, line_of, release};
use super::dep::prune;
use super::{MemRead, MemWrite, Slot, SparseImage, LINE, PAGE_BYTES};
use crate::types::Addr;
use std::sync::atomic::Ordering;

/// Entries of [`SparseImage`]'s page cache (direct-mapped by a hash of the
/// page number). 256 entries (4 KiB of tags and pointers) keep the hot pages
/// of 8 thread regions plus scheme areas; measured: 64 -> 256 entries -1.3%
/// instructions (hoop), 1024 no better.
pub(super) const PAGE_CACHE_ENTRIES: usize = 256;
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

impl SparseImage {
    /// Empty the write cache (pages of this image may be shared now).
    pub(super) fn clear_write_cache(&self) {
        for t in &self.wcache_tag {
            t.set(0);
        }
    }

    /// Drop `page_no` from the write cache (it may be shared now).
    pub(super) fn forget_write_cache(&self, page_no: u64) {
        let e = cache_entry(page_no);
        if self.wcache_tag[e].get() == page_no + 1 {
            self.wcache_tag[e].set(0);
        }
    }

    /// Drop `page_no` from both caches (its block changes or leaves).
    pub(super) fn forget_cached(&self, page_no: u64) {
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
    pub(super) fn write_in_page(&mut self, page_no: u64, off: usize, data: &[u8]) {
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
                unsafe { free_block(last) };
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
