//! What the logging schemes' NVM logs share: the record checksum and line
//! encoding, the per-core log stride, the core owning an address, and the
//! modelled recovery time.

use crate::config::Params;
use crate::mem::Layout;
use crate::types::{write_word, Addr, LineData};

/// Upper bound on cores (engine limit); reserved space is sized for it.
pub(crate) const MAX_CORES: u64 = 256;

/// Distance between two cores' log regions: one extra NVM row, so that
/// with the row-interleaved address mapping different cores' log heads
/// fall into different banks instead of all into bank 0 (modelling choice,
/// see docs/model/logging.md).
pub(crate) fn log_stride(p: &Params, per_core_bytes: u64) -> u64 {
    per_core_bytes + p.u64("nvm.row_bytes")
}

/// Checksum over header words and a data line (FNV-1a on 64-bit words with
/// a final avalanche): detects torn (partially persisted) records.
pub(crate) fn csum(words: &[u64], data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |w: u64| {
        h ^= w;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    };
    for &w in words {
        mix(w);
    }
    for c in data.chunks(8) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        mix(u64::from_le_bytes(b));
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// Build a 64 B header line from words (rest zero).
pub(crate) fn header_line(words: &[u64]) -> LineData {
    let mut l = [0u8; 64];
    for (i, &w) in words.iter().enumerate() {
        write_word(&mut l, i, w);
    }
    l
}

pub(crate) fn line_word(l: &LineData, i: usize) -> u64 {
    u64::from_le_bytes(l[i * 8..i * 8 + 8].try_into().unwrap())
}

/// Modelled recovery time: lines read and written one after another at the
/// media array latencies (an upper bound; no bank parallelism assumed).
pub(crate) fn recovery_ns(p: &Params, lines_read: u64, lines_written: u64) -> f64 {
    lines_read as f64 * p.f64("nvm.array_read_ns")
        + lines_written as f64 * p.f64("nvm.array_write_ns")
}

/// The core owning an address (threads own disjoint regions).
#[inline]
pub(crate) fn owner_of(layout: &Layout, addr: Addr) -> usize {
    let t = (addr / layout.thread_stride_bytes) as usize;
    layout
        .thread_of(addr)
        .unwrap_or(t.min(layout.threads.saturating_sub(1)))
}
