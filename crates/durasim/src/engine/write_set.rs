//! Workload characterisation of the transactions' write sets: each core
//! records its transaction's stores to program data (and the line each one
//! left behind), and at TxEnd the record is reduced to counts: stores,
//! distinct words and lines, repeated and silent stores, and the written
//! lines' compressed sizes under FPC and DLDC (docs/model/metrics.md).
//!
//! Allocation-free once warm: the buffers keep their capacity across
//! transactions and are sorted in place (`sort_unstable` does not
//! allocate).

use crate::mem::media::{dldc, fpc};
use crate::types::{line_of, read_word, word_index, Addr, LineData, LINE_BYTES};

/// Bits of an uncompressed line; a line that does not compress is stored
/// raw, so no line costs more (as the data-aware media does).
const LINE_BITS: u64 = LINE_BYTES * 8;

/// One store to program data: its word, the value before and after, and
/// its order in the transaction.
#[derive(Clone, Copy)]
struct StoreRec {
    addr: Addr,
    seq: u32,
    old: u64,
    new: u64,
}

/// The bytes of a line just after a store to it.
#[derive(Clone, Copy)]
struct LineSnap {
    line: Addr,
    seq: u32,
    data: LineData,
}

/// A core's current transaction's stores to program data.
#[derive(Default)]
pub(super) struct TxWrites {
    stores: Vec<StoreRec>,
    /// The latest snapshot of each run of consecutive stores to one line
    /// (a line stored again after another line gets a new entry).
    lines: Vec<LineSnap>,
}

/// Window totals of the write-set characterisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteSetStats {
    /// Stores to program data in the transactions.
    pub stores: u64,
    /// Of those, stores whose value equals the word's value before it.
    pub silent_stores: u64,
    /// Distinct words and lines written, summed over transactions.
    pub words: u64,
    pub lines: u64,
    /// Written lines' bits at transaction end under FPC, and under DLDC
    /// against the line before the transaction (each capped at 512).
    pub fpc_bits: u64,
    pub dldc_bits: u64,
}

impl WriteSetStats {
    /// Stores to a word already stored in the same transaction.
    pub fn repeated_stores(&self) -> u64 {
        self.stores - self.words
    }
}

impl TxWrites {
    /// A store of `new` over `old` at `addr`; `line` is the line's bytes
    /// after the store.
    #[inline]
    pub(super) fn record(&mut self, addr: Addr, old: u64, new: u64, line: &LineData) {
        let seq = self.stores.len() as u32;
        self.stores.push(StoreRec {
            addr,
            seq,
            old,
            new,
        });
        let l = line_of(addr);
        match self.lines.last_mut() {
            Some(s) if s.line == l => {
                s.seq = seq;
                s.data = *line;
            }
            _ => self.lines.push(LineSnap {
                line: l,
                seq,
                data: *line,
            }),
        }
    }

    /// End of the transaction: add its counts to `st` and forget it.
    pub(super) fn close(&mut self, st: &mut WriteSetStats) {
        if self.stores.is_empty() {
            return;
        }
        self.stores.sort_unstable_by_key(|r| (r.addr, r.seq));
        self.lines.sort_unstable_by_key(|s| (s.line, s.seq));
        st.stores += self.stores.len() as u64;
        let mut snaps = 0;
        let mut i = 0;
        while i < self.stores.len() {
            // One line: its stores are consecutive (sorted by address).
            let line = line_of(self.stores[i].addr);
            let mut end = i;
            while end < self.stores.len() && line_of(self.stores[end].addr) == line {
                end += 1;
            }
            // Its newest snapshot: the last of its entries.
            while self.lines[snaps].line != line {
                snaps += 1;
            }
            while snaps + 1 < self.lines.len() && self.lines[snaps + 1].line == line {
                snaps += 1;
            }
            let new_line = self.lines[snaps].data;
            let mut old_line = new_line;
            let mut j = i;
            while j < end {
                // One word: the first store's old value, the last's new.
                let a = self.stores[j].addr;
                let first_old = self.stores[j].old;
                let mut k = j;
                while k < end && self.stores[k].addr == a {
                    st.silent_stores += u64::from(self.stores[k].old == self.stores[k].new);
                    k += 1;
                }
                st.words += 1;
                crate::types::write_word(&mut old_line, word_index(a), first_old);
                j = k;
            }
            st.lines += 1;
            st.fpc_bits += (fpc::size_bits(&new_line) as u64).min(LINE_BITS);
            st.dldc_bits += dldc_line_bits(&old_line, &new_line).min(LINE_BITS);
            i = end;
        }
        self.stores.clear();
        self.lines.clear();
    }
}

