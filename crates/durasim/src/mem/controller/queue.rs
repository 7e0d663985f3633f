//! The controller's queues: the write queue (per-bank FIFO lists, write
//! combining, the high/low drain watermarks and the FR-FCFS pick over the
//! banks) and the bound on outstanding reads.

use super::bank::Bank;
use super::timing::{DeviceTiming, Loc};
use crate::types::{Addr, Cycle, LineData, LINE_BYTES};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// End of a per-bank queue list.
const NIL: u16 = u16::MAX;

/// A queued (accepted, not yet issued) write of one line.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PendingWrite {
    pub(super) line: Addr,
    /// Acceptance time: the earliest issue time.
    pub(super) arrival: Cycle,
    /// Acceptance order (FR-FCFS age).
    pub(super) seq: u64,
    pub(super) loc: Loc,
    /// Bytes of the line written (bit i: byte i); merged writes add bytes.
    pub(super) mask: u64,
    /// `Purpose::index` of the first writer (data-aware media statistics).
    pub(super) purpose: u8,
    /// Links of the bank's queue, oldest first (`NIL` at the ends).
    prev: u16,
    next: u16,
}

/// FR-FCFS candidate of one bank: its earliest issuable write.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cand {
    /// Estimated column-command time (bank ready, arrival; bus and rank
    /// constraints are checked when the write is planned).
    pub(super) est: Cycle,
    miss: bool,
    seq: u64,
    pub(super) slot: u16,
}

impl Cand {
    /// Order: earliest issuable, then row hit, then oldest.
    #[inline]
    fn key(&self) -> (Cycle, bool, u64) {
        (self.est, self.miss, self.seq)
    }

    /// [`Cand::key`] packed into one integer with the same order, with
    /// the bank in the lowest `bank_bits` bits (`seq` is unique, so the
    /// bank below it never decides an order): the pick compares and
    /// copies one integer per bank, a word pair.
    #[inline]
    fn packed(&self, bank: usize, bank_bits: u32) -> u128 {
        debug_assert!(self.seq < 1 << (63 - bank_bits));
        (u128::from(self.est) << 64)
            | (u128::from(self.miss) << 63)
            | (u128::from(self.seq) << bank_bits)
            | bank as u128
    }
}

/// Key of a bank without queued writes.
const NO_CAND: u128 = u128::MAX;

/// Keys in [`WriteQueue::top`].
const TOP_KEYS: usize = 8;

/// Buckets of [`WriteQueue::queued_in`]: a power of two well above the
/// queue's usual 64 entries, so a line that is not queued mostly finds its
/// bucket empty.
const FILTER_BUCKETS: usize = 1 << FILTER_BITS;
const FILTER_BITS: u32 = 10;

/// Bucket of `line` in [`WriteQueue::queued_in`] (Fibonacci hash of the
/// line number: a page's consecutive lines land in different buckets).
#[inline]
fn filter_bucket(line: Addr) -> usize {
    ((line / LINE_BYTES).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_BITS)) as usize
}

/// Queued writes of one bank, oldest first, and the oldest of them in row
/// `hit_row` (`hit`; `NIL` if none), kept up to date as writes enter and
/// leave so the FR-FCFS row-hit search does not walk a long queue: a
/// write is appended (it becomes `hit` only if there was none) or removed
/// (a removed `hit` is replaced by the next write of that row after it).
#[derive(Clone, Copy, Debug)]
struct BankQueue {
    head: u16,
    tail: u16,
    /// Row `hit` refers to (`NO_ROW`: not computed yet).
    hit_row: u64,
    hit: u16,
}

/// Never a row (rows are line numbers shifted right).
const NO_ROW: u64 = u64::MAX;

impl Default for BankQueue {
    fn default() -> Self {
        BankQueue {
            head: NIL,
            tail: NIL,
            hit_row: NO_ROW,
            hit: NIL,
        }
    }
}

/// Byte mask of `len` bytes at offset `off` of a line.
#[inline]
pub(super) fn byte_mask(off: usize, len: usize) -> u64 {
    if len >= 64 {
        u64::MAX
    } else {
        ((1u64 << len) - 1) << off
    }
}

