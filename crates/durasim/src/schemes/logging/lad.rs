//! LAD: logless atomic durability (Gupta, Daglis and Falsafi, MICRO 2019),
//! as the HOOP paper's baseline (§IV-A, BASELINES.md).
//!
//! - A transaction's updated lines are staged, speculative, in the
//!   ADR-protected write-pending queues of the memory controllers (LAD's
//!   abstract: "persistent buffering space at the MCs"); a line goes to the
//!   controller that owns its address (`lad.controllers`, line-interleaved).
//!   When a line arrives (evicted mid-transaction, or flushed at TxEnd) it
//!   is written into the core's staging partition, an ADR structure
//!   (`persist_adr_structure` at `layout.adr_base`), as an entry {magic,
//!   txid, index, home, checksum} + data. Staged lines never reach home
//!   before commit; misses are served from staging.
//! - Commit (LAD's distributed protocol): the core flushes the lines still
//!   in its caches, waits for every controller's reception ACK, sends a
//!   commit request (thread, txid) to every controller, each controller
//!   records the thread's committed txid in its ADR array (the per-controller
//!   commit header here) and clears the entries' speculative state, and the
//!   core resumes on the last commit ACK. Each message is one on-chip
//!   traversal (`cache.llc_latency_cycles`). The committed entries then
//!   drain to NVM as ordinary writes; the core does not wait for NVM.
//! - Bounded queues: each controller holds at most `lad.staging_lines_total`
//!   speculative lines (capped at `mc.write_queue_entries`), shared by all
//!   cores. A line arriving when its controller's queue (or the core's
//!   partition) is full spills to LAD's logging fallback: the controller
//!   reads the old line from home, appends an undo record (the Opt-Undo
//!   format) and writes the line in place once the record is durable.
//!   Commit then also truncates the undo log.
//! - Lines of committed transactions were released at commit, so their
//!   later evictions are clean.
//! - Recovery: a core's transaction is committed if any controller's header
//!   says so (LAD takes the newest committed txid over all controllers, as
//!   a crash can fall between two controllers' updates); apply its staged
//!   lines, or discard them and roll back its undo records; clear the
//!   headers.

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::schemes::kit::line_index::LineIndex;
use crate::schemes::kit::log::{
    csum, header_line, line_word, log_stride, owner_of, recovery_ns, MAX_CORES,
};
use crate::schemes::kit::undo_log::{ScanMode, UndoLog, UndoRecord};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Store, Writeback,
};
use crate::types::{line_of, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose};

pub static PARAMS: &[ParamSpec] = &[
    p!("lad.staging_lines_per_core", int 64, "lines", Check::Range(1.0, 65536.0),
        "modelling choice, see docs/MODEL.md (a partition may hold the whole shared queue, lad.staging_lines_total)",
        "most lines one core may stage; more lines in one transaction fall back to undo logging"),
    p!("lad.staging_lines_total", int 64, "lines", Check::Range(1.0, 65536.0),
        "LAD (Gupta et al., MICRO 2019) stages in each memory controller's existing ADR write-pending queue; its size is mc.write_queue_entries (USIMM default 64), which caps this value",
        "speculative lines each controller's write-pending queue holds for all cores (at most mc.write_queue_entries); a line arriving when its controller's queue is full spills to the undo-logging fallback"),
    p!("lad.controllers", int 1, "controllers", Check::Range(1.0, 16.0),
        "modelling choice, see docs/MODEL.md: durasim models one memory controller (nvm.channels channels behind it); LAD's commit protocol spans every controller, so more than one splits the lines across controllers (line-interleaved), each with its own queue and commit header",
        "memory controllers LAD's commit protocol spans"),
    p!("lad.commit_update_cycles", int 1, "cycles", Check::Range(0.0, 1e6),
        "modelling choice, see docs/MODEL.md (LAD gives no latency): one cycle for a controller to write the thread's committed txid and flash-clear the speculative bits",
        "controller-side work between a commit request and its ACK"),
    p!("lad.undo_log_bytes_per_core", int 1 << 20, "bytes", Check::PowerOfTwo(1 << 16, 1 << 30),
        "modelling choice, see docs/MODEL.md (same as opt-undo.log_bytes_per_core)",
        "per-core undo log in NVM for the staging-overflow fallback"),
    p!("lad.mutant", str "none", &["none", "release-before-commit", "commit-before-flush-acks", "overflow-skips-log", "per-controller-decision", "scan-past-records"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): release-before-commit = staged lines are released to NVM before the commit header persists; commit-before-flush-acks = the controllers record the commit before the flushed lines have arrived; overflow-skips-log = a spilled line is written in place without its undo record; per-controller-decision = recovery applies each controller's lines by that controller's header alone; scan-past-records = recovery's undo-log scan reads on past the unresolved transaction's records into an older transaction's (it checks the txid of the first record only)"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "lad",
    description: "logless atomic durability: lines staged in ADR controller queues until commit, undo-log fallback on overflow",
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
        reaches: "no background mechanism (staging at commit)",
        needs: None,
    },
};

