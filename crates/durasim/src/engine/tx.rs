//! A core's transactions: taking the next op stream (from the workload or
//! the producer thread), recording its write set, TxBegin and TxEnd through
//! the scheme, and the end of the warm-up.

use super::build::footprint_error;
use super::dram_cache::Below;
use super::{Engine, TxRecord};
use crate::cache::hierarchy::WritebackCause;
use crate::error::{Error, Result};
use crate::types::Cycle;
use crate::workloads::{Op, TxCtx};

impl Engine {
    pub(super) fn step_core(&mut self, c: usize, until: Cycle) -> Result<()> {
        loop {
            let paused = if self.ooo {
                self.replay_ooo(c, until)?
            } else {
                self.replay(c, until)?
            };
            if paused {
                return Ok(());
            }
            // The op stream is exhausted: end the transaction, begin the next.
            let core = &mut self.cores[c];
            if core.in_tx {
                // TxEnd is serialising: every earlier op has completed.
                let end = if self.tx_mode {
                    let t = core.quiesce_time();
                    if t > until {
                        // The core stalls until its earlier ops complete.
                        // Other cores are handled up to that time first, so
                        // the scheme sees every core's TxEnd in time order
                        // (shared structures, such as one log ring, are
                        // handed out in the order the hardware would).
                        core.time = t;
                        return Ok(());
                    }
                    let end = self.scheme.tx_end(&mut self.ctx, c, t);
                    if let Some(tap) = self.ctx.nvm.request_tap.as_mut() {
                        tap.tx_end(c, end);
                    }
                    self.check_pending_error()?;
                    let core = &mut self.cores[c];
                    self.latencies.push(end - core.tx_begin_at);
                    core.ooo_restart(end);
                    end
                } else {
                    // A program without transactions: the next operation's
                    // ops follow in the same window, nothing serialises.
                    core.time
                };
                let core = &mut self.cores[c];
                core.writes.close(&mut self.write_set);
                core.in_tx = false;
                core.done_tx += 1;
                self.committed_tx += 1;
                if let Some(h) = self.history.as_mut() {
                    h.per_thread[c].push(TxRecord {
                        writes: core.hist.clone(),
                        ack_persist_seq: self.ctx.nvm.persist_log.count(),
                        own_persist_seq: self.ctx.nvm.persist_log.count(),
                        ack_at: end,
                    });
                }
                let warmed = core.done_tx == core.warm_tx;
                let past = core.time > until;
                if warmed {
                    self.warming -= 1;
                    if self.warming == 0 {
                        self.open_window(end);
                    }
                }
                if past {
                    return Ok(());
                }
            }
            let core = &mut self.cores[c];
            if core.done_tx == core.target_tx {
                return Ok(());
            }
            self.begin_tx(c)?;
        }
    }

    /// Run `ops` on core `c` as one transaction (TxBegin .. TxEnd through
    /// the scheme), starting when the core's earlier work has completed;
    /// returns its cycles. For microbenchmarks of the core model (tests,
    /// calibration): the op stream bypasses the workloads.
    pub fn run_ops(&mut self, c: usize, ops: &[Op]) -> Result<Cycle> {
        let core = &mut self.cores[c];
        let begin = core.quiesce_time().max(core.req_front);
        core.ooo_restart(begin);
        core.ops.clear();
        core.ops.extend_from_slice(ops);
        core.pos = 0;
        core.in_tx = true;
        core.time = self.scheme.tx_begin(&mut self.ctx, c, begin);
        self.service_write_back_request(c);
        let paused = if self.ooo {
            self.replay_ooo(c, Cycle::MAX)?
        } else {
            self.replay(c, Cycle::MAX)?
        };
        debug_assert!(!paused, "nothing runs past Cycle::MAX");
        let core = &mut self.cores[c];
        let t = core.quiesce_time();
        let end = self.scheme.tx_end(&mut self.ctx, c, t);
        self.check_pending_error()?;
        let core = &mut self.cores[c];
        core.writes.close(&mut self.write_set);
        core.ooo_restart(end);
        core.in_tx = false;
        Ok(end - begin)
    }

    pub(super) fn begin_tx(&mut self, c: usize) -> Result<()> {
        let layout = &self.ctx.layout;
        let core = &mut self.cores[c];
        let out_of_memory = if let Some(feed) = self.feed.as_deref() {
            // Generated ahead on the producer thread (workloads/feed.rs).
            let tx = feed
                .take(c, std::mem::take(&mut core.ops))
                .map_err(|_| Error::Internal("the workload generator thread stopped".into()))?;
            core.ops = tx.ops;
            // Checkpointing schemes: the producer wrote a copy (`start_feed`).
            if self.epoch.is_some() {
                for op in &core.ops {
                    if let Op::Store { addr, value } = *op {
                        self.arch.write_word(addr, value);
                    }
                }
            }
            tx.out_of_memory
        } else {
            core.ops.clear();
            let mut ctx = TxCtx::new(
                &mut self.arch,
                &mut core.ops,
                true,
                layout.thread_base(c),
                layout.thread_region_bytes,
            );
            self.workloads[c].run_tx(&mut ctx);
            ctx.out_of_memory
        };
        if out_of_memory {
            return Err(footprint_error(layout));
        }
        // The program's write set, before a software scheme instruments it.
        if let Some(h) = self.history.as_mut() {
            let start = h.writes.len();
            h.writes.extend(core.ops.iter().filter_map(|op| match *op {
                Op::Store { addr, value } => Some((addr, value)),
                _ => None,
            }));
            core.hist = start..h.writes.len();
        }
        core.scratch.clear();
        if self.scheme.instrument(c, &core.ops, &mut core.scratch) {
            std::mem::swap(&mut core.ops, &mut core.scratch);
        }
        core.pos = 0;
        core.in_tx = true;
        core.tx_begin_at = core.time;
        if self.tx_mode {
            if let Some(tap) = self.ctx.nvm.request_tap.as_mut() {
                tap.tx_begin(c, core.time);
            }
            core.time = self.scheme.tx_begin(&mut self.ctx, c, core.time);
            self.service_write_back_request(c);
        }
        Ok(())
    }

    /// Write back the lines the scheme asked for in `tx_begin` (MorLog's
    /// full transaction table), one LLC tag lookup per cycle as the scan;
    /// core `c` waits until the last is persisted.
    fn service_write_back_request(&mut self, c: usize) {
        if self.ctx.write_back_request.is_empty() {
            return;
        }
        let mut lines = std::mem::take(&mut self.ctx.write_back_request);
        let begin = self.cores[c].time;
        let mut done = begin;
        {
            let mut below = Below::new(
                &mut *self.scheme,
                &mut self.ctx,
                &mut self.dram_cache,
                &mut self.llc_write_backs,
            );
            for (i, &line) in lines.iter().enumerate() {
                let t = begin + i as Cycle;
                done = done.max(self.hier.flush_owned(
                    line,
                    t,
                    &mut below,
                    WritebackCause::ForceWriteBack,
                ));
            }
        }
        lines.clear();
        self.ctx.write_back_request = lines;
        self.cores[c].time = done;
        self.scheme
            .write_back_request_done(&mut self.ctx, c, begin, done);
    }
}
