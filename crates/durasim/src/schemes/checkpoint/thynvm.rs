//! ThyNVM (`thynvm`; Ren et al., MICRO 2015) on the hybrid memory, as the
//! dual-page checkpointing paper ports it (§2.3, §5.1.2).
//!
//! Two translation tables in the memory controller: the block translation
//! table (BTT, one entry per remapped cache line) for sparsely written
//! pages and the page translation table (PTT, one entry per page) for
//! dense ones. Each page's mode is decided at every checkpoint from its
//! store counter (here: dirty lines written back to the controller in the
//! epoch): block -> page at >= `thynvm.to_page_threshold` (22), page ->
//! block below `thynvm.to_block_threshold` (16) (ThyNVM §4.2).
//!
//! Versions. A tracked unit (a line in the BTT, a page in the PTT) lives in
//! one of three places: its home, or slot 0 / slot 1 of its table entry
//! (a block area of 2 x 64 B per BTT entry, a page area of 2 x 4 KiB per
//! PTT entry: ThyNVM's checkpoint regions, indexed by the entry's offset,
//! §4.2). Per unit: `c` = the last completed checkpoint (C_last, or the
//! penultimate one C_penult while a checkpoint is in flight), `p` = the
//! checkpoint in flight (C_last), `w` = the working copy of the running
//! epoch (W_active). A write-back goes to `w`, chosen apart from `c` and
//! `p`, so neither checkpoint is ever overwritten (§3.1). Block mode
//! writes each dirty line; page mode writes the whole page (clean lines
//! copied from their current version) the first time in an epoch.
//!
//! Checkpoint (overlapped with the next epoch, §3.1 Fig. 3b): the engine
//! stalls the cores only to flush the CPU caches; the DRAM-cache flush's
//! write-backs go to `w` as usual and queue in the NVM controller. Then
//! `w` becomes `p`; idle units not at home are copied home (migration, so
//! they leave the tables); pages switching mode are consolidated (block ->
//! page: the current page written to its page slot; page -> block: the
//! page copied home). The CPU contexts and the table backup (16 B per unit
//! whose checkpoint is not at home: key, version address) are written in
//! the background by [`Scheme::tick`], then the switch pointer; only then
//! does `p` become `c` and units at home are dropped. A crash before the
//! switch recovers the previous checkpoint, whose versions `c` the next
//! epoch never overwrote. A new checkpoint first completes the one in
//! flight (the cores wait: `checkpoint_stall_cycles`).
//!
//! A full table (ThyNVM §4.3: no entry available or replaceable) stalls
//! the cores: the checkpoint in flight completes, idle committed entries
//! are replaced (copied home, freed; their slot reserved until the next
//! commit), and the forced checkpoint follows. Only tables that cannot hold
//! one epoch's write-backs stop the run.
//!
//! Recovery reads the switch pointer and the backup of the valid slot and
//! copies every listed version home (idempotent: it never writes a slot).

use super::{ContextArea, EPOCH_CYCLES};
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::layout::PAGE_BYTES;
use crate::mem::MemWrite;
use crate::schemes::kit::page_fill::page_fill;
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Writeback,
};
use crate::types::{Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};

pub static PARAMS: &[ParamSpec] = &[
    EPOCH_CYCLES,
    p!("thynvm.btt_entries", int 76_800, "entries", Check::Range(16.0, 1e9),
        "dual-page checkpointing paper §5.1.2 (ThyNVM's fine-grained table the size of the DPT: 300 MB / 4 KB = 76,800 entries)",
        "block translation table entries (cache-line remappings); a full table forces a checkpoint"),
    p!("thynvm.ptt_entries", int 153_600, "entries", Check::Range(1.0, 1e9),
        "dual-page checkpointing paper §5.1.2 gives the coarse table extra space without a number; ThyNVM §5.1 uses 4096 PTT for 2048 BTT entries: the same 2x ratio",
        "page translation table entries (pages in page-writeback mode)"),
    p!("thynvm.to_page_threshold", int 22, "lines/epoch", Check::Range(1.0, 1e9),
        "ThyNVM (Ren et al., MICRO 2015) §4.2: threshold 22 for switching from block remapping to page writeback",
        "a block-mode page with at least this many dirty-line write-backs in an epoch switches to page writeback"),
    p!("thynvm.to_block_threshold", int 16, "lines/epoch", Check::Range(0.0, 1e9),
        "ThyNVM (Ren et al., MICRO 2015) §4.2: threshold 16 for switching back to block remapping",
        "a page-mode page with fewer dirty-line write-backs than this in an epoch switches to block remapping (copied home)"),
    p!("thynvm.lookup_cycles", int 16, "cycles", Check::Range(0.0, 10000.0),
        "dual-page checkpointing paper §5.1.1 (the 16-cycle table lookup of its simulator, applied to every system; ThyNVM's own Table 2 uses 3 ns)",
        "BTT/PTT lookup on every NVM access of the DRAM cache"),
    p!("thynvm.mutant", str "none", &["none", "drop-penultimate", "switch-before-backup", "scan-skips-last-entry"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/thynvm.rs; refused by the CLI): drop-penultimate = a working copy may overwrite the last completed checkpoint while the next one is in flight; switch-before-backup = the switch pointer names the new recovery context before its contexts and table backup are written; scan-skips-last-entry = recovery copies home every version the table backup lists but the last"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "thynvm",
    description: "ThyNVM: checkpoints with block remapping (sparse pages) and page writeback (dense pages), overlapped with the next epoch",
    durability: Durability::Checkpoint,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Plain,
    contexts: Some(recovered_contexts),
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::DPC),
        tx: 80_000,
        reaches: "30 M-cycle epochs: 2 checkpoints in dpc's measured window on btree (1 in 10,000 tx)",
        needs: Some(crate::schemes::machines::needs_dram_cache),
    },
};

const META_MAGIC: u64 = 0x7468_796e_766d_0001; // "thynvm" v1
const ENTRY_BYTES: u64 = 16;
const VALID: u64 = 1 << 63;
const PAGE_UNIT: u64 = 1 << 62;
const NONE: u8 = u8::MAX;
const HOME: u8 = 0;
/// Lines of backup written per background step.
const CHUNK_LINES: usize = 8;
/// Bits of a BTT / PTT entry in the controller: ThyNVM Fig. 5 (42-bit
/// block index / 36-bit page index, 2-bit version ID, 2-bit visible region
/// ID, 1-bit checkpoint region ID, 6-bit store counter).
pub const BTT_ENTRY_BITS: u64 = 42 + 2 + 2 + 1 + 6;
pub const PTT_ENTRY_BITS: u64 = 36 + 2 + 2 + 1 + 6;

