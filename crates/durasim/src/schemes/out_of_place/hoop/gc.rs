//! Garbage collection with data coalescing (HOOP §III-E, Algorithm 1).
//!
//! GC works on the FULL blocks. Reading only bytes from NVM, it reads their
//! address slices (the transactions committed there: a prefix of commit
//! order, since commits always go to the active block), walks the
//! committed transactions newest first, keeps the first (newest) version of
//! each home word in a hash map H, writes every home line once, drops
//! mapping entries whose newest data went home and puts the lines into the
//! eviction buffer. Then it retires the address slices (one atomic word
//! each) in commit order and marks UNUSED every FULL block that holds no slice of a
//! transaction still live (in flight, or committed in the active block);
//! the others are freed by a later pass.
//!
//! Crash safety: recovery replays the committed transactions whose entries
//! are not retired, newest-wins, which rewrites what GC wrote. Address
//! slices are retired only after every home write, oldest first, so
//! whatever stays replayable after a crash is newer than whatever was
//! retired; blocks are freed only when no live entry points into them.

use super::layout::{self, BlockState, CommitEntry, DataSlice, SLICE_BYTES};
use super::{prefetch, prefetch_media, Hoop, MemCtx};
use crate::types::{Addr, Cycle, Purpose};
use rustc_hash::FxHashMap;

/// The newest version, among the migrated transactions, of each word of one
/// home line: what GC writes to that line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GcLine {
    values: [u64; 8],
    /// Slice each version was read from (identifies it, see `LineLocs`).
    slots: [u32; 8],
    line: Addr,
    /// Words with a version.
    mask: u8,
}

/// H of Algorithm 1: per home line, the first (newest) version offered of
/// each word. Offers are grouped per line in a hash map, so the ~10^6
/// versions of a pass are touched once each and only the ~10^5 distinct
/// lines are sorted (GC writes them in address order).
#[derive(Default)]
struct LineVersions {
    /// Home line -> index in `lines`.
    index: FxHashMap<Addr, u32>,
    lines: Vec<GcLine>,
    /// Line of the last offer and its index: consecutive words of a slice
    /// are mostly in one line, which then costs no hash lookup.
    last: (Addr, u32),
    /// (line, index in `lines`), sorted by line; and the radix sort's
    /// second buffer.
    order: Vec<(Addr, u32)>,
    order_tmp: Vec<(Addr, u32)>,
}

/// Never a line address (those are 64 B aligned).
const NO_LINE: Addr = Addr::MAX;

impl LineVersions {
    /// Empty H with room for `lines` lines (no growth during the pass).
    fn clear(&mut self, lines: usize) {
        self.index.clear();
        self.index.reserve(lines);
        self.lines.clear();
        self.lines.reserve(lines);
        self.last = (NO_LINE, 0);
    }

    /// Offer version `value` of home word `home` from slice `slot`; kept if
    /// it is the first offered for that word (offers come newest first).
    #[inline]
    fn offer(&mut self, home: Addr, value: u64, slot: u32) {
        let line = home & !63;
        if self.last.0 != line {
            let n = self.lines.len() as u32;
            let i = *self.index.entry(line).or_insert(n);
            if i == n {
                self.lines.push(GcLine {
                    values: [0; 8],
                    slots: [0; 8],
                    line,
                    mask: 0,
                });
            }
            self.last = (line, i);
        }
        let l = &mut self.lines[self.last.1 as usize];
        let w = ((home & 63) / 8) as usize;
        if l.mask & (1 << w) == 0 {
            l.mask |= 1 << w;
            l.values[w] = value;
            l.slots[w] = slot;
        }
    }

    /// Sort the lines by address; then `line(k)` is the k-th.
    fn sort(&mut self) {
        self.order.clear();
        self.order.extend(
            self.lines
                .iter()
                .enumerate()
                .map(|(i, l)| (l.line, i as u32)),
        );
        radix_sort_by_key(&mut self.order, &mut self.order_tmp, |&(line, _)| line >> 6);
    }

    fn len(&self) -> usize {
        self.order.len()
    }

    #[inline]
    fn line(&self, k: usize) -> &GcLine {
        &self.lines[self.order[k].1 as usize]
    }

