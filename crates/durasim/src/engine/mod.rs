//! The engine: builds a machine from parameters, runs one workload instance
//! per core through the core timing model, the caches, the scheme and the
//! memory devices, interleaving cores by simulated time.
//!
//! - `build.rs`: `Engine::new` (checks, layout, `MemCtx`, caches, workloads,
//!   cores, the preloaded initial image);
//! - `footprint.rs`: the run's footprint (from the workload's declared
//!   sizing) against NVM capacity and host memory, before building;
//! - `core.rs`: the in-order and out-of-order core models replaying a
//!   transaction's ops through the caches;
//! - `dram_cache.rs`: the hybrid memory's DRAM cache and `Below`, the stage
//!   between the LLC and the scheme;
//! - `tx.rs`: a core's transactions (begin, end, warm-up, history);
//! - `producer.rs`: the op-stream producer thread (`--gen-thread`);
//! - `checkpoint.rs`: whole-system checkpoints (`Engine::checkpoint`);
//! - `report.rs`: the measured window, metrics, JSON report and the
//!   equivalence and invariant checks;
//! - `write_set.rs`: the transactions' write sets reduced to the workload
//!   characterisation counts (stores, words, lines, repeats, compression);
//! - this file: what to run, the engine's state, the scheduling loop with
//!   its background work, and the end of a run.

mod build;
mod checkpoint;
mod core;
pub mod dram_cache;
pub mod footprint;
mod producer;
mod report;
mod tx;
mod write_set;

use self::core::Core;
use self::dram_cache::{Below, DramCache};
use self::producer::{Running, StopFeed};
use self::report::dirty_cached_lines;
use self::write_set::WriteSetStats;
use crate::cache::Hierarchy;
use crate::config::Params;
use crate::error::Result;
use crate::mem::{SparseImage, BACKGROUND_STREAM};
use crate::schemes::{self, MemCtx, Scheme, SchemeInfo, FWB_KIND};
use crate::stats::Latencies;
use crate::types::{Addr, Cycle};
use crate::workloads::feed::Feed;
use crate::workloads::{self, Workload, WorkloadInfo};
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub scheme: String,
    pub workload: String,
    pub threads: usize,
    /// Total transactions, split evenly over threads.
    pub tx: u64,
    pub seed: u64,
    pub params: Params,
    /// Record committed write sets and the persist log (crash testing).
    pub record_history: bool,
    /// Generate the workload's op streams on a second host thread (no
    /// simulated effect: every metric is the same bit for bit).
    pub gen_thread: GenThread,
}

/// `--gen-thread`: where the workloads' op streams are generated
/// (workloads/feed.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum GenThread {
    /// On a second host thread when a host CPU is spare for it: the host
    /// has two or more per run in progress, and the run is not one of a
    /// parallel grid's.
    #[default]
    Auto,
    /// On a second host thread.
    On,
    /// Inline, on the engine's thread.
    Off,
}

impl RunSpec {
    /// Defaults for a scheme/workload pair (engine + scheme parameters).
    pub fn new(scheme: &str, workload: &str) -> Result<Self> {
        let info = schemes::find(scheme)?;
        workloads::find(workload)?;
        let mut params = Params::defaults(&[info.params]);
        schemes::apply_preset(scheme, &mut params)?;
        Ok(RunSpec {
            scheme: scheme.to_string(),
            workload: workload.to_string(),
            threads: 8,
            tx: 10_000,
            seed: 1,
            params,
            record_history: false,
            gen_thread: GenThread::Auto,
        })
    }
}

/// One committed transaction, as the crash oracle needs it.
#[derive(Clone, Debug)]
pub struct TxRecord {
    /// Range into [`History::writes`].
    pub writes: std::ops::Range<usize>,
    /// Persist events logged when TxEnd returned: a crash at any later point
    /// must preserve this transaction (for schemes durable at commit).
    pub ack_persist_seq: u64,
    /// The first point after which the core's next transaction may have
    /// written (its own writes up to the acknowledgement; the crash oracle
    /// sets it, equal to `ack_persist_seq` in call order).
    pub own_persist_seq: u64,
    pub ack_at: Cycle,
}

/// Committed write sets per thread, in commit order, plus the media image
/// at the start of the timed run.
#[derive(Clone, Default)]
pub struct History {
    pub writes: Vec<(Addr, u64)>,
    pub per_thread: Vec<Vec<TxRecord>>,
    pub initial_media: SparseImage,
    /// Persist-event ranges written by background work (`Scheme::tick`,
    /// `Scheme::finish`): crash points strictly inside one fell mid-GC.
    pub background: Vec<std::ops::Range<u64>>,
    /// Kind of each `background` range (`Scheme::background_kind`).
    pub background_kinds: Vec<&'static str>,
    /// The scheme's recovery-path windows (`PersistLog::path_done`), in
    /// crash-point order once the crash driver has put the log in it.
    pub paths: Vec<crate::mem::PathWindow>,
}

