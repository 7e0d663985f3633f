//! Crash-consistency schemes: one module per scheme behind [`Scheme`], and a
//! registry by name. Adding a scheme = its module + one line in [`REGISTRY`].
//!
//! Schemes are grouped by mechanism ([`logging`], [`out_of_place`],
//! [`checkpoint`], [`software`]); a module's name is its scheme's name
//! (underscores for dashes). What several schemes share lives in [`kit`]
//! (or in a family's `mod.rs`), never in another scheme's module. Each
//! registry entry ([`SchemeInfo`]) declares how its recovery is written
//! ([`RecoveryForm`]), which is all crash verification needs to know.

pub mod checkpoint;
pub mod ideal;
pub mod kit;
pub mod logging;
pub mod machines;
pub mod out_of_place;
pub mod software;

use crate::cache::hierarchy::WritebackCause;
use crate::cache::LineExt;
// The event a write-back hook receives (built by the caches).
pub use crate::cache::hierarchy::Writeback;
use crate::config::{Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::{MemRead, MemoryController};
// The address map schemes are built with, and the recovery contracts a
// registry entry states, re-exported as part of the schemes' vocabulary.
pub use crate::mem::Layout;
pub use crate::recovery::{Durability, RecoverFn, RecoveryForm, RecoveryReport};
use crate::types::{Addr, CoreId, Cycle, LineData, Purpose};
use crate::workloads::Op;
pub use machines::{Machine, RunDefaults};

/// Everything below the caches that a scheme drives.
pub struct MemCtx {
    /// The NVM controller: the persistence domain.
    pub nvm: MemoryController,
    /// A volatile DRAM device for hybrid schemes (DRAM caches, tables).
    pub dram: MemoryController,
    pub layout: Layout,
    pub cores: usize,
    pub freq_ghz: f64,
    /// Bad input found while running (a scheme parameter too small for one
    /// transaction of this workload). Hooks return cycles, so a scheme
    /// records the error here ([`MemCtx::input_error`]) and carries on
    /// harmlessly; the engine checks it after every TxEnd and background
    /// tick and ends the run with it (exit code 2).
    pub pending_error: Option<Error>,
    /// Lines a scheme asks the caches to write back (clwb) before the
    /// core that just began a transaction may go on (MorLog's transaction
    /// table when full, docs/model/morlog.md). The engine services it right
    /// after `Scheme::tx_begin` and reports the time through
    /// [`Scheme::write_back_request_done`].
    pub write_back_request: Vec<Addr>,
}

impl MemCtx {
    /// Record bad input found mid-run; the first error wins.
    #[cold]
    pub fn input_error(&mut self, msg: String) {
        if self.pending_error.is_none() {
            self.pending_error = Some(Error::input(msg));
        }
    }
}

/// Advice for a size parameter that one transaction outgrew: the value it
/// needs (the next power of two for power-of-two parameters) or, beyond the
/// parameter's range, to make transactions smaller.
pub(crate) fn raise_advice(specs: &[ParamSpec], key: &str, need: u64) -> String {
    let (need, max) = match specs.iter().find(|s| s.key == key).map(|s| &s.check) {
        Some(Check::PowerOfTwo(min, max)) => (need.max(*min).next_power_of_two(), *max),
        Some(Check::Range(_, max)) => (need, *max as u64),
        _ => (need, u64::MAX),
    };
    if need <= max {
        format!("set {key} to at least {need}")
    } else {
        format!("that needs {need}, above the maximum of {key} ({max}); make transactions smaller (e.g. lower workload.item_bytes)")
    }
}

/// Source of every `<scheme>.mutant` parameter: a planted bug kept as a
/// permanent test-only switch so the oracle's strength is measured on every
/// change (tests/mutants.rs). The CLI refuses any value but `none`.
pub(crate) const MUTANT_SOURCE: &str =
    "test-only mutant (the mutant suite, tests/mutants.rs), never a model setting";

/// Whether a parameter is listed to users (`durasim list params`, the
/// Python `params()`): the hidden test-only `<scheme>.mutant` keys are not.
pub fn is_public_param(key: &str) -> bool {
    !key.ends_with(".mutant")
}

/// Background kind of the force-write-back passes' persist events
/// ([`Scheme::background_kind`] of the schemes the engine's pass truncates;
/// crash tests count points inside them per kind).
pub const FWB_KIND: &str = "force-write-back";

/// Recovery-path names shared by several schemes (`Scheme::recovery_paths`).
pub mod path {
    /// A whole-system checkpoint (the engine's background kind for it).
    pub const CHECKPOINT: &str = "checkpoint";
    /// A checkpoint forced early by a full table, pool or log.
    pub const FORCED_CHECKPOINT: &str = "forced checkpoint";
    /// The persisted head of a circular log moves (truncation).
    pub const LOG_HEAD: &str = "log head persist";
}

/// A store performed in core `core`'s L1: the word at `addr` changed from
/// `old` to `new` at `now` (`in_tx` when inside TxBegin/TxEnd). What
/// [`Scheme::store`] receives; the line's mutable extension is passed
/// beside it.
#[derive(Clone, Copy, Debug)]
pub struct Store {
    pub core: CoreId,
    pub addr: Addr,
    pub old: u64,
    pub new: u64,
    pub in_tx: bool,
    pub now: Cycle,
}

/// Scheme-specific statistics, reported under `scheme_stats`.
pub type SchemeStats = Vec<(&'static str, f64)>;

/// The hooks every scheme in the papers needs. Times are absolute cycles:
/// hooks receive `now` and return the time the core (or request) may proceed.
pub trait Scheme: Send {
    /// TxBegin on `core`; returns when the core may continue.
    fn tx_begin(&mut self, _ctx: &mut MemCtx, _core: CoreId, now: Cycle) -> Cycle {
        now
    }

    /// TxEnd on `core` (after its store buffer drained); returns when TxEnd
    /// completes. Anything the transaction needs to be durable must have been
    /// written into the persistence domain before this returns.
    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle;

    /// A store performed in the L1 ([`Store`]). The scheme may update the
    /// line's extension `ext`. Returns when the store completes (>= now).
    fn store(&mut self, _ctx: &mut MemCtx, ev: Store, _ext: &mut LineExt) -> Cycle {
        ev.now
    }

    /// `line_addr` may soon reach [`Scheme::read_miss`] (it missed an L1)
    /// or [`Scheme::writeback`] (it is the LLC's victim): start fetching
    /// what they look up into the host caches. Host speed only: no
    /// simulated effect.
    #[inline]
    fn prefetch_miss(&self, _line_addr: Addr) {}

    /// LLC miss: fill `out` with the newest data of the line (and `ext`
    /// with the LLC copy's initial state); returns when the data arrives and
    /// whether the line must be installed dirty.
    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut LineExt,
    ) -> (Cycle, bool) {
        (ctx.nvm.read(line_addr, out, Purpose::Demand, now), false)
    }

    /// A dirty line leaves the LLC (or is flushed / drained). Returns the
    /// time the write is persisted.
    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        ctx.nvm
            .write(ev.line_addr, ev.data, Purpose::WriteBack, ev.now)
    }

    /// A dirty line leaves a private L1 (the scheme may reset the line's
    /// L1-only state in `ext`).
    fn l1_evict(
        &mut self,
        _ctx: &mut MemCtx,
        _core: CoreId,
        _line_addr: Addr,
        _data: &LineData,
        _ext: &mut LineExt,
        _now: Cycle,
    ) {
    }

    /// Extra translation cost before a data access (TLB-based schemes).
    /// Only called when [`Scheme::wants_access_hook`] is true.
    fn access(
        &mut self,
        _ctx: &mut MemCtx,
        _core: CoreId,
        _addr: Addr,
        _is_write: bool,
        now: Cycle,
    ) -> Cycle {
        now
    }

    /// Asked once when the engine is built (a constant of the scheme).
    fn wants_access_hook(&self) -> bool {
        false
    }

    /// Software schemes rewrite a transaction's op stream (adding log
    /// stores, flushes, fences). Return false to leave it unchanged.
    fn instrument(&mut self, _core: CoreId, _ops: &[Op], _out: &mut Vec<Op>) -> bool {
        false
    }

    /// Next time background work (GC, checkpoint, truncation) is due.
    fn next_event_at(&self) -> Option<Cycle> {
        None
    }

    /// Run background work due at `now`. Returns `Some(t)` if every core
    /// must stall until `t` (whole-system checkpoints, on-demand GC).
    fn tick(&mut self, _ctx: &mut MemCtx, _now: Cycle) -> Option<Cycle> {
        None
    }

    /// End of run, after the caches were drained: finish background work
    /// so that home locations hold the committed data. Returns the time.
    fn finish(&mut self, _ctx: &mut MemCtx, now: Cycle) -> Cycle {
        now
    }

    /// Kind of the background work the last `tick`/`finish` did
    /// (checkpoint, gc-home, ...): `crashtest` counts crash points per kind.
    fn background_kind(&self) -> &'static str {
        "background"
    }

    /// The recovery paths this scheme declares: the names it gives the
    /// windows it marks on the persist log (`PersistLog::path_start` /
    /// `path_done`: a log wrap, a head persist, a full table, ...) and
    /// those of its background kinds. `crashtest` reports how many crash
    /// points fell in each and warns about a path no point reached.
    fn recovery_paths(&self) -> &'static [&'static str] {
        &[]
    }

    /// Period of the force-write-back scan (FWB, Ogleari et al. HPCA 2018;
    /// MorLog §III-D): every period the engine writes back dirty cache
    /// lines flagged by the previous pass and flags the rest. None = off.
    fn force_write_back_cycles(&self) -> Option<Cycle> {
        None
    }

    /// A force-write-back pass finished (`pass` counts from 1): the scheme
    /// may retire log space of transactions that committed before the
    /// previous pass. Returns when the scheme is done.
    fn force_write_back_done(&mut self, _ctx: &mut MemCtx, _pass: u64, now: Cycle) -> Cycle {
        now
    }

    /// The lines `tx_begin` put in `MemCtx::write_back_request` were
    /// written back from `begin` on; the last persisted at `done` (the
    /// core waits until then).
    fn write_back_request_done(
        &mut self,
        _ctx: &mut MemCtx,
        _core: CoreId,
        _begin: Cycle,
        _done: Cycle,
    ) {
    }

    /// The value a program would read at `addr` from memory now (through
    /// the scheme's indirection), without timing. Used by equivalence checks.
    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        ctx.nvm.peek(addr, buf);
    }

    // --- Hybrid memory (engine/dram_cache.rs): the DRAM cache calls these at
    // page granularity. The defaults go through the line-level hooks, so
    // every scheme runs on the hybrid memory (`ideal` = the paper's Baseline).

    /// A DRAM-cache miss: fill the 4 KiB page at `page_addr` into `out`
    /// (line `first` is needed first). Returns when line `first` arrives.
    fn page_fill(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        page_addr: Addr,
        first: usize,
        out: &mut [u8],
        now: Cycle,
    ) -> Cycle {
        let mut done = now;
        for i in std::iter::once(first).chain((0..out.len() / 64).filter(|&i| i != first)) {
            let mut line = [0u8; 64];
            let mut ext = LineExt::default();
            let (t, _) = self.read_miss(
                ctx,
                core,
                page_addr + i as u64 * 64,
                now,
                &mut line,
                &mut ext,
            );
            out[i * 64..i * 64 + 64].copy_from_slice(&line);
            if i == first {
                done = t;
            }
        }
        done
    }

    /// Dirty lines (bit i = line i) of a DRAM page leave the DRAM cache
    /// (eviction, checkpoint or end of run). Returns when the last persists.
    fn page_writeback(
        &mut self,
        ctx: &mut MemCtx,
        page_addr: Addr,
        dirty: u64,
        data: &[u8],
        now: Cycle,
    ) -> Cycle {
        let mut done = now;
        let mut m = dirty;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let line: &LineData = data[i * 64..i * 64 + 64].try_into().expect("64 B");
            done = done.max(self.writeback(
                ctx,
                Writeback {
                    core: 0,
                    line_addr: page_addr + i as u64 * 64,
                    data: line,
                    ext: &LineExt::default(),
                    cause: WritebackCause::Eviction,
                    now,
                },
            ));
        }
        done
    }

    /// A cached DRAM page became dirty (its first dirty line).
    fn page_dirtied(&mut self, _ctx: &mut MemCtx, _page_addr: Addr, _now: Cycle) {}

    /// A page left the DRAM cache (after its write-back, if dirty).
    fn page_evicted(&mut self, _page_addr: Addr) {}

    /// A clean page entered the DRAM cache without a fill through
    /// [`Self::page_fill`] (the warm start, `hybrid.warm_start`).
    fn page_cached(&mut self, _page_addr: Addr) {}

    // --- Whole-system checkpointing (schemes/checkpoint/).

    /// The epoch length if this scheme checkpoints the whole machine
    /// (asked once when the engine is built).
    fn epoch_cycles(&self) -> Option<Cycle> {
        None
    }

    /// A checkpoint is due now even though the epoch has not ended
    /// (e.g. a derivative page allocation failed).
    fn checkpoint_forced(&self) -> bool {
        false
    }

    /// Steps 3 and 4 of a checkpoint, after the CPU caches and the DRAM
    /// cache were written back: back up `cpu_state` (every core's context,
    /// encoded) and the scheme's metadata to the standby location, switch
    /// to it atomically, start the next epoch. `started` is when the
    /// checkpoint began. Returns when the cores may resume.
    /// Returns when the cores may resume and the persist-log length right
    /// after the switch write (from then on a crash recovers this
    /// checkpoint).
    fn checkpoint(
        &mut self,
        ctx: &mut MemCtx,
        _cpu_state: &[u8],
        _started: Cycle,
        now: Cycle,
    ) -> (Cycle, u64) {
        (now, ctx.nvm.persist_log.count())
    }

    /// The checkpoint overlaps the next epoch's execution (ThyNVM): the
    /// cores resume once the CPU caches are flushed (step 1); the scheme
    /// finishes the checkpoint in the background ([`Scheme::tick`]) and
    /// `checkpoint` may return `u64::MAX` as the commit position, reported
    /// later by [`Scheme::take_committed_checkpoint`]. Asked once.
    fn overlapped_checkpoint(&self) -> bool {
        false
    }

    /// The persist-log position right after the switch write of the
    /// oldest overlapped checkpoint that completed since the last call
    /// (checkpoints complete in order).
    fn take_committed_checkpoint(&mut self) -> Option<u64> {
        None
    }

    fn stats(&self) -> SchemeStats {
        Vec::new()
    }

    fn reset_stats(&mut self) {}
}

