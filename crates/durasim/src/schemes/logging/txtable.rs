//! MorLog's transaction table (§III-F, second log-management option, "a
//! variation of the transaction table [22]"): one entry per transaction
//! with its TID, TxID, where its log entries start and end, and a counter
//! of the cache lines that hold its updated data. A transaction's log may
//! be deleted once it committed and its counter is 0; the log head moves
//! past the deletable transactions in order.
//!
//! Which lines does a line's write-back release? A line written by
//! several transactions before its write-back holds the newest value of
//! each word, so its write-back makes every one of those transactions'
//! data in it home (or superseded by a newer writer's value, whose own log
//! covers the word: its undo entry holds the older value, MorLog §III-B).
//! Rather than a set of transactions per line, each dirty line counts for
//! exactly one transaction, its *anchor*: the earliest-allocated writer
//! since its last write-back (allocation = TxBegin, a global sequence).
//! A later-allocated writer does not count the line; a writer allocated
//! earlier than the anchor (another core's transaction) takes the anchor
//! over. Safety rests on the head: it never passes the first log entry of
//! a live (not yet released) entry, and entries allocated later have their
//! log entries after it, so a writer's log survives until its line's
//! anchor is released, i.e. until the write-back that carried the writer's
//! data home. Bounded and allocation-free: one slot index per dirty line
//! (in hardware a few bits beside each cache line; here a map reserved for
//! every LLC line), and a fixed table.

use crate::types::{Addr, CoreId};
use rustc_hash::FxHashMap;

/// One table entry.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxEntry {
    pub live: bool,
    pub committed: bool,
    pub core: CoreId,
    pub txid: u32,
    /// Allocation sequence (TxBegin order over all cores).
    pub alloc: u64,
    /// The log tail when it was allocated: every log entry of it, and of
    /// every later-allocated transaction, lies at or after this sequence
    /// number (the paper's "address of the first log entry", bounded from
    /// below without waiting for the first write).
    pub first_seq: u64,
    /// Cache lines anchored to it.
    pub counter: u32,
}

/// The table and the line anchors.
pub struct TxTable {
    /// `cap + 1` slots: a transaction that finds the table full takes the
    /// spare while the oldest committed entry's lines are written back
    /// (it frees one before the transaction's first operation).
    pub entries: Vec<TxEntry>,
    pub cap: usize,
    pub live: usize,
    next_alloc: u64,
    /// Dirty line → anchor slot.
    anchors: FxHashMap<Addr, u32>,
    // Statistics.
    pub max_occupancy: u64,
    pub occupancy_sum: u64,
    pub allocations: u64,
    pub full_events: u64,
    pub full_stall_cycles: u64,
    pub lines_released: u64,
    pub reanchored: u64,
    /// Test-only planted bug (`morlog.mutant = anchor-newest-writer`): a
    /// later-allocated writer takes the anchor, so an earlier writer's
    /// log may be released before the line carrying its data is home.
    pub mutant_newest_anchor: bool,
}

impl TxTable {
    pub fn new(cap: usize, llc_lines: usize) -> Self {
        let mut anchors = FxHashMap::default();
        anchors.reserve(llc_lines);
        TxTable {
            entries: vec![TxEntry::default(); cap + 1],
            cap,
            live: 0,
            next_alloc: 0,
            anchors,
            max_occupancy: 0,
            occupancy_sum: 0,
            allocations: 0,
            full_events: 0,
            full_stall_cycles: 0,
            lines_released: 0,
            reanchored: 0,
            mutant_newest_anchor: false,
        }
    }

    pub fn is_full(&self) -> bool {
        self.live >= self.cap
    }

    /// A new entry for (`core`, `txid`), whose log entries start at or
    /// after `tail`; returns its slot.
    pub fn alloc(&mut self, core: CoreId, txid: u32, tail: u64) -> u32 {
        let slot = self
            .entries
            .iter()
            .position(|e| !e.live)
            .expect("a free slot (the spare)");
        self.entries[slot] = TxEntry {
            live: true,
            committed: false,
            core,
            txid,
            alloc: self.next_alloc,
            first_seq: tail,
            counter: 0,
        };
        self.next_alloc += 1;
        self.live += 1;
        self.allocations += 1;
        self.occupancy_sum += self.live as u64;
        self.max_occupancy = self.max_occupancy.max(self.live as u64);
        slot as u32
    }

