//! The undo+redo and redo FIFOs (MorLog §III-B, §III-D) and the log
//! writes they end in: an undo+redo entry leaves N cycles after its
//! creation (or early, when the FIFO is full or a write-back of its line
//! must wait for it), a redo entry when the FIFO is full or at commit;
//! ULog words of the L1 become redo entries when their line leaves.

use super::fifo::owner_key;
use super::state::{set_word_state, transition, Event, Shadow, WordState};
use super::MorLog;
use crate::cache::LineExt;
use crate::schemes::kit::hw_log::{
    encode, Record, COMMIT_BITS, DP_COUNTER_BITS, ENTRY_BYTES, REDO_ENTRY_BITS, TYPE_COMMIT,
    TYPE_DATA, TYPE_REDO, UR_ENTRY_BITS,
};
use crate::schemes::{raise_advice, MemCtx};
use crate::types::{Addr, CoreId, Cycle, Purpose};

/// A buffered undo+redo entry, or (morlog-dp) a commit record queued behind
/// its transaction's entries.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct UrEntry {
    pub(super) kind: u64,
    pub(super) core: CoreId,
    pub(super) txid: u32,
    pub(super) addr: Addr,
    pub(super) undo: u64,
    /// Redo word; the ulog counter in a commit record.
    pub(super) redo: u64,
    pub(super) added: Cycle,
    pub(super) last_store: Cycle,
}

/// A buffered redo entry.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RedoEntry {
    pub(super) core: CoreId,
    pub(super) txid: u32,
    pub(super) addr: Addr,
    pub(super) redo: u64,
}

impl MorLog {
    /// Append a record to the log at `now`; returns when it is persisted.
    pub(super) fn append(&mut self, ctx: &mut MemCtx, r: &Record, now: Cycle) -> Cycle {
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
        // MorLog §III-B: the undo+redo and redo buffers are FIFOs written
        // to the log ring in slot order; an entry due early (a write-back
        // that waited for its line's last store) is not overtaken by a
        // later slot written at an earlier time, or a crash would keep a
        // later slot (a commit record) without the entries before it.
        let now = now.max(self.log_written_at);
        self.log_written_at = now;
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
                let at = self
                    .line_logged_at
                    .entry(crate::types::line_of(r.addr))
                    .or_insert(t);
                *at = (*at).max(t);
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

    pub(super) fn pop_ur(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
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

    pub(super) fn pop_redo(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
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
    pub(super) fn drain_due(&mut self, ctx: &mut MemCtx, t: Cycle) {
        while let Some(e) = self.ur.front() {
            let due = e.added + self.delay;
            if due > t {
                break;
            }
            self.pop_ur(ctx, due);
        }
    }

    pub(super) fn flush_ur_through(
        &mut self,
        ctx: &mut MemCtx,
        now: Cycle,
        pick: impl Fn(&UrEntry) -> bool,
    ) -> Cycle {
        let mut t = now;
        if let Some(i) = self.ur.rposition(pick) {
            for _ in 0..=i {
                t = t.max(self.pop_ur(ctx, now));
            }
        }
        t
    }

    pub(super) fn flush_redo_through(
        &mut self,
        ctx: &mut MemCtx,
        now: Cycle,
        pick: impl Fn(&RedoEntry) -> bool,
    ) -> Cycle {
        let mut t = now;
        if let Some(i) = self.redo.rposition(pick) {
            for _ in 0..=i {
                t = t.max(self.pop_redo(ctx, now));
            }
        }
        t
    }

    /// A new redo entry (the oldest leaves early if the FIFO is full).
    /// Returns when a forced write finished (`now` if none).
    pub(super) fn push_redo(&mut self, ctx: &mut MemCtx, e: RedoEntry, now: Cycle) -> Cycle {
        let owner = owner_key(e.core, e.txid);
        if let Some(i) = self.redo.newest(e.addr, owner) {
            // Same word, same transaction: the newer redo replaces it.
            self.redo.get_mut(i).redo = e.redo;
            self.st.redo_coalesced += 1;
            return now;
        }
        self.st.redo_created += 1;
        let mut t = now;
        if self.redo.len() >= self.redo_cap {
            self.st.redo_early += 1;
            t = self.pop_redo(ctx, now);
        }
        self.redo.push_back(e, e.addr, owner);
        t
    }

    /// The ULog words of `core`'s shadowed line become redo entries.
    pub(super) fn shadow_to_redo(
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

    /// Words of the line whose undo+redo entry left the buffer: Dirty →
    /// URLog (the hardware transition happens when the entry leaves; the
    /// state is only observed at the line's next event, so it is applied
    /// then).
    pub(super) fn settle(&self, ext: &mut LineExt, line: Addr) {
        let dirty = ext.word_mask & !ext.word_mask2;
        if dirty == 0 {
            return;
        }
        // The line's words with an entry still buffered: one pass over the
        // FIFO for all of them.
        let buffered = self
            .ur
            .words_of(line, owner_key(ext.tid as usize, ext.txid));
        let mut persisted = dirty & !buffered;
        while persisted != 0 {
            let w = persisted.trailing_zeros() as usize;
            persisted &= persisted - 1;
            let (s, _) = transition(WordState::Dirty, Event::UrPersisted);
            set_word_state(ext, w, s);
        }
    }
}
