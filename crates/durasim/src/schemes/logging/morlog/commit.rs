//! morlog-dp's delay-persistence commit (MorLog §III-C): the commit record
//! queues behind the transaction's entries with its ulog counter, and a
//! committed transaction is reported durable, in commit order, once its
//! record and its counted redo entries are in the log.

use super::buffers::UrEntry;
use super::fifo::{owner_key, NO_ADDR};
use super::log_mgmt::Committed;
use super::MorLog;
use crate::schemes::kit::hw_log::TYPE_COMMIT;
use crate::schemes::MemCtx;
use crate::types::{CoreId, Cycle};

/// A committed morlog-dp transaction not yet known persisted.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub(super) txid: u32,
    /// Its redo entries still to be written once its commit record is
    /// (`UNKNOWN` until then: the record's counter is taken when it leaves
    /// the undo+redo buffer).
    pub(super) remaining: u64,
    /// The core's transactions committed up to and including it.
    pub(super) count: u64,
}

/// A pending transaction's remaining count before its record is written.
pub(super) const UNKNOWN: u64 = u64::MAX;

impl MorLog {
    /// The ulog counter of (`core`, `txid`) as its commit record leaves
    /// the undo+redo buffer: its redo entries not yet written (buffered, or
    /// to come from its ULog words in the L1s). Recovery counts its redo
    /// entries after the record.
    pub(super) fn ulog_counter(&self, core: CoreId, txid: u32) -> u64 {
        let buffered = self.redo.count_owner(owner_key(core, txid)) as u64;
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
    pub(super) fn persisted_one(
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

    pub(super) fn report(&mut self, ctx: &mut MemCtx, now: Cycle) {
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

    pub(super) fn tx_end_dp(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
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
        self.ur.push_back(
            UrEntry {
                kind: TYPE_COMMIT,
                core,
                txid,
                addr: 0,
                undo: 0,
                redo: 0,
                added: perform,
                last_store: perform,
            },
            NO_ADDR,
            owner_key(core, txid),
        );
        // The core continues at once (a full FIFO stalls only the insert).
        self.st.commit_stall_cycles += done - now;
        self.table_commit(ctx, core, done);
        done
    }
}
