//! Set-associative write-back/write-allocate caches with LRU replacement.
//! Lines carry their 64 bytes and a small [`LineExt`] that schemes use.
//!
//! A cache either holds its lines' bytes and state itself (the shared LLC,
//! or a stand-alone cache) or, for the private levels of an inclusive
//! hierarchy, links each slot to the LLC slot of the same line: every line
//! then has one copy of its bytes, which is what every level would hold
//! anyway (see [`hierarchy`] for why that is exact), and fills and
//! write-backs between levels move no bytes.

pub mod hierarchy;

pub use hierarchy::{Hierarchy, MemSide};

use crate::types::{Addr, Cycle, LineData, LINE_BYTES};

/// Per-line state schemes may use; travels with the line between levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineExt {
    /// HOOP's persistent bit: the line was modified inside a transaction.
    pub tx: bool,
    /// Transaction id of the last transactional store (scheme-assigned).
    pub txid: u32,
    /// Per-word (8 bytes) state bits, e.g. words written in the current
    /// transaction (HOOP word tracking) or MorLog's dirty-word flags.
    pub word_mask: u8,
    /// A second per-word bitmask for schemes that need two (e.g. logged words).
    pub word_mask2: u8,
    /// Thread id of the transaction in `txid` (MorLog's 8-bit TID, Fig. 7).
    /// Fits the struct's padding: `LineExt` stays 8 bytes.
    pub tid: u8,
}

/// Tag bit 0: the slot is dirty. Line addresses are 64 B aligned, so the
/// bit fits beside the address, and the victim search that reads a set's
/// tags learns the victim's dirtiness without touching another word.
const DIRTY: Addr = 1;
/// Tag of an empty slot (never a line address).
const INVALID: Addr = Addr::MAX & !DIRTY;

/// A slot's state word holds its LRU stamp in the high half, so comparing
/// whole words compares stamps, and in the low half its aux value: the
/// owner core in a cache that holds its lines, the LLC slot in a linked
/// cache.
const STAMP_SHIFT: u32 = 32;
const AUX_MASK: u64 = (1 << STAMP_SHIFT) - 1;
/// Host cache line: set blocks start on one so a small set spans as few
/// host lines as possible.
const HOST_LINE_BYTES: usize = 64;

/// One cache level instance.
///
/// Each set is one block of words: its ways' tag words (line address |
/// [`DIRTY`], or [`INVALID`]) followed by their state words (LRU stamp and
/// aux value). A 4-way set is one host cache line, an 8-way set two: a
/// lookup, the victim search, the LRU update and the link of a hit touch
/// only the set's own block.
pub struct Cache {
    sets: usize,
    ways: usize,
    /// log2 of the ways rounded up to a power of two: slot numbers are
    /// `set << way_bits | way`, dense when the ways are a power of two.
    way_bits: u32,
    /// `1 << way_bits`: distance from a tag word to its state word.
    padded_ways: usize,
    /// log2 of a set block's words (`way_bits + 1`).
    block_shift: u32,
    /// `sets - 1`: the set is the line number masked by it.
    set_mask: usize,
    pub latency: Cycle,
    /// The set blocks, `2 << way_bits` words each (tags, then states).
    words: Vec<u64>,
    /// Index in `words` of set 0's block (the first host-line aligned word).
    block0: usize,
    /// Line bytes per slot; empty in a linked (private) cache.
    data: Vec<LineData>,
    /// Scheme state per slot; empty in a linked cache.
    ext: Vec<LineExt>,
    /// Last LRU stamp handed out (stamps only compare within a set; see
    /// [`Cache::renumber_stamps`] for the wrap).
    clock: u32,
    pub hits: u64,
    pub misses: u64,
}

/// A line removed from a cache.
#[derive(Clone, Copy, Debug)]
pub struct Victim {
    pub addr: Addr,
    pub dirty: bool,
    pub data: LineData,
    pub ext: LineExt,
    pub owner: u16,
}

