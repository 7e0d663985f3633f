//! Differential log data compression (MorLog, Wei et al., §IV-A, Fig. 9,
//! Table II): per-byte dirty flags; clean bytes are dropped; the dirty
//! bytes, concatenated (N = 8 x dirty bytes), are compressed with one of the
//! eight patterns of Table II behind its 3-bit tag.
//!
//! Table II leaves open how dirty bytes matching no pattern are marked: we
//! store one "matched" bit before the tag (0: the dirty bytes follow raw).
//! Modelling choice, docs/model/nvm-media.md.

use super::bits::{sext, BitReader, BitWriter};

/// Table II tags.
pub const ZERO: u64 = 0b000;
pub const SE2_PER_BYTE: u64 = 0b001;
pub const SE4_PER_BYTE: u64 = 0b010;
pub const SE_BYTE: u64 = 0b011;
pub const SE_2BYTE: u64 = 0b100;
pub const SE_4BYTE: u64 = 0b101;
pub const NIBBLE_PADDED: u64 = 0b110;
pub const LSB_ZERO: u64 = 0b111;

/// Payload bits (without the 3-bit tag) of pattern `tag` for dirty data of
/// `n` bytes, or `None` if the data do not match it. `v` holds the dirty
/// bytes little-endian (n <= 8). The definition `best_pattern` is tested
/// against.
#[cfg(test)]
fn payload_bits(tag: u64, v: u64, n: usize) -> Option<usize> {
    let bits = 8 * n as u32;
    let byte = |i: usize| (v >> (8 * i)) as u8;
    let ok = match tag {
        ZERO => v == 0,
        SE2_PER_BYTE => (0..n).all(|i| (-2..=1).contains(&(byte(i) as i8))),
        SE4_PER_BYTE => (0..n).all(|i| (-8..=7).contains(&(byte(i) as i8))),
        SE_BYTE => bits >= 8 && sext(v, 8) == sext(v, bits),
        SE_2BYTE => bits >= 16 && sext(v, 16) == sext(v, bits),
        SE_4BYTE => bits >= 32 && sext(v, 32) == sext(v, bits),
        NIBBLE_PADDED => (0..n).all(|i| byte(i) & 0x0f == 0),
        LSB_ZERO => n >= 1 && byte(0) == 0,
        _ => false,
    };
    // Sized only when it matches (no dirty byte: no low byte to be zero).
    ok.then(|| match tag {
        ZERO => 0,
        SE2_PER_BYTE => 2 * n,
        SE4_PER_BYTE | NIBBLE_PADDED => 4 * n,
        SE_BYTE => 8,
        SE_2BYTE => 16,
        SE_4BYTE => 32,
        _ => 8 * n - 8,
    })
}

/// `v` sign-extended from its low `bits` (8..=64) bits, without the
/// general `sext`'s test for a full word (a shift by less than 64 here).
#[inline]
fn sext_dirty(v: u64, bits: u32) -> u64 {
    debug_assert!((8..=64).contains(&bits));
    let s = 64 - bits;
    (((v << s) as i64) >> s) as u64
}

/// Per dirty-byte count n (index n, 1..=8) and set of matching
/// non-zero patterns (bit t - 1: tag t matches), the smallest of them as
/// (tag, payload bits), the smaller tag on a tie; tag 0xff: none.
const BEST: [[(u8, u8); 128]; 9] = {
    let mut t = [[(0xffu8, 0u8); 128]; 9];
    let mut n = 1;
    while n <= 8 {
        let mut m = 0;
        while m < 128 {
            let mut tag = 1;
            while tag < 8 {
                let b = payload_bits_len(tag, n) as u8;
                if m >> (tag - 1) & 1 == 1 && (t[n][m].0 == 0xff || b < t[n][m].1) {
                    t[n][m] = (tag as u8, b);
                }
                tag += 1;
            }
            m += 1;
        }
        n += 1;
    }
    t
};