/// Persist-ordering instructions of the software schemes, counted by the
/// core model (reported under `core` in the JSON result).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PersistOpStats {
    pub flushes: u64,
    pub fences: u64,
    /// Cycles between a fence's dispatch and the time every older store
    /// and flush of its core had reached the persistence domain.
    pub fence_stall_cycles: u64,
}

/// A simulated machine running one scheme and one workload.
pub struct Engine {
    pub spec: RunSpec,
    pub scheme_info: &'static SchemeInfo,
    pub workload_info: &'static WorkloadInfo,
    pub params: Params,
    pub ctx: MemCtx,
    pub hier: Hierarchy,
    /// The hybrid memory's DRAM cache (`hybrid.dram_cache_bytes` > 0),
    /// between the LLC and the scheme ([`Below`]).
    pub dram_cache: Option<Box<DramCache>>,
    pub scheme: Box<dyn Scheme>,
    /// The architectural image: the values programs see.
    pub arch: SparseImage,
    pub history: Option<History>,
    workloads: Vec<Box<dyn Workload>>,
    /// The op-stream producer's queues while a run generates on a second
    /// host thread (it then holds `arch` and `workloads`).
    feed: Option<std::sync::Arc<Feed>>,
    /// The last run generated its op streams on a second host thread.
    fed: bool,
    cores: Vec<Core>,
    latencies: Latencies,
    compute_cpi: f64,
    /// `compute_cpi` when it is a whole number (then n instructions take
    /// exactly n * cpi cycles without a float round trip).
    compute_cpi_whole: Option<Cycle>,
    /// `cpu.model = "ooo"`.
    ooo: bool,
    /// `cpu.issue_width` and `cpu.rob_entries` (out-of-order core).
    issue_width: u32,
    rob_entries: u32,
    /// The scheme's `wants_access_hook`, asked once.
    access_hook: bool,
    check_reads: bool,
    /// `run.characterise`: record the transactions' write sets for the
    /// workload-characterisation metrics (`write_set.rs`).
    characterise: bool,
    loads: u64,
    stores: u64,
    /// Flush (clwb) and Fence (sfence) ops executed in the measured window,
    /// and the cycles fences held their core (software schemes).
    pub persist_ops: PersistOpStats,
    /// Cycles a flush takes from the core to the LLC (L1 + L2 lookups);
    /// the LLC adds its own latency before the write-back reaches the
    /// controller (docs/model/processor.md "Flush and fence").
    flush_path_cycles: Cycle,
    run_end: Cycle,
    host_seconds: f64,
    finished_writes: u64,
    /// Transactions committed by all cores so far (progress reports).
    committed_tx: u64,
    /// Cores still in their warm-up.
    warming: usize,
    /// The measured window: its start, the transactions committed and the
    /// loads + stores issued before it, and the dirty lines cached at it.
    window_start: Cycle,
    window_tx0: u64,
    window_ops0: u64,
    window_dirty0: u64,
    /// Controller stats, LLC miss ratio and dirty cached lines at the last
    /// commit (before `finish` drains).
    run_stats: Option<(crate::mem::MemStats, crate::mem::MemStats, f64, u64)>,
    /// `run.transactions`: false = programs without transactions (no
    /// TxBegin/TxEnd reach the scheme).
    tx_mode: bool,
    /// Non-memory instructions executed (compute ops), for IPC.
    compute_instrs: u64,
    /// Dirty lines the LLC sent to memory (evictions, flushes, force
    /// write-backs), in the measured window.
    llc_write_backs: u64,
    /// LLC misses and `llc_write_backs` at the last commit (before
    /// `finish` drains).
    run_llc: Option<(u64, u64)>,
    /// The write sets of the transactions committed in the measured
    /// window (workload characterisation, `write_set.rs`).
    write_set: WriteSetStats,
    /// Whole-system checkpointing (schemes/checkpoint/): the epoch length,
    /// when the next checkpoint is due, and every checkpoint taken (the
    /// crash oracle's per-epoch record).
    epoch: Option<Cycle>,
    next_checkpoint: Cycle,
    /// The scheme overlaps its checkpoints with execution (ThyNVM).
    overlapped: bool,
    pub checkpoints: Vec<crate::schemes::checkpoint::CheckpointRecord>,
    /// Force-write-back scan (`Scheme::force_write_back_cycles`): its
    /// period, when the next pass is due, and its counters.
    fwb_period: Option<Cycle>,
    next_fwb: Cycle,
    pub fwb: FwbStats,
}

