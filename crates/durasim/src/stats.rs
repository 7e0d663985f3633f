//! Run results: the metrics every scheme reports, the scheme's own
//! statistics and the simulator's speed (`sim` block).

use crate::mem::MemStats;
use crate::types::Purpose;
use serde::Serialize;
use std::collections::BTreeMap;

/// Metric names scripts rely on (issue #2): keep them stable.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Metrics {
    pub committed_tx: u64,
    pub sim_cycles: u64,
    pub throughput_tx_per_mcycle: f64,
    pub throughput_tx_per_sec: f64,
    pub critical_path_cycles_mean: f64,
    pub critical_path_cycles_p50: u64,
    pub critical_path_cycles_p99: u64,
    pub nvm_bytes_written: u64,
    pub nvm_bytes_read: u64,
    pub write_bytes_per_tx: f64,
    pub energy_nj: f64,
    pub llc_miss_ratio: f64,
    pub nvm_bytes_written_by_purpose: BTreeMap<&'static str, u64>,
    pub nvm_bytes_read_by_purpose: BTreeMap<&'static str, u64>,
    pub nvm_row_hit_ratio: f64,
    pub nvm_write_queue_full_stalls: u64,
    /// Writes merged into a queued write of the same line (no extra burst).
    pub nvm_writes_merged: u64,
    /// Bytes written after the last commit to bring home up to date (cache
    /// drain + the scheme's final background work); not in `nvm_bytes_written`.
    pub final_drain_bytes_written: u64,
    pub dram_bytes_read: u64,
    pub dram_bytes_written: u64,
    pub loads: u64,
    pub stores: u64,
}

/// Simulator speed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimInfo {
    pub host_seconds: f64,
    pub sim_mem_ops: u64,
    pub mem_ops_per_host_second: f64,
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
