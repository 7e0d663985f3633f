//! MorLog's morphable logging (Wei et al., "MorLog: Morphable Hardware
//! Logging for Atomic Persistence in Non-Volatile Main Memory", ISCA 2020,
//! §III) — `morlog` — and its delay-persistence commit (§III-C) —
//! `morlog-dp`. The log format, ring, headers and truncation are FWB's
//! (`kit/hw_log.rs`), shared.
//!
//! - Eager undo, lazy redo (§III-B). The first store of a transaction to a
//!   word (L1 state Clean) creates an undo+redo entry (undo = the word in
//!   the L1, redo = the store) in a 16-entry undo+redo FIFO that writes it
//!   to the log `N` cycles later, `N` = L1 + L2 + LLC latency − 1, below
//!   the minimum traversal of the hierarchy, so the undo precedes its data
//!   (checked, as in fwb: `order_waits`). Later stores by the same
//!   transaction coalesce while the entry is buffered (Dirty); once it is
//!   persisted (URLog) the next store keeps its redo in place in the L1
//!   line (ULog). A redo entry (redo word only) is created for each ULog
//!   word when the line leaves the L1 (`l1_evict`), is updated by a newer
//!   transaction, or (morlog) at commit, into a 32-entry redo FIFO that
//!   writes lazily (when full, or at commit). A buffered redo entry is
//!   discarded when its transaction updates the line again: the word is
//!   back in the L1 in ULog state (the paper's rule).
//! - Deviation (docs/MODEL.md "MorLog"): the paper also discards a buffered
//!   redo entry when the LLC writes its line back. That loses the newest
//!   redo of a word whose older redo is in the log: after commit, recovery
//!   redoes the older value over the newer home data. `morlog` writes such
//!   entries; the paper's rule is the test-only mutant
//!   `discard-on-writeback`, which the crash oracle rejects.
//! - L1 extension (Fig. 7) in [`LineExt`]: `tid`, `txid`, `tx` (owned by a
//!   transaction) and a 2-bit state per word (`word_mask` = low bit,
//!   `word_mask2` = high bit). The L1-resident redo values of ULog words
//!   are the line's bytes; the scheme keeps a copy per line
//!   ([`Shadow`]) because the store hook does not pass the line.
//! - Commit. `morlog`: waits for both buffers and the L1-resident redo data
//!   of the transaction (its ULog words become redo entries), then writes a
//!   commit record. `morlog-dp`: instant; the commit record (with the ulog
//!   counter) enters the undo+redo FIFO behind the transaction's entries.
//! - Log management (§III-F): the engine's force-write-back scan every
//!   `period_cycles`; the head moves past transactions that committed
//!   before the previous pass (as fwb's).
//! - Recovery (§III-E) from the log's bytes: committed transactions (commit
//!   record) are redone in commit order, each in log order; the others
//!   undone in reverse log order. `morlog-dp`: a committed transaction is
//!   persisted only if its counter equals its redo entries in the log, and
//!   everything after the first non-persisted one in commit order is
//!   undone.

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::hw_log::{
    encode, persist_head, Record, Ring, RingCursor, COMMIT_BITS, DP_COUNTER_BITS, ENTRY_BYTES,
    HEADER_BYTES, REDO_ENTRY_BITS, TYPE_COMMIT, TYPE_DATA, TYPE_REDO, UR_ENTRY_BITS,
};
use crate::schemes::logging::txtable::TxTable;
use crate::schemes::{
    raise_advice, Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo,
    SchemeStats, Store, Writeback,
};
use crate::types::{line_of, Addr, CoreId, Cycle, LineData, Purpose};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

const UR_SOURCE: &str = "MorLog §III-D, Table I: a 16-entry undo+redo buffer";
const REDO_SOURCE: &str = "MorLog §III-D, Table I: a 32-entry redo buffer";
const PERIOD_SOURCE: &str = "MorLog §III-F / §VI-A: force-write-back every three million cycles (FWB, Ogleari et al. HPCA 2018)";
const MGMT_SOURCE: &str = "MorLog §III-F \"Log management\": two options, force-write-back [43] (evaluated, §VI-A) or a variation of the transaction table [22]";
const TABLE_SOURCE: &str = "modelling choice, docs/MODEL.md \"MorLog transaction table\" (MorLog §III-F gives no size; 64 = 8 per thread of the paper's eight)";
const LOG_SOURCE: &str = "modelling choice, docs/MODEL.md \"MorLog\" (MorLog §III-A: a large-enough log region prevents overflow); as fwb.log_bytes";

/// The parameter list of one variant, every key under its scheme's prefix.
macro_rules! params {
    ($name:ident, $p:literal, $mutants:expr, $mutdoc:literal) => {
        pub static $name: &[ParamSpec] = &[
            p!(concat!($p, ".undo_redo_buffer_entries"), int 16, "entries", Check::Range(1.0, 4096.0),
                UR_SOURCE,
                "volatile undo+redo FIFO; an entry is written to the log N = L1+L2+LLC latency - 1 cycles after its creation, or earlier when the FIFO is full"),
            p!(concat!($p, ".redo_buffer_entries"), int 32, "entries", Check::Range(1.0, 4096.0),
                REDO_SOURCE,
                "volatile redo FIFO, written lazily (when full, or at commit for morlog)"),
            p!(concat!($p, ".period_cycles"), int 3_000_000, "cycles", Check::Range(1000.0, 1e12),
                PERIOD_SOURCE,
                "period of the force-write-back scan that bounds the log (truncation after two passes)"),
            p!(concat!($p, ".log_management"), str "force-write-back", &["force-write-back", "tx-table"],
                MGMT_SOURCE,
                "how log space is reclaimed (MorLog §III-F): force-write-back = the periodic cache scan, the head moves past transactions committed before the last two passes; tx-table = a transaction table whose per-transaction counter of cache lines holding its data releases the log when it reaches 0"),
            p!(concat!($p, ".tx_table_entries"), int 64, "entries", Check::Range(1.0, 65536.0),
                TABLE_SOURCE,
                "transaction-table entries (log_management = tx-table); at least the thread count. When full, a beginning transaction waits while the lines of the oldest committed entry are written back"),
            p!(concat!($p, ".log_bytes"), int 128 << 20, "bytes", Check::PowerOfTwo(1 << 12, 1 << 36),
                LOG_SOURCE,
                "centralized circular log in NVM (32 B per entry or commit record)"),
            p!(concat!($p, ".mutant"), str "none", $mutants,
                crate::schemes::MUTANT_SOURCE,
                $mutdoc),
        ];
    };
}

params!(
    PARAMS,
    "morlog",
    &["none", "discard-on-writeback", "no-order", "release-early", "release-on-l1-evict"],
    "test-only planted bug (tests/morlog.rs; refused by the CLI): discard-on-writeback = the paper's literal rule, a buffered redo entry is dropped when its line is written back; no-order = a data write-back does not wait for its line's buffered undo+redo entries; release-early = tx-table: a line's write-back releases its transaction before the data are persisted; release-on-l1-evict = tx-table: a line is released when it leaves the L1 (a counter of L1 lines only, where the paper's TID/TxID extension lives) though it is still dirty below"
);
params!(
    DP_PARAMS,
    "morlog-dp",
    &["none", "ignore-counter", "no-order", "release-early", "release-on-l1-evict"],
    "test-only planted bug (tests/morlog.rs; refused by the CLI): ignore-counter = recovery treats every committed transaction as persisted; no-order, release-early, release-on-l1-evict = as morlog.mutant"
);

pub static INFO: SchemeInfo = SchemeInfo {
    name: "morlog",
    description: "MorLog morphable undo+redo logging: eager undo (16-entry FIFO), lazy redo (L1 + 32-entry FIFO), commit waits for the redo data",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
};

pub static DP_INFO: SchemeInfo = SchemeInfo {
    name: "morlog-dp",
    description: "MorLog with delay-persistence commit: instant commit, ulog counters in commit records, durability delayed",
    durability: Durability::Delayed,
    params: DP_PARAMS,
    reserved_bytes: reserved_bytes_dp,
    build: build_dp,
    recover: recover_dp,
    recovery: RecoveryForm::Scan(new_scan_dp),
    contexts: None,
};

/// The parameter keys of one of the two variants.
struct Keys {
    ur: &'static str,
    redo: &'static str,
    period: &'static str,
    mgmt: &'static str,
    table: &'static str,
    log_bytes: &'static str,
    mutant: &'static str,
    specs: &'static [ParamSpec],
}

const K: Keys = Keys {
    ur: "morlog.undo_redo_buffer_entries",
    redo: "morlog.redo_buffer_entries",
    period: "morlog.period_cycles",
    mgmt: "morlog.log_management",
    table: "morlog.tx_table_entries",
    log_bytes: "morlog.log_bytes",
    mutant: "morlog.mutant",
    specs: PARAMS,
};
const DP: Keys = Keys {
    ur: "morlog-dp.undo_redo_buffer_entries",
    redo: "morlog-dp.redo_buffer_entries",
    period: "morlog-dp.period_cycles",
    mgmt: "morlog-dp.log_management",
    table: "morlog-dp.tx_table_entries",
    log_bytes: "morlog-dp.log_bytes",
    mutant: "morlog-dp.mutant",
    specs: DP_PARAMS,
};

fn reserved_bytes(p: &Params) -> u64 {
    p.u64(K.log_bytes) + HEADER_BYTES
}
fn reserved_bytes_dp(p: &Params) -> u64 {
    p.u64(DP.log_bytes) + HEADER_BYTES
}

// ---------------------------------------------------------------------------
// Fig. 8: the L1 word states.

/// The 2-bit log state of one word of an L1 line (MorLog Fig. 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordState {
    /// Not updated by the line's transaction.
    Clean,
    /// Updated; its undo+redo entry is still in the undo+redo buffer.
    Dirty,
    /// Its undo+redo entry is persisted (undo and newest redo in the log).
    URLog,
    /// Oldest undo persisted, newest redo only in the L1 line.
    ULog,
}

/// Events that move a word between states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A store by the line's transaction (the one that made it Dirty).
    Store,
    /// The word's undo+redo entry left the buffer for the log.
    UrPersisted,
    /// The line leaves the L1, or a newer transaction updates it, or
    /// (morlog) the transaction commits: the L1 state is dropped.
    Leave,
    /// A buffered redo entry of the word was discarded because the
    /// transaction updates the line again: its redo is back in the L1.
    RedoDiscarded,
}

/// What a transition asks of the buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    None,
    /// Create an undo+redo entry.
    CreateUr,
    /// Coalesce the store into the buffered undo+redo entry.
    Coalesce,
    /// Keep the redo in place in the L1 line.
    KeepInL1,
    /// Create a redo entry from the L1 line.
    CreateRedo,
}

