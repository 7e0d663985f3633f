//! Where the media keeps its stored cells: a slot per written line, found
//! through its 4 KiB page, in chunks that never move.
//!
//! A run writes up to millions of distinct lines (a logging scheme's log
//! is written once per entry), so a map keyed by line would be probed at a
//! cache miss per write and rehashed (a fresh, zero-filled table) as it
//! grows. Keyed by page instead, the map holds 64 times fewer entries and a
//! sequentially written log hits the last page's block; the cells and the
//! log lines' code words live in fixed-size chunks, so growing costs one
//! chunk, never a copy of the slab.

use super::packed::{Packed, WORDS};
use super::Flat;
use crate::types::{Addr, LINE_BYTES};
use rustc_hash::FxHashMap;

const LINES_PER_PAGE: u64 = 64;
const PAGE_SHIFT: u32 = 12;

/// Append-only storage indexed by `u32`, in chunks that stay where they
/// are when it grows.
///
/// A chunk is faulted in by one call when it is created
/// ([`crate::alloc::prefault`]), not one page fault per 4 KiB as a growing
/// log fills it, and is reserved rather than filled: entries are written
/// once, by `push`, never a default value first. Chunks stay below 2 MiB,
/// so they get 4 KiB pages: memory written once in sequence gains nothing
/// from huge pages, and a fresh huge page costs the most to fault in
/// (on virtual machines whose balloon takes free 2 MiB blocks back from the
/// guest, several times a 4 KiB page's cost per byte).
pub struct Slab<T: Copy> {
    chunks: Vec<Vec<T>>,
    len: u32,
}

impl<T: Copy> Slab<T> {
    /// log2 of the entries per chunk: a power of two (an index splits by
    /// shift and mask) whose chunk is 1 to 2 MiB.
    const CHUNK_SHIFT: u32 = ((1 << 20) / std::mem::size_of::<T>())
        .next_power_of_two()
        .trailing_zeros();
    const CHUNK: usize = 1 << Self::CHUNK_SHIFT;

