//! Dual-page checkpointing (`dpc`; the dual-page checkpointing paper §3-§4)
//! on the hybrid memory (DRAM cache + NVM, `hybrid.dram_cache_bytes` > 0).
//!
//! Every dirty logical page is mapped to its *base* page (home) and a
//! *derivative* page from a pool in NVM. The derivative page table (DPT)
//! entry of a page holds the base page index (BPI), a valid flag, the
//! checkpoint-position bit vector CPBV (line i's checkpoint is in the
//! derivative page) and the dirty bit vector DBV (line i was written back
//! in this epoch). A line's working copy is where P = DBV xor CPBV points
//! (Eq. 1): a write-back sets DBV and goes to P, so the checkpoint copy is
//! never overwritten; a read (DRAM-cache fill) takes each line from P.
//! At a checkpoint the new CPBV is P and DBV is cleared (Fig. 2:
//! (0,0) -write-> (0,1) -ckpt-> (1,0) -write-> (1,1) -ckpt-> (0,0)).
//!
//! Derivative pages are allocated one by one from a free list, then by
//! reclaiming a clean entry (DBV = 0 and its DRAM page not dirty),
//! uncached pages first: its checkpoint lines are copied to the base page,
//! and only once those writes persisted is the entry invalidated in the
//! valid recovery context (one 8-byte write) and reused. No clean entry =
//! allocation failure: a checkpoint is forced. Allocation is done ahead,
//! when a DRAM page first becomes dirty (pre-allocation); a page whose
//! pre-allocation failed logs its dirty lines (address + data, 72 B) into
//! the fallback buffer of the standby recovery context, which recovery
//! applies and the checkpoint migrates home after the switch.
//!
//! Recovery context (standby slot, schemes/checkpoint/mod.rs): CPU
//! contexts, then a metadata header (pool pages, fallback count), the DPT
//! backup (16 B per entry: valid | BPI, CPBV; no DBV, §4.3) and the
//! fallback buffer. Recovery reads the switch pointer and that slot,
//! rebuilds the DPT and materialises the checkpoint at home: each CPBV line
//! is copied from the derivative page to the base page, then the fallback
//! lines are applied.

use super::{ContextArea, EPOCH_CYCLES};
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::layout::PAGE_BYTES;
use crate::mem::{MemRead, MemWrite};
use crate::recovery::{UnitCounts, UnitRecovery};
use crate::schemes::{
    raise_advice, Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo,
    SchemeStats, Writeback,
};
use crate::types::{Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};

/// Parameters of `dpc` (the epoch length is shared by checkpointing schemes).
pub static PARAMS: &[ParamSpec] = &[
    EPOCH_CYCLES,
    p!("dpc.pool_bytes", int 300 << 20, "bytes", Check::Range(4096.0, 1e13),
        "dual-page checkpointing paper §4.4 footnote 4 and §5.1.1 (300 MB derivative pages for 8 GB NVM)",
        "derivative page pool in NVM (a multiple of 4096 B; DPT entries = pool pages)"),
    p!("dpc.lookup_cycles", int 16, "cycles", Check::Range(0.0, 10000.0),
        "dual-page checkpointing paper §5.1.1 (DPT/CPT lookup 16 cycles; 32 also evaluated)",
        "DPT lookup (BPI match) on every NVM access of the DRAM cache: a page fill or a page write-back"),
    p!("dpc.fallback_buffer_lines", int 10, "lines", Check::Range(1.0, 1e6),
        "dual-page checkpointing paper §4.4.3 (10 lines, 720 B)",
        "NVM buffer for dirty lines of pages whose derivative pre-allocation failed; a run that needs more stops with an error"),
    p!("dpc.metadata", str "optimized", &["optimized", "controller", "cached", "dram"],
        "dual-page checkpointing paper §4.3 and §5.5 (metadata placements compared)",
        "optimized: BPI + valid in the controller, bit vectors in DRAM with one entry's vectors cached in the controller; controller: the whole DPT in the controller; cached: dpc.cached_entries whole entries cached in the controller (direct-mapped), the rest in DRAM; dram: every DPT access reads DRAM"),
    p!("dpc.drain_at_end", bool true, "",
        "modelling choice, docs/MODEL.md",
        "after the final checkpoint, reclaim every derivative page (checkpoint lines home, entries invalidated) so home holds the final image; not in the measured window"),
    p!("dpc.mutant", str "none", &["none", "switch-before-backup", "write-by-cpbv", "reclaim-invalidate-first", "fallback-home-before-switch", "recovery-skips-fallback"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/ckpt.rs; refused by the CLI): switch-before-backup = the switch pointer is written before the recovery context's backup; write-by-cpbv = write-backs placed by CPBV instead of P = DBV xor CPBV; reclaim-invalidate-first = a reclaim invalidates the persisted DPT entry before copying its checkpoint lines home; fallback-home-before-switch = the checkpoint writes the fallback lines home before its switch; recovery-skips-fallback = recovery stops after the DPT entries and never applies the fallback buffer"),
    p!("dpc.cached_entries", int 10240, "entries", Check::Range(1.0, 1e9),
        "dual-page checkpointing paper §5.5 (10K/20K/40K cached entries)",
        "DPT entries cached in the controller with dpc.metadata = cached"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "dpc",
    description: "dual-page checkpointing: whole-memory checkpoints at fixed epochs on a DRAM-cache + NVM hybrid memory (base + derivative page, CPBV/DBV bit vectors)",
    durability: Durability::Checkpoint,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Units(new_units),
    contexts: Some(recovered_contexts),
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::DPC),
        tx: 80_000,
        reaches: "30 M-cycle epochs: 2 checkpoints in dpc's measured window on btree (1 in 10,000 tx)",
        needs: Some(crate::schemes::machines::needs_dram_cache),
    },
};

/// DPT backup entry: word 0 = valid (bit 63) | base page number; word 1 = CPBV.
const ENTRY_BYTES: u64 = 16;
/// The recovery path of lines written to the fallback buffer (a page
/// whose derivative could not be allocated).
const FALLBACK_PATH: &str = "fallback buffer";
const VALID: u64 = 1 << 63;
/// 8 B address + 64 B line (the paper's 72 B per fallback line).
const FALLBACK_ENTRY_BYTES: u64 = 72;
const META_MAGIC: u64 = 0x6470_636d_6574_6101; // "dpcmeta"
/// DRAM address of the DPT copy kept in DRAM (above any DRAM-cache slot).
const DRAM_DPT_BASE: Addr = 1 << 44;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    Optimized,
    Controller,
    Cached,
    Dram,
}

/// Test-only faults the crash oracle must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mutant {
    None,
    /// The switch pointer is written before the backup.
    SwitchBeforeBackup,
    /// Write-backs placed by CPBV instead of P.
    WriteByCpbv,
    /// Reclaim invalidates the persisted entry before its copies.
    ReclaimInvalidateFirst,
    /// The fallback lines go home before the switch (home holds lines of
    /// an epoch whose checkpoint is not yet valid).
    FallbackHomeBeforeSwitch,
}

