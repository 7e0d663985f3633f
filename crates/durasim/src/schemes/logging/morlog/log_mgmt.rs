//! Log management (MorLog §III-F): the head register and its persisted
//! copy, truncation after the engine's force-write-back passes (as fwb's),
//! or the transaction table (`log_management = tx-table`).

use super::MorLog;
use crate::schemes::kit::hw_log::{persist_head, TYPE_COMMIT};
use crate::schemes::MemCtx;
use crate::types::{Addr, CoreId, Cycle};

/// A committed transaction still in the log (force-write-back): its
/// first entry bounds the head until two passes have followed its commit.
#[derive(Clone, Copy, Debug)]
pub(super) struct Committed {
    pub(super) txid: u32,
    pub(super) first_seq: u64,
    pub(super) pass: u64,
}

impl MorLog {
    /// Persist the head register in the other header line, after every
    /// log write so far (`hw_log::persist_head`).
    pub(super) fn write_head(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        self.st.head_persists += 1;
        self.persisted_head = self.head;
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
            self.head,
            after,
        );
        ctx.nvm
            .persist_log
            .path_done(crate::schemes::path::LOG_HEAD, p);
        t
    }

    /// tx-table: free the entries that committed, are persisted (morlog-dp)
    /// and whose counter is 0; move the head past the freed ones in order
    /// (to the oldest live entry's first log entry, or the tail). The head
    /// is written to NVM lazily, once the log behind the persisted head is
    /// three quarters full (recovery from an older head re-applies retired
    /// transactions in commit order: their data are home, so nothing
    /// changes), which keeps the header writes rare.
    pub(super) fn sweep(&mut self, ctx: &mut MemCtx, now: Cycle) {
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
    pub(super) fn make_room(&mut self, ctx: &mut MemCtx, now: Cycle) {
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
    pub(super) fn release_line(&mut self, ctx: &mut MemCtx, line: Addr, t: Cycle) {
        if let Some(tb) = self.table.as_mut() {
            if tb.release(line) {
                self.sweep(ctx, t);
            }
        }
    }

    /// tx-table: the transaction of `core` committed (its commit record
    /// is in the log, or queued behind its entries for morlog-dp).
    pub(super) fn table_commit(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) {
        let slot = self.cores[core].slot as usize;
        if let Some(tb) = self.table.as_mut() {
            tb.entries[slot].committed = true;
            self.sweep(ctx, now);
        }
    }

    pub(super) fn truncate(&mut self, ctx: &mut MemCtx, pass: u64, now: Cycle) -> Cycle {
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
}
