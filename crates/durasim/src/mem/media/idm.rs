//! Expansion of a compressed stream into TLC cells with incomplete data
//! mapping (IDM: Niu, Zou, Xu, Xie, "Low power multi-level-cell resistive
//! memory design with incomplete data mapping", ICCD 2013, MorLog ref [42]):
//! storing fewer than 3 bits per cell lets the code use only the cheapest
//! states. CRADE (MorLog ref [61]) picks the mapping the compression ratio
//! allows. The papers' exact mapping tables were not found by our library
//! search; the tables below are built from MorLog Table III by the IDM rule
//! (a k-bit symbol over g cells uses the 2^k cheapest g-cell state
//! combinations, symbol value = cost rank). Modelling choice, docs/model/nvm-media.md.

use super::bits::BitWriter;
use super::{TABLE3_WRITE_NS, TABLE3_WRITE_PJ};
use std::sync::OnceLock;

/// Modes: 3 bits per cell (every state), 5 bits per 2 cells (the 32
/// cheapest pairs), 2 bits per cell (4 cheapest states), 1 bit per cell (2
/// cheapest states).
pub const BITS_PER_SYMBOL: [usize; 4] = [3, 5, 2, 1];
pub const CELLS_PER_SYMBOL: [usize; 4] = [1, 2, 1, 1];
/// Stream bits each mode holds in the 171 data cells.
pub const CAPACITY_BITS: [usize; 4] = [513, 425, 342, 171];

struct Tables {
    /// States by Table III energy, cheapest first, and each state's rank.
    order: [u8; 8],
    rank: [u8; 8],
    /// The 32 cheapest cell pairs (energy sum, then slower cell), and each
    /// pair's symbol (0xff: not a code word).
    pairs: [(u8, u8); 32],
    pair_symbol: [u8; 64],
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let mut order: [u8; 8] = std::array::from_fn(|s| s as u8);
        order.sort_by(|&a, &b| {
            TABLE3_WRITE_PJ[a as usize]
                .total_cmp(&TABLE3_WRITE_PJ[b as usize])
                .then(a.cmp(&b))
        });
        let mut rank = [0u8; 8];
        for (r, &s) in order.iter().enumerate() {
            rank[s as usize] = r as u8;
        }
        let mut all: Vec<(u8, u8)> = (0..64).map(|i| ((i / 8) as u8, (i % 8) as u8)).collect();
        let key = |&(a, b): &(u8, u8)| {
            (
                TABLE3_WRITE_PJ[a as usize] + TABLE3_WRITE_PJ[b as usize],
                TABLE3_WRITE_NS[a as usize].max(TABLE3_WRITE_NS[b as usize]),
            )
        };
        all.sort_by(|x, y| {
            let (kx, ky) = (key(x), key(y));
            kx.0.total_cmp(&ky.0)
                .then(kx.1.total_cmp(&ky.1))
                .then(x.cmp(y))
        });
        let pairs: [(u8, u8); 32] = std::array::from_fn(|i| all[i]);
        let mut pair_symbol = [0xffu8; 64];
        for (i, &(a, b)) in pairs.iter().enumerate() {
            pair_symbol[(a * 8 + b) as usize] = i as u8;
        }
        Tables {
            order,
            rank,
            pairs,
            pair_symbol,
        }
    })
}

/// The mapping: states cheapest first, each state's rank, the 32 pair
/// code words and each pair's symbol (0xff: none).
#[allow(clippy::type_complexity)]
pub(super) fn mapping() -> ([u8; 8], [u8; 8], [(u8, u8); 32], [u8; 64]) {
    let t = tables();
    (t.order, t.rank, t.pairs, t.pair_symbol)
}

/// The sparsest mode whose capacity holds `bits`.
pub fn sparsest_mode(bits: usize) -> usize {
    (0..4)
        .rev()
        .find(|&m| CAPACITY_BITS[m] >= bits)
        .unwrap_or(0)
}

/// Write the first `len` stream bits into `cells` with `mode`; cells past
/// the last symbol are left as they are.
pub fn expand(stream: &BitWriter, len: usize, mode: usize, cells: &mut [u8]) {
    let t = tables();
    let k = BITS_PER_SYMBOL[mode];
    let symbols = len.div_ceil(k);
    for j in 0..symbols {
        let v = stream.get(j * k, k) as usize;
        match mode {
            0 => cells[j] = v as u8,
            1 => {
                let (a, b) = t.pairs[v];
                cells[2 * j] = a;
                cells[2 * j + 1] = b;
            }
            _ => cells[j] = t.order[v],
        }
    }
}

/// Read every symbol of `cells` back into a stream (cells that hold no
/// code word, past the stream's end, read as symbol 0: never consumed).
pub fn contract(cells: &[u8], mode: usize) -> BitWriter {
    let t = tables();
    let k = BITS_PER_SYMBOL[mode];
    let mut out = BitWriter::default();
    let symbols = cells.len() / CELLS_PER_SYMBOL[mode];
    for j in 0..symbols {
        let v = match mode {
            0 => cells[j] as u64,
            1 => {
                let s = t.pair_symbol[(cells[2 * j] * 8 + cells[2 * j + 1]) as usize];
                if s == 0xff {
                    0
                } else {
                    s as u64
                }
            }
            _ => (t.rank[cells[j] as usize] as u64) & ((1 << k) - 1),
        };
        out.put(v, k);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_follow_table_iii() {
        let t = tables();
        // 111 (1.5 pJ), 000 (2), 001 (6.7), 110 (8.5), 010, 101, 011, 100.
        assert_eq!(t.order, [7, 0, 1, 6, 2, 5, 3, 4]);
        assert_eq!(t.pairs[0], (7, 7));
        // Every pair code word is distinct.
        let mut seen = std::collections::HashSet::new();
        assert!(t.pairs.iter().all(|p| seen.insert(*p)));
        assert_eq!(sparsest_mode(100), 3);
        assert_eq!(sparsest_mode(171), 3);
        assert_eq!(sparsest_mode(172), 2);
        assert_eq!(sparsest_mode(400), 1);
        assert_eq!(sparsest_mode(513), 0);
    }

    #[test]
    fn expand_contract_roundtrip() {
        for (mode, &n) in CAPACITY_BITS.iter().enumerate() {
            let mut s = BitWriter::default();
            for i in 0..n {
                s.put((i as u64 * 7 + i as u64 / 3) & 1, 1);
            }
            let mut cells = [3u8; 171];
            expand(&s, n, mode, &mut cells);
            let back = contract(&cells, mode);
            for i in 0..n {
                assert_eq!(back.bit(i), s.bit(i), "mode {mode} bit {i}");
            }
        }
    }
}