#[derive(Clone, Copy, Debug)]
struct Geometry {
    btt: u64,
    ptt: u64,
    block_base: Addr,
    page_base: Addr,
    area: ContextArea,
}

impl Geometry {
    fn new(p: &Params, base: Addr, cores: usize) -> Self {
        let btt = p.u64("thynvm.btt_entries");
        let ptt = p.u64("thynvm.ptt_entries");
        let block_base = base;
        let page_base = block_base + (btt * 2 * LINE_BYTES).div_ceil(PAGE_BYTES) * PAGE_BYTES;
        let area = ContextArea::new(
            page_base + ptt * 2 * PAGE_BYTES,
            cores,
            64 + (btt + ptt) * ENTRY_BYTES,
        );
        Geometry {
            btt,
            ptt,
            block_base,
            page_base,
            area,
        }
    }
    fn line_loc(&self, line: Addr, idx: u32, l: u8) -> Addr {
        match l {
            HOME => line,
            _ => self.block_base + (u64::from(idx) * 2 + u64::from(l - 1)) * LINE_BYTES,
        }
    }
    fn page_loc(&self, page: u64, idx: u32, l: u8) -> Addr {
        match l {
            HOME => page * PAGE_BYTES,
            _ => self.page_base + (u64::from(idx) * 2 + u64::from(l - 1)) * PAGE_BYTES,
        }
    }
}

fn reserved_bytes(p: &Params) -> u64 {
    let g = Geometry::new(p, 0, 256);
    g.area.switch_addr + g.area.bytes()
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    let (to_page, to_block) = (
        p.u64("thynvm.to_page_threshold"),
        p.u64("thynvm.to_block_threshold"),
    );
    // Between the two thresholds a unit keeps its mode (hysteresis,
    // ThyNVM §4.2); crossed, a page would switch mode every epoch.
    if to_block > to_page {
        return Err(Error::input(format!(
            "invalid value '{to_block}' for 'thynvm.to_block_threshold': a page returns to block remapping below it and a block becomes a page at thynvm.to_page_threshold ({to_page}); expected at most {to_page}"
        )));
    }
    Ok(Box::new(ThyNvm::new(p, layout)))
}

/// One tracked unit (a BTT or PTT entry).
#[derive(Clone, Copy, Debug)]
struct Unit {
    key: u64,
    c: u8,
    p: u8,
    w: u8,
    /// Left out of the checkpoint in flight; dropped when it commits.
    retiring: bool,
    /// A line of a page that switched to page mode mid-epoch: retires at
    /// the next checkpoint (the checkpoint in flight may still list it).
    dead: bool,
}

impl Unit {
    fn new(key: u64) -> Self {
        Unit {
            key,
            c: HOME,
            p: NONE,
            w: NONE,
            retiring: false,
            dead: false,
        }
    }
    fn newest(&self) -> u8 {
        if self.w != NONE {
            self.w
        } else if self.p != NONE {
            self.p
        } else {
            self.c
        }
    }
}

/// Host bytes of the tables the scheme allocates whole (the run's host
/// memory estimate, engine/footprint.rs): per entry a unit slot and a free
/// slot; per BTT entry a ghost count.
pub(crate) fn host_table_bytes(p: &Params) -> u64 {
    let per_entry = std::mem::size_of::<Option<Unit>>() as u64 + 4;
    let (btt, ptt) = (p.u64("thynvm.btt_entries"), p.u64("thynvm.ptt_entries"));
    btt.saturating_add(ptt)
        .saturating_mul(per_entry)
        .saturating_add(btt)
}

/// A table of units with fixed-capacity entries (slots indexed by entry).
struct Table {
    units: Vec<Option<Unit>>,
    by_key: FxHashMap<u64, u32>,
    free: Vec<u32>,
}

impl Table {
    fn new(n: u64) -> Self {
        Table {
            units: vec![None; n as usize],
            by_key: FxHashMap::default(),
            free: (0..n as u32).rev().collect(),
        }
    }
    fn get(&self, key: u64) -> Option<(u32, Unit)> {
        self.by_key
            .get(&key)
            .map(|&i| (i, self.units[i as usize].expect("mapped entry")))
    }
    fn alloc(&mut self, key: u64) -> Option<u32> {
        let i = self.free.pop()?;
        self.units[i as usize] = Some(Unit::new(key));
        self.by_key.insert(key, i);
        Some(i)
    }
    fn unit(&mut self, i: u32) -> &mut Unit {
        self.units[i as usize].as_mut().expect("live entry")
    }
    fn remove(&mut self, i: u32) {
        if let Some(u) = self.units[i as usize].take() {
            self.by_key.remove(&u.key);
            self.free.push(i);
        }
    }
    fn live(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_key.values().copied()
    }
}

/// The checkpoint in flight: what remains to be written in the background.
struct Pending {
    slot: usize,
    /// (address, line) of the backup, written CHUNK_LINES per step.
    lines: Vec<(Addr, [u8; 64])>,
    next: usize,
    contexts: Vec<u8>,
    /// When the next background step may issue (the previous persisted).
    at: Cycle,
    started: Cycle,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    block_lines_written: u64,
    page_lines_written: u64,
    clean_lines_copied: u64,
    migration_lines_written: u64,
    backup_lines_written: u64,
    switches_to_page: u64,
    switches_to_block: u64,
    page_switches_denied: u64,
    pressure_switches: u64,
    deferred_block_switches: u64,
    checkpoints: u64,
    forced_checkpoints: u64,
    overlapped_checkpoint_cycles: u64,
    checkpoint_stall_cycles: u64,
    table_full_events: u64,
    table_full_stall_cycles: u64,
    table_full_evictions: u64,
    lookups: u64,
    btt_peak: u64,
    ptt_peak: u64,
    block_mode_pages_sum: u64,
    page_mode_pages_sum: u64,
}