    fn new() -> Self {
        Slab {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Append `v`; returns its index.
    #[inline]
    fn push(&mut self, v: T) -> u32 {
        let i = self.len;
        let c = i as usize >> Self::CHUNK_SHIFT;
        if c == self.chunks.len() {
            let mut chunk: Vec<T> = Vec::with_capacity(Self::CHUNK);
            // SAFETY: the chunk's own buffer, of at least `CHUNK` entries.
            unsafe {
                crate::alloc::prefault(
                    chunk.as_mut_ptr().cast(),
                    Self::CHUNK * std::mem::size_of::<T>(),
                )
            };
            self.chunks.push(chunk);
        }
        // Within its capacity: the chunk never moves.
        self.chunks[c].push(v);
        self.len += 1;
        i
    }

    #[inline]
    pub fn get(&self, i: u32) -> &T {
        &self.chunks[i as usize >> Self::CHUNK_SHIFT][i as usize & (Self::CHUNK - 1)]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.chunks[i as usize >> Self::CHUNK_SHIFT][i as usize & (Self::CHUNK - 1)]
    }
}

/// One stored line: its cells and, for a log line once counted, the index
/// + 1 of its last code word in [`LineStore::flats`] (0: none yet).
#[derive(Clone, Copy)]
pub struct Stored {
    pub cells: Packed,
    pub flat: u32,
}

impl Default for Stored {
    fn default() -> Self {
        Stored {
            cells: [0; WORDS],
            flat: 0,
        }
    }
}

/// The stored lines: slot of each line (through its page), the lines, and
/// the log lines' code words.
pub struct LineStore {
    /// Page number -> index of its block in `blocks`.
    pages: FxHashMap<u64, u32>,
    /// Per page: each line's slot + 1 (0: never stored).
    blocks: Vec<[u32; LINES_PER_PAGE as usize]>,
    /// The page looked up last and its block (a log written in sequence
    /// stays on one page for 64 lines).
    last_page: u64,
    last_block: u32,
    pub lines: Slab<Stored>,
    pub flats: Slab<Flat>,
}

impl LineStore {
    pub fn new() -> Self {
        LineStore {
            pages: FxHashMap::default(),
            blocks: Vec::new(),
            last_page: u64::MAX,
            last_block: 0,
            lines: Slab::new(),
            flats: Slab::new(),
        }
    }

    #[inline]
    fn split(line: Addr) -> (u64, usize) {
        (
            line >> PAGE_SHIFT,
            ((line >> LINE_BYTES.trailing_zeros()) & (LINES_PER_PAGE - 1)) as usize,
        )
    }

    /// The slot of `line`, if it has stored cells.
    #[inline]
    pub fn slot(&self, line: Addr) -> Option<u32> {
        let (page, i) = Self::split(line);
        let b = if page == self.last_page {
            self.last_block
        } else {
            *self.pages.get(&page)?
        };
        self.blocks[b as usize][i].checked_sub(1)
    }

    /// The slot of `line`, storing `init()` as its cells first if it has
    /// none.
    #[inline]
    pub fn slot_or_insert(&mut self, line: Addr, init: impl FnOnce() -> Packed) -> u32 {
        let (page, i) = Self::split(line);
        if page != self.last_page {
            let next = self.blocks.len() as u32;
            let b = *self.pages.entry(page).or_insert(next);
            if b == next {
                self.blocks.push([0; LINES_PER_PAGE as usize]);
            }
            self.last_page = page;
            self.last_block = b;
        }
        let b = self.last_block as usize;
        match self.blocks[b][i] {
            0 => {
                let s = self.lines.push(Stored {
                    cells: init(),
                    flat: 0,
                });
                self.blocks[b][i] = s + 1;
                s
            }
            s => s - 1,
        }
    }

    /// Lines with stored cells, sorted.
    pub fn lines_sorted(&self) -> Vec<Addr> {
        let mut pages: Vec<(u64, u32)> = self.pages.iter().map(|(&p, &b)| (p, b)).collect();
        pages.sort_unstable();
        let mut v = Vec::new();
        for (p, b) in pages {
            for (i, &s) in self.blocks[b as usize].iter().enumerate() {
                if s != 0 {
                    v.push((p << PAGE_SHIFT) + i as u64 * LINE_BYTES);
                }
            }
        }
        v
    }

    /// The code word last stored in the log line of slot `slot`, if any.
    #[inline]
    pub fn flat(&self, slot: u32) -> Option<&Flat> {
        match self.lines.get(slot).flat {
            0 => None,
            f => Some(self.flats.get(f - 1)),
        }
    }

    /// Record `f` as the code word stored in the log line of slot `slot`.
    #[inline]
    pub fn set_flat(&mut self, slot: u32, f: Flat) {
        match self.lines.get(slot).flat {
            0 => {
                let i = self.flats.push(f);
                self.lines.get_mut(slot).flat = i + 1;
            }
            i => *self.flats.get_mut(i - 1) = f,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slab_keeps_every_entry_across_chunks() {
        // Entries are written only by `push` (no default fill): every
        // index must read back its own value, across chunk boundaries, and
        // `get_mut` must change only its entry.
        let mut s: Slab<[u64; 9]> = Slab::new();
        let n = 2 * Slab::<[u64; 9]>::CHUNK + 17;
        let val = |i: usize| std::array::from_fn(|w| (i * 9 + w) as u64 + 1);
        for i in 0..n {
            assert_eq!(s.push(val(i)), i as u32);
        }
        *s.get_mut(Slab::<[u64; 9]>::CHUNK as u32) = [0; 9];
        for i in 0..n {
            let want = if i == Slab::<[u64; 9]>::CHUNK {
                [0; 9]
            } else {
                val(i)
            };
            assert_eq!(*s.get(i as u32), want, "entry {i}");
        }
        assert!(Slab::<[u64; 9]>::CHUNK * std::mem::size_of::<[u64; 9]>() >= 1 << 20);
        assert!(Slab::<Stored>::CHUNK * std::mem::size_of::<Stored>() < 2 << 20);
    }
}
