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
    let (full, rest) = (bits / 64, bits % 64);
    dst[..full].copy_from_slice(&src[..full]);
    if rest > 0 {
        let m = (1u64 << rest) - 1;
        dst[full] = (dst[full] & !m) | (src[full] & m);
    }
}

/// 64 bits of `w` from bit `i` (`w` holds at least one word past `i`'s).
#[inline]
fn get64(w: &[u64], i: usize) -> u64 {
    let (k, b) = (i / 64, i % 64);
    // Two shifts for the high word: a shift by 64 is not defined.
    w[k] >> b | (w[k + 1] << 1) << (63 - b)
}

/// OR `v` into `p` at bit `i` (`p` holds one word past `i`'s).
#[inline]
fn or64(p: &mut [u64], i: usize, v: u64) {
    let (k, b) = (i / 64, i % 64);
    p[k] |= v << b;
    p[k + 1] |= (v >> 1) >> (63 - b);
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
    let bits = 3 * cells;
    // Table entries of a group, their stream bits and cell bits: a group
    // reads one 64-bit window of the stream and ORs one 64-bit value into
    // the cells.
    let out = match mode {
        1 => expand_groups::<5, 10, 12, _>(stream, bits, &t.exp1),
        2 => expand_groups::<5, 8, 12, _>(stream, bits, &t.exp2),
        _ => expand_groups::<2, 8, 24, _>(stream, bits, &t.exp3),
    };
    merge_prefix(p, &out, bits);
}

/// The cells (their first `bits` bits valid) of a stream expanded by
/// `table`, `G` entries of `IN` stream bits -> `OUT` cell bits at a time.
#[inline]
fn expand_groups<const G: usize, const IN: usize, const OUT: usize, T: Copy + Into<u64>>(
    stream: &BitWriter,
    bits: usize,
    table: &[T],
) -> [u64; WORDS + 2] {
    const { assert!(G * IN <= 64 && G * OUT <= 64) };
    // The last group may run past the stream and the cells: those entries
    // land past bit `bits`, which the caller's merge leaves out.
    let mut out = [0u64; WORDS + 2];
    for g in 0..bits.div_ceil(G * OUT) {
        let v = get64(&stream.words, g * G * IN);
        let mut e = 0u64;
        for k in 0..G {
            let s = ((v >> (k * IN)) & ((1 << IN) - 1)) as usize;
            e |= table[s].into() << (k * OUT);
        }
        or64(&mut out, g * G * OUT, e);
    }
    out
}

/// A raw line's 512 bits and tag `tag` placed into the cells (as
/// `expand` of the 512-bit stream in mode 0, then `set_tag`): the words,
/// then cell bit 512 (past the stream's end, a zero in the stream) and the
/// tag cells.
#[inline]
pub fn place_raw(words: [u64; 8], tag: u64, p: &mut Packed) {
    p[..8].copy_from_slice(&words);
    p[8] &= !1;
    set_tag(p, tag);
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

/// Cells 21j..21j+20 of `p` as a 63-bit word: chunk j starts at bit
/// 63j = 64j - j, i.e. at bit 64 - j of word j - 1.
#[inline(always)]
fn chunk(p: &Packed, j: usize) -> u64 {
    let lo = if j == 0 { 0 } else { p[j - 1] >> (64 - j) };
    (p[j] << j | lo) & CHUNK_MASK
}

/// One in state `s`'s 8-bit field of a packed per-state count.
const STATE_ONE: [u64; 8] = [
    1,
    1 << 8,
    1 << 16,
    1 << 24,
    1 << 32,
    1 << 40,
    1 << 48,
    1 << 56,
];
const _: () = assert!(CELLS < 256);

/// Bits set in a 3-bit value.
const POP3: [u32; 8] = [0, 1, 1, 2, 1, 2, 2, 3];

/// Bits set in all nine words. Without a popcount instruction (the
/// baseline x86-64 target), each word's per-byte counts (at most 8) are
/// summed over the words (at most 72 per byte) and added up once, instead
/// of a full count per word.
#[inline]
pub fn ones(xs: &[u64; WORDS]) -> u64 {
    const M1: u64 = 0x5555_5555_5555_5555;
    const M2: u64 = 0x3333_3333_3333_3333;
    const M4: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const M8: u64 = 0x00ff_00ff_00ff_00ff;
    let mut bytes = 0u64;
    for &x in xs {
        let x = x - ((x >> 1) & M1);
        let x = (x & M2) + ((x >> 2) & M2);
        bytes += (x + (x >> 4)) & M4;
    }
    // Pairs of bytes into 16-bit lanes (at most 144), then the lanes (at
    // most 576) into the top lane.
    let lanes = (bytes & M8) + ((bytes >> 8) & M8);
    lanes.wrapping_mul(0x0001_0001_0001_0001) >> 48
}

/// Compare `old` and `new` 21 cells at a time; `each(state, flipped)` is
/// called for every changed cell in cell order (new state, changed bits).
#[inline]
pub fn diff(old: &Packed, new: &Packed, mut each: impl FnMut(usize, u32)) -> Change {
    // Per-state counts, 8 bits each (a line has 174 cells).
    let mut counts = 0u64;
    // Every chunk's changed bits and new states first, by fixed shifts.
    let xs: [u64; CHUNKS] = std::array::from_fn(|j| chunk(old, j) ^ chunk(new, j));
    let ns: [u64; CHUNKS] = std::array::from_fn(|j| chunk(new, j));
    let bits = ones(&xs);
    for (&x, &n) in xs.iter().zip(ns.iter()) {
        if x == 0 {
            continue;
        }
        // A cell changed if any of its three bits did: its low bit is set.
        let mut m = (x | x >> 1 | x >> 2) & LOW_BITS;
        // The next changed cell is shifted down to bit 0 of `m`, `n`, `x`.
        let (mut n, mut x) = (n, x);
        while m != 0 {
            let at = m.trailing_zeros();
            m >>= at;
            n >>= at;
            x >>= at;
            let s = (n & 7) as usize;
            counts += STATE_ONE[s];
            each(s, POP3[(x & 7) as usize]);
            m ^= 1;
        }
    }
    let by_state: [u64; 8] = std::array::from_fn(|s| (counts >> (8 * s)) & 0xff);
    Change {
        bits,
        cells: by_state.iter().sum(),
        by_state,
    }
}
