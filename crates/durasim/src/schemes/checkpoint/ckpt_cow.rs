//! Page-granularity copy-on-write checkpoints (`ckpt-cow`; the dual-page
//! checkpointing paper §2.2 and §5.1.2 "CoW") on the hybrid memory, with an
//! ideal, unbounded mapping table.
//!
//! A logical page's checkpoint lives at its home page or at a shadow page
//! from a pool in NVM (the *committed* mapping). The first write-back to a
//! page in an epoch copies the whole page (4 KB: its clean lines from the
//! checkpoint copy, its dirty lines with the new data) to the other
//! location — a fresh shadow page when the checkpoint is at home, home when
//! it is at a shadow page — and the mapping table redirects every later
//! access of the epoch there. The checkpoint copy is never written.
//!
//! The checkpoint writes the CPU contexts and the changed entries of the
//! persisted mapping table (one 8-byte word per shadow page: valid | the
//! logical page it holds) to the standby recovery context, then switches
//! to it with one atomic 8-byte write (schemes/checkpoint/mod.rs); shadow
//! pages the new checkpoint no longer uses go back to the pool only after
//! the switch. Recovery reads the switch pointer and that table and copies
//! every committed shadow page home.
//!
//! The pool is as large as the home area, so allocation never fails (the
//! paper's "ideal, unbounded" table: no reclaim, no forced checkpoints).

use super::{ContextArea, EPOCH_CYCLES};
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::layout::{LINES_PER_PAGE, PAGE_BYTES};
use crate::mem::MemWrite;
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Writeback,
};
use crate::types::{Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};

pub static PARAMS: &[ParamSpec] = &[
    EPOCH_CYCLES,
    p!("ckpt-cow.lookup_cycles", int 16, "cycles", Check::Range(0.0, 10000.0),
        "dual-page checkpointing paper §5.1.1 (mapping-table lookup 16 cycles, as the DPT)",
        "mapping-table lookup on every page fill and page write-back between the DRAM cache and NVM"),
    p!("ckpt-cow.mutant", str "none", &["none", "copy-after-switch", "table-delta-per-epoch", "scan-stops-at-invalid"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/ckpt.rs; refused by the CLI): copy-after-switch = a page's clean lines are copied to its new location only after the checkpoint's switch committed the mapping; table-delta-per-epoch = the checkpoint writes to the standby slot's mapping table only the entries this epoch changed, not those changed since that slot was last written; scan-stops-at-invalid = recovery stops at the first invalid entry of the mapping table"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "ckpt-cow",
    description: "page-granularity copy-on-write checkpoints on the hybrid memory (first write-back of a page in an epoch copies all 4 KB, accesses redirected; metadata: 36-bit page tag + shadow index + 1 bit per mapped page, unbounded table)",
    durability: Durability::Checkpoint,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::CopiesHome,
    contexts: Some(recovered_contexts),
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::DPC),
        tx: 80_000,
        reaches: "30 M-cycle epochs: 2 checkpoints in dpc's measured window on btree (1 in 10,000 tx)",
        needs: Some(crate::schemes::machines::needs_dram_cache),
    },
};

/// Physical address width the mapping-table figure assumes (x86-64, the
/// dual-page checkpointing paper §2.3 and §3.5: 36 bits per page index).
pub const PHYS_ADDR_BITS: u32 = 48;
const VALID: u64 = 1 << 63;
const TABLE_ENTRY_BYTES: u64 = 8;
const META_MAGIC: u64 = 0x636f_776d_6574_6101; // "cowmeta"

