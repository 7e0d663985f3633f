//! The log region's geometry and its bit-exact format (module docs of
//! `lsm`): segment headers, data entries and commit records.

use crate::config::Params;
use crate::error::{Error, Result};
use crate::schemes::Layout;
use crate::types::{Addr, LINE_BYTES};

pub(super) const SEG_MAGIC: u64 = 0x4c53; // "LS"
pub(super) const KIND_DATA: u64 = 0xd1;
pub(super) const KIND_COMMIT: u64 = 0xc1;
pub(super) const ENTRY_HDR: u64 = 24;
pub(super) const SEQ_MASK: u64 = (1 << 48) - 1;
pub(super) const LINE_IDX_MASK: u64 = (1 << 48) - 1;

/// Geometry of the log region, shared by the scheme and recovery.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub superblock: Addr,
    pub first_segment: Addr,
    pub segment_bytes: u64,
    pub segments: u64,
}

impl Geometry {
    pub fn new(p: &Params, layout: &Layout) -> Result<Self> {
        let seg = p.u64("lsm.segment_bytes");
        let base = layout.reserved_base.div_ceil(seg) * seg;
        let slots = layout.capacity_bytes.saturating_sub(base) / seg;
        if slots < 5 {
            return Err(Error::input(format!(
                "lsm.log_region_share={} gives {} log segments of lsm.segment_bytes={seg}; need at least 4 (raise the share or lower the segment size)",
                p.f64("lsm.log_region_share"),
                slots.saturating_sub(1)
            )));
        }
        Ok(Geometry {
            superblock: base,
            first_segment: base + seg,
            segment_bytes: seg,
            segments: slots - 1,
        })
    }
    #[inline]
    pub fn seg_addr(&self, s: usize) -> Addr {
        self.first_segment + s as u64 * self.segment_bytes
    }
    #[inline]
    pub fn seg_of(&self, log_addr: Addr) -> usize {
        ((log_addr - self.first_segment) / self.segment_bytes) as usize
    }
}

/// Checksum of an entry: detects torn and stale entries.
pub(super) fn checksum(w0: u64, w1: u64, data: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &w in [w0, w1].iter().chain(data) {
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    h | 1
}

/// Encode a data entry into `out` (appended); returns its size.
pub(super) fn encode_data(
    out: &mut Vec<u8>,
    line: Addr,
    mask: u8,
    words: &[u64; 8],
    txid: u32,
    seq: u64,
) {
    let mut data = [0u64; 8];
    let mut n = 0;
    for (w, &v) in words.iter().enumerate() {
        if mask & (1 << w) != 0 {
            data[n] = v;
            n += 1;
        }
    }
    let w0 = KIND_DATA << 56 | u64::from(mask) << 48 | (line / LINE_BYTES) & LINE_IDX_MASK;
    let w1 = u64::from(txid) << 32 | (seq & 0xffff_ffff);
    let w2 = checksum(w0, w1, &data[..n]);
    for w in [w0, w1, w2].iter().chain(&data[..n]) {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

pub(super) fn encode_commit(out: &mut Vec<u8>, entries: u64, txid: u32, seq: u64) {
    let w0 = KIND_COMMIT << 56 | (entries & LINE_IDX_MASK);
    let w1 = u64::from(txid) << 32 | (seq & 0xffff_ffff);
    let w2 = checksum(w0, w1, &[]);
    for w in [w0, w1, w2] {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

pub(super) fn entry_bytes(mask: u8) -> u64 {
    ENTRY_HDR + 8 * u64::from(mask.count_ones())
}

/// A decoded entry.
#[derive(Clone, Copy, Debug)]
pub(super) enum Entry {
    Data {
        line: Addr,
        mask: u8,
        txid: u32,
        /// Data words in word order (popcount(mask) of them).
        data: [u64; 8],
    },
    Commit {
        entries: u64,
        txid: u32,
    },
}

/// Decode the entry at `off` of a segment image `seg` with sequence `seq`;
/// `None` marks the end of the segment's valid content.
pub(super) fn decode(seg: &[u8], off: usize, seq: u64) -> Option<(Entry, usize)> {
    decode_with(seg, off, seq, true)
}

/// [`decode`], with the checksum test switchable (`false` only for the
/// `ignore-checksum` mutant).
pub(super) fn decode_with(
    seg: &[u8],
    off: usize,
    seq: u64,
    verify: bool,
) -> Option<(Entry, usize)> {
    let word = |o: usize| u64::from_le_bytes(seg[o..o + 8].try_into().unwrap());
    if off + ENTRY_HDR as usize > seg.len() {
        return None;
    }
    let (w0, w1, w2) = (word(off), word(off + 8), word(off + 16));
    if w1 & 0xffff_ffff != seq & 0xffff_ffff {
        return None;
    }
    let txid = (w1 >> 32) as u32;
    match w0 >> 56 {
        KIND_DATA => {
            let mask = (w0 >> 48) as u8;
            let n = mask.count_ones() as usize;
            let end = off + ENTRY_HDR as usize + 8 * n;
            if mask == 0 || end > seg.len() {
                return None;
            }
            let mut data = [0u64; 8];
            for (i, d) in data.iter_mut().enumerate().take(n) {
                *d = word(off + ENTRY_HDR as usize + 8 * i);
            }
            if verify && checksum(w0, w1, &data[..n]) != w2 {
                return None;
            }
            Some((
                Entry::Data {
                    line: (w0 & LINE_IDX_MASK) * LINE_BYTES,
                    mask,
                    txid,
                    data,
                },
                end,
            ))
        }
        KIND_COMMIT => {
            if verify && checksum(w0, w1, &[]) != w2 {
                return None;
            }
            Some((
                Entry::Commit {
                    entries: w0 & LINE_IDX_MASK,
                    txid,
                },
                off + ENTRY_HDR as usize,
            ))
        }
        _ => None,
    }
}
