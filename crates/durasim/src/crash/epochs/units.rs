//! A checkpoint recovery kept per unit ([`UnitRecovery`]): each unit's
//! reads and writes, re-run one at a time when an event touches its reads,
//! and the byte-range bookkeeping that checks the units' contract.

use super::super::oracle::RecView;
use super::super::recorder::guarded;
use crate::mem::{MemRead, SparseImage};
use crate::recovery::writes::Writes;
use crate::recovery::{RangeSet, UnitCounts, UnitRecovery};
use crate::types::{Addr, WORD_BYTES};
use rustc_hash::FxHashMap;

/// A [`UnitRecovery`] kept per unit: an event that touches the global
/// part's reads drops it; one that touches a unit's reads re-runs that
/// unit (its writes taken out of the kept image, the new ones put in);
/// one that touches the reads of the unit that ended the scan continues
/// the scan from there. Each is where a from-scratch recovery reading the
/// same bytes would be (units depend only on the global part and their own
/// reads, write disjoint bytes and read no byte any write covers: checked).
pub(super) struct Units {
    pub(super) scan: Box<dyn UnitRecovery>,
    pub(super) global: RangeSet,
    /// Units taking part, in order.
    pub(super) parts: Vec<Unit>,
    /// Units `begin` announced.
    pub(super) n: u64,
    /// Reads of the unit that ended the scan (empty if all `n` ran).
    pub(super) end_reads: RangeSet,
    /// Unit read ranges by (start, unit) -> end, and the longest one.
    pub(super) index: std::collections::BTreeMap<(Addr, usize), Addr>,
    pub(super) longest: u64,
    /// Every byte read / written while kept (only grow: a write that meets
    /// a read ever made gives up, conservatively).
    pub(super) all_reads: Spans,
    pub(super) homes: Spans,
    /// Write pieces and counts summed over `parts`.
    pub(super) pieces: usize,
    pub(super) counts: UnitCounts,
    /// Word -> the unit whose write covers it.
    pub(super) owner: FxHashMap<Addr, usize>,
    /// Units whose reads an event touched; whether the end's were.
    pub(super) dirty: Vec<usize>,
    pub(super) end_dirty: bool,
}

#[derive(Default)]
pub(super) struct Unit {
    pub(super) reads: Vec<(Addr, Addr)>,
    pub(super) writes: Writes,
    pub(super) counts: UnitCounts,
}

/// Run unit `i` (its slot in `u.parts` empty) on the crash image `cur` and
/// put its writes into `view`. `Some(true)`: it takes part; `Some(false)`:
/// it ended the scan (its reads are the end's); `None`: it failed or broke
/// the contract.
fn run_unit(u: &mut Units, i: usize, cur: &SparseImage, view: &mut RecView) -> Option<bool> {
    let rl = ReadLog::new(cur);
    let mut w = Writes::default();
    let scan = &u.scan;
    let res = guarded(|| scan.unit(i as u64, &rl, &mut |a, d| w.push(a, d))).ok()?;
    let reads = rl.reads.into_inner();
    for &(s, e) in &reads {
        if u.homes.overlaps(s, e - s) {
            return None;
        }
        u.all_reads.insert(s, e);
    }
    let Some(counts) = res else {
        for &(s, e) in &reads {
            u.end_reads.insert(s, e);
        }
        return Some(false);
    };
    for (a, d) in w.pieces(w.len()) {
        let len = d.len() as u64;
        if u.all_reads.overlaps(a, len) {
            return None;
        }
        u.homes.insert(a, a + len);
        let end = a + len;
        let mut x = a & !(WORD_BYTES - 1);
        while x < end {
            if *u.owner.entry(x).or_insert(i) != i {
                return None;
            }
            x += WORD_BYTES;
        }
        view.cover_write(a, d);
    }
    for &(s, e) in &reads {
        let end = u.index.entry((s, i)).or_insert(e);
        *end = (*end).max(e);
        u.longest = u.longest.max(e - s);
    }
    u.pieces += w.len();
    u.counts = [u.counts[0] + counts[0], u.counts[1] + counts[1]];
    u.parts[i] = Unit {
        reads,
        writes: w,
        counts,
    };
    Some(true)
}

