//! The transactional driver: a scheme whose durability model is a
//! transaction prefix (`AtCommit`, `None`, `Delayed`) is run once with
//! history recording, then its selected crash points are checked in
//! parallel chunks ([`super::chunk`]) and the chunks' tallies merged into
//! the [`CrashReport`].

use super::chunk::check_chunk;
use super::history::{background_events, record, Recorded};
use super::options::CrashOptions;
use super::parallel::{parallel_plan, run_chunks, worker_bytes};
use super::points::{self, PointSel};
use super::report::{CrashReport, Timing};
use super::worker::{Shared, Tally};
use crate::engine::{History, RunSpec};
use crate::error::{Error, Result};
use crate::mem::PersistEvent;
use crate::schemes::SchemeInfo;
use std::time::Instant;

/// Crash-test a scheme against a transaction prefix (any durability model
/// but `Checkpoint`).
pub(super) fn crashtest_transactions(
    info: &'static SchemeInfo,
    mut spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    let Recorded {
        engine,
        history,
        sim_host_seconds,
    } = record(info, &mut spec)?;
    let log = &engine.ctx.nvm.persist_log;
    let events = log.events();
    let n = events.len() as u64;
    if n != log.count() {
        return Err(Error::Internal(format!(
            "persist log recorded {} of {} events",
            n,
            log.count()
        )));
    }
    let selected = points::select(&opts.points, n, spec.seed)?;
    let single_mask = single_tear_mask(&opts.points, events)?;
    let layout = engine.ctx.layout.clone();
    let sh = Shared {
        info,
        spec: &spec,
        opts,
        layout: &layout,
        params: &engine.params,
        check: engine.workload_info.check,
        check_incremental: engine.workload_info.check_incremental,
        item_bytes: engine.params.u64("workload.item_bytes"),
        log,
        events,
        n,
        single_mask,
        tx_writes: &history.writes,
        per_thread: &history.per_thread,
        background: &history.background,
        background_kinds: &history.background_kinds,
        resume: info
            .recovery
            .scan()
            .filter(|_| opts.resume_scans && opts.dedup_recoveries),
    };
    // Contiguous chunks, a few per host thread (load balance); a worker
    // starts cold (oracle advanced from point 0, no memo), which costs time
    // but never changes a verdict, so results do not depend on chunking.
    let (pool, host_threads, chunk) =
        parallel_plan(opts.host_threads, selected.len(), n, worker_bytes(events))?;
    let total = selected.len() as u64;
    let start = Instant::now();
    let tallies: Vec<Tally> = run_chunks(
        pool,
        &selected,
        chunk,
        &history.initial_media,
        progress,
        |pts, initial, tx| check_chunk(&sh, pts, initial, tx),
    )?;
    let mut tally = Tally::default();
    for t in tallies {
        tally.merge(t);
    }
    progress(total, total);
    let timing = Timing {
        sim_host_seconds,
        check_host_seconds: start.elapsed().as_secs_f64(),
        host_threads,
    };
    let paths = super::coverage::coverage(
        engine.scheme.recovery_paths(),
        &history.paths,
        &history.background,
        &history.background_kinds,
        &selected,
    );
    Ok(report(&sh, &history, tally, timing, paths))
}

/// The tear mask of a single point given with one (`--tear-mask`),
/// checked: a non-empty proper subset of the words the write in flight at
/// that point covers.
pub(super) fn single_tear_mask(sel: &PointSel, events: &[PersistEvent]) -> Result<Option<u8>> {
    let n = events.len() as u64;
    let PointSel::Single { point, tear_mask } = *sel else {
        return Ok(None);
    };
    if let Some(m) = tear_mask {
        if point >= n {
            return Err(Error::input(format!(
                "invalid '--tear-mask' with '--crash-at {point}': no write is in flight at the last crash point; valid crash points for a tear are 0..{n}"
            )));
        }
        let cov = points::covered_words(&events[point as usize]);
        if m & !cov != 0 || m == 0 || m == cov {
            return Err(Error::input(format!(
                "invalid value '{m:#04x}' for '--tear-mask': the write in flight at point {point} covers words {cov:#04x}; the mask must be a non-empty proper subset (all of them is crash point {} untorn)",
                point + 1
            )));
        }
    }
    Ok(tear_mask)
}

/// The report of the merged tally of every chunk.
fn report(
    sh: &Shared,
    history: &History,
    tally: Tally,
    timing: Timing,
    recovery_paths: Vec<super::coverage::PathCoverage>,
) -> CrashReport {
    let spec = sh.spec;
    let background = &history.background;
    CrashReport {
        scheme: spec.scheme.clone(),
        workload: spec.workload.clone(),
        durability: sh.info.durability,
        threads: spec.threads,
        tx: spec.tx,
        seed: spec.seed,
        persist_events: sh.n,
        crash_points_tested: tally.tested,
        torn_points_tested: tally.torn_tested,
        recovery_crashes_tested: tally.recovery_crashes,
        background_persist_events: background_events(background),
        background_points_tested: tally.bg_tested,
        background_by_kind: {
            // Persist events per kind, then the points each kind received.
            let mut by_kind: std::collections::BTreeMap<&'static str, (u64, u64)> =
                Default::default();
            for (r, &kind) in background.iter().zip(&history.background_kinds) {
                by_kind.entry(kind).or_default().0 += r.end - r.start;
            }
            for (&kind, &pts) in &tally.bg_by_kind {
                by_kind.entry(kind).or_default().1 += pts;
            }
            by_kind
                .into_iter()
                .map(|(k, (ev, pts))| (k, ev, pts))
                .collect()
        },
        recovery_paths,
        violations: tally.clean + tally.torn,
        clean_violations: tally.clean,
        torn_violations: tally.torn,
        recovery_crash_violations: tally.recovery_crash,
        first_violation: tally.first,
        points_per_second: tally.tested as f64 / timing.check_host_seconds.max(1e-9),
        check_host_seconds: timing.check_host_seconds,
        history_pass_host_seconds: tally.history_s,
        point_host_seconds: tally.point_s,
        sim_host_seconds: timing.sim_host_seconds,
        recovery_bytes_written_mean: tally.rec.bytes_mean(),
        recovery_modeled_ns_max: tally.rec.ns_max,
        deduplicated_points: tally.dedup_hits,
        dedup_mismatches: tally.dedup_mismatches,
        resumed_points: tally.resumed,
        resume_mismatches: tally.resume_mismatches,
        recovery_reruns_elided: tally.reruns_elided,
        host_threads: timing.host_threads,
        verdicts: tally.verdicts,
        torn: sh.opts.torn || sh.single_mask.is_some(),
    }
}
