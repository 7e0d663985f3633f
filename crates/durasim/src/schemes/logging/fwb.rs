//! FWB: hardware undo+redo logging with a cache force-write-back (Ogleari,
//! Miller, Zhao, "Steal but No Force: Efficient Hardware Undo+Redo Logging
//! for Persistent Memory Systems", HPCA 2018), as MorLog evaluates it
//! (MorLog §II-B, §VI-A; BASELINES.md), and `fwb-unsafe`, the same design
//! with a log buffer as large as MorLog's two buffers together.
//!
//! - Every transactional store creates one undo+redo entry at word
//!   granularity (undo = the word's old value from the L1 line, redo = the
//!   stored value) in one volatile FIFO log buffer of
//!   `fwb.log_buffer_entries` entries. A later store to the same word by the
//!   same transaction while its entry is still buffered coalesces into it
//!   (new redo, oldest undo kept).
//! - An entry leaves the buffer for the memory controller `N` cycles after
//!   it was created, `N` = the buffer's entries ("if the log buffer has N
//!   entries, log data will be evicted N cycles after they are added",
//!   MorLog §II-B), or earlier when a new entry needs its slot. It is
//!   written into a circular log in NVM (32 B per entry: address, thread,
//!   type, torn bit, transaction id, checksum, undo word, redo word).
//! - Steal: a dirty data line may be written back at any time, and its
//!   entries must be persisted first. The hardware guarantees this by
//!   timing: `N` is below the minimum latency of traversing the cache
//!   hierarchy, so a store's data reaches the controller after its entry
//!   (MorLog §II-B). durasim's hierarchy moves a victim to the controller
//!   at once, so the write-back hook adds the traversal: a line's data
//!   arrives no earlier than `l1 + l2 + llc` latency cycles after the
//!   line's newest buffered store, and entries due before that arrival are
//!   written first. `fwb` also checks the rule (`order_waits` counts the
//!   times the timing alone would have broken it: 0 with the default
//!   sizes); `fwb-unsafe` relies on timing only, and its 48 entries outlive
//!   the traversal (44-46 cycles in the shipped configurations): a line
//!   written back right after a store reaches NVM before that store's undo
//!   entry, so it is not crash-consistent (the negative control).
//! - No force: TxEnd waits only for the log buffer (every entry up to the
//!   transaction's last) and then a commit record; data stay in the caches.
//! - Log truncation: the engine's force-write-back scan
//!   (`Scheme::force_write_back_cycles`, every `fwb.period_cycles`) writes
//!   back every line dirty at two consecutive passes, so after pass `k` the
//!   data of transactions that committed before pass `k-1` are home; the
//!   log head moves past them (persisted in one of two alternating header
//!   lines with a checksum).
//! - Recovery (from NVM bytes): the valid header with the larger head;
//!   entries from the head while their torn bit matches the pass of the log
//!   region and their checksum holds; transactions with a commit record are
//!   redone in log order, the others undone in reverse log order; then the
//!   head moves to the end (idempotent: a crash inside recovery repeats it).

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::hw_log::{
    encode, persist_head, Record, Ring, RingCursor, COMMIT_BITS, ENTRY_BYTES, HEADER_BYTES,
    TYPE_COMMIT, TYPE_DATA, UR_ENTRY_BITS,
};
use crate::schemes::{
    raise_advice, Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo,
    SchemeStats, Store, Writeback,
};
use crate::types::{line_of, Addr, CoreId, Cycle, Purpose};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

const PERIOD_SOURCE: &str = "MorLog §VI-A: force-write-back every three million cycles, in line with FWB (Ogleari et al. HPCA 2018)";
const LOG_SOURCE: &str = "modelling choice, docs/MODEL.md \"FWB and force write-back\" (MorLog §III-A: a large-enough log region prevents overflow; 4 M entries of 32 B outlast two default scan periods at the simulated store rates)";

