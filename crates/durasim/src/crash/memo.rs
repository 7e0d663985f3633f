//! Deduplication of crash images whose recovery inputs are identical
//! (Vinter's observation, made exact with read sets).
//!
//! Recovery is a deterministic function of the bytes it reads. At a crash
//! point whose recovery passed every check, the driver keeps the byte ranges
//! recovery (and each of its crashed re-runs) read, and the writes recovery
//! made. Crash point k+1 differs from point k by one persisted write: if no
//! write since the memo was taken touched a byte any of those recoveries
//! read, each of them would read the same bytes, take the same path and
//! write the same bytes again. The recovered image is then the new crash
//! image with the recorded writes replayed on it, and the oracle checks it
//! exactly as if recovery had run. A recovery re-run after a crash is
//! compared to the uninterrupted one without running it: words both fully
//! overwrote compare as at the memo's point (equal: it passed); the few
//! others mix in crash-image bytes and are compared again.

use crate::mem::{MemRead, MemWrite, PersistEvent};
use crate::types::{Addr, LINE_BYTES, WORD_BYTES};
use rustc_hash::FxHashMap;

/// The writes of one recovery run, in order, split at 64 B lines (each
/// piece is one of recovery's own persist points).
#[derive(Default, Clone)]
pub struct Writes {
    chunks: Vec<(Addr, u32, u8)>,
    arena: Vec<u8>,
    /// Word addresses written (sorted and deduplicated by [`Writes::sort_words`]).
    pub words: Vec<Addr>,
}

impl Writes {
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn push(&mut self, addr: Addr, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((LINE_BYTES - a % LINE_BYTES) as usize).min(data.len() - done);
            self.chunks.push((a, self.arena.len() as u32, n as u8));
            self.arena.extend_from_slice(&data[done..done + n]);
            let mut w = a & !(WORD_BYTES - 1);
            while w < a + n as u64 {
                self.words.push(w);
                w += WORD_BYTES;
            }
            done += n;
        }
    }

    /// Replay the first `m` writes onto `img`.
    pub fn replay_onto(&self, m: usize, img: &mut dyn MemWrite) {
        for &(a, off, len) in &self.chunks[..m] {
            img.write_bytes(a, &self.arena[off as usize..off as usize + len as usize]);
        }
    }

    pub fn sort_words(&mut self) -> &[Addr] {
        self.words.sort_unstable();
        self.words.dedup();
        &self.words
    }

    /// A hash of the writes' addresses and bytes: a function of the crash
    /// image alone (recovery is deterministic), so it seeds the choice of
    /// recovery crash points identically for identical recoveries.
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut mix = |x: u64| {
            h = (h ^ x).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(23);
        };
        for &(a, _, len) in &self.chunks {
            mix(a);
            mix(len as u64);
        }
        for c in self.arena.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            mix(u64::from_le_bytes(b));
        }
        h
    }

    /// Apply the first `m` writes to a word map of (value, byte mask).
    fn apply_words(&self, m: usize, map: &mut FxHashMap<Addr, (u64, u8)>) {
        for &(a, off, len) in &self.chunks[..m] {
            for i in 0..len as u64 {
                let b = a + i;
                let e = map.entry(b & !(WORD_BYTES - 1)).or_insert((0, 0));
                let sh = (b % WORD_BYTES) * 8;
                let byte = self.arena[off as usize + i as usize] as u64;
                e.0 = (e.0 & !(0xff << sh)) | (byte << sh);
                e.1 |= 1 << (b % WORD_BYTES);
            }
        }
    }
}

/// Sorted, disjoint half-open byte ranges read by recovery.
#[derive(Default, Clone)]
pub struct ReadSet {
    ranges: Vec<(Addr, Addr)>,
}

impl ReadSet {
    pub fn push(&mut self, start: Addr, end: Addr) {
        if end > start {
            // Recovery scans mostly ascend: merge with the last range.
            if let Some(last) = self.ranges.last_mut() {
                if start >= last.0 && start <= last.1 {
                    last.1 = last.1.max(end);
                    return;
                }
            }
            self.ranges.push((start, end));
        }
    }

    /// Sort and merge (call once recording is over).
    pub fn seal(&mut self) {
        self.ranges.sort_unstable();
        let mut out: Vec<(Addr, Addr)> = Vec::with_capacity(self.ranges.len());
        for &(s, e) in &self.ranges {
            match out.last_mut() {
                Some(l) if s <= l.1 => l.1 = l.1.max(e),
                _ => out.push((s, e)),
            }
        }
        self.ranges = out;
    }

    pub fn extend(&mut self, other: &ReadSet) {
        self.ranges.extend_from_slice(&other.ranges);
    }

