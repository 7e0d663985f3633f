//! DudeTM (Liu et al., ASPLOS 2017) as the dual-page checkpointing paper's
//! software baseline (§5.1.2, BASELINES.md): durable transactions decoupled
//! into three asynchronous steps.
//!
//! - **Perform** (on the simulated core, `instrument`): the transaction runs
//!   on a volatile shadow copy of the data in DRAM: every load and store of
//!   program data is redirected to the shadow address space; each store also
//!   appends a redo entry {address, value} (two word stores) to the core's
//!   volatile log ring in DRAM, and the transaction ends with a commit marker
//!   in that ring. No flush, no fence: TxEnd returns at once.
//! - **Persist** (background, every `dudetm.group_commit_ms`, 16 ms as in
//!   the paper's evaluation): the persist thread reads the volatile logs
//!   (DRAM reads), writes every redo entry of the group to the persistent log
//!   in NVM, waits for them (its fence), then writes the group header
//!   {magic, group seq, entry count, checksum over the entries}; once that is
//!   accepted the group's transactions are reported durable (the oracle's
//!   `Delayed` rule).
//! - **Reproduce** (background, right after each group commit): the group's
//!   entries are applied to the NVM home data (read-modify-write per line,
//!   words of one line combined), then the log is truncated by a superblock
//!   write {magic, replayed seq, checksum} into one of two alternating lines.
//!   The log thus holds at most one unreplayed group, written at its start.
//!
//! Recovery (bytes only): the valid superblock with the newest replayed seq;
//! if the group header is valid (magic, checksum over its entries) and newer,
//! replay its entries in log order and advance the superblock (idempotent).
//!
//! The DRAM shadow is modelled as a volatile region with DRAM timing: shadow
//! addresses (above NVM, like LSM's index) are cached like any data, and an
//! LLC miss or write-back goes to the DRAM controller at a frame assigned on
//! the page's first touch (4 KiB demand paging, at most `dudetm.dram_bytes`);
//! the first touch of a data page copies it from NVM (a timed 4 KiB NVM read).
//! No DRAM cache of NVM is involved (docs/model/software.md).

use super::tinystm::{self, StmCosts, TinyStm};
use super::Instructions;
use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::log::{csum, header_line, line_word, recovery_ns};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Writeback,
};
use crate::types::{line_of, write_word, Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES};
use crate::workloads::Op;
use rustc_hash::FxHashMap;