impl Cache {
    /// A cache that holds its lines' bytes and state.
    pub fn new(size_bytes: u64, ways: usize, latency: Cycle) -> Self {
        Self::build(size_bytes, ways, latency, true)
    }

    /// A private cache of an inclusive hierarchy: slots link to the LLC
    /// slot that holds the line's bytes and state ([`Cache::install_link`]).
    pub fn new_linked(size_bytes: u64, ways: usize, latency: Cycle) -> Self {
        Self::build(size_bytes, ways, latency, false)
    }

    fn build(size_bytes: u64, ways: usize, latency: Cycle, holds_data: bool) -> Self {
        let lines = (size_bytes / LINE_BYTES) as usize;
        let ways = ways.min(lines).max(1);
        let sets = (lines / ways).max(1);
        assert!(sets.is_power_of_two(), "cache sets must be a power of two");
        let way_bits = ways.next_power_of_two().trailing_zeros();
        let slots = sets << way_bits;
        assert!(
            u32::try_from(slots).is_ok(),
            "slot numbers must fit the 32-bit aux value"
        );
        let words_per_host_line = HOST_LINE_BYTES / std::mem::size_of::<u64>();
        // Room to start set 0 on a host line; fresh slots are invalid with
        // stamp 0.
        let mut words = vec![0; 2 * slots + words_per_host_line - 1];
        let block0 = words
            .as_ptr()
            .align_offset(HOST_LINE_BYTES)
            .min(words_per_host_line - 1);
        // Padding ways (non-power-of-two ways) are invalid too: never
        // scanned, but a hinted lookup may test any slot.
        for set in 0..sets {
            let t = block0 + (set << (way_bits + 1));
            words[t..t + (1 << way_bits)].fill(INVALID);
        }
        let (data, ext) = if holds_data {
            (
                vec![[0u8; LINE_BYTES as usize]; slots],
                vec![LineExt::default(); slots],
            )
        } else {
            (Vec::new(), Vec::new())
        };
        Cache {
            sets,
            ways,
            way_bits,
            padded_ways: 1 << way_bits,
            block_shift: way_bits + 1,
            set_mask: sets - 1,
            latency,
            words,
            block0,
            data,
            ext,
            clock: 0,
            hits: 0,
            misses: 0,
        }
    }

    pub fn sets(&self) -> usize {
        self.sets
    }
    pub fn ways(&self) -> usize {
        self.ways
    }
    /// Number of slot indices (`slot < slot_count()`; with non-power-of-two
    /// ways some are never valid).
    pub fn slot_count(&self) -> usize {
        self.sets << self.way_bits
    }
    /// The slot of `way` in `set`.
    pub fn slot_of(&self, set: usize, way: usize) -> usize {
        (set << self.way_bits) + way
    }

    #[inline]
    fn set_of(&self, line_addr: Addr) -> usize {
        ((line_addr / LINE_BYTES) as usize) & self.set_mask
    }

    /// Index in `words` of the first tag word of `set`'s block.
    #[inline]
    fn block(&self, set: usize) -> usize {
        self.block0 + (set << self.block_shift)
    }

    /// Index in `words` of `slot`'s tag word; its state word follows the
    /// set's tags, `1 << way_bits` words later.
    #[inline]
    fn tag_index(&self, slot: usize) -> usize {
        // (set << block_shift) + way = slot + (set << way_bits)
        self.block0 + slot + (slot & !(self.padded_ways - 1))
    }

    #[inline]
    fn state_index(&self, slot: usize) -> usize {
        self.tag_index(slot) + self.padded_ways
    }

    /// Start fetching `line_addr`'s set (tag and state words) into the
    /// host caches: a hint for a lookup that comes soon (host speed only).
    #[inline(always)]
    pub fn prefetch_set(&self, line_addr: Addr) {
        let t = self.block(self.set_of(line_addr));
        let end = (t + 2 * self.padded_ways).min(self.words.len());
        let mut i = t;
        while i < end {
            crate::types::prefetch(&self.words[i]);
            i += 8;
        }
    }

