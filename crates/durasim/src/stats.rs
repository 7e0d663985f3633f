//! Run results: the metrics every scheme reports, the scheme's own
//! statistics and the simulator's speed (`sim` block).

use crate::mem::MemStats;
use crate::types::Purpose;
use serde::Serialize;
use std::collections::BTreeMap;

/// Metric names scripts rely on: keep them stable. Every key's definition,
/// unit and the paper that uses it: docs/model/metrics.md.
///
/// Rates, latencies, traffic, energy, miss ratio and load/store counts are
/// over the measured window (after the warm-up, docs/model/metrics.md);
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
    /// Workload characteristics (beside the dual-page checkpointing
    /// paper's Table 5): simulated memory the run touched
    /// (4 KiB pages of the architectural image, all threads, setup
    /// included), loads per store in the window, the DRAM cache's miss
    /// ratio (1 - `dram_cache_hit_ratio`; zero without it) and the
    /// memory's reads per write in the window: the DRAM cache's (LLC
    /// misses and write-backs it serves), or without one the NVM's
    /// (= `llc_misses_per_write_back`). `read_write_ratio` is the
    /// program's loads per store, above the caches.
    pub footprint_bytes: u64,
    pub read_write_ratio: f64,
    pub dram_cache_miss_ratio: f64,
    pub memory_read_write_ratio: f64,
    // Each paper's own definitions, named for them (docs/model/metrics.md).
    /// LLC misses in the window (every LLC miss is a line fill from
    /// memory; store misses included). Count.
    pub llc_misses: u64,
    /// Dirty lines the LLC sent to memory in the window: evictions,
    /// clwb flushes and force write-backs. Count.
    pub llc_write_backs: u64,
    /// LLC misses per memory operation: `llc_misses` / (`loads` +
    /// `stores`) (HOOP §IV (j)'s "LLC miss ratio" read per memory
    /// operation). `llc_miss_ratio` is per LLC access instead.
    pub llc_misses_per_mem_op: f64,
    /// Memory reads per write-back: `llc_misses` / `llc_write_backs`
    /// (the workload characterisation's "reads per write-back"; the
    /// dual-page checkpointing paper's Table 5 read/write ratio at the
    /// LLC, which `memory_read_write_ratio` gives below a DRAM cache).
    pub llc_misses_per_write_back: f64,
    /// NVM write requests by purpose: one per request the scheme or the
    /// caches issued, whatever its size, merged or not. Count.
    pub nvm_write_requests_by_purpose: BTreeMap<&'static str, u64>,
    /// EHOU §IV-B's PM write overhead in operations: write requests the
    /// CPU did not issue (every purpose but `writeback`: logs, metadata
    /// such as EHOU's 8 B AIT entries, GC, checkpoints), one per request.
    /// Count, window only (the schemes' `pm_write_overhead_*` stats also
    /// hold the end of run).
    pub pm_write_overhead_ops: u64,
    /// The same requests' bytes as the schemes asked for them (an AIT
    /// entry is 8 B, a line 64 B; not the device's 64 B bursts).
    pub pm_write_overhead_bytes: u64,
    /// MorLog §VI-C's log bits: code-word bits of every log line write
    /// with expansion coding disabled (`nvm_media.log_bits_written`; zero
    /// without the data-aware media). Bits.
    pub log_bits_written_no_expansion: u64,
    // Workload characterisation of the transactions committed in the
    // window: their stores to program data (not a software library's log
    // or metadata stores; a scheme that moves the program's stores, as
    // DudeTM's shadow copy does, shows none).
    /// Stores to program data. Count.
    pub program_stores: u64,
    /// `program_stores` / `measured_tx` (HOOP Table III's stores/TX).
    pub program_stores_per_tx: f64,
    /// Distinct words and distinct lines written, summed over
    /// transactions. Counts.
    pub written_words: u64,
    pub written_lines: u64,
    /// `written_words` / `written_lines`: how densely a transaction fills
    /// the lines it writes (words of 8 B per 64 B line, 1..8).
    pub words_per_written_line: f64,
    /// Share of program stores to a word already stored in the same
    /// transaction: (`program_stores` - `written_words`) /
    /// `program_stores` (MorLog's repeated stores, which its log
    /// morphing coalesces).
    pub repeated_store_share: f64,
    /// Share of program stores whose value equals the word's value before
    /// the store (silent stores).
    pub silent_store_share: f64,
    /// Compressibility of the written lines: 512 x `written_lines` / their
    /// bits under FPC at transaction end (each line capped at 512 bits, as
    /// a device stores an incompressible line raw). Ratio >= 1.
    pub written_line_compression_ratio_fpc: f64,
    /// The same under DLDC (MorLog §IV-A): each line's update against its
    /// value before the transaction, per word 8 dirty-flag bits plus the
    /// dirty bytes compressed. Ratio >= 1.
    pub written_line_compression_ratio_dldc: f64,
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
    /// Peak resident host memory of the process so far (MiB; getrusage's
    /// `ru_maxrss`, 0 where unavailable).
    pub peak_rss_mib: f64,
    pub version: &'static str,
}

/// Peak resident memory of this process so far, in MiB (0 where the OS
/// does not report it).
pub fn peak_rss_mib() -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: getrusage only writes the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
            // ru_maxrss is in KiB on Linux.
            return ru.ru_maxrss as f64 / 1024.0;
        }
    }
    0.0
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