pub static PARAMS: &[ParamSpec] = &[
    p!("fwb.log_buffer_entries", int 16, "entries", Check::Range(1.0, 4096.0),
        "MorLog §VI-A: FWB's log buffer is the size of MorLog's undo+redo buffer, 16 entries (§III-D, Table I)",
        "volatile FIFO log buffer of undo+redo entries; an entry is written to the log this many cycles after its creation"),
    p!("fwb.period_cycles", int 3_000_000, "cycles", Check::Range(1000.0, 1e12),
        PERIOD_SOURCE,
        "period of the force-write-back scan that bounds the log (truncation after two passes)"),
    p!("fwb.log_bytes", int 128 << 20, "bytes", Check::PowerOfTwo(1 << 12, 1 << 36),
        LOG_SOURCE,
        "circular undo+redo log in NVM (32 B per entry or commit record)"),
    p!("fwb.mutant", str "none", &["none", "truncate-early", "no-order", "scan-skips-head-entry", "head-before-writebacks"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/fwb.rs, tests/mutants.rs; refused by the CLI): truncate-early = a pass retires transactions that committed before it (not before the previous pass); no-order = a data write-back does not wait for its line's buffered entries and ignores the traversal time; scan-skips-head-entry = recovery's log scan starts one entry after the persisted head; head-before-writebacks = the new log head is persisted without waiting for the write-backs that took the retired transactions' data home"),
];

pub static UNSAFE_PARAMS: &[ParamSpec] = &[
    p!("fwb-unsafe.log_buffer_entries", int 48, "entries", Check::Range(1.0, 4096.0),
        "MorLog §VI-A: FWB-Unsafe's log buffer is as large as MorLog's undo+redo and redo buffers together, 16 + 32 entries",
        "as fwb.log_buffer_entries; larger than the cache traversal, so not crash-consistent"),
    p!("fwb-unsafe.period_cycles", int 3_000_000, "cycles", Check::Range(1000.0, 1e12),
        PERIOD_SOURCE,
        "as fwb.period_cycles"),
    p!("fwb-unsafe.log_bytes", int 128 << 20, "bytes", Check::PowerOfTwo(1 << 12, 1 << 36),
        LOG_SOURCE,
        "as fwb.log_bytes"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "fwb",
    description: "FWB hardware undo+redo logging: entry per store via a 16-entry FIFO, steal, no force, force-write-back truncation",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::MORLOG),
        tx: 40_000,
        reaches: "force-write-back every 3 M cycles: 3 passes in fwb's measured window on btree",
        needs: None,
    },
};

pub static UNSAFE_INFO: SchemeInfo = SchemeInfo {
    name: "fwb-unsafe",
    description: "FWB with a 48-entry log buffer (MorLog's FWB-Unsafe); undo entries can trail their data: not crash-consistent",
    // Promises nothing: the crash oracle's negative control, like `ideal`.
    durability: Durability::None,
    params: UNSAFE_PARAMS,
    reserved_bytes: reserved_bytes_unsafe,
    build: build_unsafe,
    recover: recover_unsafe,
    recovery: RecoveryForm::Scan(new_scan_unsafe),
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::MORLOG),
        tx: 40_000,
        reaches: "force-write-back every 3 M cycles: 3 passes in fwb's measured window on btree",
        needs: None,
    },
};

/// The parameter keys of one of the two variants.
struct Keys {
    entries: &'static str,
    period: &'static str,
    log_bytes: &'static str,
    mutant: Option<&'static str>,
}

const SAFE: Keys = Keys {
    entries: "fwb.log_buffer_entries",
    period: "fwb.period_cycles",
    log_bytes: "fwb.log_bytes",
    mutant: Some("fwb.mutant"),
};
const UNSAFE: Keys = Keys {
    entries: "fwb-unsafe.log_buffer_entries",
    period: "fwb-unsafe.period_cycles",
    log_bytes: "fwb-unsafe.log_bytes",
    mutant: None,
};

fn reserved_bytes(p: &Params) -> u64 {
    p.u64(SAFE.log_bytes) + HEADER_BYTES
}
fn reserved_bytes_unsafe(p: &Params) -> u64 {
    p.u64(UNSAFE.log_bytes) + HEADER_BYTES
}

/// A buffered undo+redo entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    core: CoreId,
    txid: u32,
    addr: Addr,
    undo: u64,
    redo: u64,
    /// Created at (its due time is `added + N`).
    added: Cycle,
    /// The newest store coalesced into it.
    last_store: Cycle,
}

/// A committed transaction with entries in the log.
#[derive(Clone, Copy, Debug)]
struct Committed {
    first_seq: u64,
    /// Force-write-back passes finished when it committed.
    pass: u64,
}

#[derive(Default)]
struct CoreState {
    txid: u32,
    /// Sequence number of the running transaction's first persisted entry.
    open_first: Option<u64>,
    /// The running transaction created at least one entry.
    logged: bool,
    committed: VecDeque<Committed>,
}