pub static PARAMS: &[ParamSpec] = &[
    p!("dudetm.group_commit_ms", float 16.0, "ms", Check::Range(1e-6, 1e4),
        "dual-page checkpointing paper §5.2 (DudeTM with a 16 ms group-commit interval); BASELINES.md",
        "interval between group commits of the persistent redo log"),
    p!("dudetm.dram_bytes", int 4 << 30, "bytes", Check::Range(1048576.0, 1.1e12),
        "dual-page checkpointing paper §5.1.2 (DudeTM is given 4 GB DRAM)",
        "DRAM for the shadow copy and the volatile logs (4 KiB frames, assigned on first touch)"),
    p!("dudetm.log_bytes", int 64 << 20, "bytes", Check::PowerOfTwo(1 << 12, 1 << 36),
        "modelling choice: holds one group of 16 B entries (a fuller log forces an early group commit)",
        "persistent redo log in NVM (one group: 64 B header + 16 B per entry)"),
    p!("dudetm.volatile_log_bytes_per_core", int 4 << 20, "bytes", Check::PowerOfTwo(1 << 12, 1 << 34),
        "modelling choice: a per-thread ring in DRAM; a fuller ring forces an early group commit that the worker waits for",
        "per-core volatile redo log ring in DRAM"),
    p!("dudetm.mutant", str "none", &["none", "truncate-before-reproduce", "ignore-checksum"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): truncate-before-reproduce = the superblock that truncates the log is written before the group's home writes; ignore-checksum = recovery replays a group whose header's checksum does not match its entries"),
    p!("dudetm.tx_instructions", int 20, "instructions", Check::Range(0.0, 1e6),
        "modelling choice: DudeTM's own per-transaction bookkeeping (the commit marker's ring slot and transaction id); the STM's begin and commit are dudetm.stm_*",
        "Perform step: per-transaction redo-log bookkeeping besides the commit marker store"),
    p!("dudetm.write_instructions", int 4, "instructions", Check::Range(0.0, 1e6),
        "modelling choice: ring index bump, wrap check and address computation of one redo-log append",
        "Perform step: per-store redo-log append besides its two stores"),
    p!("dudetm.stm", str "tinystm", &["tinystm", "none"],
        "DudeTM (Liu et al., ASPLOS 2017) runs its Perform step on an STM, TinySTM in its STM variant; docs/design/baselines.md §3.1",
        "concurrency control of the Perform step: tinystm = TinySTM WB-ETL barriers, write-set buffering and commit; none = no STM work (ablation)"),
    p!("dudetm.stm_start_instructions", int 52, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_start + sigsetjmp"),
    p!("dudetm.stm_load_instructions", int 44, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_load of a word the transaction has not written"),
    p!("dudetm.stm_load_raw_instructions", int 37, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_load of a word the transaction wrote (read from the write set)"),
    p!("dudetm.stm_store_instructions", int 47, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_store, first write to its stripe (orec CAS, new write-set entry)"),
    p!("dudetm.stm_store_waw_instructions", int 39, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_store to a stripe the transaction owns"),
    p!("dudetm.stm_commit_instructions", int 53, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_commit of an update transaction, fixed part"),
    p!("dudetm.stm_commit_per_write_instructions", int 12, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_commit, per write-set entry (write-back, lock release)"),
    p!("dudetm.stm_commit_per_read_instructions", int 10, "instructions", Check::Range(0.0, 1e6),
        STM_SOURCE, "stm_commit, per read-set entry when it validates"),
];

const STM_SOURCE: &str = "TinySTM @02c10cc (patrickmarlier/tinystm), default WB-ETL build, gcc 12.2 -O2, callgrind Ir per call, one thread (per-read validation: two threads); docs/design/baselines.md §3.1";

pub static INFO: SchemeInfo = SchemeInfo {
    name: "dudetm",
    description: "DudeTM (software): transactions on a DRAM shadow, redo log persisted by group commit every 16 ms, reproduced to NVM in the background",
    durability: Durability::Delayed,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::DPC_DIRECT),
        tx: 40_000,
        reaches: "group commit every 16 ms: about 3 on btree (1 in 10,000 tx, measured with the DRAM cache)",
        needs: Some(crate::schemes::machines::needs_no_dram_cache),
    },
};

/// Test-only: each transaction is reported durable at TxEnd, before its
/// group is persisted.
#[doc(hidden)]
pub static MUTANT_ACK_BEFORE_PERSIST: SchemeInfo = SchemeInfo {
    name: "dudetm-mutant-ack-before-persist",
    description: "test-only: acknowledges transactions before their group is persisted",
    durability: Durability::Delayed,
    params: PARAMS,
    reserved_bytes,
    build: build_ack_early,
    recover,
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
    defaults: crate::schemes::RunDefaults::BARE,
};

const SB_MAGIC: u64 = 0x4455_4445_5342_4c4b; // "DUDESBLK"
const GROUP_MAGIC: u64 = 0x4455_4445_4752_5031; // "DUDEGRP1"
const ENTRY_BYTES: u64 = 16;
const PAGE_BYTES: u64 = 4096;
/// Address span of the shadow (data + volatile logs) as the caches see it.
const SHADOW_SPAN: u64 = 1 << 40;
/// Marks a commit word in the volatile log.
const COMMIT_MARK: u64 = 1 << 63;

fn reserved_bytes(p: &Params) -> u64 {
    3 * LINE_BYTES + p.u64("dudetm.log_bytes")
}

/// The persistent log: superblocks A and B, the group header, the entries.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    base: Addr,
    log_bytes: u64,
}

impl Geometry {
    fn new(p: &Params, layout: &Layout) -> Self {
        Geometry {
            base: layout.reserved_base,
            log_bytes: p.u64("dudetm.log_bytes"),
        }
    }
    fn superblock(&self, seq: u64) -> Addr {
        self.base + (seq % 2) * LINE_BYTES
    }
    fn header(&self) -> Addr {
        self.base + 2 * LINE_BYTES
    }
    fn entries(&self) -> Addr {
        self.base + 3 * LINE_BYTES
    }
    fn capacity_entries(&self) -> u64 {
        self.log_bytes / ENTRY_BYTES
    }
}

fn superblock_line(seq: u64) -> LineData {
    let w = [SB_MAGIC, seq];
    header_line(&[w[0], w[1], csum(&w, &[])])
}

fn parse_superblock(l: &LineData) -> Option<u64> {
    let w = [line_word(l, 0), line_word(l, 1)];
    (w[0] == SB_MAGIC && line_word(l, 2) == csum(&w, &[])).then_some(w[1])
}

fn group_header(seq: u64, entries: &[u8]) -> LineData {
    let w = [GROUP_MAGIC, seq, entries.len() as u64 / ENTRY_BYTES];
    header_line(&[w[0], w[1], w[2], csum(&w, entries)])
}

/// Recovery from the bytes: replay the persisted, not yet replayed group.
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// Recovery as a resumable scan (recovery/scan.rs, one cursor): the valid
/// superblock with the newest replayed seq; if the group header is valid
/// (magic, checksum over its entries) and newer, its entries are the home
/// writes in log order and advancing the superblock is the finish. The
/// cursor marks once, after everything it read: a write to the log or the
/// superblocks (a new group header, a truncation) invalidates the scan,
/// while the reproduce step's home writes and the next group's entries
/// (written before its header) touch nothing it read.
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(DudeScan {
        g: Geometry::new(p, layout),
        home_limit: layout.home_limit,
        done: false,
        read: 0,
        replayed_seq: None,
        entries_replayed: 0,
        ignore_checksum: p.str("dudetm.mutant") == "ignore-checksum",
    })
}

struct DudeScan {
    g: Geometry,
    home_limit: Addr,
    done: bool,
    /// Lines read.
    read: u64,
    /// The group replayed (its superblock is the finish write).
    replayed_seq: Option<u64>,
    entries_replayed: u64,
    /// Test-only (`dudetm.mutant`): the header's checksum is not checked.
    ignore_checksum: bool,
}

impl ResumableScan for DudeScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let g = self.g;
        let replayed = [0, 1]
            .iter()
            .filter_map(|&i| parse_superblock(&io.read_line(g.superblock(i))))
            .max()
            .unwrap_or(0);
        let hdr = io.read_line(g.header());
        self.read = 3;
        let (magic, seq, n) = (line_word(&hdr, 0), line_word(&hdr, 1), line_word(&hdr, 2));
        if magic == GROUP_MAGIC && seq > replayed && n <= g.capacity_entries() {
            let mut bytes = vec![0u8; (n * ENTRY_BYTES) as usize];
            io.read_bytes(g.entries(), &mut bytes);
            self.read += (n * ENTRY_BYTES).div_ceil(LINE_BYTES);
            if self.ignore_checksum || line_word(&hdr, 3) == csum(&[magic, seq, n], &bytes) {
                for e in bytes.chunks_exact(ENTRY_BYTES as usize) {
                    let addr = u64::from_le_bytes(e[..8].try_into().unwrap());
                    if addr % 8 != 0 || addr >= self.home_limit {
                        return Err(Error::Internal(format!(
                            "dudetm recovery: group {seq} has a checksummed entry for {addr:#x} outside the data"
                        )));
                    }
                    io.home(addr, &e[8..16]);
                }
                self.entries_replayed = n;
                self.replayed_seq = Some(seq);
            }
        }
        self.done = true;
        io.mark();
        Ok(())
    }

    /// Advance the superblock past the replayed group (idempotent: a crash
    /// before it replays the same entries again).
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        if let Some(seq) = self.replayed_seq {
            out(self.g.superblock(seq), &superblock_line(seq));
        }
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let written = self.entries_replayed + u64::from(self.replayed_seq.is_some());
        RecoveryReport {
            bytes_read: self.read * LINE_BYTES,
            bytes_written: written * LINE_BYTES,
            modeled_ns: recovery_ns(p, self.read, written),
            details: vec![("entries_replayed", self.entries_replayed as f64)],
        }
    }
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(DudeTm::new(p, layout, false)?))
}

