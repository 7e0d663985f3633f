//! The epoch oracle's check of one crash image: recovered (or its kept
//! recovery taken), then its CPU contexts, its memory and its crashed
//! re-runs compared with the checkpoint it must restore.

use super::super::memo::ReadSet;
use super::super::options::replay_line;
use super::super::oracle::RecView;
use super::super::points;
use super::super::recorder::{self, first_difference, guarded, Fresh, Recorder};
use super::super::report::{torn_note, Violation, ViolationKind};
use super::oracle::EpochOracle;
use super::shared::{EpochShared, EpochTally};
use crate::mem::{MemRead, MemWrite, Overlay, SparseImage};
use crate::recovery::writes::Writes;
use crate::recovery::RecoveryReport;
use crate::schemes::checkpoint::CoreContext;
use crate::types::{Addr, LINE_BYTES, WORD_BYTES};
use rustc_hash::FxHashSet;
use std::borrow::Cow;

/// One crash image to check: point `k` (with the write in flight torn by
/// `mask`), to be recovered to checkpoint `epoch` with contexts `want_ctx`.
pub(super) struct Point<'a> {
    pub(super) want_ctx: &'a [CoreContext],
    pub(super) epoch: usize,
    pub(super) k: u64,
    pub(super) mask: Option<u8>,
}

impl Point<'_> {
    /// A violation at this point; `at`: the word (address, expected,
    /// found).
    fn violation(
        &self,
        sh: &EpochShared,
        kind: ViolationKind,
        thread: Option<usize>,
        at: Option<(Addr, u64, u64)>,
        message: String,
    ) -> Violation {
        Violation {
            thread,
            addr: at.map(|x| x.0),
            expected: at.map(|x| x.1),
            found: at.map(|x| x.2),
            ..Violation::plain(
                kind,
                self.k,
                self.mask,
                message,
                replay_line(sh.spec, sh.opts, self.k, self.mask),
            )
        }
    }
}

/// What a passing untorn point recovered from scratch offers to keep:
/// its reads, writes, bytes written and modelled time.
pub(super) type KeepOffer = (ReadSet, Writes, u64, f64);

/// Where the recovery a point is checked on lives while it is checked
/// ([`Recovered`] borrows it): from scratch on an overlay, from scratch on
/// a clone of the crash image, or the kept recovery's writes.
#[derive(Default)]
struct Slots<'o> {
    scratch: Option<(Recorder<Overlay<'o, SparseImage>>, ReadSet, RecoveryReport)>,
    whole: Option<(Recorder<SparseImage>, ReadSet, RecoveryReport)>,
    kept_writes: Option<Cow<'o, Writes>>,
}

/// The recovery a point is checked on: the recovered image, the words
/// recovery wrote (sorted), its writes and their number, the re-runs
/// proven identical (crash/war.rs), and the kept recovered image when it
/// is the kept recovery.
struct Recovered<'s> {
    img: &'s dyn MemRead,
    written: &'s [Addr],
    writes: &'s Writes,
    n_writes: usize,
    proven: usize,
    view: Option<&'s RecView>,
}

/// Recover one crash image and compare it (memory and contexts) with
/// checkpoint `epoch`; the violation if any. `kept`: use the oracle's kept
/// recovery instead of recovering (untorn points only).
pub(super) fn check_point(
    sh: &EpochShared,
    o: &EpochOracle,
    pt: &Point,
    t: &mut EpochTally,
    kept: bool,
) -> (Option<Violation>, Option<KeepOffer>) {
    let mut slots = Slots::default();
    let rc = match recovered(sh, o, t, kept, &mut slots) {
        Ok(rc) => rc,
        Err(e) => {
            let msg = format!(
                "crash point {}{}: recovery failed: {e}",
                pt.k,
                torn_note(pt.mask)
            );
            let v = pt.violation(sh, ViolationKind::RecoveryError, None, None, msg);
            return (Some(v), None);
        }
    };
    let v = check_contexts(sh, pt, rc.img)
        .or_else(|| check_memory(sh, o, pt, &rc))
        .or_else(|| check_reruns(sh, o, pt, t, &rc));
    if v.is_some() {
        return (v, None);
    }
    // A passing untorn point: its recovery can be kept.
    let offer = slots
        .scratch
        .filter(|_| pt.mask.is_none() && sh.opts.dedup_recoveries)
        .map(|(rec, reads, report)| (reads, rec.writes, report.bytes_written, report.modeled_ns));
    (None, offer)
}

