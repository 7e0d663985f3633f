//! The controller's counters: traffic by purpose, row hits, queue stalls,
//! energy, and the data-aware media's and DIMM's own counters.

use crate::mem::media::MediaStats;
use crate::mem::optane::DimmStats;
use crate::types::Purpose;

/// Traffic, latency and energy counters.
#[derive(Clone, Debug, Default)]
pub struct MemStats {
    /// Bytes read by purpose, in 64 B bursts (forwarded reads included).
    pub bytes_read: [u64; Purpose::COUNT],
    /// Bytes written by purpose, in 64 B device bursts: a write merged into
    /// a queued one adds none (the burst is charged to the first writer).
    pub bytes_written: [u64; Purpose::COUNT],
    /// Write requests by purpose: one per `write` call whatever its size
    /// (an 8 B entry and a 64 B line are one each, a request spanning
    /// lines is one), merged or not: the schemes' PM write operations.
    pub write_requests: [u64; Purpose::COUNT],
    /// Bytes of those requests (the sizes the schemes asked for, not the
    /// device's 64 B bursts).
    pub write_request_bytes: [u64; Purpose::COUNT],
    pub reads: u64,
    /// Write bursts issued to the device.
    pub writes: u64,
    /// Writes merged into a queued, not yet issued write of the same line.
    pub writes_merged: u64,
    pub row_hits: u64,
    pub row_misses: u64,
    /// Reads served from a queued write covering the whole line (no
    /// device access, no energy).
    pub forwarded_reads: u64,
    pub read_latency_cycles: u64,
    pub read_energy_pj: f64,
    pub write_energy_pj: f64,
    /// Writes that found the write queue full, and the cycles they waited
    /// for a slot.
    pub write_queue_full_stalls: u64,
    pub write_queue_full_stall_cycles: u64,
    /// Reads that found `read_queue_entries` reads outstanding.
    pub read_queue_full_stalls: u64,
    /// Writes issued while a watermark drain was in progress.
    pub forced_drains: u64,
    pub persist_events: u64,
    /// Data-aware media counters (zero unless `nvm.write_model = tlc` or
    /// an encoding is on).
    pub media: MediaStats,
    /// Optane-like DIMM counters (zero unless `dimm.model = optane`).
    pub dimm: DimmStats,
}

impl MemStats {
    pub fn total_read(&self) -> u64 {
        self.bytes_read.iter().sum()
    }
    pub fn total_written(&self) -> u64 {
        self.bytes_written.iter().sum()
    }
    /// PM write operations the CPU did not issue: every write request
    /// whose purpose is not an LLC write-back of program data (logs,
    /// metadata, GC, checkpoints), and their bytes.
    pub fn overhead_write_requests(&self) -> (u64, u64) {
        let mut ops = 0;
        let mut bytes = 0;
        for p in Purpose::ALL {
            if p != Purpose::WriteBack {
                ops += self.write_requests[p.index()];
                bytes += self.write_request_bytes[p.index()];
            }
        }
        (ops, bytes)
    }
    pub fn energy_nj(&self) -> f64 {
        (self.read_energy_pj + self.write_energy_pj) / 1000.0
    }
}