    /// Slot index of `line_addr` if present.
    #[inline]
    pub fn find(&self, line_addr: Addr) -> Option<usize> {
        debug_assert_ne!(line_addr, INVALID);
        let set = self.set_of(line_addr);
        let t = self.block(set);
        self.words[t..t + self.ways]
            .iter()
            .position(|&tag| tag & !DIRTY == line_addr)
            .map(|way| (set << self.way_bits) + way)
    }

    /// Slot index of `line_addr` if present, marked most recently used
    /// (one pass over the set's block for the lookup and the LRU update).
    // Always inlined: the L1 hit path is most of the simulator's accesses.
    #[inline(always)]
    pub fn lookup(&mut self, line_addr: Addr) -> Option<usize> {
        debug_assert_ne!(line_addr, INVALID);
        let set = self.set_of(line_addr);
        let t = self.block(set);
        let way = self.words[t..t + self.ways]
            .iter()
            .position(|&tag| tag & !DIRTY == line_addr)?;
        self.stamp_mru(t + self.padded_ways + way);
        Some((set << self.way_bits) + way)
    }

    /// [`Cache::lookup`] when `line_addr` is likely in `hint` (a slot that
    /// held it before; any slot number is exact): if `hint` still holds
    /// it, the same result (a line is in at most one way of its own set,
    /// and `hint` is marked most recent) without scanning the set;
    /// otherwise the scan.
    #[inline(always)]
    pub fn lookup_hinted(&mut self, line_addr: Addr, hint: usize) -> Option<usize> {
        let t = self.tag_index(hint);
        if self
            .words
            .get(t)
            .is_some_and(|&tag| tag & !DIRTY == line_addr)
        {
            self.stamp_mru(t + self.padded_ways);
            return Some(hint);
        }
        self.lookup(line_addr)
    }

    /// [`Cache::lookup`], and on a miss the slot [`Cache::victim_slot`]
    /// would return, from one pass over the set (for a cache that mostly
    /// misses, such as the LLC: its lookup scans every way anyway).
    #[inline]
    pub fn lookup_or_victim(&mut self, line_addr: Addr) -> Result<usize, usize> {
        debug_assert_ne!(line_addr, INVALID);
        let set = self.set_of(line_addr);
        let t = self.block(set);
        let s = t + self.padded_ways;
        let (tags, states) = (&self.words[t..t + self.ways], &self.words[s..s + self.ways]);
        // The victim is the first way of least key, an empty way's key
        // being 0: a valid way's state is above it (stamps start at 1), so
        // this is `victim_slot`'s first empty way, else least recent.
        let (mut best_way, mut best_key) = (0, u64::MAX);
        for (way, (&tag, &state)) in tags.iter().zip(states).enumerate() {
            if tag & !DIRTY == line_addr {
                self.stamp_mru(s + way);
                return Ok((set << self.way_bits) + way);
            }
            let key = if tag == INVALID { 0 } else { state };
            if key < best_key {
                (best_way, best_key) = (way, key);
            }
        }
        Err((set << self.way_bits) + best_way)
    }

    /// Mark slot most recently used.
    #[inline]
    pub fn touch(&mut self, slot: usize) {
        self.stamp_mru(self.state_index(slot));
    }

    /// Give the state word at `state_word` the next LRU stamp, keeping its aux.
    #[inline(always)]
    fn stamp_mru(&mut self, state_word: usize) {
        let stamp = self.next_stamp();
        let i = state_word;
        self.words[i] = (u64::from(stamp) << STAMP_SHIFT) | (self.words[i] & AUX_MASK);
    }

    #[inline]
    fn next_stamp(&mut self) -> u32 {
        let (next, wrapped) = self.clock.overflowing_add(1);
        self.clock = next;
        if wrapped {
            self.renumber_stamps();
        }
        self.clock
    }

