//! Optane-like DIMM (EHOU paper §II-B, Fig. 1): an on-DIMM
//! controller behind the memory controller's ADR write-pending queue.
//!
//! - Every access is translated through the Address Indirection Table
//!   (AIT). Its entries live in the media; the AIT cache (on-DIMM DRAM,
//!   set-associative LRU, `dimm.ait_cache_*`, EHOU Table I) holds recent
//!   ones. A hit costs `dimm.ait_cache_latency_cycles`; a miss adds a media
//!   read of the entry. Without wear-leveling (EHOU §IV-A does not model
//!   it) the AIT is the identity, so for every scheme but EHOU the
//!   translation is timing only. EHOU owns the AIT (`Dimm::claim_ait`): it
//!   remaps cache lines itself through an [`AitCache`] of the same geometry
//!   and the controller then skips its own lookup.
//! - The media is accessed in `dimm.media_block_bytes` blocks behind a
//!   write-combining buffer of `dimm.wcb_blocks` blocks (Yang et al., FAST
//!   2020: XPBuffer). A write to a buffered block combines; a write to
//!   another block takes an entry and the LRU entry's block is programmed
//!   (its cost is charged to the write that evicts it), after a read of
//!   the block when it was only partly written (read-modify-write).
//! - Durability is unchanged: the DIMM is inside the persistence domain
//!   (ADR covers the write-pending queue, the DIMM buffers and, through the
//!   DIMM's supercapacitor, the AIT cache), so a write persists when the
//!   memory controller accepts it, as without the DIMM.

use super::lru_order::{LruOrder, NIL};
use crate::config::Params;
use crate::types::{Addr, Cycle};

/// DIMM counters (the measured window, with the controller's).
#[derive(Clone, Debug, Default)]
pub struct DimmStats {
    pub ait_hits: u64,
    pub ait_misses: u64,
    /// Media reads of AIT entries (AIT-cache misses).
    pub ait_media_reads: u64,
    /// Writes combined into a block already in the write-combining buffer.
    pub wcb_hits: u64,
    pub wcb_misses: u64,
    /// Media blocks programmed (write-combining buffer evictions).
    pub media_block_writes: u64,
    /// Of those, blocks only partly written: read-modify-writes.
    pub media_rmw: u64,
}

impl DimmStats {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ait_cache_hits": self.ait_hits,
            "ait_cache_misses": self.ait_misses,
            "ait_media_reads": self.ait_media_reads,
            "wcb_hits": self.wcb_hits,
            "wcb_misses": self.wcb_misses,
            "media_block_writes": self.media_block_writes,
            "media_rmw": self.media_rmw,
        })
    }
}

/// State of an AIT-cache entry (EHOU §III-A: the S/C bit is meaningful
/// only for dirty entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryState {
    /// Same mapping as the AIT in the media.
    Clean,
    /// Dirty and committed (C): newer than the AIT, durable through the
    /// supercapacitor flush.
    Committed,
    /// Dirty and speculative (S): written by the running transaction of
    /// `core`; dropped on a crash.
    Speculative,
}

/// One AIT-cache way (its tag is kept apart: [`AitCache::tag`]).
#[derive(Clone, Copy, Debug)]
pub struct AitEntry {
    /// Device address the block maps to.
    pub dev: u64,
    pub state: EntryState,
    /// Owner core of a speculative entry.
    pub core: u16,
    stamp: u64,
}

const INVALID: u64 = u64::MAX;

/// A set-associative LRU AIT cache with EHOU's victim rule: a speculative
/// entry is chosen only when every way of the set is speculative.
pub struct AitCache {
    ways: usize,
    /// `sets - 1` (a power of two): the set of a tag is its low bits.
    set_mask: u64,
    /// Mapped block number (physical address / granularity) of each slot,
    /// `INVALID` when empty; apart from the entries so that a lookup scans
    /// one set's tags in two host cache lines.
    tags: Vec<u64>,
    entries: Vec<AitEntry>,
    clock: u64,
}

