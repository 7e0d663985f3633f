//! Undo-logging checkpoints (`ckpt-logging`; the dual-page checkpointing
//! paper §2.1 and §5.1.2 "Logging") on the hybrid memory: cache-line
//! granularity, data updated in place at home.
//!
//! Before a line's checkpoint value at home is overwritten during an epoch,
//! the controller reads it and appends an undo entry (the old 64 B and the
//! line's address) to a log in NVM; only once that entry persisted does
//! the new value go home. An ideal, unbounded mapping table (the paper's
//! configuration, after [61]) remembers which lines were logged in the
//! epoch, so a line written back several times logs once.
//!
//! Log layout: blocks of one header line (eight 8-byte address words) and
//! eight data lines, 72 B per entry. An address word is
//! `tag << 40 | line number`, where the tag names the epoch that wrote it;
//! within an epoch entries are appended from slot 0 and each one's data
//! line persists before its address word, so the entries of the running
//! epoch are a prefix of the log. The checkpoint writes the CPU contexts to
//! the standby recovery context and switches to it with one 8-byte write
//! (schemes/checkpoint/mod.rs): that write also truncates the log, because
//! recovery only applies entries tagged with the epoch after the one the
//! switch pointer names. Recovery reads the switch pointer and copies the
//! old values of that prefix back home, rolling NVM back to the checkpoint.

use super::{ContextArea, EPOCH_CYCLES};
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::{MemRead, MemWrite};
use crate::recovery::{UnitCounts, UnitRecovery};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Writeback,
};
use crate::types::{Addr, CoreId, Cycle, Purpose, LINE_BYTES};
use rustc_hash::FxHashSet;

pub static PARAMS: &[ParamSpec] = &[
    EPOCH_CYCLES,
    p!("ckpt-logging.log_bytes", int 640 << 20, "bytes", Check::Range(4096.0, 1e13),
        "modelling choice, docs/MODEL.md (the paper sizes only the mapping table, unbounded; 640 MiB holds two full flushes of a 256 MB DRAM cache at 72 B per 64 B line)",
        "undo log region in NVM (72 B per entry: 64 B old value + 8 B address); a checkpoint is forced when fewer entries remain than a checkpoint's flush may need"),
    p!("ckpt-logging.lookup_cycles", int 16, "cycles", Check::Range(0.0, 10000.0),
        "dual-page checkpointing paper §5.1.1 (mapping-table lookup 16 cycles, as the DPT)",
        "mapping-table lookup on every line write-back to NVM (has the line been logged this epoch?)"),
    p!("ckpt-logging.mutant", str "none", &["none", "data-before-log", "truncate-before-switch", "header-per-block", "scan-first-block"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/ckpt.rs; refused by the CLI): data-before-log = the new value goes home before its undo entry is written; truncate-before-switch = the checkpoint clears the log's first address word before its switch persists; header-per-block = a block's address words are written once its eight entries are in, the homes waiting only for their data lines; scan-first-block = recovery reads only the log's first block of entries"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "ckpt-logging",
    description: "undo-logging checkpoints at cache-line granularity on the hybrid memory (old line + address logged before home is overwritten, once per line per epoch; metadata: 42 bits per logged line in an unbounded mapping table)",
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

/// Physical address width the mapping-table figure assumes (x86-64, the
/// dual-page checkpointing paper §2.3).
pub const PHYS_ADDR_BITS: u32 = 48;
/// Entries per log block (one header line of 8-byte address words).
const PER_BLOCK: u64 = 8;
const BLOCK_BYTES: u64 = LINE_BYTES * (PER_BLOCK + 1);
/// Bytes of NVM log per logged line (data + address word).
pub const ENTRY_BYTES: u64 = BLOCK_BYTES / PER_BLOCK;
const TAG_SHIFT: u32 = 40;
const LINE_MASK: u64 = (1 << TAG_SHIFT) - 1;

/// The tag of entries written in (running) epoch `e` (never 0, the value of
/// unwritten NVM). Runs end long before 2^24 - 1 checkpoints.
fn tag_of(e: u64) -> u64 {
    1 + e % ((1 << 24) - 1)
}

/// Bits of one mapping-table entry: a line address (the paper's 42 bits).
pub fn mapping_bits_per_line() -> u32 {
    PHYS_ADDR_BITS - LINE_BYTES.trailing_zeros()
}

#[derive(Clone, Copy, Debug)]
struct Geometry {
    log_base: Addr,
    entries: u64,
    area: ContextArea,
}

impl Geometry {
    fn new(p: &Params, layout: &Layout) -> Self {
        let blocks = p.u64("ckpt-logging.log_bytes") / BLOCK_BYTES;
        let log_base = layout.reserved_base;
        let log_end = (log_base + blocks * BLOCK_BYTES).div_ceil(4096) * 4096;
        Geometry {
            log_base,
            entries: blocks * PER_BLOCK,
            area: ContextArea::new(log_end, layout.threads, 0),
        }
    }
    fn header(&self, k: u64) -> Addr {
        self.log_base + (k / PER_BLOCK) * BLOCK_BYTES + (k % PER_BLOCK) * 8
    }
    fn data(&self, k: u64) -> Addr {
        self.log_base + (k / PER_BLOCK) * BLOCK_BYTES + (1 + k % PER_BLOCK) * LINE_BYTES
    }
}

fn reserved_bytes(p: &Params) -> u64 {
    let log = (p.u64("ckpt-logging.log_bytes") / BLOCK_BYTES * BLOCK_BYTES).div_ceil(4096) * 4096;
    // 256 cores: the engine's maximum.
    log + ContextArea::new(0, 256, 0).bytes()
}

/// Lines a checkpoint's flush may write back (every line the DRAM cache
/// and the CPU caches can hold): the log keeps room for them.
fn flush_bound_lines(p: &Params, cores: usize) -> u64 {
    let l = |k: &str| p.u64(k) / LINE_BYTES;
    l("hybrid.dram_cache_bytes")
        + l("cache.llc_size_bytes")
        + cores as u64 * (l("cache.l2_size_bytes") + l("cache.l1_size_bytes"))
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Logging::new(p, layout)?))
}

