//! The writes of one recovery run as an ordered piece list, and the
//! digests of written pieces: what recovery drivers (`recover_by_scan`,
//! `recover_by_units`) collect and crash verification replays, compares and
//! hashes.

use crate::mem::MemWrite;
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
    /// (a resumed scan, recovery/scan.rs) keeps it up to date as writes are added anywhere
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