pub(crate) struct ThyNvm {
    g: Geometry,
    lookup: Cycle,
    epoch_cycles: Cycle,
    to_page: u64,
    to_block: u64,
    drop_penultimate: bool,
    /// Test-only (`thynvm.mutant=switch-before-backup`).
    switch_first: bool,
    btt: Table,
    ptt: Table,
    /// Pages in page-writeback mode this epoch.
    page_mode: FxHashSet<u64>,
    /// Store counters: dirty lines written back per page this epoch.
    counts: FxHashMap<u64, u64>,
    pending: Option<Pending>,
    committed: Vec<u64>,
    valid_slot: Option<usize>,
    epoch: u64,
    forced: bool,
    stats: Stats,
    stats_since: Option<Cycle>,
    last_end: Cycle,
    page_buf: Vec<u8>,
    /// The backup buffer of the last checkpoint, reused.
    spare: Option<Vec<(Addr, [u8; 64])>>,
    /// Page buffer of line-level write-backs (no DRAM cache).
    wb_buf: Vec<u8>,
    /// Per BTT entry: the slot of a line evicted from it while the valid
    /// backup still lists it there (NONE: free); cleared at each commit.
    ghost: Vec<u8>,
    /// A table-full stall to impose on every core: (from, until).
    stall: Option<(Cycle, Cycle)>,
}

impl ThyNvm {
    pub(crate) fn new(p: &Params, layout: &Layout) -> Self {
        let g = Geometry::new(p, layout.reserved_base, layout.threads);
        ThyNvm {
            g,
            lookup: p.u64("thynvm.lookup_cycles"),
            epoch_cycles: p.u64("checkpoint.epoch_cycles"),
            to_page: p.u64("thynvm.to_page_threshold"),
            to_block: p.u64("thynvm.to_block_threshold"),
            drop_penultimate: p.str("thynvm.mutant") == "drop-penultimate",
            switch_first: p.str("thynvm.mutant") == "switch-before-backup",
            btt: Table::new(g.btt),
            ptt: Table::new(g.ptt),
            page_mode: FxHashSet::default(),
            counts: FxHashMap::default(),
            pending: None,
            committed: Vec::new(),
            valid_slot: None,
            epoch: 0,
            forced: false,
            stats: Stats::default(),
            stats_since: None,
            last_end: 0,
            page_buf: vec![0; PAGE_BYTES as usize],
            spare: None,
            wb_buf: vec![0; PAGE_BYTES as usize],
            ghost: vec![NONE; g.btt as usize],
            stall: None,
        }
    }

    /// The working copy's place: apart from both checkpoints (the mutant
    /// forgets the completed one).
    fn choose(&self, c: u8, p: u8) -> u8 {
        (0..3u8)
            .find(|&l| l != p && (self.drop_penultimate || l != c))
            .expect("three places, two taken")
    }

    /// As [`Self::choose`], also apart from `ghost` (NONE if none fits).
    fn choose_avoiding(&self, c: u8, p: u8, ghost: u8) -> u8 {
        (0..3u8)
            .find(|&l| l != p && l != ghost && (self.drop_penultimate || l != c))
            .unwrap_or(NONE)
    }

    /// Where the current bytes of a line are.
    fn src_of_line(&self, line: Addr) -> Addr {
        let page = line / PAGE_BYTES;
        let off = line % PAGE_BYTES;
        let by_line = || match self.btt.get(line) {
            Some((i, u)) => self.g.line_loc(line, i, u.newest()),
            None => line,
        };
        match self.ptt.get(page) {
            // A page-mode page not written since it switched: its lines
            // are home or in its (dead) BTT entries.
            Some((_, u))
                if self.page_mode.contains(&page) && u.w == NONE && u.p == NONE && u.c == HOME =>
            {
                by_line()
            }
            Some((j, u))
                if self.page_mode.contains(&page) || !self.btt.by_key.contains_key(&line) =>
            {
                self.g.page_loc(page, j, u.newest()) + off
            }
            _ => by_line(),
        }
    }

    fn note_time(&mut self, t: Cycle) {
        if self.stats_since.is_none() {
            self.stats_since = Some(t);
        }
    }

    /// A BTT entry for `line`, allocated if needed. A full table first
    /// waits for the checkpoint in flight to commit (its retiring and
    /// migrated entries free), then evicts idle committed entries; the
    /// cores stall meanwhile. Returns the entry and when the write may issue.
    fn btt_entry(&mut self, ctx: &mut MemCtx, line: Addr, t: Cycle) -> Option<(u32, Cycle)> {
        if let Some((i, _)) = self.btt.get(line) {
            return Some((i, t));
        }
        let mut t = t;
        let i = match self.btt.alloc(line) {
            Some(i) => i,
            None => {
                self.stats.table_full_events += 1;
                let d = self.drain(ctx, t);
                self.stall_cores(t, d);
                t = d;
                if self.btt.free.is_empty() {
                    t = self.evict_idle(ctx, t);
                }
                self.btt.alloc(line)?
            }
        };
        let used = self.btt.by_key.len() as u64;
        self.stats.btt_peak = self.stats.btt_peak.max(used);
        // Keep an eighth free for the writes until the forced
        // checkpoint starts (entries free only when one commits).
        if used * 8 >= self.g.btt * 7 {
            self.forced = true;
        }
        Some((i, t))
    }

    /// BTT pressure: a block-mode page whose dirty lines do not fit in the
    /// BTT switches to page writeback now if the PTT has room (its BTT
    /// entries retire). False if it cannot.
    fn pressure_switch(&mut self, page: u64) -> bool {
        if self.ptt.get(page).is_some() || self.ptt.alloc(page).is_none() {
            return false;
        }
        for k in 0..PAGE_BYTES / LINE_BYTES {
            if let Some((i, _)) = self.btt.get(page * PAGE_BYTES + k * LINE_BYTES) {
                self.btt.unit(i).dead = true;
            }
        }
        self.page_mode.insert(page);
        self.stats.pressure_switches += 1;
        self.stats.ptt_peak = self.stats.ptt_peak.max(self.ptt.by_key.len() as u64);
        self.forced = true;
        true
    }

    /// The cores wait from `from` to `until` (a full translation table).
    fn stall_cores(&mut self, from: Cycle, until: Cycle) {
        if until <= from {
            return;
        }
        self.stats.table_full_stall_cycles += until - from;
        self.stall = Some(match self.stall {
            Some((a, b)) => (a.min(from), b.max(until)),
            None => (from, until),
        });
    }