impl AitCache {
    /// Host bytes per slot (tag and entry), for the footprint estimate.
    pub const HOST_BYTES_PER_SLOT: u64 =
        (std::mem::size_of::<u64>() + std::mem::size_of::<AitEntry>()) as u64;

    pub fn new(sets: usize, ways: usize) -> Self {
        assert!(sets.is_power_of_two(), "AIT-cache sets: a power of two");
        AitCache {
            ways,
            set_mask: sets as u64 - 1,
            tags: vec![INVALID; sets * ways],
            entries: vec![
                AitEntry {
                    dev: 0,
                    state: EntryState::Clean,
                    core: 0,
                    stamp: 0,
                };
                sets * ways
            ],
            clock: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.tags.len()
    }

    #[inline]
    fn set_base(&self, tag: u64) -> usize {
        (tag & self.set_mask) as usize * self.ways
    }

    /// The slot of `tag` in its set (tags are unique in a set).
    #[inline]
    fn find_in_set(&self, tag: u64) -> Option<usize> {
        let base = self.set_base(tag);
        self.tags[base..base + self.ways]
            .iter()
            .position(|&t| t == tag)
            .map(|w| base + w)
    }

    /// The slot (set * ways + way) holding `tag`, made most recently used.
    #[inline]
    pub fn lookup(&mut self, tag: u64) -> Option<usize> {
        self.clock += 1;
        let i = self.find_in_set(tag)?;
        self.entries[i].stamp = self.clock;
        Some(i)
    }

    /// The slot holding `tag`, without touching the LRU order (the
    /// controller's own bookkeeping, e.g. flipping S/C bits at commit).
    #[inline]
    pub fn find(&self, tag: u64) -> Option<usize> {
        self.find_in_set(tag)
    }

    /// The slot `tag` would be inserted into: an invalid way, else the LRU
    /// non-speculative way, else (overflow) the LRU speculative way. The
    /// caller handles the victim (returned if valid; its tag is still
    /// [`AitCache::tag`] of the slot) before [`AitCache::fill`].
    pub fn victim(&self, tag: u64) -> (usize, Option<AitEntry>) {
        let base = self.set_base(tag);
        let set = base..base + self.ways;
        if let Some(i) = set.clone().find(|&i| self.tags[i] == INVALID) {
            return (i, None);
        }
        let lru = |spec: bool| {
            set.clone()
                .filter(|&i| (self.entries[i].state == EntryState::Speculative) == spec)
                .min_by_key(|&i| self.entries[i].stamp)
        };
        let v = lru(false).or_else(|| lru(true)).expect("a way");
        (v, Some(self.entries[v]))
    }

    /// Install `tag -> dev` in `slot` (most recently used).
    pub fn fill(&mut self, slot: usize, tag: u64, dev: u64, state: EntryState, core: u16) {
        self.clock += 1;
        self.tags[slot] = tag;
        self.entries[slot] = AitEntry {
            dev,
            state,
            core,
            stamp: self.clock,
        };
    }

    /// The block number `slot` maps (`u64::MAX` if empty).
    pub fn tag(&self, slot: usize) -> u64 {
        self.tags[slot]
    }

    pub fn entry(&self, slot: usize) -> &AitEntry {
        &self.entries[slot]
    }

    pub fn entry_mut(&mut self, slot: usize) -> &mut AitEntry {
        &mut self.entries[slot]
    }

    /// Number of valid entries in `state`.
    pub fn count(&self, state: EntryState) -> usize {
        self.tags
            .iter()
            .zip(&self.entries)
            .filter(|(&t, e)| t != INVALID && e.state == state)
            .count()
    }
}

/// Device-internal address of the identity AIT's entries (outside every
/// scheme's space; read for timing only, never written).
const AIT_BASE: Addr = 1 << 56;

/// The DIMM's controller state (owned by the NVM `MemoryController`).
pub struct Dimm {
    pub cache: AitCache,
    granule_shift: u32,
    pub ait_cycles: Cycle,
    block_shift: u32,
    lines_per_block: u32,
    wcb: Wcb,
    /// A scheme (EHOU) translates addresses itself.
    scheme_owns_ait: bool,
}

/// The write-combining buffer: its entries' blocks and written-line masks,
/// found by block, in LRU order (a doubly linked list over the entries).
struct Wcb {
    cap: usize,
    blocks: Vec<u64>,
    masks: Vec<u64>,
    /// Most to least recently written.
    order: LruOrder,
    /// Block -> entry: chains of entries from `buckets` (hashed block)
    /// through `chain`; a hash map's removals leave tombstones that force
    /// periodic rehashing under this buffer's steady replacement.
    buckets: Vec<u32>,
    chain: Vec<u32>,
    bucket_shift: u32,
}

impl Wcb {
    fn new(cap: usize) -> Self {
        Wcb {
            cap,
            blocks: Vec::with_capacity(cap),
            masks: Vec::with_capacity(cap),
            order: LruOrder::with_capacity(cap),
            // At least two buckets per entry: short chains.
            buckets: vec![NIL; (2 * cap).next_power_of_two()],
            chain: Vec::with_capacity(cap),
            bucket_shift: 64 - (2 * cap).next_power_of_two().trailing_zeros(),
        }
    }

