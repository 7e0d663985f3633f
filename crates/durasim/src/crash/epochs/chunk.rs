//! The epoch oracle's worker: the crash points of one chunk checked in
//! order, the oracle brought over the events and checkpoints between
//! them, each untorn image checked on a kept recovery when one holds.

use super::super::points;
use super::super::recorder::{first_difference, guarded, Recorder, Tracked};
use super::super::report::{Violation, ViolationKind};
use super::check::{check_point, KeepOffer, Point};
use super::oracle::EpochOracle;
use super::shared::{EpochShared, EpochTally};
use crate::error::Result;
use crate::mem::{Overlay, SparseImage};
use crate::schemes::checkpoint::CoreContext;
use crate::types::Addr;
use std::time::Instant;

/// Check the crash points `pts` (ascending) in order.
pub(super) fn epoch_chunk(
    sh: &EpochShared,
    pts: &[u64],
    initial: &SparseImage,
    done: &mut std::sync::mpsc::Sender<u64>,
) -> Result<EpochTally> {
    let mut o = EpochOracle::new(sh.layout.clone(), sh.writes, sh.op_start, initial);
    let initial_ctx = vec![CoreContext::initial(); sh.layout.threads];
    let mut epoch = 0usize;
    let mut undo = Vec::new();
    let mut t = EpochTally::default();
    // Whether to recover and keep before checking (the last recovery from
    // scratch could be kept).
    let mut try_keep = true;
    let (records, events, log) = (sh.records, sh.events, sh.log);
    let last = pts.last();
    for &k in pts {
        let last_point = last == Some(&k);
        let pass_start = Instant::now();
        advance(sh, &mut o, &mut epoch, &mut undo, k, last_point)?;
        let point_start = Instant::now();
        t.history_s += (point_start - pass_start).as_secs_f64();
        let want_ctx = if epoch == 0 {
            &initial_ctx
        } else {
            &records[epoch - 1].contexts
        };
        // A replayed torn point (`--tear-mask`) checks that image alone,
        // as the transactional driver does.
        let mask = if k >= sh.n {
            None
        } else if sh.single_mask.is_some() {
            sh.single_mask
        } else if sh.opts.torn {
            points::tear_mask(sh.spec.seed, k, points::covered_words(&events[k as usize]))
        } else {
            None
        };
        let untorn = sh.single_mask.is_none().then_some(None);
        for m in untorn.into_iter().chain(mask.map(Some)) {
            undo.clear();
            if let Some(m) = m {
                let ev = &events[k as usize];
                o.persist(ev.addr, log.data(ev), m, &mut undo, false);
                t.torn_tested += 1;
            }
            t.tested += 1;
            let pt = Point {
                want_ctx,
                epoch,
                k,
                mask: m,
            };
            let v = check_image(sh, &mut o, &pt, &mut t, &mut try_keep, last_point);
            count_verdict(&mut t, k, m, v);
            if m.is_some() {
                o.undo(&undo);
            }
        }
        t.point_s += point_start.elapsed().as_secs_f64();
        let _ = done.send(1);
    }
    Ok(t)
}

/// The history pass up to point `k`: persist the events before it and
/// advance the expected image over the checkpoints committed by then
/// (`epoch` of them so far). `last_point`: `k` is the chunk's last point.
fn advance(
    sh: &EpochShared,
    o: &mut EpochOracle,
    epoch: &mut usize,
    undo: &mut Vec<(Addr, u64)>,
    k: u64,
    last_point: bool,
) -> Result<()> {
    let (records, events, log) = (sh.records, sh.events, sh.log);
    while o.applied < k {
        let ev = &events[o.applied as usize];
        undo.clear();
        o.persist(ev.addr, log.data(ev), 0xff, undo, true);
        o.applied += 1;
    }
    while *epoch < records.len() && records[*epoch].committed_seq <= k {
        // A stale kept image would follow every store of the epoch only
        // to have its writes swapped at the next recovery from scratch,
        // which can as well start a new one (the same image).
        if o.kept.as_ref().is_some_and(|kp| !kp.live()) {
            o.kept = None;
        }
        // The chunk's last point is checked once (no recovery kept
        // for later): its delta can be left pending.
        o.advance_to(&records[*epoch].contexts, last_point)?;
        *epoch += 1;
    }
    Ok(())
}

/// Check one crash image of point `pt.k` (untorn, or torn by `pt.mask`):
/// on the kept recovery when one holds (untorn), else from scratch,
/// keeping a passing untorn recovery for later points. `try_keep`: the
/// last recovery from scratch could be kept; `last_point`: `pt.k` is the
/// chunk's last point.
fn check_image(
    sh: &EpochShared,
    o: &mut EpochOracle,
    pt: &Point,
    t: &mut EpochTally,
    try_keep: &mut bool,
    last_point: bool,
) -> Option<Violation> {
    let m = pt.mask;
    prepare_kept(sh, o, m, try_keep, last_point);
    if m.is_none() && o.kept.is_some() {
        return check_on_kept(sh, o, pt, t);
    }
    let (v, keep) = check_point(sh, o, pt, t, false);
    match keep.filter(|_| sh.units.is_none() && !last_point) {
        Some((reads, writes, bw, ns)) => {
            let repeat = sh.reruns_repeat(&writes);
            o.keep(reads, writes, bw, ns, repeat);
            *try_keep = true;
        }
        None if m.is_none() => o.kept = None,
        None => {}
    }
    v
}