/// Registry entry.
pub struct SchemeInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub durability: Durability,
    pub params: &'static [ParamSpec],
    /// NVM bytes the scheme reserves at the top of the address space.
    pub reserved_bytes: fn(&Params) -> u64,
    pub build: fn(&Params, &Layout) -> Result<Box<dyn Scheme>>,
    pub recover: RecoverFn,
    /// How `recover` is written: the fast paths crash verification may
    /// take (a resumed scan, units kept across crash points).
    pub recovery: RecoveryForm,
    /// Whole-system checkpointing schemes ([`Durability::Checkpoint`]):
    /// reads the CPU contexts a recovered image resumes from.
    pub contexts: Option<checkpoint::ReadContextsFn>,
    /// The machine (its paper's preset) and run length the scheme runs
    /// with when the user names neither, and the hardware it needs.
    pub defaults: RunDefaults,
}

pub fn no_reserve(_: &Params) -> u64 {
    0
}

/// Every scheme durasim ships.
pub static REGISTRY: &[&SchemeInfo] = &[
    &ideal::INFO,
    &out_of_place::hoop::INFO,
    &logging::opt_undo::INFO,
    &logging::opt_redo::INFO,
    &logging::lad::INFO,
    &out_of_place::osp::INFO,
    &out_of_place::lsm::INFO,
    &software::pmdk_undo::INFO,
    &software::dudetm::INFO,
    &checkpoint::dpc::INFO,
    &logging::fwb::INFO,
    &logging::fwb::UNSAFE_INFO,
    &logging::redu::INFO,
    &logging::morlog::INFO,
    &logging::morlog::DP_INFO,
    &out_of_place::ehou::INFO,
    &checkpoint::thynvm::INFO,
    &checkpoint::page_overlay::INFO,
    &checkpoint::ckpt_logging::INFO,
    &checkpoint::ckpt_cow::INFO,
    #[cfg(feature = "example-scheme")]
    &logging::example_redo::INFO,
];