/// Fig. 8's transition function.
pub fn transition(s: WordState, ev: Event) -> (WordState, Action) {
    use Action as A;
    use WordState::*;
    match (s, ev) {
        (Clean, Event::Store) => (Dirty, A::CreateUr),
        (Dirty, Event::Store) => (Dirty, A::Coalesce),
        (URLog, Event::Store) | (ULog, Event::Store) => (ULog, A::KeepInL1),
        (Dirty, Event::UrPersisted) => (URLog, A::None),
        (s, Event::UrPersisted) => (s, A::None),
        (ULog, Event::Leave) => (Clean, A::CreateRedo),
        (_, Event::Leave) => (Clean, A::None),
        (Clean, Event::RedoDiscarded) => (ULog, A::None),
        (s, Event::RedoDiscarded) => (s, A::None),
    }
}

pub fn word_state(ext: &LineExt, w: usize) -> WordState {
    match ((ext.word_mask2 >> w) & 1, (ext.word_mask >> w) & 1) {
        (0, 0) => WordState::Clean,
        (0, _) => WordState::Dirty,
        (_, 0) => WordState::URLog,
        _ => WordState::ULog,
    }
}

pub fn set_word_state(ext: &mut LineExt, w: usize, s: WordState) {
    let (hi, lo) = match s {
        WordState::Clean => (0, 0),
        WordState::Dirty => (0, 1),
        WordState::URLog => (1, 0),
        WordState::ULog => (1, 1),
    };
    let m = !(1u8 << w);
    ext.word_mask = (ext.word_mask & m) | (lo << w);
    ext.word_mask2 = (ext.word_mask2 & m) | (hi << w);
}

// ---------------------------------------------------------------------------

/// A buffered undo+redo entry, or (morlog-dp) a commit record queued behind
/// its transaction's entries.
#[derive(Clone, Copy, Debug)]
struct UrEntry {
    kind: u64,
    core: CoreId,
    txid: u32,
    addr: Addr,
    undo: u64,
    /// Redo word; the ulog counter in a commit record.
    redo: u64,
    added: Cycle,
    last_store: Cycle,
}

/// A buffered redo entry.
#[derive(Clone, Copy, Debug)]
struct RedoEntry {
    core: CoreId,
    txid: u32,
    addr: Addr,
    redo: u64,
}

/// The L1-resident redo data of a line's ULog words (the line's bytes,
/// which the store hook does not pass).
#[derive(Clone, Copy, Debug)]
struct Shadow {
    txid: u32,
    mask: u8,
    vals: [u64; 8],
}

#[derive(Clone, Copy, Debug)]
struct Committed {
    txid: u32,
    first_seq: u64,
    pass: u64,
}

/// A committed morlog-dp transaction not yet known persisted.
#[derive(Clone, Copy, Debug)]
struct Pending {
    txid: u32,
    /// Its redo entries still to be written once its commit record is
    /// (`UNKNOWN` until then: the record's counter is taken when it leaves
    /// the undo+redo buffer).
    remaining: u64,
    /// The core's transactions committed up to and including it.
    count: u64,
}

#[derive(Default)]
struct CoreState {
    txid: u32,
    in_tx: bool,
    open_first: Option<u64>,
    logged: bool,
    committed: VecDeque<Committed>,
    /// Transactions committed (with or without stores).
    tx_count: u64,
    /// Lines with ULog words, by line address.
    shadow: FxHashMap<Addr, Shadow>,
    pending: VecDeque<Pending>,
    /// Transaction-table slot of the running (or last) transaction.
    slot: u32,
}

#[derive(Default, Clone, Copy)]
struct Stats {
    ur_created: u64,
    ur_coalesced: u64,
    redo_created: u64,
    redo_coalesced: u64,
    redo_discarded: u64,
    redo_on_l1_evict: u64,
    redo_on_newer_tx: u64,
    redo_at_commit: u64,
    silent_dropped: u64,
    ur_written: u64,
    redo_written: u64,
    ur_early: u64,
    redo_early: u64,
    commit_records: u64,
    log_bits: u64,
    order_waits: u64,
    kept_in_l1: u64,
    retired_tx: u64,
    head_advances: u64,
    commit_stall_cycles: u64,
    redo_kept_on_writeback: u64,
    entries_reclaimed: u64,
    head_persists: u64,
    redo_on_table_full: u64,
}

pub struct MorLog {
    dp: bool,
    ring: Ring,
    ur_cap: usize,
    redo_cap: usize,
    ur: VecDeque<UrEntry>,
    redo: VecDeque<RedoEntry>,
    /// N: cycles an undo+redo entry stays buffered.
    delay: Cycle,
    traversal_cycles: Cycle,
    period: Cycle,
    discard_on_writeback: bool,
    no_order: bool,
    head: u64,
    tail: u64,
    header_flip: u64,
    /// The media knows the log region (log bits are counted there).
    region_marked: bool,
    /// The head as last written to the header lines (recovery's start).
    persisted_head: u64,
    passes: u64,
    /// `log_management = tx-table` (§III-F, second option).
    table: Option<TxTable>,
    release_early: bool,
    release_on_l1_evict: bool,
    last_perform: Cycle,
    log_durable_at: Cycle,
    cores: Vec<CoreState>,
    /// morlog-dp: committed transactions (core) in commit order, not yet
    /// reported durable.
    order: VecDeque<CoreId>,
    /// The counter of the commit record being written.
    counter_at_record: u64,
    st: Stats,
}

/// A pending transaction's remaining count before its record is written.
const UNKNOWN: u64 = u64::MAX;

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(MorLog::new(p, layout, false)?))
}
fn build_dp(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(MorLog::new(p, layout, true)?))
}

/// N = the minimum traversal of the hierarchy (L1 + L2 + LLC hit
/// latencies) minus one: the largest delay that keeps every undo ahead of
/// its data (MorLog §II-B, §III-B).
pub fn ur_delay_cycles(p: &Params) -> Cycle {
    (p.u64("cache.l1_latency_cycles")
        + p.u64("cache.l2_latency_cycles")
        + p.u64("cache.llc_latency_cycles"))
    .saturating_sub(1)
    .max(1)
}

impl MorLog {
    fn new(p: &Params, layout: &Layout, dp: bool) -> Result<Self> {
        let k = if dp { &DP } else { &K };
        if p.u64("hybrid.dram_cache_bytes") > 0 {
            return Err(Error::input(
                "morlog needs hybrid.dram_cache_bytes = 0: its force write-back must reach NVM",
            ));
        }
        if layout.threads > 256 {
            return Err(Error::input(
                "morlog's entries carry an 8-bit TID: at most 256 threads",
            ));
        }
        let mutant = p.str(k.mutant);
        let (ur_cap, redo_cap) = (p.usize(k.ur), p.usize(k.redo));
        let table = if p.str(k.mgmt) == "tx-table" {
            let n = p.usize(k.table);
            if n < layout.threads {
                return Err(Error::input(format!(
                    "{} = {n} is below the {} threads: every running transaction holds an entry; set it to at least {}",
                    k.table, layout.threads, layout.threads
                )));
            }
            let llc_lines = (p.u64("cache.llc_size_bytes") / 64) as usize;
            Some(TxTable::new(n, llc_lines))
        } else {
            None
        };
        let delay = ur_delay_cycles(p);
        Ok(MorLog {
            dp,
            ring: Ring::new(layout, p.u64(k.log_bytes)),
            ur_cap,
            redo_cap,
            ur: VecDeque::with_capacity(ur_cap + 1),
            redo: VecDeque::with_capacity(redo_cap + 1),
            delay,
            traversal_cycles: delay + 1,
            period: p.u64(k.period),
            discard_on_writeback: mutant == "discard-on-writeback",
            no_order: mutant == "no-order",
            head: 0,
            tail: 0,
            header_flip: 0,
            region_marked: false,
            persisted_head: 0,
            passes: 0,
            table,
            release_early: mutant == "release-early",
            release_on_l1_evict: mutant == "release-on-l1-evict",
            last_perform: 0,
            log_durable_at: 0,
            cores: (0..layout.threads)
                .map(|_| {
                    let mut shadow = FxHashMap::default();
                    shadow.reserve(1024);
                    CoreState {
                        committed: VecDeque::with_capacity(4096),
                        pending: VecDeque::with_capacity(if dp { 1024 } else { 0 }),
                        shadow,
                        ..CoreState::default()
                    }
                })
                .collect(),
            order: VecDeque::with_capacity(if dp { 4096 } else { 0 }),
            counter_at_record: 0,
            st: Stats::default(),
        })
    }

