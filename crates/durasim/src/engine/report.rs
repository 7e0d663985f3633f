//! The measured window and the results: metrics, host-speed info, the
//! JSON report, and the checks after a run (home image equals the
//! architectural image; workload invariants).

use super::{Engine, FwbStats, PersistOpStats};
use crate::cache::Hierarchy;
use crate::mem::MemRead;
use crate::stats::{by_purpose, row_hit_ratio, Metrics, SimInfo};
use crate::types::Cycle;
use crate::workloads;

impl Engine {
    /// Open the measured window at `t` (the last warm-up commit): counters
    /// of the controllers, caches and scheme restart; gauges stay.
    pub(super) fn open_window(&mut self, t: Cycle) {
        self.window_start = t;
        self.window_tx0 = self.committed_tx;
        self.window_ops0 += self.loads + self.stores;
        self.loads = 0;
        self.stores = 0;
        self.persist_ops = PersistOpStats::default();
        self.compute_instrs = 0;
        self.llc_write_backs = 0;
        self.write_set = Default::default();
        self.fwb = FwbStats {
            passes_total: self.fwb.passes_total,
            ..FwbStats::default()
        };
        if let Some(h) = self.dram_cache.as_mut() {
            h.stats = Default::default();
        }
        self.ctx.nvm.reset_stats();
        self.ctx.dram.reset_stats();
        self.hier.reset_stats();
        self.scheme.reset_stats();
        self.latencies.clear();
        self.window_dirty0 = dirty_cached_lines(&self.hier);
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
        let (llc_misses, llc_write_backs) = self
            .run_llc
            .unwrap_or((self.hier.llc.misses, self.llc_write_backs));
        let (overhead_ops, overhead_bytes) = nvm.overhead_write_requests();
        let ws = &self.write_set;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
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
                .dram_cache
                .as_ref()
                .map_or(0.0, |h| h.stats.hit_ratio()),
            dram_cache_page_fills: self.dram_cache.as_ref().map_or(0, |h| h.stats.page_fills),
            dram_cache_dirty_evictions: self
                .dram_cache
                .as_ref()
                .map_or(0, |h| h.stats.dirty_evictions),
            footprint_bytes: self.arch.touched_pages() as u64 * crate::mem::image::PAGE_BYTES,
            read_write_ratio: self.loads as f64 / self.stores.max(1) as f64,
            dram_cache_miss_ratio: self.dram_cache.as_ref().map_or(0.0, |h| {
                let s = &h.stats;
                if s.read_hits + s.read_misses + s.write_hits + s.write_misses == 0 {
                    0.0
                } else {
                    1.0 - s.hit_ratio()
                }
            }),
            // Without a DRAM cache the memory below the LLC is the NVM: its
            // reads are the LLC misses and its writes the LLC write-backs.
            memory_read_write_ratio: self.dram_cache.as_ref().map_or(
                ratio(llc_misses, llc_write_backs),
                |h| {
                    let s = &h.stats;
                    (s.read_hits + s.read_misses) as f64
                        / (s.write_hits + s.write_misses).max(1) as f64
                },
            ),
            llc_misses,
            llc_write_backs,
            llc_misses_per_mem_op: ratio(llc_misses, self.loads + self.stores),
            llc_misses_per_write_back: ratio(llc_misses, llc_write_backs),
            nvm_write_requests_by_purpose: by_purpose(&nvm.write_requests),
            pm_write_overhead_ops: overhead_ops,
            pm_write_overhead_bytes: overhead_bytes,
            log_bits_written_no_expansion: nvm.media.log_bits_written,
            program_stores: ws.stores,
            program_stores_per_tx: ratio(ws.stores, measured),
            written_words: ws.words,
            written_lines: ws.lines,
            words_per_written_line: ratio(ws.words, ws.lines),
            repeated_store_share: ratio(ws.repeated_stores(), ws.stores),
            silent_store_share: ratio(ws.silent_stores, ws.stores),
            written_line_compression_ratio_fpc: ratio(ws.lines * 512, ws.fpc_bits),
            written_line_compression_ratio_dldc: ratio(ws.lines * 512, ws.dldc_bits),
        }
    }

    pub fn sim_info(&self) -> SimInfo {
        let ops = self.window_ops0 + self.loads + self.stores;
        SimInfo {
            host_seconds: self.host_seconds,
            sim_mem_ops: ops,
            mem_ops_per_host_second: ops as f64 / self.host_seconds.max(1e-9),
            gen_thread: self.fed,
            peak_rss_mib: crate::stats::peak_rss_mib(),
            version: env!("CARGO_PKG_VERSION"),
        }
    }

    /// The whole result as the CLI's JSON document.
    pub fn report_json(&self) -> serde_json::Value {
        let mut stats: serde_json::Map<String, serde_json::Value> = self
            .scheme
            .stats()
            .into_iter()
            .map(|(k, v)| (k.to_string(), stat_json(k, v)))
            .collect();
        self.add_per_op_scheme_stats(&mut stats);
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

    /// The parallel-read share under both definitions, with explicit
    /// names, for a scheme that counts LLC misses served by parallel
    /// home and out-of-place reads (`parallel_read_misses`, HOOP):
    /// `parallel_reads_per_llc_miss` (the scheme's `parallel_read_fraction`;
    /// HOOP §IV (j)'s seed text: "fraction of LLC misses") and
    /// `parallel_reads_per_mem_op` (per load + store of the window).
    fn add_per_op_scheme_stats(&self, stats: &mut serde_json::Map<String, serde_json::Value>) {
        let get = |k: &str| stats.get(k).and_then(serde_json::Value::as_f64);
        let (Some(parallel), Some(misses)) = (get("parallel_read_misses"), get("llc_misses"))
        else {
            return;
        };
        let per = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let ops = (self.loads + self.stores) as f64;
        stats.insert(
            "parallel_reads_per_llc_miss".into(),
            serde_json::json!(per(parallel, misses)),
        );
        stats.insert(
            "parallel_reads_per_mem_op".into(),
            serde_json::json!(per(parallel, ops)),
        );
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

/// Lines dirty anywhere in the hierarchy (the LLC includes every private
/// copy; a line is dirty if its LLC, L2 or L1 copy is). Run twice per run.
pub(super) fn dirty_cached_lines(h: &Hierarchy) -> u64 {
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

/// A scheme statistic as JSON: a count (a whole number whose name is not a
/// share, ratio, fraction, mean, rate or per-unit value) as an integer, so
/// that `gc_runs_periodic` reads `2` in JSON and is an `int` in Python;
/// everything else as a float.
fn stat_json(key: &str, v: f64) -> serde_json::Value {
    // Whole words of the name: `gc_runs_periodic` is a count, `pages_per_epoch` is not.
    const NOT_COUNTS: [&str; 7] = ["share", "ratio", "fraction", "mean", "per", "avg", "rate"];
    let is_count = v.fract() == 0.0
        && (0.0..9.0e15).contains(&v)
        && !key.split('_').any(|w| NOT_COUNTS.contains(&w));
    if is_count {
        serde_json::json!(v as u64)
    } else {
        serde_json::json!(v)
    }
}

#[cfg(test)]
mod stat_json_tests {
    use super::stat_json;

    #[test]
    fn counts_are_integers_and_shares_stay_floats() {
        assert_eq!(stat_json("gc_runs_periodic", 0.0).to_string(), "0");
        assert_eq!(stat_json("gc_runs_periodic", 2.0).to_string(), "2");
        assert_eq!(stat_json("checkpoints", 7.0).to_string(), "7");
        assert_eq!(stat_json("checkpoint_time_share", 0.0).to_string(), "0.0");
        assert_eq!(
            stat_json("block_mode_pages_per_epoch", 12.0).to_string(),
            "12.0"
        );
        assert_eq!(stat_json("parallel_read_fraction", 1.0).to_string(), "1.0");
        assert_eq!(stat_json("gc_bytes_migrated", 2.5).to_string(), "2.5");
    }
}