/// A named design: a registered scheme with fixed parameter settings (e.g.
/// MorLog's FWB-CRADE = `fwb` with `nvm.encoding=crade`). Accepted wherever
/// a scheme name is (run, compare, crashtest, the Python front) and listed
/// by `durasim list schemes`. Adding one = one line in [`PRESETS`].
pub struct Preset {
    pub name: &'static str,
    /// The registered scheme it runs.
    pub scheme: &'static str,
    /// Settings applied over the defaults and `--config`; a `--set` of the
    /// same key to another value is an input error.
    pub set: &'static [(&'static str, &'static str)],
    pub description: &'static str,
}

/// Named designs. A preset whose scheme is not in [`REGISTRY`] is inactive
/// (hidden everywhere), so the MorLog presets can be listed before `morlog`
/// is merged.
pub static PRESETS: &[Preset] = &[
    Preset { name: "fwb-crade", scheme: "fwb", set: &[("nvm.encoding", "crade")], description: "MorLog's FWB-CRADE (§VI-A): fwb on CRADE-encoded NVM" },
    Preset { name: "fwb-unsafe-crade", scheme: "fwb-unsafe", set: &[("nvm.encoding", "crade")], description: "MorLog's FWB-Unsafe (§VI-A): fwb-unsafe on CRADE-encoded NVM (not crash-consistent)" },
    Preset { name: "fwb-slde", scheme: "fwb", set: &[("nvm.encoding", "slde")], description: "MorLog's FWB-SLDE (§VI-A): fwb on SLDE (each entry's redo kept only where it differs from its undo)" },
    Preset { name: "morlog-crade", scheme: "morlog", set: &[("nvm.encoding", "crade")], description: "MorLog-CRADE (§VI-A): morlog on CRADE-encoded NVM" },
    Preset { name: "morlog-slde", scheme: "morlog", set: &[("nvm.encoding", "slde")], description: "MorLog-SLDE (§VI-A): morlog on SLDE" },
    Preset { name: "morlog-dp-slde", scheme: "morlog-dp", set: &[("nvm.encoding", "slde")], description: "MorLog-DP (§VI-A): morlog-dp on SLDE" },
];