    /// The 32-bit clock ran out: replace each set's stamps by their ranks
    /// within the set (1 = least recent) and restart the clock just above
    /// them (the caller's stamp is the next one).
    /// Stamps are only ever compared within a set, so LRU order is kept
    /// exactly. Once per 4 G touches of this cache.
    #[cold]
    #[inline(never)]
    fn renumber_stamps(&mut self) {
        let mut order: Vec<(u64, usize)> = Vec::with_capacity(self.ways);
        for set in 0..self.sets {
            let states = self.block(set) + self.padded_ways;
            order.clear();
            order.extend((0..self.ways).map(|w| (self.words[states + w] >> STAMP_SHIFT, w)));
            order.sort_unstable();
            for (rank, &(_, w)) in order.iter().enumerate() {
                let i = states + w;
                self.words[i] = ((rank as u64 + 1) << STAMP_SHIFT) | (self.words[i] & AUX_MASK);
            }
        }
        self.clock = self.ways as u32 + 1;
    }

    /// The slot a fill of `line_addr` would use (invalid first, else LRU).
    #[inline]
    pub fn victim_slot(&self, line_addr: Addr) -> usize {
        let set = self.set_of(line_addr);
        let t = self.block(set);
        let s = t + self.padded_ways;
        let (tags, states) = (&self.words[t..t + self.ways], &self.words[s..s + self.ways]);
        let (mut best_way, mut best_state) = (0, states[0]);
        for (way, (&tag, &state)) in tags.iter().zip(states).enumerate() {
            if tag == INVALID {
                return (set << self.way_bits) + way;
            }
            // Valid slots of a set have distinct stamps: the aux half
            // never decides.
            if state < best_state {
                (best_way, best_state) = (way, state);
            }
        }
        (set << self.way_bits) + best_way
    }

    /// Install a line in `slot` (which must be free: call `take` first).
    #[inline]
    pub fn install(
        &mut self,
        slot: usize,
        line_addr: Addr,
        data: &LineData,
        ext: LineExt,
        dirty: bool,
        owner: u16,
    ) {
        self.fill(slot, line_addr | Addr::from(dirty), u32::from(owner));
        self.data[slot] = *data;
        self.ext[slot] = ext;
    }

    /// Install a line in `slot` of a linked cache, clean, its bytes and
    /// state held by LLC slot `link`.
    #[inline]
    pub fn install_link(&mut self, slot: usize, line_addr: Addr, link: usize) {
        debug_assert!(self.data.is_empty(), "only linked caches hold links");
        self.fill(slot, line_addr, link as u32);
    }

    /// Write a free slot's tag word and its state word (most recent, `aux`).
    #[inline]
    fn fill(&mut self, slot: usize, tag: Addr, aux: u32) {
        let stamp = self.next_stamp();
        let t = self.tag_index(slot);
        debug_assert_eq!(self.words[t], INVALID);
        self.words[t] = tag;
        self.words[t + self.padded_ways] = (u64::from(stamp) << STAMP_SHIFT) | u64::from(aux);
    }

    #[inline]
    fn aux(&self, slot: usize) -> u32 {
        (self.words[self.state_index(slot)] & AUX_MASK) as u32
    }

    /// Linked caches: the LLC slot holding the line in `slot`.
    #[inline]
    pub fn link(&self, slot: usize) -> usize {
        self.aux(slot) as usize
    }

    /// Remove the line in `slot`, returning it if it was valid (caches
    /// that hold their bytes).
    #[inline]
    pub fn take(&mut self, slot: usize) -> Option<Victim> {
        let t = self.tag_index(slot);
        let tag = self.words[t];
        if tag == INVALID {
            return None;
        }
        self.words[t] = INVALID;
        Some(Victim {
            addr: tag & !DIRTY,
            dirty: tag & DIRTY != 0,
            data: self.data[slot],
            ext: self.ext[slot],
            owner: self.owner(slot),
        })
    }

    /// Drop the line in `slot` without copying it out (its state and link
    /// stay readable until the slot is refilled).
    #[inline]
    pub fn invalidate(&mut self, slot: usize) {
        let t = self.tag_index(slot);
        self.words[t] = INVALID;
    }

    /// The line address held in `slot`, if any.
    #[inline]
    pub fn valid_addr(&self, slot: usize) -> Option<Addr> {
        let tag = self.words[self.tag_index(slot)];
        (tag != INVALID).then_some(tag & !DIRTY)
    }