fn reserved_bytes(p: &Params) -> u64 {
    MAX_CORES * log_stride(p, p.u64("lad.undo_log_bytes_per_core"))
}

const STAGE_MAGIC: u64 = 0x4c41_4453_5447_4831; // "LADSTGH1"
/// The recovery path of a transaction that overflowed its staging and
/// undo-logged the rest.
const OVERFLOW_PATH: &str = "undo-log overflow";
const ENTRY_MAGIC: u64 = 0x4c41_4453_5447_4531; // "LADSTGE1"
const COMMITTED: u64 = 1;
const ENTRY_BYTES: u64 = 128;

/// Most controllers `lad.controllers` accepts.
const MAX_CONTROLLERS: u64 = 16;

/// The ADR structures: each controller's commit headers (one line per
/// core: the thread's committed txid), then one staging partition per core.
#[derive(Clone, Copy, Debug)]
struct Staging {
    base: Addr,
    stride: u64,
    cap: u64,
    controllers: u64,
}

impl Staging {
    fn new(p: &Params, layout: &Layout) -> Self {
        let cap = p.u64("lad.staging_lines_per_core");
        Staging {
            base: layout.adr_base,
            stride: (cap * ENTRY_BYTES).next_multiple_of(4096),
            cap,
            controllers: p.u64("lad.controllers"),
        }
    }
    /// Controller `ctrl`'s commit header of `core`.
    fn header_addr(&self, ctrl: u64, core: usize) -> Addr {
        self.base + (ctrl * MAX_CORES + core as u64) * 64
    }
    fn entry_addr(&self, core: usize, i: u64) -> Addr {
        self.base + MAX_CONTROLLERS * MAX_CORES * 64 + core as u64 * self.stride + i * ENTRY_BYTES
    }
    /// The controller that owns `line` (line-interleaved; our choice).
    fn controller_of(&self, line: Addr) -> u64 {
        (line / 64) % self.controllers
    }
    fn header(txid: u64, state: u64, count: u64) -> LineData {
        let w = [STAGE_MAGIC, txid, state, count];
        header_line(&[w[0], w[1], w[2], w[3], csum(&w, &[])])
    }
    fn entry(txid: u32, i: u64, home: Addr, data: &LineData) -> [u8; ENTRY_BYTES as usize] {
        let w = [ENTRY_MAGIC, txid as u64, i, home];
        let mut e = [0u8; ENTRY_BYTES as usize];
        e[..64].copy_from_slice(&header_line(&[w[0], w[1], w[2], w[3], csum(&w, data)]));
        e[64..].copy_from_slice(data);
        e
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    /// Only in the caches (changed since it last reached the controller).
    Cache,
    /// In staging slot `i` with its current data.
    Staged(u32),
    /// Overflowed: undo-logged, written in place with its current data.
    Home,
}

struct TxLine {
    addr: Addr,
    data: LineData,
    /// Staging slot, once it has one.
    slot: Option<u32>,
    /// Persist time of its undo record (overflow lines).
    undo_at: Option<Cycle>,
    /// When its newest in-place write was accepted (overflow lines): the
    /// controller ACKs a spilled line once it is durable, and the commit
    /// request waits for every ACK, also of lines spilled mid-transaction.
    home_at: Cycle,
    at: Where,
}

#[derive(Default)]
struct CoreState {
    txid: u32,
    in_tx: bool,
    lines: Vec<TxLine>,
    index: LineIndex,
    staged: u32,
    /// Lines this transaction stages at each controller.
    staged_at: Vec<u64>,
    undo_records: u64,
    /// When the last undo record was issued: records are written in index
    /// order (recovery reads them up to the first invalid one).
    undo_issued_at: Cycle,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mutant {
    None,
    ReleaseFirst,
    CommitBeforeFlushAcks,
    OverflowSkipsLog,
    PerControllerDecision,
    ScanPastRecords,
}

fn mutant(p: &Params) -> Mutant {
    match p.str("lad.mutant") {
        "release-before-commit" => Mutant::ReleaseFirst,
        "commit-before-flush-acks" => Mutant::CommitBeforeFlushAcks,
        "overflow-skips-log" => Mutant::OverflowSkipsLog,
        "per-controller-decision" => Mutant::PerControllerDecision,
        "scan-past-records" => Mutant::ScanPastRecords,
        _ => Mutant::None,
    }
}

struct Lad {
    /// Test-only planted bug (`lad.mutant`).
    mutant: Mutant,
    st: Staging,
    log: UndoLog,
    cores: Vec<CoreState>,
    next_txid: u32,
    /// One on-chip traversal between a core and a controller.
    flush_latency: Cycle,
    commit_update_cycles: Cycle,
    s_staged: u64,
    s_overflow_lines: u64,
    s_overflow_txs: u64,
    s_released: u64,
    s_dropped_clean: u64,
    s_staged_max: u64,
    s_served_from_staging: u64,
    s_pool_full_lines: u64,
    s_pool_max_lines: u64,
    s_commit_protocol_cycles: u64,
    s_commits: u64,
    /// Speculative lines each controller's write queue holds, shared by all
    /// cores, and how many it holds now.
    pool_cap: u64,
    pool_used: Vec<u64>,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Lad {
        mutant: mutant(p),
        st: Staging::new(p, layout),
        log: UndoLog::new(
            layout.reserved_base,
            p.u64("lad.undo_log_bytes_per_core"),
            p,
        ),
        cores: (0..layout.threads)
            .map(|_| CoreState {
                staged_at: vec![0; p.u64("lad.controllers") as usize],
                ..CoreState::default()
            })
            .collect(),
        next_txid: 1,
        flush_latency: p.u64("cache.llc_latency_cycles"),
        commit_update_cycles: p.u64("lad.commit_update_cycles"),
        s_staged: 0,
        s_overflow_lines: 0,
        s_overflow_txs: 0,
        s_released: 0,
        s_dropped_clean: 0,
        s_staged_max: 0,
        s_served_from_staging: 0,
        s_pool_full_lines: 0,
        s_pool_max_lines: 0,
        s_commit_protocol_cycles: 0,
        s_commits: 0,
        pool_cap: p
            .u64("lad.staging_lines_total")
            .min(p.u64("mc.write_queue_entries")),
        pool_used: vec![0; p.u64("lad.controllers") as usize],
    }))
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    let st = Staging::new(p, layout);
    let log = UndoLog::new(
        layout.reserved_base,
        p.u64("lad.undo_log_bytes_per_core"),
        p,
    );
    let per_controller = mutant(p) == Mutant::PerControllerDecision;
    let (mut read, mut written, mut applied_tx, mut rolled) = (0u64, 0u64, 0u64, 0u64);
    for c in 0..layout.threads {
        // Staging lives in the ADR domain: reading it costs no NVM traffic.
        // Each controller's header: (txid, count) of a committed transaction.
        let headers: Vec<Option<(u64, u64)>> = (0..st.controllers)
            .map(|ctrl| {
                let h = img.read_line(st.header_addr(ctrl, c));
                let w = [
                    line_word(&h, 0),
                    line_word(&h, 1),
                    line_word(&h, 2),
                    line_word(&h, 3),
                ];
                (w[0] == STAGE_MAGIC && line_word(&h, 4) == csum(&w, &[]) && w[2] == COMMITTED)
                    .then_some((w[1], w[3]))
            })
            .collect();
        // A crash between two controllers' updates leaves some headers
        // behind: the newest committed txid over all of them decides.
        let newest = headers.iter().flatten().max_by_key(|h| h.0).copied();
        let committed = newest.map(|h| h.0);
        if let Some((txid, count)) = newest {
            for i in 0..count.min(st.cap) {
                let a = st.entry_addr(c, i);
                let m = img.read_line(a);
                let d = img.read_line(a + 64);
                let ew = [
                    line_word(&m, 0),
                    line_word(&m, 1),
                    line_word(&m, 2),
                    line_word(&m, 3),
                ];
                if ew[0] != ENTRY_MAGIC
                    || ew[1] != txid
                    || ew[2] != i
                    || line_word(&m, 4) != csum(&ew, &d)
                {
                    return Err(Error::Internal(format!(
                        "lad recovery: core {c}: staging entry {i} of committed transaction {txid} is invalid"
                    )));
                }
                if per_controller
                    && headers[st.controller_of(ew[3]) as usize].map(|h| h.0) != Some(txid)
                {
                    continue;
                }
                img.write_bytes(ew[3], &d);
                written += 1;
            }
            applied_tx += 1;
        }
        let (r, rd, wr) = log.recover_core(
            img,
            c,
            committed,
            if mutant(p) == Mutant::ScanPastRecords {
                ScanMode::StaleTail
            } else {
                ScanMode::Checked
            },
        );
        rolled += r;
        read += rd;
        written += wr;
        for ctrl in 0..st.controllers {
            img.write_bytes(st.header_addr(ctrl, c), &Staging::header(0, 0, 0));
        }
    }
    Ok(RecoveryReport {
        bytes_read: read * 64,
        bytes_written: written * 64,
        modeled_ns: recovery_ns(p, read, written),
        details: vec![
            ("staged_transactions_applied", applied_tx as f64),
            ("undo_records_rolled_back", rolled as f64),
        ],
    })
}

