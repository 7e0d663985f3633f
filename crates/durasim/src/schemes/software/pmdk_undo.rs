//! pmdk-undo: libpmemobj-style software undo logging (Intel PMDK/NVML), as
//! the dual-page checkpointing paper's software baseline (§5.1.2,
//! BASELINES.md). NVM-only memory: the program's data lives in NVM behind
//! the CPU caches (the paper runs NVML without a DRAM cache).
//!
//! The library runs on the simulated core: `instrument` rewrites each
//! transaction's op stream.
//! - TxBegin: `pmemobj_tx_begin`'s bookkeeping (`Compute`).
//! - Before the first store to a line in the transaction
//!   (`pmemobj_tx_add_range` of that 64 B range): the range-tree and
//!   checksum work (`Compute`), 8 loads of the old line (the snapshot's
//!   memcpy source), the next entry's header line zeroed, clwb'd and fenced
//!   (`ulog_clobber_entry`), 16 stores of a 128 B undo entry into the core's
//!   undo log in NVM, a clwb of each of its two lines and an sfence (PMDK's
//!   `ulog_entry_buf_create`: non-temporal copy + `pmemops_drain`). Only then
//!   the program's store.
//! - Commit (`pmemobj_tx_commit`): clwb of every modified line, sfence (and
//!   `palloc_exec_actions`' second, empty one), then the log is invalidated by one persisted write (PMDK increments the
//!   ulog's generation number): the log header line saying "resolved up to
//!   this txid", clwb, sfence. Read-only transactions log nothing and skip it.
//!
//! The undo entry is opt-undo's record (`undo_log::encode_record`: a header
//! line {magic, txid, index, home line, checksum} + the old line), the same
//! 128 B as a PMDK `ulog_entry_buf` for a 64 B snapshot (24 B header + 64 B
//! data, cache-line aligned: ulog.c `ulog_entry_buf_create`); recovery is
//! LAD's per-transaction log recovery ([`UndoLog::recover_core`]): from the
//! bytes alone, roll back the unresolved transaction's valid records.
//!
//! The old values come from the scheme's own copy of the program data
//! (`mirror`, taken from NVM once before the first transaction and kept
//! current from the op streams): the library's memcpy reads them from the
//! cache, and with `run.check_reads` the engine checks each snapshot load's
//! value against the cached line.

use super::{emit_stores, Instructions};
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::Result;
use crate::mem::{MemRead, MemWrite, SparseImage};
use crate::schemes::kit::log::{log_stride, recovery_ns, MAX_CORES};
use crate::schemes::kit::undo_log::{encode_record, ScanMode, UndoLog};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
};
use crate::types::{line_of, Addr, CoreId, Cycle, LineData, LINE_BYTES};
use crate::workloads::Op;
use rustc_hash::FxHashSet;

const PMDK_SRC: &str = "measured: libpmemobj (github.com/pmem/pmdk @52b9545), gcc 12.2 -O2, callgrind Ir per call, 64 B ranges at distinct lines, 1,000 transactions; docs/design/baselines.md §3.2";

pub static PARAMS: &[ParamSpec] = &[
    p!("pmdk-undo.log_bytes_per_core", int 1 << 20, "bytes", Check::PowerOfTwo(1 << 12, 1 << 30),
        "modelling choice (PMDK starts from a 2 KiB lane undo log and extends it from the heap; one contiguous 1 MiB region holds 8191 entries, above any workload's write set)",
        "per-core undo log in NVM (64 B header + 128 B per 64 B snapshot)"),
    p!("pmdk-undo.tx_begin_instructions", int 427, "instructions", Check::Range(0.0, 1e6),
        PMDK_SRC,
        "pmemobj_tx_begin (lane_hold 138 of it)"),
    p!("pmdk-undo.add_range_instructions", int 1560, "instructions", Check::Range(0.0, 1e6),
        PMDK_SRC,
        "pmemobj_tx_add_range_direct of one 64 B range in a transaction of up to 8 ranges: ravl find + emplace ~360, ulog_entry_buf_create 650, util_checksum_seq 212, ulog_clobber_entry 134"),
    p!("pmdk-undo.commit_instructions", int 1244, "instructions", Check::Range(0.0, 1e6),
        PMDK_SRC,
        "pmemobj_tx_commit of a transaction with snapshots, less its per-range part (1,016 - 185 = 831), + pmemobj_tx_process (82) + pmemobj_tx_end (331)"),
    p!("pmdk-undo.commit_instructions_per_range", int 185, "instructions", Check::Range(0.0, 1e6),
        PMDK_SRC,
        "pmemobj_tx_commit per further snapshotted range (176-195 measured; tx_pre_commit's ravl_delete_cb + tx_flush_range; the clwb itself is a Flush op)"),
    p!("pmdk-undo.commit_readonly_instructions", int 675, "instructions", Check::Range(0.0, 1e6),
        PMDK_SRC,
        "commit of a transaction without snapshots: pmemobj_tx_commit 385 + pmemobj_tx_process 82 + pmemobj_tx_end 208"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "pmdk-undo",
    description: "software undo logging as libpmemobj (PMDK): snapshot + clwb + sfence before the first write of a line, flush data and invalidate the log at commit",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Plain,
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::DPC_DIRECT),
        tx: 10_000,
        reaches: "no background mechanism (software undo log at commit)",
        needs: Some(crate::schemes::machines::needs_no_dram_cache),
    },
};

