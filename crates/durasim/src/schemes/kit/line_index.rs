//! Write-set position of each line of a running transaction (EHOU, OSP,
//! opt-undo, the redo log buffer of opt-redo and redu): a scan of the
//! lines while the set is small (most transactions write a few lines), a
//! hash map beyond. Every transactional store looks its line up here.

use crate::types::Addr;
use rustc_hash::FxHashMap;

#[derive(Default)]
pub(crate) struct LineIndex {
    /// The write set's lines in order (unique).
    lines: Vec<Addr>,
    /// Line -> position, kept only once `lines` outgrows `SCAN_MAX`.
    map: FxHashMap<Addr, usize>,
    /// Position of the line found or pushed last: a transaction mostly
    /// stores to one line several times in a row.
    last: usize,
}

impl LineIndex {
    /// Up to this many lines a scan beats hashing.
    const SCAN_MAX: usize = 32;

    /// [`LineIndex::get`] that checks the last line found first and
    /// remembers what it finds.
    #[inline(always)]
    pub(crate) fn find(&mut self, line: Addr) -> Option<usize> {
        if self.lines.get(self.last) == Some(&line) {
            return Some(self.last);
        }
        let i = self.get(line)?;
        self.last = i;
        Some(i)
    }

    /// Position of `line` (in push order), if pushed since the last clear.
    #[inline]
    pub(crate) fn get(&self, line: Addr) -> Option<usize> {
        if self.lines.len() <= Self::SCAN_MAX {
            find_u64(&self.lines, line)
        } else {
            self.map.get(&line).copied()
        }
    }

    /// Append `line` (not yet present) at the next position.
    #[inline]
    pub(crate) fn push(&mut self, line: Addr) {
        debug_assert!(self.get(line).is_none(), "lines are unique");
        self.lines.push(line);
        let n = self.lines.len();
        self.last = n - 1;
        if n == Self::SCAN_MAX + 1 {
            self.map
                .extend(self.lines.iter().enumerate().map(|(i, &l)| (l, i)));
        } else if n > Self::SCAN_MAX {
            self.map.insert(line, n - 1);
        }
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        self.lines.clear();
        // A map never filled (most transactions) needs no clearing.
        if !self.map.is_empty() {
            self.map.clear();
        }
    }
}

/// The first index of `x` in `v`, eight elements at a time without an
/// early exit inside a group (the compiler vectorizes the group compare).
#[inline]
pub(crate) fn find_u64(v: &[u64], x: u64) -> Option<usize> {
    let mut groups = v.chunks_exact(8);
    for (g, ch) in (&mut groups).enumerate() {
        let hits = ch
            .iter()
            .enumerate()
            .fold(0u32, |m, (j, &e)| m | (u32::from(e == x) << j));
        if hits != 0 {
            return Some(g * 8 + hits.trailing_zeros() as usize);
        }
    }
    let rest = groups.remainder();
    rest.iter()
        .position(|&e| e == x)
        .map(|j| v.len() - rest.len() + j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_search_equals_a_plain_scan() {
        for n in 0..40usize {
            let v: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 23).collect();
            for x in 0..25 {
                assert_eq!(find_u64(&v, x), v.iter().position(|&e| e == x), "{v:?} {x}");
            }
        }
    }

    proptest::proptest! {
        /// The write-set index finds what a plain map finds, below and
        /// above the scan limit and across clears (from either side).
        #[test]
        fn line_index_equals_a_map(
            ops in proptest::collection::vec(0u64..200, 1..400),
            clear_every in 5usize..120,
        ) {
            let mut ix = LineIndex::default();
            let mut model: FxHashMap<Addr, usize> = FxHashMap::default();
            for (k, l) in ops.into_iter().enumerate() {
                if k % clear_every == clear_every - 1 {
                    ix.clear();
                    model.clear();
                }
                let line = l * 64;
                proptest::prop_assert_eq!(ix.get(line), model.get(&line).copied());
                proptest::prop_assert_eq!(ix.find(line), model.get(&line).copied());
                if !model.contains_key(&line) {
                    model.insert(line, model.len());
                    ix.push(line);
                }
                proptest::prop_assert_eq!(ix.get(line), model.get(&line).copied());
            }
            for l in 0..200u64 {
                proptest::prop_assert_eq!(ix.get(l * 64), model.get(&(l * 64)).copied());
                proptest::prop_assert_eq!(ix.find(l * 64), model.get(&(l * 64)).copied());
            }
        }
    }
}
