//! Opt-Undo: hardware undo logging after ATOM (Joshi et al., HPCA 2017), as
//! the HOOP paper's baseline (§IV-A, BASELINES.md).
//!
//! - On the first store to a line inside a transaction the memory controller
//!   creates an undo record (the line's old value + a header with the home
//!   address, transaction id, record index and a checksum) in a per-core undo
//!   log in NVM. The store itself does not wait (ATOM moves the ordering into
//!   the controller).
//! - Data-after-log ordering is enforced in the controller: a home write of a
//!   line modified by a running transaction is not accepted before that
//!   line's undo record is persisted.
//! - Each core's log is a circular buffer ([`RingLog`]): records are
//!   appended at the tail, which moves on across transactions (wrapping),
//!   and TxEnd forces every line the transaction modified (and that is not
//!   already home) to NVM, then truncates the log by persisting the log head
//!   (the next record's sequence number) with the transaction's id
//!   ("resolved") in one of two alternating header lines.
//! - A line whose last transactional store belongs to a committed transaction
//!   was cleaned by that force; its later eviction carries no data.
//! - Recovery: per core, the valid header with the newest resolved id gives
//!   the head; undo records from there with a valid checksum, consecutive
//!   sequence numbers and a txid above the resolved id belong to the one
//!   uncommitted transaction; they are rolled back in reverse order and the
//!   other header is advanced (idempotent).
//!
//! - Optionally (`opt-undo.drop_queued_records`, after Proteus's log
//!   pending queue; docs/model/opt-undo.md) records wait in an ADR queue of
//!   the controller and reach the NVM log only when it overflows; a commit
//!   drops its records still queued, after its truncation.
//!
//! The record encoding is `kit/undo_log.rs`'s, shared with LAD's overflow
//! fallback and pmdk-undo.

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::Result;
use crate::mem::MemWrite;
use crate::schemes::kit::line_index::LineIndex;
use crate::schemes::kit::log::{
    csum, header_line, line_word, log_stride, owner_of, recovery_ns, MAX_CORES,
};
use crate::schemes::kit::undo_log::{
    encode_record, scan_records, ScanMode, UndoRecord, UNDO_REC_BYTES,
};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Store, Writeback,
};
use crate::types::{line_of, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose};
use std::collections::VecDeque;

pub static PARAMS: &[ParamSpec] = &[
    p!("opt-undo.log_bytes_per_core", int 1 << 20, "bytes", Check::PowerOfTwo(1 << 16, 1 << 30),
        "modelling choice, see docs/MODEL.md (ATOM sizes its log per transaction; 1 MiB holds 8191 line records, far above any workload's write set)",
        "per-core undo log region in NVM (64 B header + 128 B per record)"),
    p!("opt-undo.drop_queued_records", bool false,
        "",
        "Proteus (Shin et al., MICRO 2017): log entries wait in the controller's log pending queue until it fills, and the commit message invalidates the committed transaction's entries still there. Off by default: HOOP §IV-A describes its Opt-Undo as ATOM's in-controller log/data ordering only, and ATOM's own text was not reachable; docs/MODEL.md",
        "undo records wait in an ADR-protected controller queue (opt-undo.log_queue_records) and are written to the NVM log only when it overflows; a commit drops its records still queued (only with mc.adr)"),
    p!("opt-undo.log_queue_records", int 32, "records", Check::Range(1.0, 65536.0),
        "modelling choice (Proteus gives no size here): 32 records of two lines = 64 lines, USIMM's 64-entry write queue (mc.write_queue_entries)",
        "undo records the controller's log queue holds for all cores with opt-undo.drop_queued_records; one more writes the oldest to the NVM log"),
    p!("opt-undo.mutant", str "none", &["none", "skip-record", "data-before-record", "truncate-before-rollback", "drop-before-force", "truncate-before-force", "scan-ignores-checksum"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): skip-record = the first line of each transaction gets no undo record; data-before-record = write-backs and forced lines do not wait for their undo record; truncate-before-rollback = recovery resolves the log header before rolling back; drop-before-force = with opt-undo.drop_queued_records, a commit drops its queued records before forcing its lines; truncate-before-force = a commit moves the log head past its records (the commit point) before forcing its lines home; scan-ignores-checksum = recovery takes a record whose checksum does not match (a torn record) as valid"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "opt-undo",
    description: "hardware undo logging after ATOM: controller-side undo records, log-before-data ordering, force at commit",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Plain,
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::HOOP),
        tx: 10_000,
        reaches: "no background mechanism (undo records at commit)",
        needs: None,
    },
};

