//! A line's cells packed three bits per cell (cell j in bits 3j..3j+2 of
//! nine 64-bit words), so that the write path works on words: with the 3
//! bits per cell mode a cell holds three stream bits in stream order, so
//! placing a stream is a masked word copy; the other IDM modes go through
//! tables several symbols at a time; the cost of a write compares old and
//! new cells 21 at a time (63-bit chunks) with masks and popcounts.
//! Results equal the per-cell definitions (idm::expand/contract and the
//! per-cell cost loop, kept as the tests' reference).

use super::bits::BitWriter;
use super::idm;
use super::{CELLS, DATA_CELLS};
use std::sync::OnceLock;

/// Words of a packed line: 174 cells x 3 bits = 522 bits.
pub const WORDS: usize = 9;
pub type Packed = [u64; WORDS];

/// First bit of the tag cells.
pub const TAG_BIT: usize = DATA_CELLS * 3;
/// Bits of the data cells and of all cells.
const DATA_BITS: usize = DATA_CELLS * 3;
const CELL_BITS: usize = CELLS * 3;

/// Cells per 63-bit chunk, chunks per line (the last one partly empty).
const CHUNK_CELLS: usize = 21;
const CHUNKS: usize = CELLS.div_ceil(CHUNK_CELLS);
const CHUNK_MASK: u64 = (1 << 63) - 1;
/// The low bit of each of a chunk's 21 cells.
const LOW_BITS: u64 = 0x1249_2492_4924_9249 & CHUNK_MASK;
// The chunks cover every cell; the tag cells sit in one word.
const _: () = assert!(CHUNKS * 63 >= CELL_BITS && TAG_BIT % 64 + 9 <= 64);

struct Tables {
    /// Expansion: 8 one-bit symbols -> 8 cells (mode 3); 4 two-bit
    /// symbols -> 4 cells (mode 2); 2 five-bit symbols -> 4 cells (mode 1);
    /// the 6 tag bits -> the 3 tag cells.
    exp3: [u32; 256],
    exp2: [u16; 256],
    exp1: [u16; 1024],
    tag_exp: [u16; 64],
    /// Contraction of 4 cells (12 bits) into their symbols' bits, per mode
    /// (index 1..3; 0 unused); the 3 tag cells into the 6 tag bits.
    con: [[u16; 4096]; 4],
    tag_con: [u8; 512],
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let (order, rank, pairs, pair_symbol) = idm::mapping();
        let exp3 = std::array::from_fn(|v| {
            (0..8).fold(0u32, |a, i| a | u32::from(order[(v >> i) & 1]) << (3 * i))
        });
        let exp2 = std::array::from_fn(|v| {
            (0..4).fold(0u16, |a, i| {
                a | u16::from(order[(v >> (2 * i)) & 3]) << (3 * i)
            })
        });
        let exp1 = std::array::from_fn(|v| {
            (0..2).fold(0u16, |a, i| {
                let (c0, c1) = pairs[(v >> (5 * i)) & 31];
                a | (u16::from(c0) | u16::from(c1) << 3) << (6 * i)
            })
        });
        let tag_exp = std::array::from_fn(|v| {
            (0..3).fold(0u16, |a, i| {
                a | u16::from(order[(v >> (2 * i)) & 3]) << (3 * i)
            })
        });
        let cell = |v: usize, i: usize| (v >> (3 * i)) & 7;
        let mut con = [[0u16; 4096]; 4];
        for v in 0..4096 {
            con[1][v] = (0..2).fold(0u16, |a, i| {
                let s = pair_symbol[cell(v, 2 * i) * 8 + cell(v, 2 * i + 1)];
                a | if s == 0xff { 0 } else { u16::from(s) } << (5 * i)
            });
            con[2][v] = (0..4).fold(0, |a, i| a | u16::from(rank[cell(v, i)] & 3) << (2 * i));
            con[3][v] = (0..4).fold(0, |a, i| a | u16::from(rank[cell(v, i)] & 1) << i);
        }
        let tag_con =
            std::array::from_fn(|v| (0..3).fold(0u8, |a, i| a | (rank[cell(v, i)] & 3) << (2 * i)));
        Tables {
            exp3,
            exp2,
            exp1,
            tag_exp,
            con,
            tag_con,
        }
    })
}

/// `n` (<= 64) bits of `p` from bit `i` (bits past the words read 0).
#[inline]
fn get(p: &Packed, i: usize, n: usize) -> u64 {
    let (w, b) = (i / 64, i % 64);
    let mut v = p[w] >> b;
    if b > 0 && w + 1 < WORDS {
        v |= p[w + 1] << (64 - b);
    }
    if n == 64 {
        v
    } else {
        v & ((1 << n) - 1)
    }
}

/// OR the low `n` bits of `v` into `p` at bit `i` (`p` is one word
/// longer than a line so a chunk may run past the last cell).
#[inline]
fn or_at(p: &mut [u64; WORDS + 1], i: usize, v: u64, n: usize) {
    let (w, b) = (i / 64, i % 64);
    p[w] |= v << b;
    if b + n > 64 {
        p[w + 1] |= v >> (64 - b);
    }
}

/// Copy bits `[0, bits)` of `src` into `dst`, keeping `dst`'s other bits.
#[inline]
fn merge_prefix(dst: &mut Packed, src: &[u64], bits: usize) {
    for (w, d) in dst.iter_mut().enumerate() {
        let lo = w * 64;
        let m = if bits >= lo + 64 {
            u64::MAX
        } else if bits > lo {
            (1u64 << (bits - lo)) - 1
        } else {
            break;
        };
        *d = (*d & !m) | (src[w] & m);
    }
}