/// Disjoint half-open byte ranges in a B-tree (start -> end): inserts
/// anywhere cost a logarithm (recovery writes land all over home).
#[derive(Default)]
pub(super) struct Spans(std::collections::BTreeMap<Addr, Addr>);

impl Spans {
    pub(super) fn insert(&mut self, start: Addr, end: Addr) {
        if end <= start {
            return;
        }
        let (mut s, mut e) = (start, end);
        // Merge every range that overlaps or touches [s, e).
        while let Some((&ps, &pe)) = self.0.range(..=e).next_back() {
            if pe < s {
                break;
            }
            s = s.min(ps);
            e = e.max(pe);
            self.0.remove(&ps);
        }
        self.0.insert(s, e);
    }

    pub(super) fn overlaps(&self, addr: Addr, len: u64) -> bool {
        self.0
            .range(..addr + len)
            .next_back()
            .is_some_and(|(_, &e)| e > addr)
    }
}

/// A reader over the crash image that records the byte ranges read.
pub(super) struct ReadLog<'a> {
    pub(super) img: &'a SparseImage,
    pub(super) reads: std::cell::RefCell<Vec<(Addr, Addr)>>,
}

impl<'a> ReadLog<'a> {
    pub(super) fn new(img: &'a SparseImage) -> Self {
        ReadLog {
            img,
            reads: Default::default(),
        }
    }
}

impl MemRead for ReadLog<'_> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        if !buf.is_empty() {
            self.reads
                .borrow_mut()
                .push((addr, addr + buf.len() as u64));
        }
        self.img.read_bytes(addr, buf);
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let z = self.img.zeros_until(addr, end);
        if z > addr {
            self.reads.borrow_mut().push((addr, z));
        }
        z
    }
}

impl Units {
    /// Bring the units up to date with the events since the last point:
    /// re-run the units whose reads they touched (their old writes taken
    /// out of `view`, the new ones put in over the crash image `cur`) and
    /// continue the scan if they touched its end. The words whose
    /// recovered value may have changed; `None` if a unit failed, ended the
    /// scan early or broke the contract.
    pub(super) fn rerun_dirty(
        &mut self,
        cur: &SparseImage,
        view: &mut RecView,
    ) -> Option<Vec<Addr>> {
        let u = self;
        let mut dirty = std::mem::take(&mut u.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        let mut changed: Vec<Addr> = Vec::new();
        for i in dirty {
            // Take the unit's writes out of the image.
            let old = std::mem::take(&mut u.parts[i]);
            u.pieces -= old.writes.len();
            u.counts = [u.counts[0] - old.counts[0], u.counts[1] - old.counts[1]];
            for &(s, _) in &old.reads {
                u.index.remove(&(s, i));
            }
            for (a, d) in old.writes.pieces(old.writes.len()) {
                let end = a + d.len() as u64;
                let mut w = a & !(WORD_BYTES - 1);
                while w < end {
                    u.owner.remove(&w);
                    view.uncover(w, cur);
                    changed.push(w);
                    w += WORD_BYTES;
                }
            }
            match run_unit(u, i, cur, view) {
                Some(true) => {}
                _ => return None,
            }
            changed.extend(u.parts[i].writes.sort_words().iter().copied());
        }
        if u.end_dirty {
            u.end_dirty = false;
            u.end_reads.clear();
            while (u.parts.len() as u64) < u.n {
                let i = u.parts.len();
                u.parts.push(Unit::default());
                match run_unit(u, i, cur, view) {
                    Some(true) => {
                        changed.extend(u.parts[i].writes.sort_words().iter().copied());
                    }
                    Some(false) => {
                        u.parts.pop();
                        break;
                    }
                    None => return None,
                }
            }
        }
        Some(changed)
    }
}