/// Force-write-back counters (README "FWB"): passes run, lines written back
/// by them and lines flagged, in the measured window; `passes_total` counts
/// every pass of the run (the schemes' pass numbers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FwbStats {
    pub passes: u64,
    pub lines_written: u64,
    pub lines_flagged: u64,
    pub passes_total: u64,
}

impl Engine {
    /// Run every thread's transactions. `progress(done_tx)` is called now
    /// and then.
    pub fn run(&mut self, progress: &mut dyn FnMut(u64)) -> Result<()> {
        let start = Instant::now();
        let _running = Running::enter();
        let producer = self.start_feed()?;
        // Stops the producer also when a scheme panics mid-run (the panic
        // unwinds past `join_feed`; the thread then ends on its own).
        let _stop = self.feed.clone().map(StopFeed);
        let result = self.run_loop(progress);
        let joined = self.join_feed(producer);
        self.host_seconds = start.elapsed().as_secs_f64();
        result.and(joined)
    }

    /// The scheme takes whole-system checkpoints (schemes/checkpoint/).
    pub fn checkpoints_enabled(&self) -> bool {
        self.epoch.is_some()
    }

    /// Interleave the cores by simulated time until every core has run its
    /// transactions, with the background work (checkpoints, force
    /// write-back passes, the scheme's events) at the times it is due.
    fn run_loop(&mut self, progress: &mut dyn FnMut(u64)) -> Result<()> {
        let mut last_report = 0u64;
        // Each core's time, or `Cycle::MAX` once it has finished: one compact
        // array so picking the next core touches one host cache line.
        let mut ready: Vec<Cycle> = self.cores.iter().map(Core::ready_time).collect();
        loop {
            // Run the earliest core until it passes the next core's time
            // or background work is due.
            let (c, now, mut until) = earliest(&ready);
            if now == Cycle::MAX {
                break;
            }
            // Every later request is stamped at or after `now`: the
            // controllers may issue queued writes up to it, no further.
            self.ctx.nvm.set_time_bound(now);
            self.ctx.dram.set_time_bound(now);
            self.ctx.nvm.persist_log.set_stream(BACKGROUND_STREAM);
            if self.background_step(now, &mut until, &mut ready)? {
                continue;
            }
            self.ctx.nvm.persist_log.set_stream(c as u16);
            self.step_core(c, until)?;
            ready[c] = self.cores[c].ready_time();
            if self.committed_tx - last_report >= 256 {
                last_report = self.committed_tx;
                progress(self.committed_tx);
            }
        }
        self.check_pending_error()?;
        self.ctx.nvm.persist_log.set_stream(BACKGROUND_STREAM);
        progress(self.committed_tx);
        self.ctx.nvm.set_time_bound(Cycle::MAX);
        self.ctx.dram.set_time_bound(Cycle::MAX);
        self.run_end = self.cores.iter().map(|c| c.time).max().unwrap_or(0);
        self.run_stats = Some((
            self.ctx.nvm.stats.clone(),
            self.ctx.dram.stats.clone(),
            self.hier.llc_miss_ratio(),
            dirty_cached_lines(&self.hier),
        ));
        self.run_llc = Some((self.hier.llc.misses, self.llc_write_backs));
        Ok(())
    }

    /// At `now`, run the first background work that is due (a checkpoint,
    /// a force-write-back pass, the scheme's event) and return true (the
    /// cores' `ready` times are updated); when none is, lower `until` to
    /// when the next is due and return false.
    fn background_step(
        &mut self,
        now: Cycle,
        until: &mut Cycle,
        ready: &mut [Cycle],
    ) -> Result<bool> {
        if let Some(epoch) = self.epoch {
            self.link_dram_fills();
            let due = if self.scheme.checkpoint_forced() {
                now
            } else {
                self.next_checkpoint
            };
            if due <= now {
                let end = self.checkpoint(now);
                self.check_pending_error()?;
                self.next_checkpoint = end + epoch;
                for (core, r) in self.cores.iter().zip(ready.iter_mut()) {
                    *r = core.ready_time();
                }
                return Ok(true);
            }
            // A forced checkpoint (allocation failure) starts within a
            // scheduling quantum, also when one core runs alone.
            *until = (*until)
                .min(due)
                .min(now + crate::schemes::checkpoint::FORCED_CHECKPOINT_QUANTUM_CYCLES);
        }
        if let Some(period) = self.fwb_period {
            if self.next_fwb <= now {
                self.force_write_back(now)?;
                self.next_fwb = now + period;
                return Ok(true);
            }
            *until = (*until).min(self.next_fwb);
        }
        if let Some(ev) = self.scheme.next_event_at() {
            if ev <= now {
                let before = self.ctx.nvm.persist_log.count();
                let stall = self.scheme.tick(&mut self.ctx, ev.max(now));
                self.note_background(before);
                self.note_overlapped_commits();
                self.check_pending_error()?;
                if let Some(stall) = stall {
                    for (core, r) in self.cores.iter_mut().zip(ready.iter_mut()) {
                        core.time = core.time.max(stall);
                        *r = core.ready_time();
                    }
                }
                return Ok(true);
            }
            *until = (*until).min(ev);
        }
        Ok(false)
    }

