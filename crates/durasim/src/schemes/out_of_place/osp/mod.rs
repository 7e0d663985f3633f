//! OSP: optimized shadow sub-paging after SSP (Ni et al., MICRO 2019), as
//! the HOOP paper's baseline (§IV-A, BASELINES.md).
//!
//! - A page written inside a transaction gets a second physical page (a
//!   shadow slot in the reserved region, with a persistent metadata line
//!   {magic, home page, committed bitmap, version, checksum}). Per line a
//!   *committed* bit says which copy holds the committed version and a
//!   *current* bit which holds the working version; both live with the TLB
//!   entry (a volatile copy is kept for every page).
//! - The first store to a line in a transaction points its current bit at
//!   the non-committed copy; write-backs of the line go there, so they never
//!   touch committed data and need no ordering.
//! - TxEnd flushes the transaction's written lines eagerly to their current
//!   copies, then commits committed <- current for every touched page with
//!   one journal record {version, (slot, home, bitmap)*, checksum}, appended
//!   to the core's circular journal (line-aligned records).
//! - Page metadata lives in the SSP cache in the controller (LRU, shared by
//!   the cores); a committed entry is *dirty* (its only durable copy is the
//!   journal record) until it is written back in place, which happens only
//!   when the entry leaves the cache or before the journal space of its
//!   record is reused.
//!   In-place lines carry the version of the state they hold, so a stale
//!   journal record is never re-applied.
//! - Each core has a two-level TLB (EHOU paper Table I sizes). When a page's
//!   entry leaves the last-level TLB the page is consolidated: committed
//!   lines in the shadow copy are copied home and the bitmap is reset; on a
//!   multi-core machine this remapping costs a TLB shootdown.
//! - Recovery: apply every valid journal record (scanning each core's
//!   journal line by line) in version order to metadata lines older than it (or torn), then
//!   consolidate every page (copy committed shadow lines home) and reset the
//!   bitmaps. It is written as a scan that follows the writes
//!   (`osp/recovery.rs`), which crash verification resumes from point to
//!   point; the registered recovery is the same scan run from scratch.

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::Result;
use crate::mem::lru_order::LruOrder;
use crate::mem::{MemRead, MemWrite};
use crate::schemes::kit::line_index::LineIndex;
use crate::schemes::kit::log::{csum, header_line, line_word, owner_of, MAX_CORES};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Store, Writeback,
};
use crate::types::{line_of, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose};
use rustc_hash::FxHashMap;

mod recovery;

const PAGE: u64 = 4096;

pub static PARAMS: &[ParamSpec] = &[
    p!("osp.shadow_pages", int 1 << 18, "pages", Check::Range(16.0, 268435456.0),
        "modelling choice, see docs/MODEL.md (1 GiB shadow pool, allocated on demand as in SSP; sparse, so unused pages cost nothing)",
        "shadow physical pages available (one per page ever written in a transaction)"),
    p!("osp.journal_bytes_per_core", int 64 << 10, "bytes", Check::PowerOfTwo(4096, 1 << 30),
        "modelling choice, see docs/MODEL.md (a circular journal; one commit record of up to 2728 pages)",
        "per-core circular metadata journal (records of a 64 B header + 24 B per touched page, line-aligned)"),
    p!("osp.ssp_cache_entries_per_core", int 1536, "pages", Check::Range(1.0, 16777216.0),
        "modelling choice, see docs/MODEL.md (no size in SSP or EHOU; the L2-TLB reach of a core, EHOU Table I: 128 sets x 12 ways, since a page leaving the TLB is consolidated anyway)",
        "SSP metadata cache in the controller, in page entries per running core (one shared LRU of entries x threads)"),
    p!("osp.l1_tlb_sets", int 6, "sets", Check::Range(1.0, 65536.0),
        "EHOU paper Table I (L1 TLB: 6 sets, 4 ways)",
        "first-level TLB sets"),
    p!("osp.l1_tlb_ways", int 4, "ways", Check::Range(1.0, 64.0),
        "EHOU paper Table I (L1 TLB: 6 sets, 4 ways)",
        "first-level TLB ways"),
    p!("osp.l2_tlb_sets", int 128, "sets", Check::Range(1.0, 65536.0),
        "EHOU paper Table I (L2 TLB: 128 sets, 12 ways)",
        "last-level TLB sets (eviction from here consolidates the page)"),
    p!("osp.l2_tlb_ways", int 12, "ways", Check::Range(1.0, 64.0),
        "EHOU paper Table I (L2 TLB: 128 sets, 12 ways)",
        "last-level TLB ways"),
    p!("osp.l2_tlb_latency_cycles", int 8, "cycles", Check::Range(0.0, 10000.0),
        "ChampSim default STLB latency (the simulator of the EHOU paper, §IV-A)",
        "extra latency of an access that misses the L1 TLB and hits the L2 TLB"),
    p!("osp.shootdown_cycles", int 5000, "cycles", Check::Range(0.0, 1e9),
        "modelling choice, see docs/MODEL.md (inter-processor-interrupt TLB shootdowns take microseconds; 2 us at 2.5 GHz)",
        "stall of the core whose TLB eviction remaps a page, when more than one core runs"),
    p!("osp.mutant", str "none", &["none", "journal-before-flush", "consolidate-meta-first", "reuse-journal-without-writeback", "journal-scan-stops-at-invalid"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): journal-before-flush = TxEnd persists the journal record before the eager flush of the transaction's lines; consolidate-meta-first = consolidation resets the page's metadata line (bitmap 0) before copying its committed shadow lines home; reuse-journal-without-writeback = a commit record overwrites journal space whose records hold the only durable copy of page metadata without writing that metadata back in place first; journal-scan-stops-at-invalid = recovery's journal parse ends at the first line that starts no valid record (the records after it are lost)"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "osp",
    description: "optimized shadow sub-paging after SSP: two copies per page, per-line current/committed bits in the TLB, journaled commit, consolidation on TLB eviction",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Scan(recovery::new_scan),
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::HOOP),
        tx: 10_000,
        reaches: "no periodic mechanism (consolidation on TLB eviction)",
        needs: None,
    },
};