#[derive(Clone, Debug, Default)]
pub(crate) struct LoggingStats {
    pub log_entries: u64,
    pub old_value_reads: u64,
    pub coalesced_writebacks: u64,
    pub data_lines_written: u64,
    pub checkpoints: u64,
    pub forced_checkpoints: u64,
    pub checkpoint_cycles: u64,
    pub peak_lines_per_epoch: u64,
}

pub(crate) struct Logging {
    g: Geometry,
    lookup: Cycle,
    epoch_cycles: Cycle,
    data_first: bool,
    /// Test-only (`ckpt-logging.mutant`): truncate-before-switch.
    truncate_first: bool,
    /// Test-only (`ckpt-logging.mutant`): header-per-block, and the
    /// address words of the block being filled.
    header_per_block: bool,
    block_words: [u64; PER_BLOCK as usize],
    /// The ideal mapping table: lines logged in this epoch.
    logged: FxHashSet<u64>,
    /// Log entries used in this epoch.
    next: u64,
    /// Entries kept free for a checkpoint's flush.
    reserve: u64,
    valid_slot: Option<usize>,
    /// Number of the last checkpoint (0 = none yet).
    epoch: u64,
    forced: bool,
    /// When the newest entry's address word persisted: the next one's is
    /// written no earlier (the entries of an epoch persist as a prefix).
    last_word_at: Cycle,
    pub(crate) stats: LoggingStats,
    stats_since: Option<Cycle>,
    last_end: Cycle,
}

impl Logging {
    pub(crate) fn new(p: &Params, layout: &Layout) -> Result<Self> {
        let g = Geometry::new(p, layout);
        let reserve = flush_bound_lines(p, layout.threads);
        if g.entries < 2 * reserve {
            return Err(Error::input(format!(
                "invalid value '{}' for 'ckpt-logging.log_bytes': it holds {} undo entries of {ENTRY_BYTES} B, but a checkpoint's flush may need {reserve} (the DRAM cache and CPU caches full of dirty lines) and the log must hold twice that; set ckpt-logging.log_bytes to at least {}",
                p.u64("ckpt-logging.log_bytes"),
                g.entries,
                (2 * reserve).div_ceil(PER_BLOCK) * BLOCK_BYTES
            )));
        }
        Ok(Logging {
            g,
            lookup: p.u64("ckpt-logging.lookup_cycles"),
            epoch_cycles: p.u64("checkpoint.epoch_cycles"),
            data_first: p.str("ckpt-logging.mutant") == "data-before-log",
            truncate_first: p.str("ckpt-logging.mutant") == "truncate-before-switch",
            header_per_block: p.str("ckpt-logging.mutant") == "header-per-block",
            block_words: [0; PER_BLOCK as usize],
            logged: FxHashSet::default(),
            next: 0,
            reserve,
            valid_slot: None,
            epoch: 0,
            forced: false,
            last_word_at: 0,
            stats: LoggingStats::default(),
            stats_since: None,
            last_end: 0,
        })
    }

