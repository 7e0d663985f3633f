//! The transactional driver's check of one crash image recovered from
//! scratch: reuse of an earlier point's recoveries ([`super::memo`]),
//! recovery and its crashed re-runs ([`super::war`] proves some identical
//! without running them), and the check of a recovered image against the
//! atomic-durability oracle and the workload's invariants.

use super::memo::Memo;
use super::options::replay_line;
use super::oracle::{Oracle, Recovered};
use super::points;
use super::recorder::{first_difference, guarded, recover_from_scratch, Fresh, Recorder, Tracked};
use super::report::{torn_note, Violation, ViolationKind};
use super::worker::{Scratch, Shared, Tally, Worker};
use crate::mem::{MemRead, MemWrite, Overlay, SparseImage};
use crate::recovery::writes::Writes;
use crate::recovery::RecoveryReport;
use crate::types::Addr;

/// A recovery crashed after `m` of its `total` writes and re-run: the
/// re-run's result and its recorded writes.
pub(super) struct Rerun<'r, W: MemWrite> {
    pub m: usize,
    pub total: usize,
    pub res: std::result::Result<RecoveryReport, String>,
    pub rec: &'r mut Recorder<W>,
}

/// The violation of the re-run `rerun` of a crashed recovery of point `k`,
/// compared with the uninterrupted recovery `first` (sorted words written
/// `first_words`; both images share a base, so only written words can
/// differ).
pub(super) fn rerun_violation<W: MemWrite>(
    sh: &Shared,
    oracle: &Oracle,
    k: u64,
    mask: Option<u8>,
    rerun: Rerun<'_, W>,
    first: &dyn MemRead,
    first_words: &[Addr],
) -> Option<Violation> {
    let Rerun {
        m,
        total,
        res,
        rec: rec2,
    } = rerun;
    let diff = match res {
        Err(e) => Some((None, format!("the second recovery failed: {e}"))),
        Ok(_) => {
            let w2 = rec2.words_sorted().to_vec();
            first_difference(first, first_words, rec2, &w2, sh.layout.home_limit).map(
                |(a, want, got)| {
                    (
                        Some((a, want, got)),
                        format!(
                            "home image differs from the uninterrupted recovery at {a:#x}: expected {want:#018x}, found {got:#018x}"
                        ),
                    )
                },
            )
        }
    };
    let (at, msg) = diff?;
    let torn_note = torn_note(mask);
    Some(Violation {
        kind: ViolationKind::RecoveryCrash,
        point: k,
        tear_mask: mask,
        recovery_writes_persisted: Some(m),
        thread: at.and_then(|(a, _, _)| oracle.thread_of(a)),
        addr: at.map(|x| x.0),
        expected: at.map(|x| x.1),
        found: at.map(|x| x.2),
        message: format!(
            "crash point {k}{torn_note}, then a crash after {m} of recovery's {total} writes: {msg}"
        ),
        replay: replay_line(sh.spec, sh.opts, k, mask),
    })
}

/// Recover one crash image from scratch and check it.
pub(super) fn check_scratch(
    sh: &Shared,
    w: &mut Worker,
    tally: &mut Tally,
    k: u64,
    mask: Option<u8>,
) -> bool {
    let memoize = sh.opts.dedup_recoveries && mask.is_none();
    let Worker {
        oracle,
        scratch,
        memo: memo_slot,
        ..
    } = w;
    let oracle: &Oracle = oracle;
    if !memoize {
        *memo_slot = None;
    }
    // A passing earlier point whose recoveries read nothing that changed
    // since: replay its writes instead of recovering again.
    if let Some(mut memo) = memo_slot.take() {
        if let Some(ok) = check_memoized(sh, oracle, scratch, tally, &mut memo, k, mask) {
            *memo_slot = Some(memo);
            return ok;
        }
    }
    let mut fresh = match recover_from_scratch(sh.info, sh.params, sh.layout, &oracle.cur, sh.opts)
    {
        Ok(f) => f,
        Err(e) => {
            tally.add(Violation::plain(
                ViolationKind::RecoveryError,
                k,
                mask,
                format!("crash point {k}{}: recovery failed: {e}", torn_note(mask)),
                replay_line(sh.spec, sh.opts, k, mask),
            ));
            return false;
        }
    };
    tally
        .rec
        .add(fresh.report.bytes_written, fresh.report.modeled_ns);
    fresh.rec.words_sorted();
    let rec = &fresh.rec;
    let recovered = Recovered {
        image: rec,
        written: &rec.writes.words,
        on_view: false,
    };
    let mut ok = check_recovered(sh, oracle, scratch, tally, k, mask, recovered);
    let crashed = crash_recovery(sh, oracle, tally, k, mask, &mut fresh);
    ok &= crashed.is_some();
    if let (true, true, Some((reruns, elided))) = (ok, memoize, crashed) {
        let Fresh {
            rec,
            mut reads,
            report,
            ..
        } = fresh;
        reads.seal();
        *memo_slot = Some(Memo::new(
            k,
            reads,
            rec.writes,
            report.bytes_written,
            report.modeled_ns,
            reruns,
            elided,
        ));
    }
    ok
}