/// The smallest matching pattern: (tag, payload bits), the smaller tag
/// on a tie. Every pattern is tested at once (the per-byte ones on all
/// bytes at once, SWAR) and a table ranks the matches by size, which
/// depends only on `n`; `best_pattern_by_tag` is the definition.
#[inline]
pub fn best_pattern(v: u64, n: usize) -> Option<(u64, usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    if v == 0 {
        return Some((ZERO, 0));
    }
    if n == 0 || n > 8 {
        return None;
    }
    let bits = 8 * n as u32;
    let bytes = u64::MAX >> (64 - bits);
    // Every byte plus `k`, modulo 256 (no carry between bytes).
    let plus = |k: u64| ((v & (0x7f * ONES)) + k * ONES) ^ (v & (0x80 * ONES));
    // The dirty data sign-extended; `v` is the sign extension of its low
    // k bits (k <= bits) iff this value is in the signed k-bit range.
    let s = sext_dirty(v, bits);
    let fits = |k: u32| k <= bits && s.wrapping_add(1 << (k - 1)) >> k == 0;
    // A byte in -2..=1: byte + 2 in 0..=3; in -8..=7: byte + 8 in 0..=15.
    let matches = u8::from(plus(2) & (0xfc * ONES) & bytes == 0)
        | u8::from(plus(8) & (0xf0 * ONES) & bytes == 0) << 1
        | u8::from(fits(8)) << 2
        | u8::from(fits(16)) << 3
        | u8::from(fits(32)) << 4
        | u8::from(v & (0x0f * ONES) & bytes == 0) << 5
        | u8::from(v & 0xff == 0) << 6;
    let (tag, b) = BEST[n][matches as usize];
    (tag != 0xff).then_some((u64::from(tag), usize::from(b)))
}

/// The smallest matching pattern, each pattern tested in tag order
/// (SWAR per-byte tests).
#[cfg(test)]
pub fn best_pattern_in_order(v: u64, n: usize) -> Option<(u64, usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    if v == 0 {
        return Some((ZERO, 0));
    }
    if n == 0 {
        return None;
    }
    let bits = 8 * n as u32;
    let bytes = if n >= 8 { u64::MAX } else { (1 << bits) - 1 };
    // Every byte plus `k`, modulo 256 (no carry between bytes).
    let plus = |k: u64| ((v & (0x7f * ONES)) + k * ONES) ^ (v & (0x80 * ONES));
    let mut best: Option<(u64, usize)> = None;
    let mut offer = |tag: u64, ok: bool, b: usize| {
        if ok && best.is_none_or(|(_, bb)| b < bb) {
            best = Some((tag, b));
        }
    };
    // A byte in -2..=1: byte + 2 in 0..=3; in -8..=7: byte + 8 in 0..=15.
    offer(SE2_PER_BYTE, plus(2) & (0xfc * ONES) & bytes == 0, 2 * n);
    offer(SE4_PER_BYTE, plus(8) & (0xf0 * ONES) & bytes == 0, 4 * n);
    offer(SE_BYTE, bits >= 8 && sext(v, 8) == sext(v, bits), 8);
    offer(SE_2BYTE, bits >= 16 && sext(v, 16) == sext(v, bits), 16);
    offer(SE_4BYTE, bits >= 32 && sext(v, 32) == sext(v, bits), 32);
    offer(NIBBLE_PADDED, v & (0x0f * ONES) & bytes == 0, 4 * n);
    offer(LSB_ZERO, v & 0xff == 0, 8 * n - 8);
    best
}

/// The smallest matching pattern, each pattern tested on its own.
#[cfg(test)]
pub fn best_pattern_by_tag(v: u64, n: usize) -> Option<(u64, usize)> {
    (0..8u64)
        .filter_map(|t| payload_bits(t, v, n).map(|b| (t, b)))
        .min_by_key(|&(t, b)| (b, t))
}