fn reserved_bytes(p: &Params) -> u64 {
    MAX_CORES * log_stride(p, p.u64("opt-undo.log_bytes_per_core"))
}

/// Opt-Undo's per-core circular undo log (ATOM's log, truncated by moving
/// its head): `[header A][header B][record slot 0][record slot 1]...`.
/// Record `seq` (a per-core sequence number that never repeats) lives in
/// slot `seq % slots`, encoded as [`UndoLog`]'s records with `seq` as the
/// index. A header = {magic, resolved txid, head seq, checksum}; commits
/// alternate between A and B, so a torn header write leaves the previous
/// one intact (recovery takes the valid one with the newest resolved id).
#[derive(Clone, Debug)]
pub(crate) struct RingLog {
    pub base: Addr,
    pub per_core_bytes: u64,
    pub stride: u64,
}

const RING_HDR_MAGIC: u64 = 0x554e_444f_5249_4e47; // "UNDORING"

impl RingLog {
    pub fn new(base: Addr, per_core_bytes: u64, p: &Params) -> Self {
        RingLog {
            base,
            per_core_bytes,
            stride: log_stride(p, per_core_bytes),
        }
    }

    pub fn core_base(&self, core: usize) -> Addr {
        self.base + core as u64 * self.stride
    }

    pub fn header_addr(&self, core: usize, which: u64) -> Addr {
        self.core_base(core) + (which % 2) * 64
    }

    pub fn slots(&self) -> u64 {
        (self.per_core_bytes - 128) / UNDO_REC_BYTES
    }

    pub fn record_addr(&self, core: usize, seq: u64) -> Addr {
        self.core_base(core) + 128 + (seq % self.slots()) * UNDO_REC_BYTES
    }

    /// Encode and write `rec` (its index is its sequence number) into
    /// `core`'s ring; returns its persist time.
    pub fn append(&self, ctx: &mut MemCtx, core: usize, rec: UndoRecord<'_>, now: Cycle) -> Cycle {
        ctx.nvm.write(
            self.record_addr(core, rec.index),
            &rec.encode(),
            Purpose::Log,
            now,
        )
    }

    fn header(txid: u64, head: u64) -> LineData {
        let w = [RING_HDR_MAGIC, txid, head];
        header_line(&[w[0], w[1], w[2], csum(&w, &[])])
    }

    /// (resolved txid, head seq) of a header line, if it is valid.
    fn parse_header(l: &LineData) -> Option<(u64, u64)> {
        let w = [line_word(l, 0), line_word(l, 1), line_word(l, 2)];
        (w[0] == RING_HDR_MAGIC && line_word(l, 3) == csum(&w, &[])).then_some((w[1], w[2]))
    }

    /// Truncate: header `which` says every transaction up to `txid` is
    /// resolved and the live log starts at `head`.
    pub fn truncate(
        &self,
        ctx: &mut MemCtx,
        core: usize,
        which: u64,
        txid: u32,
        head: u64,
        now: Cycle,
    ) -> Cycle {
        let l = Self::header(u64::from(txid), head);
        ctx.nvm
            .write(self.header_addr(core, which), &l, Purpose::Metadata, now)
    }