fn reserved_bytes(p: &Params) -> u64 {
    let n = p.u64("osp.shadow_pages");
    n * PAGE + n * 64 + MAX_CORES * p.u64("osp.journal_bytes_per_core")
}

const META_MAGIC: u64 = 0x5353_504d_4554_4131; // "SSPMETA1"
const JOURNAL_MAGIC: u64 = 0x5353_504a_524e_4c31; // "SSPJRNL1"
/// Journal entry: slot, home page, new committed bitmap.
const JOURNAL_ENTRY_BYTES: u64 = 24;

#[derive(Clone, Copy, Debug)]
struct Geometry {
    shadow_base: Addr,
    meta_base: Addr,
    journal_base: Addr,
    journal_bytes: u64,
    slots: u64,
}

impl Geometry {
    fn new(p: &Params, layout: &Layout) -> Self {
        let n = p.u64("osp.shadow_pages");
        let shadow_base = layout.reserved_base;
        let meta_base = shadow_base + n * PAGE;
        Geometry {
            shadow_base,
            meta_base,
            journal_base: meta_base + (n * 64).next_multiple_of(PAGE),
            journal_bytes: p.u64("osp.journal_bytes_per_core"),
            slots: n,
        }
    }
    fn shadow_line(&self, slot: u32, line_in_page: u64) -> Addr {
        self.shadow_base + slot as u64 * PAGE + line_in_page * 64
    }
    fn meta_addr(&self, slot: u32) -> Addr {
        self.meta_base + slot as u64 * 64
    }
    fn journal_addr(&self, core: usize) -> Addr {
        self.journal_base + core as u64 * self.journal_bytes
    }
    fn max_journal_pages(&self) -> usize {
        ((self.journal_bytes - 64) / JOURNAL_ENTRY_BYTES) as usize
    }
}

/// Bytes a record of `pages` entries takes in the journal (line-aligned).
fn record_bytes(pages: usize) -> u64 {
    64 + (pages as u64 * JOURNAL_ENTRY_BYTES).next_multiple_of(64)
}

/// Parse a journal record at `a`: (version, body) if its header and
/// checksum are valid.
fn parse_record(
    img: &dyn MemRead,
    g: &Geometry,
    a: Addr,
    read: &mut u64,
) -> Option<(u64, Vec<u8>)> {
    let h = img.read_line(a);
    *read += 1;
    let w = [line_word(&h, 0), line_word(&h, 1), line_word(&h, 2)];
    if w[0] != JOURNAL_MAGIC || w[2] as usize > g.max_journal_pages() {
        return None;
    }
    let n = w[2] as usize;
    let mut body = vec![0u8; n * JOURNAL_ENTRY_BYTES as usize];
    img.read_bytes(a + 64, &mut body);
    *read += (body.len() as u64).div_ceil(64);
    (line_word(&h, 3) == csum(&w, &body)).then_some((w[1], body))
}

fn meta_line(home_page: Addr, bitmap: u64, version: u64) -> LineData {
    let w = [META_MAGIC, home_page, bitmap, version];
    header_line(&[w[0], w[1], w[2], w[3], csum(&w, &[])])
}

/// Parse a metadata line: (home page, bitmap, version).
fn parse_meta(l: &LineData) -> Option<(Addr, u64, u64)> {
    let w = [
        line_word(l, 0),
        line_word(l, 1),
        line_word(l, 2),
        line_word(l, 3),
    ];
    (w[0] == META_MAGIC && line_word(l, 4) == csum(&w, &[])).then_some((w[1], w[2], w[3]))
}

/// A set-associative LRU TLB of page numbers.
struct Tlb {
    ways: usize,
    /// `sets` as a divisor by multiplication (no hardware divide per miss
    /// of `last`: the L1 TLB's 6 sets are not a power of two).
    set_of: FastMod,
    /// (page, last use) per entry, set by set: a set's scan reads one run
    /// of memory.
    entries: Vec<(u64, u64)>,
    clock: u64,
    /// The entry of the last access: consecutive accesses mostly touch one
    /// page, and a page sits in at most one entry, so checking it first
    /// finds the same entry without the set index and scan.
    last: usize,
}

/// `x % d` for a fixed `d` by Lemire's method (exact for `x` and `d` below
/// 2^32); larger `x` falls back to the divide.
#[derive(Clone, Copy)]
struct FastMod {
    d: u64,
    m: u64,
}

impl FastMod {
    fn new(d: usize) -> Self {
        let d = d as u64;
        assert!((1..1 << 32).contains(&d), "a divisor below 2^32");
        FastMod {
            d,
            m: (u64::MAX / d).wrapping_add(1),
        }
    }

    #[inline(always)]
    fn rem(self, x: u64) -> u64 {
        if x >> 32 != 0 {
            return x % self.d;
        }
        let low = self.m.wrapping_mul(x);
        ((u128::from(low) * u128::from(self.d)) >> 64) as u64
    }
}

