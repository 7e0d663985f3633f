//! Bit-exact on-media formats of HOOP's OOP region (HOOP §III-D, Fig. 5).
//!
//! OOP block (`block_bytes`, 2 MB by default): slot 0 (128 B) holds the block
//! header, slots 1.. hold 128 B memory slices.
//!
//! Block header, first 8 bytes (little-endian u64):
//!   bits 0..8   block index (8 bit; block number mod 256, Fig. 5a)
//!   bits 8..42  next-block address (34 bit; next block number + 1, 0 = none)
//!   bits 42..44 state (UNUSED=0, INUSE=1, FULL=2, GC=3)
//!   bits 44..56 low 12 bits of the epoch (added by us: a header torn
//!               between its two words reads as UNUSED)
//! bytes 8..12: epoch (u32) — added by us: the block's allocation sequence
//! number, so slices left over from a block's previous life are never taken
//! for current ones (see docs/model/hoop.md). Zeroed media = UNUSED block.
//!
//! Data slice (Fig. 5b): bytes 0..64 hold up to eight 8-byte words; bytes
//! 64..128 the metadata, packed little-endian bit by bit from bit 0 of byte 64:
//!   bits   0..320  eight 40-bit home-region word addresses
//!   bits 320..344  next-slice offset (24 bit; forward distance in slices
//!                  modulo the region, 0 = last slice of the transaction)
//!   bits 344..376  TxID (32 bit)
//!   bit  376       first slice of the transaction
//!   bits 377..380  word count - 1 (3 bit: 1..8 words)
//!   bits 380..384  flag (4 bit)
//!   byte 127       slice kind (added by us: data vs address slice)
//!
//! Address slice: bytes 0..120 hold 15 commit entries (u64, 0 = empty):
//! low 32 bits = start slice index + 1, high 32 bits = TxID. The last word
//! (bytes 120..128, written atomically): epoch of the block it was written
//! in (u32), byte 124 = retired (GC migrated all its transactions), byte 127
//! the slice kind.

use crate::types::{Addr, LineData};

pub const SLICE_BYTES: u64 = 128;
pub const WORDS_PER_SLICE: usize = 8;
pub const ADDR_ENTRIES: usize = 15;
pub const KIND_BYTE: usize = 127;
pub const KIND_DATA: u8 = 0xD5;
pub const KIND_ADDR: u8 = 0xA5;
/// Flag of a data slice written by the OOP data buffer.
pub const FLAG_DATA: u8 = 0x1;
/// Home-region addresses are 40 bits (1 TB, §III-C).
pub const HOME_ADDR_BITS: u32 = 40;
pub const NEXT_BITS: u32 = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BlockState {
    Unused = 0,
    InUse = 1,
    Full = 2,
    Gc = 3,
}

impl BlockState {
    fn from_bits(b: u64) -> Self {
        match b & 3 {
            0 => BlockState::Unused,
            1 => BlockState::InUse,
            2 => BlockState::Full,
            _ => BlockState::Gc,
        }
    }
    /// Blocks whose committed transactions recovery must replay.
    pub fn is_live(self) -> bool {
        self != BlockState::Unused
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// 8-bit block index.
    pub index: u8,
    /// Next block number + 1 (34 bit), 0 = none.
    pub next: u64,
    pub state: BlockState,
    pub epoch: u32,
}

impl BlockHeader {
    pub const BYTES: usize = 16;

    pub fn encode(&self) -> [u8; Self::BYTES] {
        let w = u64::from(self.index)
            | (self.next & ((1 << 34) - 1)) << 8
            | (self.state as u64) << 42
            | u64::from(self.epoch & 0xfff) << 44;
        let mut b = [0u8; Self::BYTES];
        b[..8].copy_from_slice(&w.to_le_bytes());
        b[8..12].copy_from_slice(&self.epoch.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Self {
        let w = u64::from_le_bytes(b[..8].try_into().unwrap());
        let epoch = u32::from_le_bytes(b[8..12].try_into().unwrap());
        let torn = (w >> 44) & 0xfff != u64::from(epoch & 0xfff);
        BlockHeader {
            index: (w & 0xff) as u8,
            next: (w >> 8) & ((1 << 34) - 1),
            // A header torn while a block was being opened: nothing of the
            // new life was written yet (ADR order), so the block is unused.
            state: if torn {
                BlockState::Unused
            } else {
                BlockState::from_bits(w >> 42)
            },
            epoch,
        }
    }
}

/// A data memory slice: up to eight (home word address, value) updates of
/// one transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSlice {
    pub values: [u64; WORDS_PER_SLICE],
    /// Home-region byte addresses of the words (8-byte aligned, < 2^40).
    pub homes: [Addr; WORDS_PER_SLICE],
    /// Valid entries, 1..=8.
    pub count: u8,
    /// Forward distance to the next slice of the transaction (24 bit), 0 = none.
    pub next: u32,
    pub txid: u32,
    pub first: bool,
    pub flag: u8,
}

impl DataSlice {
    pub fn new(txid: u32, first: bool) -> Self {
        DataSlice {
            values: [0; WORDS_PER_SLICE],
            homes: [0; WORDS_PER_SLICE],
            count: 0,
            next: 0,
            txid,
            first,
            flag: FLAG_DATA,
        }
    }

