//! The persistence domain, made explicit: every event at which bytes become
//! durable is appended to a [`PersistLog`] (when recording is on), with the
//! time the persistence domain accepted it. The crash oracle puts the
//! recorded events in acceptance-time order ([`PersistLog::order_by_time`]);
//! a crash at point `k` then keeps exactly the initial media image plus the
//! first `k` events of that order.

use crate::types::{Addr, Cycle};

/// The write stream of background work: checkpoints, force-write-back
/// passes, a scheme's timed events and its end-of-run work.
pub const BACKGROUND_STREAM: u16 = u16::MAX;
/// The write stream of a controller without ADR programming queued writes
/// into the media (durable when programmed, in the controller's order).
pub const MEDIA_STREAM: u16 = u16::MAX - 1;

/// The first and last 8-byte word of its line that `e` writes.
#[inline]
fn word_span(e: &PersistEvent) -> (usize, usize) {
    let first = (e.addr % 64 / 8) as usize;
    let last = ((e.addr % 64 + u64::from(e.len).max(1) - 1) / 8) as usize;
    (first, last)
}

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
    /// Per event: the write stream it was issued in ([`Self::set_stream`]).
    streams: Vec<u16>,
    /// The stream of the writes recorded from now on.
    stream: u16,
    arena: Vec<u8>,
    /// Count of events even when recording is off (crash point numbering).
    count: u64,
    marks: Vec<DurableMark>,
    paths: Vec<PathWindow>,
}

