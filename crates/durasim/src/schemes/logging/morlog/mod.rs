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
//! - Deviation (docs/model/morlog.md): the paper also discards a buffered
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

//!
//! Files: `params` (both variants' parameters), `state` (Fig. 8 word
//! states in the L1 extension), `buffers` (the two FIFOs and the log
//! writes), `commit` (morlog-dp's delay-persistence commit), `log_mgmt`
//! (head, truncation, transaction table), `recovery` (the resumable scan).

pub mod buffers;
pub mod commit;
mod fifo;
pub mod log_mgmt;
pub mod params;
pub mod recovery;
pub mod state;
#[cfg(test)]
mod tests;

use crate::cache::LineExt;
use crate::config::Params;
use crate::error::{Error, Result};
use crate::schemes::kit::hw_log::{Record, Ring, TYPE_COMMIT, TYPE_DATA};
use crate::schemes::logging::txtable::TxTable;
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, Scheme, SchemeInfo, SchemeStats, Store, Writeback,
};
use crate::types::{line_of, Addr, CoreId, Cycle, LineData, Purpose};
use buffers::{RedoEntry, UrEntry};
use commit::Pending;
use fifo::{owner_key, Fifo};
use log_mgmt::Committed;
use params::{reserved_bytes, reserved_bytes_dp, Keys, DP, K};
pub use params::{ur_delay_cycles, DP_PARAMS, PARAMS};
use recovery::{new_scan, new_scan_dp, recover, recover_dp};
use rustc_hash::FxHashMap;
use state::{set_word_state, transition, word_state, Action, Event, Shadow, WordState};
use std::collections::VecDeque;

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
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::MORLOG),
        tx: 40_000,
        reaches: "force-write-back every 3 M cycles: 3 passes in fwb's measured window on btree",
        needs: None,
    },
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
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::MORLOG),
        tx: 40_000,
        reaches: "force-write-back every 3 M cycles: 3 passes in fwb's measured window on btree",
        needs: None,
    },
};

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
    ur: Fifo<UrEntry>,
    redo: Fifo<RedoEntry, true>,
    /// N: cycles an undo+redo entry stays buffered.
    delay: Cycle,
    traversal_cycles: Cycle,
    period: Cycle,
    discard_on_writeback: bool,
    no_order: bool,
    /// Test-only: the head does not wait for `data_durable_at`.
    head_first: bool,
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
    /// When the last entry left for the log: the buffers drain into the
    /// ring in slot order, so no entry is written earlier than the one
    /// before it.
    log_written_at: Cycle,
    /// Per line: when the newest undo+redo entry already written for it
    /// persisted. An entry can leave the buffer (at its due time) ahead of
    /// the time the engine then writes its line back; the data still wait
    /// for it (§III-B: a line is written back only after its entries).
    line_logged_at: FxHashMap<Addr, Cycle>,
    /// Latest acceptance of a data write-back so far: the head moves past
    /// a transaction only once the write-backs that took its data home,
    /// issued before, have persisted.
    data_durable_at: Cycle,
    cores: Vec<CoreState>,
    /// morlog-dp: committed transactions (core) in commit order, not yet
    /// reported durable.
    order: VecDeque<CoreId>,
    /// The counter of the commit record being written.
    counter_at_record: u64,
    st: Stats,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(MorLog::new(p, layout, false)?))
}
fn build_dp(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(MorLog::new(p, layout, true)?))
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
            let mut tb = TxTable::new(n, llc_lines);
            tb.mutant_newest_anchor = mutant == "anchor-newest-writer";
            Some(tb)
        } else {
            None
        };
        let delay = ur_delay_cycles(p);
        Ok(MorLog {
            dp,
            ring: Ring::new(layout, p.u64(k.log_bytes)),
            ur_cap,
            redo_cap,
            ur: Fifo::with_capacity(ur_cap),
            redo: Fifo::with_capacity(redo_cap),
            delay,
            traversal_cycles: delay + 1,
            period: p.u64(k.period),
            discard_on_writeback: mutant == "discard-on-writeback",
            no_order: mutant == "no-order",
            head_first: mutant == "head-before-writebacks",
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
            log_written_at: 0,
            line_logged_at: FxHashMap::default(),
            data_durable_at: 0,
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
                if self.cores[owner].shadow.is_empty() {
                    continue;
                }
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
        let owner = owner_key(core, txid);
        if self.redo.any_of_line_owner(line, owner) {
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
        let buffered = self.ur.newest(waddr, owner);
        match (action, buffered) {
            (Action::CreateUr | Action::Coalesce, Some(i)) => {
                let e = self.ur.get_mut(i);
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
                self.ur.push_back(
                    UrEntry {
                        kind: TYPE_DATA,
                        core,
                        txid,
                        addr: waddr,
                        undo: old,
                        redo: new,
                        added: perform,
                        last_store: perform,
                    },
                    waddr,
                    owner,
                );
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
        // Most cores hold no ULog words: skip the map probe.
        let shadow = &mut self.cores[owner].shadow;
        if let Some(sh) = (!shadow.is_empty())
            .then(|| shadow.remove(&line_addr))
            .flatten()
        {
            debug_assert!((0..8).all(|w| sh.mask >> w & 1 == 0
                || u64::from_le_bytes(data[w * 8..w * 8 + 8].try_into().unwrap()) == sh.vals[w]));
            let (n, _) = self.shadow_to_redo(ctx, owner, line_addr, sh, now);
            self.st.redo_on_l1_evict += n;
        }
        // The L1 extension leaves with the line: Fig. 8 takes every word
        // to Clean on Leave, whatever its state.
        debug_assert!(
            (0..8).all(|w| { transition(word_state(ext, w), Event::Leave).0 == WordState::Clean })
        );
        ext.word_mask = 0;
        ext.word_mask2 = 0;
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
            // Commit records have no line (NO_ADDR): the data entries only.
            if let Some(s) = self.ur.max_of_line(line_addr, |e| e.last_store) {
                t = t.max(s + self.traversal_cycles);
            }
        }
        self.drain_due(ctx, t);
        if !self.no_order && self.ur.any_of_line(line_addr) {
            self.st.order_waits += 1;
            t = self.flush_ur_through(ctx, t, |e| {
                e.kind == TYPE_DATA && line_of(e.addr) == line_addr
            });
        }
        if self.redo.any_of_line(line_addr) {
            if self.discard_on_writeback {
                let before = self.redo.len();
                self.redo.retain(|e| line_of(e.addr) != line_addr);
                self.st.redo_discarded += (before - self.redo.len()) as u64;
            } else {
                self.st.redo_kept_on_writeback += 1;
            }
        }
        if let Some(at) = self.line_logged_at.remove(&line_addr) {
            if !self.no_order {
                t = t.max(at);
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
        self.data_durable_at = self.data_durable_at.max(done);
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

    fn recovery_paths(&self) -> &'static [&'static str] {
        use crate::schemes::path::LOG_HEAD;
        // The tx-table keeps no force-write-back pass: its head moves as
        // transactions retire and is persisted lazily.
        if self.table.is_some() {
            &[LOG_HEAD]
        } else {
            &[crate::schemes::FWB_KIND, LOG_HEAD]
        }
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