    #[inline]
    fn bucket(&self, block: u64) -> usize {
        // Fibonacci hashing: nearby blocks spread over the buckets.
        (block.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.bucket_shift) as usize
    }

    /// The entry buffering `block`.
    #[inline]
    fn find(&self, block: u64) -> Option<u32> {
        let mut i = self.buckets[self.bucket(block)];
        while i != NIL {
            if self.blocks[i as usize] == block {
                return Some(i);
            }
            i = self.chain[i as usize];
        }
        None
    }

    /// Index entry `i` (its block set) under its block.
    fn link(&mut self, i: u32) {
        let b = self.bucket(self.blocks[i as usize]);
        self.chain[i as usize] = self.buckets[b];
        self.buckets[b] = i;
    }

    /// Remove entry `i` from its block's chain.
    fn unlink(&mut self, i: u32) {
        let b = self.bucket(self.blocks[i as usize]);
        if self.buckets[b] == i {
            self.buckets[b] = self.chain[i as usize];
            return;
        }
        let mut j = self.buckets[b];
        while self.chain[j as usize] != i {
            j = self.chain[j as usize];
        }
        self.chain[j as usize] = self.chain[i as usize];
    }
}

/// What one write does on the DIMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WcbOutcome {
    /// Combined into a buffered block.
    pub hit: bool,
    /// A block was programmed to make room; `Some(true)`: read-modify-write.
    pub programmed: Option<bool>,
}

impl Dimm {
    pub fn from_params(p: &Params) -> Option<Box<Dimm>> {
        (p.str("dimm.model") == "optane").then(|| {
            let block = p.u64("dimm.media_block_bytes");
            Box::new(Dimm {
                cache: AitCache::new(
                    p.usize("dimm.ait_cache_sets"),
                    p.usize("dimm.ait_cache_ways"),
                ),
                granule_shift: p.u64("dimm.ait_granularity_bytes").trailing_zeros(),
                ait_cycles: p.u64("dimm.ait_cache_latency_cycles"),
                block_shift: block.trailing_zeros(),
                lines_per_block: (block / 64).max(1) as u32,
                wcb: Wcb::new(p.usize("dimm.wcb_blocks")),
                scheme_owns_ait: false,
            })
        })
    }

    /// A scheme takes over address translation (EHOU): the controller no
    /// longer looks its accesses up (the scheme charges its own lookups).
    pub fn claim_ait(&mut self) {
        self.scheme_owns_ait = true;
    }

    pub fn translates(&self) -> bool {
        !self.scheme_owns_ait
    }