/// The persist events `start..end` (call order) a scheme issued on one of
/// its declared recovery paths (`Scheme::recovery_paths`): a log wrap, a
/// head persist, a full table, ... Crash tests count the points that fall
/// in each path, so a path no crash point reached is visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathWindow {
    pub name: &'static str,
    pub start: u64,
    pub end: u64,
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
            stream: BACKGROUND_STREAM,
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
            self.streams.push(self.stream);
        }
    }

    /// The writes recorded from now on belong to `stream`: a core's
    /// handling (its index), background work ([`BACKGROUND_STREAM`]) or the
    /// media programming queued writes ([`MEDIA_STREAM`]); returns the
    /// previous stream. Each stream is put in time order on its own
    /// ([`Self::order_by_time`]).
    #[inline]
    pub fn set_stream(&mut self, stream: u16) -> u16 {
        std::mem::replace(&mut self.stream, stream)
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

    /// Where a path's writes start: pass it to [`PersistLog::path_done`]
    /// after the last of them.
    #[inline]
    pub fn path_start(&self) -> u64 {
        self.count
    }

    /// The writes since `start` were recovery path `name`'s (recorded only
    /// when they exist and history is on).
    #[inline]
    pub fn path_done(&mut self, name: &'static str, start: u64) {
        if self.enabled && self.count > start {
            self.paths.push(PathWindow {
                name,
                start,
                end: self.count,
            });
        }
    }

    pub fn paths(&self) -> &[PathWindow] {
        &self.paths
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

    /// Per recorded event, its write stream ([`Self::set_stream`]).
    pub fn streams(&self) -> &[u16] {
        &self.streams
    }

    pub fn data(&self, e: &PersistEvent) -> &[u8] {
        &self.arena[e.data_off as usize..e.data_off as usize + e.len as usize]
    }

    /// Put the recorded events in crash-point order and return where each
    /// went. Each write stream (a core's handling, background work, the
    /// media's programming; [`Self::set_stream`]) is put in the order its
    /// writes were accepted: by acceptance time, then call order among
    /// writes accepted in the same cycle. A write that overlaps an
    /// earlier-issued one (an 8-byte word of both) is accepted no earlier
    /// than it: the simulator applies writes functionally in issue order,
    /// so a later write's bytes are the ones that survive, and a
    /// write-pending queue merges or programs a line's writes in that
    /// order; such a write's `at` is raised to that time. A queue admits
    /// writes in arrival order: a write accepted by the write queue is
    /// accepted no earlier than one that arrived before it (the controller
    /// model accepts a write that finds the queue full when some queued
    /// write leaves, which can be earlier than an earlier arrival's
    /// acceptance).
    ///
    /// Across streams the call (handling) order is kept: the k-th write of
    /// a stream in call order gives its position to the stream's k-th write
    /// in time order, and where writes of two streams overlap, the
    /// earlier-issued one goes first. The engine handles one core's
    /// operation at a time, whole, in the order the operations start, and
    /// shared structures hand out slots in that order; a core whose
    /// operation started later can still have writes accepted before those
    /// of one handled earlier, and ordering those across cores by time
    /// would persist a later slot before an earlier one, which no
    /// controller that granted the slots in that order would do.
    /// Durability reports are moved to the first point holding every event
    /// issued before them.
    pub fn order_by_time(&mut self) -> TimeOrder {
        let n = self.events.len();
        let streams = if self.streams.len() == n {
            std::mem::take(&mut self.streams)
        } else {
            vec![BACKGROUND_STREAM; n]
        };
        // Raise acceptance times until both rules hold within each stream
        // (two passes almost always suffice).
        let issued_at: Vec<Cycle> = self.events.iter().map(|e| e.at).collect();
        for _ in 0..8 {
            let a = self.raise_overlaps(&streams);
            let b = self.raise_fifo(&streams);
            let c = self.raise_waiters(&streams, &issued_at);
            if !a && !b && !c {
                break;
            }
        }
        let mut raised: Vec<(u16, u32, Cycle, Cycle)> = self
            .events
            .iter()
            .zip(&issued_at)
            .enumerate()
            .filter(|(_, (e, &a))| e.at != a)
            .map(|(i, (e, &a))| (streams[i], i as u32, a, e.at))
            .collect();
        drop(issued_at);
        raised.sort_unstable();
        let pos = self.stream_positions(&streams);
        let identity = pos.iter().enumerate().all(|(i, &k)| i as u32 == k);
        let index = StreamIndex::new(&self.events, &streams, &pos);
        if identity {
            self.streams = streams;
            return TimeOrder {
                pos: Vec::new(),
                old: Vec::new(),
                index,
                raised,
            };
        }
        let mut old = vec![0u32; n];
        for (i, &k) in pos.iter().enumerate() {
            old[k as usize] = i as u32;
        }
        self.events = old.iter().map(|&i| self.events[i as usize]).collect();
        if self.arrived.len() == n {
            self.arrived = old.iter().map(|&i| self.arrived[i as usize]).collect();
        }
        self.streams = old.iter().map(|&i| streams[i as usize]).collect();
        let to = TimeOrder {
            pos,
            old,
            index,
            raised,
        };
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

    /// The crash-point position of each event (by call index): the
    /// earliest-issued write goes next whose stream's writes accepted
    /// before it (by time, then call order) and whose word's earlier-issued
    /// writes (any stream) have gone. Within a stream that is time order;
    /// across streams, call order, a write waiting only for its own
    /// stream's earlier acceptances. Should the two constraints form a
    /// cycle (a stream's late-issued write accepted early, tied through
    /// shared words to another stream), the earliest-issued write left goes
    /// next: the bytes that survive must be the last ones issued.
    fn stream_positions(&self, streams: &[u16]) -> Vec<u32> {
        let n = self.events.len();
        let ev = &self.events;
        // Background work keeps its call order: its writes are stamped
        // ahead of the cores handled after it, which already see its state
        // (a log head advanced, space retired).
        let key = |i: u32| {
            let s = streams[i as usize];
            let at = if s == BACKGROUND_STREAM {
                0
            } else {
                ev[i as usize].at
            };
            (s, at, i)
        };
        let mut by_time: Vec<u32> = (0..n as u32).collect();
        if !by_time.windows(2).all(|w| key(w[0]) <= key(w[1])) {
            by_time.sort_unstable_by_key(|&i| key(i));
        }
        // Each event's successor in its stream's time order, and how many
        // predecessors it waits for.
        let mut next = vec![u32::MAX; n];
        let mut indeg = vec![0u16; n];
        let mut in_call_order = true;
        for w in by_time.windows(2) {
            if streams[w[0] as usize] == streams[w[1] as usize] {
                next[w[0] as usize] = w[1];
                indeg[w[1] as usize] = 1;
                in_call_order &= w[0] < w[1];
            }
        }
        drop(by_time);
        if in_call_order {
            return (0..n as u32).collect();
        }
        // Writes of another stream to a word, earlier issued: (pred, succ).
        // Same-stream word order follows from the time order (raised).
        let mut cross: Vec<(u32, u32)> = Vec::new();
        let mut words_last: rustc_hash::FxHashMap<Addr, [u32; 8]> = Default::default();
        for (i, e) in ev.iter().enumerate() {
            let words = words_last
                .entry(e.addr - e.addr % 64)
                .or_insert([u32::MAX; 8]);
            let (first, last) = word_span(e);
            for w in &mut words[first..=last] {
                if *w != u32::MAX
                    && streams[*w as usize] != streams[i]
                    && cross.last() != Some(&(*w, i as u32))
                {
                    cross.push((*w, i as u32));
                }
                *w = i as u32;
            }
        }
        drop(words_last);
        // Across streams (background work included), a write issued
        // before another and accepted no later than it goes first: time
        // order and call order agree on that pair, and no crash keeps the
        // later one without it. (Without this, a stream's early-stamped
        // write that was issued late could hold back its stream's
        // earlier-issued writes, letting another stream's later slot of a
        // shared log, or a log head that background work advanced past
        // data already written back, persist before them.) One edge per
        // other stream suffices: from its latest write (by time, then
        // issue) of those issued earlier and accepted no later; its
        // stream's earlier writes precede it.
        let mut by_stream: rustc_hash::FxHashMap<u16, std::collections::BTreeSet<(Cycle, u32)>> =
            Default::default();
        for (i, e) in ev.iter().enumerate() {
            let s = streams[i];
            for (&x, set) in &by_stream {
                if x == s {
                    continue;
                }
                if let Some(&(_, a)) = set.range(..=(e.at, u32::MAX)).next_back() {
                    cross.push((a, i as u32));
                }
            }
            by_stream.entry(s).or_default().insert((e.at, i as u32));
        }
        drop(by_stream);
        cross.sort_unstable();
        cross.dedup();
        for &(_, j) in &cross {
            indeg[j as usize] = indeg[j as usize].saturating_add(1);
        }
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut ready: BinaryHeap<Reverse<u32>> = (0..n as u32)
            .filter(|&i| indeg[i as usize] == 0)
            .map(Reverse)
            .collect();
        let mut pos = vec![u32::MAX; n];
        let mut k = 0u32;
        // The earliest-issued write not yet placed (the cycle breaker).
        let mut oldest = 0usize;
        fn release(j: u32, indeg: &mut [u16], ready: &mut BinaryHeap<Reverse<u32>>, pos: &[u32]) {
            let d = &mut indeg[j as usize];
            *d = d.saturating_sub(1);
            if *d == 0 && pos[j as usize] == u32::MAX {
                ready.push(Reverse(j));
            }
        }
        while (k as usize) < n {
            let i = match ready.pop() {
                Some(Reverse(i)) if pos[i as usize] == u32::MAX => i,
                Some(_) => continue,
                None => {
                    while pos[oldest] != u32::MAX {
                        oldest += 1;
                    }
                    oldest as u32
                }
            };
            pos[i as usize] = k;
            k += 1;
            if next[i as usize] != u32::MAX {
                release(next[i as usize], &mut indeg, &mut ready, &pos);
            }
            let from = cross.partition_point(|&(p, _)| p < i);
            for &(_, j) in cross[from..].iter().take_while(|&&(p, _)| p == i) {
                release(j, &mut indeg, &mut ready, &pos);
            }
        }
        pos
    }

    /// Raise each write to the latest acceptance of an earlier-issued
    /// write of its stream it overlaps (per 8-byte word); whether any
    /// changed.
    fn raise_overlaps(&mut self, streams: &[u16]) -> bool {
        let mut words_at: rustc_hash::FxHashMap<(u16, Addr), [Cycle; 8]> = Default::default();
        let mut changed = false;
        for (e, &s) in self.events.iter_mut().zip(streams) {
            let line = e.addr - e.addr % 64;
            let (first, last) = word_span(e);
            let words = words_at.entry((s, line)).or_insert([0; 8]);
            let t = words[first..=last].iter().fold(e.at, |t, &w| t.max(w));
            changed |= t != e.at;
            e.at = t;
            words[first..=last].fill(t);
        }
        changed
    }

    /// Raise each write to the latest acceptance of an earlier-issued write
    /// of its stream whose reported acceptance (`reported`, before any
    /// raise) it is stamped at or after: the scheme computed its time from
    /// that report (a log's records restored after the head write it saw
    /// accepted), so it waited for that write, and a controller admitting
    /// in arrival order would have reported the later time. Within one
    /// stream only: across streams a write stamped after another core's
    /// report did not wait for it, and raising it past that core's later
    /// writes would make crash states no controller produces. Only raised
    /// writes can raise another; whether any changed.
    fn raise_waiters(&mut self, streams: &[u16], reported: &[Cycle]) -> bool {
        use std::collections::BTreeMap;
        // Per stream, a staircase of the raised writes issued so far:
        // reported time -> raised time, both increasing, so the entry with
        // the latest reported time at or before a stamp holds the latest
        // raised time among them.
        let mut stairs: rustc_hash::FxHashMap<u16, BTreeMap<Cycle, Cycle>> = Default::default();
        let mut changed = false;
        for (i, (e, &s)) in self.events.iter_mut().zip(streams).enumerate() {
            let stair = stairs.entry(s).or_default();
            if let Some((_, &t)) = stair.range(..=e.at).next_back() {
                if t > e.at {
                    e.at = t;
                    changed = true;
                }
            }
            let (o, a) = (reported[i], e.at);
            if a > o {
                let dominated = stair.range(..=o).next_back().is_some_and(|(_, &t)| t >= a);
                if !dominated {
                    let later: Vec<Cycle> = stair
                        .range(o..)
                        .take_while(|(_, &t)| t <= a)
                        .map(|(&k, _)| k)
                        .collect();
                    for k in later {
                        stair.remove(&k);
                    }
                    stair.insert(o, a);
                }
            }
        }
        changed
    }

    /// Raise each queued write to the latest acceptance of a queued write
    /// that arrived before it (by arrival time, then issue order), of any
    /// stream: the controller's write queue is shared by every core, and
    /// admits writes in arrival order; whether any changed.
    fn raise_fifo(&mut self, _streams: &[u16]) -> bool {
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
        self.streams.clear();
        self.arena.clear();
        self.marks.clear();
        self.paths.clear();
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
    /// Each stream's events with their positions, for
    /// [`TimeOrder::ack_point`].
    index: StreamIndex,
    /// (stream, call index, time the controller reported, time after the
    /// queue-order and overlap rules) of every write whose acceptance was
    /// raised, sorted.
    raised: Vec<(u16, u32, Cycle, Cycle)>,
}

/// Per write stream, its events in time order and in call order with
/// their crash-point positions.
#[derive(Clone, Debug, Default)]
struct StreamIndex {
    ids: Vec<u16>,
    /// Per stream: (acceptance time, call index, the lowest point holding
    /// its stream's events up to it) in time order.
    chains: Vec<Vec<(Cycle, u32, u32)>>,
    /// Per stream: call indices, ascending.
    calls: Vec<Vec<u32>>,
    /// Per stream: after its first j events in call order, the lowest
    /// point holding all of them (`tops[s][j - 1]`).
    tops: Vec<Vec<u32>>,
}

impl StreamIndex {
    fn new(events: &[PersistEvent], streams: &[u16], pos: &[u32]) -> Self {
        let mut ids: Vec<u16> = streams.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut ix = StreamIndex {
            chains: vec![Vec::new(); ids.len()],
            calls: vec![Vec::new(); ids.len()],
            tops: vec![Vec::new(); ids.len()],
            ids,
        };
        for (i, (e, &s)) in events.iter().zip(streams).enumerate() {
            let k = ix.ids.binary_search(&s).expect("stream listed");
            ix.chains[k].push((e.at, i as u32, pos[i]));
            ix.calls[k].push(i as u32);
            let top = ix.tops[k].last().copied().unwrap_or(0).max(pos[i] + 1);
            ix.tops[k].push(top);
        }
        for c in &mut ix.chains {
            c.sort_unstable_by_key(|&(at, i, _)| (at, i));
            // The point holding the chain up to each event.
            let mut top = 0;
            for e in c.iter_mut() {
                top = top.max(e.2 + 1);
                e.2 = top;
            }
        }
        ix
    }
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

    /// The times at which `stream`'s markers `marks` (call position, time
    /// taken; in call order, times nondecreasing, as a core's
    /// acknowledgements are) hold what they waited for: a marker taken at
    /// `at` waited for its stream's earlier-issued writes the controller
    /// reported accepted by `at`; where the queue-order or overlap rule
    /// put such a write's acceptance later, the marker is that late too
    /// (a controller admitting writes in arrival order would have reported
    /// the later time, and the scheme would have waited for it).
    pub fn waited_times(&self, stream: u16, marks: &[(u64, Cycle)]) -> Vec<Cycle> {
        let from = self.raised.partition_point(|r| r.0 < stream);
        let to = self.raised.partition_point(|r| r.0 <= stream);
        let raised = &self.raised[from..to];
        let mut next = 0;
        // Raised writes issued before the current marker that could still
        // lie past a later marker's time.
        let mut open: Vec<(Cycle, Cycle)> = Vec::new();
        marks
            .iter()
            .map(|&(seq, at)| {
                while next < raised.len() && u64::from(raised[next].1) < seq {
                    open.push((raised[next].2, raised[next].3));
                    next += 1;
                }
                let t = open
                    .iter()
                    .filter(|&&(issued, _)| issued <= at)
                    .fold(at, |t, &(_, r)| t.max(r));
                // Later markers are no earlier: what is accepted by now
                // cannot raise them.
                open.retain(|&(_, r)| r > at);
                t
            })
            .collect()
    }

    /// The crash point of a marker of `stream` taken at time `at` after
    /// `seq` calls (a core's transaction acknowledged): past every event of
    /// its stream accepted before `at` (and those accepted at `at` and
    /// issued before the marker), and every event of another stream issued
    /// before the marker (across streams the call order is kept).
    pub fn ack_point(&self, stream: u16, seq: u64, at: Cycle) -> u64 {
        let ix = &self.index;
        let mut point = self.own_point(stream, seq, at);
        for (k, &id) in ix.ids.iter().enumerate() {
            if id != stream {
                let j = ix.calls[k].partition_point(|&i| u64::from(i) < seq);
                if j > 0 {
                    point = point.max(u64::from(ix.tops[k][j - 1]));
                }
            }
        }
        point
    }

    /// [`Self::ack_point`] counting only `stream`'s own events. The core's
    /// next transaction writes after the marker's time, so none of its
    /// writes lies before this point; another core's write issued earlier
    /// and accepted later can put [`Self::ack_point`] past them.
    pub fn own_point(&self, stream: u16, seq: u64, at: Cycle) -> u64 {
        let ix = &self.index;
        let Ok(k) = ix.ids.binary_search(&stream) else {
            return 0;
        };
        let c = &ix.chains[k];
        let j = c.partition_point(|&(t, i, _)| (t, u64::from(i)) < (at, seq));
        if j > 0 {
            u64::from(c[j - 1].2)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(writes: &[(u16, Addr, Cycle)]) -> PersistLog {
        let mut log = PersistLog::new(true);
        for &(s, addr, at) in writes {
            log.set_stream(s);
            log.record_queued(addr, &[1; 8], at, at);
        }
        log
    }

    /// Two cores' writes to consecutive slots of a shared log, accepted in
    /// the same cycle: the earlier slot goes first even though its core's
    /// unrelated write, issued later, was accepted earlier still.
    #[test]
    fn an_earlier_issued_write_accepted_no_later_goes_first_across_streams() {
        let mut log = log_of(&[(1, 0x1000, 100), (0, 0x1040, 100), (1, 0x2000, 50)]);
        let order = log.order_by_time();
        assert!(order.position(0) < order.position(1));
        assert!(order.position(2) < order.position(0));
    }

    /// A core's write-back issued before background work and accepted
    /// before the background's log-head write goes first, even though a
    /// later-issued write of the core, accepted earlier still, must
    /// precede it: a crash keeping the head keeps the write-back.
    #[test]
    fn a_write_issued_before_background_work_and_accepted_no_later_goes_first() {
        let mut log = log_of(&[
            (1, 0x1000, 200),                 // write-back, accepted late
            (BACKGROUND_STREAM, 0x9000, 300), // log head advanced
            (1, 0x2000, 100),                 // the core's next write
        ]);
        let order = log.order_by_time();
        assert!(order.position(0) < order.position(1));
        assert!(order.position(2) < order.position(0));
    }

    /// A commit the controller accepted at once although an earlier
    /// arrival was admitted later: the queue order puts the commit after
    /// that write, and the acknowledgement, taken at the reported time,
    /// still holds the commit.
    #[test]
    fn an_acknowledgement_holds_writes_the_queue_order_accepted_later() {
        let mut log = PersistLog::new(true);
        log.set_stream(0);
        log.record_queued(0x1000, &[1; 8], 10, 40); // entry, queue full
        log.record_queued(0x1040, &[2; 8], 11, 20); // commit, a slot freed
        let order = log.order_by_time();
        let t = order.waited_times(0, &[(2, 20)]);
        assert_eq!(t, vec![40]);
        assert_eq!(order.ack_point(0, 2, t[0]), 2);
        // Without the raised time the acknowledgement would miss both.
        assert_eq!(order.ack_point(0, 2, 20), 0);
    }

    /// A core's acknowledgement waits for another core's write issued
    /// before it (call order across cores), even one accepted later; its
    /// own point does not, and lies before the core's next write.
    #[test]
    fn the_own_point_ignores_other_cores_writes_accepted_later() {
        // Core 0: a write issued first, accepted late, and one issued last,
        // accepted earlier. Core 1: a transaction's write, acknowledged at
        // 20 after two calls, then the next transaction's write.
        let mut log = log_of(&[
            (0, 0x1000, 1000),
            (1, 0x2000, 10),
            (1, 0x3000, 30),
            (0, 0x4000, 500),
        ]);
        let order = log.order_by_time();
        let own = order.own_point(1, 2, 20);
        assert_eq!(own, order.position(1) + 1);
        assert!(own <= order.position(2));
        assert!(order.ack_point(1, 2, 20) > order.position(0));
    }

    /// A write stamped at the time the controller reported for an
    /// earlier one (opt-undo restoring its dropped records once the log
    /// head was accepted) waits for that write: when the queue order
    /// accepts the head later, the restore moves after it, so no crash
    /// keeps the restore without the head. An unrelated write stamped
    /// before that report keeps its time.
    #[test]
    fn a_write_stamped_at_a_raised_report_waits_for_that_write() {
        let mut log = PersistLog::new(true);
        log.set_stream(1);
        log.record_queued(0x5000, &[9; 8], 5, 60); // another core's write, queue full
        log.set_stream(0);
        log.record_queued(0x1000, &[1; 8], 10, 20); // log head, reported at 20
        log.record(0x2000, &[2; 8], 20); // records restored at the reported time
        log.record(0x3000, &[3; 8], 15); // stamped before the report
        let order = log.order_by_time();
        assert!(order.position(1) < order.position(2));
        assert!(order.position(3) < order.position(1));
    }
}
