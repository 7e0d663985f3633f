//! Opt-Redo: hardware redo logging after WrAP (Doshi et al., HPCA 2016), as
//! the HOOP paper's baseline (§IV-A, BASELINES.md).
//!
//! - Stores inside a transaction reach a per-core log buffer in the memory
//!   controller, coalesced per line. When the buffer is full, and at TxEnd,
//!   each buffered line becomes a redo record of two lines in a per-core
//!   circular log in NVM: a metadata line {magic, seq, txid, kind, home,
//!   checksum} and the data line (HOOP §II-B: two lines per update).
//! - TxEnd writes the remaining records and a commit record and returns when
//!   both are persisted.
//! - A line modified by a running transaction may not reach home before the
//!   transaction's log is durable: LLC evictions of such lines are held in a
//!   victim buffer in the controller (served to later misses) and written
//!   home after the commit record.
//! - Checkpointing is asynchronous (every `checkpoint_period_ms`, or early
//!   when a log passes 3/4 full): the newest committed version of each line
//!   (updates combined) is read from the log and written home, then the log
//!   head is advanced (truncation) by persisting the log header.
//! - A committed line evicted before its checkpoint is written home by the
//!   eviction (the checkpoint then skips it); one evicted after its
//!   checkpoint is clean.
//! - Recovery: per core, from the header's head, replay the data records of
//!   every transaction followed by its commit record (valid checksums,
//!   consecutive sequence numbers), then truncate.

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::Result;
use crate::mem::MemWrite;
use crate::recovery::ResumableScan;
use crate::schemes::kit::log::{log_stride, owner_of, MAX_CORES};
use crate::schemes::kit::redo_log::{
    commit_record, data_record, header_record, redo_log_scan, Headers, RedoLog, TxBuffer, REC_BYTES,
};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Store, Writeback,
};
use crate::types::{word_index, Addr, CoreId, Cycle, LineData, Purpose};
use rustc_hash::FxHashMap;

pub static PARAMS: &[ParamSpec] = &[
    p!("opt-redo.log_bytes_per_core", int 4 << 20, "bytes", Check::PowerOfTwo(1 << 16, 1 << 30),
        "modelling choice, see docs/MODEL.md (holds a 10 ms checkpoint period of records at the simulated rates; a full log forces an early checkpoint)",
        "per-core circular redo log in NVM (64 B header + 128 B per record)"),
    p!("opt-redo.log_buffer_bytes_per_core", int 1024, "bytes", Check::Range(64.0, 1048576.0),
        "same on-chip budget as HOOP's OOP data buffer, 1 KB per core (HOOP paper §III-C, §III-H)",
        "controller log buffer coalescing a transaction's updated lines before they are written as records"),
    p!("opt-redo.checkpoint_period_ms", float 10.0, "ms", Check::Range(0.001, 10000.0),
        "HOOP's GC period (HOOP paper §III-H), used for every background scheme for a fair comparison (§IV-A)",
        "period of asynchronous checkpointing (combine, write home, truncate)"),
    p!("opt-redo.mutant", str "none", &["none", "truncate-before-checkpoint", "evict-uncommitted-home", "scan-skips-last-commit", "commit-before-records"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): truncate-before-checkpoint = the checkpoint persists the log header (truncation) before its home writes; evict-uncommitted-home = a write-back of a line of the running transaction goes home instead of being held until its commit record persists; scan-skips-last-commit = recovery replays a transaction only once it reads the next commit record (the last committed transaction is not replayed); commit-before-records = TxEnd issues the commit record at its start instead of once the data records persisted"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "opt-redo",
    description: "hardware redo logging after WrAP: 2-line redo records, commit record, held write-backs, async checkpoint with combination",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::HOOP),
        tx: 300_000,
        reaches: "checkpoints every 10 ms (25 M cycles), HOOP's GC period, which runs twice in this length on btree",
        needs: None,
    },
};

fn reserved_bytes(p: &Params) -> u64 {
    MAX_CORES * log_stride(p, p.u64("opt-redo.log_bytes_per_core"))
}

const LOG_HDR_MAGIC: u64 = 0x5245_444f_4844_5231; // "REDOHDR1"
const REC_MAGIC: u64 = 0x5245_444f_5245_4331; // "REDOREC1"

/// Geometry of opt-redo's per-core circular logs: one header line, then
/// the record slots.
#[derive(Clone, Copy, Debug)]
struct Ring {
    log: RedoLog,
    per_core_bytes: u64,
}

