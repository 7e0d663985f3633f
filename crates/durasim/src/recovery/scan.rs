//! Resumable recovery: a recovery written as cursors over the crash image,
//! so that crash verification can continue a crash point's recovery from
//! the previous point's scan instead of re-parsing the whole log.
//!
//! A scheme opts in by writing its recovery as a [`ResumableScan`]: one or
//! more independent *cursors* (e.g. one per core's log) that read the crash
//! image, call [`ScanIo::home`] for the home writes recovery makes and
//! [`ScanIo::mark`] whenever everything read so far is folded into the
//! cursor's state; and a [`ResumableScan::finish`] that returns the
//! end-of-recovery writes (truncation, rebuilt metadata) as a function of
//! the state alone. The scheme's ordinary recovery is then
//! [`recover_by_scan`]: every cursor scanned from its start, the home writes
//! in cursor order, then the finish writes — so there is one recovery code
//! and the fast path cannot drift from it.
//!
//! The crash-verification driver (`crash/mod.rs`) keeps, per worker, the scan state of the
//! last crash point with the byte ranges each cursor read before its last
//! mark (*stable*) and after it (*frontier*: what made it stop). Crash
//! point k+1 adds one persisted write. If it touches a stable byte, the
//! state is dropped and the point recovers from scratch. If it touches a
//! cursor's frontier, that cursor resumes from its mark: the from-scratch
//! scan would read the same stable bytes, reach the same mark in the same
//! state and continue exactly as the resumed one does (recovery is a
//! deterministic function of the bytes it reads). Otherwise the scan's
//! result is unchanged. The recovered image is kept too (crash image plus
//! home writes, updated by each new event where no home write covers it),
//! so a point costs the new records plus the oracle's check of the words
//! that can differ, not a replay of the log. `verify_resume` recovers every
//! fast-path point from scratch as well and counts any difference (tests,
//! CI).
//!
//! Contract for implementers: a cursor changes its state only right before
//! a `mark` (a scan that stops returns without touching what the mark
//! saved, except fields that describe the reads since the mark, which every
//! call recomputes, e.g. a read count for the report); home writes are kept
//! only when a mark follows them; recovery's home writes never overlap the
//! bytes any cursor reads (the driver checks this and falls back).
//!
//! *Scans that follow the writes* (hoop, whose replay is not a log prefix:
//! newest TxID wins across blocks, and GC retires old commits): instead of
//! the driver's stable/frontier ranges, the scan is told every persisted
//! write ([`ResumableScan::persisted`]) and, at the next resume, re-reads
//! the bytes those writes touched and folds the difference into its state
//! (a commit added or retired). Its home writes are then a function of the
//! state kept up to date: [`ScanIo::rehome`] replaces (or, with `None`,
//! withdraws) a home write made by an earlier resume, so each word is
//! written once with its final value, as a from-scratch recovery writes
//! it. Such home writes must not overlap one another. A change the state
//! cannot absorb makes the scan [`ResumableScan::stale`]: the driver
//! restarts it from scratch at that point.

use super::writes::Writes;
use super::RecoveryReport;
use crate::config::Params;
use crate::error::Result;
use crate::mem::{Layout, MemRead, MemWrite};
use crate::types::Addr;

/// What a cursor sees: the crash image (reads are recorded by the
/// driver), a sink for home writes and the mark.
pub trait ScanIo: MemRead {
    /// A home write of recovery (kept if a mark follows).
    fn home(&mut self, addr: Addr, data: &[u8]);
    /// Everything read so far is folded into the cursor's state.
    fn mark(&mut self);
    /// Replace an earlier home write of exactly this piece (`old`, at most
    /// one 64 B line; made by this or an earlier resume) by `new`, or
    /// withdraw it (`None`): newest-wins replays (lsm) and scans that
    /// follow the writes (hoop; module docs). Kept if a mark follows.
    ///
    /// Where home writes overlap (morlog-dp's spilled undo), the orders
    /// differ: the from-scratch recovery keeps pieces in emission order
    /// (at a mark, the new home writes are appended, then the
    /// replacements act, each on the last live piece at `addr` with
    /// bytes `old`), while the driver's kept image takes each resume's
    /// home writes, then its replacements, in time order (a withdrawal
    /// shows the crash image again). A scan that overlaps must make both
    /// end on the same bytes (morlog's `MorScan`).
    fn rehome(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>);
    /// Drop every home write this cursor kept since its start, so that it
    /// can scan again from its start with a fresh state (a scan that finds
    /// it emitted writes too early, e.g. morlog's). `false` when the caller
    /// cannot take them back (the driver has applied earlier ones): the
    /// scan then returns an error and the driver recovers the point from
    /// scratch, where the restart succeeds.
    fn restart(&mut self) -> bool;
}