    /// Recover one core's log from bytes: roll back the records of the
    /// unresolved transaction, then resolve it in the other header.
    /// `mutant` is the test-only `opt-undo.mutant` value. Returns (records
    /// rolled back, lines read, lines written).
    pub fn recover_core(
        &self,
        img: &mut dyn MemWrite,
        core: usize,
        mutant: &str,
    ) -> (u64, u64, u64) {
        let mutant_truncate_first = mutant == "truncate-before-rollback";
        let hdrs = [0, 1].map(|w| Self::parse_header(&img.read_line(self.header_addr(core, w))));
        let newest = (0..2)
            .filter_map(|w| hdrs[w].map(|h| (h, w as u64)))
            .max_by_key(|&((txid, _), _)| txid);
        let ((resolved, head), which) = newest.unwrap_or(((0, 0), 1));
        let (recs, txid, scanned) = scan_records(
            img,
            (head..head + self.slots()).map(|seq| (seq, self.record_addr(core, seq))),
            resolved,
            if mutant == "scan-ignores-checksum" {
                ScanMode::NoChecksum
            } else {
                ScanMode::Checked
            },
        );
        let read = 2 + scanned;
        let Some(t) = txid else {
            return (0, read, 0);
        };
        let n = recs.len() as u64;
        if mutant_truncate_first {
            img.write_bytes(
                self.header_addr(core, which + 1),
                &Self::header(t, head + n),
            );
        }
        for (home, old) in recs.iter().rev() {
            img.write_bytes(*home, old);
        }
        if !mutant_truncate_first {
            img.write_bytes(
                self.header_addr(core, which + 1),
                &Self::header(t, head + n),
            );
        }
        (n, read, n + 1)
    }
}

// ---- The scheme ----------------------------------------------------------

struct TxLine {
    addr: Addr,
    data: LineData,
    /// When the line's undo record is persisted (data may not go home before).
    undo_at: Cycle,
    /// When this and every earlier record of the transaction are
    /// persisted. Recovery reads a transaction's records up to the first
    /// invalid one, so without ADR (the media programs queued writes in its
    /// own order) a line waits for this instead.
    undo_prefix_at: Cycle,
    /// Home already holds `data` (written back mid-transaction).
    at_home: bool,
}

#[derive(Default)]
struct CoreState {
    txid: u32,
    in_tx: bool,
    /// Sequence number of the next record (the log tail), and of this
    /// transaction's first record (the log head once it is resolved).
    tail_seq: u64,
    start_seq: u64,
    /// Commits so far: selects the header line the next truncation writes.
    truncations: u64,
    lines: Vec<TxLine>,
    index: LineIndex,
    /// The log could not hold this transaction's records (input error).
    overflow: bool,
}

struct OptUndo {
    log: RingLog,
    cores: Vec<CoreState>,
    next_txid: u32,
    /// Cycles for a forced line to travel from the caches to the controller.
    force_latency: Cycle,
    stat_log_records: u64,
    stat_forced_lines: u64,
    stat_steal_writebacks: u64,
    stat_dropped_clean: u64,
    stat_commits: u64,
    stat_ordering_delay_cycles: u64,
    /// Test-only planted bugs (`opt-undo.mutant`).
    mutant_skip_record: bool,
    mutant_data_first: bool,
    mutant_drop_first: bool,
    mutant_truncate_first: bool,
    /// The controller's log queue (`opt-undo.drop_queued_records` with
    /// ADR), oldest first, and its capacity; `None` when off.
    queue: Option<VecDeque<Queued>>,
    queue_cap: usize,
    stat_records_dropped: u64,
    stat_records_spilled: u64,
}

/// An undo record waiting in the controller's ADR log queue: durable there,
/// not yet written to its NVM log slot (whose older bytes are `old`).
struct Queued {
    core: usize,
    txid: u32,
    slot: Addr,
    rec: [u8; UNDO_REC_BYTES as usize],
    old: [u8; UNDO_REC_BYTES as usize],
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(OptUndo {
        log: RingLog::new(
            layout.reserved_base,
            p.u64("opt-undo.log_bytes_per_core"),
            p,
        ),
        cores: (0..layout.threads).map(|_| CoreState::default()).collect(),
        next_txid: 1,
        force_latency: p.u64("cache.llc_latency_cycles"),
        stat_log_records: 0,
        stat_forced_lines: 0,
        stat_steal_writebacks: 0,
        stat_dropped_clean: 0,
        stat_commits: 0,
        stat_ordering_delay_cycles: 0,
        mutant_skip_record: p.str("opt-undo.mutant") == "skip-record",
        mutant_data_first: p.str("opt-undo.mutant") == "data-before-record",
        mutant_drop_first: p.str("opt-undo.mutant") == "drop-before-force",
        mutant_truncate_first: p.str("opt-undo.mutant") == "truncate-before-force",
        queue: (p.bool("opt-undo.drop_queued_records") && p.bool("mc.adr")).then(VecDeque::new),
        queue_cap: p.u64("opt-undo.log_queue_records") as usize,
        stat_records_dropped: 0,
        stat_records_spilled: 0,
    }))
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    let log = RingLog::new(
        layout.reserved_base,
        p.u64("opt-undo.log_bytes_per_core"),
        p,
    );
    let (mut rolled, mut read, mut written) = (0, 0, 0);
    let mutant = p.str("opt-undo.mutant");
    for c in 0..layout.threads {
        let (r, rd, wr) = log.recover_core(img, c, mutant);
        rolled += r;
        read += rd;
        written += wr;
    }
    Ok(RecoveryReport {
        bytes_read: read * 64,
        bytes_written: written * 64,
        modeled_ns: recovery_ns(p, read, written),
        details: vec![("records_rolled_back", rolled as f64)],
    })
}

