//! The engine: builds a machine from parameters, runs one workload instance
//! per core through the core timing model, the caches, the scheme and the
//! memory devices, interleaving cores by simulated time.

use crate::cache::hierarchy::{HitLevel, MemSide, WritebackCause};
use crate::cache::{Hierarchy, LineExt};
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::{MemRead, MemoryController, SparseImage};
use crate::schemes::{self, Layout, MemCtx, Scheme, SchemeInfo, FWB_KIND};
use crate::stats::{by_purpose, row_hit_ratio, Latencies, Metrics, SimInfo};
use crate::types::{line_of, read_word, word_index, write_word, Addr, CoreId, Cycle, LineData};
use crate::workloads::feed::Feed;
use crate::workloads::{self, Op, TxCtx, Workload, WorkloadArgs, WorkloadInfo};
use std::time::Instant;

/// Stops a feed's producer when dropped.
struct StopFeed(std::sync::Arc<Feed>);

impl Drop for StopFeed {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// `Engine::run`s in progress in this process (`GenThread::Auto`).
static RUNNING_ENGINES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts one run in `RUNNING_ENGINES` while alive.
struct Running;

impl Running {
    fn enter() -> Self {
        RUNNING_ENGINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING_ENGINES.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The op-stream producer thread; it returns the architectural image and
/// the workloads it took.
type FeedThread = std::thread::JoinHandle<(SparseImage, Vec<Box<dyn Workload>>)>;

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
}

struct Core {
    /// In-order core: the issue clock. Out-of-order core: the dispatch
    /// front (the cycle the next op dispatches in, at the earliest).
    time: Cycle,
    ops: Vec<Op>,
    scratch: Vec<Op>,
    pos: usize,
    in_tx: bool,
    tx_begin_at: Cycle,
    done_tx: u64,
    target_tx: u64,
    /// Store buffer: completion times, FIFO ring.
    sb: Vec<Cycle>,
    sb_head: usize,
    sb_len: usize,
    sb_last: Cycle,
    flush_done: Cycle,
    /// This transaction's writes in the history (other cores append
    /// theirs while it runs, so the range is fixed at TxBegin).
    hist: std::ops::Range<usize>,
    /// Out-of-order core: the latest time it issued a memory request at.
    /// Requests may issue after the dispatch front (a load waiting for the
    /// load its address depends on, a store at retirement); the core is
    /// scheduled by the later of the two, so another core's request is
    /// never booked behind one issued far in this core's future.
    req_front: Cycle,
    /// Transactions this core runs before the measured window.
    warm_tx: u64,
    /// Out-of-order window (unused by the in-order core).
    ooo: Window,
}

/// Load dependencies are looked up this many loads back (`Op::Load::dep`
/// is a `u8`).
const DEP_RING: usize = 256;

/// The out-of-order core's window, event-driven: every structure is a ring
/// of the times its entries free up, so an op costs O(1) amortised and
/// nothing is visited per cycle.
struct Window {
    /// Dispatch slots already used in cycle `Core::time` (0..=width).
    disp_used: u32,
    /// In-order retirement: the cycle the last op retired in, and the
    /// retire slots used in it.
    retire_t: Cycle,
    retire_used: u32,
    /// ROB: per in-flight op, its entries and its retire time (FIFO ring,
    /// at most `rob_entries` ops since each holds at least one entry).
    /// (Both rings have a power-of-two length, at least `rob_entries`, so
    /// an index wraps by `rob_mask` instead of a compare and branch.)
    /// (One ring of (retire time, entries) pairs: a push or pop indexes
    /// one array.)
    rob: Vec<(Cycle, u32)>,
    rob_mask: usize,
    rob_head: usize,
    rob_len: usize,
    rob_occ: u32,
    /// Load queue: retire times of the last `load_queue_entries` loads
    /// (slot `lq_i` holds the load whose entry the next load reuses).
    lq: Vec<Cycle>,
    lq_i: usize,
    /// Data-ready times of the last 256 loads, by load sequence number.
    ld_done: Box<[Cycle; DEP_RING]>,
    ld_seq: u8,
    /// L1 MSHRs: line and fill time of each outstanding (or last) miss.
    mshr_line: Vec<Addr>,
    mshr_done: Vec<Cycle>,
    /// The latest fill time in `mshr_done` (no fill in flight after it).
    mshr_max: Cycle,
    /// OR of [`mshr_bit`] over `mshr_line`: a hit whose line's bit is
    /// clear has no MSHR entry, so its merge scan is skipped (exact: a set
    /// bit only means "scan").
    mshr_sig: u64,
    /// Per L1 slot: the MSHR entries that held the slot's line when it was
    /// installed (bit `j` = entry `j`). While a line stays in the L1 no
    /// entry takes it (only a miss of the line allocates one), so the
    /// entries holding it are a subset of these bits: an L1 hit checks
    /// them instead of scanning every MSHR. Empty with more than 64 MSHRs
    /// (then the scan of [`Window::mshr_merge`]).
    slot_mshrs: Vec<u64>,
    /// Whether `mshr_sig` is kept: only [`Window::mshr_merge`] reads it
    /// (hits through a scheme's access hook, or more than 64 MSHRs).
    use_sig: bool,
    /// The line of this core's previous access and the L1 slot it was
    /// found or installed in: consecutive accesses mostly fall in one line
    /// (a node's words), and the next lookup checks that slot first
    /// ([`Cache::lookup_hinted`], exact).
    last_line: Addr,
    last_slot: usize,
}

/// A line's bit in [`Window::mshr_sig`].
#[inline(always)]
fn mshr_bit(line: Addr) -> u64 {
    1 << ((line / crate::types::LINE_BYTES) % 64)
}

impl Window {
    /// A hit at `t` in the functional cache: if the line's fill is still
    /// in flight, its data comes with the fill (returns the latest fill
    /// time of an MSHR entry of `line`, 0 if none). Branch-free scan (10
    /// entries), only when some entry may hold the line.
    #[inline(always)]
    fn mshr_merge(&self, line: Addr, t: Cycle) -> Cycle {
        debug_assert!(self.use_sig, "mshr_sig is kept");
        let mut merge = 0;
        if t < self.mshr_max && self.mshr_sig & mshr_bit(line) != 0 {
            for (&l, &d) in self.mshr_line.iter().zip(self.mshr_done.iter()) {
                merge = merge.max(if l == line { d } else { 0 });
            }
        }
        merge
    }

    /// [`Window::mshr_merge`] for a hit on the line in L1 slot `slot`,
    /// checking only the entries of `slot_mshrs[slot]` (same result: the
    /// others do not hold `line`). The core must install every L1 line
    /// through [`ooo_access_slow`]'s miss path (which sets the bits).
    #[inline(always)]
    fn mshr_merge_slot(&self, slot: usize, line: Addr, t: Cycle) -> Cycle {
        if t >= self.mshr_max {
            return 0;
        }
        let Some(&bits) = self.slot_mshrs.get(slot) else {
            return self.mshr_merge(line, t);
        };
        let (mut merge, mut bits) = (0, bits);
        while bits != 0 {
            let j = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if self.mshr_line[j] == line {
                merge = merge.max(self.mshr_done[j]);
            }
        }
        merge
    }

    /// Entry `i` takes the miss of `line` (filled at `done`), which was
    /// installed in L1 slot `slot`.
    #[inline]
    fn mshr_take(&mut self, i: usize, line: Addr, done: Cycle, slot: usize) {
        self.mshr_line[i] = line;
        self.mshr_done[i] = done;
        self.mshr_max = self.mshr_max.max(done);
        if self.use_sig {
            self.mshr_sig = self.mshr_line.iter().fold(0, |s, &l| s | mshr_bit(l));
        }
        if let Some(m) = self.slot_mshrs.get_mut(slot) {
            let mut same = 0u64;
            for (j, &l) in self.mshr_line.iter().enumerate() {
                if l == line {
                    same |= 1 << j;
                }
            }
            *m = same;
        }
    }

