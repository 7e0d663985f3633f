//! Bit streams for the encoders: a writer and a reader over a fixed
//! 1,024-bit buffer (an encoded 64 B line never needs more: the worst
//! encoding, DLDC with every byte dirty and unmatched, is 8 x 73 = 584 bits).

/// Capacity of a stream in bits.
pub const STREAM_BITS: usize = 1024;

/// Append-only bit stream, least significant bit first.
#[derive(Clone)]
pub struct BitWriter {
    pub words: [u64; STREAM_BITS / 64],
    pub len: usize,
}

impl Default for BitWriter {
    fn default() -> Self {
        BitWriter {
            words: [0; STREAM_BITS / 64],
            len: 0,
        }
    }
}

impl BitWriter {
    /// Append the low `n` (<= 64) bits of `v`.
    #[inline]
    pub fn put(&mut self, v: u64, n: usize) {
        debug_assert!(n <= 64 && self.len + n <= STREAM_BITS);
        let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
        let (w, b) = (self.len / 64, self.len % 64);
        self.words[w] |= v << b;
        // Two shifts: the high part is empty (not a shift by 64) when the
        // field starts a word; a field ending in the last word has none.
        if let Some(x) = self.words.get_mut(w + 1) {
            *x |= (v >> 1) >> (63 - b);
        }
        self.len += n;
    }

    /// Append an `n`-bit (<= 128) field given as its low and high words,
    /// with no bit set at or past `n`: one append for a field wider than a
    /// word (an encoder's prefix and payload together).
    #[inline]
    pub fn put_wide(&mut self, lo: u64, hi: u64, n: usize) {
        debug_assert!(n <= 128 && self.len + n <= STREAM_BITS);
        // Nothing at or past bit `n`: for n > 64, `hi >> (n - 64)` is 0
        // (two shifts, as n = 128 allows none).
        debug_assert!(if n <= 64 {
            hi == 0 && (n == 64 || lo >> n == 0)
        } else {
            (hi >> 1) >> (n - 65) == 0
        });
        let (w, b) = (self.len / 64, self.len % 64);
        self.words[w] |= lo << b;
        if let Some(x) = self.words.get_mut(w + 1) {
            *x |= (lo >> 1) >> (63 - b) | hi << b;
        }
        if let Some(x) = self.words.get_mut(w + 2) {
            *x |= (hi >> 1) >> (63 - b);
        }
        self.len += n;
    }

    pub fn clear(&mut self) {
        self.words = [0; STREAM_BITS / 64];
        self.len = 0;
    }

    /// Bit `i` of the stream.
    #[inline]
    pub fn bit(&self, i: usize) -> u64 {
        (self.words[i / 64] >> (i % 64)) & 1
    }

    /// `n` (<= 64) bits starting at bit `i` (bits past `len` read as 0).
    #[inline]
    pub fn get(&self, i: usize, n: usize) -> u64 {
        if n == 0 {
            return 0;
        }
        let (w, b) = (i / 64, i % 64);
        let mut v = self.words[w] >> b;
        if b + n > 64 && w + 1 < self.words.len() {
            v |= self.words[w + 1] << (64 - b);
        }
        if n == 64 {
            v
        } else {
            v & ((1u64 << n) - 1)
        }
    }
}

/// Sequential reader over a [`BitWriter`]'s bits.
pub struct BitReader<'a> {
    src: &'a BitWriter,
    pub pos: usize,
}

impl<'a> BitReader<'a> {
    pub fn new(src: &'a BitWriter) -> Self {
        BitReader { src, pos: 0 }
    }

    #[inline]
    pub fn take(&mut self, n: usize) -> u64 {
        let v = self.src.get(self.pos, n);
        self.pos += n;
        v
    }
}

/// Sign-extend the low `bits` bits of `v` to 64 bits.
#[inline]
pub fn sext(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        return v;
    }
    let s = 64 - bits;
    (((v << s) as i64) >> s) as u64
}

/// `v` is the sign extension of its low `bits` bits.
#[inline]
pub fn fits_signed(v: u64, bits: u32) -> bool {
    sext(v, bits) == v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn put_get_across_words() {
        let mut w = BitWriter::default();
        w.put(0b101, 3);
        w.put(u64::MAX, 64);
        w.put(0x5, 4);
        assert_eq!(w.len, 71);
        let mut r = BitReader::new(&w);
        assert_eq!(r.take(3), 0b101);
        assert_eq!(r.take(64), u64::MAX);
        assert_eq!(r.take(4), 0x5);
    }

    /// The stream a bit at a time: the definition `put` and `put_wide`
    /// are checked against.
    fn put_by_bit(w: &mut BitWriter, v: u128, n: usize) {
        for i in 0..n {
            let bit = (v >> i) as u64 & 1;
            w.words[w.len / 64] |= bit << (w.len % 64);
            w.len += 1;
        }
    }

    proptest! {
        /// Fields of any width (junk above a `put` field's width is
        /// dropped) at any offset append the bits one at a time would.
        #[test]
        fn put_is_put_by_bit(fields in prop::collection::vec((any::<u64>(), any::<u64>(), 0usize..=128, any::<bool>()), 0..14)) {
            let (mut got, mut want) = (BitWriter::default(), BitWriter::default());
            for (lo, hi, n, wide) in fields {
                if wide {
                    // The field's bits only: nothing at or past `n`.
                    let v = (u128::from(hi) << 64 | u128::from(lo)) & (u128::MAX >> (128 - n.max(1)));
                    let v = if n == 0 { 0 } else { v };
                    if got.len + n >= STREAM_BITS { break; }
                    got.put_wide(v as u64, (v >> 64) as u64, n);
                    put_by_bit(&mut want, v, n);
                } else {
                    let n = n.min(64);
                    if got.len + n >= STREAM_BITS { break; }
                    got.put(lo, n);
                    put_by_bit(&mut want, u128::from(lo), n);
                }
                prop_assert_eq!(got.len, want.len);
                prop_assert_eq!(got.words, want.words);
            }
        }
    }

    #[test]
    fn sign_extension() {
        assert_eq!(sext(0x8, 4), u64::MAX - 7);
        assert!(fits_signed(u64::MAX, 4));
        assert!(fits_signed(7, 4));
        assert!(!fits_signed(8, 4));
    }
}
