//! example-redo: the smallest complete hardware redo logger, kept as the
//! worked example of writing a scheme (docs/ARCHITECTURE.md "Adding a
//! scheme") and as the test that a scheme needs nothing but its module and
//! one line in the registry. Test-only: built with the `example-scheme`
//! Cargo feature.
//!
//! - Each core owns a log in the scheme's reserved NVM: a commit line
//!   {magic, txid, record count, checksum}, then 16 B records (addr, new
//!   value), four to a line.
//! - A transactional store only updates the controller's log buffer (one
//!   record per word, the newest value wins); nothing reaches NVM yet.
//! - A line a running transaction modified may not reach home before the
//!   transaction commits (a redo log cannot undo it): its LLC write-back is
//!   held in the controller, which serves it to later misses.
//! - TxEnd: persist the records, then the commit record (the transaction is
//!   durable: TxEnd returns), then write the new values and the held lines
//!   home, then, once home is durable, clear the commit line (truncation).
//!   The next transaction of the core writes its records after that.
//! - Recovery: per core, if the commit line is valid, write its records
//!   home, then clear it. Written as a resumable scan (recovery/scan.rs).

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{recover_by_scan, ResumableScan, ScanIo};
use crate::schemes::kit::log::{
    csum, header_line, line_word, log_stride, owner_of, recovery_ns, MAX_CORES,
};
use crate::schemes::{
    raise_advice, Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo,
    SchemeStats, Store, Writeback,
};
use crate::types::{Addr, CoreId, Cycle, LineData, Purpose};
use std::collections::BTreeMap;

pub static PARAMS: &[ParamSpec] = &[
    p!("example-redo.log_bytes_per_core", int 64 << 10, "bytes", Check::PowerOfTwo(4096, 1 << 30),
        "example scheme (test-only): a transaction of up to 4092 written words",
        "per-core redo log in NVM (64 B commit line + 16 B per written word)"),
    p!("example-redo.mutant", str "none", &["none", "commit-before-records"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): commit-before-records = TxEnd persists the commit record before the records"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "example-redo",
    description: "test-only example scheme: per-core word redo log, commit record, held write-backs, apply and truncate at TxEnd",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    // The registry entry says how recovery is written; crash verification
    // then resumes the scan from one crash point to the next.
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
    defaults: crate::schemes::RunDefaults::BARE,
};

const COMMIT_MAGIC: u64 = 0x4558_5245_444f_4331; // "EXREDOC1"
const REC_BYTES: u64 = 16;

/// Where each core's log lives (a function of the parameters and the
/// layout only, so that recovery finds it from the bytes alone).
#[derive(Clone, Copy)]
struct Logs {
    base: Addr,
    stride: u64,
    /// Records that fit after the commit line.
    slots: u64,
    home_limit: Addr,
}

impl Logs {
    fn new(p: &Params, layout: &Layout) -> Self {
        let per_core = p.u64("example-redo.log_bytes_per_core");
        Logs {
            base: layout.reserved_base,
            stride: log_stride(p, per_core),
            slots: (per_core - 64) / REC_BYTES,
            home_limit: layout.home_limit,
        }
    }
    fn commit_addr(&self, core: usize) -> Addr {
        self.base + core as u64 * self.stride
    }
    fn record_addr(&self, core: usize, i: u64) -> Addr {
        self.commit_addr(core) + 64 + i * REC_BYTES
    }
}

fn reserved_bytes(p: &Params) -> u64 {
    MAX_CORES * log_stride(p, p.u64("example-redo.log_bytes_per_core"))
}

/// The commit line. Its checksum makes a torn commit line invalid, so the
/// commit record is atomic even where 64 B writes are not.
fn commit_line(txid: u64, count: u64) -> LineData {
    let w = [COMMIT_MAGIC, txid, count];
    header_line(&[w[0], w[1], w[2], csum(&w, &[])])
}

/// The record count of a valid commit line.
fn decode_commit(l: &LineData) -> Option<u64> {
    let w = [line_word(l, 0), line_word(l, 1), line_word(l, 2)];
    (w[0] == COMMIT_MAGIC && line_word(l, 3) == csum(&w, &[])).then_some(w[2])
}

#[derive(Default)]
struct Core {
    txid: u32,
    in_tx: bool,
    /// The log buffer: the running transaction's words, newest value.
    words: BTreeMap<Addr, u64>,
    /// Held write-backs of the running transaction's lines.
    held: BTreeMap<Addr, LineData>,
    /// When the last truncation is durable: the log is free again.
    log_free: Cycle,
}

struct ExampleRedo {
    logs: Logs,
    cores: Vec<Core>,
    next_txid: u32,
    /// Test-only planted bug (`example-redo.mutant`).
    commit_first: bool,
    st_records: u64,
    st_held: u64,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(ExampleRedo {
        logs: Logs::new(p, layout),
        cores: (0..layout.threads).map(|_| Core::default()).collect(),
        next_txid: 1,
        commit_first: p.str("example-redo.mutant") == "commit-before-records",
        st_records: 0,
        st_held: 0,
    }))
}