    /// `access_hook`: the scheme sees every access (hits then take
    /// [`Window::mshr_merge`]).
    fn new(rob: usize, lq: usize, mshrs: usize, l1_slots: usize, access_hook: bool) -> Self {
        Window {
            disp_used: 0,
            retire_t: 0,
            retire_used: 0,
            rob: vec![(0, 0); rob.next_power_of_two()],
            rob_mask: rob.next_power_of_two() - 1,
            rob_head: 0,
            rob_len: 0,
            rob_occ: 0,
            lq: vec![0; lq],
            lq_i: 0,
            ld_done: Box::new([0; DEP_RING]),
            ld_seq: 0,
            mshr_line: vec![Addr::MAX; mshrs],
            mshr_done: vec![0; mshrs],
            mshr_max: 0,
            mshr_sig: 0,
            slot_mshrs: if mshrs <= 64 {
                vec![0; l1_slots]
            } else {
                Vec::new()
            },
            use_sig: access_hook || mshrs > 64,
            last_line: Addr::MAX,
            last_slot: 0,
        }
    }
}

impl Core {
    /// When the core runs next; `Cycle::MAX` once all its work is done.
    #[inline]
    fn ready_time(&self) -> Cycle {
        if self.done_tx == self.target_tx && !self.in_tx {
            Cycle::MAX
        } else {
            self.time.max(self.req_front)
        }
    }

    #[inline]
    fn sb_push(&mut self, done: Cycle) {
        let cap = self.sb.len();
        let done = done.max(self.sb_last);
        // Ring index without a division (hot path).
        let mut i = self.sb_head + self.sb_len;
        if i >= cap {
            i -= cap;
        }
        self.sb[i] = done;
        self.sb_len += 1;
        self.sb_last = done;
    }
    #[inline]
    fn sb_wait_slot(&mut self, t: Cycle) -> Cycle {
        let cap = self.sb.len();
        let mut t = t;
        // Retire completed entries; stall on the oldest if still full.
        while self.sb_len > 0 && (self.sb[self.sb_head] <= t || self.sb_len == cap) {
            t = t.max(self.sb[self.sb_head]);
            self.sb_head += 1;
            if self.sb_head == cap {
                self.sb_head = 0;
            }
            self.sb_len -= 1;
        }
        t
    }
    #[inline]
    fn sb_drained(&self) -> Cycle {
        if self.sb_len == 0 {
            0
        } else {
            self.sb_last
        }
    }

    /// When every earlier op has completed: retired, stores drained,
    /// flushes done (Fence and TxEnd are serialising).
    #[inline]
    fn quiesce_time(&self) -> Cycle {
        self.time
            .max(self.sb_drained())
            .max(self.flush_done)
            .max(self.ooo.retire_t)
    }

    /// Restart dispatch at `t` with an empty ROB (after a serialising op:
    /// everything older has retired by `t`).
    #[inline]
    fn ooo_restart(&mut self, t: Cycle) {
        self.time = t;
        let o = &mut self.ooo;
        o.disp_used = 0;
        o.rob_head = 0;
        o.rob_len = 0;
        o.rob_occ = 0;
    }

    /// Make room for an op of `k` ROB entries: dispatch waits until the
    /// oldest ops retire.
    #[inline]
    fn rob_make_room(&mut self, k: u32, rob: u32) {
        let o = &mut self.ooo;
        while o.rob_occ + k > rob {
            let (r, k_old) = o.rob[o.rob_head];
            o.rob_occ -= k_old;
            o.rob_head = (o.rob_head + 1) & o.rob_mask;
            o.rob_len -= 1;
            if r > self.time {
                self.time = r;
                o.disp_used = 0;
            }
        }
    }

    #[inline]
    fn rob_push(&mut self, k: u32, retire: Cycle) {
        let o = &mut self.ooo;
        let i = (o.rob_head + o.rob_len) & o.rob_mask;
        o.rob[i] = (retire, k);
        o.rob_len += 1;
        o.rob_occ += k;
    }

    /// Dispatch `n` instructions, `w` per cycle, none before `earliest`:
    /// the cycles of the first and the last.
    #[inline]
    fn dispatch(&mut self, n: u32, w: u32, earliest: Cycle) -> (Cycle, Cycle) {
        let o = &mut self.ooo;
        if earliest > self.time {
            self.time = earliest;
            o.disp_used = 0;
        }
        if o.disp_used >= w {
            self.time += 1;
            o.disp_used = 0;
        }
        let first = self.time;
        o.disp_used += n;
        if o.disp_used > w {
            let q = slots_past(o.disp_used, w);
            self.time += Cycle::from(q);
            o.disp_used -= q * w;
        }
        (first, self.time)
    }

    /// Retire `n` instructions in order, `w` per cycle, the first no
    /// earlier than `ready`: the cycle the last one retires in.
    #[inline]
    fn retire(&mut self, ready: Cycle, n: u32, w: u32) -> Cycle {
        let o = &mut self.ooo;
        if ready > o.retire_t {
            o.retire_t = ready;
            o.retire_used = 0;
        }
        o.retire_used += n;
        if o.retire_used > w {
            let q = slots_past(o.retire_used, w);
            o.retire_t += Cycle::from(q);
            o.retire_used -= q * w;
        }
        o.retire_t
    }
}

/// Whole cycles that `used > w` slots of width `w` spill past the current
/// one: `(used - 1) / w`, without the host divide in the common case of at
/// most one spilled cycle (one op of one instruction: `used <= w + 1`).
#[inline(always)]
fn slots_past(used: u32, w: u32) -> u32 {
    if used <= 2 * w {
        1
    } else {
        (used - 1) / w
    }
}

/// Scheme + devices as seen from the LLC.
struct Below<'a> {
    scheme: &'a mut dyn Scheme,
    ctx: &'a mut MemCtx,
}

impl MemSide for Below<'_> {
    #[inline]
    fn prefetch_miss(&self, line_addr: Addr) {
        self.scheme.prefetch_miss(line_addr);
    }
    #[inline]
    fn read_miss(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        ext: &mut LineExt,
    ) -> (Cycle, bool) {
        if self.ctx.hybrid.is_some() {
            return crate::mem::dram_cache::read_miss(
                self.scheme,
                self.ctx,
                core,
                line_addr,
                now,
                out,
                ext,
            );
        }
        self.scheme
            .read_miss(self.ctx, core, line_addr, now, out, ext)
    }
    #[inline]
    fn writeback(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        data: &LineData,
        ext: &LineExt,
        cause: WritebackCause,
        now: Cycle,
    ) -> Cycle {
        if self.ctx.hybrid.is_some() {
            return crate::mem::dram_cache::writeback(
                self.scheme,
                self.ctx,
                core,
                line_addr,
                data,
                cause,
                now,
            );
        }
        self.scheme
            .writeback(self.ctx, core, line_addr, data, ext, cause, now)
    }
    #[inline]
    fn l1_evict(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        data: &LineData,
        ext: &mut LineExt,
        now: Cycle,
    ) {
        self.scheme
            .l1_evict(self.ctx, core, line_addr, data, ext, now)
    }
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
    loads: u64,
    stores: u64,
    /// Flush (clwb) and Fence (sfence) ops executed in the measured window,
    /// and the cycles fences held their core (software schemes).
    pub persist_ops: PersistOpStats,
    /// Cycles a flush takes from the core to the LLC (L1 + L2 lookups);
    /// the LLC adds its own latency before the write-back reaches the
    /// controller (docs/MODEL.md "Flush and fence").
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
    pub fn new(spec: RunSpec) -> Result<Self> {
        let scheme_info = schemes::find(&spec.scheme)?;
        Self::with_scheme(spec, scheme_info)
    }