    fn note_time(&mut self, t: Cycle) {
        if self.stats_since.is_none() {
            self.stats_since = Some(t);
        }
    }

    /// One line leaves the DRAM cache (or the LLC) for home.
    fn write_line(&mut self, ctx: &mut MemCtx, line_addr: Addr, data: &[u8], now: Cycle) -> Cycle {
        self.note_time(now);
        let t = now + self.lookup;
        self.stats.data_lines_written += 1;
        if !self.logged.insert(line_addr / LINE_BYTES) {
            // Logged earlier in this epoch: home no longer holds the
            // checkpoint value, overwrite in place.
            self.stats.coalesced_writebacks += 1;
            return ctx.nvm.write(line_addr, data, Purpose::WriteBack, t);
        }
        let k = self.next;
        if k >= self.g.entries {
            ctx.input_error(format!(
                "ckpt-logging: the undo log overflowed ({} entries); raise ckpt-logging.log_bytes",
                k + 1
            ));
            return t;
        }
        self.next += 1;
        self.stats.log_entries += 1;
        self.stats.peak_lines_per_epoch = self.stats.peak_lines_per_epoch.max(self.next);
        if self.next + self.reserve >= self.g.entries {
            self.forced = true;
        }
        // The checkpoint value, read from home before it is overwritten.
        let mut old = [0u8; LINE_BYTES as usize];
        let r = ctx.nvm.read(line_addr, &mut old, Purpose::Log, t);
        self.stats.old_value_reads += 1;
        let word = tag_of(self.epoch + 1) << TAG_SHIFT | (line_addr / LINE_BYTES) & LINE_MASK;
        if self.data_first {
            let home = ctx.nvm.write(line_addr, data, Purpose::WriteBack, r);
            let w = ctx.nvm.write(self.g.data(k), &old, Purpose::Log, r);
            return home.max(
                ctx.nvm
                    .write(self.g.header(k), &word.to_le_bytes(), Purpose::Log, w),
            );
        }
        // Data line, then its address word, then home: each after the
        // previous one persisted, so a persisted word names a whole entry
        // and home changes only under a persisted entry. The address word
        // also waits for the previous entry's: write-backs overlap, and an
        // entry whose old-value read returned sooner must not persist
        // ahead of an earlier slot, since recovery stops at the first slot
        // without the epoch's tag.
        let w = ctx.nvm.write(self.g.data(k), &old, Purpose::Log, r);
        if self.header_per_block {
            self.block_words[(k % PER_BLOCK) as usize] = word;
            if k % PER_BLOCK == PER_BLOCK - 1 {
                let mut hdr = [0u8; LINE_BYTES as usize];
                for (i, x) in self.block_words.iter().enumerate() {
                    hdr[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
                }
                let h = ctx.nvm.write(
                    self.g.header(k + 1 - PER_BLOCK),
                    &hdr,
                    Purpose::Log,
                    w.max(self.last_word_at),
                );
                self.last_word_at = self.last_word_at.max(h);
            }
            return ctx.nvm.write(line_addr, data, Purpose::WriteBack, w);
        }
        let w = ctx.nvm.write(
            self.g.header(k),
            &word.to_le_bytes(),
            Purpose::Log,
            w.max(self.last_word_at),
        );
        self.last_word_at = self.last_word_at.max(w);
        ctx.nvm.write(line_addr, data, Purpose::WriteBack, w)
    }

    fn standby(&self) -> usize {
        self.valid_slot.map_or(0, |s| 1 - s)
    }
}

impl Scheme for Logging {
    fn recovery_paths(&self) -> &'static [&'static str] {
        use crate::schemes::path::{CHECKPOINT, FORCED_CHECKPOINT};
        &[CHECKPOINT, FORCED_CHECKPOINT]
    }