/// Per flags value: the mask of its bytes, then the three steps that
/// move each flagged byte down past the clear bytes below it, by 1, 2 and
/// 4 bytes as the bits of that count say (Hacker's Delight 7-4,
/// "compress", on bytes): byte masks at each step's current positions.
const GATHER: [[u64; 4]; 256] = {
    let mut t = [[0u64; 4]; 256];
    let mut f = 0;
    while f < 256 {
        let mut p = 0;
        let mut clear_below = 0;
        while p < 8 {
            if f >> p & 1 == 1 {
                t[f][0] |= 0xff << (8 * p);
                let mut at = p;
                let mut step = 0;
                while step < 3 {
                    if clear_below >> step & 1 == 1 {
                        t[f][step + 1] |= 0xff << (8 * at);
                        at -= 1 << step;
                    }
                    step += 1;
                }
            } else {
                clear_below += 1;
            }
            p += 1;
        }
        f += 1;
    }
    t
};

/// Bits set in each flags value.
const COUNT: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut f = 0;
    while f < 256 {
        t[f] = (f as u32).count_ones() as u8;
        f += 1;
    }
    t
};

/// Gather the bytes of `data` whose flag is set (bit i: byte i),
/// little-endian, and their count: three masked moves whatever the flags
/// (`gather_by_byte` is the definition).
#[inline]
fn gather(data: u64, flags: u8) -> (u64, usize) {
    let m = &GATHER[flags as usize];
    let mut x = data & m[0];
    let mut step = 0;
    while step < 3 {
        let t = x & m[step + 1];
        x = (x ^ t) | t >> (8 << step);
        step += 1;
    }
    (x, usize::from(COUNT[flags as usize]))
}

/// Gather the bytes of `data` whose flag is set (bit i: byte i), little-endian.
/// Visits only the dirty bytes; an all-dirty word is the word.
#[cfg(test)]
fn gather_by_byte(data: u64, flags: u8) -> (u64, usize) {
    if flags == 0xff {
        return (data, 8);
    }
    if flags == 0 {
        return (0, 0);
    }
    // One run of dirty bytes (the usual case: a value's low bytes
    // changed): a shift and a mask (fewer than 8 bytes here).
    let from = flags.trailing_zeros();
    let run = flags >> from;
    if run & run.wrapping_add(1) == 0 {
        let n = 8 - run.leading_zeros();
        return ((data >> (8 * from)) & ((1 << (8 * n)) - 1), n as usize);
    }
    let mut v = 0u64;
    let mut n = 0;
    let mut f = flags;
    while f != 0 {
        let i = f.trailing_zeros();
        v |= ((data >> (8 * i)) & 0xff) << (8 * n);
        n += 1;
        f &= f - 1;
    }
    (v, n)
}

/// Encoded bits of one 8-byte datum with dirty flags `flags`: 8 flag bits,
/// and when any byte is dirty, the matched bit and tag + payload, or the
/// dirty bytes raw.
pub fn size_bits(data: u64, flags: u8) -> usize {
    let (v, n) = gather(data, flags);
    if n == 0 {
        return 8;
    }
    8 + 1
        + match worth_a_pattern(v, n).then(|| best_pattern(v, n)) {
            Some(Some((_, b))) if 3 + b < 8 * n => 3 + b,
            _ => 8 * n,
        }
}

/// Field `W` bits wide from bit `SHIFT` of each byte of `v`, packed
/// from bit 0 (the per-byte patterns' payload): three merges of
/// neighbouring fields, as `pack_by_byte` defines.
#[inline]
fn pack_fields<const W: u32, const SHIFT: u32>(v: u64) -> u64 {
    const { assert!(W == 2 || W == 4) };
    let field = (1u64 << W) - 1;
    let mut x = (v >> SHIFT) & (field * 0x0101_0101_0101_0101);
    // Units of 2, 4, 8 bytes: each holds 2 W, 4 W, 8 W field bits.
    x = (x | x >> (8 - W)) & (((1u64 << (2 * W)) - 1) * 0x0001_0001_0001_0001);
    x = (x | x >> (16 - 2 * W)) & (((1u64 << (4 * W)) - 1) * 0x0000_0001_0000_0001);
    (x | x >> (32 - 4 * W)) & ((1u64 << (8 * W)) - 1)
}

/// Per dirty-byte count: the narrowest sign-extended pattern whose tag
/// and payload are shorter than the dirty bytes (0: none is).
const SE_WORTH_BITS: [u32; 9] = [0, 0, 8, 16, 16, 32, 32, 32, 32];