/// Check point `k` on the recoveries of the earlier passing point `memo`
/// if they read nothing that changed since: its writes replayed over the
/// crash image. `None`: the memo does not hold here (recover anew).
fn check_memoized(
    sh: &Shared,
    oracle: &Oracle,
    scratch: &mut Scratch,
    tally: &mut Tally,
    memo: &mut Memo,
    k: u64,
    mask: Option<u8>,
) -> Option<bool> {
    if !(memo.holds_at(k, sh.events) && memo.reruns_match(&oracle.cur, sh.layout.home_limit)) {
        return None;
    }
    let mut img = Overlay::new(&oracle.cur);
    memo.writes.replay_onto(memo.writes.len(), &mut img);
    tally.rec.add(memo.bytes_written, memo.modeled_ns);
    tally.recovery_crashes += memo.reruns() as u64;
    tally.reruns_elided += memo.elided as u64;
    tally.dedup_hits += 1;
    if sh.opts.verify_dedup && !same_as_from_scratch(sh, &oracle.cur, &img, &memo.writes.words) {
        tally.dedup_mismatches += 1;
    }
    let recovered = Recovered {
        image: &img,
        written: &memo.writes.words,
        on_view: false,
    };
    Some(check_recovered(
        sh, oracle, scratch, tally, k, mask, recovered,
    ))
}

/// Crash the recovery `fresh` of point `k` at its seeded points and
/// recover again: the home image must match. The crash points inside
/// recovery are seeded by what recovery wrote (a function of the crash
/// image), so identical recoveries are crashed identically and can be
/// deduplicated. The re-runs' reads join `fresh`'s. Returns the re-runs
/// that ran (crash point, writes) and how many were proven instead, or
/// `None` after a violation (added to `tally`).
fn crash_recovery(
    sh: &Shared,
    oracle: &Oracle,
    tally: &mut Tally,
    k: u64,
    mask: Option<u8>,
    fresh: &mut Fresh<Overlay<'_, SparseImage>>,
) -> Option<(Vec<(usize, Writes)>, usize)> {
    let (info, params, layout, cur) = (sh.info, sh.params, sh.layout, &oracle.cur);
    let Fresh {
        rec, reads, proven, ..
    } = fresh;
    let key = rec.writes.digest().wrapping_mul(2) + u64::from(mask.is_some());
    let mut reruns: Vec<(usize, Writes)> = Vec::new();
    let mut elided = 0usize;
    for m in points::recovery_points(sh.spec.seed, key, rec.writes(), sh.opts.recovery_crashes) {
        tally.recovery_crashes += 1;
        if m <= *proven {
            // Same reads, same writes, same image: nothing to compare, and
            // the re-run reads nothing the first run did not.
            elided += 1;
            tally.reruns_elided += 1;
            if sh.opts.verify_dedup && !proven_rerun_repeats(sh, cur, rec, m) {
                tally.dedup_mismatches += 1;
            }
            continue;
        }
        let mut ov = Overlay::new(cur);
        rec.writes.replay_onto(m, &mut ov);
        let mut rec2 = Tracked::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        let (mut rec2, reads2, _) = rec2.into_parts();
        reads.extend(&reads2);
        let rerun = Rerun {
            m,
            total: rec.writes(),
            res,
            rec: &mut rec2,
        };
        if let Some(v) = rerun_violation(sh, oracle, k, mask, rerun, &*rec, &rec.writes.words) {
            tally.recovery_crash += 1;
            tally.add(v);
            return None;
        }
        reruns.push((m, std::mem::take(&mut rec2.writes)));
    }
    Some((reruns, elided))
}

/// Whether a re-run proven identical (crashed after `m` of the writes of
/// `rec`, the uninterrupted recovery of `cur`) does give the same image
/// when run anyway (`verify_dedup`).
fn proven_rerun_repeats<W: MemWrite>(
    sh: &Shared,
    cur: &SparseImage,
    rec: &Recorder<W>,
    m: usize,
) -> bool {
    let mut ov = Overlay::new(cur);
    rec.writes.replay_onto(m, &mut ov);
    let mut rec2 = Recorder::new(ov);
    (sh.info.recover)(&mut rec2, sh.params, sh.layout).is_ok() && {
        let w2 = rec2.words_sorted().to_vec();
        first_difference(rec, &rec.writes.words, &rec2, &w2, Addr::MAX).is_none()
    }
}