/// The write queue: accepted writes not yet issued, by slot, linked into
/// one FIFO list per bank, with each bank's FR-FCFS candidate cached.
#[derive(Clone, Debug)]
pub(super) struct WriteQueue {
    /// The queued writes by slot, the free slots, and per-bank FIFO lists.
    slots: Vec<PendingWrite>,
    free: Vec<u16>,
    bank_queues: Vec<BankQueue>,
    /// Each bank's FR-FCFS candidate, valid unless the bank is marked in
    /// `cand_stale` (its state or queue changed since it was computed).
    cands: Vec<Cand>,
    cand_stale: Vec<u64>,
    /// Some bank is marked in `cand_stale` (one test per pick instead of
    /// a walk over its words).
    any_stale: bool,
    /// Each bank's packed candidate key ([`Cand::packed`], carrying its
    /// bank in its low bits; `NO_CAND` without queued writes) and the
    /// banks with a key (bit set).
    keys: Vec<u128>,
    keyed: Vec<u64>,
    /// The `top_len` smallest keys of all banks, sorted (a prefix of the
    /// sorted order of every key, valid after each pick's recomputation
    /// of the stale banks): the pick is `top[0]`. A bank whose key changes
    /// leaves the list and re-enters it if its new key is below the
    /// list's last; the keyed banks are scanned only when the list is
    /// empty. An issue mostly removes the minimum, whose bank becomes busy:
    /// the next minimum is already listed (was: the minimum alone, and a
    /// scan of every keyed bank whenever its key grew, i.e. at every
    /// issue; before that, a tournament tree).
    top: [u128; TOP_KEYS],
    top_len: usize,
    /// Width of the bank index (`nbanks.trailing_zeros()`).
    bank_index_bits: u32,
    len: usize,
    /// Acceptance order of the next write (FR-FCFS age).
    seq: u64,
    /// Each slot's line content before its first write (only with dcw:
    /// the programmed union's flipped bits are charged).
    orig: Vec<LineData>,
    /// Queued writes per [`filter_bucket`] of their line: [`Self::find`]
    /// answers "not queued" without walking the bank's list when the
    /// bucket is empty. A DRAM cache's page fill writes 64 lines of one
    /// row, so one bank's list is long and nearly every lookup misses;
    /// walking it cost 14 % of a DRAM-cached run's host time.
    queued_in: Vec<u16>,
    capacity: usize,
    drain_high: usize,
    drain_low: usize,
    draining: bool,
}

impl WriteQueue {
    /// A queue of `capacity` writes (at most `NIL - 1`) in front of
    /// `nbanks` banks, draining from `drain_high` queued writes down to
    /// `drain_low`; `dcw`: keep each slot's line content before its first
    /// write.
    pub(super) fn new(
        nbanks: usize,
        capacity: usize,
        drain_high: usize,
        drain_low: usize,
        dcw: bool,
    ) -> Self {
        // The pick keys hold the bank below a write's sequence number.
        assert!(nbanks <= 1 << 20, "device has more than 2^20 banks");
        let capacity = capacity.clamp(1, NIL as usize - 1);
        let drain_high = drain_high.clamp(1, capacity);
        WriteQueue {
            slots: vec![PendingWrite::default(); capacity],
            free: (0..capacity as u16).rev().collect(),
            bank_queues: vec![BankQueue::default(); nbanks],
            cands: vec![
                Cand {
                    est: 0,
                    miss: false,
                    seq: 0,
                    slot: NIL,
                };
                nbanks
            ],
            cand_stale: vec![0; nbanks.div_ceil(64)],
            any_stale: false,
            keys: vec![NO_CAND; nbanks],
            keyed: vec![0; nbanks.div_ceil(64)],
            top: [NO_CAND; TOP_KEYS],
            top_len: 0,
            bank_index_bits: nbanks.trailing_zeros(),
            len: 0,
            seq: 0,
            orig: vec![[0u8; LINE_BYTES as usize]; if dcw { capacity } else { 0 }],
            queued_in: vec![0; FILTER_BUCKETS],
            capacity,
            drain_high,
            drain_low: drain_low.min(drain_high - 1),
            draining: false,
        }
    }