    fn keys(&self) -> &'static Keys {
        if self.dp {
            &DP
        } else {
            &K
        }
    }

    /// Append a record to the log at `now`; returns when it is persisted.
    fn append(&mut self, ctx: &mut MemCtx, r: &Record, now: Cycle) -> Cycle {
        if self.tail - self.persisted_head >= self.ring.slots && self.head > self.persisted_head {
            // tx-table: the head register moved; recovery must see it before
            // the tail reuses the slots behind it.
            self.write_head(ctx, now);
        }
        if self.tail - self.persisted_head >= self.ring.slots {
            let k = self.keys();
            let need = (self.tail - self.head + 1) * ENTRY_BYTES * 2;
            ctx.input_error(format!(
                "the {} log is full: {} entries are not yet retired by the {}; {}",
                if self.dp { "morlog-dp" } else { "morlog" },
                self.tail - self.head,
                if self.table.is_some() {
                    "transaction table (their lines are still dirty in the caches)"
                } else {
                    "force write-back"
                },
                raise_advice(k.specs, k.log_bytes, need)
            ));
            return now;
        }
        if !self.region_marked {
            self.region_marked = true;
            ctx.nvm
                .mark_log_region(self.ring.slot_addr(0), self.ring.slots * ENTRY_BYTES);
        }
        let seq = self.tail;
        self.tail += 1;
        let bytes = encode(&self.ring, seq, r);
        let purpose = if r.kind == TYPE_COMMIT {
            Purpose::Metadata
        } else {
            Purpose::Log
        };
        let t = ctx
            .nvm
            .write(self.ring.slot_addr(seq), &bytes, purpose, now);
        self.log_durable_at = self.log_durable_at.max(t);
        let core = r.core as usize;
        let c = &mut self.cores[core];
        let running = c.in_tx && c.txid == r.txid;
        if running && r.kind != TYPE_COMMIT {
            c.open_first.get_or_insert(seq);
        }
        match r.kind {
            TYPE_DATA => {
                self.st.ur_written += 1;
                self.st.log_bits += UR_ENTRY_BITS;
            }
            TYPE_REDO => {
                self.st.redo_written += 1;
                self.st.log_bits += REDO_ENTRY_BITS;
                if !running && self.dp {
                    self.persisted_one(ctx, core, r.txid, false, t);
                }
            }
            _ => {
                self.st.commit_records += 1;
                self.st.log_bits += COMMIT_BITS + if self.dp { DP_COUNTER_BITS } else { 0 };
                if self.dp {
                    self.persisted_one(ctx, core, r.txid, true, t);
                }
            }
        }
        t
    }

    /// The ulog counter of (`core`, `txid`) as its commit record leaves
    /// the undo+redo buffer: its redo entries not yet written (buffered, or
    /// to come from its ULog words in the L1s). Recovery counts its redo
    /// entries after the record.
    fn ulog_counter(&self, core: CoreId, txid: u32) -> u64 {
        let buffered = self
            .redo
            .iter()
            .filter(|e| e.core == core && e.txid == txid)
            .count() as u64;
        let in_l1: u64 = self.cores[core]
            .shadow
            .values()
            .filter(|s| s.txid == txid)
            .map(|s| u64::from(s.mask.count_ones()))
            .sum();
        buffered + in_l1
    }

    /// morlog-dp: the commit record (`record`, carrying `counter`) or one
    /// more redo entry of committed transaction (`core`, `txid`) is in the
    /// log; report the transactions now persisted, in commit order.
    fn persisted_one(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        txid: u32,
        record: bool,
        now: Cycle,
    ) {
        let c = &mut self.cores[core];
        let Some(front) = c.pending.front() else {
            return;
        };
        let i = txid.wrapping_sub(front.txid) as usize;
        if let Some(p) = c.pending.get_mut(i) {
            debug_assert_eq!(p.txid, txid);
            if record {
                p.remaining = self.counter_at_record;
            } else if p.remaining != UNKNOWN {
                p.remaining -= 1;
            }
        }
        self.report(ctx, now);
    }

    fn report(&mut self, ctx: &mut MemCtx, now: Cycle) {
        let mut any = false;
        while let Some(&core) = self.order.front() {
            let c = &mut self.cores[core];
            match c.pending.front() {
                Some(p) if p.remaining == 0 => {
                    ctx.nvm.persist_log.report_durable(core, p.count);
                    c.pending.pop_front();
                    self.order.pop_front();
                    any = true;
                }
                _ => break,
            }
        }
        if any && self.table.is_some() {
            // Persisted transactions whose lines are home may now retire.
            self.sweep(ctx, now);
        }
    }

    /// Persist the head register in the other header line, after every
    /// log write so far (`hw_log::persist_head`).
    fn write_head(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        self.st.head_persists += 1;
        self.persisted_head = self.head;
        persist_head(
            ctx,
            &self.ring,
            &mut self.header_flip,
            &mut self.log_durable_at,
            self.head,
            now,
        )
    }

    /// tx-table: free the entries that committed, are persisted (morlog-dp)
    /// and whose counter is 0; move the head past the freed ones in order
    /// (to the oldest live entry's first log entry, or the tail). The head
    /// is written to NVM lazily, once the log behind the persisted head is
    /// three quarters full (recovery from an older head re-applies retired
    /// transactions in commit order: their data are home, so nothing
    /// changes), which keeps the header writes rare.
    fn sweep(&mut self, ctx: &mut MemCtx, now: Cycle) {
        let Some(tb) = self.table.as_mut() else {
            return;
        };
        for i in 0..tb.entries.len() {
            let e = tb.entries[i];
            if !(e.live && e.committed && e.counter == 0) {
                continue;
            }
            if self.dp {
                // Not yet persisted (its redo entries still to come): kept,
                // so the head never cuts a transaction recovery may undo.
                let pending = self.cores[e.core].pending.front().map(|p| p.txid);
                if pending.is_some_and(|t| (e.txid.wrapping_sub(t) as i32) >= 0) {
                    continue;
                }
            }
            tb.free(i);
            self.st.retired_tx += 1;
        }
        let head = tb.head_bound().unwrap_or(self.tail);
        if head > self.head {
            self.st.entries_reclaimed += head - self.head;
            self.st.head_advances += 1;
            self.head = head;
        }
        if self.head > self.persisted_head
            && (self.tail - self.persisted_head) * 4 >= self.ring.slots * 3
        {
            self.write_head(ctx, now.max(self.log_durable_at));
        }
    }

    /// tx-table full at a TxBegin: make the oldest committed entry
    /// deletable. morlog-dp first persists every committed transaction
    /// (its L1-resident redo data become redo entries; both buffers are
    /// written), then the lines anchored to the victim are handed to the
    /// engine, which writes them back before the transaction starts.
    fn make_room(&mut self, ctx: &mut MemCtx, now: Cycle) {
        if let Some(tb) = self.table.as_mut() {
            tb.full_events += 1;
        }
        if self.dp {
            for core in 0..self.cores.len() {
                let mut shadow = std::mem::take(&mut self.cores[core].shadow);
                let running = self.cores[core].in_tx.then_some(self.cores[core].txid);
                for (&line, &sh) in shadow.iter() {
                    if running != Some(sh.txid) {
                        let (n, _) = self.shadow_to_redo(ctx, core, line, sh, now);
                        self.st.redo_on_table_full += n;
                    }
                }
                shadow.retain(|_, sh| running == Some(sh.txid));
                self.cores[core].shadow = shadow;
            }
            self.flush_ur_through(ctx, now, |e| e.kind == TYPE_COMMIT);
            self.flush_redo_through(ctx, now, |_| true);
        }
        self.sweep(ctx, now);
        let tb = self.table.as_mut().expect("tx-table");
        if tb.is_full() {
            let victim = tb
                .oldest_committed()
                .expect("a committed entry: the table holds at least one per thread");
            tb.lines_of(victim, &mut ctx.write_back_request);
        }
    }

    /// tx-table: `line` was written back, its data persisted at `t`.
    fn release_line(&mut self, ctx: &mut MemCtx, line: Addr, t: Cycle) {
        if let Some(tb) = self.table.as_mut() {
            if tb.release(line) {
                self.sweep(ctx, t);
            }
        }
    }

    /// tx-table: the transaction of `core` committed (its commit record
    /// is in the log, or queued behind its entries for morlog-dp).
    fn table_commit(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) {
        let slot = self.cores[core].slot as usize;
        if let Some(tb) = self.table.as_mut() {
            tb.entries[slot].committed = true;
            self.sweep(ctx, now);
        }
    }

    fn pop_ur(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut e = self.ur.pop_front().expect("a buffered entry");
        if e.kind == TYPE_COMMIT {
            e.redo = self.ulog_counter(e.core, e.txid);
            self.counter_at_record = e.redo;
        }
        let r = Record {
            kind: e.kind,
            core: e.core as u64,
            txid: e.txid,
            addr: e.addr,
            undo: e.undo,
            redo: e.redo,
        };
        self.append(ctx, &r, now)
    }

    fn pop_redo(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let e = self.redo.pop_front().expect("a buffered redo entry");
        let r = Record {
            kind: TYPE_REDO,
            core: e.core as u64,
            txid: e.txid,
            addr: e.addr,
            undo: 0,
            redo: e.redo,
        };
        self.append(ctx, &r, now)
    }

    /// Undo+redo entries whose delay is up by `t` leave, each at its due
    /// time (event-driven).
    fn drain_due(&mut self, ctx: &mut MemCtx, t: Cycle) {
        while let Some(e) = self.ur.front() {
            let due = e.added + self.delay;
            if due > t {
                break;
            }
            self.pop_ur(ctx, due);
        }
    }

    fn flush_ur_through(
        &mut self,
        ctx: &mut MemCtx,
        now: Cycle,
        pick: impl Fn(&UrEntry) -> bool,
    ) -> Cycle {
        let mut t = now;
        if let Some(i) = self.ur.iter().rposition(pick) {
            for _ in 0..=i {
                t = t.max(self.pop_ur(ctx, now));
            }
        }
        t
    }

    fn flush_redo_through(
        &mut self,
        ctx: &mut MemCtx,
        now: Cycle,
        pick: impl Fn(&RedoEntry) -> bool,
    ) -> Cycle {
        let mut t = now;
        if let Some(i) = self.redo.iter().rposition(pick) {
            for _ in 0..=i {
                t = t.max(self.pop_redo(ctx, now));
            }
        }
        t
    }

    /// A new redo entry (the oldest leaves early if the FIFO is full).
    /// Returns when a forced write finished (`now` if none).
    fn push_redo(&mut self, ctx: &mut MemCtx, e: RedoEntry, now: Cycle) -> Cycle {
        if let Some(x) = self
            .redo
            .iter_mut()
            .rev()
            .find(|x| x.addr == e.addr && x.core == e.core && x.txid == e.txid)
        {
            // Same word, same transaction: the newer redo replaces it.
            x.redo = e.redo;
            self.st.redo_coalesced += 1;
            return now;
        }
        self.st.redo_created += 1;
        let mut t = now;
        if self.redo.len() >= self.redo_cap {
            self.st.redo_early += 1;
            t = self.pop_redo(ctx, now);
        }
        self.redo.push_back(e);
        t
    }

    /// The ULog words of `core`'s shadowed line become redo entries.
    fn shadow_to_redo(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        line: Addr,
        sh: Shadow,
        now: Cycle,
    ) -> (u64, Cycle) {
        let mut m = sh.mask;
        let mut n = 0;
        let mut t = now;
        while m != 0 {
            let w = m.trailing_zeros() as usize;
            m &= m - 1;
            let e = RedoEntry {
                core,
                txid: sh.txid,
                addr: line + 8 * w as u64,
                redo: sh.vals[w],
            };
            t = t.max(self.push_redo(ctx, e, now));
            n += 1;
        }
        (n, t)
    }

    fn truncate(&mut self, ctx: &mut MemCtx, pass: u64, now: Cycle) -> Cycle {
        let mut head = self.tail;
        for c in &mut self.cores {
            // morlog-dp: a transaction not yet persisted (its redo entries
            // still to come) is never retired, so the head never cuts one
            // that recovery may have to undo.
            let pending = c.pending.front().map(|p| p.txid);
            while c.committed.front().is_some_and(|x| {
                x.pass + 2 <= pass && pending.is_none_or(|t| (x.txid.wrapping_sub(t) as i32) < 0)
            }) {
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
        self.st.entries_reclaimed += head - self.head;
        self.head = head;
        self.st.head_advances += 1;
        self.write_head(ctx, now)
    }

    /// Words of the line whose undo+redo entry left the buffer: Dirty →
    /// URLog (the hardware transition happens when the entry leaves; the
    /// state is only observed at the line's next event, so it is applied
    /// then).
    fn settle(&self, ext: &mut LineExt, line: Addr) {
        let mut dirty = ext.word_mask & !ext.word_mask2;
        while dirty != 0 {
            let w = dirty.trailing_zeros() as usize;
            dirty &= dirty - 1;
            let a = line + 8 * w as u64;
            let core = ext.tid as usize;
            let buffered = self.ur.iter().any(|e| {
                e.kind == TYPE_DATA && e.addr == a && e.core == core && e.txid == ext.txid
            });
            if !buffered {
                let (s, _) = transition(WordState::Dirty, Event::UrPersisted);
                set_word_state(ext, w, s);
            }
        }
    }

    fn tx_end_dp(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.in_tx = false;
        c.tx_count += 1;
        let count = c.tx_count;
        if !c.logged {
            c.pending.push_back(Pending {
                txid: c.txid,
                remaining: 0,
                count,
            });
            self.order.push_back(core);
            self.report(ctx, now);
            self.table_commit(ctx, core, now);
            return now;
        }
        let txid = c.txid;
        c.pending.push_back(Pending {
            txid,
            remaining: UNKNOWN,
            count,
        });
        self.order.push_back(core);
        let first_seq = c.open_first.take().unwrap_or(self.tail);
        let pass = self.passes;
        if self.table.is_none() {
            c.committed.push_back(Committed {
                txid,
                first_seq,
                pass,
            });
        }
        c.logged = false;
        // The commit record queues behind the transaction's entries.
        let mut done = now;
        if self.ur.len() >= self.ur_cap {
            self.st.ur_early += 1;
            done = self.pop_ur(ctx, now);
        }
        let perform = now.max(self.last_perform);
        self.last_perform = perform;
        self.ur.push_back(UrEntry {
            kind: TYPE_COMMIT,
            core,
            txid,
            addr: 0,
            undo: 0,
            redo: 0,
            added: perform,
            last_store: perform,
        });
        // The core continues at once (a full FIFO stalls only the insert).
        self.st.commit_stall_cycles += done - now;
        self.table_commit(ctx, core, done);
        done
    }
}

impl Scheme for MorLog {
    fn tx_begin(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.txid = c.txid.wrapping_add(1);
        c.in_tx = true;
        c.open_first = None;
        c.logged = false;
        let txid = c.txid;
        if self.table.as_ref().is_some_and(|tb| tb.is_full()) {
            // The transaction takes the spare entry; the engine writes back
            // the victim's lines (freeing it) before it runs.
            self.drain_due(ctx, now);
            self.make_room(ctx, now);
        }
        if let Some(tb) = self.table.as_mut() {
            self.cores[core].slot = tb.alloc(core, txid, self.tail);
        }
        now
    }

    fn write_back_request_done(
        &mut self,
        _ctx: &mut MemCtx,
        _core: CoreId,
        begin: Cycle,
        done: Cycle,
    ) {
        if let Some(tb) = self.table.as_mut() {
            tb.full_stall_cycles += done - begin;
        }
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.drain_due(ctx, now);
        if self.dp {
            return self.tx_end_dp(ctx, core, now);
        }
        if !self.cores[core].logged {
            let c = &mut self.cores[core];
            c.in_tx = false;
            c.tx_count += 1;
            self.table_commit(ctx, core, now);
            return now;
        }
        // Commit waits for the undo+redo buffer up to the transaction's
        // last entry, its L1-resident redo data (now redo entries) and the
        // redo buffer up to its last entry; then the commit record.
        let t1 = self.flush_ur_through(ctx, now, |e| e.core == core);
        let mut shadow = std::mem::take(&mut self.cores[core].shadow);
        let mut t2 = now;
        for (line, sh) in shadow.drain() {
            let (n, t) = self.shadow_to_redo(ctx, core, line, sh, now);
            self.st.redo_at_commit += n;
            t2 = t2.max(t);
        }
        self.cores[core].shadow = shadow;
        t2 = t2.max(self.flush_redo_through(ctx, now, |e| e.core == core));
        let c = &self.cores[core];
        let r = Record {
            kind: TYPE_COMMIT,
            core: core as u64,
            txid: c.txid,
            addr: 0,
            undo: 0,
            redo: 0,
        };
        let t = self.append(ctx, &r, t1.max(t2));
        self.st.commit_stall_cycles += t - now;
        let pass = self.passes;
        let tail = self.tail;
        let c = &mut self.cores[core];
        let first_seq = c.open_first.take().unwrap_or(tail);
        let txid = c.txid;
        if self.table.is_none() {
            c.committed.push_back(Committed {
                txid,
                first_seq,
                pass,
            });
        }
        c.logged = false;
        c.in_tx = false;
        c.tx_count += 1;
        self.table_commit(ctx, core, t);
        t
    }

    fn store(&mut self, ctx: &mut MemCtx, ev: Store, ext: &mut LineExt) -> Cycle {
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
        let line = line_of(addr);
        if let Some(tb) = self.table.as_mut() {
            tb.anchor(line, self.cores[core].slot);
        }
        let perform = now.max(self.last_perform);
        self.last_perform = perform;
        self.drain_due(ctx, perform);
        let w = ((addr & 63) / 8) as usize;
        let waddr = addr & !7;
        let txid = self.cores[core].txid;
        let mut done = now;
        // A line last updated by another transaction: its L1 state is
        // dropped, its ULog words become redo entries.
        if !ext.tx || ext.tid as usize != core || ext.txid != txid {
            // The ULog words of whichever transaction last owned the line
            // (by its extension, or by the shadow when the extension was
            // lost: a clean line that left the caches comes back without
            // one, and durasim calls `l1_evict` only for dirty lines).
            for owner in 0..self.cores.len() {
                if let Some(sh) = self.cores[owner].shadow.remove(&line) {
                    let (n, t) = self.shadow_to_redo(ctx, owner, line, sh, perform);
                    if owner == core && sh.txid == txid {
                        self.st.redo_on_l1_evict += n;
                    } else {
                        self.st.redo_on_newer_tx += n;
                    }
                    done = done.max(t);
                }
            }
            *ext = LineExt {
                tx: true,
                tid: core as u8,
                txid,
                word_mask: 0,
                word_mask2: 0,
            };
        }
        // Buffered redo entries of this transaction for this line are
        // discarded: their words are back in the L1 (ULog).
        if self
            .redo
            .iter()
            .any(|e| e.core == core && e.txid == txid && line_of(e.addr) == line)
        {
            let sh = self.cores[core].shadow.entry(line).or_insert(Shadow {
                txid,
                mask: 0,
                vals: [0; 8],
            });
            let mut discarded = 0;
            self.redo.retain(|e| {
                if e.core == core && e.txid == txid && line_of(e.addr) == line {
                    let v = ((e.addr & 63) / 8) as usize;
                    let (s, _) = transition(word_state(ext, v), Event::RedoDiscarded);
                    set_word_state(ext, v, s);
                    sh.mask |= 1 << v;
                    sh.vals[v] = e.redo;
                    discarded += 1;
                    false
                } else {
                    true
                }
            });
            self.st.redo_discarded += discarded;
        }
        self.settle(ext, line);
        self.cores[core].logged = true;
        let s = word_state(ext, w);
        if s == WordState::Clean && old == new {
            // A silent store changes nothing to log.
            self.st.silent_dropped += 1;
            return done;
        }
        let (next, action) = transition(s, Event::Store);
        set_word_state(ext, w, next);
        // A word Clean in the L1 may still have an entry buffered (its line
        // left the L1 and came back): the store coalesces into it.
        let buffered =
            self.ur.iter_mut().rev().find(|e| {
                e.kind == TYPE_DATA && e.addr == waddr && e.core == core && e.txid == txid
            });
        match (action, buffered) {
            (Action::CreateUr | Action::Coalesce, Some(e)) => {
                e.redo = new;
                e.last_store = perform;
                self.st.ur_coalesced += 1;
            }
            (Action::CreateUr | Action::Coalesce, None) => {
                debug_assert_eq!(action, Action::CreateUr);
                if self.ur.len() >= self.ur_cap {
                    // Full: the oldest leaves early to make room.
                    self.st.ur_early += 1;
                    done = done.max(self.pop_ur(ctx, perform));
                }
                self.ur.push_back(UrEntry {
                    kind: TYPE_DATA,
                    core,
                    txid,
                    addr: waddr,
                    undo: old,
                    redo: new,
                    added: perform,
                    last_store: perform,
                });
                self.st.ur_created += 1;
            }
            (Action::KeepInL1, _) => {
                let sh = self.cores[core].shadow.entry(line).or_insert(Shadow {
                    txid,
                    mask: 0,
                    vals: [0; 8],
                });
                sh.mask |= 1 << w;
                sh.vals[w] = new;
                self.st.kept_in_l1 += 1;
            }
            _ => unreachable!("a store never asks for {action:?}"),
        }
        done
    }

    fn l1_evict(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        data: &LineData,
        ext: &mut LineExt,
        now: Cycle,
    ) {
        if self.release_on_l1_evict {
            self.release_line(ctx, line_addr, now);
        }
        if !ext.tx {
            return;
        }
        self.drain_due(ctx, now.max(self.last_perform));
        let owner = (ext.tid as usize).min(self.cores.len() - 1);
        if let Some(sh) = self.cores[owner].shadow.remove(&line_addr) {
            debug_assert!((0..8).all(|w| sh.mask >> w & 1 == 0
                || u64::from_le_bytes(data[w * 8..w * 8 + 8].try_into().unwrap()) == sh.vals[w]));
            let (n, _) = self.shadow_to_redo(ctx, owner, line_addr, sh, now);
            self.st.redo_on_l1_evict += n;
        }
        // The L1 extension leaves with the line (every word → Clean).
        for w in 0..8 {
            let (s, _) = transition(word_state(ext, w), Event::Leave);
            set_word_state(ext, w, s);
        }
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            now,
            ..
        } = ev;
        let mut t = now;
        if !self.no_order {
            if let Some(s) = self
                .ur
                .iter()
                .filter(|e| e.kind == TYPE_DATA && line_of(e.addr) == line_addr)
                .map(|e| e.last_store)
                .max()
            {
                t = t.max(s + self.traversal_cycles);
            }
        }
        self.drain_due(ctx, t);
        if !self.no_order
            && self
                .ur
                .iter()
                .any(|e| e.kind == TYPE_DATA && line_of(e.addr) == line_addr)
        {
            self.st.order_waits += 1;
            t = self.flush_ur_through(ctx, t, |e| {
                e.kind == TYPE_DATA && line_of(e.addr) == line_addr
            });
        }
        if self.redo.iter().any(|e| line_of(e.addr) == line_addr) {
            if self.discard_on_writeback {
                let before = self.redo.len();
                self.redo.retain(|e| line_of(e.addr) != line_addr);
                self.st.redo_discarded += (before - self.redo.len()) as u64;
            } else {
                self.st.redo_kept_on_writeback += 1;
            }
        }
        if !ctx.nvm.is_adr() && !self.no_order {
            t = t.max(self.log_durable_at);
        }
        if self.release_early {
            // Mutant: the table releases the line before its data persist.
            self.release_line(ctx, line_addr, t);
        }
        let done = ctx.nvm.write(line_addr, data, Purpose::WriteBack, t);
        if !self.release_early {
            self.release_line(ctx, line_addr, done);
        }
        done
    }

    fn force_write_back_cycles(&self) -> Option<Cycle> {
        // The transaction table replaces the periodic scan.
        self.table.is_none().then_some(self.period)
    }

    fn force_write_back_done(&mut self, ctx: &mut MemCtx, pass: u64, now: Cycle) -> Cycle {
        self.passes = pass;
        self.truncate(ctx, pass, now)
    }

    fn background_kind(&self) -> &'static str {
        crate::schemes::FWB_KIND
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        // morlog-dp: the L1-resident redo data and both buffers persist.
        let mut t = now;
        for core in 0..self.cores.len() {
            let mut shadow = std::mem::take(&mut self.cores[core].shadow);
            for (line, sh) in shadow.drain() {
                t = t.max(self.shadow_to_redo(ctx, core, line, sh, now).1);
            }
            self.cores[core].shadow = shadow;
        }
        t = t.max(self.flush_ur_through(ctx, now, |_| true));
        t.max(self.flush_redo_through(ctx, now, |_| true))
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.st;
        let mut v = vec![
            (
                "log_entries_created",
                (s.ur_created + s.redo_created) as f64,
            ),
            ("undo_redo_entries_created", s.ur_created as f64),
            ("redo_entries_created", s.redo_created as f64),
            ("undo_redo_buffer_coalesced", s.ur_coalesced as f64),
            ("redo_buffer_coalesced", s.redo_coalesced as f64),
            ("redo_buffer_discarded", s.redo_discarded as f64),
            ("redo_entries_on_l1_evict", s.redo_on_l1_evict as f64),
            ("redo_entries_on_newer_tx", s.redo_on_newer_tx as f64),
            ("redo_entries_at_commit", s.redo_at_commit as f64),
            ("redo_kept_in_l1", s.kept_in_l1 as f64),
            ("redo_kept_on_writeback", s.redo_kept_on_writeback as f64),
            ("silent_log_writes_dropped", s.silent_dropped as f64),
            ("undo_redo_entries_written", s.ur_written as f64),
            ("redo_entries_written", s.redo_written as f64),
            ("undo_redo_buffer_early_evictions", s.ur_early as f64),
            ("redo_buffer_early_evictions", s.redo_early as f64),
            ("commit_records", s.commit_records as f64),
            ("log_bits_before_encoding", s.log_bits as f64),
            ("commit_stall_cycles", s.commit_stall_cycles as f64),
            ("order_waits", s.order_waits as f64),
            ("retired_tx", s.retired_tx as f64),
            ("log_head_advances", s.head_advances as f64),
            ("log_head_persists", s.head_persists as f64),
            ("log_entries_reclaimed", s.entries_reclaimed as f64),
            ("log_live_entries", (self.tail - self.head) as f64),
            ("undo_redo_delay_cycles", self.delay as f64),
        ];
        if let Some(tb) = &self.table {
            v.extend([
                ("tx_table_entries", tb.cap as f64),
                ("tx_table_occupancy_max", tb.max_occupancy as f64),
                (
                    "tx_table_occupancy_mean",
                    tb.occupancy_sum as f64 / tb.allocations.max(1) as f64,
                ),
                ("tx_table_full_events", tb.full_events as f64),
                ("tx_table_full_stall_cycles", tb.full_stall_cycles as f64),
                ("tx_table_lines_released", tb.lines_released as f64),
                ("tx_table_lines_reanchored", tb.reanchored as f64),
                ("tx_table_anchored_lines", tb.anchored_lines() as f64),
                ("redo_entries_on_table_full", s.redo_on_table_full as f64),
            ]);
        }
        v
    }

    fn reset_stats(&mut self) {
        self.st = Stats::default();
        if let Some(tb) = self.table.as_mut() {
            tb.reset_stats();
        }
    }
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}
fn recover_dp(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan_dp(p, layout), img, p)
}

pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(MorScan::new(p, layout, &K, false))
}

pub(crate) fn new_scan_dp(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(MorScan::new(p, layout, &DP, true))
}

type TxKey = (u64, u32);

/// A transaction as the log shows it.
#[derive(Default)]
struct ScanTx {
    /// Its position in commit order (its first commit record).
    commit: Option<usize>,
    /// The ulog counter of that commit record (morlog-dp).
    counter: u64,
    /// Redo entries read after that commit record.
    redo_after: u64,
    /// Its data and redo entries (address, redo word) in log order, until
    /// their redo is emitted.
    recs: Vec<(Addr, u64)>,
    /// Its data entries whose undo is a home write (*spilled*, [`MorScan`]):
    /// (log position, address, undo word).
    spilled: Vec<(u64, Addr, u64)>,
    /// Its data entries read from now on are spilled.
    spill: bool,
}

/// A data entry of a transaction not sealed whose undo is in the finish.
#[derive(Clone, Copy, Debug)]
struct Undo {
    key: TxKey,
    /// Its log position.
    seq: u64,
    addr: Addr,
    undo: u64,
}

/// A word the scan writes home while sealing ([`MorScan`]).
#[derive(Default)]
struct Word {
    /// The values of the live home pieces at this word, in the io's order:
    /// a mirror of [`ScanIo::rehome`]'s rule (a replacement or withdrawal
    /// acts on the last live piece with the old bytes, after the record's
    /// new home writes).
    slots: Vec<u64>,
    /// The newest redo emitted and its transaction's commit position.
    redo: u64,
    writer: Option<usize>,
    /// Spilled undo words (log position, undo word), in log order.
    spilled: Vec<(u64, u64)>,
    /// The resume that last replaced or withdrew a piece here.
    rehomed_in: u64,
}