/// The active presets (their scheme is registered).
pub fn presets() -> impl Iterator<Item = &'static Preset> {
    PRESETS
        .iter()
        .filter(|p| REGISTRY.iter().any(|s| s.name == p.scheme))
}

/// The active preset called `name`, if any.
pub fn preset(name: &str) -> Option<&'static Preset> {
    presets().find(|p| p.name == name)
}

/// Every name `--scheme` accepts: the registered schemes, then the presets.
pub fn names() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .map(|s| s.name)
        .chain(presets().map(|p| p.name))
        .collect()
}

/// The registry entry of a scheme or of a preset's scheme.
pub fn find(name: &str) -> Result<&'static SchemeInfo> {
    let base = preset(name).map_or(name, |p| p.scheme);
    REGISTRY
        .iter()
        .copied()
        .find(|s| s.name == base)
        .ok_or_else(|| {
            let valid = names();
            Error::input(format!(
                "unknown scheme '{name}'{}; valid schemes: {}",
                crate::config::did_you_mean(name, &valid),
                valid.join(", ")
            ))
        })
}

/// Apply the settings of preset `name` (nothing for a plain scheme).
pub fn apply_preset(name: &str, p: &mut Params) -> Result<()> {
    if let Some(pr) = preset(name) {
        for (k, v) in pr.set {
            p.set_str(k, v)?;
        }
    }
    Ok(())
}