    /// Writes queued.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn is_full(&self) -> bool {
        self.len >= self.capacity
    }

    /// A watermark drain is in progress (reads wait for it).
    #[inline]
    pub(super) fn is_draining(&self) -> bool {
        self.draining
    }

    /// The drain is over (the queue was drained for a read or a barrier).
    #[inline]
    pub(super) fn end_drain(&mut self) {
        self.draining = false;
    }

    /// The write in slot `s`.
    #[inline]
    pub(super) fn get(&self, s: u16) -> &PendingWrite {
        &self.slots[s as usize]
    }

    /// Write combining: bytes `mask` of a later write join queued write
    /// `s` (no new slot, no new burst).
    #[inline]
    pub(super) fn merge(&mut self, s: u16, mask: u64) {
        self.slots[s as usize].mask |= mask;
    }

    /// The line content before slot `s`'s first write (dcw only).
    #[inline]
    pub(super) fn orig(&self, s: u16) -> &LineData {
        &self.orig[s as usize]
    }

    pub(super) fn set_orig(&mut self, s: u16, line: LineData) {
        self.orig[s as usize] = line;
    }

    /// Bank `b`'s state changed (a command was committed to it).
    #[inline]
    pub(super) fn bank_changed(&mut self, b: usize) {
        // A bank without queued writes has no candidate whatever its state
        // (its queue emptying or filling marks it stale in `dequeue` and
        // `enqueue`), so only a bank with queued writes needs a new one.
        if self.bank_queues[b].head != NIL {
            self.mark_stale(b);
        }
    }

    /// The queued write of `line` (in bank `bank`), if any.
    #[inline]
    pub(super) fn find(&self, line: Addr, bank: u32) -> Option<u16> {
        if self.queued_in[filter_bucket(line)] == 0 {
            debug_assert_eq!(self.scan(line, bank), None, "filter bucket out of date");
            return None;
        }
        self.scan(line, bank)
    }

    /// [`Self::find`] by walking bank `bank`'s list.
    #[inline]
    fn scan(&self, line: Addr, bank: u32) -> Option<u16> {
        let mut s = self.bank_queues[bank as usize].head;
        while s != NIL {
            let w = &self.slots[s as usize];
            if w.line == line {
                return Some(s);
            }
            s = w.next;
        }
        None
    }

    /// The first queued write of bank `b` at or after slot `s` (in queue
    /// order) in row `row`, or `NIL`.
    #[inline]
    fn first_in_row(&self, mut s: u16, row: u64) -> u16 {
        while s != NIL {
            let w = &self.slots[s as usize];
            if w.loc.row == row {
                return s;
            }
            s = w.next;
        }
        NIL
    }

    /// The FR-FCFS candidate of bank `b`: its oldest row-hit write and its
    /// oldest write, whichever is issuable first (ties: the row hit).
    fn bank_candidate(&mut self, b: usize, bank: &Bank, t: &DeviceTiming) -> Cand {
        if let Some(r) = bank.open_row {
            let q = self.bank_queues[b];
            if q.hit_row != r {
                let hit = self.first_in_row(q.head, r);
                let q = &mut self.bank_queues[b];
                q.hit_row = r;
                q.hit = hit;
            }
        }
        let head = self.bank_queues[b].head;
        let cand = |s: u16, hit: bool| {
            let w = &self.slots[s as usize];
            let est = if hit {
                w.arrival.max(bank.next_col)
            } else {
                let act_ready = match bank.open_row {
                    Some(_) => w.arrival.max(bank.next_pre) + t.t_rp,
                    None => w.arrival,
                };
                act_ready.max(bank.next_act) + t.act_to_col()
            };
            Cand {
                est,
                miss: !hit,
                seq: w.seq,
                slot: s,
            }
        };
        let hit_slot = match bank.open_row {
            Some(_) => self.bank_queues[b].hit,
            None => NIL,
        };
        if hit_slot == head {
            return cand(head, true);
        }
        let oldest = cand(head, false);
        if hit_slot == NIL {
            return oldest;
        }
        let h = cand(hit_slot, true);
        if h.key() <= oldest.key() {
            h
        } else {
            oldest
        }
    }

    /// Bank `b`'s state or queue changed: its candidate is recomputed at
    /// the next pick.
    #[inline]
    fn mark_stale(&mut self, b: usize) {
        self.cand_stale[b / 64] |= 1 << (b % 64);
        self.any_stale = true;
    }

    /// FR-FCFS pick over the banks with queued writes: the smallest
    /// [`Cand::key`] (keys are unique: `seq` is). Candidates are cached
    /// until their bank or its queue changes, and the smallest key is
    /// kept as they change.
    #[inline]
    pub(super) fn pick(&mut self, banks: &[Bank], t: &DeviceTiming) -> Option<Cand> {
        // A third of the picks find no stale bank (`hoop`, btree): they
        // read the minimum without entering the recomputation, whose entry
        // loads a dozen fields.
        if self.any_stale {
            self.refresh_stale(banks, t);
        }
        let min = if self.top_len > 0 {
            self.top[0]
        } else {
            NO_CAND
        };
        let bank = (min & ((1 << self.bank_index_bits) - 1)) as usize;
        (min != NO_CAND).then(|| self.cands[bank])
    }

    /// Recompute the stale banks' candidates and keys, and the minimum.
    #[inline(never)]
    fn refresh_stale(&mut self, banks: &[Bank], t: &DeviceTiming) {
        // `keys` has a power-of-two length (one per bank): indices are
        // masked by it so the compiler drops the bounds checks.
        let mask = self.keys.len() - 1;
        self.any_stale = false;
        for wi in 0..self.cand_stale.len() {
            let mut bits = std::mem::take(&mut self.cand_stale[wi]);
            while bits != 0 {
                let bit = bits.trailing_zeros();
                let b = wi * 64 + bit as usize;
                bits &= bits - 1;
                let key = if self.bank_queues[b].head == NIL {
                    self.keyed[wi] &= !(1 << bit);
                    NO_CAND
                } else {
                    self.keyed[wi] |= 1 << bit;
                    let c = self.bank_candidate(b, &banks[b], t);
                    self.cands[b] = c;
                    c.packed(b, self.bank_index_bits)
                };
                let old = std::mem::replace(&mut self.keys[b & mask], key);
                if key != old {
                    self.top_update(old, key);
                }
            }
        }
        if self.top_len == 0 {
            self.top_fill();
        }
    }

    /// A bank's key changed from `old` to `key`: `old` leaves `top` (if
    /// listed) and `key` enters it if below the last listed key (the list
    /// stays the smallest keys of all banks: every unlisted key is above
    /// its last).
    #[inline]
    fn top_update(&mut self, old: u128, key: u128) {
        let mut n = self.top_len;
        // Listed keys are their banks' current keys, sorted and unique: the
        // bank is listed iff `old` is, which needs `old` <= the last key
        // (a bank entering the queue, `old` = `NO_CAND`, skips the search).
        if n > 0 && old <= self.top[n - 1] {
            if let Some(i) = self.top[..n].iter().position(|&k| k == old) {
                self.top.copy_within(i + 1..n, i);
                n -= 1;
            }
        }
        if n > 0 && key < self.top[n - 1] {
            // A full list drops its last key (the new key is below it).
            n = self.top_insert(n.min(TOP_KEYS - 1), key);
        }
        self.top_len = n;
    }

    /// Insert `key` into the sorted `top[..n]` (`n < TOP_KEYS`); returns
    /// the new length.
    #[inline]
    fn top_insert(&mut self, n: usize, key: u128) -> usize {
        // A no-op for the callers' `n`; it bounds the indices below.
        let n = n.min(TOP_KEYS - 1);
        let mut i = n;
        while i > 0 && self.top[i - 1] > key {
            self.top[i] = self.top[i - 1];
            i -= 1;
        }
        self.top[i] = key;
        n + 1
    }

    /// Fill `top` with the smallest keys of the keyed banks (one scan).
    #[inline(never)]
    fn top_fill(&mut self) {
        let mask = self.keys.len() - 1;
        let mut n = 0;
        for wi in 0..self.keyed.len() {
            let mut bits = self.keyed[wi];
            while bits != 0 {
                let b = wi * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let key = self.keys[b & mask];
                if n == TOP_KEYS {
                    if key >= self.top[TOP_KEYS - 1] {
                        continue;
                    }
                    n -= 1;
                }
                n = self.top_insert(n, key);
            }
        }
        self.top_len = n;
    }

    /// Queue a write of `mask` bytes of `line` at `arrival`, first written
    /// for `Purpose` index `purpose` (a free slot must exist).
    pub(super) fn enqueue(
        &mut self,
        line: Addr,
        loc: Loc,
        mask: u64,
        purpose: u8,
        arrival: Cycle,
    ) -> u16 {
        let slot = self.free.pop().expect("write queue slot");
        let b = loc.bank as usize;
        let q = &mut self.bank_queues[b];
        let prev = q.tail;
        if prev == NIL {
            q.head = slot;
        } else {
            self.slots[prev as usize].next = slot;
        }
        q.tail = slot;
        let became_hit = q.hit == NIL && q.hit_row == loc.row;
        if became_hit {
            q.hit = slot;
        }
        // The bank's candidate (its oldest write, or its oldest write in
        // the open row) changes only if the queue was empty or the new
        // write is its first in the open row: an unchanged candidate keeps
        // its key (was: every enqueue recomputed it). A bank whose row
        // changed since its candidate was computed is stale already.
        if prev == NIL || became_hit {
            self.mark_stale(b);
        }
        self.slots[slot as usize] = PendingWrite {
            line,
            arrival,
            seq: self.seq,
            loc,
            mask,
            purpose,
            prev,
            next: NIL,
        };
        self.seq += 1;
        self.len += 1;
        self.queued_in[filter_bucket(line)] += 1;
        if self.len >= self.drain_high {
            self.draining = true;
        }
        slot
    }

    /// Unlink slot `s` from its bank's queue and free it.
    pub(super) fn dequeue(&mut self, s: u16) -> PendingWrite {
        let w = self.slots[s as usize];
        let b = w.loc.bank as usize;
        if w.prev == NIL {
            self.bank_queues[b].head = w.next;
        } else {
            self.slots[w.prev as usize].next = w.next;
        }
        if w.next == NIL {
            self.bank_queues[b].tail = w.prev;
        } else {
            self.slots[w.next as usize].prev = w.prev;
        }
        if self.bank_queues[b].hit == s {
            let row = self.bank_queues[b].hit_row;
            self.bank_queues[b].hit = self.first_in_row(w.next, row);
        }
        self.mark_stale(b);
        self.free.push(s);
        self.len -= 1;
        self.queued_in[filter_bucket(w.line)] -= 1;
        if self.draining && self.len <= self.drain_low {
            self.draining = false;
        }
        w
    }
}

