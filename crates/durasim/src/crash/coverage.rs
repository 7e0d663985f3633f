//! Which recovery paths a crash test reached: for every path a scheme
//! declares (`Scheme::recovery_paths`), how often the run took it and how
//! many of the tested crash points fell in it. A declared path with no
//! point is a path recovery was never checked on.

use crate::mem::PathWindow;
use std::ops::Range;

/// One declared path's coverage in a crash test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathCoverage {
    pub name: &'static str,
    /// Times the run took the path (windows of persist events), and the
    /// persist events inside them.
    pub windows: u64,
    pub persist_events: u64,
    /// Tested crash points that fell in the path: a point `k` (the first
    /// `k` events durable) with `start < k <= end` holds some or all of
    /// the path's writes and none after them.
    pub points_tested: u64,
}

/// Coverage of each `declared` path. A declared name is either a path the
/// scheme marks ([`PathWindow`]s) or a kind of its background work
/// (`background` ranges with `background_kinds`), counted the same way.
/// `selected` are the tested (untorn) crash points, ascending.
pub fn coverage(
    declared: &[&'static str],
    windows: &[PathWindow],
    background: &[Range<u64>],
    background_kinds: &[&'static str],
    selected: &[u64],
) -> Vec<PathCoverage> {
    declared
        .iter()
        .map(|&name| {
            let ranges: Vec<Range<u64>> = windows
                .iter()
                .filter(|w| w.name == name)
                .map(|w| w.start..w.end)
                .chain(
                    background
                        .iter()
                        .zip(background_kinds)
                        .filter(|(_, &k)| k == name)
                        .map(|(r, _)| r.clone()),
                )
                .collect();
            PathCoverage {
                name,
                windows: ranges.len() as u64,
                persist_events: ranges.iter().map(|r| r.end - r.start).sum(),
                points_tested: points_in(&ranges, selected),
            }
        })
        .collect()
}

/// Selected points `k` with `start < k <= end` for some range (a point in
/// two overlapping ranges counts once).
fn points_in(ranges: &[Range<u64>], selected: &[u64]) -> u64 {
    let mut spans: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start + 1, r.end)).collect();
    spans.sort_unstable();
    let mut n = 0;
    let mut covered_to = 0; // points below this are counted already
    for (lo, hi) in spans {
        let lo = lo.max(covered_to);
        if lo > hi {
            continue;
        }
        let a = selected.partition_point(|&k| k < lo);
        let b = selected.partition_point(|&k| k <= hi);
        n += (b - a) as u64;
        covered_to = hi + 1;
    }
    n
}

/// The declared paths that got no crash point.
pub fn uncovered(cov: &[PathCoverage]) -> Vec<&'static str> {
    cov.iter()
        .filter(|c| c.points_tested == 0)
        .map(|c| c.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(name: &'static str, start: u64, end: u64) -> PathWindow {
        PathWindow { name, start, end }
    }

    #[test]
    fn points_fall_in_a_path_from_its_first_write_to_its_last() {
        // Window 10..13: events 10, 11, 12; points 11, 12, 13 hold some or
        // all of them and nothing later; 10 holds none, 14 holds event 13.
        let sel: Vec<u64> = (0..20).collect();
        let c = coverage(&["wrap"], &[w("wrap", 10, 13)], &[], &[], &sel);
        assert_eq!(c[0].windows, 1);
        assert_eq!(c[0].persist_events, 3);
        assert_eq!(c[0].points_tested, 3);
        // Sampled points that miss it leave it uncovered.
        let c = coverage(&["wrap"], &[w("wrap", 10, 13)], &[], &[], &[0, 5, 10, 14]);
        assert_eq!(c[0].points_tested, 0);
        assert_eq!(uncovered(&c), vec!["wrap"]);
    }

    #[test]
    fn background_kinds_count_as_paths_and_overlaps_count_once() {
        let sel: Vec<u64> = (0..30).collect();
        let bg = [2..5, 20..22];
        let kinds = ["gc", "checkpoint"];
        let wins = [w("head", 3, 6), w("head", 4, 8), w("other", 0, 1)];
        let c = coverage(&["gc", "head", "never"], &wins, &bg, &kinds, &sel);
        assert_eq!(
            (c[0].windows, c[0].persist_events, c[0].points_tested),
            (1, 3, 3)
        );
        // head: 4..=6 and 5..=8 overlap: points 4..=8, five of them.
        assert_eq!((c[1].windows, c[1].points_tested), (2, 5));
        assert_eq!((c[2].windows, c[2].points_tested), (0, 0));
        assert_eq!(uncovered(&c), vec!["never"]);
    }
}
