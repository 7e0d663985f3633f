//! Frequent pattern compression (Alameldeen & Wood, "Frequent Pattern
//! Compression: A Significance-Based Compression Scheme for L2 Caches",
//! UW-Madison TR 1500, 2004), 64-bit variant: the line is eight 64-bit words,
//! each stored as a 3-bit prefix and its significant bits. The prefixes are
//! A&W's 32-bit table doubled to 64-bit words (the CompEx paper,
//! Palangappa & Mohanram, HPCA 2016, uses FPC on 64-bit words; its exact
//! table was not available to us: modelling choice, docs/model/nvm-media.md):
//!
//! | prefix | pattern | data bits |
//! | --- | --- | --- |
//! | 000 | run of 1-8 zero words | 3 (run length - 1) |
//! | 001 | 4-bit sign-extended | 4 |
//! | 010 | 8-bit sign-extended | 8 |
//! | 011 | 16-bit sign-extended | 16 |
//! | 100 | 32-bit sign-extended | 32 |
//! | 101 | two 32-bit halves, each a 16-bit sign-extended value | 32 |
//! | 110 | one byte repeated eight times | 8 |
//! | 111 | uncompressed | 64 |

#[cfg(test)]
use super::bits::fits_signed;
use super::bits::{sext, BitReader, BitWriter};
use crate::types::LineData;

pub const WORDS: usize = 8;

#[inline]
fn word(line: &LineData, i: usize) -> u64 {
    u64::from_le_bytes(line[i * 8..i * 8 + 8].try_into().unwrap())
}

/// Prefix and data width of a non-zero word. `w` is the sign extension
/// of its low k bits iff its bits k - 1..63 are equal, i.e. iff `w` with
/// its sign folded away (`r`) is below 2^(k-1): one comparison per width
/// (`classify_by_sext` is the definition).
#[inline]
fn classify(w: u64) -> (u64, usize) {
    let r = w ^ ((w as i64 >> 63) as u64);
    let lo = w as u32 as u64;
    let hi = w >> 32;
    if r < 1 << 3 {
        (0b001, 4)
    } else if r < 1 << 7 {
        (0b010, 8)
    } else if r < 1 << 15 {
        (0b011, 16)
    } else if w == (w & 0xff) * 0x0101_0101_0101_0101 {
        (0b110, 8)
    } else if r < 1 << 31 {
        (0b100, 32)
    } else if sext(lo, 16) as u32 as u64 == lo && sext(hi, 16) as u32 as u64 == hi {
        (0b101, 32)
    } else {
        (0b111, 64)
    }
}

/// Prefix and data width of a non-zero word, by sign extension.
#[cfg(test)]
fn classify_by_sext(w: u64) -> (u64, usize) {
    let lo = w as u32 as u64;
    let hi = w >> 32;
    if fits_signed(w, 4) {
        (0b001, 4)
    } else if fits_signed(w, 8) {
        (0b010, 8)
    } else if fits_signed(w, 16) {
        (0b011, 16)
    } else if w == u64::from_le_bytes([w as u8; 8]) {
        (0b110, 8)
    } else if fits_signed(w, 32) {
        (0b100, 32)
    } else if sext(lo, 16) as u32 as u64 == lo && sext(hi, 16) as u32 as u64 == hi {
        (0b101, 32)
    } else {
        (0b111, 64)
    }
}

/// A line's FPC code, classified once: each word's (or zero run's)
/// prefix and data as one field (low and high word) and its width, so
/// the size is known before the code is written and writing classifies
/// nothing again.
pub struct Plan {
    lo: [u64; WORDS],
    hi: [u64; WORDS],
    width: [u8; WORDS],
    fields: usize,
    /// Compressed size in bits.
    pub bits: usize,
}

/// Classify `line`'s words into their FPC fields.
#[inline]
pub fn plan(line: &LineData) -> Plan {
    let mut p = Plan {
        lo: [0; WORDS],
        hi: [0; WORDS],
        width: [0; WORDS],
        fields: 0,
        bits: 0,
    };
    let mut i = 0;
    while i < WORDS {
        let w = word(line, i);
        let k = p.fields;
        if w == 0 {
            let mut run = 1;
            while i + run < WORDS && word(line, i + run) == 0 {
                run += 1;
            }
            p.lo[k] = (run as u64 - 1) << 3;
            p.width[k] = 6;
            i += run;
        } else {
            let (prefix, bits) = classify(w);
            let data = match prefix {
                0b101 => (w & 0xffff) | ((w >> 32) & 0xffff) << 16,
                0b111 => w,
                _ => w & ((1 << bits) - 1),
            };
            p.lo[k] = prefix | data << 3;
            p.hi[k] = data >> 61;
            p.width[k] = 3 + bits as u8;
            i += 1;
        }
        p.bits += usize::from(p.width[k]);
        p.fields += 1;
    }
    p
}

impl Plan {
    /// Append the code to `out`; returns the bits written.
    #[inline]
    pub fn write(&self, out: &mut BitWriter) -> usize {
        for k in 0..self.fields {
            out.put_wide(self.lo[k], self.hi[k], usize::from(self.width[k]));
        }
        self.bits
    }
}

/// Compress `line` into `out` (appended); returns the bits written.
pub fn encode(line: &LineData, out: &mut BitWriter) -> usize {
    plan(line).write(out)
}