    /// Whether `[addr, addr + len)` overlaps a range (sealed sets only).
    pub fn overlaps(&self, addr: Addr, len: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= addr);
        i < self.ranges.len() && self.ranges[i].0 < addr + len
    }
}

/// Expand a byte mask (bit i = byte i) to a word mask.
fn byte_mask(m: u8) -> u64 {
    (0..8).fold(0u64, |acc, i| {
        if m & (1 << i) != 0 {
            acc | (0xff << (i * 8))
        } else {
            acc
        }
    })
}

/// A word where an uninterrupted recovery and a re-run after a crash may
/// differ depending on the crash image: (address, value and byte mask the
/// first recovery wrote, value and mask of the re-run's image).
type MixedWord = (Addr, u64, u8, u64, u8);

/// What a passing crash point's recoveries read and wrote.
pub struct Memo {
    /// Events `..checked` were found not to touch `reads`.
    checked: u64,
    reads: ReadSet,
    pub writes: Writes,
    pub bytes_written: u64,
    pub modeled_ns: f64,
    /// Per recovery crash point: the words to compare again.
    mixed: Vec<Vec<MixedWord>>,
}

impl Memo {
    /// `point`: the crash point the recoveries ran at; `reads`: everything
    /// they read (sealed); `reruns`: for each recovery crash point `m`, the
    /// re-run's writes.
    pub fn new(
        point: u64,
        reads: ReadSet,
        writes: Writes,
        bytes_written: u64,
        modeled_ns: f64,
        reruns: &[(usize, Writes)],
        home_limit: Addr,
    ) -> Self {
        let mut first = FxHashMap::default();
        writes.apply_words(writes.len(), &mut first);
        let mixed = reruns
            .iter()
            .map(|(m, w2)| {
                let mut second = FxHashMap::default();
                writes.apply_words(*m, &mut second);
                w2.apply_words(w2.len(), &mut second);
                let mut v: Vec<MixedWord> = first
                    .keys()
                    .chain(second.keys())
                    .copied()
                    .filter(|&a| a < home_limit)
                    .filter_map(|a| {
                        let (v1, m1) = first.get(&a).copied().unwrap_or((0, 0));
                        let (v2, m2) = second.get(&a).copied().unwrap_or((0, 0));
                        (m1 != 0xff || m2 != 0xff).then_some((a, v1, m1, v2, m2))
                    })
                    .collect();
                v.sort_unstable_by_key(|x| x.0);
                v.dedup_by_key(|x| x.0);
                v
            })
            .collect();
        Memo {
            checked: point,
            reads,
            writes,
            bytes_written,
            modeled_ns,
            mixed,
        }
    }

    /// Whether the recoveries at crash point `k` (>= the memo's point) read
    /// exactly what they read at the memo's point.
    pub fn holds_at(&mut self, k: u64, events: &[PersistEvent]) -> bool {
        while self.checked < k {
            let e = &events[self.checked as usize];
            if self.reads.overlaps(e.addr, e.len as u64) {
                return false;
            }
            self.checked += 1;
        }
        true
    }

    /// Number of recovery crash points the memo covers.
    pub fn reruns(&self) -> usize {
        self.mixed.len()
    }

    /// Every re-run after a crash still matches the uninterrupted recovery
    /// on the crash image `img` (only the mixed words can have changed).
    pub fn reruns_match(&self, img: &dyn MemRead) -> bool {
        self.mixed.iter().all(|words| {
            words.iter().all(|&(a, v1, m1, v2, m2)| {
                let c = img.read_u64(a);
                let (b1, b2) = (byte_mask(m1), byte_mask(m2));
                (c & !b1) | (v1 & b1) == (c & !b2) | (v2 & b2)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_sets_merge_and_find_overlaps() {
        let mut r = ReadSet::default();
        r.push(100, 108);
        r.push(104, 120);
        r.push(0, 8);
        r.push(200, 200);
        r.seal();
        assert_eq!(r.ranges, vec![(0, 8), (100, 120)]);
        assert!(r.overlaps(119, 8));
        assert!(!r.overlaps(120, 64));
        assert!(!r.overlaps(8, 92));
        assert!(r.overlaps(0, 1));
    }

    #[test]
    fn word_masks_follow_write_order() {
        let mut w = Writes::default();
        w.push(8, &[1, 2, 3, 4]);
        w.push(10, &[9]);
        let mut m = FxHashMap::default();
        w.apply_words(2, &mut m);
        assert_eq!(m[&8], (0x0409_0201, 0x0f));
        assert_ne!(w.digest(), Writes::default().digest());
    }
}