impl Mutant {
    fn from_params(p: &Params) -> Self {
        match p.str("dpc.mutant") {
            "switch-before-backup" => Mutant::SwitchBeforeBackup,
            "write-by-cpbv" => Mutant::WriteByCpbv,
            "reclaim-invalidate-first" => Mutant::ReclaimInvalidateFirst,
            "fallback-home-before-switch" => Mutant::FallbackHomeBeforeSwitch,
            // recovery-skips-fallback is recovery's (`DpcUnits`).
            _ => Mutant::None,
        }
    }
}

/// Geometry shared by the scheme and its recovery (from parameters only).
#[derive(Clone, Copy, Debug)]
struct Geometry {
    pool_base: Addr,
    pool_pages: u64,
    fallback_lines: u64,
    area: ContextArea,
}

impl Geometry {
    fn new(p: &Params, layout: &Layout) -> Self {
        let pool_pages = p.u64("dpc.pool_bytes") / PAGE_BYTES;
        let fallback_lines = p.u64("dpc.fallback_buffer_lines");
        let pool_base = layout.reserved_base;
        Geometry {
            pool_base,
            pool_pages,
            fallback_lines,
            area: ContextArea::new(
                pool_base + pool_pages * PAGE_BYTES,
                layout.threads,
                meta_bytes(pool_pages, fallback_lines),
            ),
        }
    }
    fn deriv(&self, i: u32) -> Addr {
        self.pool_base + u64::from(i) * PAGE_BYTES
    }
    fn meta_hdr(&self, s: usize) -> Addr {
        self.area.meta(s)
    }
    fn dpt(&self, s: usize) -> Addr {
        self.area.meta(s) + 64
    }
    fn fallback(&self, s: usize) -> Addr {
        self.dpt(s) + self.pool_pages * ENTRY_BYTES
    }
}

fn meta_bytes(pool_pages: u64, fallback_lines: u64) -> u64 {
    64 + pool_pages * ENTRY_BYTES + fallback_lines * FALLBACK_ENTRY_BYTES
}

fn reserved_bytes(p: &Params) -> u64 {
    let pool_pages = p.u64("dpc.pool_bytes") / PAGE_BYTES;
    // The context area's size depends on the core count; 256 cores is the
    // engine's maximum.
    let area = ContextArea::new(
        0,
        256,
        meta_bytes(pool_pages, p.u64("dpc.fallback_buffer_lines")),
    );
    pool_pages * PAGE_BYTES + area.bytes()
}

/// Host bytes of the tables `Dpc::new` allocates whole (the run's host
/// memory estimate, engine/footprint.rs): per pool page an entry, a free
/// slot and two slot images; per `dpc.cached_entries` a tag.
pub(crate) fn host_table_bytes(p: &Params) -> u64 {
    let per_page = std::mem::size_of::<Entry>() + 4 + 2 * std::mem::size_of::<(u64, u64)>();
    (p.u64("dpc.pool_bytes") / PAGE_BYTES)
        .saturating_mul(per_page as u64)
        .saturating_add(p.u64("dpc.cached_entries").saturating_mul(4))
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Dpc::new(p, layout, Mutant::from_params(p))?))
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    page: u64,
    valid: bool,
    cpbv: u64,
    dbv: u64,
    /// Pre-allocated for a DRAM page that is dirty now (not reclaimable).
    pending: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct DpcStats {
    pub data_lines_written: u64,
    pub backup_lines_written: u64,
    pub reclaim_lines_written: u64,
    pub fallback_lines_written: u64,
    pub fill_lines_read: u64,
    pub allocations: u64,
    pub preallocations: u64,
    pub preallocation_failures: u64,
    pub reclaims_uncached: u64,
    pub reclaims_cached: u64,
    pub allocation_failures: u64,
    pub forced_checkpoints: u64,
    pub checkpoints: u64,
    pub checkpoint_cycles: u64,
    pub dpt_lookups: u64,
    pub dpt_controller_hits: u64,
    pub dpt_controller_misses: u64,
    pub fallback_peak_lines: u64,
}

pub(crate) struct Dpc {
    g: Geometry,
    lookup: Cycle,
    epoch_cycles: Cycle,
    placement: Placement,
    mutant: Mutant,
    entries: Vec<Entry>,
    /// BPI match: logical page number -> DPT entry.
    by_page: FxHashMap<u64, u32>,
    free: Vec<u32>,
    /// Entries with DBV != 0 or pending (not reclaimable).
    busy: usize,
    /// Pages resident in the DRAM cache (CPT), for the reclaim preference.
    cached: FxHashSet<u64>,
    /// Pages dirty in DRAM whose pre-allocation failed this epoch.
    no_deriv: FxHashSet<u64>,
    /// Fallback buffer of this epoch: line -> entry index in the standby slot.
    fallback: FxHashMap<Addr, u64>,
    fallback_order: Vec<Addr>,
    /// Reclaim scan positions (round robin).
    scan: usize,
    /// The valid recovery context (None before the first checkpoint).
    valid_slot: Option<usize>,
    epoch: u64,
    forced: bool,
    /// What each slot's DPT backup holds (to write only changed lines).
    slot_image: [Vec<(u64, u64)>; 2],
    /// Metadata caches in the controller: the one-entry bit-vector cache
    /// (optimized) or the direct-mapped entry cache (cached).
    bv_cached: Option<u32>,
    bv_dirty: bool,
    entry_cache: Vec<u32>,
    stats: DpcStats,
    stats_since: Option<Cycle>,
    last_end: Cycle,
    drain_at_end: bool,
    /// Entries ever allocated (the free list hands them out in order):
    /// the backup's scanned prefix.
    high_water: u64,
}

impl Dpc {
    pub(crate) fn new(p: &Params, layout: &Layout, mutant: Mutant) -> Result<Self> {
        if !p.u64("dpc.pool_bytes").is_multiple_of(PAGE_BYTES) {
            return Err(Error::input(format!(
                "invalid value '{}' for 'dpc.pool_bytes': expected a multiple of 4096",
                p.u64("dpc.pool_bytes")
            )));
        }
        let g = Geometry::new(p, layout);
        let n = g.pool_pages as usize;
        let placement = match p.str("dpc.metadata") {
            "controller" => Placement::Controller,
            "cached" => Placement::Cached,
            "dram" => Placement::Dram,
            _ => Placement::Optimized,
        };
        Ok(Dpc {
            g,
            lookup: p.u64("dpc.lookup_cycles"),
            epoch_cycles: p.u64("checkpoint.epoch_cycles"),
            placement,
            mutant,
            entries: vec![Entry::default(); n],
            by_page: FxHashMap::default(),
            // Popped from the end: entry 0 first (Fig. 6(a)).
            free: (0..n as u32).rev().collect(),
            busy: 0,
            cached: FxHashSet::default(),
            no_deriv: FxHashSet::default(),
            fallback: FxHashMap::default(),
            fallback_order: Vec::new(),
            scan: 0,
            valid_slot: None,
            epoch: 0,
            forced: false,
            slot_image: [vec![(0, 0); n], vec![(0, 0); n]],
            bv_cached: None,
            bv_dirty: false,
            entry_cache: vec![u32::MAX; p.usize("dpc.cached_entries")],
            stats: DpcStats::default(),
            stats_since: None,
            last_end: 0,
            drain_at_end: p.bool("dpc.drain_at_end"),
            high_water: 0,
        })
    }