/// Some pattern stores `n` (1..=8) dirty bytes `v` in fewer bits than
/// raw: a quick test that most dirty data (raw) fail. The patterns that
/// can be worth it are the zero and low-byte-zero ones (any `n`), the
/// 4-bit per-byte one (the 2-bit one implies it), the zero-nibble one,
/// and a sign extension from `SE_WORTH_BITS[n]` bits (a wider width
/// matches whenever a narrower one does); the smallest match is worth it
/// iff any is.
#[inline]
fn worth_a_pattern(v: u64, n: usize) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let bits = 8 * n as u32;
    let bytes = u64::MAX >> (64 - bits);
    let se4 = ((v & (0x7f * ONES)) + 8 * ONES) ^ (v & (0x80 * ONES));
    let k = SE_WORTH_BITS[n];
    let s = sext_dirty(v, bits);
    v & 0xff == 0
        || (se4 & (0xf0 * ONES)) & bytes == 0
        || v & (0x0f * ONES) & bytes == 0
        || (k > 0 && s.wrapping_add(1 << (k - 1)) >> k == 0)
}

/// Encode one 8-byte datum (`flags`: its dirty bytes) into `out`: flags,
/// matched bit, tag and payload in one append (`encode_by_field` is the
/// definition).
#[inline]
pub fn encode(data: u64, flags: u8, out: &mut BitWriter) {
    let (v, n) = gather(data, flags);
    if n == 0 {
        out.put(0, 8);
        return;
    }
    let (head, head_bits, payload, b) = match worth_a_pattern(v, n).then(|| best_pattern(v, n)) {
        Some(Some((tag, b))) if 3 + b < 8 * n => {
            let payload = match tag {
                SE2_PER_BYTE => pack_fields::<2, 0>(v),
                SE4_PER_BYTE => pack_fields::<4, 0>(v),
                NIBBLE_PADDED => pack_fields::<4, 4>(v),
                LSB_ZERO => v >> 8,
                // Zero and the sign-extended values (b < 64).
                _ => v & ((1 << b) - 1),
            };
            (u64::from(flags) | 1 << 8 | tag << 9, 12, payload, b)
        }
        _ => (u64::from(flags), 9, v, 8 * n),
    };
    out.put_wide(
        head | payload << head_bits,
        payload >> (64 - head_bits),
        head_bits + b,
    );
}

/// Encode one 8-byte datum (`flags`: its dirty bytes) into `out`, field
/// by field.
#[cfg(test)]
pub fn encode_by_field(data: u64, flags: u8, out: &mut BitWriter) {
    out.put(flags as u64, 8);
    let (v, n) = gather_by_byte(data, flags);
    if n == 0 {
        return;
    }
    match best_pattern_in_order(v, n) {
        Some((tag, b)) if 3 + b < 8 * n => {
            out.put(1, 1);
            out.put(tag, 3);
            let payload = match tag {
                SE2_PER_BYTE | SE4_PER_BYTE | NIBBLE_PADDED => {
                    let (w, shift) = match tag {
                        SE2_PER_BYTE => (2, 0),
                        SE4_PER_BYTE => (4, 0),
                        _ => (4, 4),
                    };
                    let mut p = 0u64;
                    for i in 0..n {
                        let byte = (v >> (8 * i)) & 0xff;
                        p |= ((byte >> shift) & ((1 << w) - 1)) << (w * i);
                    }
                    p
                }
                LSB_ZERO => v >> 8,
                _ => v,
            };
            out.put(payload, b);
        }
        _ => {
            out.put(0, 1);
            out.put(v, 8 * n);
        }
    }
}