fn build_ack_early(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(DudeTm::new(p, layout, true)?))
}

#[derive(Clone, Debug, Default)]
struct Stats {
    transactions: u64,
    redo_entries: u64,
    volatile_log_bytes: u64,
    group_commits: u64,
    forced_group_commits: u64,
    log_bytes: u64,
    persist_flushes: u64,
    persist_fences: u64,
    replay_bytes: u64,
    replay_lines_read: u64,
    page_faults: u64,
    instructions: Instructions,
}

struct DudeTm {
    g: Geometry,
    home_limit: Addr,
    /// Shadow address of program address 0 (above NVM, below the ADR range).
    shadow_base: Addr,
    /// Shadow offset of core 0's volatile log ring (above the data).
    vlog_base: u64,
    vlog_bytes: u64,
    /// Shadow offset of the STM metadata and the bytes of one core's alias
    /// of it (tinystm.rs); every alias maps to the same frames.
    stm_base: u64,
    stm_alias_bytes: u64,
    /// Shadow page -> DRAM frame, assigned on first touch.
    frames: FxHashMap<u64, u64>,
    max_frames: u64,
    /// Per core: ring write position (bytes, not wrapped), bytes not yet
    /// read by the persist thread, the redo entries and ring bytes of the
    /// transaction being run, transactions committed (TxEnd).
    vlog_pos: Vec<u64>,
    vlog_unpersisted: Vec<u64>,
    cur: Vec<Vec<(Addr, u64)>>,
    cur_bytes: Vec<u64>,
    committed: Vec<u64>,
    /// Committed, not yet persisted redo entries, in commit order.
    pending: Vec<(Addr, u64)>,
    pending_tx: u64,
    group_seq: u64,
    interval: Cycle,
    next_group_at: Cycle,
    tx_instructions: u64,
    write_instructions: u64,
    ack_early: bool,
    /// Test-only (`dudetm.mutant`): the truncation before the home writes.
    truncate_first: bool,
    /// TinySTM's barriers (None: `dudetm.stm = none`).
    stm: Option<TinyStm>,
    /// Scratch: where each program load landed in the rewritten stream.
    load_pos: Vec<u32>,
    /// The shadow holds the set-up data (see `load_shadow`).
    loaded: bool,
    /// Scratch: the group's entry bytes and its lines for reproduce.
    bytes: Vec<u8>,
    lines: Vec<(Addr, u8, [u64; 8])>,
    line_idx: FxHashMap<Addr, u32>,
    stats: Stats,
}