/// Shadow pages needed so every home page can have one: the smallest pool
/// with `capacity - reserved(pool) <= pool` (from the parameters only).
fn pool_pages(p: &Params) -> u64 {
    let cap = p.u64("nvm.capacity_bytes");
    let reserved = |n: u64| {
        let area = ContextArea::new(0, 256, meta_bytes(n)).bytes();
        (n * PAGE_BYTES + area).div_ceil(1 << 21) << 21
    };
    let mut n = cap / 2 / PAGE_BYTES;
    loop {
        let r = reserved(n);
        if r >= cap || cap - r <= n * PAGE_BYTES {
            return n;
        }
        n += (cap - r - n * PAGE_BYTES).div_ceil(2 * PAGE_BYTES);
    }
}

fn meta_bytes(pool_pages: u64) -> u64 {
    64 + pool_pages * TABLE_ENTRY_BYTES
}

fn reserved_bytes(p: &Params) -> u64 {
    let n = pool_pages(p);
    n * PAGE_BYTES + ContextArea::new(0, 256, meta_bytes(n)).bytes()
}

/// Bits of one mapping-table entry: the logical page tag, the shadow page
/// index and which of the two copies is the working one this epoch.
pub fn mapping_bits_per_page(pool_pages: u64) -> u32 {
    let tag = PHYS_ADDR_BITS - PAGE_BYTES.trailing_zeros();
    let index = 64 - pool_pages.max(2).saturating_sub(1).leading_zeros();
    tag + index + 1
}

#[derive(Clone, Copy, Debug)]
struct Geometry {
    pool_base: Addr,
    pool_pages: u64,
    area: ContextArea,
}

impl Geometry {
    fn new(p: &Params, layout: &Layout) -> Self {
        let pool_pages = pool_pages(p);
        let pool_base = layout.reserved_base;
        Geometry {
            pool_base,
            pool_pages,
            area: ContextArea::new(
                pool_base + pool_pages * PAGE_BYTES,
                layout.threads,
                meta_bytes(pool_pages),
            ),
        }
    }
    fn shadow(&self, i: u32) -> Addr {
        self.pool_base + u64::from(i) * PAGE_BYTES
    }
    fn table(&self, s: usize) -> Addr {
        self.area.meta(s) + 64
    }
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Cow::new(p, layout)?))
}

/// Where a page's copy is: home or shadow page `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    Home,
    Shadow(u32),
}

#[derive(Clone, Copy, Debug)]
struct Work {
    loc: Loc,
    /// Lines written back this epoch (the mutant reads the others from
    /// the checkpoint copy until its late copy).
    written: u64,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct CowStats {
    pub page_copies: u64,
    pub copied_clean_lines: u64,
    pub data_lines_written: u64,
    pub redirected_writebacks: u64,
    pub table_lines_written: u64,
    pub shadow_allocations: u64,
    pub shadows_freed: u64,
    pub fill_lines_read: u64,
    pub checkpoints: u64,
    pub checkpoint_cycles: u64,
    pub peak_entries: u64,
}

pub(crate) struct Cow {
    g: Geometry,
    lookup: Cycle,
    epoch_cycles: Cycle,
    copy_after_switch: bool,
    /// Test-only (`ckpt-cow.mutant` = table-delta-per-epoch).
    delta_per_epoch: bool,
    /// Committed mappings: pages whose checkpoint is at a shadow page.
    committed: FxHashMap<u64, u32>,
    /// This epoch's mappings (first write-back order).
    working: FxHashMap<u64, Work>,
    working_order: Vec<u64>,
    free: Vec<u32>,
    /// Shadow pages ever handed out (fresh ones come from here on).
    high_water: u32,
    /// The mapping table the checkpoint persists: shadow index -> valid |
    /// logical page; and, per slot, the entries it has not written yet.
    table: FxHashMap<u32, u64>,
    stale: [FxHashSet<u32>; 2],
    valid_slot: Option<usize>,
    epoch: u64,
    pub(crate) stats: CowStats,
    stats_since: Option<Cycle>,
    last_end: Cycle,
}

impl Cow {
    pub(crate) fn new(p: &Params, layout: &Layout) -> Result<Self> {
        let g = Geometry::new(p, layout);
        if g.pool_pages * PAGE_BYTES < layout.home_limit || g.pool_pages > u64::from(u32::MAX) {
            return Err(Error::input(format!(
                "invalid value '{}' for 'nvm.capacity_bytes': ckpt-cow needs a shadow pool as large as the home area (at most 2^32 pages)",
                p.u64("nvm.capacity_bytes")
            )));
        }
        Ok(Cow {
            g,
            lookup: p.u64("ckpt-cow.lookup_cycles"),
            epoch_cycles: p.u64("checkpoint.epoch_cycles"),
            copy_after_switch: p.str("ckpt-cow.mutant") == "copy-after-switch",
            delta_per_epoch: p.str("ckpt-cow.mutant") == "table-delta-per-epoch",
            committed: FxHashMap::default(),
            working: FxHashMap::default(),
            working_order: Vec::new(),
            free: Vec::new(),
            high_water: 0,
            table: FxHashMap::default(),
            stale: [FxHashSet::default(), FxHashSet::default()],
            valid_slot: None,
            epoch: 0,
            stats: CowStats::default(),
            stats_since: None,
            last_end: 0,
        })
    }