    fn standby(&self) -> usize {
        self.valid_slot.map_or(0, |s| 1 - s)
    }

    /// Cost of reaching entry `i`'s metadata (`write`: its bit vectors
    /// change). BPI matching itself is `lookup` cycles, charged by callers.
    fn meta_access(&mut self, ctx: &mut MemCtx, i: u32, write: bool, t: Cycle) -> Cycle {
        let addr = DRAM_DPT_BASE + u64::from(i) * ENTRY_BYTES;
        let mut buf = [0u8; ENTRY_BYTES as usize];
        match self.placement {
            Placement::Controller => {
                self.stats.dpt_controller_hits += 1;
                t
            }
            Placement::Optimized => {
                if self.bv_cached == Some(i) {
                    self.stats.dpt_controller_hits += 1;
                    self.bv_dirty |= write;
                    return t;
                }
                self.stats.dpt_controller_misses += 1;
                if let (Some(old), true) = (self.bv_cached, self.bv_dirty) {
                    let a = DRAM_DPT_BASE + u64::from(old) * ENTRY_BYTES;
                    ctx.dram.write(a, &buf, Purpose::Metadata, t);
                }
                self.bv_cached = Some(i);
                self.bv_dirty = write;
                ctx.dram.read(addr, &mut buf, Purpose::Metadata, t)
            }
            Placement::Cached => {
                let k = i as usize % self.entry_cache.len();
                if self.entry_cache[k] == i {
                    self.stats.dpt_controller_hits += 1;
                    return t;
                }
                self.stats.dpt_controller_misses += 1;
                let old = self.entry_cache[k];
                if old != u32::MAX {
                    let a = DRAM_DPT_BASE + u64::from(old) * ENTRY_BYTES;
                    ctx.dram.write(a, &buf, Purpose::Metadata, t);
                }
                self.entry_cache[k] = i;
                ctx.dram.read(addr, &mut buf, Purpose::Metadata, t)
            }
            Placement::Dram => {
                self.stats.dpt_controller_misses += 1;
                let t = ctx.dram.read(addr, &mut buf, Purpose::Metadata, t);
                if write {
                    ctx.dram.write(addr, &buf, Purpose::Metadata, t);
                }
                t
            }
        }
    }

    /// DPT lookup of `page` (BPI match, plus a DRAM read where BPIs live in DRAM).
    fn lookup_page(&mut self, ctx: &mut MemCtx, page: u64, t: Cycle) -> (Option<u32>, Cycle) {
        self.stats.dpt_lookups += 1;
        let t = t + self.lookup;
        let i = self.by_page.get(&page).copied();
        let t = match (self.placement, i) {
            (Placement::Dram, None) => {
                let mut buf = [0u8; ENTRY_BYTES as usize];
                self.stats.dpt_controller_misses += 1;
                ctx.dram.read(DRAM_DPT_BASE, &mut buf, Purpose::Metadata, t)
            }
            _ => t,
        };
        (i, t)
    }

    fn set_busy(&mut self, i: u32, busy_now: bool) {
        let e = &self.entries[i as usize];
        let was = e.dbv != 0 || e.pending;
        match (was, busy_now) {
            (false, true) => self.busy += 1,
            (true, false) => self.busy -= 1,
            _ => {}
        }
    }

    /// A derivative page for `page`: a free one, else a reclaimed clean one.
    /// None = allocation failure (a checkpoint is forced).
    fn allocate(&mut self, ctx: &mut MemCtx, page: u64, t: Cycle) -> Option<u32> {
        let i = match self.free.pop() {
            Some(i) => {
                self.high_water = self.high_water.max(u64::from(i) + 1);
                i
            }
            None => {
                let i = self.find_clean()?;
                self.reclaim(ctx, i, t);
                i
            }
        };
        self.stats.allocations += 1;
        self.entries[i as usize] = Entry {
            page,
            valid: true,
            cpbv: 0,
            dbv: 0,
            pending: false,
        };
        self.by_page.insert(page, i);
        Some(i)
    }

    /// A clean entry, uncached pages first (§4.4.2); round-robin scans.
    fn find_clean(&mut self) -> Option<u32> {
        let n = self.entries.len();
        if self.busy >= n {
            return None;
        }
        for want_uncached in [true, false] {
            for k in 0..n {
                let i = (self.scan + k) % n;
                let e = &self.entries[i];
                if e.valid
                    && e.dbv == 0
                    && !e.pending
                    && (!want_uncached || !self.cached.contains(&e.page))
                {
                    self.scan = (i + 1) % n;
                    if want_uncached {
                        self.stats.reclaims_uncached += 1;
                    } else {
                        self.stats.reclaims_cached += 1;
                    }
                    return Some(i as u32);
                }
            }
        }
        None
    }

    /// Reclaim entry `i`: its checkpoint lines go home, then the entry is
    /// invalidated in the valid recovery context (after those writes).
    fn reclaim(&mut self, ctx: &mut MemCtx, i: u32, t: Cycle) -> Cycle {
        let e = self.entries[i as usize];
        let invalidate = |s: &mut Self, ctx: &mut MemCtx, t: Cycle| {
            if let Some(vs) = s.valid_slot {
                if s.slot_image[vs][i as usize].0 & VALID != 0 {
                    let a = s.g.dpt(vs) + u64::from(i) * ENTRY_BYTES;
                    s.slot_image[vs][i as usize].0 = 0;
                    return ctx.nvm.write(a, &0u64.to_le_bytes(), Purpose::Metadata, t);
                }
            }
            t
        };
        let mut done = t;
        if self.mutant == Mutant::ReclaimInvalidateFirst {
            done = invalidate(self, ctx, t);
        }
        let mut m = e.cpbv;
        while m != 0 {
            let k = u64::from(m.trailing_zeros());
            m &= m - 1;
            let mut line = [0u8; LINE_BYTES as usize];
            let r = ctx
                .nvm
                .read(self.g.deriv(i) + k * LINE_BYTES, &mut line, Purpose::Gc, t);
            done = done.max(ctx.nvm.write(
                e.page * PAGE_BYTES + k * LINE_BYTES,
                &line,
                Purpose::Gc,
                r,
            ));
            self.stats.reclaim_lines_written += 1;
        }
        if self.mutant != Mutant::ReclaimInvalidateFirst {
            // Only after the copies persisted (ADR: once accepted).
            done = invalidate(self, ctx, done);
        }
        self.by_page.remove(&e.page);
        self.entries[i as usize].valid = false;
        done
    }