    /// No checkpoint in flight and the BTT still full: entries whose
    /// committed version is in a slot and that are idle this epoch are
    /// copied home and freed (what the next checkpoint would do). The
    /// valid backup still lists them at their slot, so the slot stays
    /// reserved (`ghost`) until the next checkpoint commits.
    fn evict_idle(&mut self, ctx: &mut MemCtx, t: Cycle) -> Cycle {
        debug_assert!(self.pending.is_none());
        let mut ids: Vec<u32> = self.btt.live().collect();
        ids.sort_unstable();
        let mut done = t;
        // Free an eighth of the table at once (fewer stalls).
        let want = (self.g.btt / 8).max(1) as usize;
        let mut freed = 0usize;
        for i in ids {
            let u = *self.btt.unit(i);
            let page = u.key / PAGE_BYTES;
            if u.w != NONE
                || u.p != NONE
                || u.c == HOME
                || u.dead
                || u.retiring
                || self.ptt.get(page).is_some()
            {
                continue;
            }
            done = done.max(Self::copy(ctx, self.g.line_loc(u.key, i, u.c), u.key, 1, t));
            self.stats.migration_lines_written += 1;
            self.stats.table_full_evictions += 1;
            self.ghost[i as usize] = u.c;
            self.btt.remove(i);
            freed += 1;
            if freed >= want {
                break;
            }
        }
        self.stall_cores(t, done);
        done
    }

    /// A dirty line of a block-mode page: to its BTT entry's working copy.
    fn write_line(&mut self, ctx: &mut MemCtx, line: Addr, data: &[u8], t: Cycle) -> Cycle {
        let Some((i, mut t)) = self.btt_entry(ctx, line, t) else {
            ctx.input_error(format!(
                "thynvm: the block translation table is full ({} entries) and none can be freed (each holds a line written in this epoch, or a line of a page in the page table, whose {} entries are full too): the tables cannot hold one epoch's write-backs; {}",
                self.g.btt,
                self.g.ptt,
                crate::schemes::raise_advice(PARAMS, "thynvm.btt_entries", self.g.btt * 2)
            ));
            return t;
        };
        let u = *self.btt.unit(i);
        if u.w == NONE {
            let mut w = self.choose_avoiding(u.c, u.p, self.ghost[i as usize]);
            if w == NONE {
                // The entry's third place is a freed line's committed
                // version: wait for the checkpoint in flight to commit.
                let d = self.drain(ctx, t);
                self.stall_cores(t, d);
                t = d;
                let v = *self.btt.unit(i);
                w = self.choose_avoiding(v.c, v.p, self.ghost[i as usize]);
            }
            self.btt.unit(i).w = w;
        }
        let w = self.btt.unit(i).w;
        self.stats.block_lines_written += 1;
        ctx.nvm
            .write(self.g.line_loc(line, i, w), data, Purpose::WriteBack, t)
    }