    /// Build with an explicit scheme entry (`spec.scheme` is only a label).
    /// Lets tests crash-check schemes that are not in the shipped registry.
    pub fn with_scheme(spec: RunSpec, scheme_info: &'static SchemeInfo) -> Result<Self> {
        let workload_info = workloads::find(&spec.workload)?;
        let params = spec.params.clone();
        workloads::validate(&params)?;
        if spec.threads == 0 {
            return Err(Error::input(
                "invalid value '0' for 'threads': expected at least 1",
            ));
        }
        if spec.threads > 256 {
            return Err(Error::input(format!(
                "invalid value '{}' for 'threads': expected at most 256",
                spec.threads
            )));
        }
        if spec.tx == 0 {
            return Err(Error::input(
                "invalid value '0' for 'tx': expected at least 1",
            ));
        }
        crate::config::validate_run(
            &params,
            &spec.workload,
            spec.threads,
            spec.tx,
            spec.record_history,
            crate::config::host_memory_available(),
        )?;
        let low = params.u64("mc.write_drain_low");
        let high = params.u64("mc.write_drain_high");
        let cap = params.u64("mc.write_queue_entries");
        if low >= high || high > cap {
            return Err(Error::input(format!(
                "invalid write-drain watermarks: need mc.write_drain_low ({low}) < mc.write_drain_high ({high}) <= mc.write_queue_entries ({cap})"
            )));
        }
        for level in ["l1", "l2", "llc"] {
            let size = params.u64(&format!("cache.{level}_size_bytes"));
            let ways = params.u64(&format!("cache.{level}_ways"));
            let lines = size / crate::types::LINE_BYTES;
            // Sets are indexed by address bits, so their number (lines /
            // ways, lines a power of two) must be a power of two.
            if !ways.min(lines).is_power_of_two() {
                return Err(Error::input(format!(
                    "invalid value '{ways}' for 'cache.{level}_ways': the number of sets (cache.{level}_size_bytes / (ways x 64 B)) must be a power of two; use 1, 2, 4, ... up to {}",
                    lines.min(64)
                )));
            }
        }
        let layout = Layout::new(
            params.u64("nvm.capacity_bytes"),
            (scheme_info.reserved_bytes)(&params),
            spec.threads,
        )?;
        let scheme = (scheme_info.build)(&params, &layout)?;
        let ctx = MemCtx {
            nvm: MemoryController::nvm(&params, spec.record_history),
            dram: MemoryController::dram(&params),
            hybrid: crate::mem::dram_cache::DramCache::from_params(&params)?,
            layout: layout.clone(),
            cores: spec.threads,
            freq_ghz: params.f64("cpu.freq_ghz"),
            pending_error: None,
            write_back_request: Vec::new(),
        };
        let hier = Hierarchy::new(&params, spec.threads);
        let sb_entries = params.usize("cpu.store_buffer_entries");
        let (rob, lq, mshrs) = (
            params.usize("cpu.rob_entries"),
            params.usize("cpu.load_queue_entries"),
            params.usize("cpu.mshrs"),
        );
        let warm_share = params.f64("run.warmup_tx_share");
        let warm_fixed = params.u64("run.warmup_tx_per_thread");
        let mut cores = Vec::new();
        let mut wls = Vec::new();
        for t in 0..spec.threads {
            let target = spec.tx / spec.threads as u64
                + u64::from((t as u64) < spec.tx % spec.threads as u64);
            let args = WorkloadArgs::from_params(
                &params,
                layout.thread_base(t),
                layout.thread_region_bytes,
                spec.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (t as u64 + 1),
                target,
            );
            wls.push(workloads::build(
                workload_info,
                &args,
                params.u64("workload.copies"),
            ));
            cores.push(Core {
                time: 0,
                ops: Vec::with_capacity(4096),
                scratch: Vec::with_capacity(4096),
                pos: 0,
                in_tx: false,
                tx_begin_at: 0,
                done_tx: 0,
                target_tx: target,
                sb: vec![0; sb_entries],
                sb_head: 0,
                sb_len: 0,
                sb_last: 0,
                flush_done: 0,
                hist: 0..0,
                req_front: 0,
                // At least one measured transaction per thread that has any.
                warm_tx: if warm_fixed > 0 {
                    warm_fixed.min(target.saturating_sub(1))
                } else {
                    ((target as f64 * warm_share) as u64).min(target.saturating_sub(1))
                },
                ooo: Window::new(
                    rob,
                    lq,
                    mshrs,
                    hier.l1[t].slot_count(),
                    scheme.wants_access_hook(),
                ),
            });
        }
        let flush_path_cycles =
            params.u64("cache.l1_latency_cycles") + params.u64("cache.l2_latency_cycles");
        let mut e = Engine {
            compute_cpi: params.f64("cpu.compute_cpi"),
            compute_cpi_whole: {
                let cpi = params.f64("cpu.compute_cpi");
                (cpi.fract() == 0.0).then_some(cpi as Cycle)
            },
            ooo: params.str("cpu.model") == "ooo",
            issue_width: params.u64("cpu.issue_width") as u32,
            rob_entries: params.u64("cpu.rob_entries") as u32,
            warming: cores.iter().filter(|c| c.warm_tx > 0).count(),
            window_start: 0,
            window_tx0: 0,
            window_ops0: 0,
            window_dirty0: 0,
            access_hook: scheme.wants_access_hook(),
            check_reads: params.bool("run.check_reads"),
            // Bounded: the vector grows past it, a huge --tx must not make
            // the up-front allocation fail.
            latencies: Latencies::with_capacity(spec.tx.min(1 << 24) as usize),
            history: None,
            spec,
            scheme_info,
            workload_info,
            params,
            ctx,
            hier,
            scheme,
            arch: SparseImage::new(),
            workloads: wls,
            feed: None,
            fed: false,
            cores,
            loads: 0,
            stores: 0,
            persist_ops: PersistOpStats::default(),
            flush_path_cycles,
            run_end: 0,
            host_seconds: 0.0,
            finished_writes: 0,
            committed_tx: 0,
            run_stats: None,
            tx_mode: true,
            compute_instrs: 0,
            epoch: None,
            next_checkpoint: 0,
            overlapped: false,
            checkpoints: Vec::new(),
            fwb_period: None,
            next_fwb: 0,
            fwb: FwbStats::default(),
        };
        e.tx_mode = e.params.bool("run.transactions");
        e.epoch = e.scheme.epoch_cycles();
        e.next_checkpoint = e.epoch.unwrap_or(0);
        e.fwb_period = e.scheme.force_write_back_cycles();
        if let Some(p) = e.fwb_period {
            e.hier.enable_force_write_back();
            e.next_fwb = p;
        }
        e.overlapped = e.scheme.overlapped_checkpoint();
        e.setup()?;
        Ok(e)
    }

