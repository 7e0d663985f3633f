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
            done += n;
        }
    }

    /// Replace the last piece equal to `old` at `addr` by `new` (same
    /// length) or remove it (`None`); false if there is none.
    pub fn replace(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>) -> bool {
        let at = self.chunks.iter().rposition(|&(a, off, len)| {
            a == addr && self.arena[off as usize..off as usize + len as usize] == *old
        });
        let Some(i) = at else {
            return false;
        };
        match new {
            Some(d) => {
                assert_eq!(d.len(), old.len(), "a replacement keeps the length");
                let off = self.chunks[i].1 as usize;
                self.arena[off..off + d.len()].copy_from_slice(d);
            }
            None => {
                self.chunks.remove(i);
            }
        }
        true
    }

    /// Replay the first `m` writes onto `img`.
    pub fn replay_onto(&self, m: usize, img: &mut dyn MemWrite) {
        for &(a, off, len) in &self.chunks[..m] {
            img.write_bytes(a, &self.arena[off as usize..off as usize + len as usize]);
        }
    }

    /// The sorted, distinct words written. Sorts one key per 64 B piece
    /// (line address and word mask), not one per word: 8x fewer keys for
    /// recoveries that write whole lines.
    pub fn sort_words(&mut self) -> &[Addr] {
        let mut keys: Vec<u64> = Vec::with_capacity(self.chunks.len());
        keys.extend(self.chunks.iter().map(|&(a, _, len)| {
            let line = a & !(LINE_BYTES - 1);
            let (w0, w1) = (
                (a - line) / WORD_BYTES,
                (a - line + len as u64 - 1) / WORD_BYTES,
            );
            let mask = ((1u64 << (w1 + 1)) - 1) & !((1u64 << w0) - 1);
            // Lines are 64 B aligned: address * 4 leaves the low 8 bits free.
            (line << 2) | mask
        }));
        keys.sort_unstable();
        self.words.clear();
        let mut i = 0;
        while i < keys.len() {
            let line = keys[i] >> 8;
            let mut mask = 0u64;
            while i < keys.len() && keys[i] >> 8 == line {
                mask |= keys[i] & 0xff;
                i += 1;
            }
            let base = line << 6;
            for b in 0..8u64 {
                if mask & (1 << b) != 0 {
                    self.words.push(base + b * WORD_BYTES);
                }
            }
        }
        &self.words
    }

    /// A hash of the writes' addresses and bytes: a function of the crash
    /// image alone (recovery is deterministic), so it seeds the choice of
    /// recovery crash points identically for identical recoveries. A sum of
    /// per-piece hashes (and the count), so a resumed recovery
    /// (crash/resume.rs) keeps it up to date as writes are added anywhere
    /// in the sequence without re-hashing the whole recovery.
    pub fn digest(&self) -> u64 {
        let sum = self
            .pieces(self.len())
            .fold(0u64, |acc, (a, d)| acc.wrapping_add(piece_hash(a, d)));
        digest_of(sum, self.len())
    }

    pub fn clear(&mut self) {
        self.chunks.clear();
        self.arena.clear();
        self.words.clear();
    }

    /// Append all of `other`'s writes.
    pub fn extend_from(&mut self, other: &Writes) {
        for (a, d) in other.pieces(other.len()) {
            self.push(a, d);
        }
    }

    /// The first `m` writes as (word, value, byte mask), one per word,
    /// later writes over earlier ones, sorted by word.
    fn word_image(&self, m: usize, out: &mut Vec<(Addr, u64, u8)>) {
        word_image_of(self.pieces(m), out);
    }

    /// Write `i` as (address, bytes).
    pub(crate) fn piece(&self, i: usize) -> (Addr, &[u8]) {
        let (a, off, len) = self.chunks[i];
        (a, &self.arena[off as usize..off as usize + len as usize])
    }

    /// Replace the bytes of write `i` (same length).
    pub(crate) fn overwrite(&mut self, i: usize, data: &[u8]) {
        let (_, off, len) = self.chunks[i];
        assert_eq!(
            len as usize,
            data.len(),
            "a rewrite keeps the piece's length"
        );
        self.arena[off as usize..off as usize + data.len()].copy_from_slice(data);
    }

    /// The first `m` writes as (address, bytes).
    pub(crate) fn pieces(&self, m: usize) -> impl Iterator<Item = (Addr, &[u8])> {
        self.chunks[..m]
            .iter()
            .map(|&(a, off, len)| (a, &self.arena[off as usize..off as usize + len as usize]))
    }
}

/// The hash of one 64 B (or shorter) piece of a recovery write.
pub(crate) fn piece_hash(addr: Addr, data: &[u8]) -> u64 {
    let mut h = addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ data.len() as u64;
    for c in data.chunks(8) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(b))
            .wrapping_mul(0x0000_0100_0000_01b3)
            .rotate_left(23);
    }
    h ^ (h >> 31)
}

/// [`Writes::digest`] from the sum of its pieces' hashes and their count.
pub(crate) fn digest_of(sum: u64, pieces: usize) -> u64 {
    let mut h = sum ^ (pieces as u64).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

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
        self.writes.word_image(self.writes.len(), &mut first);
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
        w.word_image(2, &mut m);
        assert_eq!(m, vec![(8, 0x0409_0201, 0x0f)]);
        assert_ne!(w.digest(), Writes::default().digest());
    }
}