/// Write the first `len` bits of `stream` into the data cells with IDM
/// `mode` (as idm::expand): cells past the last symbol keep their state.
pub fn expand(stream: &BitWriter, len: usize, mode: usize, p: &mut Packed) {
    let k = idm::BITS_PER_SYMBOL[mode];
    let cells = len.div_ceil(k) * idm::CELLS_PER_SYMBOL[mode];
    debug_assert!(cells <= DATA_CELLS);
    if mode == 0 {
        // One cell holds three stream bits in order: the stream is the cells.
        merge_prefix(p, &stream.words[..WORDS], 3 * cells);
        return;
    }
    let t = tables();
    let mut out = [0u64; WORDS + 1];
    // Symbols per table entry, their stream bits and their cell bits.
    let (in_bits, out_bits) = match mode {
        1 => (10, 12),
        2 => (8, 12),
        _ => (8, 24),
    };
    let chunks = (3 * cells).div_ceil(out_bits);
    for c in 0..chunks {
        let v = stream.get(c * in_bits, in_bits) as usize;
        let e = match mode {
            1 => u64::from(t.exp1[v]),
            2 => u64::from(t.exp2[v]),
            _ => u64::from(t.exp3[v]),
        };
        or_at(&mut out, c * out_bits, e, out_bits);
    }
    merge_prefix(p, &out, 3 * cells);
}

/// Every data cell's symbol read back into a stream (as idm::contract over
/// the 171 data cells).
pub fn contract(p: &Packed, mode: usize) -> BitWriter {
    let mut out = BitWriter::default();
    if mode == 0 {
        out.words[..WORDS].copy_from_slice(p);
        out.words[WORDS - 1] &= (1 << (DATA_BITS % 64)) - 1;
        out.len = DATA_BITS;
        return out;
    }
    let t = &tables().con[mode];
    let k = idm::BITS_PER_SYMBOL[mode];
    let len = DATA_CELLS / idm::CELLS_PER_SYMBOL[mode] * k;
    // Four cells per table entry: 2 pairs (10 bits), 4 cells of 2 or 1 bits.
    let per = 4 / idm::CELLS_PER_SYMBOL[mode] * k;
    for c in 0..len.div_ceil(per) {
        out.put(u64::from(t[get(p, 12 * c, 12) as usize]), per);
    }
    // The last entry may read past the data cells (into the tag cells):
    // those symbols are not part of the stream.
    let (w, b) = (len / 64, len % 64);
    out.words[w] &= (1 << b) - 1;
    for x in &mut out.words[w + 1..] {
        *x = 0;
    }
    out.len = len;
    out
}

/// Write the 6 tag bits into the tag cells (2 bits per cell, IDM).
#[inline]
pub fn set_tag(p: &mut Packed, tag: u64) {
    let (w, b) = (TAG_BIT / 64, TAG_BIT % 64);
    let cells = u64::from(tables().tag_exp[(tag & 63) as usize]);
    p[w] = (p[w] & !(0x1ff << b)) | cells << b;
}

/// The 6 tag bits stored in the tag cells.
#[inline]
pub fn tag(p: &Packed) -> u64 {
    u64::from(tables().tag_con[get(p, TAG_BIT, 9) as usize])
}

/// Cell `j`'s state.
#[inline]
pub fn cell(p: &Packed, j: usize) -> u8 {
    get(p, 3 * j, 3) as u8
}

/// Per-cell states from packed cells, and back (tests, tools).
pub fn unpack(p: &Packed) -> [u8; CELLS] {
    std::array::from_fn(|j| cell(p, j))
}

pub fn pack(cells: &[u8; CELLS]) -> Packed {
    let mut out = [0u64; WORDS + 1];
    for (j, &c) in cells.iter().enumerate() {
        or_at(&mut out, 3 * j, u64::from(c & 7), 3);
    }
    std::array::from_fn(|w| out[w])
}

/// What changing `old` into `new` programs: cells and bits changed, cells
/// by target state, and the per-cell terms in cell order for the energy.
pub struct Change {
    pub bits: u64,
    pub cells: u64,
    pub by_state: [u64; 8],
}

/// Cells 21j..21j+20 of `p` as a 63-bit word.
#[inline]
fn chunk(p: &Packed, j: usize) -> u64 {
    get(p, 63 * j, 64) & CHUNK_MASK
}

/// Bits set in a 3-bit value.
const POP3: [u32; 8] = [0, 1, 1, 2, 1, 2, 2, 3];

/// Compare `old` and `new` 21 cells at a time; `each(state, flipped)` is
/// called for every changed cell in cell order (new state, changed bits).
#[inline]
pub fn diff(old: &Packed, new: &Packed, mut each: impl FnMut(usize, u32)) -> Change {
    let mut ch = Change {
        bits: 0,
        cells: 0,
        by_state: [0; 8],
    };
    for j in 0..CHUNKS {
        let (o, n) = (chunk(old, j), chunk(new, j));
        let x = o ^ n;
        if x == 0 {
            continue;
        }
        ch.bits += u64::from(x.count_ones());
        // A cell changed if any of its three bits did: its low bit is set.
        let mut m = (x | x >> 1 | x >> 2) & LOW_BITS;
        while m != 0 {
            let at = m.trailing_zeros();
            let s = ((n >> at) & 7) as usize;
            ch.by_state[s] += 1;
            each(s, POP3[((x >> at) & 7) as usize]);
            m &= m - 1;
        }
    }
    ch.cells = ch.by_state.iter().sum();
    ch
}