impl Tlb {
    fn new(sets: usize, ways: usize) -> Self {
        Tlb {
            ways,
            set_of: FastMod::new(sets),
            entries: vec![(u64::MAX, 0); sets * ways],
            clock: 0,
            last: 0,
        }
    }
    /// Look `page` up; on a miss insert it. Returns (hit, evicted page).
    #[inline]
    fn access(&mut self, page: u64) -> (bool, Option<u64>) {
        if self.access_last(page) {
            return (true, None);
        }
        self.access_set(page)
    }

    /// The first step of [`Tlb::access`]: count the access and hit if
    /// `page` is the last entry's; on false, [`Tlb::access_set`] ends it.
    #[inline(always)]
    fn access_last(&mut self, page: u64) -> bool {
        self.clock += 1;
        let e = &mut self.entries[self.last];
        if e.0 == page {
            e.1 = self.clock;
            return true;
        }
        false
    }

    #[inline(never)]
    fn access_set(&mut self, page: u64) -> (bool, Option<u64>) {
        let base = self.set_of.rem(page) as usize * self.ways;
        let set = &mut self.entries[base..base + self.ways];
        if let Some(i) = set.iter().position(|e| e.0 == page) {
            set[i].1 = self.clock;
            self.last = base + i;
            return (true, None);
        }
        // An empty way if any, else the least recently used (the first
        // of equals, as the entries are scanned in order).
        let v = set
            .iter()
            .position(|e| e.0 == u64::MAX)
            .unwrap_or_else(|| (0..set.len()).min_by_key(|&i| set[i].1).unwrap());
        let old = set[v].0;
        set[v] = (page, self.clock);
        self.last = base + v;
        (false, (old != u64::MAX).then_some(old))
    }
}

#[derive(Clone, Copy)]
struct PageState {
    slot: u32,
    committed: u64,
    current: u64,
    /// Lines with a transactional write not yet committed.
    inflight: u64,
    /// Version under which `committed` became durable.
    version: u64,
}

/// No journal record holds a slot's only durable copy.
const CLEAN: u64 = 0;

struct TxLine {
    addr: Addr,
    data: LineData,
    /// The current copy holds `data` (written back since the last store).
    flushed: bool,
}

#[derive(Default)]
struct CoreState {
    txid: u32,
    in_tx: bool,
    lines: Vec<TxLine>,
    index: LineIndex,
    /// Pages touched by this transaction (home page addresses).
    pages: Vec<Addr>,
    /// Pages whose consolidation waits for this core's commit.
    deferred: Vec<Addr>,
    /// Next free byte of the core's circular journal.
    journal_head: u64,
    /// Live records in journal order: (offset, bytes, version, pages).
    records: std::collections::VecDeque<(u64, u64, u64, Vec<Addr>)>,
    /// Page lists of dead records, reused (no allocation per commit).
    spare: Vec<Vec<Addr>>,
}

struct Osp {
    g: Geometry,
    pages: FxHashMap<Addr, PageState>,
    next_slot: u32,
    next_txid: u32,
    /// Metadata versions, assigned in persist order (commits and
    /// consolidations), so replaying a journal never undoes a newer state.
    next_version: u64,
    cores: Vec<CoreState>,
    l1: Vec<Tlb>,
    l2: Vec<Tlb>,
    l2_latency: Cycle,
    shootdown: Cycle,
    multicore: bool,
    flush_latency: Cycle,
    journal_buf: Vec<u8>,
    /// SSP cache: an LRU list over shadow slots (head = most recent).
    cache_cap: usize,
    cache_len: usize,
    lru: LruOrder,
    in_cache: Vec<bool>,
    slot_page: Vec<Addr>,
    /// Per slot: the version of the journal record holding the only durable
    /// copy of its committed bitmap, or CLEAN.
    dirty_rec: Vec<u64>,
    s_l1_misses: u64,
    s_l2_misses: u64,
    s_consolidations: u64,
    s_consolidated_lines: u64,
    s_deferred: u64,
    s_shootdowns: u64,
    s_flushed: u64,
    s_journal_bytes: u64,
    s_meta_writes: u64,
    s_dropped_clean: u64,
    s_cache_hits: u64,
    s_cache_misses: u64,
    s_evict_writebacks: u64,
    s_reuse_writebacks: u64,
    /// Of the PM write overhead, the bytes written by `finish`.
    s_overhead_end: u64,
    /// Test-only planted bug (`osp.mutant`).
    mutant_journal_first: bool,
    mutant_meta_first: bool,
    mutant_reuse_unsaved: bool,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    let t = layout.threads;
    let mk = |s: &str, w: &str| Tlb::new(p.usize(s), p.usize(w));
    Ok(Box::new(Osp {
        g: Geometry::new(p, layout),
        pages: FxHashMap::default(),
        next_slot: 0,
        next_txid: 1,
        next_version: 1,
        cores: (0..t).map(|_| CoreState::default()).collect(),
        l1: (0..t)
            .map(|_| mk("osp.l1_tlb_sets", "osp.l1_tlb_ways"))
            .collect(),
        l2: (0..t)
            .map(|_| mk("osp.l2_tlb_sets", "osp.l2_tlb_ways"))
            .collect(),
        l2_latency: p.u64("osp.l2_tlb_latency_cycles"),
        shootdown: p.u64("osp.shootdown_cycles"),
        multicore: t > 1,
        flush_latency: p.u64("cache.llc_latency_cycles"),
        journal_buf: Vec::new(),
        cache_cap: p.usize("osp.ssp_cache_entries_per_core") * t,
        cache_len: 0,
        lru: LruOrder::default(),
        in_cache: Vec::new(),
        slot_page: Vec::new(),
        dirty_rec: Vec::new(),
        s_l1_misses: 0,
        s_l2_misses: 0,
        s_consolidations: 0,
        s_consolidated_lines: 0,
        s_deferred: 0,
        s_shootdowns: 0,
        s_flushed: 0,
        s_journal_bytes: 0,
        s_meta_writes: 0,
        s_dropped_clean: 0,
        s_cache_hits: 0,
        s_cache_misses: 0,
        s_evict_writebacks: 0,
        s_reuse_writebacks: 0,
        s_overhead_end: 0,
        mutant_journal_first: p.str("osp.mutant") == "journal-before-flush",
        mutant_meta_first: p.str("osp.mutant") == "consolidate-meta-first",
        mutant_reuse_unsaved: p.str("osp.mutant") == "reuse-journal-without-writeback",
    }))
}