    /// Build every thread's initial structure directly in the architectural
    /// image and the NVM media (untimed); this is the crash base image.
    fn setup(&mut self) -> Result<()> {
        let layout = &self.ctx.layout;
        for (t, wl) in self.workloads.iter_mut().enumerate() {
            let mut ops = Vec::new();
            let mut ctx = TxCtx::new(
                &mut self.arch,
                &mut ops,
                false,
                layout.thread_base(t),
                layout.thread_region_bytes,
            );
            wl.setup(&mut ctx);
            if ctx.out_of_memory {
                return Err(footprint_error(layout));
            }
        }
        // The media starts equal to the architectural image: instead of
        // storing the footprint twice, checkpointing schemes' media pages
        // depend on the architectural ones (each line stored once until
        // either side writes it; checkpoints re-share equal lines), other
        // schemes' share the whole blocks copy-on-write (kept in the page
        // caches: measured, dependent pages cost `ideal` 4% more host
        // instructions, docs/MODEL.md).
        for page in self.arch.page_numbers() {
            if self.epoch.is_some() {
                // SAFETY: both images belong to this engine and are used
                // from its thread only.
                unsafe { self.ctx.nvm.preload_linked(page, &mut self.arch) };
            } else {
                self.ctx.nvm.preload_shared(page, &self.arch);
            }
        }
        if self.epoch.is_some() {
            // Checkpointing schemes re-share equal pages at each checkpoint,
            // and link the DRAM cache's slots to the pages they cache.
            self.arch.set_track_written(true);
            self.ctx.nvm.media_mut().set_track_written(true);
            if let Some(dc) = self.ctx.hybrid.as_deref_mut() {
                dc.link_fills = true;
                self.ctx.dram.media_mut().set_track_written(true);
            }
        }
        if self.spec.record_history {
            self.history = Some(History {
                writes: Vec::new(),
                per_thread: vec![Vec::new(); self.spec.threads],
                initial_media: self.ctx.nvm.media().clone(),
                background: Vec::new(),
                background_kinds: Vec::new(),
            });
        }
        Ok(())
    }

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

    /// Does this run generate its op streams on a second host thread?
    /// `auto`: when a host CPU is spare for it. A run on a rayon pool's
    /// thread (`compare`'s grid) or beside other runs of this process
    /// (a Python sweep's threads) has every CPU busy already: there the
    /// producer only adds hand-offs (measured: the golden grid's five
    /// `compare`s took 5-10 % longer with it).
    fn wants_feed(&self) -> bool {
        match self.spec.gen_thread {
            GenThread::Off => false,
            GenThread::On => true,
            GenThread::Auto => {
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
                let running = RUNNING_ENGINES.load(std::sync::atomic::Ordering::Relaxed);
                rayon::current_thread_index().is_none() && 2 * running <= cpus
            }
        }
    }

    /// Start the op-stream producer (workloads/feed.rs) if this run uses
    /// one: it takes the architectural image and the workloads until
    /// [`Self::join_feed`] returns them. A checkpointing scheme's media
    /// pages depend on the engine's image (non-atomically), so there the
    /// producer generates on a copy and the engine applies each taken
    /// transaction's stores to its own image (`begin_tx`): the image goes
    /// through the same states as when generating inline.
    fn start_feed(&mut self) -> Result<Option<FeedThread>> {
        if !self.wants_feed() {
            return Ok(None);
        }
        let remaining: Vec<u64> = self
            .cores
            .iter()
            .map(|c| c.target_tx - c.done_tx - u64::from(c.in_tx))
            .collect();
        let feed = std::sync::Arc::new(Feed::new(remaining));
        let mut arch = if self.epoch.is_some() {
            // A clone holds no dependent page: it may live on another thread.
            self.arch.clone()
        } else {
            std::mem::take(&mut self.arch)
        };
        let mut workloads = std::mem::take(&mut self.workloads);
        let layout = self.ctx.layout.clone();
        let producer = std::sync::Arc::clone(&feed);
        let handle = std::thread::Builder::new()
            .name("durasim-gen".into())
            .spawn(move || {
                producer.produce(
                    &mut arch,
                    &mut workloads,
                    |c| layout.thread_base(c),
                    layout.thread_region_bytes,
                );
                (arch, workloads)
            });
        // Without a thread the moved state went down with the closure:
        // the run cannot go on inline.
        let handle = handle.map_err(|e| {
            Error::Internal(format!(
                "could not start the workload generator thread ({e}); run with --gen-thread off"
            ))
        })?;
        self.feed = Some(feed);
        self.fed = true;
        Ok(Some(handle))
    }

    /// Stop the producer (if the run ended early) and take back the
    /// architectural image and the workloads.
    fn join_feed(&mut self, producer: Option<FeedThread>) -> Result<()> {
        let Some(handle) = producer else {
            return Ok(());
        };
        if let Some(feed) = self.feed.take() {
            feed.stop();
        }
        match handle.join() {
            Ok((arch, workloads)) => {
                // A checkpointing scheme's engine kept its own image up to
                // date (the producer's copy is dropped).
                if self.epoch.is_none() {
                    self.arch = arch;
                }
                self.workloads = workloads;
                Ok(())
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    fn run_loop(&mut self, progress: &mut dyn FnMut(u64)) -> Result<()> {
        let mut last_report = 0u64;
        // Each core's time, or `Cycle::MAX` once it has finished: one compact
        // array so picking the next core touches one host cache line.
        let mut ready: Vec<Cycle> = self.cores.iter().map(Core::ready_time).collect();
        loop {
            // Pick the core with the earliest time (the lowest index on
            // ties); run it until it passes the next core's time or
            // background work is due.
            // Branch-free selects: cores' times are close, so which one is
            // lowest is unpredictable and a branchy scan mispredicts.
            let (mut c, mut now, mut second) = (0, ready[0], Cycle::MAX);
            for (i, &t) in ready.iter().enumerate().skip(1) {
                let lower = t < now;
                second = if lower { now } else { second.min(t) };
                c = if lower { i } else { c };
                now = if lower { t } else { now };
            }
            if now == Cycle::MAX {
                break;
            }
            // Every later request is stamped at or after `now`: the
            // controllers may issue queued writes up to it, no further.
            self.ctx.nvm.set_time_bound(now);
            self.ctx.dram.set_time_bound(now);
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
                    continue;
                }
                // A forced checkpoint (allocation failure) starts within a
                // scheduling quantum, also when one core runs alone.
                second = second
                    .min(due)
                    .min(now + crate::schemes::checkpoint::FORCED_CHECKPOINT_QUANTUM_CYCLES);
            }
            if let Some(period) = self.fwb_period {
                if self.next_fwb <= now {
                    self.force_write_back(now)?;
                    self.next_fwb = now + period;
                    continue;
                }
                second = second.min(self.next_fwb);
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
                    continue;
                }
                second = second.min(ev);
            }
            self.step_core(c, second)?;
            ready[c] = self.cores[c].ready_time();
            if self.committed_tx - last_report >= 256 {
                last_report = self.committed_tx;
                progress(self.committed_tx);
            }
        }
        self.check_pending_error()?;
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
        Ok(())
    }

    /// Drain the caches and let the scheme finish its background work so
    /// that home locations hold every committed update.
    pub fn finish(&mut self) {
        let before = self.ctx.nvm.stats.total_written();
        let t = if self.epoch.is_some() {
            // Checkpointing schemes end with a final checkpoint.
            self.checkpoint(self.run_end)
        } else {
            let mut below = Below {
                scheme: &mut *self.scheme,
                ctx: &mut self.ctx,
            };
            let t = self.hier.drain(self.run_end, &mut below);
            crate::mem::dram_cache::flush_dirty(&mut *self.scheme, &mut self.ctx, t)
        };
        let bg = self.ctx.nvm.persist_log.count();
        let t = self.scheme.finish(&mut self.ctx, t);
        self.note_background(bg);
        self.note_overlapped_commits();
        self.ctx.nvm.drain(t);
        self.finished_writes = self.ctx.nvm.stats.total_written() - before;
    }