/// Test-only: the undo entry is written but not flushed or fenced before
/// the data store (it reaches NVM only if evicted).
#[doc(hidden)]
pub static MUTANT_LOG_NOT_FLUSHED: SchemeInfo = SchemeInfo {
    name: "pmdk-undo-mutant-log-not-flushed",
    description: "test-only: undo entries not flushed before the data write",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build: build_log_not_flushed,
    recover,
    recovery: RecoveryForm::Plain,
    contexts: None,
    defaults: crate::schemes::RunDefaults::BARE,
};

/// Test-only: the log is invalidated before the modified data is flushed.
#[doc(hidden)]
pub static MUTANT_INVALIDATE_BEFORE_FLUSH: SchemeInfo = SchemeInfo {
    name: "pmdk-undo-mutant-invalidate-first",
    description: "test-only: log invalidated before the data flush",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build: build_invalidate_first,
    recover,
    recovery: RecoveryForm::Plain,
    contexts: None,
    defaults: crate::schemes::RunDefaults::BARE,
};

/// Test-only: the log's two guards against a stale entry both removed:
/// the next entry's header is not clobbered, and recovery does not check
/// a record's transaction id after the first, so its scan reads on past
/// the running transaction's entries into an older transaction's and
/// rolls those back too. (Either guard alone passes tests/software.rs's
/// crash test: the clobbered header or the older id ends the scan.)
#[doc(hidden)]
pub static MUTANT_SCAN_PAST_ENTRIES: SchemeInfo = SchemeInfo {
    name: "pmdk-undo-mutant-scan-past-entries",
    description:
        "test-only: no clobbered next entry, recovery scans past the transaction's entries",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build: build_scan_past_entries,
    recover: recover_past_entries,
    recovery: RecoveryForm::Plain,
    contexts: None,
    defaults: crate::schemes::RunDefaults::BARE,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mutant {
    None,
    LogNotFlushed,
    InvalidateBeforeFlush,
    ScanPastEntries,
}

fn reserved_bytes(p: &Params) -> u64 {
    MAX_CORES * log_stride(p, p.u64("pmdk-undo.log_bytes_per_core"))
}

fn log(p: &Params, layout: &Layout) -> UndoLog {
    UndoLog::new(
        layout.reserved_base,
        p.u64("pmdk-undo.log_bytes_per_core"),
        p,
    )
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(PmdkUndo::new(p, layout, Mutant::None)))
}

fn build_log_not_flushed(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(PmdkUndo::new(p, layout, Mutant::LogNotFlushed)))
}

fn build_scan_past_entries(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(PmdkUndo::new(p, layout, Mutant::ScanPastEntries)))
}

fn build_invalidate_first(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(PmdkUndo::new(
        p,
        layout,
        Mutant::InvalidateBeforeFlush,
    )))
}

/// Recovery from the bytes: per core, roll back the records of the one
/// transaction whose log is valid (txid above the header's), then
/// invalidate it (LAD's per-transaction log recovery).
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    recover_with(img, p, layout, ScanMode::Checked)
}

fn recover_past_entries(
    img: &mut dyn MemWrite,
    p: &Params,
    layout: &Layout,
) -> Result<RecoveryReport> {
    recover_with(img, p, layout, ScanMode::StaleTail)
}