/// Decode one datum, writing its dirty bytes over `old` (clean bytes keep
/// the old value, as recovery copies only dirty log bytes home).
pub fn decode(r: &mut BitReader, old: u64) -> u64 {
    let flags = r.take(8) as u8;
    let n = flags.count_ones() as usize;
    if n == 0 {
        return old;
    }
    let v = if r.take(1) == 1 {
        let tag = r.take(3);
        let b = payload_bits_len(tag, n);
        let p = r.take(b);
        match tag {
            ZERO => 0,
            SE2_PER_BYTE | SE4_PER_BYTE | NIBBLE_PADDED => {
                let w = if tag == SE2_PER_BYTE { 2 } else { 4 };
                let mut v = 0u64;
                for i in 0..n {
                    let f = (p >> (w * i)) & ((1 << w) - 1);
                    let byte = if tag == NIBBLE_PADDED {
                        f << 4
                    } else {
                        sext(f, w as u32) & 0xff
                    };
                    v |= byte << (8 * i);
                }
                v
            }
            SE_BYTE | SE_2BYTE | SE_4BYTE => sext(p, b as u32),
            _ => p << 8,
        }
    } else {
        r.take(8 * n)
    };
    let mut out = old;
    let mut k = 0;
    for i in 0..8 {
        if flags >> i & 1 == 1 {
            let byte = (v >> (8 * k)) & 0xff;
            out = (out & !(0xff << (8 * i))) | byte << (8 * i);
            k += 1;
        }
    }
    out
}

const fn payload_bits_len(tag: u64, n: usize) -> usize {
    match tag {
        ZERO => 0,
        SE2_PER_BYTE => 2 * n,
        SE4_PER_BYTE | NIBBLE_PADDED => 4 * n,
        SE_BYTE => 8,
        SE_2BYTE => 16,
        SE_4BYTE => 32,
        _ => 8 * n - 8,
    }
}