    /// Host memory only (issue 15 part 7; no simulated effect): after a
    /// checkpoint, every line of an NVM home page or of a DRAM cache slot
    /// that holds the same bytes as the architectural page there is stored
    /// once (the page depends on the architectural page,
    /// `SparseImage::link_equal_lines`) until either side writes it again.
    /// Only pages written on either side since the last checkpoint are
    /// compared (an unwritten pair was compared then).
    fn share_equal_pages(&mut self) {
        let arch_pages = self.arch.take_written();
        let mut pages = arch_pages.clone();
        pages.extend(self.ctx.nvm.media_mut().take_written());
        pages.sort_unstable();
        pages.dedup();
        let media = self.ctx.nvm.media_mut();
        for p in pages {
            // SAFETY: both images belong to this engine and are used from
            // its thread only.
            unsafe { media.link_equal_lines(p, &mut self.arch, p) };
        }
        let Some(dc) = self.ctx.hybrid.as_deref() else {
            return;
        };
        if !dc.link_fills {
            return;
        }
        let dram = self.ctx.dram.media_mut();
        let mut slots = dram.take_written();
        slots.retain(|&s| s < dc.pages() as u64);
        slots.extend(
            arch_pages
                .iter()
                .filter_map(|&p| dc.find(p).map(|s| s as u64)),
        );
        slots.sort_unstable();
        slots.dedup();
        for s in slots {
            if let Some(p) = dc.tag(s as usize) {
                // SAFETY: as above.
                unsafe { dram.link_equal_lines(s, &mut self.arch, p) };
            }
        }
    }

    /// Host memory only (no simulated effect): DRAM cache slots filled
    /// since the last call are stored as dependents of the architectural
    /// page they cache (the lines that differ are those newer in the CPU
    /// caches). Called between scheduling steps, where no image is borrowed.
    fn link_dram_fills(&mut self) {
        let Some(dc) = self.ctx.hybrid.as_deref_mut() else {
            return;
        };
        if dc.filled.is_empty() {
            return;
        }
        let mut filled = std::mem::take(&mut dc.filled);
        let dram = self.ctx.dram.media_mut();
        for &s in &filled {
            if let Some(p) = dc.tag(s) {
                // SAFETY: both images belong to this engine and are used
                // from its thread only.
                unsafe { dram.link_equal_lines(s as u64, &mut self.arch, p) };
            }
        }
        filled.clear();
        dc.filled = filled;
    }

    /// A whole-system checkpoint starting at `t` (every core stalls): the
    /// four steps of the dual-page checkpointing paper §4.5.2. Returns when
    /// the cores resume.
    fn checkpoint(&mut self, t: Cycle) -> Cycle {
        use crate::schemes::checkpoint::{encode_contexts, CheckpointRecord, CoreContext};
        let before = self.ctx.nvm.persist_log.count();
        let contexts: Vec<CoreContext> = self
            .cores
            .iter()
            .map(|c| CoreContext::capture(c.done_tx, c.in_tx, &c.ops[..c.pos]))
            .collect();
        let state = encode_contexts(&contexts);
        // 1. Dirty CPU cache lines to the DRAM cache (or the scheme).
        let mut below = Below {
            scheme: &mut *self.scheme,
            ctx: &mut self.ctx,
        };
        let t1 = self.hier.drain(t, &mut below);
        // 2. Dirty DRAM pages to NVM.
        let t2 = crate::mem::dram_cache::flush_dirty(&mut *self.scheme, &mut self.ctx, t1);
        // 3. + 4. Back up CPU state and metadata, switch atomically.
        let (end, committed_seq) = self.scheme.checkpoint(&mut self.ctx, &state, t, t2);
        self.share_equal_pages();
        self.note_background(before);
        // An overlapped scheme may have completed the previous checkpoint
        // first; this one may still be pending (`u64::MAX`).
        self.note_overlapped_commits();
        self.checkpoints.push(CheckpointRecord {
            committed_seq,
            contexts,
        });
        // Overlapped: the cores resume after step 1, or when the scheme
        // says (it returns `t` unless an earlier checkpoint held it up);
        // its writes of steps 2-4 queue in the controllers behind them.
        let end = if self.overlapped { t1.max(end) } else { end };
        for core in &mut self.cores {
            core.time = core.time.max(end);
        }
        end
    }

