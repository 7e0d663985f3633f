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
/// (`Geometry::new` rejects larger OOP regions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

    /// Words (bit w: word w) whose newest copy is in slice `slot`.
    #[inline]
    pub fn words_in(&self, slot: u64) -> u8 {
        let mut m = 0;
        for w in 0..8 {
            m |= u8::from(self.mask & (1 << w) != 0 && self.slot(w) == slot) << w;
        }
        m
    }

    /// Mapping-table entries this line needs: one per distinct slice
    /// holding its newest words (an entry holds one OOP address).
    #[inline]
    pub fn entries(&self) -> u64 {
        entries_of(self.mask, &self.slot)
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

/// Distinct slots among the words in `mask`.
#[inline]
fn entries_of(mask: u8, slot: &[u32; 8]) -> u64 {
    let mut seen = [0u32; 8];
    let mut n = 0;
    for w in (0..8).filter(|w| mask & (1 << w) != 0) {
        if !seen[..n].contains(&slot[w]) {
            seen[n] = slot[w];
            n += 1;
        }
    }
    n as u64
}

/// One mapping-table entry as the controller stores it (HOOP §III-C: "each
/// entry contains its home-region address as well as the OOP-region
/// address"; §III-G: that address points into the OOP data buffer or an
/// OOP block), 8 bytes, little-endian:
///   bits  0..34  home line address >> 6 (40-bit home offsets, §III-C)
///   bits 34..63  OOP slice index in the region (29 bit: 10 % of the
///                paper's 512 GB NVM in 128 B slices is < 2^29, §III-D/H)
///   bit  63      the slice is still in a core's OOP data buffer (§III-G)
/// No word mask: the slice's metadata holds each word's home address
/// (Fig. 5b), so the controller finds the line's words by unpacking it.
/// A line whose newest words sit in k slices has k entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappingEntry {
    pub line: Addr,
    pub slot: u64,
    pub in_buffer: bool,
}

/// Encoded size of a mapping-table entry.
pub const MAPPING_ENTRY_BYTES: u64 = 8;
pub const ENTRY_LINE_BITS: u32 = super::layout::HOME_ADDR_BITS - 6;
pub const ENTRY_SLOT_BITS: u32 = 29;

impl MappingEntry {
    pub fn encode(&self) -> [u8; MAPPING_ENTRY_BYTES as usize] {
        debug_assert!(self.line >> 6 < 1 << ENTRY_LINE_BITS);
        debug_assert!(self.slot < 1 << ENTRY_SLOT_BITS, "checked by Geometry::new");
        let w = (self.line >> 6)
            | self.slot << ENTRY_LINE_BITS
            | u64::from(self.in_buffer) << (ENTRY_LINE_BITS + ENTRY_SLOT_BITS);
        w.to_le_bytes()
    }

    pub fn decode(b: &[u8; MAPPING_ENTRY_BYTES as usize]) -> Self {
        let w = u64::from_le_bytes(*b);
        MappingEntry {
            line: (w & ((1 << ENTRY_LINE_BITS) - 1)) << 6,
            slot: (w >> ENTRY_LINE_BITS) & ((1 << ENTRY_SLOT_BITS) - 1),
            in_buffer: w >> (ENTRY_LINE_BITS + ENTRY_SLOT_BITS) & 1 != 0,
        }
    }
}

/// Key word of a bucket: the home line address (bits 6..40, home addresses
/// are 40-bit), `OCCUPIED`, `MAPPED` and the word mask in bits 56..64. An
/// empty bucket is 0.
const OCCUPIED: u64 = 1;
const MAPPED: u64 = 2;
const LINE_BITS: u64 = ((1 << super::layout::HOME_ADDR_BITS) - 1) & !63;
const MASK_SHIFT: u32 = 56;

/// Directory of out-of-place words, including the mapping table (the lines
/// flagged mapped: every mapped line has OOP words, so one map serves both
/// and each access is one lookup).
///
/// Every transactional store, LLC miss and write-back looks a line up here,
/// mostly missing the host caches, so it is an open-addressing table
/// (linear probing, at most half full, backward-shift deletion) split in
/// two arrays: 8-byte keys that also hold the mask and the mapped flag,
/// probed alone (a write-back's lookup touches one host cache line), and
/// the words' slots (32 bytes, aligned) read only on a hit.
pub struct Indirection {
    keys: Vec<u64>,
    slots: Vec<[u32; 8]>,
    /// Occupied buckets (lines with OOP words).
    len: usize,
    /// 64 - log2(buckets): the bucket of a line is the top bits of its
    /// Fibonacci hash.
    shift: u32,
    /// Lines flagged mapped.
    mapped: u64,
    /// Their mapping-table entries (the table's occupancy): one per
    /// distinct slice holding a mapped line's newest words.
    mapped_entries: u64,
}