/// Whether recovering `cur` from scratch gives the image `fast` (whose
/// writes touched the sorted words `fast_words`), everywhere either wrote.
fn same_as_from_scratch(
    sh: &Shared,
    cur: &SparseImage,
    fast: &dyn MemRead,
    fast_words: &[Addr],
) -> bool {
    let mut rec = Recorder::new(Overlay::new(cur));
    if (sh.info.recover)(&mut rec, sh.params, sh.layout).is_err() {
        return false;
    }
    let words = rec.words_sorted().to_vec();
    first_difference(fast, fast_words, &rec, &words, Addr::MAX).is_none()
}

/// Check a recovered image `rec` (on the kept recovered image when
/// resumed) against the oracle and the workload's invariants.
pub(super) fn check_recovered(
    sh: &Shared,
    oracle: &Oracle,
    scratch: &mut Scratch,
    tally: &mut Tally,
    k: u64,
    mask: Option<u8>,
    recovered: Recovered<'_>,
) -> bool {
    let rec = recovered.image;
    let replay = || replay_line(sh.spec, sh.opts, k, mask);
    let torn_note = torn_note(mask);
    let layout = sh.layout;
    let mut ok = true;
    for t in 0..layout.threads {
        let detail = tally.first.is_none();
        match oracle.check_thread_with(t, k, recovered, &mut scratch.extra, detail) {
            Ok(p) => {
                if sh.opts.memo_invariants
                    && (scratch.inv_memo.contains(&(t, p))
                        || invariant_shown_incrementally(sh, scratch, t, p, rec))
                {
                    scratch.inv_memo.insert((t, p));
                    continue;
                }
                match guarded(|| {
                    crate::workloads::check_region(
                        sh.check,
                        rec,
                        layout.thread_base(t),
                        sh.item_bytes,
                    )
                }) {
                    Ok(_) => {
                        if sh.opts.memo_invariants {
                            scratch.inv_memo.insert((t, p));
                        }
                    }
                    Err(msg) => {
                        ok = false;
                        tally.add(Violation {
                            thread: Some(t),
                            ..Violation::plain(
                                ViolationKind::Invariant,
                                k,
                                mask,
                                format!(
                                    "crash point {k}{torn_note}: thread {t} matches its first {p} transactions but the {} invariant fails: {msg}",
                                    sh.spec.workload
                                ),
                                replay(),
                            )
                        });
                    }
                }
            }
            Err(m) => {
                ok = false;
                let range = if m.lo == m.hi {
                    format!("exactly {}", m.lo)
                } else {
                    format!("{}..={}", m.lo, m.hi)
                };
                // Only the first violation is reported in full.
                let whose = if detail {
                    let place = super::label::word_label(sh, oracle, t, m.addr, m.prefix);
                    format!(
                        "; {}",
                        oracle.word_writers(t, m.addr, m.prefix, m.found, &place)
                    )
                } else {
                    String::new()
                };
                tally.add(Violation {
                    thread: Some(t),
                    addr: Some(m.addr),
                    expected: Some(m.expected),
                    found: Some(m.found),
                    ..Violation::plain(
                        ViolationKind::Oracle,
                        k,
                        mask,
                        format!(
                            "crash point {k}{torn_note}: thread {t}'s recovered data is no allowed committed prefix ({range} of its transactions; durability {:?}); closest is prefix {} with {} differing words, first at {:#x}: expected {:#018x}, found {:#018x}{whose}",
                            sh.info.durability, m.prefix, m.words_differing, m.addr, m.expected, m.found
                        ),
                        replay(),
                    )
                });
            }
        }
    }
    ok
}

/// Whether thread `t`'s region of `rec`, which the oracle found equal to
/// the image of its first `p` transactions, passes the workload's
/// invariant checker, shown by its incremental form (`false`: not shown,
/// run the full checker). The region of the last image it passed equalled
/// the image of prefix `q`; the two prefix images differ only in words the
/// transactions between them wrote, which is what it is told changed.
fn invariant_shown_incrementally(
    sh: &Shared,
    scratch: &mut Scratch,
    t: usize,
    p: u64,
    rec: &dyn MemRead,
) -> bool {
    let Some(new) = sh.check_incremental else {
        return false;
    };
    if scratch.inv_inc.is_empty() {
        scratch.inv_inc = (0..sh.layout.threads).map(|_| (new(), None)).collect();
    }
    let base = sh.layout.thread_base(t);
    let region = base..base + sh.layout.thread_region_bytes;
    let (chk, at) = &mut scratch.inv_inc[t];
    let changed = at.map(|q| {
        let c = &mut scratch.inv_changed;
        c.clear();
        for r in &sh.per_thread[t][q.min(p) as usize..q.max(p) as usize] {
            c.extend(
                sh.tx_writes[r.writes.clone()]
                    .iter()
                    .map(|&(a, _)| a)
                    .filter(|a| region.contains(a)),
            );
        }
        &c[..]
    });
    let shown =
        guarded(|| Ok::<_, String>(chk.passes(rec, base, sh.item_bytes, changed))).unwrap_or(false);
    *at = shown.then_some(p);
    shown
}