/// The recovery registered for OSP: [`recovery::new_scan`] from scratch
/// (the scan crash verification resumes; one parsing code).
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(recovery::new_scan(p, layout), img, p)
}

impl Osp {
    /// EHOU §IV-B: PM writes not issued by the CPU = TLB consolidations +
    /// metadata journaling (journal records and in-place metadata lines).
    fn overhead_bytes(&self) -> u64 {
        self.s_consolidated_lines * 64 + self.s_journal_bytes + self.s_meta_writes * 64
    }

    /// Physical address of a line's working (current) copy: its shadow
    /// line if the page's current bitmap has the line's bit, else home.
    #[inline]
    fn current_phys(&self, line: Addr) -> Addr {
        match self.pages.get(&(line & !(PAGE - 1))) {
            Some(ps) if ps.current >> ((line % PAGE) / 64) & 1 == 1 => {
                self.g.shadow_line(ps.slot, (line % PAGE) / 64)
            }
            _ => line,
        }
    }

    /// Write a slot's committed state in place; it is clean afterwards.
    fn write_back(&mut self, ctx: &mut MemCtx, slot: u32, now: Cycle) -> Cycle {
        let page = self.slot_page[slot as usize];
        let ps = self.pages[&page];
        self.dirty_rec[slot as usize] = CLEAN;
        self.s_meta_writes += 1;
        ctx.nvm.write(
            self.g.meta_addr(slot),
            &meta_line(page, ps.committed, ps.version),
            Purpose::Metadata,
            now,
        )
    }

    /// Look a slot's entry up in the SSP cache, inserting it on a miss; the
    /// least recently used entry leaves (written back in place if dirty).
    /// Returns whether it hit.
    fn cache_touch(&mut self, ctx: &mut MemCtx, slot: u32, now: Cycle) -> bool {
        if self.in_cache[slot as usize] {
            self.lru.touch(slot);
            return true;
        }
        if self.cache_len == self.cache_cap {
            let victim = self.lru.tail();
            self.lru.unlink(victim);
            self.in_cache[victim as usize] = false;
            self.cache_len -= 1;
            if self.dirty_rec[victim as usize] != CLEAN {
                self.write_back(ctx, victim, now);
                self.s_evict_writebacks += 1;
            }
        }
        self.in_cache[slot as usize] = true;
        self.cache_len += 1;
        self.lru.push_front(slot);
        false
    }

    /// Write the transaction's lines not yet written back to their working
    /// copies; returns when the last is persisted.
    fn eager_flush(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let arrive = now + self.flush_latency;
        let mut done = now;
        let n = self.cores[core].lines.len();
        for k in 0..n {
            let tl = &self.cores[core].lines[k];
            if tl.flushed {
                continue;
            }
            let (a, d) = (self.current_phys(tl.addr), tl.data);
            done = done.max(
                ctx.nvm
                    .write(a, &d, Purpose::WriteBack, arrive + k as Cycle),
            );
            self.s_flushed += 1;
        }
        done
    }

    /// Copy a page's committed shadow lines home and reset its bitmap.
    /// [`Osp::consolidate_page`] as the "consolidation" recovery path.
    fn consolidate(&mut self, ctx: &mut MemCtx, page: Addr, now: Cycle) -> Cycle {
        let p = ctx.nvm.persist_log.path_start();
        let t = self.consolidate_page(ctx, page, now);
        ctx.nvm.persist_log.path_done("consolidation", p);
        t
    }

    fn consolidate_page(&mut self, ctx: &mut MemCtx, page: Addr, now: Cycle) -> Cycle {
        let Some(ps) = self.pages.get(&page).copied() else {
            return now;
        };
        if ps.committed == 0 {
            return now;
        }
        let v = self.next_version;
        self.next_version += 1;
        let mut done = now;
        if self.mutant_meta_first {
            done = ctx.nvm.write(
                self.g.meta_addr(ps.slot),
                &meta_line(page, 0, v),
                Purpose::Metadata,
                now,
            );
        }
        let mut buf = [0u8; 64];
        for i in 0..64u64 {
            if ps.committed >> i & 1 == 1 {
                let r = ctx
                    .nvm
                    .read(self.g.shadow_line(ps.slot, i), &mut buf, Purpose::Gc, now);
                done = done.max(ctx.nvm.write(page + i * 64, &buf, Purpose::Gc, r));
                self.s_consolidated_lines += 1;
            }
        }
        // The bitmap is reset only once the lines are home: before, it is
        // what points recovery at the committed shadow copies.
        if !self.mutant_meta_first {
            done = ctx.nvm.write(
                self.g.meta_addr(ps.slot),
                &meta_line(page, 0, v),
                Purpose::Metadata,
                done,
            );
        }
        self.s_meta_writes += 1;
        self.dirty_rec[ps.slot as usize] = CLEAN;
        let e = self.pages.get_mut(&page).unwrap();
        e.committed = 0;
        e.current = 0;
        e.version = v;
        self.s_consolidations += 1;
        done
    }
}