fn recover_with(
    img: &mut dyn MemWrite,
    p: &Params,
    layout: &Layout,
    mode: ScanMode,
) -> Result<RecoveryReport> {
    let log = log(p, layout);
    let (mut rolled, mut read, mut written) = (0, 0, 0);
    for core in 0..layout.threads {
        let (n, r, w) = log.recover_core(img, core, None, mode);
        rolled += n;
        read += r;
        written += w;
    }
    Ok(RecoveryReport {
        bytes_read: read * LINE_BYTES,
        bytes_written: written * LINE_BYTES,
        modeled_ns: recovery_ns(p, read, written),
        details: vec![("lines_rolled_back", rolled as f64)],
    })
}

#[derive(Clone, Debug, Default)]
struct Stats {
    transactions: u64,
    snapshots: u64,
    /// Next-entry header lines zeroed (`ulog_clobber_entry`).
    clobbers: u64,
    flushes: u64,
    fences: u64,
    log_bytes: u64,
    invalidations: u64,
    instructions: Instructions,
}

struct PmdkUndo {
    log: UndoLog,
    home_limit: Addr,
    /// The program data as of the op streams instrumented so far (a copy
    /// of NVM taken before the first transaction); `None` until then.
    mirror: Option<SparseImage>,
    /// Per core: the id of its latest transaction (never 0).
    txid: Vec<u32>,
    /// Lines of the transaction being instrumented already snapshotted,
    /// and the same in program order (flushed at commit).
    seen: FxHashSet<Addr>,
    written: Vec<Addr>,
    /// A transaction outgrew the log: (core, records needed).
    too_small: Option<(CoreId, u64)>,
    tx_begin: u64,
    add_range: u64,
    commit: u64,
    commit_per_range: u64,
    commit_readonly: u64,
    mutant: Mutant,
    stats: Stats,
}

impl PmdkUndo {
    fn new(p: &Params, layout: &Layout, mutant: Mutant) -> Self {
        PmdkUndo {
            log: log(p, layout),
            home_limit: layout.home_limit,
            mirror: None,
            txid: vec![0; layout.threads],
            seen: FxHashSet::default(),
            written: Vec::new(),
            too_small: None,
            tx_begin: p.u64("pmdk-undo.tx_begin_instructions"),
            add_range: p.u64("pmdk-undo.add_range_instructions"),
            commit: p.u64("pmdk-undo.commit_instructions"),
            commit_per_range: p.u64("pmdk-undo.commit_instructions_per_range"),
            commit_readonly: p.u64("pmdk-undo.commit_readonly_instructions"),
            mutant,
            stats: Stats::default(),
        }
    }

    /// clwb of the two lines of an entry (or one header line) + sfence.
    fn persist(&mut self, out: &mut Vec<Op>, addr: Addr, lines: u64) {
        for i in 0..lines {
            out.push(Op::Flush {
                addr: addr + i * LINE_BYTES,
            });
        }
        out.push(Op::Fence);
        self.stats.flushes += lines;
        self.stats.fences += 1;
    }

    /// The invalidating write: the log header saying `txid` is resolved.
    fn invalidate(&mut self, out: &mut Vec<Op>, core: CoreId, txid: u32) {
        let hdr = self.log.core_base(core);
        emit_stores(out, hdr, &UndoLog::header(txid));
        self.persist(out, hdr, 1);
        self.stats.log_bytes += LINE_BYTES;
        self.stats.invalidations += 1;
    }
}

impl Scheme for PmdkUndo {
    fn tx_begin(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        if let Some((c, records)) = self.too_small.take() {
            debug_assert_eq!(c, core);
            let msg = self.log.too_small(
                PARAMS,
                "pmdk-undo.log_bytes_per_core",
                core,
                records,
                "one 128 B entry per line written",
            );
            ctx.input_error(msg);
        }
        now
    }

    fn tx_end(&mut self, _ctx: &mut MemCtx, _core: CoreId, now: Cycle) -> Cycle {
        // Everything durable was flushed and fenced in the op stream.
        now
    }

