//! The controller's indirection state (HOOP §III-C): where the newest
//! not-yet-migrated version of each transactionally written word lives, the
//! address mapping table (home line -> OOP slices, for lines evicted from the
//! LLC) and the eviction buffer (lines GC just wrote home).

use crate::types::{Addr, LineData};
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::collections::VecDeque;

/// Newest OOP copies of the words of one home line: per word, the global
/// index of the slice holding it. A mapping-table entry is one of these for
/// an evicted line.
///
/// The slot alone identifies a version: a slot holds one slice of one
/// transaction per life of its block, and a block is freed only after GC
/// migrated every transaction with a slice in it. Slots fit in u32
/// (`Geometry::new` rejects larger OOP regions); 36 bytes keep the hash map
/// small, which matters because every transactional store, LLC miss and
/// writeback looks a line up here.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineLocs {
    slot: [u32; 8],
    pub mask: u8,
    /// In the mapping table (evicted from the LLC while it had OOP words).
    pub mapped: bool,
}

impl LineLocs {
    /// Slice holding word `w` (valid if bit `w` of `mask` is set).
    #[inline]
    pub fn slot(&self, w: usize) -> u64 {
        u64::from(self.slot[w])
    }

    /// Distinct slices holding this line's words (at most 8), written into
    /// `out`; returns how many.
    pub fn distinct_slots(&self, out: &mut [u64; 8]) -> usize {
        let mut n = 0;
        for w in 0..8 {
            if self.mask & (1 << w) != 0 {
                let s = self.slot(w);
                if !out[..n].contains(&s) {
                    out[n] = s;
                    n += 1;
                }
            }
        }
        n
    }
}

/// Directory of out-of-place words, including the mapping table (the lines
/// flagged `mapped`: every mapped line has OOP words, so one map serves
/// both and each access is one lookup).
#[derive(Default)]
pub struct Indirection {
    /// Every line with transactional words newer than home (the content of
    /// the OOP region and OOP buffers, indexed by home line).
    pub lines: FxHashMap<Addr, LineLocs>,
    /// Lines flagged `mapped` (the mapping table's occupancy).
    mapped: u64,
}

/// What `Indirection::migrated_line` left of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The line has no OOP words left.
    pub empty: bool,
    /// It was in the mapping table and its entry went with it.
    pub unmapped: bool,
}

impl Indirection {
    /// Room for `lines` lines before the first rehash.
    pub fn with_capacity(lines: usize) -> Self {
        Indirection {
            lines: FxHashMap::with_capacity_and_hasher(lines, Default::default()),
            mapped: 0,
        }
    }

    /// Record that word `addr` of the current transaction now lives in `slot`.
    #[inline]
    pub fn record(&mut self, addr: Addr, slot: u64) {
        debug_assert!(slot < u64::from(u32::MAX), "checked by Geometry::new");
        let e = self.lines.entry(addr & !63).or_default();
        let w = ((addr & 63) / 8) as usize;
        e.mask |= 1 << w;
        e.slot[w] = slot as u32;
    }

    /// Mapping-table entries.
    #[inline]
    pub fn mapped_len(&self) -> u64 {
        self.mapped
    }

    #[cfg(test)]
    pub fn is_mapped(&self, line: Addr) -> bool {
        self.lines.get(&line).is_some_and(|l| l.mapped)
    }

    /// Evicted line `line`: if it has OOP words, flag it mapped and return
    /// `Some(newly mapped)`; `None` if it has none.
    #[inline]
    pub fn map_if_oop(&mut self, line: Addr) -> Option<bool> {
        let e = self.lines.get_mut(&line)?;
        let new = !e.mapped;
        if new {
            e.mapped = true;
            self.mapped += 1;
        }
        Some(new)
    }

    /// If `line` is mapped, unflag it and return its words' locations.
    #[inline]
    pub fn take_mapped(&mut self, line: Addr) -> Option<LineLocs> {
        let e = self.lines.get_mut(&line).filter(|e| e.mapped)?;
        e.mapped = false;
        self.mapped -= 1;
        Some(*e)
    }

