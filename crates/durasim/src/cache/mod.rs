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
}

#[derive(Clone, Copy, Debug, Default)]
struct SlotMeta {
    ext: LineExt,
    owner: u16,
    /// Linked caches: the LLC slot holding this line's bytes and state.
    link: u32,
}

/// Tag bit 0: the slot is dirty. Line addresses are 64 B aligned, so the
/// bit fits beside the address, and the victim search that reads a set's
/// tags learns the victim's dirtiness without touching another array.
const DIRTY: Addr = 1;
/// Tag of an empty slot (never a line address).
const INVALID: Addr = Addr::MAX & !DIRTY;

/// One cache level instance.
pub struct Cache {
    sets: usize,
    ways: usize,
    set_shift: u32,
    pub latency: Cycle,
    /// Line address | [`DIRTY`] per slot, [`INVALID`] when the slot is
    /// empty (one array, so a lookup touches as little host memory as
    /// possible).
    tags: Vec<Addr>,
    lru: Vec<u64>,
    /// Line bytes per slot; empty in a linked (private) cache.
    data: Vec<LineData>,
    /// Owner, scheme state and (linked caches) LLC slot of a slot side by
    /// side: fills and evictions touch one host cache line for them.
    meta: Vec<SlotMeta>,
    clock: u64,
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
        let n = sets * ways;
        Cache {
            sets,
            ways,
            set_shift: LINE_BYTES.trailing_zeros(),
            latency,
            tags: vec![INVALID; n],
            lru: vec![0; n],
            data: if holds_data {
                vec![[0u8; LINE_BYTES as usize]; n]
            } else {
                Vec::new()
            },
            meta: vec![SlotMeta::default(); n],
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

    #[inline]
    fn set_of(&self, line_addr: Addr) -> usize {
        ((line_addr >> self.set_shift) as usize) & (self.sets - 1)
    }

    /// Slot index of `line_addr` if present.
    #[inline]
    pub fn find(&self, line_addr: Addr) -> Option<usize> {
        let base = self.set_of(line_addr) * self.ways;
        debug_assert_ne!(line_addr, INVALID);
        self.tags[base..base + self.ways]
            .iter()
            .position(|&t| t & !DIRTY == line_addr)
            .map(|w| base + w)
    }

    /// Mark slot most recently used.
    #[inline]
    pub fn touch(&mut self, slot: usize) {
        self.clock += 1;
        self.lru[slot] = self.clock;
    }

    /// The slot a fill of `line_addr` would use (invalid first, else LRU).
    #[inline]
    pub fn victim_slot(&self, line_addr: Addr) -> usize {
        let base = self.set_of(line_addr) * self.ways;
        let mut best = base;
        for i in base..base + self.ways {
            if self.tags[i] == INVALID {
                return i;
            }
            if self.lru[i] < self.lru[best] {
                best = i;
            }
        }
        best
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
        debug_assert_eq!(self.tags[slot], INVALID);
        self.tags[slot] = line_addr | Addr::from(dirty);
        self.data[slot] = *data;
        self.meta[slot] = SlotMeta {
            ext,
            owner,
            link: 0,
        };
        self.touch(slot);
    }

    /// Install a line in `slot` of a linked cache, clean, its bytes and
    /// state held by LLC slot `link`.
    #[inline]
    pub fn install_link(&mut self, slot: usize, line_addr: Addr, link: usize) {
        debug_assert_eq!(self.tags[slot], INVALID);
        debug_assert!(self.data.is_empty(), "only linked caches hold links");
        self.tags[slot] = line_addr;
        self.meta[slot].link = link as u32;
        self.touch(slot);
    }

    /// Linked caches: the LLC slot holding the line in `slot`.
    #[inline]
    pub fn link(&self, slot: usize) -> usize {
        self.meta[slot].link as usize
    }

    /// Remove the line in `slot`, returning it if it was valid (caches
    /// that hold their bytes).
    #[inline]
    pub fn take(&mut self, slot: usize) -> Option<Victim> {
        let tag = self.tags[slot];
        if tag == INVALID {
            return None;
        }
        self.tags[slot] = INVALID;
        Some(Victim {
            addr: tag & !DIRTY,
            dirty: tag & DIRTY != 0,
            data: self.data[slot],
            ext: self.meta[slot].ext,
            owner: self.meta[slot].owner,
        })
    }

    /// Drop the line in `slot` without copying it out (its state and link
    /// stay readable until the slot is refilled).
    #[inline]
    pub fn invalidate(&mut self, slot: usize) {
        self.tags[slot] = INVALID;
    }

    /// The line address held in `slot`, if any.
    #[inline]
    pub fn valid_addr(&self, slot: usize) -> Option<Addr> {
        let t = self.tags[slot];
        (t != INVALID).then_some(t & !DIRTY)
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
        (&mut self.data[slot], &mut self.meta[slot].ext)
    }
    #[inline]
    pub fn ext(&self, slot: usize) -> &LineExt {
        &self.meta[slot].ext
    }
    #[inline]
    pub fn ext_mut(&mut self, slot: usize) -> &mut LineExt {
        &mut self.meta[slot].ext
    }
    #[inline]
    pub fn is_dirty(&self, slot: usize) -> bool {
        self.tags[slot] & DIRTY != 0
    }
    #[inline]
    pub fn set_dirty(&mut self, slot: usize, d: bool) {
        debug_assert_ne!(self.tags[slot], INVALID);
        self.tags[slot] = (self.tags[slot] & !DIRTY) | Addr::from(d);
    }
    #[inline]
    pub fn owner(&self, slot: usize) -> u16 {
        self.meta[slot].owner
    }

    /// All valid slots (for drains and checks; not on the hot path).
    pub fn valid_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.tags.len()).filter(|&i| self.tags[i] != INVALID)
    }

    pub fn line_addr(&self, slot: usize) -> Addr {
        self.tags[slot] & !DIRTY
    }

    /// LRU order of a set, most recent first (tests).
    pub fn lru_order(&self, set: usize) -> Vec<Addr> {
        let base = set * self.ways;
        let mut v: Vec<(u64, Addr)> = (base..base + self.ways)
            .filter(|&i| self.tags[i] != INVALID)
            .map(|i| (self.lru[i], self.tags[i] & !DIRTY))
            .collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.0));
        v.into_iter().map(|x| x.1).collect()
    }
}
