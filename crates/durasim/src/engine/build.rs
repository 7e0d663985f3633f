//! Building an engine: the checks of a run's parameters, the address
//! layout, the memory system, caches, workloads and cores, and the initial
//! structures preloaded into the architectural image and the NVM media.

use super::core::{Core, Window};
use super::dram_cache::DramCache;
use super::footprint;
use super::{Engine, FwbStats, History, PersistOpStats, RunSpec};
use crate::cache::Hierarchy;
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::{MemoryController, SparseImage};
use crate::schemes::{self, Layout, MemCtx, SchemeInfo};
use crate::stats::Latencies;
use crate::types::Cycle;
use crate::workloads::{self, TxCtx, Workload, WorkloadArgs, WorkloadInfo};

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
        check_run(&spec, &params, workload_info)?;
        let layout = Layout::new(
            params.u64("nvm.capacity_bytes"),
            (scheme_info.reserved_bytes)(&params),
            spec.threads,
        )?;
        let scheme = (scheme_info.build)(&params, &layout)?;
        let ctx = MemCtx {
            nvm: MemoryController::nvm(&params, spec.record_history),
            dram: MemoryController::dram(&params),
            layout: layout.clone(),
            cores: spec.threads,
            freq_ghz: params.f64("cpu.freq_ghz"),
            pending_error: None,
            write_back_request: Vec::new(),
        };
        let dram_cache = DramCache::from_params(&params)?;
        let hier = Hierarchy::new(&params, spec.threads);
        let access_hook = scheme.wants_access_hook();
        let (cores, wls) =
            build_threads(&spec, &params, workload_info, &layout, &hier, access_hook);
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
            access_hook,
            check_reads: params.bool("run.check_reads"),
            characterise: params.bool("run.characterise"),
            // Bounded: the vector grows past it, a huge --tx must not make
            // the up-front allocation fail.
            latencies: Latencies::with_capacity(spec.tx.min(1 << 24) as usize),
            history: None,
            spec,
            scheme_info,
            workload_info,
            params,
            ctx,
            dram_cache,
            hier,
            scheme,
            arch: SparseImage::new(),
            workloads: wls,
            feed: None,
            fed: false,
            cores,
            llc_write_backs: 0,
            run_llc: None,
            write_set: Default::default(),
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
        // instructions, docs/model/images.md).
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
            if let Some(dc) = self.dram_cache.as_deref_mut() {
                dc.link_fills = true;
                self.ctx.dram.media_mut().set_track_written(true);
            }
        }
        if let Some(dc) = self.dram_cache.as_deref_mut() {
            if self.params.bool("hybrid.warm_start") {
                for page in self.arch.page_numbers() {
                    dc.install_clean(self.scheme.as_mut(), &mut self.ctx, &self.arch, page);
                }
            }
        }
        if self.spec.record_history {
            self.history = Some(History {
                writes: Vec::new(),
                per_thread: vec![Vec::new(); self.spec.threads],
                initial_media: self.ctx.nvm.media().clone(),
                background: Vec::new(),
                background_kinds: Vec::new(),
                paths: Vec::new(),
            });
        }
        Ok(())
    }
}

pub(super) fn footprint_error(layout: &Layout) -> Error {
    Error::input(format!(
        "nvm.capacity_bytes={} is smaller than the workload footprint ({} bytes per thread available); raise nvm.capacity_bytes or lower tx/workload.initial_items",
        layout.capacity_bytes, layout.thread_region_bytes
    ))
}

/// The checks of a run before anything is built (in this order, so the
/// first error a bad input meets stays the same).
fn check_run(spec: &RunSpec, params: &Params, workload_info: &WorkloadInfo) -> Result<()> {
    workloads::validate(params)?;
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
    crate::config::validate_run(params, spec.tx, spec.record_history)?;
    footprint::check(
        params,
        &workload_info.sizing,
        &spec.scheme,
        spec.threads,
        spec.tx,
        spec.record_history,
        footprint::host_memory_available(),
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
    Ok(())
}

/// Every thread's workload instance and core: the run's transactions split
/// evenly (the first threads take the remainder), each thread's warm-up,
/// and its seed.
fn build_threads(
    spec: &RunSpec,
    params: &Params,
    workload_info: &'static WorkloadInfo,
    layout: &Layout,
    hier: &Hierarchy,
    access_hook: bool,
) -> (Vec<Core>, Vec<Box<dyn Workload>>) {
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
        let target =
            spec.tx / spec.threads as u64 + u64::from((t as u64) < spec.tx % spec.threads as u64);
        let args = WorkloadArgs::from_params(
            params,
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
        // At least one measured transaction per thread that has any.
        let warm_tx = if warm_fixed > 0 {
            warm_fixed.min(target.saturating_sub(1))
        } else {
            ((target as f64 * warm_share) as u64).min(target.saturating_sub(1))
        };
        let window = Window::new(rob, lq, mshrs, hier.l1[t].slot_count(), access_hook);
        cores.push(Core::new(target, warm_tx, sb_entries, window));
    }
    (cores, wls)
}