impl Ring {
    fn new(p: &Params, layout: &Layout) -> Self {
        let per_core = p.u64("opt-redo.log_bytes_per_core");
        Ring {
            log: RedoLog {
                hdr_magic: LOG_HDR_MAGIC,
                rec_magic: REC_MAGIC,
                base: layout.reserved_base,
                stride: log_stride(p, per_core),
                headers: Headers::One,
                slots: (per_core - 64) / REC_BYTES,
                home_limit: None,
                mutant_skip_last: p.str("opt-redo.mutant") == "scan-skips-last-commit",
            },
            per_core_bytes: per_core,
        }
    }
    fn header_addr(&self, core: usize) -> Addr {
        self.log.header_addr(core, 0)
    }
    fn slot_addr(&self, core: usize, seq: u64) -> Addr {
        self.log.slot_addr(core, seq)
    }
}

#[derive(Default)]
struct CoreState {
    /// The running transaction in the log buffer.
    tx: TxBuffer,
    /// Next sequence number to write; log head (oldest live record).
    tail: u64,
    head: u64,
    /// Sequence after the last commit record.
    committed_tail: u64,
    last_committed_txid: u32,
    /// Every committed transaction with txid <= this is home.
    ckpt_through: u32,
    commit_done: Cycle,
    /// Committed lines not yet home: line -> seq of the newest record.
    pending: FxHashMap<Addr, u64>,
    /// Victim buffer: evicted lines of the running transaction.
    held: FxHashMap<Addr, LineData>,
}

struct OptRedo {
    ring: Ring,
    cores: Vec<CoreState>,
    next_txid: u32,
    buffer_lines: usize,
    period: Cycle,
    next_ckpt: Cycle,
    urgent: bool,
    scratch: Vec<Addr>,
    held_scratch: Vec<(Addr, LineData)>,
    st_records: u64,
    st_commit_records: u64,
    st_checkpoints: u64,
    st_forced_checkpoints: u64,
    st_ckpt_lines: u64,
    st_retired_data_records: u64,
    st_held: u64,
    st_held_max: u64,
    st_evict_home: u64,
    st_dropped_clean: u64,
    st_buffer_flushes: u64,
    /// Test-only planted bug (`opt-redo.mutant`).
    mutant_truncate_first: bool,
    mutant_no_hold: bool,
    mutant_commit_first: bool,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    let period = (p.f64("opt-redo.checkpoint_period_ms") * 1e6 * p.f64("cpu.freq_ghz")) as Cycle;
    Ok(Box::new(OptRedo {
        ring: Ring::new(p, layout),
        cores: (0..layout.threads).map(|_| CoreState::default()).collect(),
        next_txid: 1,
        buffer_lines: (p.u64("opt-redo.log_buffer_bytes_per_core") / 64).max(1) as usize,
        period: period.max(1),
        next_ckpt: period.max(1),
        urgent: false,
        scratch: Vec::new(),
        held_scratch: Vec::new(),
        st_records: 0,
        st_commit_records: 0,
        st_checkpoints: 0,
        st_forced_checkpoints: 0,
        st_ckpt_lines: 0,
        st_retired_data_records: 0,
        st_held: 0,
        st_held_max: 0,
        st_evict_home: 0,
        st_dropped_clean: 0,
        st_buffer_flushes: 0,
        mutant_truncate_first: p.str("opt-redo.mutant") == "truncate-before-checkpoint",
        mutant_no_hold: p.str("opt-redo.mutant") == "evict-uncommitted-home",
        mutant_commit_first: p.str("opt-redo.mutant") == "commit-before-records",
    }))
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// Recovery as a resumable scan (recovery/scan.rs, [`redo_log_scan`]) over
/// opt-redo's logs: one header line, rewritten by every recovery; every
/// replayed home line written.
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    redo_log_scan(Ring::new(p, layout).log, layout.threads)
}

impl OptRedo {
    /// Make room for `need` records in `core`'s log, checkpointing it
    /// synchronously if necessary; returns when the room is available.
    fn reserve(&mut self, ctx: &mut MemCtx, core: usize, need: u64, now: Cycle) -> Cycle {
        let c = &self.cores[core];
        if c.tail + need - c.head <= self.ring.log.slots {
            return now;
        }
        self.st_forced_checkpoints += 1;
        let p = ctx.nvm.persist_log.path_start();
        let t = self.checkpoint_core(ctx, core, now);
        let forced = crate::schemes::path::FORCED_CHECKPOINT;
        ctx.nvm.persist_log.path_done(forced, p);
        let c = &mut self.cores[core];
        if c.tail + need - c.head > self.ring.log.slots {
            // One transaction outgrew the whole log: reported at TxEnd
            // with its full record count (the run ends there). Until then
            // its records wrap over its own older ones.
            c.tx.overflow = true;
        }
        t
    }