    fn instrument(&mut self, core: CoreId, ops: &[Op], out: &mut Vec<Op>) -> bool {
        let Some(mirror) = self.mirror.as_mut() else {
            // No copy of the data yet (a microbenchmark's `run_ops`):
            // the op stream runs unlogged.
            return false;
        };
        let txid = match self.txid[core].wrapping_add(1) {
            0 => 1,
            t => t,
        };
        self.txid[core] = txid;
        self.seen.clear();
        self.written.clear();
        out.reserve(ops.len() * 2 + 64);
        let mut ins = self.stats.instructions;
        ins.emit(out, self.tx_begin);
        let cap = self.log.capacity_records();
        let mut flushes = 0u64;
        let mut fences = 0u64;
        let mut overflow = false;
        for &op in ops {
            if let Op::Store { addr, value } = op {
                let line = line_of(addr);
                if addr < self.home_limit && self.seen.insert(line) {
                    let index = self.written.len() as u64;
                    self.written.push(line);
                    if index < cap {
                        let mut old: LineData = [0; 64];
                        mirror.read_bytes(line, &mut old);
                        ins.emit(out, self.add_range);
                        // The snapshot's memcpy reads the old line.
                        for (w, b) in old.chunks_exact(8).enumerate() {
                            out.push(Op::Load {
                                addr: line + 8 * w as u64,
                                value: u64::from_le_bytes(b.try_into().unwrap()),
                                dep: 0,
                            });
                        }
                        let rec_addr = self.log.record_addr(core, index);
                        // ulog_clobber_entry: zero the header of the next
                        // entry (non-temporal memset, then a drain), so a
                        // stale entry behind this one never looks valid.
                        if index + 1 < cap
                            && !matches!(
                                self.mutant,
                                Mutant::LogNotFlushed | Mutant::ScanPastEntries
                            )
                        {
                            let next = self.log.record_addr(core, index + 1);
                            emit_stores(out, next, &[0u8; LINE_BYTES as usize]);
                            out.push(Op::Flush { addr: next });
                            out.push(Op::Fence);
                            self.stats.log_bytes += LINE_BYTES;
                            self.stats.clobbers += 1;
                            flushes += 1;
                            fences += 1;
                        }
                        let rec = encode_record(u64::from(txid), index, line, &old);
                        emit_stores(out, rec_addr, &rec);
                        self.stats.log_bytes += rec.len() as u64;
                        self.stats.snapshots += 1;
                        if self.mutant != Mutant::LogNotFlushed {
                            for i in 0..2 {
                                out.push(Op::Flush {
                                    addr: rec_addr + i * LINE_BYTES,
                                });
                            }
                            out.push(Op::Fence);
                            flushes += 2;
                            fences += 1;
                        }
                    } else {
                        overflow = true;
                    }
                }
                if addr < self.home_limit {
                    mirror.write_u64(addr, value);
                }
            }
            out.push(op);
        }
        self.stats.flushes += flushes;
        self.stats.fences += fences;
        if overflow {
            // Reported at TxBegin, which has the machine (MemCtx).
            self.too_small = Some((core, self.written.len() as u64));
        }
        let n = self.written.len() as u64;
        if n > 0 {
            ins.emit(out, self.commit + self.commit_per_range * n);
            if self.mutant == Mutant::InvalidateBeforeFlush {
                self.invalidate(out, core, txid);
            }
            for i in 0..self.written.len() {
                out.push(Op::Flush {
                    addr: self.written[i],
                });
            }
            out.push(Op::Fence);
            // palloc_exec_actions drains again before processing the
            // generation-number action (nothing is pending by then).
            out.push(Op::Fence);
            self.stats.flushes += n;
            self.stats.fences += 2;
            if self.mutant != Mutant::InvalidateBeforeFlush {
                self.invalidate(out, core, txid);
            }
        } else {
            ins.emit(out, self.commit_readonly);
        }
        self.stats.instructions = ins;
        self.stats.transactions += 1;
        true
    }

    /// Before the first transaction: copy the program data (the library's
    /// snapshots read old values from it; see the module doc).
    fn next_event_at(&self) -> Option<Cycle> {
        self.mirror.is_none().then_some(0)
    }

    fn tick(&mut self, ctx: &mut MemCtx, _now: Cycle) -> Option<Cycle> {
        if self.mirror.is_none() {
            self.mirror = Some(ctx.nvm.media().clone());
        }
        None
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        vec![
            ("transactions", s.transactions as f64),
            ("snapshots", s.snapshots as f64),
            ("log_clobber_lines", s.clobbers as f64),
            ("flushes", s.flushes as f64),
            ("fences", s.fences as f64),
            ("log_bytes", s.log_bytes as f64),
            ("log_invalidations", s.invalidations as f64),
            ("library_instructions", s.instructions.total as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = Stats::default();
    }
}