impl Word {
    /// What the word's home writes must leave: the oldest spilled undo,
    /// else the newest redo.
    fn last(&self) -> u64 {
        self.spilled.first().map_or(self.redo, |s| s.1)
    }
}

/// Recovery from the log's bytes (§III-E) as a resumable scan
/// (recovery/scan.rs, one cursor: the ring). Its writes, as a multiset and
/// in their effect on every word, are those of the recovery it replaced:
/// the redo of every persisted transaction in commit order (each in log
/// order, with the entries read after its commit record), then the undo of
/// every data entry of the others in reverse log order, then the head
/// moved to the end. Persisted = committed (`morlog`); `morlog-dp`: the
/// committed ones before the first whose ulog counter differs from its redo
/// entries after its record.
///
/// Resumable because a transaction's redo is emitted (home writes) once it
/// is persisted (*sealed*), in commit order, and an entry that joins a
/// sealed transaction later is emitted when read. The undo of the others
/// is the finish, recomputed at each point, except for morlog-dp's
/// committed transactions behind the first one not persisted (a ULog line
/// that stays in an L1 keeps that one short of its counter for thousands
/// of records): their undo is *spilled*, emitted as home writes too, and
/// withdrawn ([`ScanIo::rehome`] with `None`) when the transaction is
/// sealed. Per word, the spilled entries are the newest of the undo
/// entries not sealed (an entry read after a spilled one at its word
/// spills; spilling one spills the newer ones at its word), so the finish,
/// written after every home write, still leaves the oldest undo. Where no
/// finish write lands, the home writes must leave the oldest spilled undo,
/// else the newest redo ([`Word::last`]): the scan mirrors the io's pieces
/// per word and, after each record, swaps values between two pieces (a
/// multiset of writes does not say which piece holds which value) so that
/// the last piece holds it, and rewrites it once more if the word was
/// replaced earlier in this resume (the driver applies a resume's home
/// writes before its replacements).
///
/// Two things the bytes allow would make an emitted redo wrong: a
/// morlog-dp redo entry after a sealed transaction's counter was met (it
/// and every later one are no longer persisted), and a joining entry of a
/// sealed transaction to a word that a later sealed one wrote (its redo
/// must come before that one); so would an entry at an address that is
/// not a word's (the mirror is per word). Then the scan restarts from the
/// head without sealing ([`ScanIo::restart`]): every write is in the
/// finish, in the replaced recovery's order.
struct MorScan {
    cur: RingCursor,
    /// morlog-dp and not the `ignore-counter` mutant.
    check_counter: bool,
    /// Emit persisted transactions' redo (and spilled undo) as home writes
    /// (off after a restart).
    seal: bool,
    txs: FxHashMap<TxKey, ScanTx>,
    /// Transactions in commit order.
    commits: Vec<TxKey>,
    /// `commits[..persisted]` are persisted.
    persisted: usize,
    /// `commits[..sealed]` have their redo emitted (`persisted` when
    /// sealing, 0 otherwise).
    sealed: usize,
    /// Data entries of transactions not sealed that are not spilled, in
    /// log order.
    undo: Vec<Undo>,
    /// Words written home while sealing.
    words: FxHashMap<Addr, Word>,
    /// Spilled data entries.
    spilled: u64,
    /// Redo words emitted.
    redone: u64,
    /// Resumes so far.
    resumes: u64,
    /// The record's home writes, withdrawals and words to settle, issued
    /// at its end in the order the io applies them.
    new_homes: Vec<(Addr, u64)>,
    withdrawn: Vec<(Addr, u64)>,
    touched: Vec<Addr>,
}

impl MorScan {
    fn new(p: &Params, layout: &Layout, k: &Keys, dp: bool) -> Self {
        let check_counter = dp && p.str(k.mutant) != "ignore-counter";
        Self::fresh(Ring::new(layout, p.u64(k.log_bytes)), check_counter)
    }