/// A recovery split into resumable cursors and a finish (module docs).
pub trait ResumableScan: Send {
    /// Independent cursors, scanned in order by the from-scratch recovery.
    fn cursors(&self) -> usize;
    /// Continue cursor `c` from its last mark (its start the first time)
    /// as far as the bytes allow.
    fn resume(&mut self, c: usize, io: &mut dyn ScanIo) -> Result<()>;
    /// The end-of-recovery writes, in order: a function of the state only.
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8]));
    /// The recovery report of the from-scratch recovery with this state.
    fn report(&self, p: &Params) -> RecoveryReport;
    /// Whether the scan follows the persisted writes itself (module docs)
    /// instead of being resumed by the driver's read ranges.
    fn follows_writes(&self) -> bool {
        false
    }
    /// A write persisted since the last resume (only if
    /// [`ResumableScan::follows_writes`]); the next resume folds it in.
    fn persisted(&mut self, _addr: Addr, _len: u64) {}
    /// After a resume: a write could not be folded into the state; the
    /// driver restarts the scan from scratch (a fresh scan is never stale).
    fn stale(&self) -> bool {
        false
    }
    /// Whether a recovery crashed after all its home writes and some of
    /// its finish writes, then run again, provably ends on the image of
    /// the uninterrupted recovery (the scheme's own argument, in
    /// docs/model/crash-reuse.md; e.g. finish writes that only clear entries whose
    /// mappings the home writes already applied). The driver then counts
    /// such re-runs of a resumed point as proven instead of running them;
    /// `verify_resume` runs them (from scratch) and compares.
    fn finish_reruns_repeat(&self) -> bool {
        false
    }
    /// The finish writes' count and, if the scan keeps it, the wrapping
    /// sum of their [`super::writes::piece_hash`]es, if every finish write
    /// lies outside the home region (no check reads it). With
    /// [`ResumableScan::finish_reruns_repeat`] the driver then needs
    /// nothing else of them at a resumed point and does not build them:
    /// the count and the digest choose the recovery crash points, all of
    /// which are proven (without the sum the digest picks other points of
    /// the same number, equally proven: osp, whose sum would cost as much
    /// as building the finish). `verify_resume` builds them and compares.
    fn finish_summary(&self) -> Option<(usize, Option<u64>)> {
        None
    }
}

/// A scheme's resumable recovery: its initial (nothing scanned) state.
pub type NewScanFn = fn(&Params, &Layout) -> Box<dyn ResumableScan>;

/// A [`ScanIo`] over an image that keeps home writes per cursor.
struct PlainIo<'a> {
    img: &'a dyn MemWrite,
    pending: Writes,
    kept: Writes,
    /// Rehomes since the last mark: (address, old bytes, new bytes or a
    /// withdrawal), applied to `kept` at the next mark.
    rehomes: Vec<(Addr, Vec<u8>, Option<Vec<u8>>)>,
    /// Last kept piece per address, built only once a cursor rehomes
    /// (newest-wins replays, lsm, rehome one word per update).
    last_at: rustc_hash::FxHashMap<Addr, usize>,
    indexed: usize,
}