    /// Log a line of a page without a derivative page into the fallback
    /// buffer of the standby context.
    fn log_fallback(&mut self, ctx: &mut MemCtx, line_addr: Addr, data: &[u8], t: Cycle) -> Cycle {
        let n = self.fallback.len() as u64;
        let k = match self.fallback.get(&line_addr) {
            Some(&k) => k,
            None => {
                if n >= self.g.fallback_lines {
                    ctx.input_error(format!(
                        "dpc: the fallback buffer overflowed ({} lines of pages whose derivative pre-allocation failed before the forced checkpoint); {} or raise dpc.pool_bytes",
                        n + 1,
                        raise_advice(PARAMS, "dpc.fallback_buffer_lines", n + 1)
                    ));
                    return t;
                }
                self.fallback.insert(line_addr, n);
                self.fallback_order.push(line_addr);
                self.stats.fallback_peak_lines = self.stats.fallback_peak_lines.max(n + 1);
                n
            }
        };
        let mut rec = [0u8; FALLBACK_ENTRY_BYTES as usize];
        rec[..8].copy_from_slice(&line_addr.to_le_bytes());
        rec[8..].copy_from_slice(data);
        self.stats.fallback_lines_written += 1;
        let a = self.g.fallback(self.standby()) + k * FALLBACK_ENTRY_BYTES;
        let p = ctx.nvm.persist_log.path_start();
        let done = ctx.nvm.write(a, &rec, Purpose::Log, t);
        ctx.nvm.persist_log.path_done(FALLBACK_PATH, p);
        done
    }

    fn note_time(&mut self, t: Cycle) {
        if self.stats_since.is_none() {
            self.stats_since = Some(t);
        }
    }

    /// The DPT backup of the standby slot, its metadata header and every
    /// changed entry (whole lines of four entries).
    fn write_backup(&mut self, ctx: &mut MemCtx, s: usize, now: Cycle) -> Cycle {
        let mut done = now;
        let per_line = (LINE_BYTES / ENTRY_BYTES) as usize;
        let n = self.entries.len();
        let mut line = [0u8; LINE_BYTES as usize];
        for l0 in (0..n).step_by(per_line) {
            let mut changed = false;
            for i in l0..(l0 + per_line).min(n) {
                let e = &self.entries[i];
                let want = if e.valid {
                    (VALID | e.page, e.cpbv)
                } else {
                    (0, 0)
                };
                changed |= self.slot_image[s][i] != want;
                self.slot_image[s][i] = want;
                let o = (i - l0) * ENTRY_BYTES as usize;
                line[o..o + 8].copy_from_slice(&want.0.to_le_bytes());
                line[o + 8..o + 16].copy_from_slice(&want.1.to_le_bytes());
            }
            if changed {
                let len = ((l0 + per_line).min(n) - l0) * ENTRY_BYTES as usize;
                let a = self.g.dpt(s) + l0 as u64 * ENTRY_BYTES;
                done = done.max(ctx.nvm.write(a, &line[..len], Purpose::Metadata, now));
                self.stats.backup_lines_written += 1;
            }
        }
        let mut hdr = [0u8; 64];
        hdr[..8].copy_from_slice(&META_MAGIC.to_le_bytes());
        hdr[8..16].copy_from_slice(&self.g.pool_pages.to_le_bytes());
        hdr[16..24].copy_from_slice(&(self.fallback_order.len() as u64).to_le_bytes());
        hdr[24..32].copy_from_slice(&self.epoch.to_le_bytes());
        hdr[32..40].copy_from_slice(&self.high_water.to_le_bytes());
        self.stats.backup_lines_written += 1;
        done.max(
            ctx.nvm
                .write(self.g.meta_hdr(s), &hdr, Purpose::Metadata, now),
        )
    }
}

impl Dpc {
    /// Copy the fallback lines logged in slot `s` to their home addresses.
    fn fallback_home(&mut self, ctx: &mut MemCtx, s: usize, mut t: Cycle) -> Cycle {
        let mut line = [0u8; LINE_BYTES as usize];
        for &la in &self.fallback_order {
            let k = self.fallback[&la];
            let src = self.g.fallback(s) + k * FALLBACK_ENTRY_BYTES + 8;
            let r = ctx.nvm.read(src, &mut line, Purpose::Log, t);
            t = t.max(ctx.nvm.write(la, &line, Purpose::Log, r));
        }
        t
    }

    /// Read the lines `want` of a page from where P points (fallback
    /// entries first); returns when line `first` arrived.
    fn fill_lines(
        &mut self,
        ctx: &mut MemCtx,
        page_addr: Addr,
        first: usize,
        want: u64,
        out: &mut [u8],
        now: Cycle,
    ) -> Cycle {
        self.note_time(now);
        let (i, mut t) = self.lookup_page(ctx, page_addr / PAGE_BYTES, now);
        let p = match i {
            Some(i) => {
                t = self.meta_access(ctx, i, false, t);
                let e = &self.entries[i as usize];
                e.dbv ^ e.cpbv
            }
            None => 0,
        };
        let lines = out.len() / LINE_BYTES as usize;
        let mut first_at = t;
        for k in
            std::iter::once(first).chain((0..lines).filter(|&k| k != first && want >> k & 1 == 1))
        {
            let la = page_addr + k as u64 * LINE_BYTES;
            let src = if let Some(&f) = self.fallback.get(&la) {
                self.g.fallback(self.standby()) + f * FALLBACK_ENTRY_BYTES + 8
            } else if p >> k & 1 == 1 {
                self.g.deriv(i.expect("P set only with an entry")) + k as u64 * LINE_BYTES
            } else {
                la
            };
            let r = k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize;
            let done = ctx.nvm.read(src, &mut out[r], Purpose::Demand, t);
            self.stats.fill_lines_read += 1;
            if k == first {
                first_at = done;
            }
        }
        first_at
    }
}