impl DudeTm {
    fn new(p: &Params, layout: &Layout, ack_early: bool) -> Result<Self> {
        let shadow_base = layout
            .capacity_bytes
            .next_power_of_two()
            .max(layout.capacity_bytes);
        let vlog_bytes = p.u64("dudetm.volatile_log_bytes_per_core");
        let vlog_base = layout.home_limit;
        let stm_base =
            (vlog_base + layout.threads as u64 * vlog_bytes).next_multiple_of(PAGE_BYTES);
        if stm_base + tinystm::span_bytes(layout.threads) > SHADOW_SPAN {
            return Err(Error::input(format!(
                "nvm.capacity_bytes={} is too large for dudetm's shadow address space (at most {} bytes of data); lower nvm.capacity_bytes",
                layout.capacity_bytes, SHADOW_SPAN / 2
            )));
        }
        let interval = ((p.f64("dudetm.group_commit_ms") * 1e6 * p.f64("cpu.freq_ghz")).ceil()
            as Cycle)
            .max(1);
        let n = layout.threads;
        Ok(DudeTm {
            g: Geometry::new(p, layout),
            home_limit: layout.home_limit,
            shadow_base,
            vlog_base,
            vlog_bytes,
            stm_base,
            stm_alias_bytes: tinystm::alias_bytes(layout.threads),
            frames: FxHashMap::default(),
            max_frames: p.u64("dudetm.dram_bytes") / PAGE_BYTES,
            vlog_pos: vec![0; n],
            vlog_unpersisted: vec![0; n],
            cur: vec![Vec::new(); n],
            cur_bytes: vec![0; n],
            committed: vec![0; n],
            pending: Vec::new(),
            pending_tx: 0,
            group_seq: 0,
            interval,
            next_group_at: interval,
            tx_instructions: p.u64("dudetm.tx_instructions"),
            write_instructions: p.u64("dudetm.write_instructions"),
            ack_early,
            truncate_first: p.str("dudetm.mutant") == "truncate-before-reproduce",
            stm: (p.str("dudetm.stm") == "tinystm").then(|| {
                TinyStm::new(
                    shadow_base + stm_base,
                    layout.threads,
                    StmCosts::from_params(p),
                )
            }),
            load_pos: Vec::new(),
            loaded: false,
            bytes: Vec::new(),
            lines: Vec::new(),
            line_idx: FxHashMap::default(),
            stats: Stats::default(),
        })
    }

