//! The process's heap: the system allocator, with blocks of 2 MiB or more
//! mapped on their own and backed by transparent huge pages.
//!
//! A run's large structures (the LLC's data array, HOOP's line index, the
//! schemes' other large tables) are read at random: with 4 KiB pages
//! nearly every such access also misses the host's TLB. Debian and most
//! distributions ship THP in `madvise` mode, which backs only memory that
//! asked for it. Only host speed changes: no
//! simulated result depends on where a block lives (docs/PERFORMANCE.md,
//! "Huge pages for the large arrays").

use std::alloc::{GlobalAlloc, Layout, System};

/// Huge page size of x86-64 (and of aarch64 with 4 KiB base pages).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// [`System`] for small blocks; a block of at least [`HUGE_PAGE_BYTES`]
/// gets its own huge-page-aligned anonymous mapping advised
/// `MADV_HUGEPAGE` (Linux; elsewhere every block comes from [`System`]).
/// The kernel zero-fills a mapping lazily, so a large zeroed block costs
/// nothing until it is touched, as with `calloc`. Declared as the
/// `#[global_allocator]` of the CLI, the benchmarks and the Python module.
pub struct HugePageAlloc;

#[cfg(target_os = "linux")]
mod huge {
    use super::HUGE_PAGE_BYTES;

    const PAGE_BYTES: usize = 4096;

    /// Bytes mapped for a block of `size` bytes.
    #[inline]
    fn mapped_len(size: usize) -> usize {
        size.next_multiple_of(PAGE_BYTES)
    }

    /// A zeroed, `align`-aligned (`align >= HUGE_PAGE_BYTES`) mapping of
    /// `size` bytes advised for huge pages, or null.
    ///
    /// # Safety
    /// `size > 0`; `align` a power of two.
    pub unsafe fn map(size: usize, align: usize) -> *mut u8 {
        let len = mapped_len(size);
        let Some(reserve) = len.checked_add(align) else {
            return std::ptr::null_mut();
        };
        let p = libc::mmap(
            std::ptr::null_mut(),
            reserve,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        // Keep the aligned part; give the slack before and after back.
        let base = p as usize;
        let start = base.next_multiple_of(align);
        if start > base {
            libc::munmap(p, start - base);
        }
        let end = start + len;
        if base + reserve > end {
            libc::munmap(end as *mut libc::c_void, base + reserve - end);
        }
        // Advice only: without THP (or huge pages to spare) the block keeps
        // 4 KiB pages and works the same.
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        start as *mut u8
    }

    /// # Safety
    /// `p` came from [`map`] with this `size`.
    pub unsafe fn unmap(p: *mut u8, size: usize) {
        libc::munmap(p.cast::<libc::c_void>(), mapped_len(size));
    }

    #[inline]
    pub fn is_huge(size: usize) -> bool {
        size >= HUGE_PAGE_BYTES
    }
}

// SAFETY: a small block comes from and returns to `System` with the
// caller's layout; a large one (decided by its size, which the caller
// passes back unchanged) is a private mapping of at least its size at
// least at its alignment, unmapped on dealloc. Both kinds are zeroed when
// asked: `System::alloc_zeroed`, or a fresh anonymous mapping.
unsafe impl GlobalAlloc for HugePageAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if huge::is_huge(layout.size()) {
            return huge::map(layout.size(), layout.align().max(HUGE_PAGE_BYTES));
        }
        System.alloc(layout)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if huge::is_huge(layout.size()) {
            // A fresh anonymous mapping is zero already.
            return self.alloc(layout);
        }
        System.alloc_zeroed(layout)
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        #[cfg(target_os = "linux")]
        if huge::is_huge(layout.size()) {
            return huge::unmap(p, layout.size());
        }
        System.dealloc(p, layout)
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if huge::is_huge(layout.size()) || huge::is_huge(new_size) {
            // Across or above the threshold: move the block.
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let q = self.alloc(new_layout);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                self.dealloc(p, layout);
            }
            return q;
        }
        System.realloc(p, layout, new_size)
    }
}