    /// Entry holding home word `addr`, if any.
    #[inline]
    pub fn find(&self, addr: Addr) -> Option<usize> {
        (0..self.count as usize).find(|&i| self.homes[i] == addr)
    }

    pub fn is_full(&self) -> bool {
        self.count as usize == WORDS_PER_SLICE
    }

    /// Every field of the format is byte-aligned except the three packed
    /// into metadata byte 47 (first, count - 1, flag), so plain byte copies
    /// do it; `put_bits` is the bit-level definition (see the tests).
    pub fn encode(&self) -> [u8; SLICE_BYTES as usize] {
        debug_assert!(self.count >= 1 && self.count as usize <= WORDS_PER_SLICE);
        let mut b = [0u8; SLICE_BYTES as usize];
        let (data, m) = b.split_at_mut(64);
        for i in 0..self.count as usize {
            debug_assert!(self.homes[i] < 1 << HOME_ADDR_BITS);
            data[i * 8..i * 8 + 8].copy_from_slice(&self.values[i].to_le_bytes());
            m[i * 5..i * 5 + 5].copy_from_slice(&self.homes[i].to_le_bytes()[..5]);
        }
        m[40..43].copy_from_slice(&self.next.to_le_bytes()[..3]);
        m[43..47].copy_from_slice(&self.txid.to_le_bytes());
        m[47] = u8::from(self.first) | ((self.count - 1) & 7) << 1 | (self.flag & 0xf) << 4;
        b[KIND_BYTE] = KIND_DATA;
        b
    }

    /// Decode a data slice; `None` if the bytes are not one.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b[KIND_BYTE] != KIND_DATA {
            return None;
        }
        let m = &b[64..128];
        let le = |r: &[u8]| {
            let mut w = [0u8; 8];
            w[..r.len()].copy_from_slice(r);
            u64::from_le_bytes(w)
        };
        let count = ((m[47] >> 1) & 7) + 1;
        let mut s = DataSlice {
            values: [0; WORDS_PER_SLICE],
            homes: [0; WORDS_PER_SLICE],
            count,
            next: le(&m[40..43]) as u32,
            txid: le(&m[43..47]) as u32,
            first: m[47] & 1 == 1,
            flag: m[47] >> 4,
        };
        for i in 0..count as usize {
            s.values[i] = le(&b[i * 8..i * 8 + 8]);
            s.homes[i] = le(&m[i * 5..i * 5 + 5]);
        }
        Some(s)
    }
}

/// A commit entry of an address slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitEntry {
    /// Global index of the transaction's first slice in the OOP region.
    pub start_slot: u64,
    pub txid: u32,
}

impl CommitEntry {
    pub fn encode(&self) -> u64 {
        debug_assert!(self.start_slot < u64::from(u32::MAX));
        (self.start_slot + 1) | u64::from(self.txid) << 32
    }
    pub fn decode(w: u64) -> Option<Self> {
        let lo = w & 0xffff_ffff;
        if lo == 0 {
            return None;
        }
        Some(CommitEntry {
            start_slot: lo - 1,
            txid: (w >> 32) as u32,
        })
    }
}

/// Offset of the address slice's last word (epoch, retired, kind).
pub const ADDR_HEADER_OFFSET: usize = 120;
pub const ADDR_RETIRED_BYTE: usize = 124;

