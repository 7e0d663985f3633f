//! Run results: the metrics every scheme reports, the scheme's own
//! statistics and the simulator's speed (`sim` block).

use crate::mem::MemStats;
use crate::types::Purpose;
use serde::Serialize;
use std::collections::BTreeMap;

/// Metric names scripts rely on (issue #2): keep them stable.
///
/// Rates, latencies, traffic, energy, miss ratio and load/store counts are
/// over the measured window (after the warm-up, docs/MODEL.md "Metrics");
/// `committed_tx` and `sim_cycles` cover the whole run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Metrics {
    /// Transactions committed in the whole run (warm-up included).
    pub committed_tx: u64,
    /// Cycles of the whole run (warm-up included).
    pub sim_cycles: u64,
    /// Transactions committed before the measured window opened.
    pub warmup_tx: u64,
    /// Transactions committed inside the measured window.
    pub measured_tx: u64,
    /// Cycle at which the window opened (the last thread's last warm-up commit).
    pub window_start_cycle: u64,
    /// Length of the measured window: last commit - window start.
    pub window_cycles: u64,
    pub throughput_tx_per_mcycle: f64,
    pub throughput_tx_per_sec: f64,
    pub critical_path_cycles_mean: f64,
    pub critical_path_cycles_p50: u64,
    pub critical_path_cycles_p99: u64,
    /// NVM bytes written during the window (every purpose).
    pub nvm_bytes_written: u64,
    pub nvm_bytes_read: u64,
    /// Net growth of dirty data held in the caches over the window (64 B
    /// per dirty line; negative if the caches held less dirty data at the
    /// end): the write-backs the window's stores still owe.
    pub dirty_cached_bytes_growth: i64,
    /// Steady-state NVM write traffic per measured transaction:
    /// (`nvm_bytes_written` + `dirty_cached_bytes_growth`) / `measured_tx`.
    pub write_bytes_per_tx: f64,
    pub energy_nj: f64,
    pub llc_miss_ratio: f64,
    pub nvm_bytes_written_by_purpose: BTreeMap<&'static str, u64>,
    pub nvm_bytes_read_by_purpose: BTreeMap<&'static str, u64>,
    pub nvm_row_hit_ratio: f64,
    pub nvm_write_queue_full_stalls: u64,
    /// Cycles writers waited for a write-queue slot (summed over stalls).
    pub nvm_write_queue_full_stall_cycles: u64,
    /// Mean NVM read latency, controller arrival to data (window reads).
    pub nvm_read_latency_cycles_mean: f64,
    /// Writes issued during a watermark drain (reads wait while it lasts).
    pub nvm_drain_writes: u64,
    /// Writes merged into a queued write of the same line (no extra burst).
    pub nvm_writes_merged: u64,
    /// Bytes written after the last commit to bring home up to date (cache
    /// drain + the scheme's final background work); not in `nvm_bytes_written`.
    pub final_drain_bytes_written: u64,
    pub dram_bytes_read: u64,
    pub dram_bytes_written: u64,
    pub loads: u64,
    pub stores: u64,
    /// Instructions in the window: loads + stores + compute instructions.
    pub instructions: u64,
    /// `instructions` / `window_cycles` (all cores together): the headline
    /// rate of programs without transactions (`run.transactions=false`).
    pub ipc: f64,
    /// `window_cycles` in nanoseconds: the headline of checkpointing runs.
    pub execution_time_ns: f64,
    /// Hybrid memory (`hybrid.dram_cache_bytes` > 0; zero without it).
    pub dram_cache_hit_ratio: f64,
    pub dram_cache_page_fills: u64,
    pub dram_cache_dirty_evictions: u64,
    /// Workload characteristics (issue 13 part 4, beside the dual-page
    /// checkpointing paper's Table 5): simulated memory the run touched
    /// (4 KiB pages of the architectural image, all threads, setup
    /// included), loads per store in the window, the DRAM cache's miss
    /// ratio (1 - `dram_cache_hit_ratio`; zero without it) and its reads
    /// (LLC misses) per write (LLC write-backs) in the window.
    pub footprint_bytes: u64,
    pub read_write_ratio: f64,
    pub dram_cache_miss_ratio: f64,
    pub memory_read_write_ratio: f64,
}

/// Simulator speed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimInfo {
    pub host_seconds: f64,
    pub sim_mem_ops: u64,
    pub mem_ops_per_host_second: f64,
    /// The workloads' op streams were generated on a second host thread
    /// (`--gen-thread`; no simulated effect).
    pub gen_thread: bool,
    pub version: &'static str,
}

/// Latency samples, one per transaction (reserved up front).
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    samples: Vec<u32>,
}

impl Latencies {
    pub fn with_capacity(n: usize) -> Self {
        Latencies {
            samples: Vec::with_capacity(n),
        }
    }
    #[inline]
    pub fn push(&mut self, cycles: u64) {
        self.samples.push(cycles.min(u32::MAX as u64) as u32);
    }
    /// Forget the samples (start of the measured window).
    pub fn clear(&mut self) {
        self.samples.clear();
    }
    pub fn len(&self) -> usize {
        self.samples.len()
    }
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
    pub fn mean(&self) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        self.samples.iter().map(|&x| x as f64).sum::<f64>() / self.samples.len() as f64
    }
    /// Nearest-rank percentile.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.samples.is_empty() {
            return 0;
        }
        let mut v = self.samples.clone();
        v.sort_unstable();
        let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
        v[rank.min(v.len()) - 1] as u64
    }
}

pub fn by_purpose(counts: &[u64; Purpose::COUNT]) -> BTreeMap<&'static str, u64> {
    Purpose::ALL
        .iter()
        .map(|p| (p.name(), counts[p.index()]))
        .collect()
}

pub fn row_hit_ratio(s: &MemStats) -> f64 {
    let n = s.row_hits + s.row_misses;
    if n == 0 {
        0.0
    } else {
        s.row_hits as f64 / n as f64
    }
}