    /// GC migrated the words of `line` in `mask`, the version of word `w`
    /// being the one in slice `slots[w]`: forget each unless a newer
    /// version exists. One lookup per line.
    pub fn migrated_line(&mut self, line: Addr, mask: u8, slots: &[u32; 8]) -> Migrated {
        debug_assert_ne!(mask, 0, "GC migrates at least one word per line");
        let Some(e) = self.lines.get_mut(&line) else {
            return Migrated {
                empty: true,
                unmapped: false,
            };
        };
        for (w, &slot) in slots.iter().enumerate() {
            if mask & e.mask & (1 << w) != 0 && e.slot[w] == slot {
                e.mask &= !(1 << w);
            }
        }
        if e.mask == 0 {
            let unmapped = e.mapped;
            self.lines.remove(&line);
            self.mapped -= u64::from(unmapped);
            Migrated {
                empty: true,
                unmapped,
            }
        } else {
            Migrated {
                empty: false,
                unmapped: false,
            }
        }
    }

    /// GC migrated word `addr` at its version in `slot`: forget it unless a
    /// newer version exists. Returns true if the line has no OOP words left.
    #[cfg(test)]
    pub fn migrated(&mut self, addr: Addr, slot: u32) -> bool {
        let line = addr & !63;
        let w = ((addr & 63) / 8) as usize;
        let Some(e) = self.lines.get_mut(&line) else {
            return true;
        };
        if e.mask & (1 << w) != 0 && e.slot[w] == slot {
            e.mask &= !(1 << w);
        }
        if e.mask == 0 {
            self.mapped -= u64::from(e.mapped);
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
        // Pre-sized (the map briefly holds one line more than `cap`), but
        // bounded: a huge buffer fills lazily.
        let pre = cap_lines.saturating_add(1).min(1 << 16);
        EvictionBuffer {
            cap: cap_lines,
            map: FxHashMap::with_capacity_and_hasher(pre, Default::default()),
            order: VecDeque::with_capacity(pre),
        }
    }

    pub fn insert(&mut self, line: Addr, data: &LineData) {
        if self.cap == 0 {
            return;
        }
        match self.map.entry(line) {
            Entry::Occupied(mut o) => {
                *o.get_mut() = *data;
                return;
            }
            Entry::Vacant(v) => {
                v.insert(*data);
            }
        }
        if self.order.len() == self.cap {
            let old = self.order.pop_front().unwrap();
            self.map.remove(&old);
        }
        self.order.push_back(line);
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
        ind.record(0x1000, 5);
        ind.record(0x1008, 5);
        ind.record(0x1000, 9); // newer version of word 0
        assert!(!ind.migrated(0x1000, 5), "word 0 has a newer copy");
        assert!(!ind.migrated(0x1008, 5));
        assert_eq!(ind.lines[&0x1000].mask, 0b1);
        assert!(ind.migrated(0x1000, 9));
        assert!(ind.lines.is_empty());
    }

    #[test]
    fn line_migration_equals_word_by_word_migration() {
        let setup = || {
            let mut ind = Indirection::default();
            for (w, slot) in [(0u64, 1u64), (1, 1), (2, 3), (5, 2)] {
                ind.record(0x2000 + 8 * w, slot);
            }
            assert_eq!(ind.map_if_oop(0x2000), Some(true));
            assert_eq!(ind.map_if_oop(0x2000), Some(false));
            assert_eq!(ind.map_if_oop(0x3000), None);
            ind
        };
        let mut slots = [0u32; 8];
        slots[..6].copy_from_slice(&[1, 1, 2, 0, 0, 2]);
        for mask in [0b0000_0011u8, 0b0010_0111, 0b0010_0011, 0xff] {
            let (mut a, mut b) = (setup(), setup());
            let mut empty = false;
            for w in (0..8).filter(|w| mask & (1 << w) != 0) {
                empty = a.migrated(0x2000 + 8 * w as u64, slots[w]);
            }
            let m = b.migrated_line(0x2000, mask, &slots);
            assert_eq!(m.empty, empty, "mask {mask:#b}");
            assert_eq!(m.unmapped, empty, "mask {mask:#b}");
            assert_eq!(b.mapped_len(), u64::from(!empty));
            assert_eq!(a.mapped_len(), b.mapped_len());
            assert_eq!(
                a.lines.get(&0x2000).map(|l| l.mask),
                b.lines.get(&0x2000).map(|l| l.mask)
            );
        }
    }

    #[test]
    fn take_mapped_unflags_and_keeps_the_words() {
        let mut ind = Indirection::default();
        ind.record(0x40, 3);
        assert!(ind.take_mapped(0x40).is_none(), "not evicted yet");
        ind.map_if_oop(0x40);
        let l = ind.take_mapped(0x40).unwrap();
        assert_eq!((l.mask, l.slot(0)), (1, 3));
        assert!(!ind.is_mapped(0x40) && ind.mapped_len() == 0);
        assert!(ind.lines.contains_key(&0x40));
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