    #[inline]
    fn is_shadow(&self, addr: Addr) -> bool {
        (self.shadow_base..self.shadow_base + SHADOW_SPAN).contains(&addr)
    }

    /// Shadow address of byte `pos` (unwrapped) of `core`'s volatile log.
    #[inline]
    fn vlog_addr(&self, core: CoreId, pos: u64) -> Addr {
        self.shadow_base + self.vlog_base + core as u64 * self.vlog_bytes + pos % self.vlog_bytes
    }

    /// DRAM address of a shadow address: (address, whether its page was
    /// just assigned a frame).
    fn dram_addr(&mut self, ctx: &mut MemCtx, shadow: Addr) -> (Addr, bool) {
        let mut off = shadow - self.shadow_base;
        if off >= self.stm_base {
            // One copy of the STM metadata in DRAM, whichever core's alias.
            off = self.stm_base + (off - self.stm_base) % self.stm_alias_bytes;
        }
        let page = off / PAGE_BYTES;
        let next = self.frames.len() as u64;
        let mut fresh = false;
        let frame = *self.frames.entry(page).or_insert_with(|| {
            fresh = true;
            next
        });
        if fresh && off >= self.home_limit {
            // Logs and STM metadata: the OS hands out a zeroed page (the
            // DRAM device may hold other bytes at that frame).
            ctx.dram
                .preload(frame * PAGE_BYTES, &[0u8; PAGE_BYTES as usize]);
        }
        if fresh && next == self.max_frames {
            ctx.input_error(format!(
                "dudetm.dram_bytes={} holds {} pages of 4 KiB, but this run's shadow data and volatile logs need more; raise dudetm.dram_bytes",
                self.max_frames * PAGE_BYTES,
                self.max_frames
            ));
        }
        (frame * PAGE_BYTES + off % PAGE_BYTES, fresh)
    }

    /// Persist the committed transactions' redo entries as one group, then
    /// reproduce it to the home data and truncate the log. Returns when the
    /// group is durable and when the truncation was accepted.
    /// Before the first transaction: the persistent data the workload set
    /// up is copied into the shadow, untimed like the setup itself (DudeTM
    /// is given enough DRAM to hold it; pages allocated later fault).
    fn load_shadow(&mut self, ctx: &mut MemCtx) {
        self.loaded = true;
        let pages: Vec<u64> = ctx.nvm.media().page_numbers();
        let psz = crate::mem::image::PAGE_BYTES;
        let mut buf = vec![0u8; psz as usize];
        for p in pages {
            let addr = p * psz;
            if addr >= self.home_limit {
                continue;
            }
            ctx.nvm.peek(addr, &mut buf);
            let mut off = 0;
            while off < psz {
                let (a, _) = self.dram_addr(ctx, self.shadow_base + addr + off);
                ctx.dram
                    .preload(a, &buf[off as usize..(off + PAGE_BYTES) as usize]);
                off += PAGE_BYTES;
            }
        }
    }