/// Before checking an image (torn by `m`, if any): bring a kept unit
/// recovery up to date (or recover by units), or recover from scratch
/// and keep it when that pays.
fn prepare_kept(
    sh: &EpochShared,
    o: &mut EpochOracle,
    m: Option<u8>,
    try_keep: &mut bool,
    last_point: bool,
) {
    if m.is_none() && sh.opts.dedup_recoveries {
        if let Some(new_units) = sh.units {
            // Bring the kept units up to date, or recover by units.
            if !o.update_units() || o.kept.is_none() {
                o.keep_units(new_units, sh.params);
            }
        }
    }
    let stale = o.kept.as_ref().is_some_and(|k| !k.live());
    let offer = m.is_none()
        && sh.units.is_none()
        && sh.opts.dedup_recoveries
        && (stale || (o.kept.is_none() && *try_keep));
    if offer && last_point {
        // No later point of the chunk would use a recovery kept
        // here: check this one from scratch (one recovery, and no
        // image built to be checked once).
        o.kept = None;
    } else if offer {
        // Recover from scratch and keep it before checking: a stale
        // image only swaps writes, a new one copies the crash
        // image's delta; either check then costs the words that
        // differ, not a comparison over the whole delta. A recovery
        // that cannot be kept is checked from scratch (and not
        // tried again until one could be kept).
        match recover_offer(sh, o) {
            Some((reads, writes, bw, ns)) => {
                let repeat = sh.reruns_repeat(&writes);
                o.keep(reads, writes, bw, ns, repeat)
            }
            None => o.kept = None,
        }
        *try_keep = o.kept.is_some();
    }
}

/// Check an untorn image on the oracle's kept recovery; with
/// `verify_dedup` also from scratch, counting any difference.
fn check_on_kept(
    sh: &EpochShared,
    o: &EpochOracle,
    pt: &Point,
    t: &mut EpochTally,
) -> Option<Violation> {
    if sh.units.is_some() {
        t.resumed += 1;
    } else {
        t.deduplicated += 1;
    }
    let v = check_point(sh, o, pt, t, true).0;
    if sh.opts.verify_dedup {
        // Differential: the same point from scratch must give
        // the same verdict and report (fresh counters).
        let (mut a, mut b) = (EpochTally::default(), EpochTally::default());
        check_point(sh, o, pt, &mut a, true);
        let vb = check_point(sh, o, pt, &mut b, false).0;
        let same = vb == v
            && a.rec_crashes == b.rec_crashes
            && a.counts.elided == b.counts.elided
            && a.rec.same_output(&b.rec)
            && b.counts.mismatches == 0
            && kept_matches_scratch(sh, o);
        t.counts.mismatches += u64::from(!same);
    }
    v
}

/// Count the verdict `v` of the image at point `k` (torn by `m`).
fn count_verdict(t: &mut EpochTally, k: u64, m: Option<u8>, v: Option<Violation>) {
    let ok = v.is_none();
    if let Some(v) = v {
        if v.kind == ViolationKind::RecoveryCrash {
            t.rec_crash_v += 1;
        }
        if m.is_some() {
            t.torn_v += 1;
        } else {
            t.clean += 1;
        }
        t.first.get_or_insert(v);
    }
    t.verdicts.push((k, m, ok));
}

/// Recover the current (untorn) crash image from scratch: what
/// [`EpochOracle::keep`] takes, if it succeeded (errors are left to
/// [`check_point`]).
fn recover_offer(sh: &EpochShared, o: &EpochOracle) -> Option<KeepOffer> {
    let mut tracked = Tracked::new(Overlay::new(&o.cur));
    let report = guarded(|| (sh.info.recover)(&mut tracked, sh.params, sh.layout)).ok()?;
    let (rec, reads, _) = tracked.into_parts();
    Some((reads, rec.writes, report.bytes_written, report.modeled_ns))
}

/// Whether recovering the current crash image from scratch writes what
/// the kept recovery holds: the same number of writes, digest and bytes,
/// and the same image wherever either wrote (verify_dedup).
fn kept_matches_scratch(sh: &EpochShared, o: &EpochOracle) -> bool {
    let Some(kp) = o.kept.as_ref() else {
        return false;
    };
    let mut rec = Recorder::new(Overlay::new(&o.cur));
    let Ok(rep) = guarded(|| (sh.info.recover)(&mut rec, sh.params, sh.layout)) else {
        return false;
    };
    let kw = kp.writes();
    let words = rec.words_sorted().to_vec();
    rec.writes() == kp.pieces()
        && rec.writes.digest() == kw.digest()
        && rep.bytes_written == kp.bytes_written
        && rep.modeled_ns == kp.modeled_ns
        && first_difference(&kp.view.img, &kw.words, &rec, &words, Addr::MAX).is_none()
}