impl Osp {
    /// The rest of an access whose page is not the L1 TLB's last entry:
    /// out of line, so the common hit needs no stack frame.
    #[inline(never)]
    fn l1_tlb_miss(&mut self, ctx: &mut MemCtx, core: CoreId, page: u64, now: Cycle) -> Cycle {
        if self.l1[core].access_set(page).0 {
            return now;
        }
        self.s_l1_misses += 1;
        let (hit, victim) = self.l2[core].access(page);
        if hit {
            return now + self.l2_latency;
        }
        self.s_l2_misses += 1;
        let mut t = now + self.l2_latency;
        // The fill brings the page's bitmaps from the SSP cache, or from
        // its metadata line on a cache miss.
        if let Some(slot) = self.pages.get(&(page * PAGE)).map(|ps| ps.slot) {
            if self.cache_touch(ctx, slot, t) {
                self.s_cache_hits += 1;
            } else {
                self.s_cache_misses += 1;
                let mut m = [0u8; 64];
                t = ctx
                    .nvm
                    .read(self.g.meta_addr(slot), &mut m, Purpose::Metadata, t);
            }
        }
        if let Some(v) = victim {
            let vpage = v * PAGE;
            if let Some(ps) = self.pages.get(&vpage) {
                if ps.committed != 0 {
                    if ps.inflight != 0 {
                        // A running transaction still writes to this page.
                        let owner = owner_of(&ctx.layout, vpage);
                        self.cores[owner].deferred.push(vpage);
                        self.s_deferred += 1;
                    } else {
                        self.consolidate(ctx, vpage, t);
                        if self.multicore {
                            self.s_shootdowns += 1;
                            t += self.shootdown;
                        }
                    }
                }
            }
        }
        t
    }
}

impl Scheme for Osp {
    fn wants_access_hook(&self) -> bool {
        true
    }