    fn group_commit(&mut self, ctx: &mut MemCtx, now: Cycle) -> (Cycle, Cycle) {
        if self.pending_tx == 0 {
            return (now, now);
        }
        // The persist thread reads each core's new volatile log bytes.
        let mut t = now;
        let mut buf = [0u8; LINE_BYTES as usize];
        for core in 0..self.vlog_pos.len() {
            let n = self.vlog_unpersisted[core];
            if n == 0 {
                continue;
            }
            let start = line_of(self.vlog_pos[core] - n);
            let mut pos = start;
            while pos < self.vlog_pos[core] {
                let (a, _) = self.dram_addr(ctx, self.vlog_addr(core, pos));
                t = t.max(ctx.dram.read(line_of(a), &mut buf, Purpose::Log, now));
                pos += LINE_BYTES;
            }
            self.vlog_unpersisted[core] = 0;
        }
        // Entries, then (after its fence) the group header.
        self.group_seq += 1;
        let seq = self.group_seq;
        self.bytes.clear();
        for &(a, v) in &self.pending {
            self.bytes.extend_from_slice(&a.to_le_bytes());
            self.bytes.extend_from_slice(&v.to_le_bytes());
        }
        let mut persisted = t;
        let mut lines = 0;
        for (i, chunk) in self.bytes.chunks(LINE_BYTES as usize).enumerate() {
            let a = self.g.entries() + i as u64 * LINE_BYTES;
            persisted = persisted.max(ctx.nvm.write(a, chunk, Purpose::Log, t));
            lines += 1;
        }
        let hdr = group_header(seq, &self.bytes);
        let durable = ctx
            .nvm
            .write(self.g.header(), &hdr, Purpose::Metadata, persisted);
        self.stats.log_bytes += (lines + 1) * LINE_BYTES;
        self.stats.persist_flushes += lines + 1;
        self.stats.persist_fences += 2;
        if !self.ack_early {
            for (core, &n) in self.committed.iter().enumerate() {
                ctx.nvm.persist_log.report_durable(core, n);
            }
        }
        // Reproduce: one read-modify-write per home line the group wrote.
        self.lines.clear();
        self.line_idx.clear();
        for &(a, v) in &self.pending {
            let line = line_of(a);
            let i = *self.line_idx.entry(line).or_insert_with(|| {
                self.lines.push((line, 0, [0; 8]));
                self.lines.len() as u32 - 1
            }) as usize;
            let w = ((a % LINE_BYTES) / 8) as usize;
            self.lines[i].1 |= 1 << w;
            self.lines[i].2[w] = v;
        }
        self.lines.sort_unstable_by_key(|l| l.0);
        // The truncation waits for the home writes: before them, a crash
        // would lose the group (recovery replays only a group newer than
        // the superblock).
        let mut truncated = durable;
        if self.truncate_first {
            truncated = ctx.nvm.write(
                self.g.superblock(seq),
                &superblock_line(seq),
                Purpose::Metadata,
                durable,
            );
        }
        let mut home = durable;
        for &(line, mask, words) in &self.lines {
            let mut data = [0u8; LINE_BYTES as usize];
            let mut ready = durable;
            if mask != 0xff {
                ready = ctx.nvm.read(line, &mut data, Purpose::Gc, durable);
                self.stats.replay_lines_read += 1;
            }
            for (w, &v) in words.iter().enumerate() {
                if mask & (1 << w) != 0 {
                    write_word(&mut data, w, v);
                }
            }
            home = home.max(ctx.nvm.write(line, &data, Purpose::Gc, ready));
            self.stats.replay_bytes += LINE_BYTES;
        }
        self.stats.persist_flushes += self.lines.len() as u64 + 1;
        self.stats.persist_fences += 1;
        if !self.truncate_first {
            truncated = ctx.nvm.write(
                self.g.superblock(seq),
                &superblock_line(seq),
                Purpose::Metadata,
                home,
            );
        }
        self.stats.log_bytes += LINE_BYTES;
        self.stats.group_commits += 1;
        self.pending.clear();
        self.pending_tx = 0;
        (durable, truncated)
    }
}