/// The last word of an address slice.
pub fn address_slice_header(epoch: u32, retired: bool) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&epoch.to_le_bytes());
    b[ADDR_RETIRED_BYTE - ADDR_HEADER_OFFSET] = u8::from(retired);
    b[KIND_BYTE - ADDR_HEADER_OFFSET] = KIND_ADDR;
    b
}

/// Live commit entries of an address slice written in epoch `epoch`;
/// `None` if the bytes are not an address slice of that epoch, empty if GC
/// retired it.
pub fn decode_address_slice(b: &[u8], epoch: u32) -> Option<Vec<CommitEntry>> {
    let mut v = Vec::new();
    decode_address_slice_into(b, epoch, &mut v).then_some(v)
}

/// `decode_address_slice` appending to `out` (no allocation); false if the
/// bytes are not an address slice of that epoch.
pub fn decode_address_slice_into(b: &[u8], epoch: u32, out: &mut Vec<CommitEntry>) -> bool {
    if b[KIND_BYTE] != KIND_ADDR || u32::from_le_bytes(b[120..124].try_into().unwrap()) != epoch {
        return false;
    }
    if let Some(e) = address_slice_entries(b, epoch) {
        out.extend(e.into_iter().filter_map(CommitEntry::decode));
    }
    true
}

/// The raw commit-entry words of a slice whose kind byte says address
/// slice (`None` if it does not); all zero unless it is a live address
/// slice of epoch `epoch` (another epoch's or retired: no entry counts).
pub fn address_slice_entries(b: &[u8], epoch: u32) -> Option<[u64; ADDR_ENTRIES]> {
    if b[KIND_BYTE] != KIND_ADDR {
        return None;
    }
    let mut e = [0u64; ADDR_ENTRIES];
    if u32::from_le_bytes(b[120..124].try_into().unwrap()) == epoch && b[ADDR_RETIRED_BYTE] == 0 {
        for (i, w) in e.iter_mut().enumerate() {
            *w = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        }
    }
    Some(e)
}

/// Forward distance from slice `from` to slice `to` in a region of `slots`
/// slices, as stored in the 24-bit next field.
#[inline]
pub fn next_offset(from: u64, to: u64, slots: u64) -> u32 {
    let d = (to + slots - from) % slots;
    // Allocation keeps every successor in reach (`pick_free_block`); a
    // violation would corrupt the chain on media, so it must not pass
    // silently in release builds either.
    assert!(
        d > 0 && d < 1 << NEXT_BITS,
        "next slice out of 24-bit range"
    );
    d as u32
}

#[inline]
pub fn follow_next(from: u64, off: u32, slots: u64) -> u64 {
    (from + u64::from(off)) % slots
}

/// Merge the words of `s` that belong to `line_addr` into `line`.
pub fn merge_into_line(s: &DataSlice, line_addr: Addr, line: &mut LineData) {
    for i in 0..s.count as usize {
        let h = s.homes[i];
        if h & !63 == line_addr {
            let w = ((h & 63) / 8) as usize;
            line[w * 8..w * 8 + 8].copy_from_slice(&s.values[i].to_le_bytes());
        }
    }
}

/// Copy into `line` the words of the data slice in `b` that belong to home
/// line `line_addr` and are selected by `words` (bit w: word w of the
/// line), entries in slice order; returns the slice's TxID, or `None` if
/// the bytes are not a data slice. The same as [`DataSlice::decode`] then
/// [`merge_into_line`] of the selected words, without building the slice
/// (the read-miss path decodes one to three slices per mapped miss).
#[inline]
pub fn merge_slice_bytes(
    b: &[u8; SLICE_BYTES as usize],
    line_addr: Addr,
    words: u8,
    line: &mut LineData,
) -> Option<u32> {
    if b[KIND_BYTE] != KIND_DATA {
        return None;
    }
    let m = &b[64..];
    let count = usize::from((m[47] >> 1) & 7) + 1;
    for i in 0..count {
        let mut h = [0u8; 8];
        h[..5].copy_from_slice(&m[i * 5..i * 5 + 5]);
        let home = u64::from_le_bytes(h);
        let w = ((home & 63) / 8) as usize;
        if home & !63 == line_addr && words & (1 << w) != 0 {
            line[w * 8..w * 8 + 8].copy_from_slice(&b[i * 8..i * 8 + 8]);
        }
    }
    Some(u32::from_le_bytes(m[43..47].try_into().unwrap()))
}