    /// Nothing scanned yet.
    fn fresh(ring: Ring, check_counter: bool) -> Self {
        MorScan {
            cur: RingCursor::new(ring),
            check_counter,
            seal: true,
            txs: FxHashMap::default(),
            commits: Vec::new(),
            persisted: 0,
            sealed: 0,
            undo: Vec::new(),
            words: FxHashMap::default(),
            spilled: 0,
            redone: 0,
            resumes: 0,
            new_homes: Vec::new(),
            withdrawn: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// Whether a data entry of `key` in `undo` belongs to a persisted
    /// transaction (never while sealing keeps up: `undo` holds only
    /// transactions not sealed, so the lookup is skipped).
    fn is_persisted(&self, key: &TxKey) -> bool {
        self.sealed < self.persisted && self.txs[key].commit.is_some_and(|i| i < self.persisted)
    }

    fn counter_met(&self, i: usize) -> bool {
        let t = &self.txs[&self.commits[i]];
        !self.check_counter || t.counter == t.redo_after
    }

    /// Emit the redo `v` of `a` of the sealed transaction at commit
    /// position `i`.
    fn emit_redo(&mut self, i: usize, a: Addr, v: u64) {
        let w = self.words.entry(a).or_default();
        w.redo = v;
        w.writer = Some(i);
        self.new_homes.push((a, v));
        self.touched.push(a);
        self.redone += 1;
    }

    /// Emit the undo of data entry `u` (spill it).
    fn spill(&mut self, u: Undo) {
        let w = self.words.entry(u.addr).or_default();
        let at = w.spilled.partition_point(|s| s.0 < u.seq);
        w.spilled.insert(at, (u.seq, u.undo));
        let t = self.txs.get_mut(&u.key).expect("a read transaction");
        t.spilled.push((u.seq, u.addr, u.undo));
        self.new_homes.push((u.addr, u.undo));
        self.touched.push(u.addr);
        self.spilled += 1;
    }

    /// Spill every data entry of `key` in the finish, and the newer ones
    /// at the same words (log order: the first spilled at a word starts
    /// its suffix).
    fn spill_tx(&mut self, key: TxKey) {
        self.txs.get_mut(&key).expect("committed").spill = true;
        let mut cut: Vec<Addr> = Vec::new();
        let mut out = Vec::new();
        self.undo.retain(|u| {
            let go = u.key == key || cut.contains(&u.addr);
            if go {
                if !cut.contains(&u.addr) {
                    cut.push(u.addr);
                }
                out.push(*u);
            }
            !go
        });
        for u in out {
            self.spill(u);
        }
    }

    /// Issue the record's home writes, then its withdrawals, then settle
    /// the words they touched (see [`MorScan`]).
    fn flush(&mut self, io: &mut dyn ScanIo) {
        let resume = self.resumes;
        for (a, v) in self.new_homes.drain(..) {
            io.home(a, &v.to_le_bytes());
            self.words.get_mut(&a).expect("kept").slots.push(v);
        }
        for (a, u) in self.withdrawn.drain(..) {
            io.rehome(a, &u.to_le_bytes(), None);
            let w = self.words.get_mut(&a).expect("kept");
            let j = w.slots.iter().rposition(|&x| x == u).expect("a live piece");
            w.slots.remove(j);
            w.rehomed_in = resume;
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        for a in self.touched.drain(..) {
            let w = self.words.get_mut(&a).expect("kept");
            let Some(&l) = w.slots.last() else {
                continue;
            };
            let f = w.last();
            let n = w.slots.len() - 1;
            if l != f {
                let j = w.slots[..n]
                    .iter()
                    .rposition(|&x| x == f)
                    .expect("a live piece holds the final value");
                io.rehome(a, &f.to_le_bytes(), Some(&l.to_le_bytes()));
                w.slots[j] = l;
                io.rehome(a, &l.to_le_bytes(), Some(&f.to_le_bytes()));
                w.slots[n] = f;
                w.rehomed_in = resume;
            } else if w.rehomed_in == resume {
                io.rehome(a, &f.to_le_bytes(), Some(&f.to_le_bytes()));
            }
        }
    }

    /// Fold record `r` into the state; `false` (nothing changed) if it
    /// makes an emitted write wrong.
    fn apply(&mut self, r: &Record, io: &mut dyn ScanIo) -> bool {
        let key = (r.core, r.txid);
        if self.seal && r.kind != TYPE_COMMIT && !r.addr.is_multiple_of(8) {
            return false;
        }
        let t = self.txs.entry(key).or_default();
        if r.kind == TYPE_COMMIT {
            if t.commit.is_none() {
                t.commit = Some(self.commits.len());
                t.counter = r.redo;
                self.commits.push(key);
            }
        } else {
            // The counter covers the redo entries after the record.
            let counted = r.kind == TYPE_REDO && t.commit.is_some();
            match t.commit {
                Some(i) if i < self.sealed => {
                    let later = self.words.get(&r.addr).and_then(|w| w.writer);
                    if counted && self.check_counter || later.is_some_and(|j| j > i) {
                        return false;
                    }
                    t.redo_after += u64::from(counted);
                    self.emit_redo(i, r.addr, r.redo);
                    self.flush(io);
                    return true;
                }
                commit => {
                    t.redo_after += u64::from(counted);
                    t.recs.push((r.addr, r.redo));
                    if r.kind == TYPE_DATA {
                        let spill = self.seal
                            && (t.spill
                                || self
                                    .words
                                    .get(&r.addr)
                                    .is_some_and(|w| !w.spilled.is_empty()));
                        let u = Undo {
                            key,
                            seq: self.cur.seq,
                            addr: r.addr,
                            undo: r.undo,
                        };
                        if spill {
                            self.spill(u);
                        } else {
                            self.undo.push(u);
                        }
                    }
                    // (Without sealing) a persisted one whose counter is
                    // now exceeded ends the persisted prefix.
                    if let Some(i) = commit.filter(|&i| i < self.persisted) {
                        if !self.counter_met(i) {
                            self.persisted = i;
                        }
                    }
                }
            }
        }
        while self.persisted < self.commits.len() && self.counter_met(self.persisted) {
            self.persisted += 1;
        }
        if self.seal && self.sealed < self.persisted {
            for i in self.sealed..self.persisted {
                let t = self.txs.get_mut(&self.commits[i]).expect("committed");
                let recs = std::mem::take(&mut t.recs);
                let gone = std::mem::take(&mut t.spilled);
                for (a, v) in recs {
                    self.emit_redo(i, a, v);
                }
                for (seq, a, u) in gone {
                    let w = self.words.get_mut(&a).expect("spilled");
                    let j = w.spilled.iter().position(|s| s.0 == seq).expect("spilled");
                    w.spilled.remove(j);
                    self.withdrawn.push((a, u));
                    self.touched.push(a);
                    self.spilled -= 1;
                }
            }
            self.sealed = self.persisted;
            let txs = &self.txs;
            let sealed = self.sealed;
            self.undo
                .retain(|u| txs[&u.key].commit.is_none_or(|i| i >= sealed));
        }
        // morlog-dp: committed behind the first one not persisted.
        if self.seal && r.kind == TYPE_COMMIT {
            let t = &self.txs[&key];
            if !t.spill && t.commit.is_some_and(|i| i > self.persisted) {
                self.spill_tx(key);
            }
        }
        self.flush(io);
        true
    }
}

impl ResumableScan for MorScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        self.resumes += 1;
        while let Some(r) = self.cur.next(io) {
            if !self.apply(&r, io) {
                if !io.restart() {
                    return Err(Error::Internal(
                        "morlog scan: emitted writes cannot be taken back here".into(),
                    ));
                }
                *self = MorScan {
                    seal: false,
                    ..MorScan::fresh(self.cur.ring, self.check_counter)
                };
                continue;
            }
            self.cur.advance(io);
        }
        Ok(())
    }

    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        for key in &self.commits[self.sealed..self.persisted] {
            for &(a, v) in &self.txs[key].recs {
                out(a, &v.to_le_bytes());
            }
        }
        for u in self.undo.iter().rev() {
            if !self.is_persisted(&u.key) {
                out(u.addr, &u.undo.to_le_bytes());
            }
        }
        self.cur.head_to_end(out);
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let redone = self.redone
            + self.commits[self.sealed..self.persisted]
                .iter()
                .map(|k| self.txs[k].recs.len() as u64)
                .sum::<u64>();
        let undone = self.spilled
            + self
                .undo
                .iter()
                .filter(|u| !self.is_persisted(&u.key))
                .count() as u64;
        let mismatches = u64::from(self.check_counter && self.persisted < self.commits.len());
        self.cur.report(
            p,
            redone + undone,
            &[
                ("words_redone", redone as f64),
                ("words_undone", undone as f64),
                ("committed_tx", self.commits.len() as f64),
                ("persisted_tx", self.persisted as f64),
                ("ulog_counter_mismatches", mismatches as f64),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::kit::hw_log::{decode, head_to_end, scan_head};

    #[derive(Default)]
    struct TxLog {
        commit_at: Option<usize>,
        counter: u64,
        redo_entries: u64,
        recs: Vec<usize>,
    }

    /// The recovery before it became a resumable scan (the reference of the
    /// differential test); `check_counter` = morlog-dp without the
    /// ignore-counter mutant.
    fn reference_recover(
        img: &mut dyn MemWrite,
        p: &Params,
        ring: Ring,
        check_counter: bool,
    ) -> RecoveryReport {
        let (head, newest) = scan_head(&*img, &ring);
        let mut recs = Vec::new();
        let mut seq = head;
        let mut buf = [0u8; ENTRY_BYTES as usize];
        while seq < head + ring.slots {
            img.read_bytes(ring.slot_addr(seq), &mut buf);
            match decode(&ring, seq, &buf) {
                Some(r) => recs.push(r),
                None => break,
            }
            seq += 1;
        }
        let mut txs: FxHashMap<(u64, u32), TxLog> = FxHashMap::default();
        let mut commits = Vec::new();
        for (i, r) in recs.iter().enumerate() {
            let t = txs.entry((r.core, r.txid)).or_default();
            match r.kind {
                TYPE_COMMIT => {
                    if t.commit_at.is_none() {
                        t.commit_at = Some(i);
                        t.counter = r.redo;
                        commits.push((r.core, r.txid));
                    }
                }
                TYPE_REDO => {
                    // The counter covers the redo entries after the record.
                    if t.commit_at.is_some() {
                        t.redo_entries += 1;
                    }
                    t.recs.push(i);
                }
                _ => t.recs.push(i),
            }
        }
        // Persisted transactions, in commit order (the commit records' order).
        let mut persisted = rustc_hash::FxHashSet::default();
        let mut mismatches = 0u64;
        for key in &commits {
            let t = &txs[key];
            if check_counter && t.counter != t.redo_entries {
                // This one and every later one are not persisted.
                mismatches += 1;
                break;
            }
            persisted.insert(*key);
        }
        let (mut redone, mut undone) = (0u64, 0u64);
        for key in &commits {
            if !persisted.contains(key) {
                continue;
            }
            for &i in &txs[key].recs {
                img.write_u64(recs[i].addr, recs[i].redo);
                redone += 1;
            }
        }
        for r in recs.iter().rev().filter(|r| r.kind == TYPE_DATA) {
            if !persisted.contains(&(r.core, r.txid)) {
                img.write_u64(r.addr, r.undo);
                undone += 1;
            }
        }
        head_to_end(&ring, newest, head, seq, &mut |a, d| img.write_bytes(a, d));
        let lines_read = 2 + (seq - head + 1).div_ceil(2);
        let lines_written = redone + undone + u64::from(seq > head);
        RecoveryReport {
            bytes_read: lines_read * 64,
            bytes_written: lines_written * 8,
            modeled_ns: crate::schemes::kit::log::recovery_ns(p, lines_read, lines_written),
            details: vec![
                ("log_records_scanned", (seq - head) as f64),
                ("words_redone", redone as f64),
                ("words_undone", undone as f64),
                ("committed_tx", commits.len() as f64),
                ("persisted_tx", persisted.len() as f64),
                ("ulog_counter_mismatches", mismatches as f64),
            ],
        }
    }

    /// A write-through image that logs every write in order.
    struct Logged {
        img: crate::mem::SparseImage,
        writes: Vec<(Addr, Vec<u8>)>,
    }

    impl crate::mem::MemRead for Logged {
        fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
            self.img.read_bytes(addr, buf)
        }
        fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
            self.img.zeros_until(addr, end)
        }
    }

    impl MemWrite for Logged {
        fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
            self.writes.push((addr, data.to_vec()));
            self.img.write_bytes(addr, data)
        }
    }