    /// A store by the transaction in `slot` to `line`.
    #[inline]
    pub fn anchor(&mut self, line: Addr, slot: u32) {
        let alloc = self.entries[slot as usize].alloc;
        match self.anchors.entry(line) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(slot);
                self.entries[slot as usize].counter += 1;
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let a = *o.get();
                let earlier = alloc < self.entries[a as usize].alloc;
                if a != slot && earlier != self.mutant_newest_anchor {
                    // An earlier-allocated writer: it anchors the line now.
                    self.entries[a as usize].counter -= 1;
                    self.entries[slot as usize].counter += 1;
                    o.insert(slot);
                    self.reanchored += 1;
                }
            }
        }
    }

    /// `line` was written back (its data persisted): its anchor loses it.
    /// Returns whether some counter changed.
    #[inline]
    pub fn release(&mut self, line: Addr) -> bool {
        match self.anchors.remove(&line) {
            Some(a) => {
                self.entries[a as usize].counter -= 1;
                self.lines_released += 1;
                true
            }
            None => false,
        }
    }

    /// The oldest live committed entry (the full-table victim).
    pub fn oldest_committed(&self) -> Option<u32> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.live && e.committed)
            .min_by_key(|(_, e)| e.alloc)
            .map(|(i, _)| i as u32)
    }

    /// The lines anchored to `slot`, sorted, appended to `out`.
    pub fn lines_of(&self, slot: u32, out: &mut Vec<Addr>) {
        let start = out.len();
        out.extend(
            self.anchors
                .iter()
                .filter(|(_, &a)| a == slot)
                .map(|(&l, _)| l),
        );
        out[start..].sort_unstable();
    }

    /// The smallest first log entry of a live entry (`None`: none live).
    pub fn head_bound(&self) -> Option<u64> {
        self.entries
            .iter()
            .filter(|e| e.live)
            .map(|e| e.first_seq)
            .min()
    }

    pub fn free(&mut self, slot: usize) {
        debug_assert!(self.entries[slot].live && self.entries[slot].counter == 0);
        self.entries[slot].live = false;
        self.live -= 1;
    }

    /// Measured window starts: occupancy statistics restart from now.
    pub fn reset_stats(&mut self) {
        self.max_occupancy = self.live as u64;
        self.occupancy_sum = 0;
        self.allocations = 0;
        self.full_events = 0;
        self.full_stall_cycles = 0;
        self.lines_released = 0;
        self.reanchored = 0;
    }

    pub fn anchored_lines(&self) -> usize {
        self.anchors.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line written by two transactions counts once, for the earlier;
    /// its write-back releases it; a writer allocated earlier takes the
    /// anchor over.
    #[test]
    fn anchors_count_each_dirty_line_once() {
        let mut t = TxTable::new(4, 16);
        let a = t.alloc(0, 1, 10);
        let b = t.alloc(1, 1, 12);
        t.anchor(0x40, b);
        t.anchor(0x40, b);
        assert_eq!(t.entries[b as usize].counter, 1);
        // a (allocated first) writes the line b anchors: a takes it.
        t.anchor(0x40, a);
        assert_eq!(
            (t.entries[a as usize].counter, t.entries[b as usize].counter),
            (1, 0)
        );
        // b writes it again: stays with a.
        t.anchor(0x40, b);
        assert_eq!(t.entries[b as usize].counter, 0);
        assert!(t.release(0x40));
        assert!(!t.release(0x40), "released once");
        assert_eq!(t.entries[a as usize].counter, 0);
        assert_eq!(t.head_bound(), Some(10));
        t.free(a as usize);
        assert_eq!(t.head_bound(), Some(12));
        t.free(b as usize);
        assert_eq!(t.head_bound(), None);
    }

    #[test]
    fn full_table_victim_is_the_oldest_committed() {
        let mut t = TxTable::new(2, 16);
        let a = t.alloc(0, 1, 0);
        let b = t.alloc(1, 1, 0);
        assert!(t.is_full());
        assert_eq!(t.oldest_committed(), None);
        t.entries[b as usize].committed = true;
        assert_eq!(t.oldest_committed(), Some(b));
        t.entries[a as usize].committed = true;
        assert_eq!(t.oldest_committed(), Some(a));
        for l in [0x80, 0x40, 0xc0] {
            t.anchor(l, a);
        }
        let mut v = Vec::new();
        t.lines_of(a, &mut v);
        assert_eq!(v, vec![0x40, 0x80, 0xc0]);
        // The spare slot takes a third transaction while the table is full.
        let c = t.alloc(0, 2, 5);
        assert_eq!(c, 2);
        assert_eq!(t.max_occupancy, 3);
    }
}