    /// Drain the caches and let the scheme finish its background work so
    /// that home locations hold every committed update.
    pub fn finish(&mut self) {
        let before = self.ctx.nvm.stats.total_written();
        let t = if self.epoch.is_some() {
            // Checkpointing schemes end with a final checkpoint.
            self.checkpoint(self.run_end)
        } else {
            let mut below = Below::new(
                &mut *self.scheme,
                &mut self.ctx,
                &mut self.dram_cache,
                &mut self.llc_write_backs,
            );
            let t = self.hier.drain(self.run_end, &mut below);
            below.flush_dram_cache(t)
        };
        let bg = self.ctx.nvm.persist_log.count();
        let t = self.scheme.finish(&mut self.ctx, t);
        self.note_background(bg);
        self.note_overlapped_commits();
        self.ctx.nvm.drain(t);
        self.finished_writes = self.ctx.nvm.stats.total_written() - before;
    }

    /// End the run with the bad input a scheme found mid-run, if any.
    #[inline]
    fn check_pending_error(&mut self) -> Result<()> {
        if self.ctx.pending_error.is_none() {
            return Ok(());
        }
        self.ctx.pending_error.take().map_or(Ok(()), Err)
    }

    /// Record the persist events background work issued since `before`.
    fn note_background(&mut self, before: u64) {
        let kind = self.scheme.background_kind();
        self.note_background_as(before, kind);
    }

    fn note_background_as(&mut self, before: u64, kind: &'static str) {
        let after = self.ctx.nvm.persist_log.count();
        if let Some(h) = self.history.as_mut() {
            if after > before {
                h.background.push(before..after);
                h.background_kinds.push(kind);
            }
        }
    }

    /// One force-write-back pass at `now` (event-driven: one event per
    /// period): the caches write back the lines dirty since the previous
    /// pass, then the scheme may retire log space. The cores do not stall;
    /// the pass's write-backs compete with their requests in the memory
    /// controller (docs/model/morlog.md).
    fn force_write_back(&mut self, now: Cycle) -> Result<()> {
        let before = self.ctx.nvm.persist_log.count();
        let mut below = Below::new(
            &mut *self.scheme,
            &mut self.ctx,
            &mut self.dram_cache,
            &mut self.llc_write_backs,
        );
        let pass = self.hier.force_write_back_pass(now, &mut below);
        self.fwb.passes_total += 1;
        self.fwb.passes += 1;
        self.fwb.lines_written += pass.written;
        self.fwb.lines_flagged += pass.flagged;
        self.scheme
            .force_write_back_done(&mut self.ctx, self.fwb.passes_total, pass.done);
        self.note_background_as(before, FWB_KIND);
        self.check_pending_error()
    }
}

/// The core with the earliest ready time (the lowest index on ties), that
/// time, and the next core's (`Cycle::MAX` if none).
/// Branch-free selects: cores' times are close, so which one is lowest is
/// unpredictable and a branchy scan mispredicts.
#[inline]
fn earliest(ready: &[Cycle]) -> (usize, Cycle, Cycle) {
    let (mut c, mut now, mut second) = (0, ready[0], Cycle::MAX);
    for (i, &t) in ready.iter().enumerate().skip(1) {
        let lower = t < now;
        second = if lower { now } else { second.min(t) };
        c = if lower { i } else { c };
        now = if lower { t } else { now };
    }
    (c, now, second)
}

/// Run a spec end to end (run + finish) and return the engine.
pub fn run(spec: RunSpec, progress: &mut dyn FnMut(u64)) -> Result<Engine> {
    run_tapped(spec, None, progress)
}

/// [`run`] with the NVM controller's request tap installed (`run
/// --trace-out`): the run writes the stream it sends to memory.
pub fn run_tapped(
    spec: RunSpec,
    tap: Option<Box<dyn crate::mem::RequestTap>>,
    progress: &mut dyn FnMut(u64),
) -> Result<Engine> {
    let mut e = Engine::new(spec)?;
    e.ctx.nvm.request_tap = tap;
    e.run(progress)?;
    e.finish();
    e.check_pending_error()?;
    Ok(e)
}