/// The bytes covering bits `bit..bit + width` (width <= 64, so at most nine
/// bytes) as one little-endian integer, shifted so `bit` is bit 0.
#[inline]
fn bit_window(bit: usize, width: usize) -> (usize, usize, u32) {
    debug_assert!(width <= 64);
    let first = bit / 8;
    let shift = (bit % 8) as u32;
    let bytes = (shift as usize + width).div_ceil(8);
    (first, bytes, shift)
}

#[inline]
fn width_mask(width: usize) -> u128 {
    (1u128 << width) - 1
}

/// Write the low `width` bits of `v` at bit offset `bit` (LSB first).
#[inline]
pub fn put_bits(buf: &mut [u8], bit: usize, width: usize, v: u64) {
    let (first, bytes, shift) = bit_window(bit, width);
    let bytes = &mut buf[first..first + bytes];
    let mut acc = 0u128;
    for (i, &b) in bytes.iter().enumerate() {
        acc |= u128::from(b) << (8 * i);
    }
    let mask = width_mask(width) << shift;
    acc = (acc & !mask) | ((u128::from(v) << shift) & mask);
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (acc >> (8 * i)) as u8;
    }
}

/// Read `width` bits at bit offset `bit` (LSB first).
#[inline]
pub fn get_bits(buf: &[u8], bit: usize, width: usize) -> u64 {
    let (first, bytes, shift) = bit_window(bit, width);
    let mut acc = 0u128;
    for (i, &b) in buf[first..first + bytes].iter().enumerate() {
        acc |= u128::from(b) << (8 * i);
    }
    ((acc >> shift) & width_mask(width)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The format's definition, bit by bit: the oracle for the word-wise
    /// `put_bits`/`get_bits`.
    fn put_bits_reference(buf: &mut [u8], bit: usize, width: usize, v: u64) {
        for k in 0..width {
            let b = bit + k;
            if (v >> k) & 1 == 1 {
                buf[b / 8] |= 1 << (b % 8);
            } else {
                buf[b / 8] &= !(1 << (b % 8));
            }
        }
    }

    /// Any valid data slice (1 to 8 words, 8 B aligned 40-bit homes).
    fn arb_data_slice() -> impl Strategy<Value = DataSlice> {
        (
            1u8..=8,
            proptest::array::uniform8(any::<u64>()),
            proptest::array::uniform8(0u64..(1 << 37)),
            0u32..(1 << 24),
            any::<u32>(),
            any::<bool>(),
            0u8..16,
        )
            .prop_map(|(count, vals, homes, next, txid, first, flag)| {
                let mut s = DataSlice::new(txid, first);
                s.count = count;
                s.next = next;
                s.flag = flag;
                for i in 0..count as usize {
                    s.values[i] = vals[i];
                    s.homes[i] = homes[i] * 8;
                }
                s
            })
    }

    proptest! {
        #[test]
        fn bit_fields_match_the_bitwise_definition(
            init in proptest::collection::vec(any::<u8>(), 64),
            bit in 0usize..448,
            width in 0usize..=64,
            v in any::<u64>(),
        ) {
            let mut fast = init.clone();
            let mut reference = init;
            put_bits(&mut fast, bit, width, v);
            put_bits_reference(&mut reference, bit, width, v);
            prop_assert_eq!(&fast, &reference);
            let expect = if width == 64 { v } else { v & ((1u64 << width) - 1) };
            prop_assert_eq!(get_bits(&fast, bit, width), expect);
        }

        #[test]
        fn data_slice_roundtrip(s in arb_data_slice()) {
            let b = s.encode();
            prop_assert_eq!(DataSlice::decode(&b), Some(s));
            prop_assert!(decode_address_slice(&b, 0).is_none());
        }

        #[test]
        fn data_slice_encoding_matches_the_bit_fields(s in arb_data_slice()) {
            // The format's definition, field by field.
            let mut want = [0u8; SLICE_BYTES as usize];
            for i in 0..s.count as usize {
                want[i * 8..i * 8 + 8].copy_from_slice(&s.values[i].to_le_bytes());
            }
            let m = &mut want[64..];
            for i in 0..s.count as usize {
                put_bits_reference(m, i * 40, 40, s.homes[i]);
            }
            put_bits_reference(m, 320, 24, u64::from(s.next));
            put_bits_reference(m, 344, 32, u64::from(s.txid));
            put_bits_reference(m, 376, 1, u64::from(s.first));
            put_bits_reference(m, 377, 3, u64::from(s.count - 1));
            put_bits_reference(m, 380, 4, u64::from(s.flag));
            want[KIND_BYTE] = KIND_DATA;
            prop_assert_eq!(s.encode(), want);
        }

        #[test]
        fn merge_slice_bytes_equals_decode_then_merge(
            s in arb_data_slice(),
            pick in 0usize..8,
            words in any::<u8>(),
            init in proptest::array::uniform8(any::<u64>()),
        ) {
            // A line that the slice holds words of (or not, for pick's
            // home beyond count).
            let line_addr = s.homes[pick] & !63;
            let mut want = [0u8; 64];
            for (w, v) in init.iter().enumerate() {
                want[w * 8..w * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            let mut got = want;
            let d = DataSlice::decode(&s.encode()).unwrap();
            for i in 0..d.count as usize {
                let h = d.homes[i];
                let w = ((h & 63) / 8) as usize;
                if h & !63 == line_addr && words & (1 << w) != 0 {
                    want[w * 8..w * 8 + 8].copy_from_slice(&d.values[i].to_le_bytes());
                }
            }
            prop_assert_eq!(merge_slice_bytes(&s.encode(), line_addr, words, &mut got), Some(d.txid));
            prop_assert_eq!(got, want);
            let mut b = [0u8; SLICE_BYTES as usize];
            b[120..].copy_from_slice(&address_slice_header(1, false));
            prop_assert_eq!(merge_slice_bytes(&b, line_addr, words, &mut got), None);
        }

        #[test]
        fn header_roundtrip(index in any::<u8>(), next in 0u64..(1 << 34), st in 0u64..4, epoch in any::<u32>()) {
            let h = BlockHeader { index, next, state: BlockState::from_bits(st), epoch };
            prop_assert_eq!(BlockHeader::decode(&h.encode()), h);
        }

        #[test]
        fn address_slice_roundtrip(
            entries in proptest::collection::vec((0u64..(u32::MAX as u64 - 1), any::<u32>()), 0..=15),
            epoch in any::<u32>(),
        ) {
            let mut b = [0u8; 128];
            b[120..].copy_from_slice(&address_slice_header(epoch, false));
            let want: Vec<CommitEntry> = entries.iter().map(|&(s, t)| CommitEntry { start_slot: s, txid: t }).collect();
            for (i, e) in want.iter().enumerate() {
                b[i * 8..i * 8 + 8].copy_from_slice(&e.encode().to_le_bytes());
            }
            prop_assert_eq!(decode_address_slice(&b, epoch), Some(want));
            prop_assert!(decode_address_slice(&b, epoch.wrapping_add(1)).is_none());
            prop_assert!(DataSlice::decode(&b).is_none());
            b[120..].copy_from_slice(&address_slice_header(epoch, true));
            prop_assert_eq!(decode_address_slice(&b, epoch), Some(vec![]));
        }
    }

    #[test]
    fn field_positions_are_as_documented() {
        let mut s = DataSlice::new(0xdead_beef, true);
        s.count = 1;
        s.homes[0] = 0xff_ffff_fff8;
        s.next = 0xabcdef;
        let b = s.encode();
        // 40-bit home address in the first five metadata bytes.
        assert_eq!(&b[64..69], &[0xf8, 0xff, 0xff, 0xff, 0xff]);
        // next at bit 320 = byte 104, TxID at bit 344 = byte 107.
        assert_eq!(&b[104..107], &[0xef, 0xcd, 0xab]);
        assert_eq!(&b[107..111], &0xdead_beefu32.to_le_bytes());
        // first bit, count-1 = 0, flag = 1 in byte 111.
        assert_eq!(b[111], 0b0001_0001);
        let h = BlockHeader {
            index: 7,
            next: 3,
            state: BlockState::Full,
            epoch: 9,
        };
        let e = h.encode();
        assert_eq!(
            u64::from_le_bytes(e[..8].try_into().unwrap()),
            7 | 3 << 8 | 2 << 42 | 9 << 44
        );
        // A zeroed header is an unused block; so is one torn between words.
        assert_eq!(BlockHeader::decode(&[0u8; 16]).state, BlockState::Unused);
        let mut torn = e;
        torn[8..12].copy_from_slice(&8u32.to_le_bytes());
        assert_eq!(BlockHeader::decode(&torn).state, BlockState::Unused);
    }
}