    /// Record the commit positions of overlapped checkpoints that the
    /// scheme completed in the background (oldest pending record first).
    fn note_overlapped_commits(&mut self) {
        while let Some(seq) = self.scheme.take_committed_checkpoint() {
            if let Some(r) = self
                .checkpoints
                .iter_mut()
                .find(|r| r.committed_seq == u64::MAX)
            {
                r.committed_seq = seq;
            }
        }
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
    /// controller (docs/MODEL.md "FWB and force write-back").
    fn force_write_back(&mut self, now: Cycle) -> Result<()> {
        let before = self.ctx.nvm.persist_log.count();
        let mut below = Below {
            scheme: &mut *self.scheme,
            ctx: &mut self.ctx,
        };
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

    fn step_core(&mut self, c: usize, until: Cycle) -> Result<()> {
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
                core.in_tx = false;
                core.done_tx += 1;
                self.committed_tx += 1;
                if let Some(h) = self.history.as_mut() {
                    h.per_thread[c].push(TxRecord {
                        writes: core.hist.clone(),
                        ack_persist_seq: self.ctx.nvm.persist_log.count(),
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

    /// Replay core `c`'s remaining ops until its time passes `until`
    /// (returns true) or its op stream is exhausted (false). Borrows the
    /// core once and the machine parts by field, so the per-op path does
    /// not re-index `self.cores`.
    #[inline]
    fn replay(&mut self, c: usize, until: Cycle) -> Result<bool> {
        let core = &mut self.cores[c];
        let hier = &mut self.hier;
        let scheme = &mut *self.scheme;
        let ctx = &mut self.ctx;
        let access_hook = self.access_hook;
        while let Some(&op) = core.ops.get(core.pos) {
            core.pos += 1;
            match op {
                Op::Load { addr, value, .. } => {
                    self.loads += 1;
                    let (done, slot, _) =
                        mem_access(hier, scheme, ctx, access_hook, c, addr, false, core.time);
                    if self.check_reads {
                        let got = read_word(hier.l1_data(c, slot), word_index(addr));
                        if got != value {
                            return Err(Error::Internal(format!(
                                "read-path check failed: core {c} load {addr:#x} returned {got:#x}, architectural value {value:#x} (scheme {})",
                                self.spec.scheme
                            )));
                        }
                    }
                    core.time = done;
                }
                Op::Store { addr, value } => {
                    self.stores += 1;
                    let t = core.sb_wait_slot(core.time);
                    core.time = t;
                    let (done, slot, _) =
                        mem_access(hier, scheme, ctx, access_hook, c, addr, true, t);
                    let done = write_l1(hier, scheme, ctx, c, slot, addr, value, core.in_tx, done);
                    core.sb_push(done);
                    core.time = t + 1;
                }
                Op::Compute { n } => {
                    self.compute_instrs += u64::from(n);
                    core.time += match self.compute_cpi_whole {
                        Some(cpi) => Cycle::from(n) * cpi,
                        None => (n as f64 * self.compute_cpi).ceil() as Cycle,
                    };
                }
                Op::Flush { addr } => {
                    // clwb leaves after the older stores (TSO order) and
                    // walks L1 and L2 before the LLC writes the line back;
                    // the core goes on (it waits only at a fence).
                    let t = core.time.max(core.sb_drained()) + self.flush_path_cycles;
                    let mut below = Below { scheme, ctx };
                    let done = hier.flush(c, line_of(addr), t, &mut below);
                    core.flush_done = core.flush_done.max(done);
                    self.persist_ops.flushes += 1;
                    core.time += 1;
                }
                Op::Fence => {
                    // sfence: every older store has left the store buffer
                    // and every older clwb was accepted by the controller.
                    let t = core.time.max(core.sb_drained()).max(core.flush_done);
                    self.persist_ops.fences += 1;
                    self.persist_ops.fence_stall_cycles += t - core.time;
                    core.time = t;
                }
            }
            if core.time > until {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The out-of-order core: replay core `c`'s ops until its dispatch
    /// front passes `until` (true) or the op stream is exhausted (false).
    /// Ops are processed in program order, each given its dispatch, issue,
    /// completion and retire times at once (no per-cycle work): dispatch
    /// `issue_width` per cycle into a ROB of `rob_entries`; a load issues
    /// at dispatch, or when the load its address depends on has its data,
    /// or when an L1 MSHR is free; retirement is in order, `issue_width`
    /// per cycle; a store writes the L1 after it retires (TSO). Memory
    /// requests may thus be issued after the dispatch front, by at most
    /// the ROB's worth of latency (docs/MODEL.md "Processor").
    fn replay_ooo(&mut self, c: usize, until: Cycle) -> Result<bool> {
        let core = &mut self.cores[c];
        let hier = &mut self.hier;
        let scheme = &mut *self.scheme;
        let ctx = &mut self.ctx;
        let access_hook = self.access_hook;
        let (w, rob) = (self.issue_width, self.rob_entries);
        // The op stream is moved out of the core and its cursor kept in a
        // local for the loop (restored on every exit), so an op's fetch
        // does not reload the vector and store the cursor around the
        // loop's calls.
        let ops = std::mem::take(&mut core.ops);
        let mut pos = core.pos;
        let result = 'ops: {
            while let Some(&op) = ops.get(pos) {
                pos += 1;
                match op {
                    Op::Load { addr, value, dep } => {
                        self.loads += 1;
                        core.rob_make_room(1, rob);
                        // The load queue entry of the load `lq.len()` earlier.
                        let lq_free = core.ooo.lq[core.ooo.lq_i];
                        let (d, _) = core.dispatch(1, w, lq_free);
                        let seq = core.ooo.ld_seq;
                        let issue = if dep == 0 {
                            d
                        } else {
                            d.max(core.ooo.ld_done[usize::from(seq.wrapping_sub(dep))])
                        };
                        let (done, slot) =
                            ooo_access(core, hier, scheme, ctx, access_hook, c, addr, false, issue);
                        if self.check_reads {
                            let got = read_word(hier.l1_data(c, slot), word_index(addr));
                            if got != value {
                                break 'ops Err(Error::Internal(format!(
                                "read-path check failed: core {c} load {addr:#x} returned {got:#x}, architectural value {value:#x} (scheme {})",
                                self.spec.scheme
                            )));
                            }
                        }
                        let r = core.retire(done, 1, w);
                        core.rob_push(1, r);
                        let o = &mut core.ooo;
                        o.lq[o.lq_i] = r;
                        o.lq_i += 1;
                        if o.lq_i == o.lq.len() {
                            o.lq_i = 0;
                        }
                        o.ld_done[usize::from(seq)] = done;
                        o.ld_seq = seq.wrapping_add(1);
                    }
                    Op::Store { addr, value } => {
                        self.stores += 1;
                        core.rob_make_room(1, rob);
                        // The store buffer is the store queue: an entry from
                        // dispatch until the write reaches the L1.
                        let sb_free = core.sb_wait_slot(core.time);
                        let (d, _) = core.dispatch(1, w, sb_free);
                        let r = core.retire(d + 1, 1, w);
                        // The write leaves the store queue for the L1 at retirement (TSO).
                        let (done, slot) =
                            ooo_access(core, hier, scheme, ctx, access_hook, c, addr, true, r);
                        let done =
                            write_l1(hier, scheme, ctx, c, slot, addr, value, core.in_tx, done);
                        core.sb_push(done);
                        core.rob_push(1, r);
                    }
                    Op::Compute { n } => {
                        // n independent one-cycle instructions, n ROB entries
                        // (a block larger than the ROB is capped: it streams).
                        let n = n.max(1);
                        self.compute_instrs += u64::from(n);
                        let k = n.min(rob);
                        core.rob_make_room(k, rob);
                        let (first, _) = core.dispatch(n, w, 0);
                        let r = core.retire(first + 1, n, w);
                        core.rob_push(k, r);
                    }
                    Op::Flush { addr } => {
                        core.rob_make_room(1, rob);
                        let (d, _) = core.dispatch(1, w, 0);
                        // clwb is ordered after the older stores, and holds an
                        // L1 fill buffer (MSHR) from issue until the controller
                        // accepts its write-back: with every MSHR busy it waits
                        // for the oldest (docs/MODEL.md "Flush and fence").
                        let o = &mut core.ooo;
                        let (mut free_i, mut free_t) = (0, o.mshr_done[0]);
                        for (i, &dn) in o.mshr_done.iter().enumerate().skip(1) {
                            if dn < free_t {
                                free_t = dn;
                                free_i = i;
                            }
                        }
                        let t = d.max(core.sb_drained()).max(free_t);
                        core.req_front = core.req_front.max(t);
                        let mut below = Below { scheme, ctx };
                        let done =
                            hier.flush(c, line_of(addr), t + self.flush_path_cycles, &mut below);
                        let o = &mut core.ooo;
                        // No line tag: a later load of the (still cached) line
                        // does not wait for the write-back.
                        o.mshr_line[free_i] = Addr::MAX;
                        o.mshr_done[free_i] = done;
                        core.flush_done = core.flush_done.max(done);
                        self.persist_ops.flushes += 1;
                        let r = core.retire(d + 1, 1, w);
                        core.rob_push(1, r);
                    }
                    Op::Fence => {
                        let t = core.quiesce_time();
                        self.persist_ops.fences += 1;
                        self.persist_ops.fence_stall_cycles += t.saturating_sub(core.time);
                        core.ooo_restart(t);
                    }
                }
                if core.time.max(core.req_front) > until {
                    break 'ops Ok(true);
                }
            }
            Ok(false)
        };
        core.ops = ops;
        core.pos = pos;
        result
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
        core.ooo_restart(end);
        core.in_tx = false;
        Ok(end - begin)
    }

    /// Open the measured window at `t` (the last warm-up commit): counters
    /// of the controllers, caches and scheme restart; gauges stay.
    fn open_window(&mut self, t: Cycle) {
        self.window_start = t;
        self.window_tx0 = self.committed_tx;
        self.window_ops0 += self.loads + self.stores;
        self.loads = 0;
        self.stores = 0;
        self.persist_ops = PersistOpStats::default();
        self.compute_instrs = 0;
        self.fwb = FwbStats {
            passes_total: self.fwb.passes_total,
            ..FwbStats::default()
        };
        if let Some(h) = self.ctx.hybrid.as_mut() {
            h.stats = Default::default();
        }
        self.ctx.nvm.reset_stats();
        self.ctx.dram.reset_stats();
        self.hier.reset_stats();
        self.scheme.reset_stats();
        self.latencies.clear();
        self.window_dirty0 = dirty_cached_lines(&self.hier);
    }

    fn begin_tx(&mut self, c: usize) -> Result<()> {
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
            let mut below = Below {
                scheme: &mut *self.scheme,
                ctx: &mut self.ctx,
            };
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

    /// Metrics of the timed run.
    pub fn metrics(&self) -> Metrics {
        let (nvm, dram, llc_miss_ratio, dirty1) = self.run_stats.clone().unwrap_or_else(|| {
            (
                self.ctx.nvm.stats.clone(),
                self.ctx.dram.stats.clone(),
                self.hier.llc_miss_ratio(),
                dirty_cached_lines(&self.hier),
            )
        });
        let committed: u64 = self.cores.iter().map(|c| c.done_tx).sum();
        let measured = committed - self.window_tx0;
        let cycles = self.run_end.saturating_sub(self.window_start).max(1);
        let written = nvm.total_written();
        let dirty_growth =
            (dirty1 as i64 - self.window_dirty0 as i64) * crate::types::LINE_BYTES as i64;
        Metrics {
            committed_tx: committed,
            sim_cycles: self.run_end,
            warmup_tx: self.window_tx0,
            measured_tx: measured,
            window_start_cycle: self.window_start,
            window_cycles: self.run_end.saturating_sub(self.window_start),
            throughput_tx_per_mcycle: measured as f64 * 1e6 / cycles as f64,
            throughput_tx_per_sec: measured as f64 / (cycles as f64 / (self.ctx.freq_ghz * 1e9)),
            critical_path_cycles_mean: self.latencies.mean(),
            critical_path_cycles_p50: self.latencies.percentile(50.0),
            critical_path_cycles_p99: self.latencies.percentile(99.0),
            nvm_bytes_written: written,
            nvm_bytes_read: nvm.total_read(),
            dirty_cached_bytes_growth: dirty_growth,
            write_bytes_per_tx: (written as i64 + dirty_growth) as f64 / measured.max(1) as f64,
            energy_nj: nvm.energy_nj(),
            llc_miss_ratio,
            nvm_bytes_written_by_purpose: by_purpose(&nvm.bytes_written),
            nvm_bytes_read_by_purpose: by_purpose(&nvm.bytes_read),
            nvm_row_hit_ratio: row_hit_ratio(&nvm),
            nvm_write_queue_full_stalls: nvm.write_queue_full_stalls,
            nvm_write_queue_full_stall_cycles: nvm.write_queue_full_stall_cycles,
            nvm_read_latency_cycles_mean: nvm.read_latency_cycles as f64 / nvm.reads.max(1) as f64,
            nvm_drain_writes: nvm.forced_drains,
            nvm_writes_merged: nvm.writes_merged,
            final_drain_bytes_written: self.finished_writes,
            dram_bytes_read: dram.total_read(),
            dram_bytes_written: dram.total_written(),
            loads: self.loads,
            stores: self.stores,
            instructions: self.loads + self.stores + self.compute_instrs,
            ipc: (self.loads + self.stores + self.compute_instrs) as f64 / cycles as f64,
            execution_time_ns: cycles as f64 / self.ctx.freq_ghz,
            dram_cache_hit_ratio: self
                .ctx
                .hybrid
                .as_ref()
                .map_or(0.0, |h| h.stats.hit_ratio()),
            dram_cache_page_fills: self.ctx.hybrid.as_ref().map_or(0, |h| h.stats.page_fills),
            dram_cache_dirty_evictions: self
                .ctx
                .hybrid
                .as_ref()
                .map_or(0, |h| h.stats.dirty_evictions),
            footprint_bytes: self.arch.touched_pages() as u64 * crate::mem::image::PAGE_BYTES,
            read_write_ratio: self.loads as f64 / self.stores.max(1) as f64,
            dram_cache_miss_ratio: self.ctx.hybrid.as_ref().map_or(0.0, |h| {
                let s = &h.stats;
                if s.read_hits + s.read_misses + s.write_hits + s.write_misses == 0 {
                    0.0
                } else {
                    1.0 - s.hit_ratio()
                }
            }),
            memory_read_write_ratio: self.ctx.hybrid.as_ref().map_or(0.0, |h| {
                let s = &h.stats;
                (s.read_hits + s.read_misses) as f64 / (s.write_hits + s.write_misses).max(1) as f64
            }),
        }
    }

    pub fn sim_info(&self) -> SimInfo {
        let ops = self.window_ops0 + self.loads + self.stores;
        SimInfo {
            host_seconds: self.host_seconds,
            sim_mem_ops: ops,
            mem_ops_per_host_second: ops as f64 / self.host_seconds.max(1e-9),
            gen_thread: self.fed,
            version: env!("CARGO_PKG_VERSION"),
        }
    }

    /// The whole result as the CLI's JSON document.
    pub fn report_json(&self) -> serde_json::Value {
        let stats: serde_json::Map<String, serde_json::Value> = self
            .scheme
            .stats()
            .into_iter()
            .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
            .collect();
        let mut doc = serde_json::json!({
            "scheme": self.spec.scheme,
            "workload": self.spec.workload,
            "threads": self.spec.threads,
            "tx": self.spec.tx,
            "seed": self.spec.seed,
            "config": self.params.to_json(),
            "metrics": self.metrics(),
            "scheme_stats": stats,
            "core": {
                "flushes": self.persist_ops.flushes,
                "fences": self.persist_ops.fences,
                "fence_stall_cycles": self.persist_ops.fence_stall_cycles,
            },
            "sim": self.sim_info(),
        });
        if self.fwb_period.is_some() {
            doc["force_write_back"] = serde_json::json!({
                "passes": self.fwb.passes,
                "lines_written": self.fwb.lines_written,
                "lines_flagged": self.fwb.lines_flagged,
            });
        }
        if self.ctx.nvm.cells.is_some() {
            // Data-aware NVM (README "Data-aware NVM"): the measured window.
            let nvm = self
                .run_stats
                .as_ref()
                .map_or(&self.ctx.nvm.stats, |r| &r.0);
            doc["nvm_media"] = nvm.media.to_json();
        }
        if self.ctx.nvm.dimm.is_some() {
            // Optane-like DIMM (mem/optane.rs): the measured window.
            let nvm = self
                .run_stats
                .as_ref()
                .map_or(&self.ctx.nvm.stats, |r| &r.0);
            doc["nvm_dimm"] = nvm.dimm.to_json();
        }
        doc
    }

    /// After [`Engine::finish`]: every byte of program data read through the
    /// scheme equals the architectural image.
    pub fn check_equivalence(&self) -> std::result::Result<(), String> {
        let mut buf = [0u8; 64];
        for page in self.arch.page_numbers() {
            let data = self.arch.page(page).unwrap();
            for (i, chunk) in data.chunks(64).enumerate() {
                let addr = page * crate::mem::image::PAGE_BYTES + i as u64 * 64;
                self.scheme.read_logical(&self.ctx, addr, &mut buf);
                if buf[..] != chunk[..] {
                    let w = (0..8)
                        .find(|&w| buf[w * 8..w * 8 + 8] != chunk[w * 8..w * 8 + 8])
                        .unwrap();
                    return Err(format!(
                        "home image differs at {:#x}: expected {:#018x}, found {:#018x}",
                        addr + w as u64 * 8,
                        u64::from_le_bytes(chunk[w * 8..w * 8 + 8].try_into().unwrap()),
                        u64::from_le_bytes(buf[w * 8..w * 8 + 8].try_into().unwrap())
                    ));
                }
            }
        }
        Ok(())
    }

    /// Run each thread's invariant checker on an image.
    pub fn check_invariants(&self, img: &dyn MemRead) -> std::result::Result<(), String> {
        let ib = self.params.u64("workload.item_bytes");
        for t in 0..self.spec.threads {
            workloads::check_region(
                self.workload_info.check,
                img,
                self.ctx.layout.thread_base(t),
                ib,
            )
            .map_err(|e| format!("thread {t}: {e}"))?;
        }
        Ok(())
    }
}

/// One load or store through the scheme's access hook (if it has one) and
/// the cache hierarchy: (completion time, L1 slot of the line).
#[inline]
#[allow(clippy::too_many_arguments)]
fn mem_access(
    hier: &mut Hierarchy,
    scheme: &mut dyn Scheme,
    ctx: &mut MemCtx,
    access_hook: bool,
    c: CoreId,
    addr: Addr,
    is_write: bool,
    t: Cycle,
) -> (Cycle, usize, HitLevel) {
    let mut t = t;
    if access_hook {
        t = scheme.access(ctx, c, addr, is_write, t);
    }
    let mut below = Below { scheme, ctx };
    hier.access(c, line_of(addr), t, &mut below)
}

/// A store's write of `value` at `addr` into core `c`'s L1 slot `slot`
/// (the line is there since `done`), seen by the scheme: when the store
/// completes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn write_l1(
    hier: &mut Hierarchy,
    scheme: &mut dyn Scheme,
    ctx: &mut MemCtx,
    c: CoreId,
    slot: usize,
    addr: Addr,
    value: u64,
    in_tx: bool,
    done: Cycle,
) -> Cycle {
    let (data, ext) = hier.l1_write(c, slot);
    let w = word_index(addr);
    let old = read_word(data, w);
    write_word(data, w, value);
    scheme.store(ctx, c, addr, old, value, in_tx, ext, done)
}

/// An access of the out-of-order core, issued at `t`, through its L1
/// MSHRs: an access to a line whose miss is still outstanding merges with
/// it (its data arrives with the fill, although the functional cache
/// already holds the line); a new L1 miss needs a free MSHR and waits for
/// the oldest fill when all are busy. (completion time, L1 slot)
/// The L1 hit path without an access hook is inlined into the replay
/// loop; everything else is [`ooo_access_slow`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ooo_access(
    core: &mut Core,
    hier: &mut Hierarchy,
    scheme: &mut dyn Scheme,
    ctx: &mut MemCtx,
    access_hook: bool,
    c: CoreId,
    addr: Addr,
    is_write: bool,
    t: Cycle,
) -> (Cycle, usize) {
    if !access_hook {
        // Without an access hook an L1 hit is `Hierarchy::access`'s first
        // step: one lookup (which also marks the line most recent).
        let line = line_of(addr);
        let l1 = &mut hier.l1[c];
        let o = &mut core.ooo;
        let found = if line == o.last_line {
            l1.lookup_hinted(line, o.last_slot)
        } else {
            l1.lookup(line)
        };
        if let Some(slot) = found {
            l1.hits += 1;
            let done = t + l1.latency;
            core.req_front = core.req_front.max(t);
            o.last_line = line;
            o.last_slot = slot;
            return (done.max(o.mshr_merge_slot(slot, line, t)), slot);
        }
    }
    let (done, slot) = ooo_access_slow(core, hier, scheme, ctx, access_hook, c, addr, is_write, t);
    let o = &mut core.ooo;
    o.last_line = line_of(addr);
    o.last_slot = slot;
    (done, slot)
}

/// [`ooo_access`] except an L1 hit without an access hook.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn ooo_access_slow(
    core: &mut Core,
    hier: &mut Hierarchy,
    scheme: &mut dyn Scheme,
    ctx: &mut MemCtx,
    access_hook: bool,
    c: CoreId,
    addr: Addr,
    is_write: bool,
    t: Cycle,
) -> (Cycle, usize) {
    let line = line_of(addr);
    let o = &mut core.ooo;
    if access_hook && hier.l1[c].find(line).is_some() {
        let merge = o.mshr_merge(line, t);
        core.req_front = core.req_front.max(t);
        let (done, slot, _) = mem_access(hier, scheme, ctx, access_hook, c, addr, is_write, t);
        return (done.max(merge), slot);
    }
    // An L1 miss takes the MSHR that frees first (waiting if all are busy).
    let (mut free_i, mut free_t) = (0, o.mshr_done[0]);
    for (i, &d) in o.mshr_done.iter().enumerate().skip(1) {
        if d < free_t {
            free_t = d;
            free_i = i;
        }
    }
    let t = t.max(free_t);
    core.req_front = core.req_front.max(t);
    let (done, slot, level) = if access_hook {
        mem_access(hier, scheme, ctx, access_hook, c, addr, is_write, t)
    } else {
        // `ooo_access` looked the line up in the L1 and missed.
        let mut below = Below { scheme, ctx };
        hier.access_l1_miss(c, line, t, &mut below)
    };
    if level != HitLevel::L1 {
        o.mshr_take(free_i, line, done, slot);
    }
    (done, slot)
}

/// Lines dirty anywhere in the hierarchy (the LLC includes every private
/// copy; a line is dirty if its LLC, L2 or L1 copy is). Run twice per run.
fn dirty_cached_lines(h: &Hierarchy) -> u64 {
    let mut n = 0;
    for s in h.llc.valid_slots() {
        let dirty = h.llc.is_dirty(s) || {
            let (core, addr) = (h.llc.owner(s) as usize, h.llc.line_addr(s));
            h.l2[core].find(addr).is_some_and(|s2| {
                h.l2[core].is_dirty(s2)
                    || h.l1[core]
                        .find(addr)
                        .is_some_and(|s1| h.l1[core].is_dirty(s1))
            })
        };
        n += u64::from(dirty);
    }
    n
}

fn footprint_error(layout: &Layout) -> Error {
    Error::input(format!(
        "nvm.capacity_bytes={} is smaller than the workload footprint ({} bytes per thread available); raise nvm.capacity_bytes or lower tx/workload.initial_items",
        layout.capacity_bytes, layout.thread_region_bytes
    ))
}

/// Run a spec end to end (run + finish) and return the engine.
pub fn run(spec: RunSpec, progress: &mut dyn FnMut(u64)) -> Result<Engine> {
    run_tapped(spec, None, progress)
}

/// [`run`] with the NVM controller's request tap installed (`run
/// --trace-out`): the run writes the stream it sends to memory.
pub fn run_tapped(
    spec: RunSpec,
    tap: Option<Box<crate::trace::Recorder>>,
    progress: &mut dyn FnMut(u64),
) -> Result<Engine> {
    let mut e = Engine::new(spec)?;
    e.ctx.nvm.request_tap = tap;
    e.run(progress)?;
    e.finish();
    e.check_pending_error()?;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The MSHR entry a miss or flush takes: the one that frees first.
    fn first_free(o: &Window) -> usize {
        let (mut free_i, mut free_t) = (0, o.mshr_done[0]);
        for (i, &d) in o.mshr_done.iter().enumerate().skip(1) {
            if d < free_t {
                free_t = d;
                free_i = i;
            }
        }
        free_i
    }

    proptest! {
        /// The divide-free spill count equals the division it replaces.
        #[test]
        fn slots_past_equals_division(w in 1u32..65, extra in 1u32..100_000) {
            let used = w + extra;
            prop_assert_eq!(slots_past(used, w), (used - 1) / w);
        }

        /// An L1 hit's merge from the slot's MSHR bits equals the scan of
        /// every MSHR, for random misses (lines installed in a
        /// direct-mapped L1 of 8 slots), flushes, back-invalidations and
        /// hits at random times.
        #[test]
        fn mshr_merge_slot_equals_scan(
            mshrs in 1usize..13,
            ops in proptest::collection::vec((0u8..4, 0u64..24, 0u64..2000, 0u64..2000), 1..400),
        ) {
            let slots = 8;
            let mut o = Window::new(16, 8, mshrs, slots, true);
            let mut resident: Vec<Option<Addr>> = vec![None; slots];
            for (kind, li, t, done) in ops {
                let line = li * crate::types::LINE_BYTES;
                let slot = (li as usize) % slots;
                match kind {
                    0 => {
                        let i = first_free(&o);
                        o.mshr_line[i] = Addr::MAX;
                        o.mshr_done[i] = done;
                    }
                    1 => resident[slot] = None,
                    _ => {
                        if resident[slot] == Some(line) {
                            prop_assert_eq!(o.mshr_merge_slot(slot, line, t), o.mshr_merge(line, t));
                        } else {
                            let i = first_free(&o);
                            o.mshr_take(i, line, done, slot);
                            resident[slot] = Some(line);
                        }
                    }
                }
            }
        }
    }
}