/// Fault in the whole 4 KiB pages of `[p, p + len)` for writing, in one
/// call: a structure about to be filled in sequence (a slab chunk, a pool
/// of image pages) then takes one kernel entry per chunk instead of one
/// page fault per 4 KiB. Advice only: the bytes do not change, and where
/// the kernel lacks `MADV_POPULATE_WRITE` (before Linux 5.14; elsewhere)
/// the pages fault on first touch as before.
///
/// # Safety
/// `[p, p + len)` lies within one allocation the caller owns.
pub unsafe fn prefault(p: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE_BYTES: usize = 4096;
        let start = (p as usize).next_multiple_of(PAGE_BYTES);
        let end = (p as usize + len) & !(PAGE_BYTES - 1);
        if end > start {
            libc::madvise(
                start as *mut libc::c_void,
                end - start,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocate `size` bytes through `HugePageAlloc`, zeroed or not.
    fn block(size: usize, zeroed: bool) -> (*mut u8, Layout) {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe {
            if zeroed {
                HugePageAlloc.alloc_zeroed(layout)
            } else {
                HugePageAlloc.alloc(layout)
            }
        };
        assert!(!p.is_null(), "{size} B allocation failed");
        (p, layout)
    }

    #[test]
    fn large_blocks_are_zeroed_huge_page_aligned_and_usable() {
        for size in [
            HUGE_PAGE_BYTES,
            HUGE_PAGE_BYTES + 4100,
            3 * HUGE_PAGE_BYTES + 1,
        ] {
            let (p, layout) = block(size, true);
            #[cfg(target_os = "linux")]
            assert_eq!(p as usize % HUGE_PAGE_BYTES, 0, "{size} B block alignment");
            // SAFETY: `p` holds `size` bytes.
            let s = unsafe { std::slice::from_raw_parts_mut(p, size) };
            assert!(s.iter().all(|&b| b == 0), "{size} B block not zeroed");
            s[size - 1] = 7;
            s[0] = 3;
            // SAFETY: allocated above with `layout`.
            unsafe { HugePageAlloc.dealloc(p, layout) };
        }
    }

    #[test]
    fn realloc_keeps_the_bytes_across_the_threshold() {
        let small = 1000;
        let (p, layout) = block(small, false);
        // SAFETY: `p` holds `small` bytes, then each realloc's size.
        unsafe {
            for i in 0..small {
                *p.add(i) = i as u8;
            }
            let big = HUGE_PAGE_BYTES + 123;
            let q = HugePageAlloc.realloc(p, layout, big);
            assert!(!q.is_null());
            *q.add(big - 1) = 0xAB;
            let bigger = 2 * HUGE_PAGE_BYTES + 5;
            let big_layout = Layout::from_size_align(big, 8).unwrap();
            let r = HugePageAlloc.realloc(q, big_layout, bigger);
            assert!(!r.is_null());
            assert_eq!(*r.add(big - 1), 0xAB);
            let bigger_layout = Layout::from_size_align(bigger, 8).unwrap();
            let s = HugePageAlloc.realloc(r, bigger_layout, small);
            assert!(!s.is_null());
            for i in 0..small {
                assert_eq!(*s.add(i), i as u8, "byte {i} after shrinking");
            }
            HugePageAlloc.dealloc(s, layout);
        }
    }

    #[test]
    fn prefault_keeps_the_bytes() {
        let mut v: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        // SAFETY: `v`'s own buffer; then an unaligned part of it.
        unsafe {
            prefault(v.as_mut_ptr(), v.len());
            prefault(v.as_mut_ptr().add(5), 4096);
        }
        assert!(v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
    }

    #[test]
    fn over_aligned_large_blocks_keep_their_alignment() {
        let align = 4 * HUGE_PAGE_BYTES;
        let layout = Layout::from_size_align(HUGE_PAGE_BYTES, align).unwrap();
        // SAFETY: non-zero size; freed with the same layout.
        unsafe {
            let p = HugePageAlloc.alloc(layout);
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0);
            HugePageAlloc.dealloc(p, layout);
        }
    }
}