    /// Look `addr`'s AIT entry up (identity AIT): `None` on a hit, else
    /// the device-internal address of the entry to read from the media.
    pub fn lookup(&mut self, addr: Addr, st: &mut DimmStats) -> Option<Addr> {
        let tag = addr >> self.granule_shift;
        if self.cache.lookup(tag).is_some() {
            st.ait_hits += 1;
            return None;
        }
        st.ait_misses += 1;
        st.ait_media_reads += 1;
        let (slot, _) = self.cache.victim(tag);
        self.cache
            .fill(slot, tag, tag << self.granule_shift, EntryState::Clean, 0);
        Some(AIT_BASE + tag * 8)
    }

    /// A 64 B write reaches the media side: combine or take a buffer entry.
    pub fn wcb_write(&mut self, line_addr: Addr, st: &mut DimmStats) -> WcbOutcome {
        let block = line_addr >> self.block_shift;
        let bit = 1u64 << ((line_addr >> 6) & (self.lines_per_block as u64 - 1));
        let w = &mut self.wcb;
        if let Some(i) = w.find(block) {
            w.masks[i as usize] |= bit;
            w.order.touch(i);
            st.wcb_hits += 1;
            return WcbOutcome {
                hit: true,
                programmed: None,
            };
        }
        st.wcb_misses += 1;
        let full_mask = if self.lines_per_block >= 64 {
            u64::MAX
        } else {
            (1u64 << self.lines_per_block) - 1
        };
        let mut programmed = None;
        let i = if w.blocks.len() == w.cap {
            // The least recently written entry's block is programmed.
            let i = w.order.tail();
            let rmw = w.masks[i as usize] != full_mask;
            st.media_block_writes += 1;
            if rmw {
                st.media_rmw += 1;
            }
            programmed = Some(rmw);
            w.unlink(i);
            w.blocks[i as usize] = block;
            w.masks[i as usize] = bit;
            w.order.touch(i);
            i
        } else {
            let i = w.blocks.len() as u32;
            w.blocks.push(block);
            w.masks.push(bit);
            w.order.add_entry();
            w.chain.push(NIL);
            w.order.push_front(i);
            i
        };
        w.link(i);
        WcbOutcome {
            hit: false,
            programmed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn victim_rule_prefers_non_speculative_entries() {
        let mut c = AitCache::new(1, 3);
        for (i, st) in [
            EntryState::Speculative,
            EntryState::Committed,
            EntryState::Speculative,
        ]
        .into_iter()
        .enumerate()
        {
            let (s, v) = c.victim(i as u64);
            assert!(v.is_none());
            c.fill(s, i as u64, 100 + i as u64, st, 0);
        }
        // Tag 0 (speculative) is least recently used, but the committed
        // entry must go first.
        let (s, v) = c.victim(9);
        assert!(v.is_some());
        assert_eq!(c.tag(s), 1);
        // All speculative: the LRU speculative entry overflows.
        let s = c.lookup(1).unwrap();
        c.entry_mut(s).state = EntryState::Speculative;
        c.lookup(0);
        let (s, v) = c.victim(9);
        assert!(v.is_some());
        assert_eq!(c.tag(s), 2);
    }

    #[test]
    fn partial_block_write_is_a_read_modify_write() {
        let mut p = Params::defaults(&[]);
        p.set_str("dimm.model", "optane").unwrap();
        p.set_str("dimm.wcb_blocks", "1").unwrap();
        let mut d = Dimm::from_params(&p).unwrap();
        let mut st = DimmStats::default();
        // A full 256 B block (four lines), then one line of the next block.
        for l in 0..4 {
            let o = d.wcb_write(l * 64, &mut st);
            assert_eq!(o.hit, l > 0);
        }
        assert_eq!(d.wcb_write(256, &mut st).programmed, Some(false));
        // The next block was only partly written: programming it reads it.
        assert_eq!(d.wcb_write(512, &mut st).programmed, Some(true));
        assert_eq!(
            (st.media_block_writes, st.media_rmw, st.wcb_hits),
            (2, 1, 3)
        );
    }

    #[test]
    fn identity_ait_lookups_hit_after_a_miss_per_granule() {
        let mut p = Params::defaults(&[]);
        p.set_str("dimm.model", "optane").unwrap();
        let mut d = Dimm::from_params(&p).unwrap();
        let mut st = DimmStats::default();
        assert!(d.lookup(0, &mut st).is_some());
        assert!(d.lookup(192, &mut st).is_none(), "same 256 B AIT granule");
        assert!(d.lookup(256, &mut st).is_some());
        assert_eq!((st.ait_hits, st.ait_misses), (1, 2));
    }

    /// The old layout (tag inside each way, set = tag % sets, one tuple
    /// per write-combining entry), kept as the reference the split arrays
    /// must equal.
    struct RefDimm {
        sets: u64,
        ways: usize,
        ways_of: Vec<(u64, u64, u64)>,
        clock: u64,
        wcb: Vec<(u64, u64, u64)>,
        wcb_clock: u64,
    }

    impl RefDimm {
        fn lookup(&mut self, tag: u64) -> bool {
            let base = (tag % self.sets) as usize * self.ways;
            self.clock += 1;
            match (base..base + self.ways).find(|&i| self.ways_of[i].0 == tag) {
                Some(i) => {
                    self.ways_of[i].2 = self.clock;
                    true
                }
                None => {
                    let set = base..base + self.ways;
                    let v = set
                        .clone()
                        .find(|&i| self.ways_of[i].0 == INVALID)
                        .unwrap_or_else(|| set.min_by_key(|&i| self.ways_of[i].2).unwrap());
                    self.clock += 1;
                    self.ways_of[v] = (tag, tag << 8, self.clock);
                    false
                }
            }
        }
        fn wcb_write(&mut self, line: u64, cap: usize) -> WcbOutcome {
            let block = line >> 8;
            let bit = 1u64 << ((line >> 6) & 3);
            self.wcb_clock += 1;
            if let Some(e) = self.wcb.iter_mut().find(|e| e.0 == block) {
                e.1 |= bit;
                e.2 = self.wcb_clock;
                return WcbOutcome {
                    hit: true,
                    programmed: None,
                };
            }
            let mut programmed = None;
            if self.wcb.len() == cap {
                let (i, _) = self
                    .wcb
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| e.2)
                    .unwrap();
                programmed = Some(self.wcb[i].1 != 0xf);
                self.wcb[i] = (block, bit, self.wcb_clock);
            } else {
                self.wcb.push((block, bit, self.wcb_clock));
            }
            WcbOutcome {
                hit: false,
                programmed,
            }
        }
    }

    proptest::proptest! {
        /// Lookups and write-combining on random line streams give the
        /// old layout's hits, misses and programmed blocks.
        #[test]
        fn split_arrays_equal_the_reference(
            ops in proptest::collection::vec((proptest::bool::ANY, 0u64..4096), 1..600),
            wcb in 1usize..12,
        ) {
            let mut p = Params::defaults(&[]);
            p.set_str("dimm.model", "optane").unwrap();
            p.set_str("dimm.ait_cache_sets", "4").unwrap();
            p.set_str("dimm.ait_cache_ways", "3").unwrap();
            p.set_str("dimm.wcb_blocks", &wcb.to_string()).unwrap();
            let mut d = Dimm::from_params(&p).unwrap();
            let mut r = RefDimm {
                sets: 4,
                ways: 3,
                ways_of: vec![(INVALID, 0, 0); 12],
                clock: 0,
                wcb: Vec::new(),
                wcb_clock: 0,
            };
            let mut st = DimmStats::default();
            for (write, line) in ops {
                let a = line * 64;
                if write {
                    proptest::prop_assert_eq!(d.wcb_write(a, &mut st), r.wcb_write(a, wcb));
                } else {
                    let hit = d.lookup(a, &mut st).is_none();
                    proptest::prop_assert_eq!(hit, r.lookup(a >> 8));
                }
            }
        }
    }
}