/// Dirty flags of `new` against `old`: bit i set when byte i differs.
#[inline]
pub fn dirty_flags(old: u64, new: u64) -> u8 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = old ^ new;
    // Bit 7 of each byte: the byte is non-zero.
    let nz = (((x & LOW7) + LOW7) | x) & !LOW7;
    // Gather bit 8i + 7 into bit 56 + i.
    ((nz >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Table II's size reductions (N = dirty bits before compression): the
    /// compressed size is N minus the reduction, i.e. tag + payload.
    #[test]
    fn table_ii_sizes() {
        let all = 0xff;
        let n = 64usize;
        // 000 all zero: N - 3 reduction -> 3 bits.
        assert_eq!(best_pattern(0, 8), Some((ZERO, 0)));
        // 001 2-bit sign-extended per byte (0x01F20101 style, here 8 bytes).
        let v = 0x01FF_0100_FE01_FF00u64;
        assert_eq!(best_pattern(v, 8), Some((SE2_PER_BYTE, n / 4)));
        // 010 4-bit sign-extended per byte: N/2 + 3.
        let v = 0x03F9_05FE_0307_F8F9u64;
        assert_eq!(best_pattern(v, 8), Some((SE4_PER_BYTE, n / 2)));
        // 011 1-byte sign-extended: 11 bits (0xFF..FF80 -> 0x380).
        assert_eq!(best_pattern(0xFFFF_FFFF_FFFF_FF80, 8), Some((SE_BYTE, 8)));
        // 100 2-byte sign-extended: 19 bits (0x7FFF).
        assert_eq!(best_pattern(0x7FFF, 8), Some((SE_2BYTE, 16)));
        // 101 4-byte sign-extended: 35 bits (0xFF80000000 style).
        assert_eq!(best_pattern(0xFFFF_FFFF_8000_0000, 8), Some((SE_4BYTE, 32)));
        // 110 nibble padded with a zero nibble per byte: N/2 + 3 (0x10203040).
        assert_eq!(best_pattern(0x1020_3040, 4), Some((NIBBLE_PADDED, 16)));
        // 111 least significant byte zero: N - 5 bits (0x1234567800).
        assert_eq!(best_pattern(0x12_3456_7800, 5), Some((LSB_ZERO, 32)));
        // Encoded sizes: flags + matched bit + tag + payload.
        assert_eq!(size_bits(0x7FFF, all), 8 + 1 + 19);
        assert_eq!(size_bits(0, 0), 8, "silent: flags only");
        // No pattern: raw dirty bytes.
        assert_eq!(size_bits(0x1234_5678_9abc_def1, all), 8 + 1 + 64);
    }

    /// The masked-move gather equals the byte loop for every flags value
    /// (on words whose bytes are all distinct and non-zero, so a byte
    /// moved to the wrong place or lost shows).
    #[test]
    fn gather_every_flags() {
        for data in [0x8877_6655_4433_2211u64, 0x0102_0408_1020_40ff, u64::MAX] {
            for f in 0..=255u8 {
                assert_eq!(gather(data, f), gather_by_byte(data, f), "{f:08b}");
            }
        }
    }

    /// The ranked table picks what testing the patterns in tag order
    /// picks, for every dirty-byte count and sign-extended width.
    #[test]
    fn best_pattern_every_width() {
        for n in 0..=8usize {
            for k in 0..=64u32 {
                for v in [
                    1u64 << k.min(63),
                    (1u64 << k.min(63)).wrapping_sub(1),
                    (!0u64) << k.min(63),
                    0x10 << k.min(59),
                    0xf0f0_f0f0_f0f0_f0f0 >> k.min(63),
                ] {
                    let v = if n == 8 {
                        v
                    } else {
                        v & ((1u64 << (8 * n)) - 1)
                    };
                    assert_eq!(
                        best_pattern(v, n),
                        best_pattern_in_order(v, n),
                        "{v:#x} {n}"
                    );
                    assert_eq!(best_pattern(v, n), best_pattern_by_tag(v, n), "{v:#x} {n}");
                }
            }
        }
    }

    /// The quick test says a pattern is worth it exactly when the
    /// smallest match is shorter than the dirty bytes.
    #[test]
    fn worth_a_pattern_is_the_smallest_match() {
        let mut seen = [0usize; 2];
        for n in 1..=8usize {
            for k in 0..=64u32 {
                for base in [
                    1u64,
                    0x13,
                    0x80,
                    0x7f,
                    0x8000,
                    0xfff0,
                    0x8000_0000,
                    0x10,
                    0xf0f0_f0f0_f0f0_f0f0,
                    0x0102_03fe_fd07_0801,
                ] {
                    for v in [
                        base << k.min(63),
                        base >> k.min(63),
                        !(base << k.min(63)),
                        base.rotate_left(k),
                    ] {
                        let v = if n == 8 {
                            v
                        } else {
                            v & ((1u64 << (8 * n)) - 1)
                        };
                        let want =
                            matches!(best_pattern_by_tag(v, n), Some((_, b)) if 3 + b < 8 * n);
                        assert_eq!(worth_a_pattern(v, n), want, "{v:#x} {n}");
                        seen[usize::from(want)] += 1;
                    }
                }
            }
        }
        assert!(seen[0] > 100 && seen[1] > 100, "{seen:?}");
    }

    fn pattern_word() -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            (-8i64..8).prop_map(|v| v as u64),
            any::<i8>().prop_map(|v| v as i64 as u64),
            any::<i16>().prop_map(|v| v as i64 as u64),
            any::<i32>().prop_map(|v| v as i64 as u64),
            any::<u32>().prop_map(|v| (v as u64) << 8),
            any::<[u8; 8]>().prop_map(|b| u64::from_le_bytes(b.map(|x| x & 0xf0))),
            any::<[i8; 8]>().prop_map(|b| u64::from_le_bytes(b.map(|x| (x % 2) as u8))),
            Just(0u64),
        ]
    }

    proptest! {
        /// The word-parallel pattern choice and dirty flags equal their
        /// per-byte definitions.
        #[test]
        fn swar_equals_per_byte(v in pattern_word(), w in pattern_word(), n in 1usize..=8, junk in any::<bool>()) {
            let low = if n == 8 { v } else { v & ((1u64 << (8 * n)) - 1) };
            // Callers pass the dirty bytes only; check stray high bytes too.
            let v = if junk { v } else { low };
            prop_assert_eq!(best_pattern(v, n), best_pattern_by_tag(v, n));
            let mut f = 0u8;
            for i in 0..8 {
                if ((v ^ w) >> (8 * i)) & 0xff != 0 {
                    f |= 1 << i;
                }
            }
            prop_assert_eq!(dirty_flags(v, w), f);
            // gather: the flagged bytes in order, packed from byte 0.
            let (mut want, mut k) = (0u64, 0);
            for i in 0..8 {
                if f >> i & 1 == 1 {
                    want |= ((w >> (8 * i)) & 0xff) << (8 * k);
                    k += 1;
                }
            }
            prop_assert_eq!(gather(w, f), (want, k));
            prop_assert_eq!(gather(w, 0xff), (w, 8));
        }

        /// Gathering equals its per-byte definition for any flags (one run
        /// of dirty bytes or several).
        #[test]
        fn gather_any_flags(w in any::<u64>(), f in any::<u8>(), run in (0u32..8, 1u32..=8)) {
            let (from, len) = (run.0, run.1.min(8 - run.0));
            let one_run = (((1u16 << len) - 1) << from) as u8;
            for flags in [f, one_run] {
                let (mut want, mut k) = (0u64, 0);
                for i in 0..8 {
                    if flags >> i & 1 == 1 {
                        want |= ((w >> (8 * i)) & 0xff) << (8 * k);
                        k += 1;
                    }
                }
                prop_assert_eq!(gather(w, flags), (want, k), "{:08b}", flags);
            }
        }

        /// The one-append encoder writes the stream the field-by-field one
        /// does (table-ranked patterns, masked-move gather, merged payload
        /// fields), after a prefix of any length, for any flags.
        #[test]
        fn encode_is_encode_by_field(old in pattern_word(), new in pattern_word(), extra in any::<u8>(), drop in any::<u8>(), prefix in 0usize..200, fill in any::<u64>()) {
            for flags in [dirty_flags(old, new), dirty_flags(old, new) | extra, dirty_flags(old, new) & !drop, extra] {
                let (mut got, mut want) = (BitWriter::default(), BitWriter::default());
                for w in [&mut got, &mut want] {
                    for i in 0..prefix / 64 {
                        w.put(fill.rotate_left(i as u32), 64);
                    }
                    w.put(fill, prefix % 64);
                }
                encode(new, flags, &mut got);
                encode_by_field(new, flags, &mut want);
                prop_assert_eq!(size_bits(new, flags), want.len - prefix);
                prop_assert_eq!(got.len, want.len, "{:08b}", flags);
                prop_assert_eq!(got.words, want.words, "{:08b}", flags);
                let (v, n) = gather(new, flags);
                prop_assert_eq!(best_pattern(v, n), best_pattern_in_order(v, n));
                if n > 0 {
                    let want = matches!(best_pattern_by_tag(v, n), Some((_, b)) if 3 + b < 8 * n);
                    prop_assert_eq!(worth_a_pattern(v, n), want);
                }
            }
        }

        /// The merged per-byte payload fields are the fields packed one
        /// byte at a time.
        #[test]
        fn pack_fields_is_per_byte(v in any::<u64>()) {
            let by_byte = |w: u32, shift: u32| {
                (0..8).fold(0u64, |p, i| p | ((v >> (8 * i + shift)) & ((1 << w) - 1)) << (w * i))
            };
            prop_assert_eq!(pack_fields::<2, 0>(v), by_byte(2, 0));
            prop_assert_eq!(pack_fields::<4, 0>(v), by_byte(4, 0));
            prop_assert_eq!(pack_fields::<4, 4>(v), by_byte(4, 4));
        }

        /// Decoding writes exactly the dirty bytes over the old value.
        #[test]
        fn restores_dirty_bytes(old in pattern_word(), new in pattern_word(), base in any::<u64>(), extra in any::<u8>()) {
            let flags = dirty_flags(old, new) | extra;
            let mut w = BitWriter::default();
            encode(new, flags, &mut w);
            prop_assert_eq!(w.len, size_bits(new, flags));
            let got = decode(&mut BitReader::new(&w), base);
            for i in 0..8 {
                let b = |x: u64| (x >> (8 * i)) & 0xff;
                let want = if flags >> i & 1 == 1 { b(new) } else { b(base) };
                prop_assert_eq!(b(got), want);
            }
            // Against the real old value it restores the new value.
            prop_assert_eq!(decode(&mut BitReader::new(&w), old), new);
        }
    }
}