    fn note_time(&mut self, t: Cycle) {
        if self.stats_since.is_none() {
            self.stats_since = Some(t);
        }
    }

    fn standby(&self) -> usize {
        self.valid_slot.map_or(0, |s| 1 - s)
    }

    fn base(&self, page: u64, loc: Loc) -> Addr {
        match loc {
            Loc::Home => page * PAGE_BYTES,
            Loc::Shadow(i) => self.g.shadow(i),
        }
    }

    fn committed_loc(&self, page: u64) -> Loc {
        self.committed
            .get(&page)
            .map_or(Loc::Home, |&i| Loc::Shadow(i))
    }

    /// Where line `k` of `page` is read from now.
    fn read_loc(&self, page: u64, k: usize) -> Addr {
        let loc = match self.working.get(&page) {
            Some(w) if !self.copy_after_switch || w.written >> k & 1 == 1 => w.loc,
            _ => self.committed_loc(page),
        };
        self.base(page, loc) + k as u64 * LINE_BYTES
    }

    fn set_entry(&mut self, i: u32, v: u64) {
        if v == 0 {
            self.table.remove(&i);
        } else {
            self.table.insert(i, v);
        }
        if self.delta_per_epoch {
            let s = self.standby();
            self.stale[s].insert(i);
            return;
        }
        self.stale[0].insert(i);
        self.stale[1].insert(i);
    }

    /// Copy the lines `mask` of `page` from its checkpoint copy to `dst`.
    fn copy_lines(&mut self, ctx: &mut MemCtx, page: u64, dst: Loc, mask: u64, t: Cycle) -> Cycle {
        let (src, dst) = (
            self.base(page, self.committed_loc(page)),
            self.base(page, dst),
        );
        let mut done = t;
        let mut line = [0u8; LINE_BYTES as usize];
        let mut m = mask;
        while m != 0 {
            let k = u64::from(m.trailing_zeros());
            m &= m - 1;
            let r = ctx
                .nvm
                .read(src + k * LINE_BYTES, &mut line, Purpose::Checkpoint, t);
            done = done.max(
                ctx.nvm
                    .write(dst + k * LINE_BYTES, &line, Purpose::Checkpoint, r),
            );
            self.stats.copied_clean_lines += 1;
        }
        done
    }