    /// Dirty lines of a page-mode page: the whole page to its working copy
    /// the first time in the epoch (clean lines copied from their current
    /// version), only the dirty lines after that.
    fn write_page(
        &mut self,
        ctx: &mut MemCtx,
        page: u64,
        dirty: u64,
        data: &[u8],
        t: Cycle,
    ) -> Cycle {
        let (j, u) = self.ptt.get(page).expect("page mode has a PTT entry");
        let fresh = u.w == NONE;
        let mut buf = std::mem::take(&mut self.page_buf);
        let mask = if fresh {
            if u.c == HOME && u.p == NONE {
                // Switched this epoch: lines are home or in (dead) BTT entries.
                for k in 0..PAGE_BYTES / LINE_BYTES {
                    let line = page * PAGE_BYTES + k * LINE_BYTES;
                    let src = match self.btt.get(line) {
                        Some((i, v)) => self.g.line_loc(line, i, v.newest()),
                        None => line,
                    };
                    let r = (k * LINE_BYTES) as usize..((k + 1) * LINE_BYTES) as usize;
                    ctx.nvm.peek(src, &mut buf[r]);
                }
            } else {
                ctx.nvm.peek(self.g.page_loc(page, j, u.newest()), &mut buf);
            }
            self.stats.clean_lines_copied += u64::from((!dirty).count_ones());
            self.ptt.unit(j).w = self.choose(u.c, u.p);
            u64::MAX
        } else {
            dirty
        };
        let mut m = dirty;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            let r = k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize;
            buf[r.clone()].copy_from_slice(&data[r]);
        }
        let dst = self.g.page_loc(page, j, self.ptt.unit(j).w);
        let mut done = t;
        let mut m = mask;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            let r = k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize;
            done = done.max(ctx.nvm.write(
                dst + (k as u64) * LINE_BYTES,
                &buf[r],
                Purpose::WriteBack,
                t,
            ));
            self.stats.page_lines_written += 1;
        }
        self.page_buf = buf;
        done
    }

    /// Copy `lines` lines from `src` to `dst` (migrations, consolidation).
    fn copy(ctx: &mut MemCtx, src: Addr, dst: Addr, lines: u64, t: Cycle) -> Cycle {
        let mut done = t;
        let mut line = [0u8; LINE_BYTES as usize];
        for k in 0..lines {
            let r = ctx
                .nvm
                .read(src + k * LINE_BYTES, &mut line, Purpose::Gc, t);
            done = done.max(ctx.nvm.write(dst + k * LINE_BYTES, &line, Purpose::Gc, r));
        }
        done
    }

    /// Issue the next background step of the checkpoint in flight at `now`;
    /// the switch (and the commit) once the backup has persisted.
    fn step(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let Some(mut pd) = self.pending.take() else {
            return now;
        };
        let now = now.max(pd.at);
        let area = self.g.area;
        if !pd.contexts.is_empty() {
            if self.switch_first {
                area.switch(&mut ctx.nvm, pd.slot, self.epoch, now);
            }
            pd.at = area.write_contexts(&mut ctx.nvm, pd.slot, self.epoch, &pd.contexts, now);
            pd.contexts.clear();
            let at = pd.at;
            self.pending = Some(pd);
            return at;
        }
        if pd.next < pd.lines.len() {
            let end = (pd.next + CHUNK_LINES).min(pd.lines.len());
            let mut done = now;
            for (a, l) in &pd.lines[pd.next..end] {
                done = done.max(ctx.nvm.write(*a, l, Purpose::Metadata, now));
                self.stats.backup_lines_written += 1;
            }
            pd.next = end;
            pd.at = done;
            self.pending = Some(pd);
            return done;
        }
        // The backup persisted: the one atomic switch, then the commit.
        let t = if self.switch_first {
            now
        } else {
            area.switch(&mut ctx.nvm, pd.slot, self.epoch, now)
        };
        self.committed.push(ctx.nvm.persist_log.count());
        self.valid_slot = Some(pd.slot);
        // The new backup no longer lists lines evicted before it started.
        self.ghost.fill(NONE);
        self.stats.overlapped_checkpoint_cycles += t.saturating_sub(pd.started);
        self.last_end = self.last_end.max(t);
        for (table, pages) in [(&mut self.btt, false), (&mut self.ptt, true)] {
            let ids: Vec<u32> = table.live().collect();
            for i in ids {
                let u = table.unit(i);
                if u.p != NONE {
                    u.c = u.p;
                    u.p = NONE;
                }
                // A line at home leaves the BTT; a page-mode page keeps its
                // PTT entry until it switches back.
                if u.w == NONE && (u.retiring || (!pages && u.c == HOME)) {
                    table.remove(i);
                } else {
                    u.retiring = false;
                }
            }
        }
        // Recycle the buffer.
        pd.lines.clear();
        self.spare = Some(pd.lines);
        t
    }

    /// Complete the checkpoint in flight now (a new checkpoint, the end of
    /// the run); returns when it committed.
    fn drain(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut t = now;
        while let Some(pd) = &self.pending {
            t = self.step(ctx, t.max(pd.at));
        }
        t
    }

    /// The previous checkpoint must complete first (§3.1): the cores wait.
    /// Returns when the cores resume and when this checkpoint starts.
    fn wait_for_previous(
        &mut self,
        ctx: &mut MemCtx,
        started: Cycle,
        now: Cycle,
    ) -> (Cycle, Cycle) {
        if self.pending.is_some() {
            let d = self.drain(ctx, started);
            self.stats.checkpoint_stall_cycles += d.saturating_sub(started);
            (d, d.max(now))
        } else {
            (started, now)
        }
    }

    /// BTT at a checkpoint starting at `t`: working copies become the
    /// checkpoint in flight; idle units not at home are copied home so they
    /// can leave the BTT. Returns when the copies started by it complete
    /// (at least `t`).
    fn close_block_epoch(&mut self, ctx: &mut MemCtx, t: Cycle) -> Cycle {
        let g = self.g;
        let mut done = t;
        for i in self.btt.live().collect::<Vec<_>>() {
            let mut u = *self.btt.unit(i);
            let page_written = self
                .ptt
                .get(u.key / PAGE_BYTES)
                .is_some_and(|(_, pu)| pu.w != NONE);
            if u.dead && !page_written {
                // Its page went to page mode but was never written: the
                // page goes back to block mode, the entry lives on.
                self.btt.unit(i).dead = false;
                u.dead = false;
            }
            if u.dead {
                let v = self.btt.unit(i);
                if v.w != NONE {
                    v.p = v.w;
                    v.w = NONE;
                }
                v.retiring = true;
            } else if u.w != NONE {
                let v = self.btt.unit(i);
                v.p = v.w;
                v.w = NONE;
            } else if u.c != HOME {
                done = done.max(Self::copy(ctx, g.line_loc(u.key, i, u.c), u.key, 1, t));
                self.stats.migration_lines_written += 1;
                self.btt.unit(i).p = HOME;
            } else {
                self.btt.unit(i).retiring = true;
            }
        }
        done
    }

    /// PTT at a checkpoint starting at `t`: working copies become the
    /// checkpoint in flight; page-mode pages stay when written densely,
    /// else go back to blocks (copied home first). Returns when the copies
    /// started by it complete (at least `t`).
    fn close_page_epoch(&mut self, ctx: &mut MemCtx, t: Cycle) -> Cycle {
        let g = self.g;
        let lines = PAGE_BYTES / LINE_BYTES;
        let mut done = t;
        for j in self.ptt.live().collect::<Vec<_>>() {
            let u = *self.ptt.unit(j);
            if u.w != NONE {
                let v = self.ptt.unit(j);
                v.p = v.w;
                v.w = NONE;
            }
            let page = u.key;
            let n = self.counts.get(&page).copied().unwrap_or(0);
            if self.page_mode.contains(&page) && n < self.to_block {
                let v = *self.ptt.unit(j);
                if v.newest() != HOME && v.c == HOME {
                    // Home holds the last completed checkpoint: the page
                    // can only go home once the one in flight commits.
                    self.stats.deferred_block_switches += 1;
                    continue;
                }
                self.page_mode.remove(&page);
                self.stats.switches_to_block += 1;
                if v.newest() != HOME {
                    let src = g.page_loc(page, j, v.newest());
                    done = done.max(Self::copy(ctx, src, page * PAGE_BYTES, lines, t));
                    self.stats.migration_lines_written += lines;
                    self.ptt.unit(j).p = HOME;
                }
                self.ptt.unit(j).retiring = true;
            }
        }
        done
    }

    /// Dense block-mode pages switch to page writeback. The page's BTT
    /// entries still hold this checkpoint; they retire at the checkpoint
    /// after the page's first page-mode write-back, which gathers its lines
    /// (ThyNVM §3.4 copies the page into DRAM; here it is cached there
    /// already).
    fn switch_dense_pages(&mut self) {
        let lines = PAGE_BYTES / LINE_BYTES;
        let mut dense: Vec<u64> = self
            .counts
            .iter()
            .filter(|&(p, &n)| n >= self.to_page && !self.page_mode.contains(p))
            .map(|(&p, _)| p)
            .collect();
        dense.sort_unstable();
        for page in dense {
            if self.ptt.get(page).is_some() {
                // Its page entry still retires from the last switch.
                self.stats.page_switches_denied += 1;
                continue;
            }
            if self.ptt.alloc(page).is_none() {
                self.stats.page_switches_denied += 1;
                continue;
            }
            self.stats.ptt_peak = self.stats.ptt_peak.max(self.ptt.by_key.len() as u64);
            for k in 0..lines {
                if let Some((i, _)) = self.btt.get(page * PAGE_BYTES + k * LINE_BYTES) {
                    self.btt.unit(i).dead = true;
                }
            }
            self.page_mode.insert(page);
            self.stats.switches_to_page += 1;
        }
    }

    /// Adds this epoch's page-mode and block-mode page counts to the sums
    /// behind their averages.
    fn sample_modes(&mut self) {
        self.stats.page_mode_pages_sum += self.page_mode.len() as u64;
        self.stats.block_mode_pages_sum += {
            let mut pages: FxHashSet<u64> = FxHashSet::default();
            for i in self.btt.live() {
                let u = self.btt.units[i as usize].expect("live");
                if !u.retiring {
                    pages.insert(u.key / PAGE_BYTES);
                }
            }
            pages.len() as u64
        };
    }

    /// The backup of standby slot `s`, as the lines to write: an entry
    /// (key, location) for every unit whose checkpoint in flight is not at
    /// home, BTT then PTT in index order, four to a line, then the slot's
    /// header (magic, epoch, entry count), written last.
    fn backup_lines(&mut self, s: usize) -> Vec<(Addr, [u8; 64])> {
        let g = self.g;
        let mut lines_out = self.spare.take().unwrap_or_default();
        lines_out.clear();
        let mut n = 0u64;
        let mut line = [0u8; 64];
        let base = g.area.meta(s) + 64;
        let mut push = |key: u64, addr: Addr, n: &mut u64, out: &mut Vec<(Addr, [u8; 64])>| {
            let o = (*n % 4 * ENTRY_BYTES) as usize;
            line[o..o + 8].copy_from_slice(&key.to_le_bytes());
            line[o + 8..o + 16].copy_from_slice(&addr.to_le_bytes());
            *n += 1;
            if (*n).is_multiple_of(4) {
                out.push((base + (*n - 4) * ENTRY_BYTES, line));
                line = [0u8; 64];
            }
        };
        let mut ids: Vec<u32> = self.btt.live().collect();
        ids.sort_unstable();
        for i in ids {
            let u = self.btt.units[i as usize].expect("live");
            let at = if u.p != NONE { u.p } else { u.c };
            if !u.retiring && at != HOME {
                push(
                    VALID | u.key,
                    g.line_loc(u.key, i, at),
                    &mut n,
                    &mut lines_out,
                );
            }
        }
        let mut ids: Vec<u32> = self.ptt.live().collect();
        ids.sort_unstable();
        for j in ids {
            let u = self.ptt.units[j as usize].expect("live");
            let at = if u.p != NONE { u.p } else { u.c };
            if !u.retiring && at != HOME {
                push(
                    VALID | PAGE_UNIT | u.key,
                    g.page_loc(u.key, j, at),
                    &mut n,
                    &mut lines_out,
                );
            }
        }
        if !n.is_multiple_of(4) {
            lines_out.push((base + (n - n % 4) * ENTRY_BYTES, line));
        }
        let mut hdr = [0u8; 64];
        hdr[..8].copy_from_slice(&META_MAGIC.to_le_bytes());
        hdr[8..16].copy_from_slice(&self.epoch.to_le_bytes());
        hdr[16..24].copy_from_slice(&n.to_le_bytes());
        lines_out.push((g.area.meta(s), hdr));
        lines_out
    }
}

