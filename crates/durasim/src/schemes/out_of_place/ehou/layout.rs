//! EHOU's durable layout: where the AIT, the pool, the overflow logs, the
//! AIT directory and the ADR structures lie, and the 32 B record shared by
//! log entries and AIT-cache images.

use crate::config::Params;
use crate::schemes::kit::log::{csum, MAX_CORES};
use crate::schemes::Layout;
use crate::types::Addr;

pub(super) const LOG_ENTRY_BYTES: u64 = 32;
pub(super) const SLOT_BYTES: u64 = 32;
pub(super) const TXSEQ_BITS: u32 = 48;
/// Reclaim-list header: transaction sequence above the entry count.
pub(super) const RECLAIM_COUNT_BITS: u32 = 24;
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) ait_base: Addr,
    pub(super) pool_base: Addr,
    pub(super) pool_lines: u64,
    pub(super) log_base: Addr,
    pub(super) log_entries: u64,
    /// AIT directory: one bit per 4 KiB page of the AIT that ever held a
    /// non-identity entry (recovery finds remapped lines without reading
    /// the whole table).
    pub(super) dir_base: Addr,
    /// ADR domain: commit words, reclaim lists, AIT-cache images.
    pub(super) commit_base: Addr,
    pub(super) reclaim_base: Addr,
    pub(super) reclaim_cap: u64,
    pub(super) slot_base: Addr,
    pub(super) slots: u64,
    pub(super) home_limit: Addr,
}

impl Geometry {
    pub(super) fn new(p: &Params, layout: &Layout) -> Self {
        let ait_base = layout.reserved_base;
        let pool_base = (ait_base + p.u64("nvm.capacity_bytes") / 8).next_multiple_of(4096);
        let pool_lines = p.u64("ehou.pool_lines");
        let log_base = pool_base + pool_lines * 64;
        let log_entries = p.u64("ehou.log_entries_per_core");
        let dir_base = (log_base + MAX_CORES * log_entries * LOG_ENTRY_BYTES).next_multiple_of(64);
        let reclaim_cap = p.u64("ehou.reclaim_entries_per_core");
        let commit_base = layout.adr_base;
        let reclaim_base = commit_base + MAX_CORES * 64;
        let reclaim_bytes = (64 + reclaim_cap * 8).next_multiple_of(4096);
        Geometry {
            ait_base,
            pool_base,
            pool_lines,
            log_base,
            log_entries,
            dir_base,
            commit_base,
            reclaim_base,
            reclaim_cap,
            slot_base: reclaim_base + layout.threads as u64 * reclaim_bytes,
            slots: p.u64("dimm.ait_cache_sets") * p.u64("dimm.ait_cache_ways"),
            home_limit: layout.home_limit,
        }
    }
    pub(super) fn ait_addr(&self, line: Addr) -> Addr {
        self.ait_base + line / 64 * 8
    }
    /// Directory word address and bit of the AIT page holding `line`'s entry.
    pub(super) fn dir_bit(&self, line: Addr) -> (Addr, u64) {
        let page = (self.ait_addr(line) - self.ait_base) / 4096;
        (self.dir_base + page / 64 * 8, page % 64)
    }
    /// Device address of `line` under mapping `enc` (0 = home, k = pool
    /// line k - 1).
    pub(super) fn dev_addr(&self, line: Addr, enc: u64) -> Addr {
        if enc == 0 {
            line
        } else {
            self.pool_base + (enc - 1) * 64
        }
    }
    pub(super) fn log_addr(&self, core: usize, i: u64) -> Addr {
        self.log_base + (core as u64 * self.log_entries + i) * LOG_ENTRY_BYTES
    }
    pub(super) fn commit_addr(&self, core: usize) -> Addr {
        self.commit_base + core as u64 * 64
    }
    pub(super) fn reclaim_addr(&self, core: usize) -> Addr {
        self.reclaim_base + core as u64 * (64 + self.reclaim_cap * 8).next_multiple_of(4096)
    }
    pub(super) fn slot_addr(&self, slot: usize) -> Addr {
        self.slot_base + slot as u64 * SLOT_BYTES
    }
}

pub(super) fn tag(core: usize, txseq: u64) -> u64 {
    ((core as u64) << TXSEQ_BITS) | txseq
}

/// A 32 B record {physical line, mapping, tag, checksum} (log entries and
/// AIT-cache images).
pub(super) fn record(line: Addr, enc: u64, tag: u64) -> [u8; 32] {
    let w = [line, enc, tag];
    let mut b = [0u8; 32];
    for (i, v) in w.iter().chain(std::iter::once(&csum(&w, &[]))).enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}

pub(super) fn parse_record(b: &[u8; 32]) -> Option<(Addr, u64, u64)> {
    let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    let ws = [w(0), w(1), w(2)];
    (ws[2] != 0 && w(3) == csum(&ws, &[])).then_some((ws[0], ws[1], ws[2]))
}