    /// Write records for every line changed since its last record.
    fn flush_buffer(&mut self, ctx: &mut MemCtx, core: usize, now: Cycle) -> Cycle {
        let need = self.cores[core].tx.buffered as u64;
        if need == 0 {
            return now;
        }
        let t = self.reserve(ctx, core, need + 1, now);
        let ring = self.ring;
        let c = &mut self.cores[core];
        let mut done = t;
        for tl in c.tx.lines.iter_mut().filter(|l| l.dirty) {
            let rec = data_record(REC_MAGIC, c.tail, u64::from(c.tx.txid), tl.addr, &tl.data);
            done = done.max(
                ctx.nvm
                    .write(ring.slot_addr(core, c.tail), &rec, Purpose::Log, t),
            );
            tl.seq = c.tail;
            tl.dirty = false;
            c.tail += 1;
            c.tx.records += 1;
            self.st_records += 1;
        }
        c.tx.buffered = 0;
        self.st_buffer_flushes += 1;
        done
    }

    /// Checkpoint one core: newest committed version of each pending line,
    /// read from the log, written home; then truncate the log.
    fn checkpoint_core(&mut self, ctx: &mut MemCtx, core: usize, now: Cycle) -> Cycle {
        let ring = self.ring;
        let c = &mut self.cores[core];
        if c.committed_tail == c.head {
            return now;
        }
        self.scratch.clear();
        self.scratch.extend(c.pending.keys().copied());
        self.scratch.sort_unstable();
        let mut done = now;
        if self.mutant_truncate_first {
            ctx.nvm.write(
                ring.header_addr(core),
                &header_record(LOG_HDR_MAGIC, c.committed_tail),
                Purpose::Metadata,
                now,
            );
        }
        let mut buf = [0u8; 64];
        for &line in &self.scratch {
            let seq = c.pending[&line];
            let arrive = ctx
                .nvm
                .read(ring.slot_addr(core, seq) + 64, &mut buf, Purpose::Gc, now);
            done = done.max(ctx.nvm.write(line, &buf, Purpose::Gc, arrive));
        }
        self.st_ckpt_lines += self.scratch.len() as u64;
        // Records truncated vs lines written home: combination's saving.
        self.st_retired_data_records += c.committed_tail - c.head;
        c.pending.clear();
        c.ckpt_through = c.last_committed_txid;
        let done = ctx.nvm.write(
            ring.header_addr(core),
            &header_record(LOG_HDR_MAGIC, c.committed_tail),
            Purpose::Metadata,
            done,
        );
        c.head = c.committed_tail;
        self.st_checkpoints += 1;
        done
    }
}