#[derive(Default, Clone, Copy)]
struct Stats {
    entries: u64,
    coalesced: u64,
    entries_written: u64,
    early_evictions: u64,
    commit_records: u64,
    order_waits: u64,
    data_before_entry: u64,
    retired_tx: u64,
    head_advances: u64,
    commit_stall_cycles: u64,
    log_bits_before_encoding: u64,
}

pub struct Fwb {
    ring: Ring,
    capacity: usize,
    buffer: VecDeque<Entry>,
    /// Minimum cycles from a store to its line's data reaching the memory
    /// controller (L1 + L2 + LLC latency; MorLog §II-B).
    traversal_cycles: Cycle,
    /// `fwb` enforces log-before-data; `fwb-unsafe` relies on timing.
    strict: bool,
    period: Cycle,
    truncate_early: bool,
    no_order: bool,
    /// Test-only (`fwb.mutant`): the head does not wait for `data_durable_at`.
    head_first: bool,
    head: u64,
    tail: u64,
    header_flip: u64,
    /// The media knows the log region (log bits are counted there).
    region_marked: bool,
    passes: u64,
    /// When the newest store entered the buffer. The FIFO's insertion
    /// times are monotone (TSO: a store performs after the older ones);
    /// durasim hands the hook each store's own completion time, which is
    /// earlier for a hit behind a miss, so a store counts as performed at
    /// the later of the two.
    last_perform: Cycle,
    /// Latest time a log write was persisted (without ADR a data write-back
    /// is stamped no earlier: the controller may reorder queued writes).
    log_durable_at: Cycle,
    /// When the last entry left for the log (slot order is time order).
    log_written_at: Cycle,
    /// Per line: when the newest entry already written for it persisted.
    /// An entry can leave the buffer (at its due time) ahead of the time
    /// the engine then writes its line back; the data still wait for it.
    line_logged_at: FxHashMap<Addr, Cycle>,
    /// Latest acceptance of a data write-back so far: the log head moves
    /// past a transaction only once the write-backs that took its data
    /// home, issued before the pass, have persisted.
    data_durable_at: Cycle,
    cores: Vec<CoreState>,
    st: Stats,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Fwb::new(p, layout, &SAFE, true)?))
}
fn build_unsafe(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Fwb::new(p, layout, &UNSAFE, false)?))
}

impl Fwb {
    fn new(p: &Params, layout: &Layout, k: &Keys, strict: bool) -> Result<Self> {
        if p.u64("hybrid.dram_cache_bytes") > 0 {
            // A write-back into a volatile DRAM cache is not home: the
            // force-write-back could not bound the log.
            return Err(Error::input(
                "fwb needs hybrid.dram_cache_bytes = 0: its force write-back must reach NVM",
            ));
        }
        let mutant = k.mutant.map_or("none", |m| p.str(m));
        let capacity = p.usize(k.entries);
        Ok(Fwb {
            ring: Ring::new(layout, p.u64(k.log_bytes)),
            capacity,
            buffer: VecDeque::with_capacity(capacity),
            traversal_cycles: p.u64("cache.l1_latency_cycles")
                + p.u64("cache.l2_latency_cycles")
                + p.u64("cache.llc_latency_cycles"),
            strict: strict && mutant != "no-order",
            period: p.u64(k.period),
            truncate_early: mutant == "truncate-early",
            no_order: mutant == "no-order",
            head_first: mutant == "head-before-writebacks",
            head: 0,
            tail: 0,
            header_flip: 0,
            region_marked: false,
            passes: 0,
            last_perform: 0,
            log_durable_at: 0,
            log_written_at: 0,
            line_logged_at: FxHashMap::default(),
            data_durable_at: 0,
            // Room for two periods of commits without growing on the
            // commit path (it grows, amortised, beyond).
            cores: (0..layout.threads)
                .map(|_| CoreState {
                    committed: VecDeque::with_capacity(4096),
                    ..CoreState::default()
                })
                .collect(),
            st: Stats::default(),
        })
    }