impl Scheme for OptUndo {
    fn recovery_paths(&self) -> &'static [&'static str] {
        &[crate::schemes::path::LOG_HEAD]
    }

    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.txid = self.next_txid;
        self.next_txid += 1;
        c.in_tx = true;
        c.start_seq = c.tail_seq;
        c.lines.clear();
        c.index.clear();
        c.overflow = false;
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
        let c = &mut self.cores[core];
        ext.tx = true;
        ext.txid = c.txid;
        ext.word_mask |= 1 << word_index(addr);
        let i = match c.index.find(line) {
            Some(i) => i,
            None => {
                // Home holds the pre-transaction value: every earlier
                // transaction forced its lines at commit.
                let mut old = [0u8; 64];
                ctx.nvm.peek(line, &mut old);
                let n = c.lines.len() as u64;
                let undo_at = if self.mutant_skip_record && n == 0 {
                    c.tail_seq = c.start_seq;
                    now
                } else if n < self.log.slots() {
                    let seq = c.start_seq + n;
                    c.tail_seq = seq + 1;
                    match self.queue.as_mut() {
                        Some(q) => {
                            // Durable in the controller's ADR queue at once;
                            // written to the log only if it leaves the queue
                            // before its transaction commits.
                            let slot = self.log.record_addr(core, seq);
                            let rec = encode_record(u64::from(c.txid), seq, line, &old);
                            let mut prev = [0u8; UNDO_REC_BYTES as usize];
                            ctx.nvm.peek(slot, &mut prev);
                            ctx.nvm.persist_adr_structure(slot, &rec, now);
                            q.push_back(Queued {
                                core,
                                txid: c.txid,
                                slot,
                                rec,
                                old: prev,
                            });
                            if q.len() > self.queue_cap {
                                let e = q.pop_front().unwrap();
                                ctx.nvm.write(e.slot, &e.rec, Purpose::Log, now);
                                self.stat_records_spilled += 1;
                            }
                            now
                        }
                        None => {
                            let rec = UndoRecord {
                                txid: c.txid,
                                index: seq,
                                home: line,
                                old: &old,
                            };
                            self.log.append(ctx, core, rec, now)
                        }
                    }
                } else {
                    // The ring would overwrite this transaction's own
                    // records: reported at TxEnd with the full count; the
                    // run ends there.
                    c.overflow = true;
                    now
                };
                self.stat_log_records += 1;
                let undo_prefix_at = c
                    .lines
                    .last()
                    .map_or(undo_at, |l| l.undo_prefix_at.max(undo_at));
                c.index.push(line);
                c.lines.push(TxLine {
                    addr: line,
                    data: old,
                    undo_at,
                    undo_prefix_at,
                    at_home: false,
                });
                c.lines.len() - 1
            }
        };
        let tl = &mut c.lines[i];
        write_word(&mut tl.data, word_index(addr), new);
        tl.at_home = false;
        now
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            ext,
            now,
            ..
        } = ev;
        if ext.txid == 0 {
            return ctx.nvm.write(line_addr, data, Purpose::WriteBack, now);
        }
        let owner = owner_of(&ctx.layout, line_addr);
        let c = &mut self.cores[owner];
        if c.in_tx && ext.txid == c.txid {
            // Steal: the line goes home mid-transaction, but only once its
            // undo record is durable (the controller holds it until then).
            let i = c.index.get(line_addr).expect("in the write set");
            let tl = &mut c.lines[i];
            let t = if self.mutant_data_first {
                now
            } else if ctx.nvm.is_adr() {
                now.max(tl.undo_at)
            } else {
                now.max(tl.undo_prefix_at)
            };
            self.stat_ordering_delay_cycles += t - now;
            tl.at_home = true;
            self.stat_steal_writebacks += 1;
            return ctx.nvm.write(line_addr, data, Purpose::WriteBack, t);
        }
        // Last written by a committed transaction: forced at its commit,
        // so this copy is clean.
        self.stat_dropped_clean += 1;
        now
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.in_tx = false;
        if c.lines.is_empty() {
            return now;
        }
        if c.overflow {
            let records = c.lines.len() as u64;
            let msg = format!(
                "opt-undo.log_bytes_per_core={} holds {} undo records per core, but a transaction on core {core} needed {records} (one per modified line); {}",
                self.log.per_core_bytes,
                self.log.slots(),
                crate::schemes::raise_advice(PARAMS, "opt-undo.log_bytes_per_core", 128 + records * UNDO_REC_BYTES)
            );
            ctx.input_error(msg);
        }
        if self.mutant_drop_first {
            self.drop_queued(ctx, core, now);
        }
        let mut truncated = None;
        if self.mutant_truncate_first {
            truncated = Some(self.truncate(ctx, core, now));
        }
        let c = &mut self.cores[core];
        // Force: the modified lines travel to the controller (pipelined,
        // one per cycle after the LLC latency) and are written home once
        // their undo records are durable.
        let arrive = now + self.force_latency;
        let mut done = now;
        let adr = ctx.nvm.is_adr();
        for (k, tl) in c.lines.iter().enumerate() {
            if tl.at_home {
                continue;
            }
            let t = if self.mutant_data_first {
                arrive + k as Cycle
            } else if adr {
                (arrive + k as Cycle).max(tl.undo_at)
            } else {
                (arrive + k as Cycle).max(tl.undo_prefix_at)
            };
            done = done.max(ctx.nvm.write(tl.addr, &tl.data, Purpose::WriteBack, t));
            self.stat_forced_lines += 1;
        }
        // Truncate only after every forced line is persisted: the head
        // moves past this transaction's records.
        let done = match truncated {
            Some(t) => t.max(done),
            None => self.truncate(ctx, core, done),
        };
        self.stat_commits += 1;
        // The truncation made the records dead: drop those still queued.
        self.drop_queued(ctx, core, done);
        done
    }

    fn stats(&self) -> SchemeStats {
        vec![
            ("undo_records", self.stat_log_records as f64),
            (
                "undo_log_bytes",
                (self.stat_log_records * UNDO_REC_BYTES) as f64,
            ),
            ("forced_lines", self.stat_forced_lines as f64),
            ("steal_writebacks", self.stat_steal_writebacks as f64),
            ("clean_evictions_dropped", self.stat_dropped_clean as f64),
            ("log_truncations", self.stat_commits as f64),
            (
                "log_before_data_delay_cycles",
                self.stat_ordering_delay_cycles as f64,
            ),
            ("undo_records_dropped", self.stat_records_dropped as f64),
            ("undo_records_spilled", self.stat_records_spilled as f64),
            (
                "undo_log_bytes_written",
                // With the queue, only spilled records reach the NVM log; a
                // record queued before the window and dropped in it must not
                // be subtracted from the window's count.
                (match self.queue {
                    Some(_) => self.stat_records_spilled,
                    None => self.stat_log_records,
                } * UNDO_REC_BYTES) as f64,
            ),
        ]
    }

    fn reset_stats(&mut self) {
        self.stat_log_records = 0;
        self.stat_forced_lines = 0;
        self.stat_steal_writebacks = 0;
        self.stat_dropped_clean = 0;
        self.stat_commits = 0;
        self.stat_ordering_delay_cycles = 0;
        self.stat_records_dropped = 0;
        self.stat_records_spilled = 0;
    }
}