impl Scheme for Dpc {
    fn recovery_paths(&self) -> &'static [&'static str] {
        use crate::schemes::path::{CHECKPOINT, FORCED_CHECKPOINT};
        &[CHECKPOINT, FORCED_CHECKPOINT, FALLBACK_PATH]
    }

    fn tx_end(&mut self, _ctx: &mut MemCtx, _core: CoreId, now: Cycle) -> Cycle {
        now
    }

    fn page_fill(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        page_addr: Addr,
        first: usize,
        out: &mut [u8],
        now: Cycle,
    ) -> Cycle {
        self.cached.insert(page_addr / PAGE_BYTES);
        let all = if out.len() >= 64 * LINE_BYTES as usize {
            u64::MAX
        } else {
            (1u64 << (out.len() / LINE_BYTES as usize)) - 1
        };
        self.fill_lines(ctx, page_addr, first, all, out, now)
    }

    fn page_dirtied(&mut self, ctx: &mut MemCtx, page_addr: Addr, now: Cycle) {
        // Pre-allocation, off the critical path (§4.4.3).
        self.note_time(now);
        let page = page_addr / PAGE_BYTES;
        self.stats.preallocations += 1;
        let i = match self.by_page.get(&page).copied() {
            Some(i) => Some(i),
            None if self.no_deriv.contains(&page) => None,
            None => self.allocate(ctx, page, now),
        };
        match i {
            Some(i) => {
                self.set_busy(i, true);
                self.entries[i as usize].pending = true;
            }
            None => {
                self.stats.preallocation_failures += 1;
                self.stats.allocation_failures += 1;
                self.no_deriv.insert(page);
                self.forced = true;
            }
        }
    }

    fn page_writeback(
        &mut self,
        ctx: &mut MemCtx,
        page_addr: Addr,
        dirty: u64,
        data: &[u8],
        now: Cycle,
    ) -> Cycle {
        self.note_time(now);
        let page = page_addr / PAGE_BYTES;
        let (mut i, mut t) = self.lookup_page(ctx, page, now);
        if i.is_none() && !self.no_deriv.contains(&page) {
            // Dirtied without a pre-allocation (cannot happen through the
            // DRAM cache, which reports every first dirty line; kept for
            // direct callers).
            i = self.allocate(ctx, page, t);
            if i.is_none() {
                self.stats.allocation_failures += 1;
                self.no_deriv.insert(page);
                self.forced = true;
            }
        }
        let Some(i) = i else {
            let mut done = t;
            let mut m = dirty;
            while m != 0 {
                let k = m.trailing_zeros() as usize;
                m &= m - 1;
                let la = page_addr + k as u64 * LINE_BYTES;
                let d = &data[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize];
                done = done.max(self.log_fallback(ctx, la, d, t));
            }
            return done;
        };
        t = self.meta_access(ctx, i, true, t);
        self.set_busy(i, true);
        let e = &mut self.entries[i as usize];
        e.pending = false;
        e.dbv |= dirty;
        // Eq. (1): the working copy of each line.
        let p = if self.mutant == Mutant::WriteByCpbv {
            e.cpbv
        } else {
            e.dbv ^ e.cpbv
        };
        let deriv = self.g.deriv(i);
        let mut done = t;
        let mut m = dirty;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            let dst = if p >> k & 1 == 1 {
                deriv + k as u64 * LINE_BYTES
            } else {
                page_addr + k as u64 * LINE_BYTES
            };
            let line: &LineData = data[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize]
                .try_into()
                .expect("64 B");
            done = done.max(ctx.nvm.write(dst, line, Purpose::WriteBack, t));
            self.stats.data_lines_written += 1;
        }
        done
    }

    /// Without a DRAM cache the LLC talks to the controller line by line:
    /// the same translation, one line at a time.
    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut crate::cache::LineExt,
    ) -> (Cycle, bool) {
        let page_addr = line_addr - line_addr % PAGE_BYTES;
        let k = ((line_addr % PAGE_BYTES) / LINE_BYTES) as usize;
        let mut page = [0u8; PAGE_BYTES as usize];
        // Only line k is read: a one-line "page" starting at it.
        let t = self.fill_lines(ctx, page_addr, k, 1 << k, &mut page, now);
        out.copy_from_slice(&page[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize]);
        self.cached.remove(&(page_addr / PAGE_BYTES));
        (t, false)
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            now,
            ..
        } = ev;
        let page_addr = line_addr - line_addr % PAGE_BYTES;
        let k = ((line_addr % PAGE_BYTES) / LINE_BYTES) as usize;
        let page = page_addr / PAGE_BYTES;
        let dirty_now = self.by_page.get(&page).is_some_and(|&i| {
            self.entries[i as usize].dbv != 0 || self.entries[i as usize].pending
        }) || self.no_deriv.contains(&page);
        if !dirty_now {
            self.page_dirtied(ctx, page_addr, now);
        }
        let mut buf = [0u8; PAGE_BYTES as usize];
        buf[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize].copy_from_slice(data);
        self.page_writeback(ctx, page_addr, 1 << k, &buf, now)
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        if !self.drain_at_end {
            return now;
        }
        // Reclaim every entry (all are clean after the final checkpoint).
        let mut t = now;
        for i in 0..self.entries.len() as u32 {
            if self.entries[i as usize].valid {
                t = t.max(self.reclaim(ctx, i, now));
            }
        }
        t
    }

    fn page_cached(&mut self, page_addr: Addr) {
        self.cached.insert(page_addr / PAGE_BYTES);
    }

    fn page_evicted(&mut self, page_addr: Addr) {
        self.cached.remove(&(page_addr / PAGE_BYTES));
    }

    fn epoch_cycles(&self) -> Option<Cycle> {
        Some(self.epoch_cycles)
    }

    fn checkpoint_forced(&self) -> bool {
        self.forced
    }

    fn checkpoint(
        &mut self,
        ctx: &mut MemCtx,
        cpu_state: &[u8],
        started: Cycle,
        now: Cycle,
    ) -> (Cycle, u64) {
        self.note_time(started);
        if self.forced {
            self.stats.forced_checkpoints += 1;
        }
        let s = self.standby();
        self.epoch += 1;
        // Step 4's metadata update, computed now so the backup holds the
        // new checkpoint positions: CPBV <- P, DBV <- 0.
        for i in 0..self.entries.len() {
            let e = self.entries[i];
            if e.valid && (e.dbv != 0 || e.pending) {
                self.set_busy(i as u32, false);
                let e = &mut self.entries[i];
                e.cpbv ^= e.dbv;
                e.dbv = 0;
                e.pending = false;
            }
        }
        let area = self.g.area;
        let mut t = now;
        if self.mutant == Mutant::SwitchBeforeBackup {
            t = t.max(area.switch(&mut ctx.nvm, s, self.epoch, now));
        }
        // Step 3: CPU state and DPT backup (without DBV) to the standby slot.
        t = t.max(area.write_contexts(&mut ctx.nvm, s, self.epoch, cpu_state, now));
        t = t.max(self.write_backup(ctx, s, now));
        if self.mutant == Mutant::FallbackHomeBeforeSwitch {
            t = self.fallback_home(ctx, s, t);
        }
        // Step 4: the atomic switch, once the backup has persisted.
        if self.mutant != Mutant::SwitchBeforeBackup {
            t = area.switch(&mut ctx.nvm, s, self.epoch, t);
        }
        let committed = ctx.nvm.persist_log.count();
        self.valid_slot = Some(s);
        // Fallback lines become home data of the new checkpoint, only once
        // the switch made it valid (before, home still belongs to the last
        // checkpoint: those pages have no derivative page to hold it).
        if self.mutant != Mutant::FallbackHomeBeforeSwitch {
            t = self.fallback_home(ctx, s, t);
        }
        self.fallback.clear();
        self.fallback_order.clear();
        self.no_deriv.clear();
        self.forced = false;
        self.stats.checkpoints += 1;
        self.stats.checkpoint_cycles += t.saturating_sub(started);
        self.last_end = t;
        (t, committed)
    }

    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        let line = addr - addr % LINE_BYTES;
        if let Some(&f) = self.fallback.get(&line) {
            let a = self.g.fallback(self.standby()) + f * FALLBACK_ENTRY_BYTES + 8;
            return ctx.nvm.peek(a + addr % LINE_BYTES, buf);
        }
        let page = addr / PAGE_BYTES;
        let k = (addr % PAGE_BYTES) / LINE_BYTES;
        match self.by_page.get(&page) {
            Some(&i) => {
                let e = &self.entries[i as usize];
                if (e.dbv ^ e.cpbv) >> k & 1 == 1 {
                    ctx.nvm.peek(self.g.deriv(i) + addr % PAGE_BYTES, buf)
                } else {
                    ctx.nvm.peek(addr, buf)
                }
            }
            None => ctx.nvm.peek(addr, buf),
        }
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        let span = self
            .last_end
            .saturating_sub(self.stats_since.unwrap_or(0))
            .max(1);
        let ctrl_bits = match self.placement {
            Placement::Optimized => 37.0,
            Placement::Controller | Placement::Cached => 165.0,
            Placement::Dram => 0.0,
        };
        vec![
            ("checkpoints", s.checkpoints as f64),
            ("forced_checkpoints", s.forced_checkpoints as f64),
            ("checkpoint_cycles", s.checkpoint_cycles as f64),
            (
                "checkpoint_time_share",
                s.checkpoint_cycles as f64 / span as f64,
            ),
            ("data_lines_written", s.data_lines_written as f64),
            (
                "metadata_backup_lines_written",
                s.backup_lines_written as f64,
            ),
            ("reclaim_lines_written", s.reclaim_lines_written as f64),
            ("fallback_lines_written", s.fallback_lines_written as f64),
            ("fill_lines_read", s.fill_lines_read as f64),
            ("derivative_allocations", s.allocations as f64),
            ("reclaims_uncached", s.reclaims_uncached as f64),
            ("reclaims_cached", s.reclaims_cached as f64),
            ("allocation_failures", s.allocation_failures as f64),
            ("preallocation_failures", s.preallocation_failures as f64),
            (
                "preallocation_failures_per_epoch",
                s.preallocation_failures as f64 / s.checkpoints.max(1) as f64,
            ),
            ("fallback_peak_lines", s.fallback_peak_lines as f64),
            ("dpt_lookups", s.dpt_lookups as f64),
            ("dpt_controller_hits", s.dpt_controller_hits as f64),
            ("dpt_controller_misses", s.dpt_controller_misses as f64),
            ("dpt_entries_in_use", self.by_page.len() as f64),
            ("controller_metadata_bits_per_entry", ctrl_bits),
            (
                "nvm_metadata_bytes_per_page",
                ENTRY_BYTES as f64 * 2.0, // two recovery-context slots
            ),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = DpcStats::default();
        self.stats_since = None;
    }
}