    #[inline]
    pub fn data(&self, slot: usize) -> &LineData {
        &self.data[slot]
    }
    #[inline]
    pub fn data_mut(&mut self, slot: usize) -> &mut LineData {
        &mut self.data[slot]
    }
    /// Bytes and scheme state of the line in `slot`, for an update.
    #[inline]
    pub fn line_mut(&mut self, slot: usize) -> (&mut LineData, &mut LineExt) {
        (&mut self.data[slot], &mut self.ext[slot])
    }
    #[inline]
    pub fn ext(&self, slot: usize) -> &LineExt {
        &self.ext[slot]
    }
    #[inline]
    pub fn ext_mut(&mut self, slot: usize) -> &mut LineExt {
        &mut self.ext[slot]
    }
    #[inline]
    pub fn is_dirty(&self, slot: usize) -> bool {
        self.words[self.tag_index(slot)] & DIRTY != 0
    }
    #[inline]
    pub fn set_dirty(&mut self, slot: usize, d: bool) {
        let t = self.tag_index(slot);
        debug_assert_ne!(self.words[t], INVALID);
        self.words[t] = (self.words[t] & !DIRTY) | Addr::from(d);
    }
    #[inline]
    pub fn owner(&self, slot: usize) -> u16 {
        self.aux(slot) as u16
    }