    fn access(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        addr: Addr,
        _is_write: bool,
        now: Cycle,
    ) -> Cycle {
        let page = addr / PAGE;
        if self.l1[core].access_last(page) {
            return now;
        }
        self.l1_tlb_miss(ctx, core, page, now)
    }

    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.txid = self.next_txid;
        self.next_txid += 1;
        c.in_tx = true;
        c.lines.clear();
        c.index.clear();
        c.pages.clear();
        now
    }

    fn store(&mut self, ctx: &mut MemCtx, ev: Store, ext: &mut LineExt) -> Cycle {
        let Store {
            core,
            addr,
            new,
            in_tx,
            now,
            ..
        } = ev;
        if !in_tx {
            return now;
        }
        let line = line_of(addr);
        let page = line & !(PAGE - 1);
        let bit = 1u64 << ((line % PAGE) / 64);
        let txid = self.cores[core].txid;
        if let Some(i) = self.cores[core].index.find(line) {
            ext.tx = true;
            ext.txid = txid;
            ext.word_mask |= 1 << word_index(addr);
            let tl = &mut self.cores[core].lines[i];
            write_word(&mut tl.data, word_index(addr), new);
            tl.flushed = false;
            return now;
        }
        if !self.pages.contains_key(&page) {
            // Allocate the shadow page; its metadata line is persisted
            // before any journal record can name it.
            let slot = self.next_slot;
            if u64::from(slot) >= self.g.slots {
                // Shadow pool exhausted: the store stays untracked (the
                // line acts as a non-transactional one) and the run ends
                // with this error at TxEnd.
                ctx.input_error(format!(
                    "osp.shadow_pages={} is too small: transactions wrote more than {} distinct pages (each keeps its shadow page for the rest of the run); raise osp.shadow_pages (each reserves 4 KiB + 64 B of NVM) or lower tx",
                    self.g.slots,
                    self.g.slots,
                ));
                return now;
            }
            self.next_slot += 1;
            ctx.nvm.write(
                self.g.meta_addr(slot),
                &meta_line(page, 0, 0),
                Purpose::Metadata,
                now,
            );
            self.s_meta_writes += 1;
            self.pages.insert(
                page,
                PageState {
                    slot,
                    committed: 0,
                    current: 0,
                    inflight: 0,
                    version: 0,
                },
            );
            self.slot_page.push(page);
            self.dirty_rec.push(CLEAN);
            self.in_cache.push(false);
            self.lru.add_entry();
            self.cache_touch(ctx, slot, now);
        }
        ext.tx = true;
        ext.txid = txid;
        ext.word_mask |= 1 << word_index(addr);
        // The working copy is the non-committed one; it starts from the
        // committed bytes (the cache line already holds them).
        let ps = self.pages.get_mut(&page).unwrap();
        let committed_at = if ps.committed & bit != 0 {
            self.g.shadow_line(ps.slot, (line % PAGE) / 64)
        } else {
            line
        };
        let mut base = [0u8; 64];
        ctx.nvm.peek(committed_at, &mut base);
        if ps.inflight == 0 {
            self.cores[core].pages.push(page);
        }
        ps.inflight |= bit;
        ps.current ^= bit;
        let c = &mut self.cores[core];
        c.index.push(line);
        write_word(&mut base, word_index(addr), new);
        c.lines.push(TxLine {
            addr: line,
            data: base,
            flushed: false,
        });
        now
    }

    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut LineExt,
    ) -> (Cycle, bool) {
        let a = self.current_phys(line_addr);
        (ctx.nvm.read(a, out, Purpose::Demand, now), false)
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            ext,
            now,
            ..
        } = ev;
        let owner = owner_of(&ctx.layout, line_addr);
        let c = &self.cores[owner];
        if ext.txid != 0 && !(c.in_tx && ext.txid == c.txid) {
            // Flushed at its transaction's commit: clean.
            self.s_dropped_clean += 1;
            return now;
        }
        if ext.txid != 0 {
            let i = c.index.get(line_addr).expect("in the write set");
            self.cores[owner].lines[i].flushed = true;
        }
        // The working copy is never the committed one: no ordering needed.
        let a = self.current_phys(line_addr);
        ctx.nvm.write(a, data, Purpose::WriteBack, now)
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].in_tx = false;
        if self.cores[core].lines.is_empty() {
            return now;
        }
        // Eager flush of the written lines to their working copies (the
        // mutant flushes only after the journal record).
        let done = if self.mutant_journal_first {
            now
        } else {
            self.eager_flush(ctx, core, now)
        };
        // Commit: one journal record with every touched page's new bitmap.
        let c = &mut self.cores[core];
        if c.pages.len() > self.g.max_journal_pages() {
            // The journal record would overrun this core's journal: commit
            // without one; the run ends with this error after TxEnd.
            ctx.input_error(format!(
                "osp.journal_bytes_per_core={} holds commit records of at most {} pages, but a transaction on core {core} wrote {} pages; {}",
                self.g.journal_bytes,
                self.g.max_journal_pages(),
                c.pages.len(),
                crate::schemes::raise_advice(
                    PARAMS,
                    "osp.journal_bytes_per_core",
                    64 + c.pages.len() as u64 * JOURNAL_ENTRY_BYTES
                )
            ));
            c.pages.clear();
        }
        // Records whose journal space this one reuses may hold the only
        // durable copy of entries no later commit named: write those back in
        // place first. Wrapping skips the journal's tail, reused as well.
        let len = record_bytes(c.pages.len());
        let mut at = c.journal_head;
        let mut end = at + len;
        if end > self.g.journal_bytes {
            at = 0;
            end = len;
        }
        let wrapped = at < c.journal_head;
        let mut start = done;
        loop {
            let c = &mut self.cores[core];
            let Some(&(off, _, v, _)) = c.records.front() else {
                break;
            };
            let reused = if wrapped {
                off >= c.journal_head || off < end
            } else {
                off < end && off >= at
            };
            if !reused {
                break;
            }
            let (_, _, _, mut pages) = c.records.pop_front().unwrap();
            for &page in &pages {
                let slot = self.pages[&page].slot;
                if self.dirty_rec[slot as usize] == v && !self.mutant_reuse_unsaved {
                    start = start.max(self.write_back(ctx, slot, done));
                    self.s_reuse_writebacks += 1;
                }
            }
            pages.clear();
            self.cores[core].spare.push(pages);
        }
        self.cores[core].journal_head = end;
        let mut reused = self.cores[core].spare.pop().unwrap_or_default();
        self.journal_buf.clear();
        let c = &self.cores[core];
        for &page in &c.pages {
            let ps = &self.pages[&page];
            self.journal_buf
                .extend_from_slice(&(ps.slot as u64).to_le_bytes());
            self.journal_buf.extend_from_slice(&page.to_le_bytes());
            self.journal_buf
                .extend_from_slice(&ps.current.to_le_bytes());
        }
        let version = self.next_version;
        self.next_version += 1;
        let w = [JOURNAL_MAGIC, version, c.pages.len() as u64];
        let hdr = header_line(&[w[0], w[1], w[2], csum(&w, &self.journal_buf)]);
        let ja = self.g.journal_addr(core) + at;
        let mut t = ctx
            .nvm
            .write(ja + 64, &self.journal_buf, Purpose::Metadata, start);
        t = t.max(ctx.nvm.write(ja, &hdr, Purpose::Metadata, start));
        self.s_journal_bytes += 64 + self.journal_buf.len() as u64;
        if self.mutant_journal_first {
            t = t.max(self.eager_flush(ctx, core, t));
        }
        let commit_at = t;
        // The new bitmaps live in the SSP cache, durable in this record
        // until written back.
        let pages = std::mem::take(&mut self.cores[core].pages);
        for &page in &pages {
            let ps = self.pages.get_mut(&page).unwrap();
            ps.committed = ps.current;
            ps.inflight = 0;
            ps.version = version;
            let slot = ps.slot;
            self.dirty_rec[slot as usize] = version;
            reused.push(page);
            self.cache_touch(ctx, slot, commit_at);
        }
        self.cores[core].pages = pages;
        self.cores[core]
            .records
            .push_back((at, len, version, reused));
        let deferred = std::mem::take(&mut self.cores[core].deferred);
        for &page in &deferred {
            self.consolidate(ctx, page, commit_at);
        }
        self.cores[core].deferred = deferred;
        self.cores[core].deferred.clear();
        commit_at
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let before = self.overhead_bytes();
        let mut pages: Vec<Addr> = self.pages.keys().copied().collect();
        pages.sort_unstable();
        let mut t = now;
        for p in pages {
            t = t.max(self.consolidate(ctx, p, now));
        }
        self.s_overhead_end += self.overhead_bytes() - before;
        t
    }

    fn background_kind(&self) -> &'static str {
        "consolidation"
    }

    fn recovery_paths(&self) -> &'static [&'static str] {
        &["consolidation"]
    }

    fn stats(&self) -> SchemeStats {
        vec![
            ("l1_tlb_misses", self.s_l1_misses as f64),
            ("l2_tlb_misses", self.s_l2_misses as f64),
            ("consolidations", self.s_consolidations as f64),
            ("consolidated_lines", self.s_consolidated_lines as f64),
            ("deferred_consolidations", self.s_deferred as f64),
            ("tlb_shootdowns", self.s_shootdowns as f64),
            ("eager_flushed_lines", self.s_flushed as f64),
            ("journal_bytes", self.s_journal_bytes as f64),
            ("metadata_line_writes", self.s_meta_writes as f64),
            ("shadow_pages_allocated", self.next_slot as f64),
            ("clean_evictions_dropped", self.s_dropped_clean as f64),
            ("ssp_cache_hits", self.s_cache_hits as f64),
            ("ssp_cache_misses", self.s_cache_misses as f64),
            (
                "ssp_cache_eviction_writebacks",
                self.s_evict_writebacks as f64,
            ),
            ("journal_reuse_writebacks", self.s_reuse_writebacks as f64),
            (
                "consolidation_bytes",
                (self.s_consolidated_lines * 64) as f64,
            ),
            ("pm_write_overhead_bytes", self.overhead_bytes() as f64),
            // Of it, the final consolidation of every shadowed page
            // (`finish`), as EHOU's: the rest is the steady state.
            (
                "pm_write_overhead_bytes_end_of_run",
                self.s_overhead_end as f64,
            ),
        ]
    }

    fn reset_stats(&mut self) {
        self.s_l1_misses = 0;
        self.s_l2_misses = 0;
        self.s_consolidations = 0;
        self.s_consolidated_lines = 0;
        self.s_deferred = 0;
        self.s_shootdowns = 0;
        self.s_flushed = 0;
        self.s_journal_bytes = 0;
        self.s_meta_writes = 0;
        self.s_dropped_clean = 0;
        self.s_cache_hits = 0;
        self.s_cache_misses = 0;
        self.s_evict_writebacks = 0;
        self.s_reuse_writebacks = 0;
        self.s_overhead_end = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TLB as first written: a divide for the set, one array of pages
    /// and one of last-use clocks. The model to compare against.
    struct RefTlb {
        sets: usize,
        ways: usize,
        pages: Vec<u64>,
        lru: Vec<u64>,
        clock: u64,
    }

    impl RefTlb {
        fn access(&mut self, page: u64) -> (bool, Option<u64>) {
            self.clock += 1;
            let base = (page % self.sets as u64) as usize * self.ways;
            let set = base..base + self.ways;
            if let Some(i) = set.clone().find(|&i| self.pages[i] == page) {
                self.lru[i] = self.clock;
                return (true, None);
            }
            let v = set
                .clone()
                .find(|&i| self.pages[i] == u64::MAX)
                .unwrap_or_else(|| set.min_by_key(|&i| self.lru[i]).unwrap());
            let old = self.pages[v];
            self.pages[v] = page;
            self.lru[v] = self.clock;
            (false, (old != u64::MAX).then_some(old))
        }
    }

    proptest::proptest! {
        /// The multiply-and-shift remainder is `%`, for divisors up to the
        /// TLB's 65,536 sets and any page number (above 2^32 it divides).
        #[test]
        fn fast_mod_is_the_remainder(d in 1usize..=65536, x: u64, small in 0u64..1 << 32) {
            let f = FastMod::new(d);
            proptest::prop_assert_eq!(f.rem(x), x % d as u64);
            proptest::prop_assert_eq!(f.rem(small), small % d as u64);
        }

        /// Hits, misses and victims equal the plain set-associative LRU's on
        /// page streams with reuse (few distinct pages) and conflicts.
        #[test]
        fn tlb_matches_the_plain_lru(
            sets in 1usize..9,
            ways in 1usize..5,
            stream in proptest::collection::vec(0u64..40, 1..400),
        ) {
            let mut t = Tlb::new(sets, ways);
            let mut r = RefTlb {
                sets,
                ways,
                pages: vec![u64::MAX; sets * ways],
                lru: vec![0; sets * ways],
                clock: 0,
            };
            for &p in &stream {
                proptest::prop_assert_eq!(t.access(p), r.access(p));
            }
        }
    }
    use crate::engine::Engine;

    fn run(threads: usize, tx: u64, extra: &[(&str, &str)]) -> Engine {
        // One-entry TLBs so consolidations happen in short runs.
        let mut all = vec![
            ("osp.l1_tlb_sets", "1"),
            ("osp.l1_tlb_ways", "1"),
            ("osp.l2_tlb_sets", "1"),
            ("osp.l2_tlb_ways", "1"),
        ];
        all.extend_from_slice(extra);
        crate::schemes::small_cache_run("osp", threads, tx, &all)
    }

    /// Rule: no data write ever lands on the copy of a line that the
    /// persisted metadata marks committed (shadow writes need bit 0, home
    /// writes need bit 1 — consolidation copies home while the bit is 1).
    /// The committed state of a page is the newest of its in-place line and
    /// the journal records naming it.
    #[test]
    fn writes_never_touch_the_committed_copy() {
        for cache in ["1", "2", "1536"] {
            writes_respect_committed_state(cache);
        }
    }

    fn writes_respect_committed_state(cache_entries: &str) {
        let e = run(2, 80, &[("osp.ssp_cache_entries_per_core", cache_entries)]);
        let g = Geometry::new(&e.params, &e.ctx.layout);
        let pl = &e.ctx.nvm.persist_log;
        // slot -> (page, bitmap, version)
        let mut by_slot: FxHashMap<u64, (Addr, u64, u64)> = FxHashMap::default();
        let mut by_page: FxHashMap<Addr, u64> = FxHashMap::default();
        let mut journal: Vec<u8> = Vec::new();
        let (mut home_w, mut shadow_w, mut records) = (0, 0, 0);
        let newest =
            |by_slot: &mut FxHashMap<u64, (Addr, u64, u64)>, slot, st: (Addr, u64, u64)| {
                if by_slot.get(&slot).is_none_or(|o| o.2 <= st.2) {
                    by_slot.insert(slot, st);
                }
            };
        for ev in pl.events() {
            let d = pl.data(ev);
            if ev.addr >= g.meta_base && ev.addr < g.journal_base {
                let slot = (ev.addr - g.meta_base) / 64;
                let l: LineData = d.try_into().unwrap();
                let (page, bitmap, v) = parse_meta(&l).unwrap();
                newest(&mut by_slot, slot, (page, bitmap, v));
                by_page.insert(page, slot);
            } else if ev.addr >= g.journal_base {
                // Keep an image of the journals; a header line whose
                // checksum matches the body already written commits.
                let rel = (ev.addr - g.journal_base) as usize;
                if journal.len() < rel + d.len() {
                    journal.resize(rel + d.len(), 0);
                }
                journal[rel..rel + d.len()].copy_from_slice(d);
                if d.len() != 64 || !rel.is_multiple_of(64) {
                    continue;
                }
                let l: LineData = d.try_into().unwrap();
                let w = [line_word(&l, 0), line_word(&l, 1), line_word(&l, 2)];
                if w[0] != JOURNAL_MAGIC {
                    continue;
                }
                let n = (w[2] * JOURNAL_ENTRY_BYTES) as usize;
                if journal.len() < rel + 64 + n {
                    journal.resize(rel + 64 + n, 0);
                }
                let body = &journal[rel + 64..rel + 64 + n];
                assert_eq!(line_word(&l, 3), csum(&w, body));
                records += 1;
                for en in body.chunks(JOURNAL_ENTRY_BYTES as usize) {
                    let word =
                        |i: usize| u64::from_le_bytes(en[i * 8..i * 8 + 8].try_into().unwrap());
                    newest(&mut by_slot, word(0), (word(1), word(2), w[1]));
                }
            } else if ev.addr >= g.shadow_base && ev.addr < g.meta_base {
                let slot = (ev.addr - g.shadow_base) / PAGE;
                let i = (ev.addr % PAGE) / 64;
                let (_, bitmap, _) = by_slot[&slot];
                assert_eq!(
                    bitmap >> i & 1,
                    0,
                    "write to committed shadow line {:#x}",
                    ev.addr
                );
                shadow_w += 1;
            } else if ev.addr < e.ctx.layout.home_limit {
                let page = ev.addr & !(PAGE - 1);
                let slot = by_page
                    .get(&page)
                    .expect("home write to a page without metadata");
                let (_, bitmap, _) = by_slot[slot];
                let i = (ev.addr % PAGE) / 64;
                assert_eq!(
                    bitmap >> i & 1,
                    1,
                    "write to committed home line {:#x}",
                    ev.addr
                );
                home_w += 1;
            }
        }
        assert!(
            home_w > 50 && shadow_w > 50 && records > 50,
            "{home_w} {shadow_w} {records}"
        );
    }

    fn meta_writes(e: &Engine) -> f64 {
        let s = e.scheme.stats();
        s.iter().find(|x| x.0 == "metadata_line_writes").unwrap().1
    }

    /// Rule: with the SSP cache, commits are durable through the journal and
    /// metadata lines are written in place only when an entry leaves the
    /// cache or its record is reused; a one-entry cache writes back nearly
    /// every committed entry.
    #[test]
    fn ssp_cache_cuts_in_place_metadata_writes() {
        // Default TLBs, so consolidations do not reset the entries.
        let big = [
            ("osp.l1_tlb_sets", "6"),
            ("osp.l1_tlb_ways", "4"),
            ("osp.l2_tlb_sets", "128"),
            ("osp.l2_tlb_ways", "12"),
        ];
        let mut one = big.to_vec();
        one.push(("osp.ssp_cache_entries_per_core", "1"));
        let small = run(2, 200, &one);
        let dflt = run(2, 200, &big);
        let (ms, md) = (meta_writes(&small), meta_writes(&dflt));
        assert!(ms > 3.0 * md && ms > 200.0, "one entry {ms}, default {md}");
    }

    /// Rule: TxEnd acknowledges after the journal record (body, then
    /// header) is persisted, and every written line is flushed before it.
    #[test]
    fn ack_follows_flush_and_journal() {
        let e = run(1, 30, &[]);
        let g = Geometry::new(&e.params, &e.ctx.layout);
        let pl = &e.ctx.nvm.persist_log;
        let h = e.history.as_ref().unwrap();
        for (i, r) in h.per_thread[0].iter().enumerate() {
            let evs = &pl.events()[..r.ack_persist_seq as usize];
            let headers: Vec<usize> = evs
                .iter()
                .enumerate()
                .filter(|(_, ev)| {
                    let (a, d) = (ev.addr, pl.data(ev));
                    a >= g.journal_addr(0)
                        && a < g.journal_addr(1)
                        && d.len() == 64
                        && u64::from_le_bytes(d[..8].try_into().unwrap()) == JOURNAL_MAGIC
                })
                .map(|(k, _)| k)
                .collect();
            assert_eq!(
                headers.len(),
                i + 1,
                "tx {i} acked before its journal record"
            );
            // A crash right after the journal header recovers the
            // transaction: its lines were flushed before the header.
            let last = *headers.last().unwrap();
            let mut img = h.initial_media.clone();
            for ev in &evs[..=last] {
                img.write_bytes(ev.addr, pl.data(ev));
            }
            recover(&mut img, &e.params, &e.ctx.layout).unwrap();
            for &(a, v) in &h.writes[r.writes.clone()] {
                assert_eq!(
                    crate::mem::MemRead::read_u64(&img, a),
                    v,
                    "tx {i}: {a:#x} not durable at commit"
                );
            }
        }
    }
}