impl Scheme for ThyNvm {
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
        self.note_time(now);
        self.stats.lookups += 1;
        let t = now + self.lookup;
        page_fill(ctx, page_addr, first, out, t, |line| self.src_of_line(line))
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
        self.stats.lookups += 1;
        let mut t = now + self.lookup;
        let page = page_addr / PAGE_BYTES;
        *self.counts.entry(page).or_insert(0) += u64::from(dirty.count_ones());
        if !self.page_mode.contains(&page) {
            // BTT pressure: lines without an entry that do not fit switch
            // the page to page writeback now (its BTT entries retire).
            let mut need = 0usize;
            let mut m = dirty;
            while m != 0 {
                let k = u64::from(m.trailing_zeros());
                m &= m - 1;
                need += usize::from(!self.btt.by_key.contains_key(&(page_addr + k * LINE_BYTES)));
            }
            if need > self.btt.free.len() && !self.pressure_switch(page) {
                // Neither table has room: the write waits for the
                // checkpoint in flight to commit (entries free), then for
                // idle entries to be evicted; then it tries again.
                self.stats.table_full_events += 1;
                let d = self.drain(ctx, t);
                self.stall_cores(t, d);
                t = d;
                if need > self.btt.free.len() {
                    t = self.evict_idle(ctx, t);
                }
                if need > self.btt.free.len() {
                    self.pressure_switch(page);
                }
            }
        }
        if self.page_mode.contains(&page) {
            return self.write_page(ctx, page, dirty, data, t);
        }
        let mut done = t;
        let mut m = dirty;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            let r = k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize;
            done = done.max(self.write_line(ctx, page_addr + k as u64 * LINE_BYTES, &data[r], t));
        }
        done
    }

    /// Without a DRAM cache the LLC talks to the controller line by line.
    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut crate::cache::LineExt,
    ) -> (Cycle, bool) {
        self.stats.lookups += 1;
        let src = self.src_of_line(line_addr);
        (
            ctx.nvm.read(src, out, Purpose::Demand, now + self.lookup),
            false,
        )
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
        // Only line k of the page buffer is read (the dirty mask).
        let mut page = std::mem::take(&mut self.wb_buf);
        page[k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize].copy_from_slice(data);
        let t = self.page_writeback(ctx, page_addr, 1 << k, &page, now);
        self.wb_buf = page;
        t
    }

    fn next_event_at(&self) -> Option<Cycle> {
        match (self.stall, &self.pending) {
            (Some((from, _)), _) => Some(from),
            (None, p) => p.as_ref().map(|p| p.at),
        }
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        if let Some((_, until)) = self.stall.take() {
            return Some(until);
        }
        self.step(ctx, now);
        None
    }

    fn background_kind(&self) -> &'static str {
        crate::schemes::path::CHECKPOINT
    }

    fn recovery_paths(&self) -> &'static [&'static str] {
        use crate::schemes::path::{CHECKPOINT, FORCED_CHECKPOINT};
        &[CHECKPOINT, FORCED_CHECKPOINT]
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        // Complete the final checkpoint, then copy every version home (not
        // in the measured window) so home holds the final image.
        let mut t = self.drain(ctx, now);
        let g = self.g;
        for i in self.btt.live().collect::<Vec<_>>() {
            let u = *self.btt.unit(i);
            if u.c != HOME {
                t = t.max(Self::copy(ctx, g.line_loc(u.key, i, u.c), u.key, 1, now));
            }
        }
        for j in self.ptt.live().collect::<Vec<_>>() {
            let u = *self.ptt.unit(j);
            if u.c != HOME {
                let lines = PAGE_BYTES / LINE_BYTES;
                t = t.max(Self::copy(
                    ctx,
                    g.page_loc(u.key, j, u.c),
                    u.key * PAGE_BYTES,
                    lines,
                    now,
                ));
            }
        }
        t
    }

    fn epoch_cycles(&self) -> Option<Cycle> {
        Some(self.epoch_cycles)
    }

    fn checkpoint_forced(&self) -> bool {
        self.forced
    }

    fn overlapped_checkpoint(&self) -> bool {
        true
    }

    fn take_committed_checkpoint(&mut self) -> Option<u64> {
        (!self.committed.is_empty()).then(|| self.committed.remove(0))
    }

    fn checkpoint(
        &mut self,
        ctx: &mut MemCtx,
        cpu_state: &[u8],
        started: Cycle,
        now: Cycle,
    ) -> (Cycle, u64) {
        self.note_time(started);
        let (resume, t) = self.wait_for_previous(ctx, started, now);
        if self.forced {
            self.stats.forced_checkpoints += 1;
        }
        self.forced = false;
        self.epoch += 1;
        self.stats.checkpoints += 1;
        let done = self.close_block_epoch(ctx, t);
        let done = done.max(self.close_page_epoch(ctx, t));
        self.switch_dense_pages();
        self.counts.clear();
        self.sample_modes();
        let s = self.valid_slot.map_or(0, |v| 1 - v);
        let lines = self.backup_lines(s);
        self.pending = Some(Pending {
            slot: s,
            lines,
            next: 0,
            contexts: cpu_state.to_vec(),
            at: done,
            started,
        });
        self.last_end = self.last_end.max(t);
        (resume, u64::MAX)
    }

    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        let line = addr - addr % LINE_BYTES;
        ctx.nvm
            .peek(self.src_of_line(line) + addr % LINE_BYTES, buf);
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        let span = self
            .last_end
            .saturating_sub(self.stats_since.unwrap_or(0))
            .max(1);
        let ck = s.checkpoints.max(1) as f64;
        vec![
            ("checkpoints", s.checkpoints as f64),
            ("forced_checkpoints", s.forced_checkpoints as f64),
            (
                "overlapped_checkpoint_cycles",
                s.overlapped_checkpoint_cycles as f64,
            ),
            ("checkpoint_stall_cycles", s.checkpoint_stall_cycles as f64),
            ("table_full_events", s.table_full_events as f64),
            ("table_full_stall_cycles", s.table_full_stall_cycles as f64),
            ("table_full_evictions", s.table_full_evictions as f64),
            (
                "checkpoint_stall_share",
                s.checkpoint_stall_cycles as f64 / span as f64,
            ),
            ("block_lines_written", s.block_lines_written as f64),
            ("page_lines_written", s.page_lines_written as f64),
            ("clean_lines_copied", s.clean_lines_copied as f64),
            ("migration_lines_written", s.migration_lines_written as f64),
            (
                "metadata_backup_lines_written",
                s.backup_lines_written as f64,
            ),
            ("switches_to_page_mode", s.switches_to_page as f64),
            ("switches_to_block_mode", s.switches_to_block as f64),
            ("page_switches_denied", s.page_switches_denied as f64),
            (
                "btt_pressure_switches_to_page_mode",
                s.pressure_switches as f64,
            ),
            (
                "deferred_switches_to_block_mode",
                s.deferred_block_switches as f64,
            ),
            (
                "block_mode_pages_per_epoch",
                s.block_mode_pages_sum as f64 / ck,
            ),
            (
                "page_mode_pages_per_epoch",
                s.page_mode_pages_sum as f64 / ck,
            ),
            ("btt_peak_entries", s.btt_peak as f64),
            ("ptt_peak_entries", s.ptt_peak as f64),
            ("table_lookups", s.lookups as f64),
            ("controller_bits_per_btt_entry", BTT_ENTRY_BITS as f64),
            ("controller_bits_per_ptt_entry", PTT_ENTRY_BITS as f64),
            ("controller_index_bits_per_line", 42.0),
            (
                "controller_table_bytes",
                ((self.g.btt * BTT_ENTRY_BITS + self.g.ptt * PTT_ENTRY_BITS) / 8) as f64,
            ),
            ("nvm_backup_bytes_per_unit", ENTRY_BYTES as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = Stats::default();
        self.stats_since = None;
    }
}