/// A `--set key=value` that contradicts preset `name` is an input error:
/// the preset names a fixed design.
pub fn check_preset_override(name: &str, key: &str, raw: &str, p: &Params) -> Result<()> {
    let Some(pr) = preset(name) else {
        return Ok(());
    };
    if let Some((k, v)) = pr.set.iter().find(|(k, _)| *k == key) {
        let mut want = p.clone();
        want.set_str(k, v)?;
        let mut got = p.clone();
        got.set_str(k, raw)?;
        if want.get(k) != got.get(k) {
            return Err(Error::input(format!(
                "invalid --set '{key}={raw}': preset '{name}' fixes {k}={v}; run its scheme '{}' with --set {key}={raw} instead",
                pr.scheme
            )));
        }
    }
    Ok(())
}

/// Parameter lists of every scheme (for `list params` and validation).
pub fn all_params() -> Vec<&'static [ParamSpec]> {
    REGISTRY.iter().map(|s| s.params).collect()
}

/// Helper for recovery functions: read a little-endian u64.
pub fn read_u64(img: &dyn MemRead, addr: Addr) -> u64 {
    img.read_u64(addr)
}

/// Test support: run `scheme` on vector with 1 KB items and tiny caches so
/// that evictions happen within a few transactions (history recorded).
#[cfg(test)]
pub(crate) fn small_cache_run(
    scheme: &str,
    threads: usize,
    tx: u64,
    extra: &[(&str, &str)],
) -> crate::engine::Engine {
    let mut s = crate::engine::RunSpec::new(scheme, "vector").unwrap();
    s.threads = threads;
    s.tx = tx;
    s.record_history = true;
    for (k, v) in [
        ("workload.item_bytes", "1024"),
        ("workload.initial_items", "64"),
        ("cache.llc_size_bytes", "4KB"),
        ("cache.llc_ways", "2"),
        ("cache.l2_size_bytes", "2KB"),
        ("cache.l2_ways", "2"),
        ("cache.l1_size_bytes", "1KB"),
        ("cache.l1_ways", "2"),
    ]
    .iter()
    .chain(extra)
    {
        s.params.set_str(k, v).unwrap();
    }
    let mut e = crate::engine::Engine::new(s).unwrap();
    e.run(&mut |_| {}).unwrap();
    e
}