    /// Append a record to the log at `now`; returns when it is persisted.
    fn append(&mut self, ctx: &mut MemCtx, r: &Record, purpose: Purpose, now: Cycle) -> Cycle {
        if self.tail - self.head >= self.ring.slots {
            let key = if self.strict {
                SAFE.log_bytes
            } else {
                UNSAFE.log_bytes
            };
            let specs = if self.strict { PARAMS } else { UNSAFE_PARAMS };
            let need = (self.tail - self.head + 1) * ENTRY_BYTES * 2;
            ctx.input_error(format!(
                "the fwb log is full: {} entries are not yet retired by the force write-back; {}",
                self.tail - self.head,
                raise_advice(specs, key, need)
            ));
            return now;
        }
        if !self.region_marked {
            self.region_marked = true;
            ctx.nvm
                .mark_log_region(self.ring.slot_addr(0), self.ring.slots * ENTRY_BYTES);
        }
        // The buffer is a FIFO written to the ring in slot order: an entry
        // drained at its due time ahead of `now` (a write-back that waited
        // for its line's last store) is not overtaken by the next slot
        // written at an earlier time, or a crash could keep a later slot
        // (a commit record) without the entries before it.
        let now = now.max(self.log_written_at);
        self.log_written_at = now;
        let seq = self.tail;
        self.tail += 1;
        let bytes = encode(&self.ring, seq, r);
        let t = ctx
            .nvm
            .write(self.ring.slot_addr(seq), &bytes, purpose, now);
        self.log_durable_at = self.log_durable_at.max(t);
        self.st.log_bits_before_encoding += if r.kind == TYPE_DATA {
            UR_ENTRY_BITS
        } else {
            COMMIT_BITS
        };
        if r.kind == TYPE_DATA {
            let at = self.line_logged_at.entry(line_of(r.addr)).or_insert(t);
            *at = (*at).max(t);
            self.st.entries_written += 1;
            let c = &mut self.cores[r.core as usize];
            c.open_first.get_or_insert(seq);
        }
        t
    }

    /// Write the oldest buffered entry to the log at `now`.
    fn pop_front(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let e = self.buffer.pop_front().expect("a buffered entry");
        let r = Record {
            kind: TYPE_DATA,
            core: e.core as u64,
            txid: e.txid,
            addr: e.addr,
            undo: e.undo,
            redo: e.redo,
        };
        self.append(ctx, &r, Purpose::Log, now)
    }

    /// Entries whose time in the buffer is up by `t` leave it, each at its
    /// due time (event-driven: done whenever the scheme is next called).
    fn drain_due(&mut self, ctx: &mut MemCtx, t: Cycle) {
        let n = self.capacity as Cycle;
        while let Some(e) = self.buffer.front() {
            let due = e.added + n;
            if due > t {
                break;
            }
            self.pop_front(ctx, due);
        }
    }

    /// Write every buffered entry up to and including the last one `pick`
    /// selects, at `now`; returns when the last is persisted.
    fn flush_through(
        &mut self,
        ctx: &mut MemCtx,
        now: Cycle,
        pick: impl Fn(&Entry) -> bool,
    ) -> Cycle {
        let mut t = now;
        if let Some(i) = self.buffer.iter().rposition(pick) {
            for _ in 0..=i {
                t = t.max(self.pop_front(ctx, now));
            }
        }
        t
    }

    /// Pass `pass` finished: retire what committed before the previous
    /// pass and persist the new head.
    fn truncate(&mut self, ctx: &mut MemCtx, pass: u64, now: Cycle) -> Cycle {
        let lag = if self.truncate_early { 1 } else { 2 };
        let mut head = self.tail;
        for c in &mut self.cores {
            while c.committed.front().is_some_and(|x| x.pass + lag <= pass) {
                c.committed.pop_front();
                self.st.retired_tx += 1;
            }
            if let Some(x) = c.committed.front() {
                head = head.min(x.first_seq);
            }
            if let Some(f) = c.open_first {
                head = head.min(f);
            }
        }
        if head <= self.head {
            return now;
        }
        self.head = head;
        self.st.head_advances += 1;
        let p = ctx.nvm.persist_log.path_start();
        let after = if self.head_first {
            now
        } else {
            now.max(self.data_durable_at)
        };
        let t = persist_head(
            ctx,
            &self.ring,
            &mut self.header_flip,
            &mut self.log_durable_at,
            head,
            after,
        );
        ctx.nvm
            .persist_log
            .path_done(crate::schemes::path::LOG_HEAD, p);
        t
    }
}