impl OptUndo {
    /// Persist `core`'s log head past its transaction's records (the
    /// commit point of undo logging) from `t`.
    fn truncate(&mut self, ctx: &mut MemCtx, core: CoreId, t: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        let which = c.truncations;
        c.truncations += 1;
        let p = ctx.nvm.persist_log.path_start();
        let done = self.log.truncate(ctx, core, which, c.txid, c.tail_seq, t);
        ctx.nvm
            .persist_log
            .path_done(crate::schemes::path::LOG_HEAD, p);
        done
    }

    /// Remove `core`'s records from the controller's log queue at `at`:
    /// they never reach the NVM log, whose slots keep their older bytes
    /// (the crash image after `at` no longer holds the queued records).
    fn drop_queued(&mut self, ctx: &mut MemCtx, core: usize, at: Cycle) {
        let Some(q) = self.queue.as_mut() else {
            return;
        };
        let txid = self.cores[core].txid;
        let mut dropped = 0;
        q.retain(|e| {
            let mine = e.core == core && e.txid == txid;
            if mine {
                ctx.nvm.persist_adr_structure(e.slot, &e.old, at);
                dropped += 1;
            }
            !mine
        });
        self.stat_records_dropped += dropped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use rustc_hash::{FxHashMap, FxHashSet};

    fn small_cache_run(scheme: &str, threads: usize, tx: u64) -> Engine {
        crate::schemes::small_cache_run(scheme, threads, tx, &[])
    }

    /// Rule: a home write of a line a running transaction modified is
    /// persisted only after that line's undo record (persist order and time).
    #[test]
    fn undo_record_persists_before_home_write() {
        let e = small_cache_run("opt-undo", 2, 60);
        let layout = &e.ctx.layout;
        let log = RingLog::new(
            layout.reserved_base,
            e.params.u64("opt-undo.log_bytes_per_core"),
            &e.params,
        );
        let pl = &e.ctx.nvm.persist_log;
        let mut logged: Vec<FxHashMap<Addr, Cycle>> = vec![FxHashMap::default(); 2];
        let mut home_writes = 0;
        for ev in pl.events() {
            let d = pl.data(ev);
            if ev.addr >= log.base && ev.addr < log.base + 2 * log.stride {
                let c = ((ev.addr - log.base) / log.stride) as usize;
                let off = (ev.addr - log.core_base(c)) as usize;
                if off < 128 {
                    logged[c].clear(); // truncation: transaction resolved
                } else if (off - 128).is_multiple_of(UNDO_REC_BYTES as usize) {
                    let home = u64::from_le_bytes(d[24..32].try_into().unwrap());
                    logged[c].insert(home, ev.at);
                }
            } else if ev.addr < layout.home_limit {
                let c = owner_of(layout, ev.addr);
                let at = logged[c].get(&line_of(ev.addr)).copied();
                assert!(
                    at.is_some_and(|t| t <= ev.at),
                    "home write of {:#x} at {} persisted without an earlier undo record",
                    ev.addr,
                    ev.at
                );
                home_writes += 1;
            }
        }
        assert!(
            home_writes > 100,
            "too few home writes observed: {home_writes}"
        );
        let steals = e
            .scheme
            .stats()
            .iter()
            .find(|s| s.0 == "steal_writebacks")
            .unwrap()
            .1;
        assert!(
            steals > 0.0,
            "small caches must cause mid-transaction write-backs"
        );
    }

    /// Rule: TxEnd returns only after every modified line and the log
    /// truncation are persisted, in that order.
    #[test]
    fn force_precedes_truncation_and_ack() {
        let e = small_cache_run("opt-undo", 1, 30);
        let h = e.history.as_ref().unwrap();
        let pl = &e.ctx.nvm.persist_log;
        let base = e.ctx.layout.reserved_base;
        for r in &h.per_thread[0] {
            let k = r.ack_persist_seq as usize;
            // The last event before the ack is a truncation header.
            let a = pl.events()[k - 1].addr;
            assert!(a == base || a == base + 64, "ack must follow truncation");
            // Every line the transaction wrote is home by then.
            let written: FxHashSet<Addr> = h.writes[r.writes.clone()]
                .iter()
                .map(|w| line_of(w.0))
                .collect();
            let mut img = h.initial_media.clone();
            for ev in &pl.events()[..k] {
                img.write_bytes(ev.addr, pl.data(ev));
            }
            for &(a, v) in &h.writes[r.writes.clone()] {
                assert_eq!(
                    crate::mem::MemRead::read_u64(&img, a),
                    v,
                    "{a:#x} not forced at commit"
                );
            }
            assert!(!written.is_empty());
        }
    }
}