impl Scheme for DudeTm {
    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let entries = self.cur[core].len() as u64;
        let cap = self.g.capacity_entries();
        if entries > cap {
            ctx.input_error(format!(
                "dudetm.log_bytes={} holds {cap} redo entries, but a transaction on core {core} wrote {entries} words; {}",
                self.g.log_bytes,
                crate::schemes::raise_advice(PARAMS, "dudetm.log_bytes", entries * ENTRY_BYTES)
            ));
            return now;
        }
        let mut t = now;
        // No room for this transaction in the persistent log or the ring:
        // the group commit runs now and the worker waits until the persist
        // thread has taken the ring's bytes (the group is durable).
        if self.pending.len() as u64 + entries > cap
            || self.vlog_unpersisted[core] + self.cur_bytes[core] > self.vlog_bytes
        {
            let (durable, _) = self.group_commit(ctx, now);
            self.stats.forced_group_commits += 1;
            t = t.max(durable);
        }
        let cur = std::mem::take(&mut self.cur[core]);
        self.pending.extend_from_slice(&cur);
        self.cur[core] = cur;
        self.pending_tx += 1;
        self.committed[core] += 1;
        self.vlog_unpersisted[core] += self.cur_bytes[core];
        self.stats.transactions += 1;
        if self.ack_early {
            ctx.nvm
                .persist_log
                .report_durable(core, self.committed[core]);
        }
        t
    }

    fn instrument(&mut self, core: CoreId, ops: &[Op], out: &mut Vec<Op>) -> bool {
        out.reserve(ops.len() * 6 + 16);
        let mut ins = self.stats.instructions;
        ins.emit(out, self.tx_instructions);
        let mut cur = std::mem::take(&mut self.cur[core]);
        cur.clear();
        let mut stm = self.stm.take();
        let mut pos = self.vlog_pos[core];
        let start = pos;
        let shadow = self.shadow_base;
        // Loads emitted so far; `load_pos[k]` is the load that gives the
        // k-th program load its value, so a program dependency distance is
        // renumbered across the STM's loads in between.
        let mut emitted: u32 = 0;
        self.load_pos.clear();
        if let Some(stm) = stm.as_mut() {
            emitted += stm.begin(out, &mut ins, core);
        }
        for &op in ops {
            match op {
                Op::Load { addr, value, dep } if addr < self.home_limit => {
                    let (n, from_wset) = match stm.as_mut() {
                        Some(stm) => stm.read_barrier(out, &mut ins, core, addr),
                        None => (0, false),
                    };
                    emitted += n;
                    if from_wset {
                        self.load_pos.push(emitted - 1);
                        continue;
                    }
                    let dep = if dep > 0 {
                        let k = self.load_pos.len();
                        let producer = self.load_pos.get(k.wrapping_sub(dep as usize));
                        producer.map_or(0, |&p| u8::try_from(emitted - p).unwrap_or(0))
                    } else {
                        0
                    };
                    out.push(Op::Load {
                        addr: shadow + addr,
                        value,
                        dep,
                    });
                    self.load_pos.push(emitted);
                    emitted += 1;
                    if let Some(stm) = stm.as_mut() {
                        emitted += stm.after_load(out, &mut ins, core, addr);
                    }
                }
                Op::Load { .. } => {
                    self.load_pos.push(emitted);
                    emitted += 1;
                    out.push(op);
                }
                Op::Store { addr, value } if addr < self.home_limit => {
                    match stm.as_mut() {
                        // Buffered in the write set, written at commit.
                        Some(stm) => emitted += stm.write(out, &mut ins, core, addr, value),
                        None => out.push(Op::Store {
                            addr: shadow + addr,
                            value,
                        }),
                    }
                    out.push(Op::Store {
                        addr: self.vlog_addr(core, pos),
                        value: addr,
                    });
                    out.push(Op::Store {
                        addr: self.vlog_addr(core, pos + 8),
                        value,
                    });
                    pos += ENTRY_BYTES;
                    ins.emit(out, self.write_instructions);
                    cur.push((addr, value));
                }
                _ => out.push(op),
            }
        }
        if let Some(stm) = stm.as_mut() {
            stm.commit(out, &mut ins, core, |a| shadow + a);
        }
        self.stm = stm;
        out.push(Op::Store {
            addr: self.vlog_addr(core, pos),
            value: COMMIT_MARK | (self.committed[core] + 1),
        });
        pos += 8;
        self.stats.redo_entries += cur.len() as u64;
        self.stats.volatile_log_bytes += pos - start;
        self.cur_bytes[core] = pos - start;
        self.vlog_pos[core] = pos;
        self.cur[core] = cur;
        self.stats.instructions = ins;
        true
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
        if !self.is_shadow(line_addr) {
            return (ctx.nvm.read(line_addr, out, Purpose::Demand, now), false);
        }
        let (a, fresh) = self.dram_addr(ctx, line_addr);
        let home = line_addr - self.shadow_base;
        if fresh && home < self.home_limit {
            // First touch of a data page: copy it from NVM into its frame.
            self.stats.page_faults += 1;
            let page = home - home % PAGE_BYTES;
            let mut buf = [0u8; PAGE_BYTES as usize];
            let done = ctx.nvm.read(page, &mut buf, Purpose::Demand, now);
            ctx.dram
                .write(a - a % PAGE_BYTES, &buf, Purpose::Demand, done);
            let o = (home - page) as usize;
            out.copy_from_slice(&buf[o..o + LINE_BYTES as usize]);
            return (done, false);
        }
        (ctx.dram.read(a, out, Purpose::Demand, now), false)
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            now,
            ..
        } = ev;
        if !self.is_shadow(line_addr) {
            return ctx.nvm.write(line_addr, data, Purpose::WriteBack, now);
        }
        let (a, _) = self.dram_addr(ctx, line_addr);
        ctx.dram.write(a, data, Purpose::WriteBack, now)
    }

    fn next_event_at(&self) -> Option<Cycle> {
        Some(if self.loaded { self.next_group_at } else { 0 })
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        if !self.loaded {
            self.load_shadow(ctx);
        }
        if now >= self.next_group_at {
            self.group_commit(ctx, now);
            self.next_group_at = now + self.interval;
        }
        // The persist and reproduce threads run beside the workers.
        None
    }

    /// The periodic group commit and the reproduce that follows it.
    fn background_kind(&self) -> &'static str {
        "group-commit"
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let (_, t) = self.group_commit(ctx, now);
        t
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        let stm = self.stm.as_ref().map(|m| m.stats).unwrap_or_default();
        vec![
            ("transactions", s.transactions as f64),
            ("redo_entries", s.redo_entries as f64),
            ("volatile_log_bytes", s.volatile_log_bytes as f64),
            ("group_commits", s.group_commits as f64),
            ("forced_group_commits", s.forced_group_commits as f64),
            ("log_bytes", s.log_bytes as f64),
            ("persist_thread_flushes", s.persist_flushes as f64),
            ("persist_thread_fences", s.persist_fences as f64),
            ("replay_bytes", s.replay_bytes as f64),
            ("replay_lines_read", s.replay_lines_read as f64),
            ("shadow_page_faults", s.page_faults as f64),
            ("dram_frames", self.frames.len() as f64),
            ("library_instructions", s.instructions.total as f64),
            ("library_loads", stm.loads as f64),
            ("library_stores", stm.stores as f64),
            ("library_atomics", stm.atomics as f64),
            ("stm_validations", stm.validations as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = Stats::default();
        if let Some(m) = self.stm.as_mut() {
            m.stats = Default::default();
        }
    }
}