/// The recovery of the oracle's crash image, stored in `slots`: the kept
/// one (`kept`, if any) or one from scratch (its error message if it
/// failed).
fn recovered<'s, 'o: 's>(
    sh: &EpochShared,
    o: &'o EpochOracle,
    t: &mut EpochTally,
    kept: bool,
    slots: &'s mut Slots<'o>,
) -> Result<Recovered<'s>, String> {
    let (info, opts, params, layout) = (sh.info, sh.opts, sh.params, sh.layout);
    if let Some(kp) = o.kept.as_ref().filter(|_| kept) {
        t.rec.add(kp.bytes_written, kp.modeled_ns);
        // The writes themselves are needed only to run re-runs that are
        // proven (verify_dedup).
        let kw: &'s Cow<'o, Writes> = slots.kept_writes.insert(if opts.verify_dedup {
            kp.writes()
        } else {
            Cow::Owned(Writes::default())
        });
        // Every re-run proven (recovery wrote no byte it read, or it
        // copies home).
        return Ok(Recovered {
            img: &kp.view.img,
            written: &kw.words,
            writes: kw,
            n_writes: kp.pieces(),
            proven: usize::MAX,
            view: Some(&kp.view),
        });
    }
    if o.pending.is_empty() {
        let fresh = recorder::recover_from_scratch(info, params, layout, &o.cur, opts)?;
        Ok(fresh_parts(sh, t, fresh, &mut slots.scratch))
    } else {
        // A checkpoint just advanced: recovery restores all of it
        // (ckpt-cow copies its whole footprint home). On a
        // copy-on-write clone of the crash image its reads and
        // writes cost a page-cache access, not an overlay's two
        // hash lookups per line; nothing is kept at this point
        // (the chunk's last), so its reads are not offered. A
        // scheme that copies home proves its re-runs without the
        // read trace ([`EpochShared::reruns_repeat`]; if not, all of them
        // run).
        let img = o.cur.clone();
        let track = !sh.copies_home;
        let fresh = recorder::recover_on(info, params, layout, img, opts, track)?;
        Ok(fresh_parts(sh, t, fresh, &mut slots.whole))
    }
}

/// A recovery from scratch of a checked point: its counts added to `t`,
/// its writes' words sorted, it stored in `slot` and its parts borrowed.
fn fresh_parts<'s, W: MemWrite + 's>(
    sh: &EpochShared,
    t: &mut EpochTally,
    fresh: Fresh<W>,
    slot: &'s mut Option<(Recorder<W>, ReadSet, RecoveryReport)>,
) -> Recovered<'s> {
    let Fresh {
        mut rec,
        reads,
        proven,
        report,
    } = fresh;
    t.rec.add(report.bytes_written, report.modeled_ns);
    let proven = if sh.opts.dedup_recoveries && sh.reruns_repeat(&rec.writes) {
        usize::MAX
    } else {
        proven
    };
    rec.words_sorted();
    let rec = &slot.insert((rec, reads, report)).0;
    Recovered {
        img: rec,
        written: &rec.writes.words,
        writes: &rec.writes,
        n_writes: rec.writes(),
        proven,
        view: None,
    }
}

/// The recovered CPU contexts (read through `SchemeInfo::contexts`, if the
/// scheme has them) against those of checkpoint `pt.epoch`.
fn check_contexts(sh: &EpochShared, pt: &Point, img: &dyn MemRead) -> Option<Violation> {
    let read = sh.reader?;
    let (k, epoch, want_ctx) = (pt.k, pt.epoch, pt.want_ctx);
    let torn_note = torn_note(pt.mask);
    match read(img, sh.params, sh.layout) {
        Ok(got) if got == want_ctx => None,
        Ok(got) => {
            let c = (0..got.len().min(want_ctx.len()))
                .find(|&c| got[c] != want_ctx[c])
                .unwrap_or(0);
            Some(pt.violation(
                sh,
                ViolationKind::Oracle,
                Some(c),
                None,
                format!(
                    "crash point {k}{torn_note}: recovered CPU context of core {c} is not that of checkpoint {epoch}: expected {:?}, found {:?}",
                    want_ctx.get(c),
                    got.get(c)
                ),
            ))
        }
        Err(e) => Some(pt.violation(
            sh,
            ViolationKind::RecoveryError,
            None,
            None,
            format!("crash point {k}{torn_note}: recovered CPU contexts unreadable: {e}"),
        )),
    }
}