/// DLDC code of a line's update (MorLog §IV-A): per 8-byte word its dirty
/// flags against the old word, and the dirty bytes compressed; a clean word
/// costs its 8 flag bits.
fn dldc_line_bits(old: &LineData, new: &LineData) -> u64 {
    (0..8)
        .map(|w| {
            let (o, n) = (read_word(old, w), read_word(new, w));
            dldc::size_bits(n, dldc::dirty_flags(o, n)) as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::write_word;

    /// Replays stores on a zeroed memory of whole lines, recording them.
    fn run(stores: &[(Addr, u64)]) -> WriteSetStats {
        let mut mem: std::collections::BTreeMap<Addr, LineData> = Default::default();
        let mut tx = TxWrites::default();
        for &(a, v) in stores {
            let line = mem.entry(line_of(a)).or_insert([0; 64]);
            let old = read_word(line, word_index(a));
            write_word(line, word_index(a), v);
            tx.record(a, old, v, line);
        }
        let mut st = WriteSetStats::default();
        tx.close(&mut st);
        st
    }

    #[test]
    fn counts_distinct_words_lines_and_repeats() {
        // Two words of line 0 (one stored twice), one word of line 1, then
        // line 0 again: 5 stores, 3 words, 2 lines, 2 repeats.
        let st = run(&[(0, 1), (8, 2), (64, 3), (0, 4), (8, 2)]);
        assert_eq!(st.stores, 5);
        assert_eq!(st.words, 3);
        assert_eq!(st.lines, 2);
        assert_eq!(st.repeated_stores(), 2);
        // (8, 2) over 2 is silent.
        assert_eq!(st.silent_stores, 1);
    }

    #[test]
    fn compressed_sizes_use_the_final_line_and_the_first_old_value() {
        // Line 0 ends as [4, 2, 0 x 6]: FPC = two 4-bit words (3 + 4 each)
        // + a zero run (6) = 20 bits. DLDC against the zero line: words 0
        // and 1 have one dirty byte each (SE2/SE4 per byte), six clean
        // words cost 8 flag bits each.
        let st = run(&[(0, 1), (8, 2), (0, 4)]);
        assert_eq!(st.fpc_bits, 20);
        let d = |v: u64| dldc::size_bits(v, dldc::dirty_flags(0, v)) as u64;
        assert_eq!(st.dldc_bits, d(4) + d(2) + 6 * 8);
        // A word set back to its old value is clean for DLDC: 8 x 8 bits.
        let st = run(&[(0, 7), (0, 0)]);
        assert_eq!(st.dldc_bits, 64);
    }

    #[test]
    fn incompressible_lines_cost_at_most_a_raw_line() {
        let v = 0x9e37_79b9_7f4a_7c15u64;
        let st = run(&(0..8).map(|w| (w * 8, v ^ w)).collect::<Vec<_>>());
        assert_eq!(st.fpc_bits, 512);
        assert_eq!(st.dldc_bits, 512);
    }

    #[test]
    fn close_forgets_the_transaction() {
        let mut tx = TxWrites::default();
        tx.record(0, 0, 1, &[1; 64]);
        let mut st = WriteSetStats::default();
        tx.close(&mut st);
        tx.close(&mut st);
        assert_eq!(st.stores, 1);
    }
}
