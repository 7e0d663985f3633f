//! The transactional driver's worker: the crash points of one chunk
//! checked in order, the oracle brought over the events between them, each
//! image recovered by resuming the worker's scan ([`super::resume`]) or
//! from scratch ([`super::check`]).

use super::check::check_scratch;
use super::history::background_range_of;
use super::oracle::Oracle;
use super::points;
use super::resume::{check_resumed, same_as_resumed};
use super::worker::{Scratch, Shared, Tally, Worker};
use std::time::Instant;

/// Check the crash points `pts` (ascending) in order.
pub(super) fn check_chunk(
    sh: &Shared,
    pts: &[u64],
    initial: crate::mem::SparseImage,
    done: &mut std::sync::mpsc::Sender<u64>,
) -> Tally {
    let mut w = Worker {
        oracle: Oracle::from_parts(
            sh.layout,
            sh.tx_writes,
            sh.per_thread,
            initial,
            sh.info.durability,
            sh.log.marks(),
        ),
        scratch: Scratch::default(),
        memo: None,
        undo: Vec::new(),
        fast: None,
        fast_off: false,
    };
    let mut tally = Tally {
        verdicts: Vec::with_capacity(pts.len()),
        ..Tally::default()
    };
    for &k in pts {
        let pass_start = Instant::now();
        if w.fast
            .as_mut()
            .is_some_and(|f| !f.follow_events(sh.events, k))
        {
            w.fast = None;
            w.oracle.view_drop();
        }
        w.oracle.advance(k, sh.log);
        let point_start = Instant::now();
        tally.history_s += (point_start - pass_start).as_secs_f64();
        if sh.single_mask.is_none() {
            tally.tested += 1;
            count_background(sh, &mut tally, k, false);
            let ok = check_image(sh, &mut w, &mut tally, k, None);
            if !ok {
                tally.clean += 1;
            }
            tally.verdicts.push((k, None, ok));
        }
        if let Some(m) = tear_mask(sh, k) {
            let ev = &sh.events[k as usize];
            let mut undo = std::mem::take(&mut w.undo);
            undo.clear();
            w.oracle.persist(ev.addr, sh.log.data(ev), m, &mut undo);
            tally.tested += 1;
            tally.torn_tested += 1;
            count_background(sh, &mut tally, k, true);
            let ok = check_image(sh, &mut w, &mut tally, k, Some(m));
            if !ok {
                tally.torn += 1;
            }
            tally.verdicts.push((k, Some(m), ok));
            w.oracle.undo(&undo);
            w.undo = undo;
        }
        tally.point_s += point_start.elapsed().as_secs_f64();
        // Every point: slow recoveries make 1,024 points take ~20 s, and the
        // message is cheap next to one recovery.
        let _ = done.send(1);
    }
    tally
}

/// The tear mask of the torn image at point `k`, if one is checked: the
/// single point's given mask, or with `torn` a seeded one (none at the
/// last point, where no write is in flight).
fn tear_mask(sh: &Shared, k: u64) -> Option<u8> {
    if k >= sh.n {
        return None;
    }
    sh.single_mask.or_else(|| {
        sh.opts
            .torn
            .then(|| {
                points::tear_mask(
                    sh.spec.seed,
                    k,
                    points::covered_words(&sh.events[k as usize]),
                )
            })
            .flatten()
    })
}

/// Count a crash image at point `k` (`torn`: with event `k` in flight)
/// that falls inside background work, by kind.
fn count_background(sh: &Shared, tally: &mut Tally, k: u64, torn: bool) {
    if let Some(i) = background_range_of(sh.background, k, torn) {
        tally.bg_tested += 1;
        if let Some(&kind) = sh.background_kinds.get(i) {
            *tally.bg_by_kind.entry(kind).or_default() += 1;
        }
    }
}

/// Recover one crash image (the worker's oracle image, with the write in
/// flight torn by `mask`) and check it; returns whether it passed.
fn check_image(sh: &Shared, w: &mut Worker, tally: &mut Tally, k: u64, mask: Option<u8>) -> bool {
    if mask.is_none() && sh.resume.is_some() && !w.fast_off {
        if !sh.opts.verify_resume {
            if let Some(ok) = check_resumed(sh, w, tally, k) {
                return ok;
            }
        } else {
            // Both paths on fresh tallies, compared, then merged.
            let mut fast = Tally::default();
            if let Some(ok) = check_resumed(sh, w, &mut fast, k) {
                let mut scratch = Tally::default();
                let ok2 = check_scratch(sh, w, &mut scratch, k, None);
                w.memo = None;
                let same = ok == ok2
                    && fast.first == scratch.first
                    && fast.recovery_crashes == scratch.recovery_crashes
                    && fast.recovery_crash == scratch.recovery_crash
                    && fast.rec.same_output(&scratch.rec)
                    && same_as_resumed(sh, w);
                if !same {
                    tally.resume_mismatches += 1;
                }
                // Merging keeps an earlier first violation.
                tally.merge(fast);
                return ok;
            }
        }
    }
    check_scratch(sh, w, tally, k, mask)
}