/// The bound on outstanding reads: a read finding every entry taken waits
/// for the earliest to finish.
#[derive(Clone, Debug)]
pub(super) struct ReadQueue {
    /// Completion times of outstanding reads (a min-heap of at most
    /// `capacity` entries; preallocated).
    outstanding: BinaryHeap<Reverse<Cycle>>,
    capacity: usize,
}

impl ReadQueue {
    /// Unbounded until [`ReadQueue::set_capacity`].
    pub(super) fn unbounded() -> Self {
        ReadQueue {
            outstanding: BinaryHeap::new(),
            capacity: usize::MAX,
        }
    }

    pub(super) fn set_capacity(&mut self, n: usize) {
        self.capacity = n.max(1);
        self.outstanding = BinaryHeap::with_capacity(self.capacity + 1);
    }

    /// Earliest time >= `t` at which a read finds an entry, and whether it
    /// had to wait for one (all were taken).
    #[inline]
    pub(super) fn slot(&mut self, t: Cycle) -> (Cycle, bool) {
        let q = &mut self.outstanding;
        while q.peek().is_some_and(|r| r.0 <= t) {
            q.pop();
        }
        if q.len() >= self.capacity {
            return (t.max(q.pop().expect("outstanding read").0), true);
        }
        (t, false)
    }