/// What `Indirection::migrated_line` left of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The line has no OOP words left.
    pub empty: bool,
    /// It was in the mapping table and its entry went with it.
    pub unmapped: bool,
}

impl Default for Indirection {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl Indirection {
    /// Room for `lines` lines before the table grows.
    pub fn with_capacity(lines: usize) -> Self {
        let buckets = (lines.max(8) * 2).next_power_of_two();
        Indirection {
            keys: vec![0; buckets],
            slots: vec![[0; 8]; buckets],
            len: 0,
            shift: 64 - buckets.trailing_zeros(),
            mapped: 0,
            mapped_entries: 0,
        }
    }

    /// Lines of one 512 B group get consecutive buckets from a hashed base,
    /// so neighbouring lines (a node's lines, GC's address-ordered pass)
    /// share host cache lines of the table.
    #[inline]
    fn home_bucket(&self, line: Addr) -> usize {
        let base = (line >> 9).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift;
        (base as usize + ((line >> 6) & 7) as usize) & (self.keys.len() - 1)
    }

    /// Bucket holding `line`, or `Err(the empty bucket ending its probe)`.
    #[inline]
    fn find(&self, line: Addr) -> Result<usize, usize> {
        debug_assert_eq!(line & !LINE_BITS, 0, "a 40-bit home line address");
        let wrap = self.keys.len() - 1;
        let mut i = self.home_bucket(line);
        loop {
            let k = self.keys[i];
            if k == 0 {
                return Err(i);
            }
            if k & LINE_BITS == line {
                return Ok(i);
            }
            i = (i + 1) & wrap;
        }
    }

    /// Start fetching the home bucket of `line` (where its probe starts)
    /// into the host caches.
    #[inline]
    pub fn prefetch(&self, line: Addr) {
        let i = self.home_bucket(line);
        crate::types::prefetch(&self.keys[i]);
        crate::types::prefetch(&self.slots[i]);
    }

    /// Double the buckets (the table stays at most half full).
    #[cold]
    fn grow(&mut self) {
        let mut bigger = Indirection::with_capacity(self.keys.len());
        for (&k, s) in self.keys.iter().zip(&self.slots) {
            if k != 0 {
                let Err(i) = bigger.find(k & LINE_BITS) else {
                    unreachable!("lines are unique")
                };
                bigger.keys[i] = k;
                bigger.slots[i] = *s;
            }
        }
        bigger.len = self.len;
        bigger.mapped = self.mapped;
        bigger.mapped_entries = self.mapped_entries;
        *self = bigger;
    }

    /// Empty bucket `i` (occupied), shifting back the entries after it
    /// that probed past it, so no probe sequence has a hole.
    fn remove_at(&mut self, mut i: usize) {
        let wrap = self.keys.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & wrap;
            let k = self.keys[j];
            if k == 0 {
                break;
            }
            // Entry j may fill the hole at i unless its home bucket lies
            // cyclically in (i, j].
            let home = self.home_bucket(k & LINE_BITS);
            if (j.wrapping_sub(home) & wrap) >= (j.wrapping_sub(i) & wrap) {
                self.keys[i] = k;
                self.slots[i] = self.slots[j];
                i = j;
            }
        }
        self.keys[i] = 0;
        self.len -= 1;
    }

    /// Record that word `addr` of the current transaction now lives in `slot`.
    /// Every transactional store records: inlined into HOOP's store path.
    #[inline(always)]
    pub fn record(&mut self, addr: Addr, slot: u64) {
        debug_assert!(slot < u64::from(u32::MAX), "checked by Geometry::new");
        let line = addr & !63;
        let i = match self.find(line) {
            Ok(i) => i,
            Err(i) => self.insert_at(i, line),
        };
        let w = ((addr & 63) / 8) as usize;
        let k = self.keys[i];
        if k & MAPPED != 0 {
            // An evicted line written again without a miss in between
            // (not expected: the store's miss takes the entry); keep the
            // entry count exact anyway.
            self.rerecord_mapped(i, w, slot as u32);
            return;
        }
        self.keys[i] = k | 1 << (MASK_SHIFT + w as u32);
        self.slots[i][w] = slot as u32;
    }

    #[cold]
    fn rerecord_mapped(&mut self, i: usize, w: usize, slot: u32) {
        let k = self.keys[i];
        self.mapped_entries -= entries_of((k >> MASK_SHIFT) as u8, &self.slots[i]);
        self.keys[i] = k | 1 << (MASK_SHIFT + w as u32);
        self.slots[i][w] = slot;
        self.mapped_entries += entries_of((self.keys[i] >> MASK_SHIFT) as u8, &self.slots[i]);
    }