impl PlainIo<'_> {
    /// Replace the kept piece at `addr` holding `old` (module docs of
    /// `ScanIo::rehome`): through the index when it is the last piece
    /// there, else by a search (a withdrawal shifts positions: the index
    /// starts over).
    fn apply_rehome(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>) {
        if let Some(d) = new {
            for i in self.indexed..self.kept.len() {
                self.last_at.insert(self.kept.piece(i).0, i);
            }
            self.indexed = self.kept.len();
            if let Some(&i) = self.last_at.get(&addr) {
                if self.kept.piece(i).1 == old {
                    self.kept.overwrite(i, d);
                    return;
                }
            }
            // An earlier piece there (morlog's swaps): no position moves,
            // the index stays valid.
            let found = self.kept.replace(addr, old, new);
            debug_assert!(found, "a rehome names an earlier home write");
            return;
        }
        self.last_at.clear();
        self.indexed = 0;
        let found = self.kept.replace(addr, old, new);
        debug_assert!(found, "a rehome names an earlier home write");
    }
}

impl MemRead for PlainIo<'_> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.img.read_bytes(addr, buf);
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        self.img.zeros_until(addr, end)
    }
}

impl ScanIo for PlainIo<'_> {
    fn home(&mut self, addr: Addr, data: &[u8]) {
        self.pending.push(addr, data);
    }

    fn mark(&mut self) {
        self.kept.extend_from(&self.pending);
        self.pending.clear();
        for (a, old, new) in std::mem::take(&mut self.rehomes) {
            self.apply_rehome(a, &old, new.as_deref());
        }
    }

    fn rehome(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>) {
        self.rehomes
            .push((addr, old.to_vec(), new.map(<[u8]>::to_vec)));
    }

    fn restart(&mut self) -> bool {
        self.kept.clear();
        self.pending.clear();
        self.rehomes.clear();
        self.last_at.clear();
        self.indexed = 0;
        true
    }
}

/// Recovery from scratch: every cursor scanned from its start (all reads
/// before any write), the home writes in cursor order, the finish writes.
pub fn recover_by_scan(
    mut scan: Box<dyn ResumableScan>,
    img: &mut dyn MemWrite,
    p: &Params,
) -> Result<RecoveryReport> {
    let mut segments: Vec<Writes> = Vec::with_capacity(scan.cursors());
    for c in 0..scan.cursors() {
        let mut io = PlainIo {
            img: &*img,
            pending: Writes::default(),
            kept: Writes::default(),
            rehomes: Vec::new(),
            last_at: Default::default(),
            indexed: 0,
        };
        scan.resume(c, &mut io)?;
        segments.push(io.kept);
    }
    for s in &segments {
        s.replay_onto(s.len(), img);
    }
    scan.finish(&mut |a, d| img.write_bytes(a, d));
    Ok(scan.report(p))
}

/// Sorted, disjoint half-open byte ranges with insertion (scans mostly
/// ascend, so a new range usually extends the last one it follows).
#[derive(Default, Clone, Debug)]
pub struct RangeSet {
    ranges: Vec<(Addr, Addr)>,
}

impl RangeSet {
    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn insert(&mut self, start: Addr, end: Addr) {
        if end <= start {
            return;
        }
        // First range that ends at or after `start` (may merge).
        let i = self.ranges.partition_point(|r| r.1 < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            s = s.min(self.ranges[j].0);
            e = e.max(self.ranges[j].1);
            j += 1;
        }
        if j == i {
            self.ranges.insert(i, (s, e));
        } else {
            self.ranges[i] = (s, e);
            self.ranges.drain(i + 1..j);
        }
    }

    /// Insert every range of `new` (left empty): one merge pass instead
    /// of a shift of the vector per insert (a sampled run's gap brings
    /// thousands of scattered home writes at once).
    pub fn insert_all(&mut self, new: &mut Vec<(Addr, Addr)>) {
        if new.len() < 16 {
            for &(s, e) in new.iter() {
                self.insert(s, e);
            }
            new.clear();
            return;
        }
        new.retain(|r| r.1 > r.0);
        new.sort_unstable();
        let old = std::mem::take(&mut self.ranges);
        let mut out: Vec<(Addr, Addr)> = Vec::with_capacity(old.len() + new.len());
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < new.len() {
            let r = if j == new.len() || (i < old.len() && old[i] <= new[j]) {
                i += 1;
                old[i - 1]
            } else {
                j += 1;
                new[j - 1]
            };
            // Touching ranges merge, as in `insert`.
            match out.last_mut() {
                Some(last) if r.0 <= last.1 => last.1 = last.1.max(r.1),
                _ => out.push(r),
            }
        }
        self.ranges = out;
        new.clear();
    }