/// The CPU contexts the valid recovery context holds (`SchemeInfo::contexts`).
fn recovered_contexts(
    img: &dyn crate::mem::MemRead,
    p: &Params,
    layout: &Layout,
) -> std::result::Result<Vec<super::CoreContext>, String> {
    Geometry::new(p, layout).area.recovered_contexts(img)
}

/// Recovery: the switch pointer names the valid recovery context; rebuild
/// the DPT from its backup and materialise the checkpoint at home (every
/// CPBV line from its derivative page, then the fallback lines).
/// Idempotent: it only copies checkpoint data onto working copies.
/// Written as units (recovery/units.rs): one per DPT entry up to the
/// high-water mark, then one per fallback line.
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_units(new_units(p, layout), img)
}

/// dpc's recovery as units (recovery/units.rs).
pub(crate) fn new_units(p: &Params, layout: &Layout) -> Box<dyn UnitRecovery> {
    Box::new(DpcUnits {
        g: Geometry::new(p, layout),
        home_limit: layout.home_limit,
        valid: None,
        skip_fallback: p.str("dpc.mutant") == "recovery-skips-fallback",
    })
}

struct DpcUnits {
    g: Geometry,
    home_limit: Addr,
    /// (epoch, slot, high-water mark, fallback count) of the valid
    /// recovery context; None before the first checkpoint.
    valid: Option<(u64, usize, u64, u64)>,
    /// Test-only: the scan ends after the DPT entries.
    skip_fallback: bool,
}

fn dpc_internal(m: String) -> Error {
    Error::Internal(format!("dpc recovery: {m}"))
}

impl UnitRecovery for DpcUnits {
    fn begin(&mut self, img: &dyn MemRead) -> Result<u64> {
        let g = &self.g;
        self.valid = None;
        let Some((epoch, s)) = g.area.read_switch(img).map_err(dpc_internal)? else {
            return Ok(0);
        };
        g.area.read_contexts(img, Some(s)).map_err(dpc_internal)?;
        let hdr = g.meta_hdr(s);
        if img.read_u64(hdr) != META_MAGIC || img.read_u64(hdr + 8) != g.pool_pages {
            return Err(dpc_internal(format!(
                "metadata header of slot {s} is garbled"
            )));
        }
        let fallback_n = img.read_u64(hdr + 16);
        if fallback_n > g.fallback_lines {
            return Err(dpc_internal(format!(
                "fallback count {fallback_n} is garbled"
            )));
        }
        let high_water = img.read_u64(hdr + 32);
        if high_water > g.pool_pages {
            return Err(dpc_internal(format!(
                "DPT high-water mark {high_water} is garbled"
            )));
        }
        self.valid = Some((epoch, s, high_water, fallback_n));
        if self.skip_fallback {
            return Ok(high_water);
        }
        Ok(high_water + fallback_n)
    }

    fn unit(
        &self,
        i: u64,
        img: &dyn MemRead,
        home: &mut dyn FnMut(Addr, &[u8]),
    ) -> Result<Option<UnitCounts>> {
        let g = &self.g;
        let (_, s, high_water, _) = self.valid.expect("begin found a context");
        let mut line = [0u8; LINE_BYTES as usize];
        if i >= high_water {
            let k = i - high_water;
            let a = g.fallback(s) + k * FALLBACK_ENTRY_BYTES;
            let la = img.read_u64(a);
            if !la.is_multiple_of(LINE_BYTES) || la >= self.home_limit {
                return Err(dpc_internal(format!("fallback entry {k} names {la:#x}")));
            }
            img.read_bytes(a + 8, &mut line);
            home(la, &line);
            return Ok(Some([0, 1]));
        }
        let a = g.dpt(s) + i * ENTRY_BYTES;
        let w0 = img.read_u64(a);
        if w0 & VALID == 0 {
            return Ok(Some([0, 0]));
        }
        let base = (w0 & !VALID) * PAGE_BYTES;
        if base >= self.home_limit {
            return Err(dpc_internal(format!(
                "DPT entry {i} names page {base:#x} outside home"
            )));
        }
        let mut copied = 0;
        let mut m = img.read_u64(a + 8);
        while m != 0 {
            let k = u64::from(m.trailing_zeros());
            m &= m - 1;
            img.read_bytes(g.deriv(i as u32) + k * LINE_BYTES, &mut line);
            home(base + k * LINE_BYTES, &line);
            copied += 1;
        }
        Ok(Some([1, copied]))
    }