impl Scheme for Fwb {
    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.txid = c.txid.wrapping_add(1);
        c.open_first = None;
        c.logged = false;
        now
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.drain_due(ctx, now);
        if !self.cores[core].logged {
            return now;
        }
        // No force: only the log buffer up to this transaction's last entry
        // (FIFO), then the commit record.
        let t = self.flush_through(ctx, now, |e| e.core == core);
        let c = &self.cores[core];
        let r = Record {
            kind: TYPE_COMMIT,
            core: core as u64,
            txid: c.txid,
            addr: 0,
            undo: 0,
            redo: 0,
        };
        let t = self.append(ctx, &r, Purpose::Metadata, t);
        self.st.commit_records += 1;
        self.st.commit_stall_cycles += t - now;
        let pass = self.passes;
        let c = &mut self.cores[core];
        if let Some(first_seq) = c.open_first.take() {
            c.committed.push_back(Committed { first_seq, pass });
        }
        c.logged = false;
        t
    }

    fn store(&mut self, ctx: &mut MemCtx, ev: Store, _ext: &mut LineExt) -> Cycle {
        let Store {
            core,
            addr,
            old,
            new,
            in_tx,
            now,
        } = ev;
        if !in_tx {
            return now;
        }
        let perform = now.max(self.last_perform);
        self.last_perform = perform;
        self.drain_due(ctx, perform);
        let w = addr & !7;
        let txid = self.cores[core].txid;
        self.cores[core].logged = true;
        if let Some(e) = self
            .buffer
            .iter_mut()
            .rev()
            .find(|e| e.addr == w && e.core == core && e.txid == txid)
        {
            e.redo = new;
            e.last_store = perform;
            self.st.coalesced += 1;
            return now;
        }
        let mut done = now;
        if self.buffer.len() >= self.capacity {
            // Full: the oldest entry leaves early to make room (the store
            // waits only if the controller's write queue is full).
            self.st.early_evictions += 1;
            done = now.max(self.pop_front(ctx, perform));
        }
        self.buffer.push_back(Entry {
            core,
            txid,
            addr: w,
            undo: old,
            redo: new,
            added: perform,
            last_store: perform,
        });
        self.st.entries += 1;
        done
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            now,
            ..
        } = ev;
        // The data cannot reach the controller before it traversed the
        // hierarchy from the store that last wrote it.
        let mut t = now;
        if !self.no_order {
            if let Some(s) = self
                .buffer
                .iter()
                .filter(|e| line_of(e.addr) == line_addr)
                .map(|e| e.last_store)
                .max()
            {
                t = t.max(s + self.traversal_cycles);
            }
        }
        self.drain_due(ctx, t);
        if self.buffer.iter().any(|e| line_of(e.addr) == line_addr) {
            if self.strict {
                // Timing alone would let the data overtake its undo entry.
                self.st.order_waits += 1;
                t = self.flush_through(ctx, t, |e| line_of(e.addr) == line_addr);
            } else {
                // fwb-unsafe: the data reach NVM before an entry of theirs.
                self.st.data_before_entry += 1;
            }
        }
        // Entries of the line that left the buffer earlier (at a due time
        // ahead of this write-back's) must have persisted too.
        if let Some(at) = self.line_logged_at.remove(&line_addr) {
            if self.strict && !self.no_order {
                t = t.max(at);
            }
        }
        if !ctx.nvm.is_adr() && !self.no_order {
            t = t.max(self.log_durable_at);
        }
        let done = ctx.nvm.write(line_addr, data, Purpose::WriteBack, t);
        self.data_durable_at = self.data_durable_at.max(done);
        done
    }

    fn force_write_back_cycles(&self) -> Option<Cycle> {
        Some(self.period)
    }

    fn force_write_back_done(&mut self, ctx: &mut MemCtx, pass: u64, now: Cycle) -> Cycle {
        // `now` is the end of the pass's walk, ahead of the cores: buffered
        // entries stay (they leave at their own due times).
        self.passes = pass;
        self.truncate(ctx, pass, now)
    }

    fn background_kind(&self) -> &'static str {
        crate::schemes::FWB_KIND
    }

    fn recovery_paths(&self) -> &'static [&'static str] {
        &[crate::schemes::FWB_KIND, crate::schemes::path::LOG_HEAD]
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        // Every transaction committed, so its entries left at commit.
        debug_assert!(self.buffer.is_empty());
        self.flush_through(ctx, now, |_| true)
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.st;
        vec![
            ("log_entries_created", s.entries as f64),
            ("log_entries_coalesced", s.coalesced as f64),
            ("log_entries_written", s.entries_written as f64),
            ("log_buffer_early_evictions", s.early_evictions as f64),
            ("commit_records", s.commit_records as f64),
            (
                "log_bits_before_encoding",
                s.log_bits_before_encoding as f64,
            ),
            ("commit_stall_cycles", s.commit_stall_cycles as f64),
            ("order_waits", s.order_waits as f64),
            ("data_before_entry", s.data_before_entry as f64),
            ("retired_tx", s.retired_tx as f64),
            ("log_head_advances", s.head_advances as f64),
            ("log_live_entries", (self.tail - self.head) as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.st = Stats::default();
    }
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    recover_with(img, p, layout, &SAFE)
}
fn recover_unsafe(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    recover_with(img, p, layout, &UNSAFE)
}

fn recover_with(
    img: &mut dyn MemWrite,
    p: &Params,
    layout: &Layout,
    k: &Keys,
) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(scan_with(p, layout, k), img, p)
}

pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    scan_with(p, layout, &SAFE)
}

pub(crate) fn new_scan_unsafe(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    scan_with(p, layout, &UNSAFE)
}

fn scan_with(p: &Params, layout: &Layout, k: &Keys) -> Box<dyn ResumableScan> {
    let mut cur = RingCursor::new(Ring::new(layout, p.u64(k.log_bytes)));
    cur.skip_head = k
        .mutant
        .is_some_and(|m| p.str(m) == "scan-skips-head-entry");
    Box::new(FwbScan {
        cur,
        pending: Vec::new(),
        committed: Default::default(),
        redone: 0,
    })
}

/// Recovery from the log's bytes as a resumable scan (recovery/scan.rs, one
/// cursor: the ring): from the head, each transaction's data entries are
/// redone when its commit entry is read (in commit order; entries of a
/// committed transaction read after its commit entry, immediately), and the
/// finish undoes the entries of transactions never committed in reverse
/// log order, then moves the head to the end. Redo in commit order equals
/// the former log order on every run (threads write disjoint words, and a
/// thread's transactions commit in log order) and lets the scan emit its
/// home writes as it goes.
struct FwbScan {
    cur: RingCursor,
    /// Data entries of transactions without a commit entry, in log order.
    pending: Vec<Record>,
    committed: rustc_hash::FxHashSet<(u64, u32)>,
    redone: u64,
}

impl ResumableScan for FwbScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        while let Some(r) = self.cur.next(io) {
            let key = (r.core, r.txid);
            if r.kind == TYPE_COMMIT {
                if self.committed.insert(key) {
                    let mut i = 0;
                    while i < self.pending.len() {
                        if (self.pending[i].core, self.pending[i].txid) == key {
                            let d = self.pending.remove(i);
                            io.home(d.addr, &d.redo.to_le_bytes());
                            self.redone += 1;
                        } else {
                            i += 1;
                        }
                    }
                }
            } else if r.kind == TYPE_DATA {
                if self.committed.contains(&key) {
                    io.home(r.addr, &r.redo.to_le_bytes());
                    self.redone += 1;
                } else {
                    self.pending.push(r);
                }
            }
            self.cur.advance(io);
        }
        Ok(())
    }

    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        for r in self.pending.iter().rev() {
            out(r.addr, &r.undo.to_le_bytes());
        }
        self.cur.head_to_end(out);
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let undone = self.pending.len() as u64;
        self.cur.report(
            p,
            self.redone + undone,
            &[
                ("words_redone", self.redone as f64),
                ("words_undone", undone as f64),
                ("committed_tx", self.committed.len() as f64),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::kit::hw_log::decode;

    fn ring() -> Ring {
        Ring {
            base: 1 << 20,
            slots: 4,
        }
    }

    #[test]
    fn records_round_trip_and_reject_stale_or_torn_bytes() {
        let ring = ring();
        let r = Record {
            kind: TYPE_DATA,
            core: 3,
            txid: 77,
            addr: 0x1234_5678,
            undo: 5,
            redo: 6,
        };
        let b = encode(&ring, 9, &r);
        assert_eq!(decode(&ring, 9, &b), Some(r));
        // The same slot one pass later (other torn bit) and two passes later
        // (same torn bit, other sequence number) do not validate.
        assert_eq!(decode(&ring, 13, &b), None);
        assert_eq!(decode(&ring, 17, &b), None);
        // Any torn word (old content zero) breaks the checksum.
        for w in 0..4 {
            let mut t = b;
            t[w * 8..w * 8 + 8].fill(0);
            assert_eq!(decode(&ring, 9, &t), None, "word {w}");
        }
        // The zeroed region never validates.
        assert_eq!(decode(&ring, 0, &[0u8; 32]), None);
    }
}
