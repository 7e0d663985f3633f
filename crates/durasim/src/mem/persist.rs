//! The persistence domain, made explicit: every event at which bytes become
//! durable is appended to a [`PersistLog`] (when recording is on), with the
//! time the persistence domain accepted it. The crash oracle puts the
//! recorded events in acceptance-time order ([`PersistLog::order_by_time`]);
//! a crash at point `k` then keeps exactly the initial media image plus the
//! first `k` events of that order.

use crate::types::{Addr, Cycle};

/// One durable write: `len` bytes at `addr` (never crossing a 64 B line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistEvent {
    pub addr: Addr,
    pub len: u8,
    /// Offset of the bytes in the log's arena.
    pub data_off: u32,
    /// Simulated time at which the bytes reached the persistence domain.
    pub at: Cycle,
}

/// Append-only record of durable writes, in the order they were issued
/// (each with its acceptance time) until [`PersistLog::order_by_time`].
#[derive(Clone, Default)]
pub struct PersistLog {
    enabled: bool,
    events: Vec<PersistEvent>,
    /// Per event: when it arrived at the write queue, for writes admitted
    /// by a queue in arrival order; `Cycle::MAX` for the others (writes
    /// persisted when programmed, ADR-protected structures).
    arrived: Vec<Cycle>,
    arena: Vec<u8>,
    /// Count of events even when recording is off (crash point numbering).
    count: u64,
    marks: Vec<DurableMark>,
}

/// A scheme's report that `thread`'s first `tx_count` committed transactions
/// are durable from persist point `seq` on: the checkpoint that completed
/// (checkpoint schemes) or the commits reported persisted (delayed schemes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurableMark {
    pub seq: u64,
    pub thread: usize,
    pub tx_count: u64,
}

impl PersistLog {
    pub fn new(enabled: bool) -> Self {
        PersistLog {
            enabled,
            ..Default::default()
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    #[inline]
    pub fn record(&mut self, addr: Addr, data: &[u8], at: Cycle) {
        self.record_queued(addr, data, Cycle::MAX, at);
    }

    /// [`Self::record`] of a write that arrived at the write queue at
    /// `arrived` and was accepted at `at` (the queue admits writes in
    /// arrival order).
    #[inline]
    pub fn record_queued(&mut self, addr: Addr, data: &[u8], arrived: Cycle, at: Cycle) {
        debug_assert!(data.len() <= 64 && (addr % 64) as usize + data.len() <= 64);
        self.count += 1;
        if self.enabled {
            let off = self.arena.len() as u32;
            self.arena.extend_from_slice(data);
            self.events.push(PersistEvent {
                addr,
                len: data.len() as u8,
                data_off: off,
                at,
            });
            self.arrived.push(arrived);
        }
    }

    /// Report that `thread`'s first `tx_count` transactions are durable as of
    /// now (see [`DurableMark`]; used by the crash oracle).
    pub fn report_durable(&mut self, thread: usize, tx_count: u64) {
        if self.enabled {
            self.marks.push(DurableMark {
                seq: self.count,
                thread,
                tx_count,
            });
        }
    }

    pub fn marks(&self) -> &[DurableMark] {
        &self.marks
    }

    /// Number of persist events so far (recorded or not).
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn events(&self) -> &[PersistEvent] {
        &self.events
    }

    pub fn data(&self, e: &PersistEvent) -> &[u8] {
        &self.arena[e.data_off as usize..e.data_off as usize + e.len as usize]
    }

    /// Put the recorded events in the order the persistence domain accepted
    /// them, which is the crash-point order: by acceptance time, then by
    /// call order among writes accepted in the same cycle. A write that
    /// overlaps an earlier-issued one (an 8-byte word of both) is accepted
    /// no earlier than it: the simulator applies writes functionally in
    /// issue order, so a later write's bytes are the ones that survive, and
    /// a write-pending queue merges or programs a line's writes in that
    /// order; such a write's `at` is raised to that time. Writes to other
    /// words of a line keep their own times. A queue admits writes in
    /// arrival order: a write accepted by the write queue is accepted no
    /// earlier than one that arrived before it (the controller model
    /// accepts a write that finds the queue full when some queued write
    /// leaves, which can be earlier than an earlier arrival's acceptance). Durability reports are moved
    /// to the first point holding every event issued before them. Returns
    /// where each event went. Already-ordered logs cost one pass, no copy.
    pub fn order_by_time(&mut self) -> TimeOrder {
        // Raise acceptance times until both rules hold (two passes
        // almost always suffice).
        for _ in 0..8 {
            let a = self.raise_overlaps();
            let b = self.raise_fifo();
            if !a && !b {
                break;
            }
        }
        let sorted = self.events.windows(2).all(|w| w[0].at <= w[1].at);
        if sorted {
            return TimeOrder::default();
        }
        let mut order: Vec<(Cycle, u32)> = self
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.at, i as u32))
            .collect();
        order.sort_unstable();
        let mut pos = vec![0u32; order.len()];
        for (k, &(_, i)) in order.iter().enumerate() {
            pos[i as usize] = k as u32;
        }
        let old: Vec<u32> = order.iter().map(|&(_, i)| i).collect();
        drop(order);
        self.events = old.iter().map(|&i| self.events[i as usize]).collect();
        if self.arrived.len() == old.len() {
            self.arrived = old.iter().map(|&i| self.arrived[i as usize]).collect();
        }
        let to = TimeOrder { pos, old };
        let mut marks = std::mem::take(&mut self.marks);
        let seqs: Vec<u64> = marks.iter().map(|m| m.seq).collect();
        let mut i = 0;
        to.all_before(seqs.into_iter(), |k| {
            marks[i].seq = k;
            i += 1;
        });
        // Stable: reports at one point keep their order.
        marks.sort_by_key(|m| m.seq);
        self.marks = marks;
        to
    }