    fn fill(
        &mut self,
        ctx: &mut MemCtx,
        page_addr: Addr,
        first: usize,
        want: u64,
        out: &mut [u8],
        now: Cycle,
    ) -> Cycle {
        self.note_time(now);
        let t = now + self.lookup;
        let page = page_addr / PAGE_BYTES;
        let lines = out.len() / LINE_BYTES as usize;
        let mut first_at = t;
        for k in
            std::iter::once(first).chain((0..lines).filter(|&k| k != first && want >> k & 1 == 1))
        {
            let r = k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize;
            let done = ctx
                .nvm
                .read(self.read_loc(page, k), &mut out[r], Purpose::Demand, t);
            self.stats.fill_lines_read += 1;
            if k == first {
                first_at = done;
            }
        }
        first_at
    }
}

impl Scheme for Cow {
    fn recovery_paths(&self) -> &'static [&'static str] {
        &[crate::schemes::path::CHECKPOINT]
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
        self.fill(ctx, page_addr, first, u64::MAX, out, now)
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
        let t = now + self.lookup;
        let page = page_addr / PAGE_BYTES;
        let mut done = t;
        let dst = match self.working.get_mut(&page) {
            Some(w) => {
                // Redirected: the epoch's copy takes the write in place.
                self.stats.redirected_writebacks += 1;
                w.written |= dirty;
                w.loc
            }
            None => {
                // First write-back of the epoch: copy the page to the
                // location that is not the checkpoint's.
                let dst = match self.committed_loc(page) {
                    Loc::Shadow(_) => Loc::Home,
                    Loc::Home => {
                        let i = self.free.pop().unwrap_or_else(|| {
                            self.high_water += 1;
                            self.high_water - 1
                        });
                        self.stats.shadow_allocations += 1;
                        Loc::Shadow(i)
                    }
                };
                self.stats.page_copies += 1;
                if !self.copy_after_switch {
                    let clean = !dirty & (u64::MAX >> (64 - LINES_PER_PAGE));
                    done = self.copy_lines(ctx, page, dst, clean, t);
                }
                self.working.insert(
                    page,
                    Work {
                        loc: dst,
                        written: dirty,
                    },
                );
                self.working_order.push(page);
                let entries = (self.committed.len() + self.working.len()) as u64;
                self.stats.peak_entries = self.stats.peak_entries.max(entries);
                dst
            }
        };
        let base = self.base(page, dst);
        let mut m = dirty;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            let line: &LineData = data[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize]
                .try_into()
                .expect("64 B");
            done =
                done.max(
                    ctx.nvm
                        .write(base + k as u64 * LINE_BYTES, line, Purpose::WriteBack, t),
                );
            self.stats.data_lines_written += 1;
        }
        done
    }

    /// Without a DRAM cache the LLC talks to the controller line by line:
    /// the same mapping, one line at a time.
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
        let t = self.fill(ctx, page_addr, k, 1 << k, &mut page, now);
        out.copy_from_slice(&page[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize]);
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
        let mut buf = [0u8; PAGE_BYTES as usize];
        buf[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize].copy_from_slice(data);
        self.page_writeback(ctx, page_addr, 1 << k, &buf, now)
    }

    fn epoch_cycles(&self) -> Option<Cycle> {
        Some(self.epoch_cycles)
    }

    fn checkpoint(
        &mut self,
        ctx: &mut MemCtx,
        cpu_state: &[u8],
        started: Cycle,
        now: Cycle,
    ) -> (Cycle, u64) {
        self.note_time(started);
        let s = self.standby();
        self.epoch += 1;
        // The epoch's mappings become the committed ones.
        let mut freed = Vec::new();
        let mut late = Vec::new();
        let order = std::mem::take(&mut self.working_order);
        for &page in &order {
            let w = self.working[&page];
            if self.copy_after_switch {
                let src = self.base(page, self.committed_loc(page));
                let clean = !w.written & (u64::MAX >> (64 - LINES_PER_PAGE));
                late.push((src, self.base(page, w.loc), clean));
            }
            match w.loc {
                Loc::Shadow(i) => {
                    self.committed.insert(page, i);
                    self.set_entry(i, VALID | page);
                }
                Loc::Home => {
                    let i = self.committed.remove(&page).expect("a shadow checkpoint");
                    self.set_entry(i, 0);
                    freed.push(i);
                }
            }
        }
        // Step 3: CPU state and the changed table lines to the standby slot.
        let area = self.g.area;
        let mut t = area.write_contexts(&mut ctx.nvm, s, self.epoch, cpu_state, now);
        let per_line = (LINE_BYTES / TABLE_ENTRY_BYTES) as u32;
        let mut lines: Vec<u32> = self.stale[s].drain().map(|i| i / per_line).collect();
        lines.sort_unstable();
        lines.dedup();
        for l in lines {
            let mut buf = [0u8; LINE_BYTES as usize];
            let n = (u64::from(l + 1) * u64::from(per_line)).min(self.g.pool_pages) as u32
                - l * per_line;
            for j in 0..n {
                let v = self.table.get(&(l * per_line + j)).copied().unwrap_or(0);
                buf[j as usize * 8..j as usize * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            let a = self.g.table(s) + u64::from(l) * LINE_BYTES;
            t = t.max(
                ctx.nvm
                    .write(a, &buf[..n as usize * 8], Purpose::Metadata, now),
            );
            self.stats.table_lines_written += 1;
        }
        let mut hdr = [0u8; 64];
        hdr[..8].copy_from_slice(&META_MAGIC.to_le_bytes());
        hdr[8..16].copy_from_slice(&self.g.pool_pages.to_le_bytes());
        hdr[16..24].copy_from_slice(&u64::from(self.high_water).to_le_bytes());
        t = t.max(ctx.nvm.write(area.meta(s), &hdr, Purpose::Metadata, now));
        // Step 4: the atomic switch, once the backup persisted.
        t = area.switch(&mut ctx.nvm, s, self.epoch, t);
        let committed = ctx.nvm.persist_log.count();
        self.valid_slot = Some(s);
        // The planted bug: the copies the new mapping relies on, late.
        let mut line = [0u8; LINE_BYTES as usize];
        for (src, dst, mask) in late {
            let mut m = mask;
            while m != 0 {
                let k = u64::from(m.trailing_zeros());
                m &= m - 1;
                let r = ctx
                    .nvm
                    .read(src + k * LINE_BYTES, &mut line, Purpose::Checkpoint, t);
                t = ctx
                    .nvm
                    .write(dst + k * LINE_BYTES, &line, Purpose::Checkpoint, r);
                self.stats.copied_clean_lines += 1;
            }
        }
        self.stats.shadows_freed += freed.len() as u64;
        self.free.extend(freed);
        self.working.clear();
        self.stats.checkpoints += 1;
        self.stats.checkpoint_cycles += t.saturating_sub(started);
        self.last_end = t;
        (t, committed)
    }

    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        let page = addr / PAGE_BYTES;
        let k = ((addr % PAGE_BYTES) / LINE_BYTES) as usize;
        ctx.nvm
            .peek(self.read_loc(page, k) + addr % LINE_BYTES, buf);
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        let span = self
            .last_end
            .saturating_sub(self.stats_since.unwrap_or(0))
            .max(1);
        let bits = f64::from(mapping_bits_per_page(self.g.pool_pages));
        vec![
            ("checkpoints", s.checkpoints as f64),
            ("checkpoint_cycles", s.checkpoint_cycles as f64),
            (
                "checkpoint_time_share",
                s.checkpoint_cycles as f64 / span as f64,
            ),
            ("data_lines_written", s.data_lines_written as f64),
            ("page_copies", s.page_copies as f64),
            ("copied_clean_lines", s.copied_clean_lines as f64),
            (
                "extra_write_ratio",
                s.copied_clean_lines as f64 / s.data_lines_written.max(1) as f64,
            ),
            ("redirected_writebacks", s.redirected_writebacks as f64),
            ("table_lines_written", s.table_lines_written as f64),
            ("shadow_allocations", s.shadow_allocations as f64),
            ("shadows_freed", s.shadows_freed as f64),
            ("shadow_pages_in_use", self.committed.len() as f64),
            ("fill_lines_read", s.fill_lines_read as f64),
            ("mapping_bits_per_page", bits),
            ("mapping_table_peak_entries", s.peak_entries as f64),
            (
                "mapping_table_peak_bytes",
                s.peak_entries as f64 * bits / 8.0,
            ),
            (
                "nvm_table_bytes_per_shadow_page",
                2.0 * TABLE_ENTRY_BYTES as f64, // two recovery-context slots
            ),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = CowStats::default();
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

/// Recovery: the switch pointer names the valid recovery context; every
/// valid entry of its mapping table names a page whose checkpoint is in
/// that shadow page, copied home. Idempotent (shadow pages are not
/// modified).
///
/// Its crashed re-runs end on its image (the epoch oracle proves them
/// instead of running them: `RecoveryForm::CopiesHome`). It reads the
/// switch pointer, contexts, header, table and shadow pages, all in the
/// reserved area, which it never writes; at home it reads only a line it
/// is about to copy, and writes the shadow line there if the two differ.
/// A re-run after a crash that persisted any subset of its writes thus
/// reads the same reserved bytes, takes the same entries in the same
/// order, fails or not as the run did, and leaves every line of a named
/// page holding that line of the last entry naming the page, every other
/// byte as the crash image: the image of the uninterrupted run, whatever
/// the home lines it read held.
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    let g = Geometry::new(p, layout);
    let mut rep = RecoveryReport::default();
    let internal = |m: String| Error::Internal(format!("ckpt-cow recovery: {m}"));
    let Some((epoch, s)) = g.area.read_switch(img).map_err(internal)? else {
        rep.details.push(("epoch", 0.0));
        return Ok(rep);
    };
    g.area.read_contexts(img, Some(s)).map_err(internal)?;
    let hdr = g.area.meta(s);
    if img.read_u64(hdr) != META_MAGIC || img.read_u64(hdr + 8) != g.pool_pages {
        return Err(internal(format!("metadata header of slot {s} is garbled")));
    }
    let high_water = img.read_u64(hdr + 16);
    if high_water > g.pool_pages {
        return Err(internal(format!(
            "shadow high-water mark {high_water} is garbled"
        )));
    }
    let (mut pages, mut lines_written) = (0u64, 0u64);
    let mut buf = [0u8; PAGE_BYTES as usize];
    let stop_at_invalid = p.str("ckpt-cow.mutant") == "scan-stops-at-invalid";
    for i in 0..high_water {
        let w = img.read_u64(g.table(s) + i * TABLE_ENTRY_BYTES);
        if w & VALID == 0 {
            if stop_at_invalid {
                break;
            }
            continue;
        }
        let home = (w & !VALID) * PAGE_BYTES;
        if home >= layout.home_limit {
            return Err(internal(format!(
                "table entry {i} names page {home:#x} outside home"
            )));
        }
        img.read_bytes(g.shadow(i as u32), &mut buf);
        // Only lines that differ are written (read, compare, write): a
        // page mostly equal at home costs reads, not NVM writes.
        let mut cur = [0u8; LINE_BYTES as usize];
        for (k, want) in buf.chunks(LINE_BYTES as usize).enumerate() {
            let a = home + k as u64 * LINE_BYTES;
            img.read_bytes(a, &mut cur);
            if cur[..] != want[..] {
                img.write_bytes(a, want);
                lines_written += 1;
            }
        }
        pages += 1;
    }
    rep.bytes_read = 128 + high_water * TABLE_ENTRY_BYTES + 2 * pages * PAGE_BYTES;
    rep.bytes_written = lines_written * LINE_BYTES;
    rep.details.push(("epoch", epoch as f64));
    rep.details.push(("pages_copied_home", pages as f64));
    rep.details
        .push(("lines_written_home", lines_written as f64));
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{MemRead, MemoryController};

    fn machine() -> (Cow, MemCtx) {
        let mut p = Params::defaults(&[PARAMS]);
        p.set_str("nvm.capacity_bytes", "268435456").unwrap();
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
        (Cow::new(&p, &layout).unwrap(), ctx)
    }

    fn ctx0() -> Vec<u8> {
        super::super::encode_contexts(&[super::super::CoreContext::initial()])
    }

    fn line(ctx: &MemCtx, a: Addr) -> u8 {
        let mut b = [0u8; 64];
        ctx.nvm.peek(a, &mut b);
        b[0]
    }

    #[test]
    fn the_pool_covers_home() {
        for cap in [64u64 << 20, 256 << 20, 8 << 30, 512 << 30] {
            let mut p = Params::defaults(&[PARAMS]);
            p.set_str("nvm.capacity_bytes", &cap.to_string()).unwrap();
            let l = Layout::new(cap, reserved_bytes(&p), 4).unwrap();
            assert!(pool_pages(&p) * PAGE_BYTES >= l.home_limit, "{cap}");
            assert!(l.home_limit >= cap / 2 - (8 << 20) - cap / 256, "{cap}");
        }
        // 36-bit tag + 16-bit index of 2^16 pages + 1 direction bit.
        assert_eq!(mapping_bits_per_page(1 << 16), 53);
    }

    #[test]
    fn first_writeback_copies_the_page_and_later_accesses_are_redirected() {
        let (mut c, mut ctx) = machine();
        let page = 0x10_0000u64;
        ctx.nvm.preload(page, &[1u8; 4096]);
        // First write-back of line 0: the whole page goes to shadow 0.
        c.page_writeback(&mut ctx, page, 0b1, &[2u8; 4096], 0);
        let sh = c.g.shadow(0);
        assert_eq!(c.stats.copied_clean_lines, 63);
        assert_eq!((line(&ctx, sh), line(&ctx, sh + 64)), (2, 1));
        assert_eq!(line(&ctx, page), 1, "the checkpoint copy is untouched");
        // Later write-backs are redirected, no copy.
        c.page_writeback(&mut ctx, page, 0b10, &[3u8; 4096], 0);
        assert_eq!(
            (c.stats.copied_clean_lines, c.stats.redirected_writebacks),
            (63, 1)
        );
        assert_eq!((line(&ctx, sh + 64), line(&ctx, page + 64)), (3, 1));
        // Reads are redirected too.
        let mut out = vec![0u8; 4096];
        c.page_fill(&mut ctx, 0, page, 0, &mut out, 0);
        assert_eq!((out[0], out[64], out[128]), (2, 3, 1));
        // The checkpoint commits shadow 0; the next epoch's copy goes home.
        c.checkpoint(&mut ctx, &ctx0(), 0, 0);
        assert_eq!(c.committed.get(&(page / PAGE_BYTES)), Some(&0));
        c.page_writeback(&mut ctx, page, 0b100, &[4u8; 4096], 0);
        assert_eq!(c.stats.copied_clean_lines, 126);
        assert_eq!(
            (
                line(&ctx, page),
                line(&ctx, page + 64),
                line(&ctx, page + 128)
            ),
            (2, 3, 4)
        );
        assert_eq!(
            line(&ctx, sh + 128),
            1,
            "the shadow checkpoint is untouched"
        );
        // Recovery from bytes: the committed shadow goes home.
        let mut img = crate::mem::Overlay::new(ctx.nvm.media());
        let mut p = Params::defaults(&[PARAMS]);
        p.set_str("nvm.capacity_bytes", "268435456").unwrap();
        recover(&mut img, &p, &ctx.layout).unwrap();
        assert_eq!(img.read_u64(page + 128) & 0xff, 1);
        assert_eq!(img.read_u64(page + 64) & 0xff, 3);
        // Home committed again: shadow 0 returns to the pool after the switch.
        c.checkpoint(&mut ctx, &ctx0(), 0, 0);
        assert!(c.committed.is_empty());
        assert_eq!(c.free, vec![0]);
    }
}