    fn tx_end(&mut self, _ctx: &mut MemCtx, _core: CoreId, now: Cycle) -> Cycle {
        now
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            now,
            ..
        } = ev;
        self.write_line(ctx, line_addr, data, now)
    }

    fn page_writeback(
        &mut self,
        ctx: &mut MemCtx,
        page_addr: Addr,
        dirty: u64,
        data: &[u8],
        now: Cycle,
    ) -> Cycle {
        let mut done = now;
        let mut m = dirty;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            let r = k * LINE_BYTES as usize..(k + 1) * LINE_BYTES as usize;
            done = done.max(self.write_line(ctx, page_addr + k as u64 * LINE_BYTES, &data[r], now));
        }
        done
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
        if self.truncate_first {
            ctx.nvm
                .write(self.g.header(0), &0u64.to_le_bytes(), Purpose::Log, now);
        }
        // Step 3: CPU state to the standby slot (the mapping table is
        // volatile: recovery needs only the log). Step 4: the switch, which
        // also truncates the log (its entries' tag is no longer the one
        // after the valid checkpoint).
        let t = self
            .g
            .area
            .write_contexts(&mut ctx.nvm, s, self.epoch, cpu_state, now);
        let t = self.g.area.switch(&mut ctx.nvm, s, self.epoch, t);
        let committed = ctx.nvm.persist_log.count();
        self.valid_slot = Some(s);
        self.logged.clear();
        self.next = 0;
        self.forced = false;
        self.stats.checkpoints += 1;
        self.stats.checkpoint_cycles += t.saturating_sub(started);
        self.last_end = t;
        (t, committed)
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        let span = self
            .last_end
            .saturating_sub(self.stats_since.unwrap_or(0))
            .max(1);
        let bits = f64::from(mapping_bits_per_line());
        vec![
            ("checkpoints", s.checkpoints as f64),
            ("forced_checkpoints", s.forced_checkpoints as f64),
            ("checkpoint_cycles", s.checkpoint_cycles as f64),
            (
                "checkpoint_time_share",
                s.checkpoint_cycles as f64 / span as f64,
            ),
            ("data_lines_written", s.data_lines_written as f64),
            ("log_entries", s.log_entries as f64),
            // Each entry: one 64 B data line + one 8 B address word.
            ("log_lines_written", s.log_entries as f64),
            ("log_address_words_written", s.log_entries as f64),
            ("old_value_reads", s.old_value_reads as f64),
            ("coalesced_writebacks", s.coalesced_writebacks as f64),
            (
                "extra_write_ratio",
                (s.log_entries as f64 * ENTRY_BYTES as f64)
                    / (s.data_lines_written.max(1) as f64 * LINE_BYTES as f64),
            ),
            ("mapping_bits_per_line", bits),
            ("mapping_table_peak_lines", s.peak_lines_per_epoch as f64),
            (
                "mapping_table_peak_bytes",
                s.peak_lines_per_epoch as f64 * bits / 8.0,
            ),
            ("nvm_log_bytes_per_logged_line", ENTRY_BYTES as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = LoggingStats::default();
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

/// Recovery: the switch pointer names the last checkpoint E; the entries
/// tagged E + 1 (a prefix of the log) hold the checkpoint values of every
/// line changed since, copied back home. Idempotent (the log is not
/// modified). Written as units (recovery/units.rs): one per log entry, the
/// first entry with another tag ending the scan.
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_units(new_units(p, layout), img)
}

/// ckpt-logging's recovery as units (recovery/units.rs).
pub(crate) fn new_units(p: &Params, layout: &Layout) -> Box<dyn UnitRecovery> {
    Box::new(LogUnits {
        g: Geometry::new(p, layout),
        home_limit: layout.home_limit,
        epoch: 0,
        first_block_only: p.str("ckpt-logging.mutant") == "scan-first-block",
    })
}

struct LogUnits {
    g: Geometry,
    home_limit: Addr,
    /// The epoch the switch pointer names (0 before any).
    epoch: u64,
    /// Test-only (`ckpt-logging.mutant` = scan-first-block).
    first_block_only: bool,
}

fn log_internal(m: String) -> Error {
    Error::Internal(format!("ckpt-logging recovery: {m}"))
}

impl UnitRecovery for LogUnits {
    fn begin(&mut self, img: &dyn MemRead) -> Result<u64> {
        let (epoch, s) = match self.g.area.read_switch(img).map_err(log_internal)? {
            Some((e, s)) => (e, Some(s)),
            None => (0, None),
        };
        self.g.area.read_contexts(img, s).map_err(log_internal)?;
        self.epoch = epoch;
        Ok(self.g.entries)
    }

    fn unit(
        &self,
        k: u64,
        img: &dyn MemRead,
        home: &mut dyn FnMut(Addr, &[u8]),
    ) -> Result<Option<UnitCounts>> {
        if self.first_block_only && k >= PER_BLOCK {
            return Ok(None);
        }
        let w = img.read_u64(self.g.header(k));
        if w >> TAG_SHIFT != tag_of(self.epoch + 1) {
            return Ok(None);
        }
        let a = (w & LINE_MASK) * LINE_BYTES;
        if a >= self.home_limit {
            return Err(log_internal(format!(
                "log entry {k} names {a:#x} outside home"
            )));
        }
        let mut line = [0u8; LINE_BYTES as usize];
        img.read_bytes(self.g.data(k), &mut line);
        home(a, &line);
        Ok(Some([1, 0]))
    }

    fn report(&self, [undone, _]: UnitCounts) -> RecoveryReport {
        let mut rep = RecoveryReport {
            bytes_read: 64 + (undone + 1) * 8 + undone * LINE_BYTES,
            bytes_written: undone * LINE_BYTES,
            ..RecoveryReport::default()
        };
        rep.details.push(("epoch", self.epoch as f64));
        rep.details.push(("lines_rolled_back", undone as f64));
        rep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{MemRead, MemoryController};

    fn l_params() -> Params {
        let mut p = Params::defaults(&[PARAMS]);
        p.set_str("nvm.capacity_bytes", "268435456").unwrap();
        p.set_str("ckpt-logging.log_bytes", "67108864").unwrap();
        p
    }

    fn machine() -> (Logging, MemCtx) {
        let p = l_params();
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
        (Logging::new(&p, &layout).unwrap(), ctx)
    }

    #[test]
    fn a_line_is_logged_once_per_epoch_with_its_checkpoint_value() {
        let (mut l, mut ctx) = machine();
        let a = 0x1000;
        ctx.nvm.preload(a, &[1u8; 64]);
        l.page_writeback(&mut ctx, a, 0b1, &[2u8; 4096], 0);
        l.page_writeback(&mut ctx, a, 0b11, &[3u8; 4096], 0);
        assert_eq!(l.stats.log_entries, 2, "line 0 once, line 1 once");
        assert_eq!(l.stats.coalesced_writebacks, 1);
        let mut b = [0u8; 64];
        ctx.nvm.peek(l.g.data(0), &mut b);
        assert_eq!(b[0], 1, "the entry holds the checkpoint value, not 2");
        ctx.nvm.peek(a, &mut b);
        assert_eq!(b[0], 3, "home holds the working value");
        // A crash now rolls home back to the checkpoint from the log bytes.
        let mut img = crate::mem::Overlay::new(ctx.nvm.media());
        let rep = recover(&mut img, &l_params(), &ctx.layout).unwrap();
        assert_eq!(rep.details[1], ("lines_rolled_back", 2.0));
        let mut h = [0u8; 8];
        img.read_bytes(a, &mut h);
        assert_eq!((h[0], img.read_u64(a + 64)), (1, 0));
        // After a checkpoint the same line is logged again.
        l.checkpoint(&mut ctx, &[0u8; 192], 0, 0);
        l.page_writeback(&mut ctx, a, 0b1, &[4u8; 4096], 0);
        assert_eq!(l.stats.log_entries, 3);
        ctx.nvm.peek(l.g.data(0), &mut b);
        assert_eq!(
            b[0], 3,
            "the new epoch's entry holds the new checkpoint value"
        );
    }
}