    /// Put new line `line` into empty bucket `i` (growing first if the
    /// table would be more than half full); returns its bucket.
    #[inline]
    fn insert_at(&mut self, mut i: usize, line: Addr) -> usize {
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
            i = self.find(line).unwrap_err();
        }
        self.keys[i] = line | OCCUPIED;
        self.slots[i] = [0; 8];
        self.len += 1;
        i
    }

    /// Lines with OOP words.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Words with an OOP version (recovery's work estimate).
    pub fn oop_words(&self) -> u64 {
        self.keys
            .iter()
            .map(|&k| u64::from((k >> MASK_SHIFT).count_ones()))
            .sum()
    }

    /// Where the OOP words of `line` are, if it has any.
    #[inline]
    pub fn get(&self, line: Addr) -> Option<LineLocs> {
        let i = self.find(line).ok()?;
        let k = self.keys[i];
        Some(LineLocs {
            slot: self.slots[i],
            mask: (k >> MASK_SHIFT) as u8,
            mapped: k & MAPPED != 0,
        })
    }

    /// Lines in the mapping table.
    #[inline]
    pub fn mapped_len(&self) -> u64 {
        self.mapped
    }

    /// Mapping-table entries (the table's occupancy).
    #[inline]
    pub fn mapped_entries(&self) -> u64 {
        self.mapped_entries
    }

    #[cfg(test)]
    pub fn is_mapped(&self, line: Addr) -> bool {
        self.get(line).is_some_and(|l| l.mapped)
    }

    /// Evicted line `line`: if it has OOP words, flag it mapped and return
    /// `Some(newly mapped)`; `None` if it has none.
    #[inline]
    pub fn map_if_oop(&mut self, line: Addr) -> Option<bool> {
        let i = self.find(line).ok()?;
        let k = self.keys[i];
        let new = k & MAPPED == 0;
        if new {
            self.keys[i] |= MAPPED;
            self.mapped += 1;
            self.mapped_entries += entries_of((k >> MASK_SHIFT) as u8, &self.slots[i]);
        }
        Some(new)
    }

    /// If `line` is mapped, unflag it and return its words' locations.
    #[inline]
    pub fn take_mapped(&mut self, line: Addr) -> Option<LineLocs> {
        let i = self.find(line).ok()?;
        let k = self.keys[i];
        if k & MAPPED == 0 {
            return None;
        }
        self.keys[i] = k & !MAPPED;
        self.mapped -= 1;
        self.mapped_entries -= entries_of((k >> MASK_SHIFT) as u8, &self.slots[i]);
        Some(LineLocs {
            slot: self.slots[i],
            mask: (k >> MASK_SHIFT) as u8,
            mapped: false,
        })
    }

    /// GC migrated the words of `line` in `mask`, the version of word `w`
    /// being the one in slice `slots[w]`: forget each unless a newer
    /// version exists. One lookup per line.
    pub fn migrated_line(&mut self, line: Addr, mask: u8, slots: &[u32; 8]) -> Migrated {
        debug_assert_ne!(mask, 0, "GC migrates at least one word per line");
        let Ok(i) = self.find(line) else {
            return Migrated {
                empty: true,
                unmapped: false,
            };
        };
        let k = self.keys[i];
        let mut left = (k >> MASK_SHIFT) as u8;
        for (w, (&gc, &cur)) in slots.iter().zip(&self.slots[i]).enumerate() {
            if mask & left & (1 << w) != 0 && cur == gc {
                left &= !(1 << w);
            }
        }
        let was_mapped = k & MAPPED != 0;
        if was_mapped {
            let old = (k >> MASK_SHIFT) as u8;
            self.mapped_entries -=
                entries_of(old, &self.slots[i]) - entries_of(left, &self.slots[i]);
        }
        if left == 0 {
            let unmapped = was_mapped;
            self.mapped -= u64::from(unmapped);
            self.remove_at(i);
            Migrated {
                empty: true,
                unmapped,
            }
        } else {
            self.keys[i] = (k & !(0xff << MASK_SHIFT)) | u64::from(left) << MASK_SHIFT;
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
        let mut slots = [0; 8];
        slots[w] = slot;
        self.migrated_line(line, 1 << w, &slots).empty
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
        // Empty between GC passes (most misses): skip hashing the line.
        if self.order.is_empty() {
            return None;
        }
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
        assert_eq!(ind.get(0x1000).unwrap().mask, 0b1);
        assert!(ind.migrated(0x1000, 9));
        assert!(ind.is_empty());
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
            assert_eq!(a.get(0x2000).map(|l| l.mask), b.get(0x2000).map(|l| l.mask));
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
        assert!(ind.get(0x40).is_some());
    }

    /// The former `Indirection`, a hash map of lines: the reference the
    /// open-addressing table must equal.
    #[derive(Default)]
    struct Reference {
        lines: std::collections::HashMap<Addr, LineLocs>,
        mapped: u64,
    }

    impl Reference {
        /// Entries of the mapped lines, counted from scratch.
        fn entries(&self) -> u64 {
            self.lines
                .values()
                .filter(|l| l.mapped)
                .map(|l| l.entries())
                .sum()
        }
    }

    impl Reference {
        fn record(&mut self, addr: Addr, slot: u64) {
            let e = self.lines.entry(addr & !63).or_default();
            let w = ((addr & 63) / 8) as usize;
            e.mask |= 1 << w;
            e.slot[w] = slot as u32;
        }
        fn map_if_oop(&mut self, line: Addr) -> Option<bool> {
            let e = self.lines.get_mut(&line)?;
            let new = !e.mapped;
            if new {
                e.mapped = true;
                self.mapped += 1;
            }
            Some(new)
        }
        fn take_mapped(&mut self, line: Addr) -> Option<LineLocs> {
            let e = self.lines.get_mut(&line).filter(|e| e.mapped)?;
            e.mapped = false;
            self.mapped -= 1;
            Some(*e)
        }
        fn migrated_line(&mut self, line: Addr, mask: u8, slots: &[u32; 8]) -> Migrated {
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
    }

    proptest::proptest! {
        #[test]
        fn table_equals_the_hash_map_it_replaced(
            ops in proptest::collection::vec(
                (0u8..4, 0u64..48, 0u64..8, 0u32..5, 1u8..=255, proptest::array::uniform8(0u32..5)),
                0..400,
            ),
            stride_log in 6u32..34,
        ) {
            // A small table (grows, wraps, shifts back on removal) over
            // few lines spaced by various strides, up to 40-bit addresses.
            let line = |i: u64| (i << stride_log) & LINE_BITS;
            let mut t = Indirection::default();
            let mut r = Reference::default();
            for &(op, l, w, slot, mask, slots) in &ops {
                let a = line(l);
                match op {
                    0 => {
                        t.record(a + 8 * w, u64::from(slot));
                        r.record(a + 8 * w, u64::from(slot));
                    }
                    1 => proptest::prop_assert_eq!(t.map_if_oop(a), r.map_if_oop(a)),
                    2 => proptest::prop_assert_eq!(t.take_mapped(a), r.take_mapped(a)),
                    _ => proptest::prop_assert_eq!(
                        t.migrated_line(a, mask, &slots),
                        r.migrated_line(a, mask, &slots)
                    ),
                }
                proptest::prop_assert_eq!(t.len(), r.lines.len());
                proptest::prop_assert_eq!(t.mapped_len(), r.mapped);
                proptest::prop_assert_eq!(t.mapped_entries(), r.entries());
            }
            for l in 0..48 {
                proptest::prop_assert_eq!(t.get(line(l)), r.lines.get(&line(l)).copied());
            }
            let words: u64 = r.lines.values().map(|l| u64::from(l.mask.count_ones())).sum();
            proptest::prop_assert_eq!(t.oop_words(), words);
        }
    }

    proptest::proptest! {
        #[test]
        fn mapping_entry_round_trips_in_8_bytes(
            line in 0u64..(1 << ENTRY_LINE_BITS),
            slot in 0u64..(1 << ENTRY_SLOT_BITS),
            in_buffer in proptest::bool::ANY,
        ) {
            let e = MappingEntry { line: line << 6, slot, in_buffer };
            let b = e.encode();
            proptest::prop_assert_eq!(b.len() as u64, MAPPING_ENTRY_BYTES);
            proptest::prop_assert_eq!(MappingEntry::decode(&b), e);
        }
    }

    #[test]
    fn a_line_needs_one_entry_per_slice_of_its_newest_words() {
        let mut ind = Indirection::default();
        // Words 0, 1 in slice 4; word 2 in slice 7; word 1 rewritten in 7.
        ind.record(0x1000, 4);
        ind.record(0x1008, 4);
        ind.record(0x1010, 7);
        ind.map_if_oop(0x1000);
        assert_eq!((ind.mapped_len(), ind.mapped_entries()), (1, 2));
        // GC migrates slice 4's words: one entry left.
        let mut slots = [0u32; 8];
        slots[..2].copy_from_slice(&[4, 4]);
        ind.migrated_line(0x1000, 0b11, &slots);
        assert_eq!((ind.mapped_len(), ind.mapped_entries()), (1, 1));
        ind.take_mapped(0x1000);
        assert_eq!((ind.mapped_len(), ind.mapped_entries()), (0, 0));
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