    fn report(&self, [entries, copied]: UnitCounts) -> RecoveryReport {
        let mut rep = RecoveryReport::default();
        let Some((epoch, _, high_water, fallback_n)) = self.valid else {
            rep.details.push(("epoch", 0.0));
            return rep;
        };
        rep.bytes_read = 64 + 64 + high_water * ENTRY_BYTES + (copied + fallback_n) * LINE_BYTES;
        rep.bytes_written = copied * LINE_BYTES;
        rep.details.push(("epoch", epoch as f64));
        rep.details.push(("dpt_entries", entries as f64));
        rep.details.push(("lines_copied_home", copied as f64));
        rep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::{epochs::crashtest_checkpoints, CrashOptions};
    use crate::engine::RunSpec;
    use crate::mem::MemoryController;

    fn params(pool_pages: u64) -> Params {
        let mut p = Params::defaults(&[PARAMS]);
        p.set_str("hybrid.dram_cache_bytes", "65536").unwrap();
        p.set_str("hybrid.dram_cache_ways", "4").unwrap();
        p.set_str("nvm.capacity_bytes", "268435456").unwrap();
        p.set_str("dpc.pool_bytes", &(pool_pages * 4096).to_string())
            .unwrap();
        p
    }

    fn machine(pool_pages: u64) -> (Dpc, MemCtx, Params) {
        let p = params(pool_pages);
        let layout = Layout::new(p.u64("nvm.capacity_bytes"), reserved_bytes(&p), 1).unwrap();
        let ctx = MemCtx {
            nvm: MemoryController::nvm(&p, true),
            dram: MemoryController::dram(&p),
            layout: layout.clone(),
            cores: 1,
            freq_ghz: 2.5,
            pending_error: None,
            write_back_request: Vec::new(),
        };
        (Dpc::new(&p, &layout, Mutant::None).unwrap(), ctx, p)
    }

    fn page_of(v: u8) -> Vec<u8> {
        vec![v; PAGE_BYTES as usize]
    }

    fn nvm_line(ctx: &MemCtx, a: Addr) -> u8 {
        let mut b = [0u8; 64];
        ctx.nvm.peek(a, &mut b);
        b[0]
    }

    /// Dirty a page in DRAM and write `mask` back with bytes `v`.
    fn write(d: &mut Dpc, ctx: &mut MemCtx, page: Addr, mask: u64, v: u8) {
        d.page_dirtied(ctx, page, 0);
        d.page_writeback(ctx, page, mask, &page_of(v), 0);
    }

    fn state(d: &Dpc, page: Addr, line: u32) -> (u64, u64) {
        let e = d.entries[d.by_page[&(page / PAGE_BYTES)] as usize];
        (e.cpbv >> line & 1, e.dbv >> line & 1)
    }

    #[test]
    fn every_transition_of_fig2_and_p_on_writes() {
        let (mut d, mut ctx, _) = machine(4);
        let page = 0x10_0000;
        let deriv = d.g.deriv(0);
        // (0,0) -write-> (0,1): the new value goes to the derivative page,
        // the checkpoint (base) is untouched.
        write(&mut d, &mut ctx, page, 0b1, 7);
        assert_eq!(state(&d, page, 0), (0, 1));
        assert_eq!((nvm_line(&ctx, deriv), nvm_line(&ctx, page)), (7, 0));
        // Written twice in one epoch: same state, same place.
        write(&mut d, &mut ctx, page, 0b1, 8);
        assert_eq!(state(&d, page, 0), (0, 1));
        assert_eq!((nvm_line(&ctx, deriv), nvm_line(&ctx, page)), (8, 0));
        // (0,1) -checkpoint-> (1,0).
        d.checkpoint(&mut ctx, &[], 0, 0);
        assert_eq!(state(&d, page, 0), (1, 0));
        // (1,0) -write-> (1,1): P = 0, the base page takes it.
        write(&mut d, &mut ctx, page, 0b1, 9);
        assert_eq!(state(&d, page, 0), (1, 1));
        assert_eq!((nvm_line(&ctx, deriv), nvm_line(&ctx, page)), (8, 9));
        write(&mut d, &mut ctx, page, 0b1, 10);
        assert_eq!(state(&d, page, 0), (1, 1));
        assert_eq!(nvm_line(&ctx, deriv), 8, "checkpoint copy protected");
        // (1,1) -checkpoint-> (0,0); (1,0) stays (1,0) without writes.
        write(&mut d, &mut ctx, page, 0b10, 3);
        d.checkpoint(&mut ctx, &[], 0, 0);
        assert_eq!(state(&d, page, 0), (0, 0));
        assert_eq!(state(&d, page, 1), (1, 0));
        d.checkpoint(&mut ctx, &[], 0, 0);
        assert_eq!(state(&d, page, 1), (1, 0));
    }

    #[test]
    fn reads_follow_p() {
        let (mut d, mut ctx, _) = machine(4);
        let page = 0x20_0000;
        ctx.nvm.preload(page, &page_of(1));
        // Line 0 -> derivative (0,1); line 1 untouched (0,0) stays in base.
        write(&mut d, &mut ctx, page, 0b01, 5);
        let mut out = page_of(0);
        d.page_fill(&mut ctx, 0, page, 0, &mut out, 0);
        assert_eq!((out[0], out[64]), (5, 1));
        // After a checkpoint line 0 is (1,0): read from the derivative.
        d.checkpoint(&mut ctx, &[], 0, 0);
        d.page_fill(&mut ctx, 0, page, 0, &mut out, 0);
        assert_eq!(out[0], 5);
        // (1,1): the base copy is the working one.
        write(&mut d, &mut ctx, page, 0b01, 6);
        d.page_fill(&mut ctx, 0, page, 0, &mut out, 0);
        assert_eq!((out[0], out[64]), (6, 1));
        let mut b = [0u8; 8];
        d.read_logical(&ctx, page, &mut b);
        assert_eq!(b[0], 6);
    }

    #[test]
    fn pool_allocates_in_order_reclaims_clean_uncached_first_and_fails() {
        let (mut d, mut ctx, _) = machine(2);
        let (a, b, c) = (0x30_0000, 0x31_0000, 0x32_0000);
        write(&mut d, &mut ctx, a, 0b1, 1);
        write(&mut d, &mut ctx, b, 0b1, 2);
        assert_eq!((d.by_page[&(a / 4096)], d.by_page[&(b / 4096)]), (0, 1));
        // Both dirty this epoch: no clean page, allocation fails, a
        // checkpoint is forced.
        write(&mut d, &mut ctx, c, 0b1, 3);
        assert!(d.checkpoint_forced());
        assert_eq!(d.stats.allocation_failures, 1);
        d.checkpoint(&mut ctx, &[], 0, 0);
        assert!(!d.checkpoint_forced());
        // Now both are clean; b is cached in DRAM, a is not: a is reclaimed.
        d.cached.insert(b / 4096);
        write(&mut d, &mut ctx, c, 0b1, 4);
        assert!(!d.by_page.contains_key(&(a / 4096)), "a reclaimed");
        assert_eq!(d.by_page[&(c / 4096)], 0);
        assert_eq!(d.stats.reclaims_uncached, 1);
        // a's checkpoint line went home before the entry was reused.
        assert_eq!(nvm_line(&ctx, a), 1);
        // Then the cached clean page b (c is dirty now).
        let e = 0x33_0000;
        write(&mut d, &mut ctx, e, 0b1, 5);
        assert_eq!(d.stats.reclaims_cached, 1);
        assert_eq!(nvm_line(&ctx, b), 2);
    }

    #[test]
    fn fallback_buffer_holds_lines_until_the_checkpoint_moves_them_home() {
        let (mut d, mut ctx, _) = machine(1);
        let (a, b) = (0x40_0000, 0x41_0000);
        write(&mut d, &mut ctx, a, 0b1, 1);
        // Pre-allocation of b fails: its write-back is logged, not placed.
        write(&mut d, &mut ctx, b, 0b110, 2);
        assert_eq!(d.stats.preallocation_failures, 1);
        assert_eq!(d.stats.fallback_lines_written, 2);
        assert_eq!(
            nvm_line(&ctx, b + 64),
            0,
            "home untouched before the checkpoint"
        );
        let mut out = page_of(0);
        d.page_fill(&mut ctx, 0, b, 1, &mut out, 0);
        assert_eq!((out[0], out[64], out[128]), (0, 2, 2));
        d.checkpoint(&mut ctx, &[], 0, 0);
        assert_eq!((nvm_line(&ctx, b + 64), nvm_line(&ctx, b + 128)), (2, 2));
        assert!(d.fallback.is_empty());
        // A full buffer is an input error naming the parameter.
        let (mut d, mut ctx, _) = machine(1);
        write(&mut d, &mut ctx, a, 0b1, 1);
        write(&mut d, &mut ctx, b, (1 << 11) - 1, 2);
        let e = ctx
            .pending_error
            .take()
            .expect("overflow reported")
            .to_string();
        assert!(e.contains("dpc.fallback_buffer_lines"), "{e}");
    }

    fn small_spec(scheme: &str, workload: &str, tx: u64) -> RunSpec {
        let mut s = RunSpec::new("ideal", workload).unwrap();
        s.scheme = scheme.to_string();
        s.params = Params::defaults(&[PARAMS]);
        s.threads = 2;
        s.tx = tx;
        for (k, v) in [
            ("hybrid.dram_cache_bytes", "65536"),
            ("hybrid.dram_cache_ways", "4"),
            ("checkpoint.epoch_cycles", "5000"),
            ("dpc.pool_bytes", "16384"),
            ("dpc.fallback_buffer_lines", "1024"),
            ("nvm.capacity_bytes", "268435456"),
            ("cache.llc_size_bytes", "16384"),
            ("cache.llc_ways", "4"),
            ("cache.l2_size_bytes", "8192"),
            ("cache.l2_ways", "4"),
            ("cache.l1_size_bytes", "4096"),
            ("cache.l1_ways", "4"),
            ("workload.initial_items", "256"),
        ] {
            s.params.set_str(k, v).unwrap();
        }
        s
    }

    fn opts() -> CrashOptions {
        CrashOptions {
            recovery_crashes: 2,
            ..CrashOptions::default()
        }
    }

    #[test]
    fn exhaustive_crashes_recover_the_last_checkpoint_on_every_workload() {
        for w in crate::workloads::names() {
            let tx = if w == "tpcc" { 60 } else { 200 };
            let r = crashtest_checkpoints(&INFO, small_spec("dpc", w, tx), &opts(), &mut |_, _| {})
                .unwrap();
            assert_eq!(r.violations, 0, "{w}: {:?}", r.first_violation);
            assert!(
                r.crash_points_tested > 100,
                "{w}: {}",
                r.crash_points_tested
            );
        }
    }

    #[test]
    fn forced_checkpoints_reclaims_and_fallbacks_are_exercised_and_survive_torn_writes() {
        let spec = small_spec("dpc", "btree", 300);
        let e = crate::engine::run(spec.clone(), &mut |_| {}).unwrap();
        let st: FxHashMap<_, _> = e.scheme.stats().into_iter().collect();
        for k in [
            "forced_checkpoints",
            "reclaims_uncached",
            "reclaims_cached",
            "fallback_lines_written",
        ] {
            assert!(st[k] > 0.0, "{k} = {}", st[k]);
        }
        let o = CrashOptions {
            torn: true,
            ..opts()
        };
        let r = crashtest_checkpoints(&INFO, spec, &o, &mut |_, _| {}).unwrap();
        assert_eq!(r.violations, 0, "{:?}", r.first_violation);
        assert!(r.torn_points_tested > 0);
    }

    /// The planted `dpc.mutant` bugs are crash-tested in tests/ckpt.rs;
    /// here, the native system on the hybrid memory must fail too.
    #[test]
    fn the_native_system_fails_the_checkpoint_oracle() {
        // `ideal` on the hybrid memory: no checkpoints, write-backs land
        // in place.
        let r = crashtest_checkpoints(
            &crate::schemes::ideal::INFO,
            small_spec("ideal", "btree", 300),
            &opts(),
            &mut |_, _| {},
        )
        .unwrap();
        assert!(r.violations > 0, "ideal on the hybrid memory passed");
    }

    #[test]
    fn after_the_final_checkpoint_home_through_the_dpt_equals_the_architectural_image() {
        for scheme in ["dpc", "ideal"] {
            let mut s = small_spec(scheme, "rbtree", 300);
            // Keep the DPT: read home through it.
            s.params.set_str("dpc.drain_at_end", "false").unwrap();
            let e = crate::engine::run(s, &mut |_| {}).unwrap();
            e.check_equivalence().unwrap();
            if scheme == "dpc" {
                assert!(e
                    .scheme
                    .stats()
                    .iter()
                    .any(|&(k, v)| k == "dpt_entries_in_use" && v > 0.0));
            }
        }
        // Draining the pool at the end leaves the final image at home.
        let e = crate::engine::run(small_spec("dpc", "rbtree", 300), &mut |_| {}).unwrap();
        e.check_invariants(e.ctx.nvm.media()).unwrap();
        e.check_equivalence().unwrap();
        // Programs without transactions run too, and report IPC.
        let mut s = small_spec("dpc", "hashmap", 300);
        s.params.set_str("run.transactions", "false").unwrap();
        let e = crate::engine::run(s, &mut |_| {}).unwrap();
        e.check_equivalence().unwrap();
        assert!(e.metrics().ipc > 0.0);
    }
}
