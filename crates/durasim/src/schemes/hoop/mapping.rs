//! The controller's indirection state (HOOP §III-C): where the newest
//! not-yet-migrated version of each transactionally written word lives, the
//! address mapping table (home line -> OOP slices, for lines evicted from the
//! LLC) and the eviction buffer (lines GC just wrote home).

use crate::types::{Addr, LineData};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Newest OOP copies of the words of one home line (per word: global slice
/// index and TxID). A mapping-table entry is one of these for an evicted line.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineLocs {
    pub mask: u8,
    pub slot: [u64; 8],
    pub txid: [u32; 8],
}

impl LineLocs {
    /// Distinct slices holding this line's words (at most 8), written into
    /// `out`; returns how many.
    pub fn distinct_slots(&self, out: &mut [u64; 8]) -> usize {
        let mut n = 0;
        for w in 0..8 {
            if self.mask & (1 << w) != 0 {
                let s = self.slot[w];
                if !out[..n].contains(&s) {
                    out[n] = s;
                    n += 1;
                }
            }
        }
        n
    }
}

/// Directory of out-of-place words plus the mapping table proper.
#[derive(Default)]
pub struct Indirection {
    /// Every line with transactional words newer than home (the content of
    /// the OOP region and OOP buffers, indexed by home line).
    pub lines: FxHashMap<Addr, LineLocs>,
    /// Lines present in the mapping table (evicted from the LLC while they
    /// had out-of-place words). Value: unused.
    pub mapped: FxHashMap<Addr, ()>,
}

impl Indirection {
    /// Record that word `addr` of the current transaction now lives in `slot`.
    #[inline]
    pub fn record(&mut self, addr: Addr, slot: u64, txid: u32) {
        let e = self.lines.entry(addr & !63).or_default();
        let w = ((addr & 63) / 8) as usize;
        e.mask |= 1 << w;
        e.slot[w] = slot;
        e.txid[w] = txid;
    }

    /// GC migrated the words of `line` in `mask` at versions `txids` (per
    /// word): forget each unless a newer version exists. Returns true if the
    /// line has no OOP words left. One lookup per line.
    pub fn migrated_line(&mut self, line: Addr, mask: u8, txids: &[u32; 8]) -> bool {
        debug_assert_ne!(mask, 0, "GC migrates at least one word per line");
        let Some(e) = self.lines.get_mut(&line) else {
            return true;
        };
        for (w, &txid) in txids.iter().enumerate() {
            if mask & e.mask & (1 << w) != 0 && e.txid[w] == txid {
                e.mask &= !(1 << w);
            }
        }
        if e.mask == 0 {
            self.lines.remove(&line);
            true
        } else {
            false
        }
    }

    /// GC migrated word `addr` at version `txid`: forget it unless a newer
    /// version exists. Returns true if the line has no OOP words left.
    #[cfg(test)]
    pub fn migrated(&mut self, addr: Addr, txid: u32) -> bool {
        let line = addr & !63;
        let w = ((addr & 63) / 8) as usize;
        let Some(e) = self.lines.get_mut(&line) else {
            return true;
        };
        if e.mask & (1 << w) != 0 && e.txid[w] == txid {
            e.mask &= !(1 << w);
        }
        if e.mask == 0 {
            self.lines.remove(&line);
            true
        } else {
            false
        }
    }
}

/// FIFO buffer of lines GC wrote home (§III-C, 128 KB by default).
pub struct EvictionBuffer {
    cap: usize,
    map: FxHashMap<Addr, LineData>,
    order: VecDeque<Addr>,
}

impl EvictionBuffer {
    pub fn new(cap_lines: usize) -> Self {
        EvictionBuffer {
            cap: cap_lines,
            map: FxHashMap::default(),
            order: VecDeque::with_capacity(cap_lines),
        }
    }

    pub fn insert(&mut self, line: Addr, data: &LineData) {
        if self.cap == 0 {
            return;
        }
        if let Some(d) = self.map.get_mut(&line) {
            *d = *data;
            return;
        }
        if self.order.len() == self.cap {
            let old = self.order.pop_front().unwrap();
            self.map.remove(&old);
        }
        self.order.push_back(line);
        self.map.insert(line, *data);
    }

    #[inline]
    pub fn get(&self, line: Addr) -> Option<&LineData> {
        self.map.get(&line)
    }

    /// Home was rewritten by someone else: keep the copy current.
    #[inline]
    pub fn update_if_present(&mut self, line: Addr, data: &LineData) {
        if let Some(d) = self.map.get_mut(&line) {
            *d = *data;
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_keeps_newer_versions() {
        let mut ind = Indirection::default();
        ind.record(0x1000, 5, 1);
        ind.record(0x1008, 5, 1);
        ind.record(0x1000, 9, 2); // newer version of word 0
        assert!(!ind.migrated(0x1000, 1), "word 0 has a newer copy");
        assert!(!ind.migrated(0x1008, 1));
        assert_eq!(ind.lines[&0x1000].mask, 0b1);
        assert!(ind.migrated(0x1000, 2));
        assert!(ind.lines.is_empty());
    }

    #[test]
    fn line_migration_equals_word_by_word_migration() {
        let setup = || {
            let mut ind = Indirection::default();
            for (w, txid) in [(0u64, 1u32), (1, 1), (2, 3), (5, 2)] {
                ind.record(0x2000 + 8 * w, 7, txid);
            }
            ind
        };
        let mut txids = [0u32; 8];
        txids[..6].copy_from_slice(&[1, 1, 2, 0, 0, 2]);
        for mask in [0b0000_0011u8, 0b0010_0111, 0b0010_0011, 0xff] {
            let (mut a, mut b) = (setup(), setup());
            let mut empty = false;
            for w in (0..8).filter(|w| mask & (1 << w) != 0) {
                empty = a.migrated(0x2000 + 8 * w as u64, txids[w]);
            }
            assert_eq!(
                b.migrated_line(0x2000, mask, &txids),
                empty,
                "mask {mask:#b}"
            );
            assert_eq!(
                a.lines.get(&0x2000).map(|l| l.mask),
                b.lines.get(&0x2000).map(|l| l.mask)
            );
        }
    }

    #[test]
    fn eviction_buffer_is_fifo_bounded() {
        let mut eb = EvictionBuffer::new(2);
        eb.insert(0, &[1; 64]);
        eb.insert(64, &[2; 64]);
        eb.insert(0, &[3; 64]);
        assert_eq!(eb.get(0).unwrap()[0], 3);
        eb.insert(128, &[4; 64]);
        assert!(eb.get(0).is_none() && eb.get(64).is_some() && eb.len() == 2);
    }
}