    /// Differential: on seeded logs of random records over a few words —
    /// transactions interleaved, entries after their commit record (also to
    /// words a later-committed transaction wrote), duplicate commit records,
    /// morlog-dp counters short, met and exceeded, a head past 0, torn ends —
    /// every prefix of the log recovers with the scan to the reference's
    /// image, with the same writes as a multiset (so the same count and
    /// digest) and the same report; and resuming the scan record by record
    /// (restarting it where it asks) ends in the same state as scanning the
    /// whole prefix at once.
    #[test]
    fn scan_recovery_equals_the_reference_on_seeded_logs() {
        use crate::mem::MemRead;
        use rand::{Rng, SeedableRng};
        let p = Params::defaults(&crate::schemes::all_params());
        let ring = Ring {
            base: 1 << 20,
            slots: 64,
        };
        let (mut restarts, mut compared) = (0u64, 0u64);
        let (mut withdrawals, mut spilled_runs) = (0u64, 0u64);
        for seed in 0..1000u64 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let check_counter = seed % 3 != 0;
            let head = if seed % 4 == 0 { 5 } else { 0 };
            let mut base = crate::mem::SparseImage::new();
            if head > 0 {
                base.write_bytes(
                    ring.header_addr(1),
                    &crate::schemes::kit::hw_log::header_bytes(head),
                );
            }
            for w in 0..6u64 {
                base.write_u64(0x1000 + 8 * w, 100 + w);
            }
            let n = rng.gen_range(1..40u64);
            for seq in head..head + n {
                let core = rng.gen_range(0..2u64);
                let txid = rng.gen_range(1..5u32);
                let kind = match rng.gen_range(0..10) {
                    0..=2 => TYPE_COMMIT,
                    3..=5 => TYPE_REDO,
                    _ => TYPE_DATA,
                };
                let r = Record {
                    kind,
                    core,
                    txid,
                    addr: 0x1000 + 8 * rng.gen_range(0..6u64),
                    undo: rng.gen_range(0..1000),
                    redo: if kind == TYPE_COMMIT {
                        rng.gen_range(0..3)
                    } else {
                        rng.gen_range(0..1000)
                    },
                };
                base.write_bytes(ring.slot_addr(seq), &encode(&ring, seq, &r));
            }
            // Every prefix: the log cut after `m` records.
            for m in 0..=n {
                let mut img = base.clone();
                for seq in head + m..head + n {
                    img.write_bytes(ring.slot_addr(seq), &[0u8; ENTRY_BYTES as usize]);
                }
                let mut a = Logged {
                    img: img.clone(),
                    writes: Vec::new(),
                };
                let mut b = Logged {
                    img: img.clone(),
                    writes: Vec::new(),
                };
                let scan = Box::new(MorScan::fresh(ring, check_counter));
                let ra = crate::recovery::recover_by_scan(scan, &mut a, &p).unwrap();
                let rb = reference_recover(&mut b, &p, ring, check_counter);
                let what = format!("seed {seed} prefix {m}");
                assert_eq!(
                    (ra.bytes_read, ra.bytes_written, &ra.details),
                    (rb.bytes_read, rb.bytes_written, &rb.details),
                    "{what}"
                );
                let mut wa = a.writes.clone();
                let mut wb = b.writes.clone();
                wa.sort();
                wb.sort();
                assert_eq!(wa, wb, "{what}");
                for (addr, _) in &wb {
                    assert_eq!(
                        a.img.read_u64(*addr),
                        b.img.read_u64(*addr),
                        "{what} {addr:#x}"
                    );
                }
                compared += 1;
            }
            // Resumed record by record over the growing log (a restart that
            // the io refuses ends the run: the driver would start afresh).
            let mut scan = MorScan::fresh(ring, check_counter);
            let mut img = base.clone();
            for seq in head..head + n {
                img.write_bytes(ring.slot_addr(seq), &[0u8; ENTRY_BYTES as usize]);
            }
            let mut homes = crate::recovery::writes::Writes::default();
            // The driver's view of the home writes: per resume, its home
            // writes, then its replacements (a withdrawal shows the crash
            // image again).
            let mut view: FxHashMap<Addr, u64> = FxHashMap::default();
            for m in 0..=n {
                if m > 0 {
                    let seq = head + m - 1;
                    let b = base.clone();
                    let mut buf = [0u8; ENTRY_BYTES as usize];
                    b.read_bytes(ring.slot_addr(seq), &mut buf);
                    img.write_bytes(ring.slot_addr(seq), &buf);
                }
                let mut io = TestIo::new(&img, &mut homes);
                scan.resume(0, &mut io).unwrap();
                restarts += u64::from(io.restarted);
                withdrawals += io.withdrawals;
                spilled_runs += u64::from(scan.spilled > 0);
                io.apply_to(&mut view);
                // Same state as the whole prefix scanned at once.
                let mut whole = MorScan::fresh(ring, check_counter);
                let mut homes2 = crate::recovery::writes::Writes::default();
                let mut io2 = TestIo::new(&img, &mut homes2);
                whole.resume(0, &mut io2).unwrap();
                let fin = |s: &MorScan| {
                    let mut v = Vec::new();
                    s.finish(&mut |a, d| v.push((a, d.to_vec())));
                    v
                };
                let what = format!("seed {seed} resumed to {m}");
                assert_eq!(fin(&scan), fin(&whole), "{what}");
                assert_eq!(scan.report(&p).details, whole.report(&p).details, "{what}");
                let pieces = |w: &crate::recovery::writes::Writes| {
                    w.pieces(w.len())
                        .map(|(a, d)| (a, d.to_vec()))
                        .collect::<Vec<_>>()
                };
                assert_eq!(pieces(&homes), pieces(&homes2), "{what}");
                let ctx = (&p, ring, check_counter);
                assert_view_recovers(&scan, &homes, &view, &img, ctx, &what);
            }
        }
        assert!(
            compared > 12_000 && restarts > 25 && withdrawals > 100 && spilled_runs > 2_000,
            "{compared} {restarts} {withdrawals} {spilled_runs}"
        );
    }

    /// The driver's recovered image of a resumed scan (the crash image,
    /// the home writes as the driver's view keeps them, then the finish)
    /// is the reference recovery's, and the writes (`homes` kept as the
    /// from-scratch recovery keeps them, then the finish) are its multiset.
    fn assert_view_recovers(
        scan: &MorScan,
        homes: &crate::recovery::writes::Writes,
        view: &FxHashMap<Addr, u64>,
        img: &crate::mem::SparseImage,
        (p, ring, check_counter): (&Params, Ring, bool),
        what: &str,
    ) {
        use crate::mem::MemRead;
        let mut fast = img.clone();
        for (&a, &v) in view {
            fast.write_u64(a, v);
        }
        let mut ours: Vec<(Addr, Vec<u8>)> = homes
            .pieces(homes.len())
            .map(|(a, d)| (a, d.to_vec()))
            .collect();
        scan.finish(&mut |a, d| {
            fast.write_bytes(a, d);
            ours.push((a, d.to_vec()));
        });
        let mut r = Logged {
            img: img.clone(),
            writes: Vec::new(),
        };
        reference_recover(&mut r, p, ring, check_counter);
        for a in r.writes.iter().map(|w| w.0).chain(view.keys().copied()) {
            assert_eq!(fast.read_u64(a), r.img.read_u64(a), "{what} {a:#x}");
        }
        ours.sort();
        r.writes.sort();
        assert_eq!(ours, r.writes, "{what}");
    }

    /// On a real morlog-dp log (btree, 2 threads: commits stay unpersisted
    /// behind one whose ULog line stays in an L1), the scan resumed after
    /// every persist event (from scratch after a header write, as the
    /// driver does) spills and withdraws undo words, and at every 16th
    /// event the driver's recovered image is the reference recovery's.
    #[test]
    fn spilled_undo_on_a_real_morlog_dp_log() {
        let mut s = crate::engine::RunSpec::new("morlog-dp", "btree").unwrap();
        s.threads = 2;
        s.tx = 300;
        s.record_history = true;
        let mut e = crate::engine::Engine::new(s).unwrap();
        e.run(&mut |_| {}).unwrap();
        e.finish();
        let ring = Ring::new(&e.ctx.layout, e.params.u64("morlog-dp.log_bytes"));
        let log = &e.ctx.nvm.persist_log;
        let mut img = crate::mem::SparseImage::new();
        let mut scan = MorScan::fresh(ring, true);
        let mut homes = crate::recovery::writes::Writes::default();
        let mut view = FxHashMap::default();
        let (mut spilled_max, mut withdrawals, mut checked) = (0, 0, 0);
        for (k, ev) in log.events().iter().enumerate() {
            img.write_bytes(ev.addr, log.data(ev));
            if ev.addr < ring.base + crate::schemes::kit::hw_log::HEADER_BYTES
                && ev.addr + ev.len as u64 > ring.base
            {
                scan = MorScan::fresh(ring, true);
                homes.clear();
                view.clear();
            }
            let mut io = TestIo::new(&img, &mut homes);
            scan.resume(0, &mut io).unwrap();
            assert!(!io.restarted, "event {k}");
            withdrawals += io.withdrawals;
            io.apply_to(&mut view);
            spilled_max = spilled_max.max(scan.spilled);
            if k % 16 == 0 {
                let what = format!("event {k}");
                assert_view_recovers(&scan, &homes, &view, &img, (&e.params, ring, true), &what);
                checked += 1;
            }
        }
        assert!(
            spilled_max > 100 && withdrawals > 100 && checked > 100,
            "{spilled_max} {withdrawals} {checked}"
        );
    }

    /// A [`ScanIo`] that keeps marked home writes as the from-scratch
    /// recovery does (a mark appends the new home writes, then applies the
    /// replacements), records the marked ones of this resume for the
    /// driver's view, and always allows a restart.
    struct TestIo<'a> {
        img: &'a crate::mem::SparseImage,
        pending: Vec<(Addr, Vec<u8>)>,
        pending_rehomes: Vec<(Addr, Vec<u8>, Option<Vec<u8>>)>,
        homes: &'a mut crate::recovery::writes::Writes,
        resume_homes: Vec<(Addr, Vec<u8>)>,
        resume_rehomes: Vec<(Addr, Option<Vec<u8>>)>,
        withdrawals: u64,
        restarted: bool,
    }

    impl<'a> TestIo<'a> {
        fn new(
            img: &'a crate::mem::SparseImage,
            homes: &'a mut crate::recovery::writes::Writes,
        ) -> Self {
            TestIo {
                img,
                pending: Vec::new(),
                pending_rehomes: Vec::new(),
                homes,
                resume_homes: Vec::new(),
                resume_rehomes: Vec::new(),
                withdrawals: 0,
                restarted: false,
            }
        }
    }

    impl TestIo<'_> {
        /// This resume's marked writes onto the driver's view: its home
        /// writes, then its replacements (a withdrawal shows the crash
        /// image again); a restart starts the view afresh.
        fn apply_to(&self, view: &mut FxHashMap<Addr, u64>) {
            if self.restarted {
                view.clear();
            }
            let word = |d: &[u8]| u64::from_le_bytes(d.try_into().unwrap());
            for (a, d) in &self.resume_homes {
                view.insert(*a, word(d));
            }
            for (a, d) in &self.resume_rehomes {
                match d {
                    Some(d) => view.insert(*a, word(d)),
                    None => view.remove(a),
                };
            }
        }
    }

    impl crate::mem::MemRead for TestIo<'_> {
        fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
            self.img.read_bytes(addr, buf)
        }
        fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
            self.img.zeros_until(addr, end)
        }
    }

    impl ScanIo for TestIo<'_> {
        fn home(&mut self, addr: Addr, data: &[u8]) {
            self.pending.push((addr, data.to_vec()));
        }
        fn mark(&mut self) {
            for (a, d) in self.pending.drain(..) {
                self.homes.push(a, &d);
                self.resume_homes.push((a, d));
            }
            for (a, old, new) in self.pending_rehomes.drain(..) {
                assert!(self.homes.replace(a, &old, new.as_deref()), "{a:#x}");
                self.withdrawals += u64::from(new.is_none());
                self.resume_rehomes.push((a, new));
            }
        }
        fn restart(&mut self) -> bool {
            self.pending.clear();
            self.pending_rehomes.clear();
            self.homes.clear();
            self.resume_homes.clear();
            self.resume_rehomes.clear();
            self.restarted = true;
            true
        }
        fn rehome(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>) {
            self.pending_rehomes
                .push((addr, old.to_vec(), new.map(<[u8]>::to_vec)));
        }
    }

    use WordState::*;

    /// Every transition of Fig. 8.
    #[test]
    fn fig8_transitions() {
        let cases = [
            (Clean, Event::Store, Dirty, Action::CreateUr),
            (Dirty, Event::Store, Dirty, Action::Coalesce),
            (URLog, Event::Store, ULog, Action::KeepInL1),
            (ULog, Event::Store, ULog, Action::KeepInL1),
            (Dirty, Event::UrPersisted, URLog, Action::None),
            (Clean, Event::UrPersisted, Clean, Action::None),
            (URLog, Event::UrPersisted, URLog, Action::None),
            (ULog, Event::UrPersisted, ULog, Action::None),
            (ULog, Event::Leave, Clean, Action::CreateRedo),
            (URLog, Event::Leave, Clean, Action::None),
            (Dirty, Event::Leave, Clean, Action::None),
            (Clean, Event::Leave, Clean, Action::None),
            (Clean, Event::RedoDiscarded, ULog, Action::None),
            (ULog, Event::RedoDiscarded, ULog, Action::None),
        ];
        for (s, ev, want, act) in cases {
            assert_eq!(transition(s, ev), (want, act), "{s:?} on {ev:?}");
        }
    }

    /// The 2-bit states live in the two word masks, one word at a time.
    #[test]
    fn word_states_round_trip_in_line_ext() {
        let mut ext = LineExt::default();
        let states = [Clean, Dirty, URLog, ULog, ULog, URLog, Dirty, Clean];
        for (w, s) in states.iter().enumerate() {
            set_word_state(&mut ext, w, *s);
        }
        for (w, s) in states.iter().enumerate() {
            assert_eq!(word_state(&ext, w), *s, "word {w}");
        }
        set_word_state(&mut ext, 3, Clean);
        assert_eq!(word_state(&ext, 3), Clean);
        assert_eq!(word_state(&ext, 2), URLog);
        assert_eq!(std::mem::size_of::<LineExt>(), 8);
    }

    #[test]
    fn n_is_below_the_traversal() {
        let p = Params::defaults(&[PARAMS]);
        let n = ur_delay_cycles(&p);
        let trav = p.u64("cache.l1_latency_cycles")
            + p.u64("cache.l2_latency_cycles")
            + p.u64("cache.llc_latency_cycles");
        assert_eq!(n + 1, trav);
    }

    /// The buffers' rules on hand-made transactions (tiny 2-way L1 of 8
    /// sets: lines 512 B apart conflict).
    #[test]
    fn buffers_coalesce_keep_in_l1_and_discard() {
        use crate::workloads::Op;
        let run = |scheme: &str, ops: &dyn Fn(u64) -> Vec<Op>| {
            let mut s = crate::engine::RunSpec::new(scheme, "vector").unwrap();
            s.threads = 1;
            for (k, v) in [("cache.l1_size_bytes", "1KB"), ("cache.l1_ways", "2")] {
                s.params.set_str(k, v).unwrap();
            }
            let mut e = crate::engine::Engine::new(s).unwrap();
            let base = e.ctx.layout.thread_base(0) + (32 << 20);
            e.run_ops(0, &ops(base)).unwrap();
            let st = e.scheme.stats();
            move |k: &str| st.iter().find(|x| x.0 == k).unwrap().1
        };
        let st = |a: u64, v: u64| Op::Store { addr: a, value: v };
        let wait = Op::Compute { n: 5000 };
        let load = |a: u64| Op::Load {
            addr: a,
            value: 0,
            dep: 0,
        };
        // Two stores within N cycles: one entry, coalesced.
        let s = run("morlog", &|b| vec![st(b, 1), st(b, 2)]);
        assert_eq!(
            (
                s("undo_redo_entries_created"),
                s("undo_redo_buffer_coalesced")
            ),
            (1.0, 1.0)
        );
        // The second store after the entry persisted: redo kept in the L1,
        // logged as a redo entry at commit.
        let s = run("morlog", &|b| vec![st(b, 1), wait, st(b, 2)]);
        assert_eq!(s("undo_redo_entries_created"), 1.0);
        assert_eq!(s("redo_kept_in_l1"), 1.0);
        assert_eq!(s("redo_entries_at_commit"), 1.0);
        // The line leaves the L1 (two conflicting lines): a redo entry; the
        // transaction updates the line again: the entry is discarded and the
        // word is ULog again (no new undo+redo entry).
        let s = run("morlog", &|b| {
            vec![
                st(b, 1),
                wait,
                st(b, 2),
                load(b + 512),
                load(b + 1024),
                wait,
                st(b + 8, 3),
                wait,
                st(b, 4),
            ]
        });
        assert_eq!(s("redo_entries_on_l1_evict"), 1.0);
        assert_eq!(s("redo_buffer_discarded"), 1.0);
        assert_eq!(s("undo_redo_entries_created"), 2.0, "b and b+8 only");
        assert_eq!(
            s("redo_entries_at_commit"),
            1.0,
            "b's newest redo at commit"
        );
        // A silent store logs nothing.
        let s = run("morlog", &|b| vec![st(b, 0)]);
        assert_eq!(s("silent_log_writes_dropped"), 1.0);
        assert_eq!(s("log_entries_created"), 0.0);
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// The ordering rule over random store sequences: a word's value
        /// reaches its home only after the undo+redo entry of the
        /// transaction that stored it is in the log (tiny caches and a
        /// short scan period force steals and force write-backs).
        #[test]
        fn no_home_write_before_its_undo_is_persisted(
            txs in prop::collection::vec(prop::collection::vec(0u64..96, 1..16), 1..30),
            dp in any::<bool>(),
        ) {
            let scheme = if dp { "morlog-dp" } else { "morlog" };
            let mut s = crate::engine::RunSpec::new(scheme, "vector").unwrap();
            s.threads = 1;
            s.record_history = true;
            for (k, v) in [
                ("cache.l1_size_bytes", "1KB"),
                ("cache.l1_ways", "2"),
                ("cache.l2_size_bytes", "2KB"),
                ("cache.l2_ways", "2"),
                ("cache.llc_size_bytes", "4KB"),
                ("cache.llc_ways", "2"),
            ] {
                s.params.set_str(k, v).unwrap();
            }
            s.params.set_str(&format!("{scheme}.period_cycles"), "1000").unwrap();
            let mut e = crate::engine::Engine::new(s).unwrap();
            // 12 lines one L1-set stride apart (conflicts), 8 words each.
            let base = e.ctx.layout.thread_base(0) + (32 << 20);
            let word = |w: u64| base + (w / 8) * 512 + (w % 8) * 8;
            let mut origin = FxHashMap::default();
            let mut v = 1u64 << 40;
            for (t, words) in txs.iter().enumerate() {
                let ops: Vec<crate::workloads::Op> = words
                    .iter()
                    .map(|&w| {
                        v += 1;
                        origin.insert(v, t as u32 + 1);
                        crate::workloads::Op::Store { addr: word(w), value: v }
                    })
                    .collect();
                e.run_ops(0, &ops).unwrap();
            }
            // Drain the caches: every stored word reaches home (through the
            // scheme's write-back path), so the check is never vacuous even
            // when a short run sees no eviction or force-write-back pass.
            e.finish();
            let layout = e.ctx.layout.clone();
            let log_bytes = e.spec.params.u64(&format!("{scheme}.log_bytes"));
            let ring = Ring::new(&layout, log_bytes);
            let log = &e.ctx.nvm.persist_log;
            let mut undo_persisted = rustc_hash::FxHashSet::default();
            let mut home_writes = 0;
            for ev in log.events() {
                let data = log.data(ev);
                let slots = ring.base + HEADER_BYTES;
                if ev.addr >= slots && ev.addr < slots + ring.slots * ENTRY_BYTES {
                    let seq = (ev.addr - slots) / ENTRY_BYTES;
                    if let Some(r) = decode(&ring, seq, data.try_into().unwrap()) {
                        if r.kind == TYPE_DATA {
                            undo_persisted.insert((r.addr, r.txid));
                        }
                    }
                } else if ev.addr < layout.home_limit {
                    for (i, b) in data.chunks_exact(8).enumerate() {
                        let val = u64::from_le_bytes(b.try_into().unwrap());
                        if let Some(&tx) = origin.get(&val) {
                            home_writes += 1;
                            let a = ev.addr + 8 * i as u64;
                            prop_assert!(
                                undo_persisted.contains(&(a, tx)),
                                "{scheme}: {a:#x} = {val:#x} of tx {tx} home before its undo"
                            );
                        }
                    }
                }
            }
            prop_assert!(home_writes > 0, "no stored word reached home");
        }
    }
}