impl Lad {
    /// Line `i` of `core`'s transaction arrives at the controller at `t`:
    /// stage it, or (partition full) undo-log it and write it in place.
    /// Returns when it is durable.
    fn arrive(&mut self, ctx: &mut MemCtx, core: usize, i: usize, t: Cycle) -> Cycle {
        let st = self.st;
        let c = &mut self.cores[core];
        let txid = c.txid;
        let tl = &mut c.lines[i];
        if tl.slot.is_none() && tl.undo_at.is_none() {
            let ctrl = st.controller_of(tl.addr) as usize;
            let pool_full = self.pool_used[ctrl] >= self.pool_cap;
            if (c.staged as u64) < st.cap && !pool_full {
                tl.slot = Some(c.staged);
                c.staged += 1;
                c.staged_at[ctrl] += 1;
                self.pool_used[ctrl] += 1;
                self.s_staged_max = self.s_staged_max.max(c.staged as u64);
                self.s_pool_max_lines = self.s_pool_max_lines.max(self.pool_used[ctrl]);
            } else {
                // Another core's staged lines may fill the shared queue.
                self.s_pool_full_lines += u64::from(pool_full);
                // Overflow: the old value is still home; log it first.
                if c.undo_records == 0 {
                    self.s_overflow_txs += 1;
                }
                let mut old = [0u8; 64];
                let r = ctx.nvm.read(tl.addr, &mut old, Purpose::Log, t);
                let (addr, n) = (tl.addr, c.undo_records);
                // The controller appends records in index order; a line
                // handled later can arrive earlier (the engine handles one
                // core's operations whole, their evictions at their own
                // times), so its record is not issued before the previous
                // one: recovery stops at the first invalid record, and a
                // later index persisted without an earlier one would leave
                // its line's old value unrestorable.
                let r = r.max(c.undo_issued_at);
                c.undo_issued_at = r;
                // A full log is reported at TxEnd (with the full count);
                // the line then goes home unlogged and the run ends there.
                let at = if self.mutant == Mutant::OverflowSkipsLog {
                    r
                } else {
                    let rec = UndoRecord {
                        txid,
                        index: n,
                        home: addr,
                        old: &old,
                    };
                    let p = ctx.nvm.persist_log.path_start();
                    let at = self.log.append(ctx, core, rec, r).unwrap_or(r);
                    ctx.nvm.persist_log.path_done(OVERFLOW_PATH, p);
                    at
                };
                let c = &mut self.cores[core];
                c.undo_records += 1;
                c.lines[i].undo_at = Some(at);
                self.s_overflow_lines += 1;
            }
        }
        let c = &mut self.cores[core];
        let tl = &mut c.lines[i];
        match (tl.slot, tl.undo_at) {
            (Some(s), _) => {
                let e = Staging::entry(txid, s as u64, tl.addr, &tl.data);
                ctx.nvm
                    .persist_adr_structure(st.entry_addr(core, s as u64), &e, t);
                tl.at = Where::Staged(s);
                self.s_staged += 1;
                t
            }
            (None, Some(undo_at)) => {
                tl.at = Where::Home;
                let (a, d) = (tl.addr, tl.data);
                let done = ctx.nvm.write(a, &d, Purpose::WriteBack, t.max(undo_at));
                tl.home_at = done;
                done
            }
            (None, None) => unreachable!(),
        }
    }
}