impl Scheme for ExampleRedo {
    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.txid = self.next_txid;
        c.in_tx = true;
        c.words.clear();
        self.next_txid += 1;
        now
    }

    fn store(&mut self, _ctx: &mut MemCtx, ev: Store, ext: &mut LineExt) -> Cycle {
        let Store {
            core,
            addr,
            new,
            in_tx,
            now,
            ..
        } = ev;
        if in_tx {
            // Tag the cache line so its write-back is held until commit.
            let c = &mut self.cores[core];
            ext.tx = true;
            ext.txid = c.txid;
            c.words.insert(addr, new);
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
        // A held line is newer than home: serve it, dirty and still tagged.
        let c = &mut self.cores[owner_of(&ctx.layout, line_addr)];
        if let Some(d) = c.held.remove(&line_addr) {
            *out = d;
            ext.tx = true;
            ext.txid = c.txid;
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
        let c = &mut self.cores[owner_of(&ctx.layout, line_addr)];
        if ext.tx && c.in_tx && ext.txid == c.txid {
            // Uncommitted data at home could not be undone after a crash.
            c.held.insert(line_addr, *data);
            self.st_held += 1;
            return now;
        }
        ctx.nvm.write(line_addr, data, Purpose::WriteBack, now)
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let logs = self.logs;
        let c = &mut self.cores[core];
        c.in_tx = false;
        if c.words.is_empty() {
            return now;
        }
        let n = c.words.len() as u64;
        if n > logs.slots {
            // Bad input, not a crash-consistency question: the run ends.
            let advice = raise_advice(
                PARAMS,
                "example-redo.log_bytes_per_core",
                64 + n * REC_BYTES,
            );
            ctx.input_error(format!(
                "a transaction on core {core} wrote {n} words; example-redo.log_bytes_per_core holds {} records: {advice}",
                logs.slots
            ));
            return now;
        }
        // The records overwrite the previous transaction's: wait until its
        // truncation is durable.
        let start = now.max(c.log_free);
        let (commit, commit_at) = (commit_line(u64::from(c.txid), n), logs.commit_addr(core));
        let early = self
            .commit_first
            .then(|| ctx.nvm.write(commit_at, &commit, Purpose::Metadata, start));
        // 1. The records, four to a line, a line per write.
        let recs: Vec<u8> = c
            .words
            .iter()
            .flat_map(|(a, v)| [*a, *v])
            .flat_map(u64::to_le_bytes)
            .collect();
        let mut records_done = start;
        for (i, chunk) in recs.chunks(64).enumerate() {
            let a = logs.record_addr(core, i as u64 * 4);
            records_done = records_done.max(ctx.nvm.write(a, chunk, Purpose::Log, start));
        }
        self.st_records += n;
        // 2. The commit record, only once every record is durable: a
        // recovery that finds it replays all of them.
        let commit_done = early.unwrap_or_else(|| {
            ctx.nvm
                .write(commit_at, &commit, Purpose::Metadata, records_done)
        });
        // 3. Committed: the new values and the held lines may go home.
        let mut home_done = commit_done;
        for (&a, &v) in &c.words {
            let t = ctx.nvm.write(a, &v.to_le_bytes(), Purpose::Gc, commit_done);
            home_done = home_done.max(t);
        }
        for (&line, d) in &c.held {
            let t = ctx.nvm.write(line, d, Purpose::WriteBack, commit_done);
            home_done = home_done.max(t);
        }
        c.held.clear();
        // 4. Truncate once home holds every record: recovery then has
        // nothing to replay, and the log is free for the next transaction.
        c.log_free = ctx.nvm.write(commit_at, &[0u8; 64], Purpose::Gc, home_done);
        // The transaction is durable at its commit record.
        commit_done.max(records_done)
    }

    fn stats(&self) -> SchemeStats {
        vec![
            ("redo_records", self.st_records as f64),
            ("held_evictions", self.st_held as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.st_records = 0;
        self.st_held = 0;
    }
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    // One recovery code: the from-scratch recovery is the scan run to its
    // end, the same code crash verification resumes.
    recover_by_scan(new_scan(p, layout), img, p)
}

fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(Scan {
        logs: Logs::new(p, layout),
        cores: vec![CoreScan::default(); layout.threads],
    })
}

/// Recovery, one cursor per core's log.
struct Scan {
    logs: Logs,
    cores: Vec<CoreScan>,
}

/// One core's scan as of its last mark (plus `tail_reads`).
#[derive(Clone, Default)]
struct CoreScan {
    /// The commit line was valid and its records were replayed.
    replayed: bool,
    records: u64,
    /// Lines read up to the mark, and since (where the scan stopped).
    reads: u64,
    tail_reads: u64,
}

impl ResumableScan for Scan {
    fn cursors(&self) -> usize {
        self.cores.len()
    }

    fn resume(&mut self, c: usize, io: &mut dyn ScanIo) -> Result<()> {
        let logs = self.logs;
        let s = &mut self.cores[c];
        s.tail_reads = 0;
        if s.replayed {
            return Ok(());
        }
        // No valid commit line: stop without a mark. The line is the
        // scan's frontier; the driver resumes this cursor when it changes.
        let Some(n) = decode_commit(&io.read_line(logs.commit_addr(c))) else {
            s.tail_reads = 1;
            return Ok(());
        };
        if n > logs.slots {
            return Err(Error::Internal(format!(
                "example-redo log {c}: {n} records"
            )));
        }
        for i in 0..n {
            let a = io.read_u64(logs.record_addr(c, i));
            let v = io.read_u64(logs.record_addr(c, i) + 8);
            if a >= logs.home_limit || !a.is_multiple_of(8) {
                return Err(Error::Internal(format!(
                    "example-redo log {c}: record {i} names {a:#x}, not a home word"
                )));
            }
            // Home and log are disjoint: these writes never change a byte
            // any cursor reads (the scan contract).
            io.home(a, &v.to_le_bytes());
        }
        // State changes only right before the mark that keeps the writes.
        s.replayed = true;
        s.records = n;
        s.reads = 1 + (n * REC_BYTES).div_ceil(64);
        io.mark();
        Ok(())
    }

    /// Truncate the replayed logs, after every core's home writes: a crash
    /// inside recovery finds the commit line still valid and replays the
    /// same words again.
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        for (c, s) in self.cores.iter().enumerate() {
            if s.replayed {
                out(self.logs.commit_addr(c), &[0u8; 64]);
            }
        }
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let read: u64 = self.cores.iter().map(|s| s.reads + s.tail_reads).sum();
        let replayed = self.cores.iter().filter(|s| s.replayed);
        // A word write per record, and the truncation line.
        let written: u64 = replayed.clone().map(|s| s.records + 1).sum();
        let words: u64 = replayed.clone().map(|s| s.records).sum();
        RecoveryReport {
            bytes_read: read * 64,
            bytes_written: words * 8 + (written - words) * 64,
            modeled_ns: recovery_ns(p, read, written),
            details: vec![("transactions_replayed", replayed.count() as f64)],
        }
    }
}