/// The recovered memory against the image of checkpoint `pt.epoch`: per
/// thread, the lowest word that differs.
fn check_memory(
    sh: &EpochShared,
    o: &EpochOracle,
    pt: &Point,
    rc: &Recovered,
) -> Option<Violation> {
    let layout = sh.layout;
    let (img, written) = (rc.img, rc.written);
    let pending_min = pending_differences(sh, o, rc);
    for th in 0..layout.threads {
        let region = layout.thread_base(th)..layout.thread_base(th) + layout.thread_region_bytes;
        // Words that can differ: the crash image's delta and recovery's
        // writes (and the stores an advance left pending), or the kept
        // image's delta (which covers its writes).
        let (delta, w): (&FxHashSet<Addr>, &[Addr]) = match rc.view {
            Some(view) => (view.delta(th), &[]),
            None => {
                let w0 = written.partition_point(|&a| a < region.start);
                let w1 = written.partition_point(|&a| a < region.end);
                (&o.delta[th], &written[w0..w1])
            }
        };
        // The lowest differing word (what sorting the candidates and
        // taking the first would report), without sorting them: the delta
        // holds the whole epoch's dirty words at every point.
        let in_delta = delta
            .iter()
            .filter_map(|&a| {
                let (want, got) = (o.expected_word(a), img.read_u64(a));
                (want != got).then_some((a, want, got))
            })
            .min_by_key(|d| d.0);
        // Recovery's writes, whole lines in address order: the first
        // difference is their lowest. Words of those lines outside the
        // candidates are equal in both images (neither written nor in the
        // delta), so comparing them changes nothing but costs two line
        // reads instead of two per word.
        let in_lines = first_line_difference(&o.expected, img, w, &region)
            .into_iter()
            .chain(pending_min.get(th).copied().flatten())
            .min_by_key(|d| d.0);
        if let Some((a, want, got)) = match (in_delta, in_lines) {
            (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
            (x, y) => x.or(y),
        } {
            let (k, epoch) = (pt.k, pt.epoch);
            let torn_note = torn_note(pt.mask);
            // What the word is, as the checkpoint's image lays it out.
            let place = crate::workloads::find(&sh.spec.workload).map_or_else(
                |_| "structure unknown".to_string(),
                |info| {
                    crate::workloads::labels::describe_word(
                        info.describe,
                        &o.expected,
                        layout.thread_base(th),
                        sh.params.u64("workload.item_bytes"),
                        a,
                    )
                },
            );
            return Some(pt.violation(
                sh,
                ViolationKind::Oracle,
                Some(th),
                Some((a, want, got)),
                format!(
                    "crash point {k}{torn_note}: thread {th}'s recovered memory is not the image of checkpoint {epoch} ({} of its stores): at {a:#x} ({place}) expected {want:#018x}, found {got:#018x}",
                    o.base[th]
                ),
            ));
        }
    }
    None
}

/// The lowest difference per thread in the lines of the stores an advance
/// left pending (in store order: a line is compared again only if another
/// line's stores came between); empty if none are (or the recovery is the
/// kept one).
fn pending_differences(
    sh: &EpochShared,
    o: &EpochOracle,
    rc: &Recovered,
) -> Vec<Option<(Addr, u64, u64)>> {
    let mut pending_min: Vec<Option<(Addr, u64, u64)>> = Vec::new();
    if rc.view.is_some() || o.pending.is_empty() {
        return pending_min;
    }
    let layout = sh.layout;
    pending_min.resize(layout.threads, None);
    // Lines compared once: recovery's (compared by the caller) and each
    // pending one (a set lookup costs less than a line comparison).
    let mut seen = FxHashSet::default();
    let mut prev = Addr::MAX;
    for &a in rc.written {
        let line = a & !(LINE_BYTES - 1);
        if line != prev {
            prev = line;
            seen.insert(line);
        }
    }
    for stores in o.pending_stores() {
        let mut prev = Addr::MAX;
        for &(a, _) in stores {
            let line = a & !(LINE_BYTES - 1);
            if line != prev {
                prev = line;
                if !seen.insert(line) {
                    continue;
                }
                for_each_line_difference(&o.expected, rc.img, line, |d| {
                    if let Some(rt) = layout.thread_of(d.0) {
                        let m = &mut pending_min[rt];
                        if m.is_none_or(|x| d.0 < x.0) {
                            *m = Some(d);
                        }
                    }
                });
            }
        }
    }
    pending_min
}

/// Crash the recovery at its seeded points and recover again: the home
/// image must match the uninterrupted recovery. Re-runs proven identical
/// are counted, and run anyway only with `verify_dedup`.
fn check_reruns(
    sh: &EpochShared,
    o: &EpochOracle,
    pt: &Point,
    t: &mut EpochTally,
    rc: &Recovered,
) -> Option<Violation> {
    let (info, opts, params, layout) = (sh.info, sh.opts, sh.params, sh.layout);
    let (k, mask) = (pt.k, pt.mask);
    let (img, written, n_writes, proven) = (rc.img, rc.written, rc.n_writes, rc.proven);
    let key = k.wrapping_mul(2) + u64::from(mask.is_some());
    for m in points::recovery_points(sh.spec.seed, key, n_writes, opts.recovery_crashes) {
        t.rec_crashes += 1;
        if m <= proven {
            t.counts.elided += 1;
            if !opts.verify_dedup {
                continue;
            }
        }
        let mut ov = Overlay::new(&o.cur);
        rc.writes.replay_onto(m, &mut ov);
        let mut rec2 = Recorder::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        if m <= proven {
            // verify_dedup: the elided re-run must give the same image.
            let same = res.is_ok() && {
                let w2 = rec2.words_sorted().to_vec();
                first_difference(img, written, &rec2, &w2, Addr::MAX).is_none()
            };
            t.counts.mismatches += u64::from(!same);
            continue;
        }
        let diff = match res {
            Err(e) => Some((None, format!("the second recovery failed: {e}"))),
            Ok(_) => {
                let w2 = rec2.words_sorted().to_vec();
                first_difference(img, written, &rec2, &w2, layout.home_limit)
            }
            .map(|d| {
                (
                    Some(d),
                    format!(
                        "home image differs from the uninterrupted recovery at {:#x}: expected {:#018x}, found {:#018x}",
                        d.0, d.1, d.2
                    ),
                )
            }),
        };
        if let Some((at, msg)) = diff {
            let torn_note = torn_note(mask);
            let mut v = pt.violation(
                sh,
                ViolationKind::RecoveryCrash,
                at.and_then(|d| layout.thread_of(d.0)),
                at,
                format!(
                    "crash point {k}{torn_note}, then a crash after {m} of recovery's {n_writes} writes: {msg}"
                ),
            );
            v.recovery_writes_persisted = Some(m);
            return Some(v);
        }
    }
    None
}

/// Call `f` with (address, expected, found) for each word of the line at
/// `line` where `img` differs from `expected`, in address order.
#[inline]
fn for_each_line_difference(
    expected: &SparseImage,
    img: &dyn MemRead,
    line: Addr,
    mut f: impl FnMut((Addr, u64, u64)),
) {
    let (mut want, mut got) = ([0u8; LINE_BYTES as usize], [0u8; LINE_BYTES as usize]);
    expected.read_bytes(line, &mut want);
    img.read_bytes(line, &mut got);
    if want == got {
        return;
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("a word"));
    for (k, (e, g)) in want.chunks(8).zip(got.chunks(8)).enumerate() {
        if e != g {
            f((line + k as u64 * WORD_BYTES, word(e), word(g)));
        }
    }
}

/// The lowest word of `region` where `img` differs from `expected` in
/// the lines of the sorted words `written`: (address, expected, found).
fn first_line_difference(
    expected: &SparseImage,
    img: &dyn MemRead,
    written: &[Addr],
    region: &std::ops::Range<Addr>,
) -> Option<(Addr, u64, u64)> {
    let mut prev = Addr::MAX;
    for &a in written {
        let line = a & !(LINE_BYTES - 1);
        if line == prev {
            continue;
        }
        prev = line;
        let mut first = None;
        for_each_line_difference(expected, img, line, |d| {
            if first.is_none() && region.contains(&d.0) {
                first = Some(d);
            }
        });
        if first.is_some() {
            return first;
        }
    }
    None
}