    /// Whether `[addr, addr + len)` overlaps a range.
    pub fn overlaps(&self, addr: Addr, len: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= addr);
        i < self.ranges.len() && self.ranges[i].0 < addr + len
    }

    pub fn iter(&self) -> impl Iterator<Item = (Addr, Addr)> + '_ {
        self.ranges.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan that homes words 0 and 8, then replaces word 0's bytes
    /// twice (before a mark, and once more after the last mark).
    struct Rehoming;

    impl ResumableScan for Rehoming {
        fn cursors(&self) -> usize {
            1
        }
        fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
            io.home(0, &1u64.to_le_bytes());
            io.home(8, &2u64.to_le_bytes());
            io.mark();
            io.rehome(0, &1u64.to_le_bytes(), Some(&3u64.to_le_bytes()));
            io.mark();
            io.rehome(0, &3u64.to_le_bytes(), Some(&4u64.to_le_bytes()));
            Ok(())
        }
        fn finish(&self, _out: &mut dyn FnMut(Addr, &[u8])) {}
        fn report(&self, _p: &Params) -> RecoveryReport {
            RecoveryReport::default()
        }
    }

    /// Rule: a rehomed word is written once, where it was first written,
    /// with the bytes of its last rehome before a mark.
    /// An image that records its writes.
    #[derive(Default)]
    struct Recorded {
        inner: crate::mem::SparseImage,
        writes: Writes,
    }

    impl MemRead for Recorded {
        fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
            self.inner.read_bytes(addr, buf);
        }
    }

    impl MemWrite for Recorded {
        fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
            self.writes.push(addr, data);
            self.inner.write_bytes(addr, data);
        }
    }

    #[test]
    fn rehome_rewrites_the_kept_piece_in_place() {
        let mut rec = Recorded::default();
        recover_by_scan(Box::new(Rehoming), &mut rec, &Params::defaults(&[])).unwrap();
        assert_eq!(rec.writes.len(), 2);
        let pieces: Vec<(Addr, Vec<u8>)> =
            rec.writes.pieces(2).map(|(a, d)| (a, d.to_vec())).collect();
        assert_eq!(
            pieces,
            vec![
                (0, 3u64.to_le_bytes().to_vec()),
                (8, 2u64.to_le_bytes().to_vec())
            ]
        );
        assert_eq!(rec.inner.read_u64(0), 3);
    }

    #[test]
    fn range_sets_merge_on_insert() {
        let mut r = RangeSet::default();
        r.insert(100, 108);
        r.insert(0, 8);
        r.insert(108, 120);
        r.insert(50, 60);
        assert_eq!(r.ranges, vec![(0, 8), (50, 60), (100, 120)]);
        r.insert(5, 101);
        assert_eq!(r.ranges, vec![(0, 120)]);
        assert!(r.overlaps(119, 8));
        assert!(!r.overlaps(120, 8));
        r.insert(200, 200);
        assert_eq!(r.ranges.len(), 1);
        // A bulk insert gives the same set as inserting one by one.
        let pieces: Vec<(Addr, Addr)> = (0..40u64)
            .map(|i| ((i * 37) % 500, (i * 37) % 500 + 1 + i % 9))
            .chain([(130, 130), (600, 640), (640, 650)])
            .collect();
        let mut one = r.clone();
        for &(s, e) in &pieces {
            one.insert(s, e);
        }
        let mut bulk = r.clone();
        bulk.insert_all(&mut pieces.clone());
        assert_eq!(bulk.ranges, one.ranges);
    }
}