    /// A read took an entry until `end`.
    #[inline]
    pub(super) fn push(&mut self, end: Cycle) {
        if self.capacity != usize::MAX {
            self.outstanding.push(Reverse(end));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::timing::tests::nvm_like;
    use super::super::timing::Mapping;
    use super::super::MemoryController;
    use super::*;
    use crate::types::Purpose;
    use proptest::prelude::*;

    /// Runs `ops` (line, 0 = read else a write of that byte, time step)
    /// on `mc` and checks after each that the pick is the FR-FCFS
    /// definition: the smallest key over every bank with queued writes,
    /// each bank's candidate computed afresh; and that `top` lists the
    /// smallest keys of all banks, in order.
    fn check_pick(mut mc: MemoryController, ops: &[(u64, u8, u64)]) -> Result<(), TestCaseError> {
        let mut now = 0;
        for &(line, op, dt) in ops {
            now += dt;
            let addr = line * LINE_BYTES;
            if op == 0 {
                let mut buf = [0u8; 64];
                mc.read(addr, &mut buf, Purpose::Demand, now);
            } else {
                mc.write(addr, &[op; 64], Purpose::Demand, now);
            }
            let picked = mc.pick().map(|c| (c.slot, c.key()));
            let (wq, banks, t) = (&mut mc.wq, &mc.dev.banks, &mc.timing);
            let queued: Vec<usize> = (0..wq.bank_queues.len())
                .filter(|&b| wq.bank_queues[b].head != NIL)
                .collect();
            let mut fresh: Vec<Cand> = queued
                .iter()
                .map(|&b| wq.bank_candidate(b, &banks[b], t))
                .collect();
            fresh.sort_by_key(Cand::key);
            prop_assert_eq!(picked, fresh.first().map(|c| (c.slot, c.key())));
            let bits = wq.bank_index_bits;
            let keys: Vec<u128> = fresh
                .iter()
                .map(|c| c.packed(c_bank(wq, c), bits))
                .collect();
            prop_assert!(wq.top_len <= keys.len());
            prop_assert_eq!(&wq.top[..wq.top_len], &keys[..wq.top_len]);
        }
        Ok(())
    }

    /// The bank of candidate `c` (its write's location).
    fn c_bank(wq: &WriteQueue, c: &Cand) -> usize {
        wq.slots[c.slot as usize].loc.bank as usize
    }

    proptest! {
        /// The pick (cached keys, a sorted list of the smallest, a scan
        /// when it empties; an enqueue behind another write of the bank
        /// keeps its candidate) is the FR-FCFS definition the previous
        /// tournament tree and minimum also computed, on states built by
        /// random traffic (drains, full queues, reads into queued rows):
        /// 8 banks (the list never overflows) and 64 banks with a
        /// 64-entry queue (it does, and empties).
        #[test]
        fn pick_equals_smallest_fresh_candidate(
            ops in proptest::collection::vec((0u64..512, 0u8..4, 0u64..300), 1..300),
        ) {
            check_pick(MemoryController::new(nvm_like(), true, true, false, 16, 12, 4), &ops)?;
        }

        #[test]
        fn pick_equals_smallest_fresh_candidate_many_banks(
            ops in proptest::collection::vec((0u64..4096, 0u8..4, 0u64..40), 1..400),
        ) {
            let mut d = nvm_like();
            (d.channels, d.ranks, d.banks, d.mapping) = (4, 2, 8, Mapping::Permutation);
            check_pick(MemoryController::new(d, true, true, false, 64, 40, 20), &ops)?;
        }
    }
}
