//! The physical address map every run is built with: program data per
//! thread at the bottom, the scheme's reserved NVM above it, and the
//! addresses that model ADR-protected structures.

use crate::error::{Error, Result};
use crate::types::Addr;

/// Where things live in the physical address space.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Total NVM capacity.
    pub capacity_bytes: u64,
    /// Program data lives in `[0, home_limit)`; each thread owns one region.
    pub home_limit: u64,
    pub threads: usize,
    /// Usable bytes of each thread's region.
    pub thread_region_bytes: u64,
    /// Distance between consecutive thread regions (2 MiB aligned).
    pub thread_stride_bytes: u64,
    /// Scheme-reserved NVM (`[home_limit, capacity)`): OOP region, logs, ...
    pub reserved_base: u64,
    /// Addresses from here on model a scheme's ADR-protected structures:
    /// durable, but not NVM media (no traffic).
    pub adr_base: u64,
}

impl Layout {
    pub fn new(capacity_bytes: u64, reserved_bytes: u64, threads: usize) -> Result<Self> {
        let reserved = reserved_bytes.div_ceil(1 << 21) << 21;
        if reserved >= capacity_bytes {
            return Err(Error::input(format!(
                "nvm.capacity_bytes={capacity_bytes} is smaller than the scheme's reserved space ({reserved} bytes)"
            )));
        }
        let home_limit = capacity_bytes - reserved;
        let region = (home_limit / threads as u64) & !((1u64 << 21) - 1);
        if region < (1 << 21) {
            return Err(Error::input(format!(
                "nvm.capacity_bytes={capacity_bytes} leaves less than 2 MiB per thread for {threads} threads"
            )));
        }
        Ok(Layout {
            capacity_bytes,
            home_limit,
            threads,
            thread_region_bytes: region,
            thread_stride_bytes: region,
            reserved_base: home_limit,
            adr_base: capacity_bytes.next_power_of_two().max(capacity_bytes) + (1 << 40),
        })
    }

    /// Start of `thread`'s region (2 MiB aligned). No stagger is needed:
    /// the default permutation address mapping spreads equal offsets of
    /// power-of-two-strided regions over banks (docs/model/memory.md).
    pub fn thread_base(&self, thread: usize) -> Addr {
        thread as u64 * self.thread_stride_bytes
    }

    /// The thread whose region holds `addr`, if any.
    #[inline]
    pub fn thread_of(&self, addr: Addr) -> Option<usize> {
        let t = (addr / self.thread_stride_bytes) as usize;
        (t < self.threads
            && addr >= self.thread_base(t)
            && addr < self.thread_base(t) + self.thread_region_bytes)
            .then_some(t)
    }
}

/// A 4 KiB page: the granularity of the hybrid memory's DRAM cache and of
/// the page-level scheme hooks (`Scheme::page_fill`, `page_writeback`).
pub const PAGE_BYTES: u64 = 4096;
/// 64 B lines per [`PAGE_BYTES`] page.
pub const LINES_PER_PAGE: usize = (PAGE_BYTES / crate::types::LINE_BYTES) as usize;