/// [`encode`] a field at a time (its definition).
#[cfg(test)]
pub fn encode_by_field(line: &LineData, out: &mut BitWriter) -> usize {
    let start = out.len;
    let mut i = 0;
    while i < WORDS {
        let w = word(line, i);
        if w == 0 {
            let mut run = 1;
            while i + run < WORDS && word(line, i + run) == 0 {
                run += 1;
            }
            out.put(0b000, 3);
            out.put(run as u64 - 1, 3);
            i += run;
            continue;
        }
        let (prefix, bits) = classify(w);
        out.put(prefix, 3);
        let data = match prefix {
            0b101 => (w & 0xffff) | ((w >> 32) & 0xffff) << 16,
            _ => w,
        };
        out.put(data, bits);
        i += 1;
    }
    out.len - start
}

/// Compressed size in bits, without writing.
pub fn size_bits(line: &LineData) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < WORDS {
        let w = word(line, i);
        if w == 0 {
            while i < WORDS && word(line, i) == 0 {
                i += 1;
            }
            n += 6;
            continue;
        }
        n += 3 + classify(w).1;
        i += 1;
    }
    n
}

/// Decompress a line from `r`.
pub fn decode(r: &mut BitReader) -> LineData {
    let mut line = [0u8; 64];
    let mut i = 0;
    while i < WORDS {
        let prefix = r.take(3);
        let w = match prefix {
            0b000 => {
                i += r.take(3) as usize + 1;
                continue;
            }
            0b001 => sext(r.take(4), 4),
            0b010 => sext(r.take(8), 8),
            0b011 => sext(r.take(16), 16),
            0b100 => sext(r.take(32), 32),
            0b101 => {
                let v = r.take(32);
                let lo = sext(v & 0xffff, 16) as u32 as u64;
                let hi = sext(v >> 16, 16) as u32 as u64;
                lo | hi << 32
            }
            0b110 => u64::from_le_bytes([r.take(8) as u8; 8]),
            _ => r.take(64),
        };
        line[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        i += 1;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn line_of(words: [u64; 8]) -> LineData {
        let mut l = [0u8; 64];
        for (i, w) in words.iter().enumerate() {
            l[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        l
    }

    #[test]
    fn sizes_of_patterns() {
        assert_eq!(size_bits(&[0u8; 64]), 6, "one zero run");
        let l = line_of([
            5,
            0,
            0,
            u64::MAX,
            0x1234,
            0x0101_0101_0101_0101,
            0x1234_5678_9abc_def0,
            0,
        ]);
        // 4-bit, zero run of 2, 4-bit (-1), 16-bit, repeated byte, raw, zero run.
        assert_eq!(size_bits(&l), 7 + 6 + 7 + 19 + 11 + 67 + 6);
        let mut w = BitWriter::default();
        assert_eq!(encode(&l, &mut w), size_bits(&l));
        assert_eq!(decode(&mut BitReader::new(&w)), l);
    }

    proptest! {
        /// The folded-sign comparisons classify every word as the sign
        /// extension tests do.
        #[test]
        fn classify_is_classify_by_sext(w in prop_oneof![
            any::<u64>(), any::<i8>().prop_map(|v| v as i64 as u64),
            any::<i16>().prop_map(|v| v as i64 as u64), any::<i32>().prop_map(|v| v as i64 as u64),
            any::<u8>().prop_map(|b| u64::from_le_bytes([b; 8])),
            (any::<i16>(), any::<i16>()).prop_map(|(a, b)| (a as i32 as u32 as u64) | (b as i32 as u32 as u64) << 32),
        ], k in 0u32..64) {
            for w in [w, w >> k, (w as i64 >> k) as u64, 1u64 << k, (1u64 << k).wrapping_neg(), (1u64 << k) - 1] {
                if w != 0 {
                    prop_assert_eq!(classify(w), classify_by_sext(w), "{:#x}", w);
                }
            }
        }

        /// Writing the classified fields writes what encoding a field at
        /// a time does, after a prefix of any length, and the planned
        /// size is the size.
        #[test]
        fn plan_is_encode_by_field(words in prop::array::uniform8(prop_oneof![
            any::<u64>(), Just(0u64), any::<i8>().prop_map(|v| v as i64 as u64),
            any::<i16>().prop_map(|v| v as i64 as u64), any::<i32>().prop_map(|v| v as i64 as u64),
            any::<u8>().prop_map(|b| u64::from_le_bytes([b; 8])),
            (any::<i16>(), any::<i16>()).prop_map(|(a, b)| (a as i32 as u32 as u64) | (b as i32 as u32 as u64) << 32),
        ]), prefix in 0usize..300, fill in any::<u64>()) {
            let l = line_of(words);
            let (mut got, mut want) = (BitWriter::default(), BitWriter::default());
            for w in [&mut got, &mut want] {
                for i in 0..prefix / 64 {
                    w.put(fill.rotate_left(i as u32), 64);
                }
                w.put(fill, prefix % 64);
            }
            let n = encode(&l, &mut got);
            prop_assert_eq!(n, encode_by_field(&l, &mut want));
            prop_assert_eq!(n, size_bits(&l));
            prop_assert_eq!(plan(&l).bits, n);
            prop_assert_eq!(got.len, want.len);
            prop_assert_eq!(got.words, want.words);
        }
    }
}