    /// Raise each write to the latest acceptance of an earlier-issued
    /// write it overlaps (per 8-byte word); whether any changed.
    fn raise_overlaps(&mut self) -> bool {
        let mut words_at: rustc_hash::FxHashMap<Addr, [Cycle; 8]> = Default::default();
        let mut changed = false;
        for e in &mut self.events {
            let line = e.addr - e.addr % 64;
            let first = (e.addr % 64 / 8) as usize;
            let last = ((e.addr % 64 + u64::from(e.len).max(1) - 1) / 8) as usize;
            let words = words_at.entry(line).or_insert([0; 8]);
            let t = words[first..=last].iter().fold(e.at, |t, &w| t.max(w));
            changed |= t != e.at;
            e.at = t;
            words[first..=last].fill(t);
        }
        changed
    }

    /// Raise each queued write to the latest acceptance of a queued write
    /// that arrived before it (by arrival time, then issue order); whether
    /// any changed.
    fn raise_fifo(&mut self) -> bool {
        let mut q: Vec<(Cycle, u32)> = self
            .arrived
            .iter()
            .enumerate()
            .filter(|(_, &a)| a != Cycle::MAX)
            .map(|(i, &a)| (a, i as u32))
            .collect();
        if !q.windows(2).all(|w| w[0] <= w[1]) {
            q.sort_unstable();
        }
        let mut top = 0;
        let mut changed = false;
        for &(_, i) in &q {
            let e = &mut self.events[i as usize];
            if e.at < top {
                e.at = top;
                changed = true;
            }
            top = e.at;
        }
        changed
    }

    /// Forget recorded events (used when statistics are reset after warmup:
    /// the crash base image is then re-taken).
    pub fn clear(&mut self) {
        self.events.clear();
        self.arrived.clear();
        self.arena.clear();
        self.marks.clear();
        self.count = 0;
    }
}

/// Where the events of a [`PersistLog`] went when it was put in
/// persistence-domain order ([`PersistLog::order_by_time`]), to translate
/// positions taken in call order (acknowledgements, checkpoint commits,
/// background work) into crash points of that order.
#[derive(Clone, Debug, Default)]
pub struct TimeOrder {
    /// Crash-point position of each event, by its call-order index; empty
    /// when the calls were already in time order (the identity).
    pos: Vec<u32>,
    /// Call-order index of the event at each position (empty: identity).
    old: Vec<u32>,
}

impl TimeOrder {
    /// Whether no event moved.
    pub fn is_identity(&self) -> bool {
        self.pos.is_empty()
    }

    /// Position of call-order event `i`.
    #[inline]
    pub fn position(&self, i: u64) -> u64 {
        self.pos.get(i as usize).map_or(i, |&k| u64::from(k))
    }

    /// Call-order index of the event at position `k`.
    #[inline]
    pub fn call_index(&self, k: u64) -> u64 {
        self.old.get(k as usize).map_or(k, |&i| u64::from(i))
    }

    /// The crash point right after event `seq - 1` persisted, the last one
    /// recorded before position `seq` was taken in call order (0 for
    /// `seq == 0`): a checkpoint's commit, taken right after its switch
    /// write.
    pub fn after_call(&self, seq: u64) -> u64 {
        if seq == 0 {
            0
        } else {
            self.position(seq - 1) + 1
        }
    }

    /// For each call position of `seqs` (ascending), the first crash point
    /// at which every event recorded before it has persisted.
    pub fn all_before(&self, seqs: impl Iterator<Item = u64>, mut f: impl FnMut(u64)) {
        let (mut i, mut top) = (0u64, 0u64);
        for s in seqs {
            while i < s {
                top = top.max(self.position(i) + 1);
                i += 1;
            }
            f(top);
        }
    }

    /// The crash point of a marker taken at time `at` after `seq` calls (a
    /// transaction's acknowledgement): past every event accepted before
    /// `at`, and those accepted at `at` and issued before the marker.
    /// `events`: the log's events in time order.
    pub fn at_time(&self, events: &[PersistEvent], seq: u64, at: Cycle) -> u64 {
        let lo = events.partition_point(|e| e.at < at);
        let ties = events[lo..].partition_point(|e| e.at == at) as u64;
        // Among ties the call order is kept: a binary search on it.
        let (mut a, mut b) = (0u64, ties);
        while a < b {
            let m = a + (b - a) / 2;
            if self.call_index(lo as u64 + m) < seq {
                a = m + 1;
            } else {
                b = m;
            }
        }
        lo as u64 + a
    }
}
