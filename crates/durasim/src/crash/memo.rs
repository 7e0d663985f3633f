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

use crate::mem::{MemRead, PersistEvent};
use crate::recovery::writes::Writes;
use crate::types::{Addr, WORD_BYTES};

/// Writes `(address, bytes)` in order as (word, value, byte mask), one per
/// word, later writes over earlier ones, sorted by word.
fn word_image_of<'a>(
    pieces: impl Iterator<Item = (Addr, &'a [u8])>,
    out: &mut Vec<(Addr, u64, u8)>,
) {
    {
        let start = out.len();
        for (a, bytes) in pieces {
            let len = bytes.len();
            let end = a + len as u64;
            let mut w = a & !(WORD_BYTES - 1);
            while w < end {
                let (lo, hi) = (a.max(w), end.min(w + WORD_BYTES));
                if lo == w && hi == w + WORD_BYTES {
                    // A whole word (the common case).
                    let o = (w - a) as usize;
                    let v = u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
                    out.push((w, v, 0xff));
                    w += WORD_BYTES;
                    continue;
                }
                let mut v = [0u8; 8];
                let mut mask = 0u8;
                for b in lo..hi {
                    v[(b - w) as usize] = bytes[(b - a) as usize];
                    mask |= 1 << (b - w);
                }
                out.push((w, u64::from_le_bytes(v), mask));
                w += WORD_BYTES;
            }
        }
        // Stable: equal words stay in write order, folded oldest first.
        out[start..].sort_by_key(|x| x.0);
        let mut folded: Vec<(Addr, u64, u8)> = Vec::with_capacity(out.len() - start);
        for &(w, v, m) in &out[start..] {
            match folded.last_mut() {
                Some(l) if l.0 == w => {
                    let bm = byte_mask(m);
                    l.1 = (l.1 & !bm) | (v & bm);
                    l.2 |= m;
                }
                _ => folded.push((w, v, m)),
            }
        }
        out.truncate(start);
        out.extend(folded);
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
    /// Per recovery crash point `m`: the re-run's writes, until the memo
    /// is first used; then the words to compare again (most memos are
    /// invalidated by the very next event and never need them).
    reruns: Vec<(usize, Writes)>,
    mixed: Option<Vec<Vec<MixedWord>>>,
    /// Further recovery crash points whose re-runs were proven identical
    /// to the uninterrupted recovery ([`super::war`]): no mixed words.
    pub elided: usize,
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
        reruns: Vec<(usize, Writes)>,
        elided: usize,
    ) -> Self {
        Memo {
            checked: point,
            reads,
            writes,
            bytes_written,
            modeled_ns,
            reruns,
            mixed: None,
            elided,
        }
    }

    /// Words below `home_limit` where a re-run's image and the
    /// uninterrupted recovery's are not both fully overwritten.
    fn mixed_words(&self, home_limit: Addr) -> Vec<Vec<MixedWord>> {
        let mut first = Vec::new();
        word_image_of(self.writes.pieces(self.writes.len()), &mut first);
        self.reruns
            .iter()
            .map(|(m, w2)| {
                // The prefix, then the re-run's writes over it.
                let mut second = Vec::new();
                word_image_of(
                    self.writes.pieces(*m).chain(w2.pieces(w2.len())),
                    &mut second,
                );
                let (mut i, mut j) = (0, 0);
                let mut out = Vec::new();
                while i < first.len() || j < second.len() {
                    let a = match (first.get(i), second.get(j)) {
                        (Some(x), Some(y)) => x.0.min(y.0),
                        (Some(x), None) => x.0,
                        (None, Some(y)) => y.0,
                        (None, None) => unreachable!(),
                    };
                    let (v1, m1) = match first.get(i) {
                        Some(x) if x.0 == a => {
                            i += 1;
                            (x.1, x.2)
                        }
                        _ => (0, 0),
                    };
                    let (v2, m2) = match second.get(j) {
                        Some(y) if y.0 == a => {
                            j += 1;
                            (y.1, y.2)
                        }
                        _ => (0, 0),
                    };
                    if a < home_limit && (m1 != 0xff || m2 != 0xff) {
                        out.push((a, v1, m1, v2, m2));
                    }
                }
                out
            })
            .collect()
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
        self.reruns.len() + self.elided
    }

    /// Every re-run after a crash still matches the uninterrupted recovery
    /// on the crash image `img` (only the mixed words can have changed).
    pub fn reruns_match(&mut self, img: &dyn MemRead, home_limit: Addr) -> bool {
        if self.mixed.is_none() {
            self.mixed = Some(self.mixed_words(home_limit));
        }
        let mixed = self.mixed.as_ref().expect("just computed");
        mixed.iter().all(|words| {
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
        let mut m = Vec::new();
        word_image_of(w.pieces(2), &mut m);
        assert_eq!(m, vec![(8, 0x0409_0201, 0x0f)]);
        assert_ne!(w.digest(), Writes::default().digest());
    }
}