    /// Start fetching the k-th line (sorted) into the host caches.
    #[inline]
    fn prefetch(&self, k: usize) {
        let l = &self.lines[self.order[k].1 as usize];
        // The entry spans at most three host cache lines.
        prefetch(&l.values[0]);
        prefetch(&l.slots[0]);
        prefetch(&l.mask);
    }

    /// Address of the k-th line (sorted), without touching its entry.
    #[inline]
    fn line_addr(&self, k: usize) -> Addr {
        self.order[k].0
    }
}

/// Buffers and state of a GC pass, kept across passes so a warm GC
/// allocates nothing.
#[derive(Default)]
pub(super) struct GcScratch {
    victims: Vec<usize>,
    commits: Vec<CommitEntry>,
    /// (slot, block) of each address slice read.
    aslices: Vec<(u64, usize)>,
    chain: Vec<(u64, DataSlice)>,
    chain_blocks: Vec<usize>,
    versions: LineVersions,
    /// Slots of every committed chain, newest transaction first; chain
    /// `i` is `chain_slots[chain_ends[i-1]..chain_ends[i]]`.
    chain_slots: Vec<u64>,
    chain_ends: Vec<u32>,
    lanes: Vec<Lane>,
    /// The pass in flight, if any.
    job: Option<Job>,
}

/// What one lane of the GC engine is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum LaneWork {
    #[default]
    Idle,
    /// Walking chain slices `next..end` of `chain_slots` (each read waits
    /// for the previous one: it holds the next link).
    Chain { next: u32, end: u32 },
    /// Home line `k` (sorted) was read (partial line): write it when the
    /// read data arrives.
    Write { k: u32 },
}

/// One outstanding-request slot of the GC engine (like a DMA engine's
/// request tag): `ready` is when its request completes and it can issue
/// the next one.
#[derive(Clone, Copy, Debug, Default)]
struct Lane {
    ready: Cycle,
    work: LaneWork,
}

/// Phases of a pass (Algorithm 1), separated by barriers: all address
/// slices before any chain (they hold the start addresses), all chains
/// before any home write (H must hold the newest version of every word),
/// every home write before any retirement (crash safety).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    AddrSlices,
    Chains,
    Lines,
    Retire,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    kind: GcKind,
    start: Cycle,
    phase: Phase,
    /// Next item of the phase to hand to a lane.
    cursor: usize,
    /// Time of the last read issued (distinct-issue-time statistic).
    last_read_at: Option<Cycle>,
    /// When the next lane frees up (the pass's next event).
    wake: Cycle,
    /// The pass's data-reduction counts (HOOP §IV (e)), added to the
    /// statistics only when it retires: a pass belongs wholly to the
    /// window it ends in, so a window starting mid-pass never sees its
    /// migrated words without its words in slices.
    counts: PassCounts,
}

/// What one GC pass collected and wrote home.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct PassCounts {
    /// Committed transactions migrated.
    pub tx_migrated: u64,
    /// Words in their data slices (every version).
    pub words_in_slices: u64,
    /// Words written home (newest version of each distinct word).
    pub words_migrated: u64,
}