/// The CPU contexts the valid recovery context holds (`SchemeInfo::contexts`).
fn recovered_contexts(
    img: &dyn crate::mem::MemRead,
    p: &Params,
    layout: &Layout,
) -> std::result::Result<Vec<super::CoreContext>, String> {
    Geometry::new(p, layout.reserved_base, layout.threads)
        .area
        .recovered_contexts(img)
}

/// Recovery: copy every version the valid backup lists to its home.
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    let g = Geometry::new(p, layout.reserved_base, layout.threads);
    let mut rep = RecoveryReport::default();
    let internal = |m: String| Error::Internal(format!("thynvm recovery: {m}"));
    let Some((epoch, s)) = g.area.read_switch(img).map_err(internal)? else {
        rep.details.push(("epoch", 0.0));
        return Ok(rep);
    };
    g.area.read_contexts(img, Some(s)).map_err(internal)?;
    let hdr = g.area.meta(s);
    if img.read_u64(hdr) != META_MAGIC || img.read_u64(hdr + 8) != epoch {
        return Err(internal(format!(
            "table backup header of slot {s} is garbled"
        )));
    }
    let n = img.read_u64(hdr + 16);
    if n > g.btt + g.ptt {
        return Err(internal(format!("backup entry count {n} is garbled")));
    }
    let mut buf = vec![0u8; PAGE_BYTES as usize];
    let (mut lines, mut pages) = (0u64, 0u64);
    let n = if p.str("thynvm.mutant") == "scan-skips-last-entry" {
        n.saturating_sub(1)
    } else {
        n
    };
    for k in 0..n {
        let a = hdr + 64 + k * ENTRY_BYTES;
        let (key, src) = (img.read_u64(a), img.read_u64(a + 8));
        if key & VALID == 0 {
            return Err(internal(format!("backup entry {k} is not valid")));
        }
        let page = key & PAGE_UNIT != 0;
        let id = key & !(VALID | PAGE_UNIT);
        let (dst, len, area, area_end) = if page {
            (
                id * PAGE_BYTES,
                PAGE_BYTES,
                g.page_base,
                g.page_base + g.ptt * 2 * PAGE_BYTES,
            )
        } else {
            (
                id,
                LINE_BYTES,
                g.block_base,
                g.block_base + g.btt * 2 * LINE_BYTES,
            )
        };
        if dst + len > layout.home_limit
            || !dst.is_multiple_of(len)
            || src < area
            || src + len > area_end
            || !(src - area).is_multiple_of(len)
        {
            return Err(internal(format!(
                "backup entry {k} maps {dst:#x} to {src:#x}, outside its area"
            )));
        }
        let b = &mut buf[..len as usize];
        img.read_bytes(src, b);
        img.write_bytes(dst, b);
        if page {
            pages += 1;
        } else {
            lines += 1;
        }
    }
    let copied = lines + pages * (PAGE_BYTES / LINE_BYTES);
    rep.bytes_read += 128 + n * ENTRY_BYTES + copied * LINE_BYTES;
    rep.bytes_written += copied * LINE_BYTES;
    rep.details.push(("epoch", epoch as f64));
    rep.details.push(("lines_copied_home", lines as f64));
    rep.details.push(("pages_copied_home", pages as f64));
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemoryController;

    fn machine() -> (ThyNvm, MemCtx) {
        let mut p = Params::defaults(&[PARAMS]);
        p.set_str("nvm.capacity_bytes", "268435456").unwrap();
        p.set_str("thynvm.btt_entries", "64").unwrap();
        p.set_str("thynvm.ptt_entries", "8").unwrap();
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
        (ThyNvm::new(&p, &layout), ctx)
    }

    fn page_of(v: u8) -> Vec<u8> {
        vec![v; PAGE_BYTES as usize]
    }

    fn logical(t: &ThyNvm, ctx: &MemCtx, a: Addr) -> u8 {
        let mut b = [0u8; 1];
        t.read_logical(ctx, a, &mut b);
        b[0]
    }

    /// A checkpoint and its background completion.
    fn checkpoint(t: &mut ThyNvm, ctx: &mut MemCtx) {
        t.checkpoint(ctx, &[], 0, 0);
        t.drain(ctx, 0);
    }

    #[test]
    fn a_page_switches_to_page_writeback_at_22_lines_and_back_below_16() {
        let (mut t, mut ctx) = machine();
        let (sparse, dense) = (0x10_0000u64, 0x20_0000u64);
        // 21 dirty lines: stays in block remapping; 22: switches.
        t.page_writeback(&mut ctx, sparse, (1 << 21) - 1, &page_of(1), 0);
        t.page_writeback(&mut ctx, dense, (1 << 22) - 1, &page_of(2), 0);
        assert_eq!(t.btt.by_key.len(), 43, "one BTT entry per dirty line");
        checkpoint(&mut t, &mut ctx);
        assert!(!t.page_mode.contains(&(sparse / PAGE_BYTES)));
        assert!(t.page_mode.contains(&(dense / PAGE_BYTES)));
        assert_eq!(t.stats.switches_to_page, 1);
        assert_eq!(t.ptt.by_key.len(), 1);
        // Its lines are still read through their BTT entries.
        assert_eq!(logical(&t, &ctx, dense), 2);
        // Page mode: one dirty line writes the whole page (63 clean lines
        // gathered from the BTT entries and home).
        t.page_writeback(&mut ctx, dense, 1, &page_of(3), 0);
        assert_eq!(t.stats.page_lines_written, 64);
        assert_eq!(t.stats.clean_lines_copied, 63);
        let l = |t: &ThyNvm, ctx: &MemCtx, k: u64| logical(t, ctx, dense + k * 64);
        assert_eq!((l(&t, &ctx, 0), l(&t, &ctx, 1), l(&t, &ctx, 30)), (3, 2, 0));
        // The page's BTT entries retire with that checkpoint; the idle
        // sparse lines are copied home and leave the BTT.
        checkpoint(&mut t, &mut ctx);
        assert_eq!(t.btt.by_key.len(), 0);
        assert_eq!((l(&t, &ctx, 0), l(&t, &ctx, 1), l(&t, &ctx, 30)), (3, 2, 0));
        // Fewer than 16 dirty lines in that epoch, but home still held the
        // last completed checkpoint: the switch back waits one epoch, then
        // the page is copied home.
        assert!(t.page_mode.contains(&(dense / PAGE_BYTES)));
        assert_eq!(t.stats.deferred_block_switches, 1);
        checkpoint(&mut t, &mut ctx);
        assert!(!t.page_mode.contains(&(dense / PAGE_BYTES)));
        assert_eq!(t.stats.switches_to_block, 1);
        assert_eq!(t.ptt.by_key.len(), 0);
        let mut b = [0u8; 128];
        ctx.nvm.peek(dense, &mut b);
        assert_eq!((b[0], b[64]), (3, 2), "home holds the page");
    }

    #[test]
    fn a_working_copy_never_overwrites_either_checkpoint_during_the_overlap() {
        let (mut t, mut ctx) = machine();
        let line = 0x30_0000u64;
        t.page_writeback(&mut ctx, line, 1, &page_of(1), 0);
        checkpoint(&mut t, &mut ctx); // C_last = 1 (slot 1)
        t.page_writeback(&mut ctx, line, 1, &page_of(2), 0);
        t.checkpoint(&mut ctx, &[], 0, 0); // 2 in flight
        assert!(t.pending.is_some());
        t.page_writeback(&mut ctx, line, 1, &page_of(3), 0);
        let (i, u) = t.btt.get(line).unwrap();
        let places = [u.c, u.p, u.w];
        assert!(places.iter().all(|&l| l != NONE));
        assert!(places[0] != places[1] && places[1] != places[2] && places[0] != places[2]);
        let at = |l| {
            let mut b = [0u8; 1];
            ctx.nvm.peek(t.g.line_loc(line, i, l), &mut b);
            b[0]
        };
        assert_eq!((at(u.c), at(u.p), at(u.w)), (1, 2, 3));
    }
}