impl Scheme for Lad {
    fn recovery_paths(&self) -> &'static [&'static str] {
        &[OVERFLOW_PATH]
    }

    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.txid = self.next_txid;
        self.next_txid += 1;
        c.in_tx = true;
        c.lines.clear();
        c.index.clear();
        c.staged = 0;
        c.staged_at.fill(0);
        c.undo_records = 0;
        c.undo_issued_at = 0;
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
                // Every earlier transaction was released home at commit.
                let mut base = [0u8; 64];
                ctx.nvm.peek(line, &mut base);
                c.index.push(line);
                c.lines.push(TxLine {
                    addr: line,
                    data: base,
                    slot: None,
                    undo_at: None,
                    home_at: 0,
                    at: Where::Cache,
                });
                c.lines.len() - 1
            }
        };
        let tl = &mut c.lines[i];
        write_word(&mut tl.data, word_index(addr), new);
        tl.at = Where::Cache;
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
        let owner = owner_of(&ctx.layout, line_addr);
        let c = &self.cores[owner];
        if c.in_tx {
            if let Some(i) = c.index.get(line_addr) {
                if let Where::Staged(_) = c.lines[i].at {
                    // The controller forwards the staged copy.
                    *out = c.lines[i].data;
                    self.s_served_from_staging += 1;
                    return (now + 1, false);
                }
            }
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
        if c.in_tx && ext.txid == c.txid {
            let i = c.index.get(line_addr).expect("in the write set");
            c.lines[i].data = *data;
            return self.arrive(ctx, owner, i, now);
        }
        // Released at its transaction's commit: this copy is clean.
        self.s_dropped_clean += 1;
        now
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].in_tx = false;
        let n = self.cores[core].lines.len();
        if n == 0 {
            // No dirty line: no flush, no commit protocol.
            return now;
        }
        let st = self.st;
        let hop = self.flush_latency;
        let header = |c: &CoreState| Staging::header(c.txid as u64, COMMITTED, c.staged as u64);
        if self.mutant == Mutant::CommitBeforeFlushAcks {
            let h = header(&self.cores[core]);
            for ctrl in 0..st.controllers {
                ctx.nvm
                    .persist_adr_structure(st.header_addr(ctrl, core), &h, now);
            }
        }
        // Flush the lines still only in the caches (pipelined, one per
        // cycle after the LLC latency); each controller ACKs a line's
        // reception (a spilled line once it is durable).
        // The last ACK back at the core: a flushed line's one traversal
        // after its reception, a line spilled earlier one traversal after
        // its in-place write was durable.
        let arrive = now + hop;
        let mut acks = now;
        let mut k = 0;
        for i in 0..n {
            let tl = &self.cores[core].lines[i];
            if tl.at == Where::Cache {
                acks = acks.max(self.arrive(ctx, core, i, arrive + k) + hop);
                k += 1;
            } else if tl.at == Where::Home {
                acks = acks.max(tl.home_at + hop);
            }
        }
        // Commit request to every controller (in parallel); each records
        // the thread's committed txid (the commit point) and clears the
        // entries' speculative state, then ACKs.
        let commit_at = acks + hop + self.commit_update_cycles;
        let done = commit_at + hop;
        self.s_commit_protocol_cycles += done - now;
        self.s_commits += 1;
        let c = &mut self.cores[core];
        if c.undo_records > self.log.capacity_records() {
            let msg = self.log.too_small(
                PARAMS,
                "lad.undo_log_bytes_per_core",
                core,
                c.undo_records,
                &format!(
                    "{} modified lines, staged up to lad.staging_lines_per_core={} in a queue of min(lad.staging_lines_total, mc.write_queue_entries)={} lines per controller",
                    c.lines.len(),
                    st.cap,
                    self.pool_cap
                ),
            );
            // More staging helps only if the whole write set fits the
            // shared queue (the controller's write-pending queue).
            let lines = c.lines.len() as u64;
            if lines <= self.pool_cap {
                ctx.input_error(format!(
                    "{msg}, or set lad.staging_lines_per_core to at least {lines}"
                ));
            } else {
                ctx.input_error(msg);
            }
        }
        let release_first = self.mutant == Mutant::ReleaseFirst;
        let h = header(c);
        if !release_first && self.mutant != Mutant::CommitBeforeFlushAcks {
            for ctrl in 0..st.controllers {
                ctx.nvm
                    .persist_adr_structure(st.header_addr(ctrl, core), &h, commit_at);
            }
        }
        // The committed entries leave staging as ordinary writes and drain
        // to NVM at the controller's pace; the core does not wait for them.
        let mut released = commit_at;
        for tl in &c.lines {
            if let Where::Staged(_) = tl.at {
                released =
                    released.max(
                        ctx.nvm
                            .write(tl.addr, &tl.data, Purpose::WriteBack, commit_at),
                    );
                self.s_released += 1;
            }
        }
        if release_first {
            for ctrl in 0..st.controllers {
                ctx.nvm
                    .persist_adr_structure(st.header_addr(ctrl, core), &h, commit_at);
            }
        }
        if c.undo_records > 0 {
            // The staging header, which tells recovery the transaction
            // committed, is cleared only once its undo log is resolved:
            // otherwise a crash between them rolls the transaction back.
            released = released.max(self.log.resolve(ctx, core, c.txid, commit_at));
        }
        // Released: the partition and its share of each queue are free.
        for (used, &mine) in self.pool_used.iter_mut().zip(&c.staged_at) {
            *used -= mine;
        }
        for ctrl in 0..st.controllers {
            ctx.nvm.persist_adr_structure(
                st.header_addr(ctrl, core),
                &Staging::header(0, 0, 0),
                released,
            );
        }
        done
    }

    fn stats(&self) -> SchemeStats {
        vec![
            ("staged_line_writes", self.s_staged as f64),
            ("released_lines", self.s_released as f64),
            ("staging_max_lines", self.s_staged_max as f64),
            ("staging_overflow_lines", self.s_overflow_lines as f64),
            ("staging_overflow_txs", self.s_overflow_txs as f64),
            ("undo_log_bytes", (self.s_overflow_lines * 128) as f64),
            (
                "misses_served_from_staging",
                self.s_served_from_staging as f64,
            ),
            ("clean_evictions_dropped", self.s_dropped_clean as f64),
            ("staging_pool_lines", self.pool_cap as f64),
            ("staging_pool_max_lines", self.s_pool_max_lines as f64),
            ("staging_pool_full_lines", self.s_pool_full_lines as f64),
            (
                "commit_protocol_cycles_mean",
                self.s_commit_protocol_cycles as f64 / self.s_commits.max(1) as f64,
            ),
        ]
    }

    fn reset_stats(&mut self) {
        self.s_staged = 0;
        self.s_overflow_lines = 0;
        self.s_overflow_txs = 0;
        self.s_released = 0;
        self.s_dropped_clean = 0;
        self.s_staged_max = 0;
        self.s_served_from_staging = 0;
        self.s_pool_full_lines = 0;
        self.s_pool_max_lines = 0;
        self.s_commit_protocol_cycles = 0;
        self.s_commits = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use rustc_hash::{FxHashMap, FxHashSet};

    fn run(threads: usize, tx: u64, extra: &[(&str, &str)]) -> Engine {
        crate::schemes::small_cache_run("lad", threads, tx, extra)
    }

    /// Rules: (1) a staged line reaches home only after its transaction's
    /// commit header is durable; (2) an overflowed line reaches home only
    /// after its undo record.
    #[test]
    fn staged_lines_go_home_only_after_commit() {
        for cap in ["64", "3"] {
            let e = run(2, 60, &[("lad.staging_lines_per_core", cap)]);
            let st = Staging::new(&e.params, &e.ctx.layout);
            let log = UndoLog::new(
                e.ctx.layout.reserved_base,
                e.params.u64("lad.undo_log_bytes_per_core"),
                &e.params,
            );
            let pl = &e.ctx.nvm.persist_log;
            let mut staged_uncommitted: FxHashMap<u64, FxHashSet<Addr>> = FxHashMap::default();
            let mut undo_logged: FxHashSet<Addr> = FxHashSet::default();
            let (mut homes, mut staged_seen) = (0, 0);
            for ev in pl.events() {
                let d = pl.data(ev);
                let w = |i: usize| u64::from_le_bytes(d[i * 8..i * 8 + 8].try_into().unwrap());
                let entries = st.entry_addr(0, 0);
                if ev.addr >= st.base && ev.addr < entries {
                    if w(0) == STAGE_MAGIC && w(2) == COMMITTED {
                        staged_uncommitted.remove(&w(1));
                    }
                } else if ev.addr >= entries {
                    let off = (ev.addr - entries) % st.stride;
                    if off.is_multiple_of(ENTRY_BYTES) && w(0) == ENTRY_MAGIC {
                        staged_uncommitted.entry(w(1)).or_default().insert(w(3));
                        staged_seen += 1;
                    }
                } else if ev.addr >= log.base {
                    let off = (ev.addr - log.base) % log.stride;
                    if off >= 64 && (off - 64).is_multiple_of(128) {
                        undo_logged.insert(w(3));
                    }
                } else if ev.addr < e.ctx.layout.home_limit {
                    let line = line_of(ev.addr);
                    for (t, set) in &staged_uncommitted {
                        assert!(
                            !set.contains(&line) || undo_logged.contains(&line),
                            "cap {cap}: {line:#x} of uncommitted tx {t} reached home"
                        );
                    }
                    homes += 1;
                }
            }
            assert!(homes > 50 && staged_seen > 50, "{homes} {staged_seen}");
            let s = e.scheme.stats();
            let ovf = s
                .iter()
                .find(|x| x.0 == "staging_overflow_lines")
                .unwrap()
                .1;
            assert_eq!(ovf > 0.0, cap == "3", "overflow lines {ovf} with cap {cap}");
        }
    }

    fn stat(e: &Engine, k: &str) -> f64 {
        e.scheme.stats().iter().find(|x| x.0 == k).unwrap().1
    }

    /// The staging queue is the controller's write queue, shared by all
    /// cores: its capacity is min(lad.staging_lines_total,
    /// mc.write_queue_entries), never exceeded, and a line that finds it
    /// full takes the undo fallback.
    #[test]
    fn staging_is_the_controllers_shared_write_queue() {
        let e = run(4, 40, &[]);
        assert_eq!(stat(&e, "staging_pool_lines"), 64.0, "USIMM's 64 entries");
        let e = run(
            4,
            40,
            &[
                ("mc.write_queue_entries", "32"),
                ("mc.write_drain_high", "24"),
                ("mc.write_drain_low", "12"),
            ],
        );
        assert_eq!(stat(&e, "staging_pool_lines"), 32.0);
        assert!(stat(&e, "staging_pool_max_lines") <= 32.0);
        // 1 KB items: 17 lines per transaction, more than 8 shared lines.
        let e = run(4, 40, &[("lad.staging_lines_total", "8")]);
        assert_eq!(stat(&e, "staging_pool_lines"), 8.0);
        assert_eq!(stat(&e, "staging_pool_max_lines"), 8.0);
        assert!(stat(&e, "staging_pool_full_lines") > 0.0);
        assert!(stat(&e, "staging_overflow_lines") >= stat(&e, "staging_pool_full_lines"));
    }

    /// TxEnd acknowledges only after the commit header is durable.
    #[test]
    fn ack_follows_commit_header() {
        let e = run(1, 30, &[]);
        let st = Staging::new(&e.params, &e.ctx.layout);
        let pl = &e.ctx.nvm.persist_log;
        let h = e.history.as_ref().unwrap();
        for (i, r) in h.per_thread[0].iter().enumerate() {
            let commits = pl.events()[..r.ack_persist_seq as usize]
                .iter()
                .filter(|ev| {
                    let d = pl.data(ev);
                    ev.addr == st.header_addr(0, 0)
                        && u64::from_le_bytes(d[16..24].try_into().unwrap()) == COMMITTED
                })
                .count();
            assert_eq!(commits, i + 1);
        }
    }
}