/// Stable sort of `v` by `key`; `tmp` is scratch. An LSD radix sort: a few
/// sequential passes instead of a comparison sort's many, and digits equal
/// in every key are skipped.
fn radix_sort_by_key<T: Copy + Default>(v: &mut Vec<T>, tmp: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    const DIGIT: usize = 8;
    const RADIX: usize = 1 << DIGIT;
    let bits = 64 - v.iter().fold(0, |m, x| m | key(x)).leading_zeros() as usize;
    let passes = bits.div_ceil(DIGIT);
    let mut counts = [[0usize; RADIX]; 64 / DIGIT];
    for x in v.iter() {
        let k = key(x);
        for (p, c) in counts[..passes].iter_mut().enumerate() {
            c[(k >> (p * DIGIT)) as usize % RADIX] += 1;
        }
    }
    tmp.clear();
    tmp.resize(v.len(), T::default());
    for (p, c) in counts[..passes].iter().enumerate() {
        if c.contains(&v.len()) {
            continue; // one bucket: the pass would not move anything
        }
        let mut off = [0usize; RADIX];
        let mut sum = 0;
        for (o, &n) in off.iter_mut().zip(c) {
            *o = sum;
            sum += n;
        }
        for x in v.iter() {
            let d = (key(x) >> (p * DIGIT)) as usize % RADIX;
            tmp[off[d]] = *x;
            off[d] += 1;
        }
        std::mem::swap(v, tmp);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcKind {
    Periodic,
    OnDemand,
    Final,
}

impl Hoop {
    /// Run one whole GC pass from `now`, stalling (on-demand, emergency and
    /// final GC): completes the pass in flight first. Returns when its last
    /// write was accepted (persisted, with ADR).
    pub(super) fn run_gc(&mut self, ctx: &mut MemCtx, now: Cycle, kind: GcKind) -> Cycle {
        let t = self.gc_complete(ctx, now);
        self.gc_start(ctx, t, kind);
        self.gc_complete(ctx, t)
    }

    /// Is a pass in flight?
    pub(super) fn gc_busy(&self) -> bool {
        self.gc_scratch.as_ref().is_some_and(|sc| sc.job.is_some())
    }

    /// When the pass in flight can issue its next request.
    pub(super) fn gc_next_at(&self) -> Option<Cycle> {
        self.gc_scratch
            .as_ref()
            .and_then(|sc| sc.job.as_ref().map(|j| j.wake))
    }

    /// Drive the pass in flight to its end without letting cores run (the
    /// caller stalls them). Returns the end time.
    pub(super) fn gc_complete(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut t = now;
        while self.gc_busy() {
            t = t.max(self.gc_next_at().unwrap_or(t));
            if let Some(end) = self.gc_advance(ctx, t) {
                t = t.max(end);
            }
        }
        t
    }

    /// Start a pass at `now` over the FULL blocks. Functional work (H, the
    /// chain walk) is done here from the bytes; the timed reads and writes
    /// are issued by [`Hoop::gc_advance`] as the engine's lanes free up.
    /// Doing the functional part at one instant is safe: the slices of
    /// committed transactions in FULL blocks are immutable until the pass
    /// frees their blocks, and a home line GC writes is written by nobody
    /// else before (its mapping entry absorbs every eviction), so reading
    /// them now or at issue time gives the same bytes.
    pub(super) fn gc_start(&mut self, ctx: &mut MemCtx, now: Cycle, kind: GcKind) {
        debug_assert!(!self.gc_busy());
        match kind {
            GcKind::Periodic => self.stats.gc_runs_periodic += 1,
            GcKind::OnDemand => self.stats.gc_runs_on_demand += 1,
            GcKind::Final => self.stats.gc_runs_final += 1,
        }
        if self.full.is_empty() {
            return;
        }
        let mut sc = self.gc_scratch.take().expect("no GC step in progress");
        sc.victims.clear();
        sc.victims.extend(self.full.drain(..));
        // Mark the blocks BLK_GC (recovery treats them like FULL ones).
        for &b in &sc.victims {
            if self.blocks[b].state == BlockState::Full {
                self.blocks[b].state = BlockState::Gc;
                self.write_header(ctx, b, None, now);
            }
        }
        // Lines 4-18: address slices, then each committed transaction
        // newest first; the first version seen of a word is the newest.
        sc.commits.clear();
        sc.aslices.clear();
        let mut buf = [0u8; SLICE_BYTES as usize];
        for &b in &sc.victims {
            let epoch = self.blocks[b].epoch;
            for &s in &self.blocks[b].addr_slices {
                ctx.nvm.peek(self.g.slot_addr(s), &mut buf);
                let ok = layout::decode_address_slice_into(&buf, epoch, &mut sc.commits);
                assert!(ok, "GC: address slice bytes are intact");
                sc.aslices.push((s, b));
            }
        }
        sc.commits
            .sort_unstable_by_key(|c| std::cmp::Reverse(c.txid));
        // H of Algorithm 1. Every line it gets has OOP words, so is in `ind`.
        sc.versions.clear(self.ind.len());
        sc.chain_slots.clear();
        sc.chain_ends.clear();
        let mut counts = PassCounts::default();
        for c in &sc.commits {
            sc.chain.clear();
            sc.chain_blocks.clear();
            let mut slot = c.start_slot;
            loop {
                ctx.nvm.peek(self.g.slot_addr(slot), &mut buf);
                let s = DataSlice::decode(&buf).expect("GC: committed slice bytes are intact");
                debug_assert_eq!(s.txid, c.txid);
                sc.chain.push((slot, s));
                sc.chain_slots.push(slot);
                let b = self.g.block_of(slot);
                if !sc.chain_blocks.contains(&b) {
                    sc.chain_blocks.push(b);
                }
                if s.next == 0 {
                    break;
                }
                slot = layout::follow_next(slot, s.next, self.g.slots());
            }
            sc.chain_ends.push(sc.chain_slots.len() as u32);
            for &b in &sc.chain_blocks {
                self.blocks[b].live_txs -= 1;
            }
            // Within a transaction a later slice holds the later update.
            for (slot, s) in sc.chain.iter().rev() {
                let n = s.count as usize;
                counts.words_in_slices += n as u64;
                for i in 0..n {
                    sc.versions.offer(s.homes[i], s.values[i], *slot as u32);
                }
            }
        }
        counts.tx_migrated = sc.commits.len() as u64;
        if self.mutant_gc_free_first {
            // Planted bug: the migrated transactions stop being replayable
            // before any of their home writes.
            for &(s, b) in &sc.aslices {
                let hdr = layout::address_slice_header(self.blocks[b].epoch, true);
                let a = self.g.slot_addr(s) + layout::ADDR_HEADER_OFFSET as u64;
                ctx.nvm.write(a, &hdr, Purpose::Gc, now);
            }
        }
        sc.versions.sort();
        self.stats.gc_passes_started += 1;
        sc.lanes.clear();
        sc.lanes.resize(
            self.gc_lanes,
            Lane {
                ready: now,
                work: LaneWork::Idle,
            },
        );
        sc.job = Some(Job {
            kind,
            start: now,
            phase: Phase::AddrSlices,
            cursor: 0,
            last_read_at: None,
            wake: now,
            counts,
        });
        self.gc_scratch = Some(sc);
        self.gc_advance(ctx, now);
    }

    /// Issue, at `now`, every request of the pass in flight whose lane is
    /// free by then; move through the phases' barriers. Returns the end
    /// time when the pass finished.
    pub(super) fn gc_advance(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        // Taken (a step in progress) reads as no pass in flight.
        let mut sc = self.gc_scratch.take()?;
        let mut end = None;
        while let Some(mut job) = sc.job {
            let items = match job.phase {
                Phase::AddrSlices => sc.aslices.len(),
                Phase::Chains => sc.chain_ends.len(),
                Phase::Lines => sc.versions.len(),
                Phase::Retire => 0,
            };
            if job.phase == Phase::Retire {
                end = Some(self.gc_retire(ctx, &mut sc, job, now));
                sc.job = None;
                break;
            }
            for li in 0..sc.lanes.len() {
                while sc.lanes[li].ready <= now {
                    let work = sc.lanes[li].work;
                    let next = match work {
                        LaneWork::Chain { next, end } if next < end => {
                            let a = self.g.slot_addr(sc.chain_slots[next as usize]);
                            sc.lanes[li].work = LaneWork::Chain {
                                next: next + 1,
                                end,
                            };
                            Some(self.gc_read(ctx, &mut job, a, SLICE_BYTES, now))
                        }
                        LaneWork::Write { k } => {
                            sc.lanes[li].work = LaneWork::Idle;
                            let k = k as usize;
                            Some(self.gc_write_line(ctx, &mut job, &sc.versions, k, now))
                        }
                        _ if job.cursor < items => {
                            let i = job.cursor;
                            job.cursor += 1;
                            Some(match job.phase {
                                Phase::AddrSlices => {
                                    sc.lanes[li].work = LaneWork::Idle;
                                    let a = self.g.slot_addr(sc.aslices[i].0);
                                    self.gc_read(ctx, &mut job, a, SLICE_BYTES, now)
                                }
                                Phase::Chains => {
                                    let first = if i == 0 { 0 } else { sc.chain_ends[i - 1] };
                                    let a = self.g.slot_addr(sc.chain_slots[first as usize]);
                                    sc.lanes[li].work = LaneWork::Chain {
                                        next: first + 1,
                                        end: sc.chain_ends[i],
                                    };
                                    self.gc_read(ctx, &mut job, a, SLICE_BYTES, now)
                                }
                                _ => {
                                    let l = sc.versions.line(i);
                                    if l.mask != 0xff {
                                        // Partial line: merge into the home
                                        // content, read first.
                                        self.stats.gc_home_reads += 1;
                                        sc.lanes[li].work = LaneWork::Write { k: i as u32 };
                                        let a = l.line;
                                        self.gc_read(ctx, &mut job, a, 64, now)
                                    } else {
                                        sc.lanes[li].work = LaneWork::Idle;
                                        self.gc_write_line(ctx, &mut job, &sc.versions, i, now)
                                    }
                                }
                            })
                        }
                        _ => {
                            sc.lanes[li].work = LaneWork::Idle;
                            None
                        }
                    };
                    match next {
                        // A request completing at once still occupies its
                        // lane for a cycle: the engine issues at most one
                        // request per lane per cycle.
                        Some(done) => sc.lanes[li].ready = done.max(now + 1),
                        None => break,
                    }
                }
            }
            let drained = job.cursor >= items
                && sc
                    .lanes
                    .iter()
                    .all(|l| l.work == LaneWork::Idle && l.ready <= now);
            if !drained {
                // Some lane is still busy after `now`: wake at the first.
                job.wake = sc
                    .lanes
                    .iter()
                    .map(|l| l.ready)
                    .filter(|&r| r > now)
                    .min()
                    .unwrap_or(now + 1);
                sc.job = Some(job);
                break;
            }
            // Barrier: every request of the phase completed by `now`.
            job.phase = match job.phase {
                Phase::AddrSlices => Phase::Chains,
                Phase::Chains => Phase::Lines,
                _ => Phase::Retire,
            };
            job.cursor = 0;
            sc.job = Some(job);
        }
        self.gc_scratch = Some(sc);
        end
    }

    /// A timed GC read of `len` bytes at `addr` (the bytes were decoded at
    /// the start of the pass); returns when its data arrives.
    fn gc_read(
        &mut self,
        ctx: &mut MemCtx,
        job: &mut Job,
        addr: Addr,
        len: u64,
        now: Cycle,
    ) -> Cycle {
        let mut buf = [0u8; SLICE_BYTES as usize];
        self.stats.gc_reads_issued += 1;
        if job.last_read_at != Some(now) {
            self.stats.gc_read_issue_times += 1;
            job.last_read_at = Some(now);
        }
        ctx.nvm
            .read(addr, &mut buf[..len as usize], Purpose::Gc, now)
    }

    /// Lines 20-27 for the k-th line of H: write it home (merged into the
    /// current home bytes if partial), drop its mapping entry if its newest
    /// data went home, keep it in the eviction buffer. Returns when the
    /// write was accepted.
    fn gc_write_line(
        &mut self,
        ctx: &mut MemCtx,
        job: &mut Job,
        versions: &LineVersions,
        k: usize,
        now: Cycle,
    ) -> Cycle {
        let &GcLine {
            values,
            slots,
            line,
            mask,
        } = versions.line(k);
        if k + 1 < versions.len() {
            let ahead = versions.line_addr(k + 1);
            versions.prefetch(k + 1);
            self.ind.prefetch(ahead);
            prefetch_media(ctx.nvm.media(), ahead, 64);
        }
        job.counts.words_migrated += u64::from(mask.count_ones());
        let mut data = [0u8; 64];
        if mask != 0xff {
            ctx.nvm.peek(line, &mut data);
        }
        for w in (0..8).filter(|w| mask & (1 << w) != 0) {
            data[w * 8..w * 8 + 8].copy_from_slice(&values[w].to_le_bytes());
        }
        let accepted = ctx.nvm.write(line, &data, Purpose::Gc, now);
        self.stats.gc_lines_written += 1;
        self.stats.gc_bytes_migrated += 64;
        self.evb.insert(line, &data);
        let m = self.ind.migrated_line(line, mask, &slots);
        if m.empty {
            self.mapping_removed();
            self.stats.mapping_removed_by_gc += u64::from(m.unmapped);
        }
        accepted
    }

    /// The pass's last phase, at `now` (every home write accepted):
    /// retire the migrated transactions, one atomic word per address
    /// slice in commit order, so a crash leaves only newer ones
    /// replayable; then lines 28-29: blocks holding no slice of a live
    /// transaction become UNUSED and leave the index; the others wait for
    /// the next pass. Returns the end time.
    fn gc_retire(&mut self, ctx: &mut MemCtx, sc: &mut GcScratch, job: Job, now: Cycle) -> Cycle {
        let mut t_end = now;
        for &(s, b) in &sc.aslices {
            let hdr = layout::address_slice_header(self.blocks[b].epoch, true);
            let a = self.g.slot_addr(s) + layout::ADDR_HEADER_OFFSET as u64;
            t_end = t_end.max(ctx.nvm.write(a, &hdr, Purpose::Gc, now));
        }
        let t_hdr = t_end;
        // Kept victims are older than any block sealed during the pass:
        // they go back to the front of the FULL list, in order.
        let mut kept = 0;
        for i in 0..sc.victims.len() {
            let b = sc.victims[i];
            self.blocks[b].addr_slices.clear();
            if self.blocks[b].live_txs == 0 {
                self.blocks[b].state = BlockState::Unused;
                t_end = t_end.max(self.write_header(ctx, b, None, t_hdr));
                t_end = t_end.max(self.write_index_bit(ctx, b, false, t_end));
                self.free_blocks += 1;
                self.stats.gc_blocks_freed += 1;
            } else {
                sc.victims[kept] = b;
                kept += 1;
            }
        }
        for &b in sc.victims[..kept].iter().rev() {
            self.full.push_front(b);
        }
        self.stats.add_pass(job.counts, self.in_finish);
        self.stats.gc_cycles += t_end - job.start;
        if job.kind == GcKind::Periodic {
            self.stats.gc_background_cycles += t_end - job.start;
        }
        t_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn radix_sort_is_the_stable_sort_by_key(
            keys in proptest::collection::vec(0u64..(1 << 12), 0..600),
            shift in 0u32..40,
        ) {
            // Few distinct keys (many ties) spread over various bit ranges.
            let mut v: Vec<(u64, usize)> =
                keys.iter().enumerate().map(|(i, &k)| (k << shift, i)).collect();
            let mut want = v.clone();
            want.sort_by_key(|x| x.0);
            radix_sort_by_key(&mut v, &mut Vec::new(), |x| x.0);
            prop_assert_eq!(v, want);
        }

        #[test]
        fn line_versions_equal_first_version_per_word_by_line(
            words in proptest::collection::vec((0u64..64, 0u64..8, any::<u64>(), 0u32..1000), 0..600),
            shift in 0u32..28,
        ) {
            // Versions newest first over few lines; reference: the stable
            // sort by line then the first version of each word (the former
            // list-based GC).
            let offers: Vec<(Addr, u64, u32)> = words
                .iter()
                .map(|&(l, w, v, s)| ((l << (6 + shift)) | (w * 8), v, s))
                .collect();
            let mut sorted = offers.clone();
            sorted.sort_by_key(|x| x.0 >> 6);
            let mut want = Vec::new();
            for run in sorted.chunk_by(|a, b| a.0 >> 6 == b.0 >> 6) {
                let mut l = GcLine { values: [0; 8], slots: [0; 8], line: run[0].0 & !63, mask: 0 };
                for &(h, v, s) in run {
                    let w = ((h & 63) / 8) as usize;
                    if l.mask & (1 << w) == 0 {
                        l.mask |= 1 << w;
                        l.values[w] = v;
                        l.slots[w] = s;
                    }
                }
                want.push(l);
            }
            let mut lv = LineVersions::default();
            // Twice: a reused (cleared) H behaves like a fresh one.
            for lines in [0, offers.len()] {
                lv.clear(lines);
                for &(h, v, s) in &offers {
                    lv.offer(h, v, s);
                }
                lv.sort();
                let got: Vec<GcLine> = (0..lv.len()).map(|k| *lv.line(k)).collect();
                prop_assert_eq!(&got, &want);
            }
        }
    }
}
