//! Which crash points to test, tear masks for torn writes, and which of
//! recovery's own persist points to crash at. Every choice is a pure function
//! of (seed, point), so a replay of a single point draws exactly what the
//! exhaustive or sampled run drew there.

use crate::error::{Error, Result};
use crate::mem::PersistEvent;
use crate::types::{LINE_BYTES, WORD_BYTES};
use rand::seq::index;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Crash-point selection mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PointSel {
    /// Every point `0..=events`.
    All,
    /// `n` distinct points drawn from a seeded RNG (all if `n` exceeds them).
    Sampled(u64),
    /// One point, optionally with an explicit tear mask (replay).
    Single { point: u64, tear_mask: Option<u8> },
}

/// Parse `--points all|N`.
pub fn parse_points(raw: &str) -> Result<PointSel> {
    let raw = raw.trim();
    if raw.eq_ignore_ascii_case("all") {
        return Ok(PointSel::All);
    }
    match raw.replace('_', "").parse::<u64>() {
        Ok(n) if n > 0 => Ok(PointSel::Sampled(n)),
        _ => Err(Error::input(format!(
            "invalid value '{raw}' for '--points': expected 'all' or a positive integer"
        ))),
    }
}

/// Parse a tear mask given as decimal or `0x..` hex (one bit per 8-byte word
/// of the 64 B line, bit i = word i).
pub fn parse_tear_mask(raw: &str) -> Result<u8> {
    let t = raw.trim();
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u8::from_str_radix(h, 16).ok()
    } else {
        t.parse::<u8>().ok()
    };
    v.ok_or_else(|| {
        Error::input(format!(
            "invalid value '{raw}' for '--tear-mask': expected a byte (0..=255 or 0x00..=0xff), one bit per 8-byte word of the line"
        ))
    })
}

const SALT_POINTS: u64 = 0x6372_6173_6870_7473; // "crashpts"
const SALT_TEAR: u64 = 0x7465_6172_6d61_736b; // "tearmask"
const SALT_RECOVERY: u64 = 0x7265_636f_7665_7279; // "recovery"

fn rng_for(seed: u64, salt: u64, point: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(
        seed ^ salt ^ point.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17),
    )
}

/// The crash points to test, ascending, for a run with `events` persist
/// events (points `0..=events`).
pub fn select(sel: &PointSel, events: u64, seed: u64) -> Result<Vec<u64>> {
    let total = events + 1;
    match *sel {
        PointSel::All => Ok((0..total).collect()),
        PointSel::Sampled(n) if n >= total => Ok((0..total).collect()),
        PointSel::Sampled(n) => {
            let mut rng = rng_for(seed, SALT_POINTS, 0);
            let mut v: Vec<u64> = index::sample(&mut rng, total as usize, n as usize)
                .into_iter()
                .map(|i| i as u64)
                .collect();
            v.sort_unstable();
            Ok(v)
        }
        PointSel::Single { point, .. } if point > events => Err(Error::input(format!(
            "invalid value '{point}' for '--crash-at': this run has {events} persist events, so valid crash points are 0..={events}"
        ))),
        PointSel::Single { point, .. } => Ok(vec![point]),
    }
}

/// Bits (one per 8-byte word of the 64 B line) that a persist event covers.
pub fn covered_words(ev: &PersistEvent) -> u8 {
    let off = ev.addr % LINE_BYTES;
    if ev.len == 0 {
        return 0;
    }
    let first = off / WORD_BYTES;
    let last = (off + ev.len as u64 - 1) / WORD_BYTES;
    (first..=last).fold(0u8, |m, w| m | (1 << w))
}

/// Seeded tear mask for the event in flight at `point`: a non-empty proper
/// subset of the words it covers, or `None` when it covers one word (8-byte
/// writes are assumed atomic, as on real hardware).
pub fn tear_mask(seed: u64, point: u64, covered: u8) -> Option<u8> {
    if covered.count_ones() < 2 {
        return None;
    }
    let mut rng = rng_for(seed, SALT_TEAR, point);
    loop {
        let m = rng.gen::<u8>() & covered;
        if m != 0 && m != covered {
            return Some(m);
        }
    }
}

/// Crash points inside a recovery that issued `writes` persist points:
/// `m` in `1..=writes` means "the first m recovery writes persisted" (`m ==
/// writes`: crash right after recovery finished). At most `limit`, seeded.
pub fn recovery_points(seed: u64, point: u64, writes: usize, limit: u64) -> Vec<usize> {
    if writes == 0 || limit == 0 {
        return Vec::new();
    }
    if limit >= writes as u64 {
        return (1..=writes).collect();
    }
    let mut rng = rng_for(seed, SALT_RECOVERY, point);
    let mut v: Vec<usize> = index::sample(&mut rng, writes, limit as usize)
        .into_iter()
        .map(|i| i + 1)
        .collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_points_are_seeded_sorted_distinct() {
        let a = select(&PointSel::Sampled(50), 10_000, 7).unwrap();
        let b = select(&PointSel::Sampled(50), 10_000, 7).unwrap();
        let c = select(&PointSel::Sampled(50), 10_000, 8).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 50);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|&p| p <= 10_000));
        assert_eq!(select(&PointSel::Sampled(50), 9, 1).unwrap().len(), 10);
    }

    #[test]
    fn crash_at_out_of_range_is_input_error() {
        let e = select(
            &PointSel::Single {
                point: 11,
                tear_mask: None,
            },
            10,
            1,
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("0..=10"));
    }

    #[test]
    fn tear_masks_are_proper_subsets() {
        let ev = PersistEvent {
            addr: 64 * 3,
            len: 64,
            data_off: 0,
            at: 0,
        };
        assert_eq!(covered_words(&ev), 0xff);
        for p in 0..200 {
            let m = tear_mask(1, p, 0xff).unwrap();
            assert!(m != 0 && m != 0xff);
            assert_eq!(Some(m), tear_mask(1, p, 0xff));
        }
        let one = PersistEvent {
            addr: 64 * 3 + 16,
            len: 8,
            data_off: 0,
            at: 0,
        };
        assert_eq!(covered_words(&one), 0b100);
        assert_eq!(tear_mask(1, 0, covered_words(&one)), None);
        assert!(parse_points("0").is_err());
        assert_eq!(parse_points("ALL").unwrap(), PointSel::All);
        assert_eq!(parse_tear_mask("0x0f").unwrap(), 15);
        assert!(parse_tear_mask("256").is_err());
    }

    #[test]
    fn recovery_points_cover_or_sample() {
        assert_eq!(recovery_points(1, 5, 3, 10), vec![1, 2, 3]);
        let s = recovery_points(1, 5, 100, 4);
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|&m| (1..=100).contains(&m)));
        assert!(recovery_points(1, 5, 0, 4).is_empty());
    }
}