    /// All valid slots (for drains and checks; not on the hot path).
    pub fn valid_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.sets)
            .flat_map(move |set| (0..self.ways).map(move |way| (set << self.way_bits) + way))
            .filter(|&slot| self.valid_addr(slot).is_some())
    }

    pub fn line_addr(&self, slot: usize) -> Addr {
        self.words[self.tag_index(slot)] & !DIRTY
    }

    /// LRU order of a set, most recent first (tests).
    pub fn lru_order(&self, set: usize) -> Vec<Addr> {
        let mut v: Vec<(u64, Addr)> = (0..self.ways)
            .map(|way| (set << self.way_bits) + way)
            .filter_map(|slot| {
                let stamp = self.words[self.state_index(slot)] >> STAMP_SHIFT;
                self.valid_addr(slot).map(|a| (stamp, a))
            })
            .collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.0));
        v.into_iter().map(|x| x.1).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two caches of `ways` ways and 4 sets, and the line the xorshift
    /// state `x` picks next among three times as many lines as slots.
    fn twin_caches(ways: usize) -> (Cache, Cache) {
        let size = (4 * ways) as u64 * LINE_BYTES;
        (Cache::new(size, ways, 1), Cache::new(size, ways, 1))
    }

    /// Install `line` clean into `slot` of each twin (after a miss).
    fn fill_both(twins: [&mut Cache; 2], slot: usize, line: Addr) {
        for c in twins {
            c.take(slot);
            c.install(slot, line, &[0u8; 64], LineExt::default(), false, 0);
        }
    }

    fn next_line(x: &mut u64, ways: usize) -> Addr {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        (*x % (3 * (4 * ways) as u64)) * LINE_BYTES
    }

    /// `prefetch_set` reads within the cache's words for every set (the
    /// last set's block included) and changes nothing: a cache given the
    /// hint before each access answers exactly like one that is not.
    #[test]
    fn prefetch_set_is_only_a_hint() {
        for ways in [1usize, 3, 4, 8, 16] {
            let (mut a, mut b) = twin_caches(ways);
            let mut x: u64 = 1234567;
            for _ in 0..2000 {
                let line = next_line(&mut x, ways);
                a.prefetch_set(line);
                let got = a.lookup_or_victim(line);
                assert_eq!(got, b.lookup_or_victim(line), "ways {ways}");
                if let Err(slot) = got {
                    fill_both([&mut a, &mut b], slot, line);
                }
            }
        }
    }

    /// `lookup_or_victim` = `lookup`, else `victim_slot`, on random fills,
    /// hits and invalidations (holes before a hit's way included).
    #[test]
    fn lookup_or_victim_equals_lookup_then_victim() {
        for ways in [1usize, 3, 4, 8, 16] {
            let (mut a, mut b) = twin_caches(ways);
            let mut x: u64 = 987654321;
            for _ in 0..4000 {
                let line = next_line(&mut x, ways);
                if x.is_multiple_of(7) {
                    // Back-invalidation leaves a hole.
                    let (sa, sb) = (a.find(line), b.find(line));
                    assert_eq!(sa, sb);
                    if let Some(s) = sa {
                        a.invalidate(s);
                        b.invalidate(s);
                    }
                    continue;
                }
                let got = a.lookup_or_victim(line);
                let want = b.lookup(line).ok_or_else(|| b.victim_slot(line));
                assert_eq!(got, want, "ways {ways}, line {line:#x}");
                if let Err(slot) = got {
                    fill_both([&mut a, &mut b], slot, line);
                }
                let set = a.set_of(line);
                assert_eq!(a.lru_order(set), b.lru_order(set));
            }
        }
    }

    /// `lookup_hinted` = `lookup` (result, LRU order, clock) for any hint:
    /// the slot that last held the line, a stale one, or any other slot,
    /// on random fills, hits and invalidations.
    #[test]
    fn lookup_hinted_equals_lookup() {
        for ways in [1usize, 3, 4, 8, 16] {
            let (mut a, mut b) = twin_caches(ways);
            let mut last: std::collections::HashMap<Addr, usize> = Default::default();
            let mut x: u64 = 192837465;
            for _ in 0..4000 {
                let line = next_line(&mut x, ways);
                if x.is_multiple_of(7) {
                    if let Some(s) = a.find(line) {
                        a.invalidate(s);
                        b.invalidate(s);
                    }
                    continue;
                }
                let hint = if x.is_multiple_of(3) {
                    (x >> 20) as usize % a.slot_count()
                } else {
                    last.get(&line).copied().unwrap_or(0)
                };
                let got = a.lookup_hinted(line, hint);
                let want = b.lookup(line);
                assert_eq!(got, want, "ways {ways}, line {line:#x}, hint {hint}");
                let slot = match got {
                    Some(s) => s,
                    None => {
                        let slot = a.victim_slot(line);
                        for c in [&mut a, &mut b] {
                            c.take(slot);
                            c.install(slot, line, &[0u8; 64], LineExt::default(), false, 0);
                        }
                        slot
                    }
                };
                last.insert(line, slot);
                let set = a.set_of(line);
                assert_eq!(a.lru_order(set), b.lru_order(set));
                assert_eq!(a.clock, b.clock);
            }
        }
    }

    /// Sets and ways through the clock's wrap: the renumbered stamps keep
    /// every set's LRU order and victim choice.
    #[test]
    fn cache_lru_survives_stamp_wrap() {
        for ways in [1usize, 3, 4, 16] {
            let sets = 4;
            let mut c = Cache::new((sets * ways) as u64 * LINE_BYTES, ways, 1);
            c.clock = u32::MAX - 50;
            let mut model: Vec<Vec<Addr>> = vec![Vec::new(); sets];
            let mut x: u64 = 12345;
            for _ in 0..400 {
                // xorshift: a fixed pseudo-random line sequence
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = (x % (3 * (sets * ways) as u64)) * LINE_BYTES;
                let set = c.set_of(a);
                let m = &mut model[set];
                if let Some(s) = c.find(a) {
                    c.touch(s);
                    m.retain(|&y| y != a);
                } else {
                    let slot = c.victim_slot(a);
                    let victim = c.take(slot).map(|v| v.addr);
                    let want = if m.len() == ways { m.pop() } else { None };
                    assert_eq!(victim, want, "ways {ways}: victim of {a:#x}");
                    c.install(slot, a, &[0u8; 64], LineExt::default(), false, 7);
                }
                m.insert(0, a);
                assert_eq!(c.lru_order(set), *m, "ways {ways}");
            }
            assert!(c.clock < 1000, "the clock wrapped and was renumbered");
        }
    }
}
