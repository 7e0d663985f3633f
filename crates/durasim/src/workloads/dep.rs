//! Address-dependency inference of [`super::TxCtx`]: the ring of recently
//! loaded pointer values and the lookup "newest remembered pointer whose
//! object span holds this address".
//!
//! Every recorded load asks the ring, so the lookup is the workload side's
//! hottest loop (a linear newest-first scan cost ~8 host
//! instructions per entry, and loads through a node whose pointer was pushed
//! out of reach scanned all 8). It checks the newest entry first (a walk
//! through the node just loaded, the common case) and otherwise tests all
//! entries at once (SSE2 on x86_64) and picks the newest match from a bit
//! mask. Unused slots hold [`NO_PTR`], which no address matches, so the
//! ring needs no length. Same answers as the scan, bit for bit (tested
//! against it below).

use super::DEP_SPAN_BYTES;
use crate::types::Addr;

/// Loaded pointers remembered for dependency inference (newest first wins).
pub(super) const DEP_PTRS: usize = 8;
const _: () = assert!(DEP_PTRS == 8, "the match mask below packs 8 entries");
const _: () = assert!(DEP_SPAN_BYTES.is_power_of_two());
/// log2 of [`DEP_SPAN_BYTES`]: `addr - p < span` iff `(addr - p) >> shift == 0`.
const SPAN_SHIFT: i32 = DEP_SPAN_BYTES.trailing_zeros() as i32;
/// Value of an unused slot: `addr - NO_PTR < DEP_SPAN_BYTES` only for
/// addresses in the top span of the 64-bit space, which no region reaches.
const NO_PTR: Addr = 0u64.wrapping_sub(DEP_SPAN_BYTES);

/// The last [`DEP_PTRS`] pointer-like loaded values with the sequence
/// number (within the op stream) of the load that produced each.
#[derive(Clone, Copy)]
pub(super) struct DepRing {
    value: [Addr; DEP_PTRS],
    seq: [u32; DEP_PTRS],
    /// Slot of the next push; the newest entry is the one before it.
    next: usize,
}

impl DepRing {
    pub(super) fn new() -> Self {
        DepRing {
            value: [NO_PTR; DEP_PTRS],
            seq: [0; DEP_PTRS],
            next: 0,
        }
    }

    /// Remember pointer `value` produced by load number `seq`.
    #[inline(always)]
    pub(super) fn push(&mut self, value: Addr, seq: u32) {
        let i = self.next & (DEP_PTRS - 1);
        self.value[i] = value;
        self.seq[i] = seq;
        self.next = (i + 1) & (DEP_PTRS - 1);
    }

    /// Distance (in loads, `load_seq` being the number of the load about
    /// to be recorded) to the newest entry whose span
    /// `[p, p + DEP_SPAN_BYTES)` holds `addr`; 0 when none, or when it is
    /// too far back to encode in a `u8`.
    #[inline(always)]
    pub(super) fn dep(&self, addr: Addr, load_seq: u32) -> u8 {
        let newest = self.next.wrapping_sub(1) & (DEP_PTRS - 1);
        let j = if addr.wrapping_sub(self.value[newest]) < DEP_SPAN_BYTES {
            newest
        } else {
            match self.newest_match(addr) {
                Some(j) => j,
                None => return 0,
            }
        };
        let d = load_seq - self.seq[j];
        if d <= u8::MAX as u32 {
            d as u8
        } else {
            0
        }
    }

    /// Slot of the newest entry matching `addr`, if any (all slots tested).
    #[inline]
    fn newest_match(&self, addr: Addr) -> Option<usize> {
        // Bit 2i: slot i matches.
        let m = match_mask(&self.value, addr);
        if m == 0 {
            return None;
        }
        // Rotate so that bit 2k holds slot (next + k) mod 8: k = 7 is the
        // newest slot, smaller k older ones.
        let two_rounds = m | m << 16;
        let r = (two_rounds >> (2 * self.next)) & 0xffff;
        let k = (31 - r.leading_zeros()) as usize / 2;
        Some((k + self.next) & (DEP_PTRS - 1))
    }
}