impl Scheme for OptRedo {
    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].tx.begin(self.next_txid);
        self.next_txid += 1;
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
        let ring = self.ring;
        let c = &mut self.cores[core];
        ext.word_mask |= 1 << word_index(addr);
        let pending = &c.pending;
        let full = c.tx.store(addr, new, ext, self.buffer_lines, |line| {
            // The newest committed value: in the log if not yet home.
            let mut base = [0u8; 64];
            match pending.get(&line) {
                Some(&seq) => ctx.nvm.peek(ring.slot_addr(core, seq) + 64, &mut base),
                None => ctx.nvm.peek(line, &mut base),
            }
            base
        });
        if full {
            // The controller drains its full log buffer; the store waits
            // only if the log had to be checkpointed to make room.
            let before = self.st_forced_checkpoints;
            let t = self.flush_buffer(ctx, core, now);
            if self.st_forced_checkpoints > before {
                return t;
            }
        }
        now
    }

    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        ext: &mut LineExt,
    ) -> (Cycle, bool) {
        let owner = owner_of(&ctx.layout, line_addr);
        let c = &mut self.cores[owner];
        if let Some(d) = c.held.remove(&line_addr) {
            // Served from the controller's victim buffer; it returns to the
            // cache dirty and still owned by the running transaction.
            *out = d;
            ext.tx = true;
            ext.txid = c.tx.txid;
            return (now + 1, true);
        }
        (ctx.nvm.read(line_addr, out, Purpose::Demand, now), false)
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
        if c.tx.in_tx && ext.txid == c.tx.txid && !self.mutant_no_hold {
            // Its transaction's log is not durable yet: hold it.
            c.held.insert(line_addr, *data);
            self.st_held += 1;
            self.st_held_max = self.st_held_max.max(c.held.len() as u64);
            return now;
        }
        if ext.txid <= c.ckpt_through {
            // Checkpointed since its last store: home has these bytes.
            self.st_dropped_clean += 1;
            return now;
        }
        // Committed, not yet checkpointed: the eviction brings home up to
        // date, so the checkpoint can skip the line.
        c.pending.remove(&line_addr);
        self.st_evict_home += 1;
        ctx.nvm
            .write(line_addr, data, Purpose::WriteBack, now.max(c.commit_done))
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].tx.in_tx = false;
        if self.cores[core].tx.lines.is_empty() {
            return now;
        }
        let t = self.flush_buffer(ctx, core, now);
        let t = self.reserve(ctx, core, 1, t);
        let t = if self.mutant_commit_first { now } else { t };
        let ring = self.ring;
        let c = &mut self.cores[core];
        let rec = commit_record(REC_MAGIC, c.tail, u64::from(c.tx.txid), c.tx.records);
        let done = ctx
            .nvm
            .write(ring.slot_addr(core, c.tail), &rec, Purpose::Metadata, t);
        self.st_commit_records += 1;
        if c.tx.overflow {
            let records = c.tx.records + 1;
            ctx.input_error(format!(
                "opt-redo.log_bytes_per_core={} holds {} redo records per core, but a transaction on core {core} needed {records} ({} modified lines, coalesced in the {}-line log buffer, plus a commit record); {}",
                ring.per_core_bytes,
                ring.log.slots,
                c.tx.lines.len(),
                self.buffer_lines,
                crate::schemes::raise_advice(PARAMS, "opt-redo.log_bytes_per_core", 64 + records * REC_BYTES)
            ));
        }
        c.tail += 1;
        c.committed_tail = c.tail;
        c.last_committed_txid = c.tx.txid;
        c.commit_done = done;
        for tl in &c.tx.lines {
            c.pending.insert(tl.addr, tl.seq);
        }
        // Held lines may go home now that the log is durable.
        self.held_scratch.clear();
        self.held_scratch.extend(c.held.drain());
        self.held_scratch.sort_unstable_by_key(|h| h.0);
        for &(line, d) in &self.held_scratch {
            c.pending.remove(&line);
            ctx.nvm.write(line, &d, Purpose::WriteBack, done);
            self.st_evict_home += 1;
        }
        if (c.tail - c.head) * 4 > self.ring.log.slots * 3 {
            self.urgent = true;
        }
        done
    }

    fn next_event_at(&self) -> Option<Cycle> {
        if self.urgent {
            Some(0)
        } else {
            Some(self.next_ckpt)
        }
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        for core in 0..self.cores.len() {
            self.checkpoint_core(ctx, core, now);
        }
        if !self.urgent || now >= self.next_ckpt {
            self.next_ckpt = now + self.period;
        }
        self.urgent = false;
        None
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut t = now;
        for core in 0..self.cores.len() {
            t = t.max(self.checkpoint_core(ctx, core, now));
        }
        t
    }

    fn background_kind(&self) -> &'static str {
        crate::schemes::path::CHECKPOINT
    }

    fn recovery_paths(&self) -> &'static [&'static str] {
        use crate::schemes::path::{CHECKPOINT, FORCED_CHECKPOINT};
        &[CHECKPOINT, FORCED_CHECKPOINT]
    }

    fn stats(&self) -> SchemeStats {
        vec![
            ("redo_records", self.st_records as f64),
            ("commit_records", self.st_commit_records as f64),
            (
                "log_bytes",
                (self.st_records * REC_BYTES + self.st_commit_records * 64) as f64,
            ),
            ("log_buffer_flushes", self.st_buffer_flushes as f64),
            ("checkpoints", self.st_checkpoints as f64),
            ("forced_checkpoints", self.st_forced_checkpoints as f64),
            ("checkpoint_lines_written", self.st_ckpt_lines as f64),
            ("log_records_truncated", self.st_retired_data_records as f64),
            ("held_evictions", self.st_held as f64),
            ("held_max_lines", self.st_held_max as f64),
            (
                "committed_evictions_written_home",
                self.st_evict_home as f64,
            ),
            ("clean_evictions_dropped", self.st_dropped_clean as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.st_records = 0;
        self.st_commit_records = 0;
        self.st_checkpoints = 0;
        self.st_forced_checkpoints = 0;
        self.st_ckpt_lines = 0;
        self.st_retired_data_records = 0;
        self.st_held = 0;
        self.st_held_max = 0;
        self.st_evict_home = 0;
        self.st_dropped_clean = 0;
        self.st_buffer_flushes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::schemes::kit::redo_log::KIND_DATA;
    use crate::types::line_of;
    use rustc_hash::FxHashSet;

    fn run(threads: usize, tx: u64, extra: &[(&str, &str)]) -> Engine {
        crate::schemes::small_cache_run("opt-redo", threads, tx, extra)
    }

    fn stat(e: &Engine, k: &str) -> f64 {
        e.scheme.stats().iter().find(|s| s.0 == k).unwrap().1
    }

    /// Decoded persist events: (kind, core, txid, home) for log records.
    enum Ev {
        Data { txid: u64, home: Addr },
        Commit { txid: u64 },
        Home { line: Addr },
        Other,
    }

    fn decode(e: &Engine) -> Vec<Ev> {
        let ring = Ring::new(&e.params, &e.ctx.layout);
        let pl = &e.ctx.nvm.persist_log;
        pl.events()
            .iter()
            .map(|ev| {
                let d = pl.data(ev);
                let word = |i: usize| u64::from_le_bytes(d[i * 8..i * 8 + 8].try_into().unwrap());
                if ev.addr < e.ctx.layout.home_limit {
                    Ev::Home {
                        line: line_of(ev.addr),
                    }
                } else if ev.addr >= ring.log.base
                    && (ev.addr - ring.log.base) % ring.log.stride >= 64
                    && ((ev.addr - ring.log.base) % ring.log.stride - 64).is_multiple_of(REC_BYTES)
                    && d.len() == 64
                    && word(0) == REC_MAGIC
                {
                    match word(3) {
                        KIND_DATA => Ev::Data {
                            txid: word(2),
                            home: word(4),
                        },
                        _ => Ev::Commit { txid: word(2) },
                    }
                } else {
                    Ev::Other
                }
            })
            .collect()
    }

    /// Rule: a line reaches home only after the commit record of the
    /// transaction whose newest record for it precedes the write.
    #[test]
    fn home_write_waits_for_commit_record() {
        let e = run(2, 80, &[("opt-redo.checkpoint_period_ms", "0.002")]);
        let mut newest: FxHashMap<Addr, u64> = FxHashMap::default();
        let mut committed: FxHashSet<u64> = FxHashSet::default();
        let mut homes = 0;
        for ev in decode(&e) {
            match ev {
                Ev::Data { txid, home } => {
                    newest.insert(home, txid);
                }
                Ev::Commit { txid } => {
                    committed.insert(txid);
                }
                Ev::Home { line } => {
                    if let Some(t) = newest.get(&line) {
                        assert!(
                            committed.contains(t),
                            "line {line:#x} went home before tx {t} committed"
                        );
                        homes += 1;
                    }
                }
                Ev::Other => {}
            }
        }
        assert!(homes > 50, "{homes}");
        assert!(stat(&e, "held_evictions") > 0.0);
    }

    /// Rule: TxEnd returns only after the transaction's commit record is
    /// persisted (one commit record per transaction before each ack).
    #[test]
    fn ack_follows_commit_record() {
        let e = run(1, 40, &[]);
        let evs = decode(&e);
        let h = e.history.as_ref().unwrap();
        for (i, r) in h.per_thread[0].iter().enumerate() {
            let commits = evs[..r.ack_persist_seq as usize]
                .iter()
                .filter(|x| matches!(x, Ev::Commit { .. }))
                .count();
            assert_eq!(
                commits,
                i + 1,
                "tx {i} acknowledged before its commit record"
            );
        }
    }

    /// Combination: repeated updates to the same lines between checkpoints
    /// are written home once.
    #[test]
    fn checkpoint_combines_repeated_updates() {
        // Few items, all updates: the same lines are logged again and again.
        let e = run(
            1,
            800,
            &[
                ("workload.initial_items", "4"),
                ("workload.update_ratio", "1.0"),
                ("cache.llc_size_bytes", "2MB"),
                ("cache.llc_ways", "16"),
                ("cache.l2_size_bytes", "256KB"),
                ("cache.l2_ways", "8"),
                ("cache.l1_size_bytes", "32KB"),
                ("cache.l1_ways", "4"),
                ("opt-redo.checkpoint_period_ms", "0.005"),
                // Counts every checkpoint of the run: no warm-up window,
                // and the in-order core's run length (>= 2 periods).
                ("run.warmup_tx_share", "0"),
                ("cpu.model", "in-order"),
            ],
        );
        let ckpt = stat(&e, "checkpoint_lines_written");
        let truncated = stat(&e, "log_records_truncated");
        assert!(stat(&e, "checkpoints") >= 2.0);
        assert!(
            ckpt > 0.0 && ckpt * 4.0 < truncated,
            "checkpoint wrote {ckpt} lines for {truncated} records"
        );
    }
}