/// Bit `2i` set iff `addr - values[i] < DEP_SPAN_BYTES` (odd bits clear).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn match_mask(values: &[Addr; DEP_PTRS], addr: Addr) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_epi8, _mm_packs_epi16,
        _mm_packs_epi32, _mm_set1_epi64x, _mm_setzero_si128, _mm_srli_epi64, _mm_sub_epi64,
    };
    // SAFETY: SSE2 is part of the x86_64 baseline; the four unaligned
    // 16-byte loads read exactly the 64 bytes of `values`.
    unsafe {
        let a = _mm_set1_epi64x(addr as i64);
        let zero = _mm_setzero_si128();
        let p = values.as_ptr() as *const __m128i;
        // Per 32-bit half: all ones where (addr - v) >> shift is 0 there.
        let z = |k: usize| {
            let d = _mm_sub_epi64(a, _mm_loadu_si128(p.add(k)));
            _mm_cmpeq_epi32(_mm_srli_epi64::<SPAN_SHIFT>(d), zero)
        };
        // Saturating packs keep all-ones/zero: byte 2i and 2i+1 are slot
        // i's low and high halves.
        let halves = _mm_packs_epi16(_mm_packs_epi32(z(0), z(1)), _mm_packs_epi32(z(2), z(3)));
        let m = _mm_movemask_epi8(halves) as u32;
        // A slot matches when both halves of its difference are zero.
        m & (m >> 1) & 0x5555
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn match_mask(values: &[Addr; DEP_PTRS], addr: Addr) -> u32 {
    match_mask_portable(values, addr)
}

/// [`match_mask`] without SIMD: the other targets' version, and on x86_64
/// the tests' reference for the SSE2 one.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn match_mask_portable(values: &[Addr; DEP_PTRS], addr: Addr) -> u32 {
    let mut m = 0;
    for (i, &v) in values.iter().enumerate() {
        m |= u32::from(addr.wrapping_sub(v) < DEP_SPAN_BYTES) << (2 * i);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The scan `DepRing` replaced: newest first over the entries pushed.
    struct ScanRing {
        value: [Addr; DEP_PTRS],
        seq: [u32; DEP_PTRS],
        len: usize,
        next: usize,
    }

    impl ScanRing {
        fn push(&mut self, value: Addr, seq: u32) {
            self.value[self.next] = value;
            self.seq[self.next] = seq;
            self.next = (self.next + 1) & (DEP_PTRS - 1);
            self.len = (self.len + 1).min(DEP_PTRS);
        }
        fn dep(&self, addr: Addr, load_seq: u32) -> u8 {
            let mut i = self.next;
            for _ in 0..self.len {
                i = i.wrapping_sub(1) & (DEP_PTRS - 1);
                if addr.wrapping_sub(self.value[i]) < DEP_SPAN_BYTES {
                    let d = load_seq - self.seq[i];
                    return if d <= u8::MAX as u32 { d as u8 } else { 0 };
                }
            }
            0
        }
    }

    /// (is a pointer push, value or address, loads elapsed before it).
    fn step() -> impl Strategy<Value = (bool, u64, u32)> {
        // Values from a few pages so spans overlap often, plus the top of
        // the address space and 0 (the sentinel's and the old zero fill's
        // neighbourhoods).
        let v = prop_oneof![
            (0u64..4, 0u64..8192).prop_map(|(p, o)| (1 << 20) + p * 4096 + o),
            Just(0u64),
            (0u64..8192).prop_map(|o| 0u64.wrapping_sub(o)),
            any::<u64>(),
        ];
        (any::<bool>(), v, prop_oneof![Just(1u32), 0u32..400])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Same answer as the newest-first scan for every lookup of any
        /// push/lookup sequence (matches at any age, duplicate pointers,
        /// distances past 255).
        #[test]
        fn dep_ring_matches_the_scan(steps in proptest::collection::vec(step(), 1..200)) {
            let mut fast = DepRing::new();
            let mut scan = ScanRing { value: [0; DEP_PTRS], seq: [0; DEP_PTRS], len: 0, next: 0 };
            let mut seq = 0u32;
            for (is_push, x, gap) in steps {
                seq += gap;
                if is_push {
                    let v = x & !63;
                    fast.push(v, seq);
                    scan.push(v, seq);
                } else {
                    let addr = x & !7;
                    if addr.wrapping_sub(NO_PTR) < DEP_SPAN_BYTES {
                        continue; // the sentinel's span: never loaded
                    }
                    prop_assert_eq!(fast.dep(addr, seq + 1), scan.dep(addr, seq + 1));
                }
            }
        }

        /// The SIMD mask (x86_64) equals the portable loop that other
        /// targets build, so a ring behaves the same on every host.
        #[test]
        fn match_mask_equals_the_portable_loop(
            values in proptest::array::uniform8(step().prop_map(|(_, v, _)| v & !63)),
            addr in step().prop_map(|(_, x, _)| x),
            (slot, high, low) in (0usize..DEP_PTRS, 0u64..4, 0u64..8192),
        ) {
            prop_assert_eq!(match_mask(&values, addr), match_mask_portable(&values, addr));
            // Near a value, plus 0-3 times 2^(32 + shift): a difference
            // whose shifted low 32-bit half alone is zero must not match.
            let near = values[slot]
                .wrapping_add(high << (32 + SPAN_SHIFT))
                .wrapping_add(low);
            prop_assert_eq!(match_mask(&values, near), match_mask_portable(&values, near));
            for v in values {
                // Each value's own span start must match its slot.
                let m = match_mask(&values, v);
                prop_assert!(m != 0);
            }
        }
    }

    #[test]
    fn newest_of_several_matches_wins() {
        let mut r = DepRing::new();
        r.push(0x10000, 1);
        r.push(0x10040, 3);
        r.push(0x90000, 5);
        // 0x10080 lies in both first spans: the newer (seq 3) wins.
        assert_eq!(r.dep(0x10080, 10), 7);
        assert_eq!(r.dep(0x90008, 10), 5);
        assert_eq!(r.dep(0x50000, 10), 0);
        // Far back: not encodable.
        assert_eq!(r.dep(0x10080, 3 + 256), 0);
        assert_eq!(r.dep(0x10080, 3 + 255), 255);
    }
}
