//! The checkpoint driver: run once with history recording, the threads'
//! program stores laid out per thread, the selected points checked in
//! parallel chunks ([`super::chunk`]) and merged into the [`CrashReport`].

use super::super::driver::single_tear_mask;
use super::super::history::{background_events, background_range_of, record, Recorded};
use super::super::options::CrashOptions;
use super::super::parallel::{parallel_plan, run_chunks, worker_bytes};
use super::super::points;
use super::super::report::{CrashReport, Timing};
use super::chunk::epoch_chunk;
use super::shared::{EpochShared, EpochTally};
use crate::engine::{History, RunSpec};
use crate::error::Result;
use crate::recovery::Durability;
use crate::schemes::SchemeInfo;
use crate::types::Addr;
use std::time::Instant;

/// Crash-test a checkpointing scheme (or a scheme run on the hybrid memory
/// as a negative control) against checkpoint semantics.
pub fn crashtest_checkpoints(
    info: &'static SchemeInfo,
    mut spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    let Recorded {
        mut engine,
        history,
        sim_host_seconds,
    } = record(info, &mut spec)?;
    let layout = engine.ctx.layout.clone();
    let params = engine.params.clone();
    let records = std::mem::take(&mut engine.checkpoints);
    let log = &engine.ctx.nvm.persist_log;
    let events = log.events();
    let n = events.len() as u64;
    let selected = points::select(&opts.points, n, spec.seed)?;
    let single_mask = single_tear_mask(&opts.points, events)?;
    let (writes, op_start) = program_stores(&history, layout.threads);
    let sh = EpochShared {
        info,
        spec: &spec,
        opts,
        layout: &layout,
        params: &params,
        reader: info.contexts,
        records: &records,
        log,
        events,
        n,
        single_mask,
        writes: &writes,
        op_start: &op_start,
        units: info.recovery.units(),
        copies_home: info.recovery.copies_home(),
    };
    // Contiguous chunks merged in point order, as in the transactional
    // driver: each starts cold (oracle advanced from point 0), which never
    // changes a verdict, so results do not depend on the thread count.
    let (pool, host_threads, chunk) =
        parallel_plan(opts.host_threads, selected.len(), n, worker_bytes(events))?;
    let total = selected.len() as u64;
    let start = Instant::now();
    let parts: Vec<Result<EpochTally>> = run_chunks(
        pool,
        &selected,
        chunk,
        &history.initial_media,
        progress,
        |pts, initial, tx| epoch_chunk(&sh, pts, &initial, tx),
    )?;
    let mut t = EpochTally::default();
    for p in parts {
        t.merge(p?);
    }
    progress(total, total);
    let timing = Timing {
        sim_host_seconds,
        check_host_seconds: start.elapsed().as_secs_f64(),
        host_threads,
    };
    let paths = crate::crash::coverage::coverage(
        engine.scheme.recovery_paths(),
        &history.paths,
        &history.background,
        &history.background_kinds,
        &selected,
    );
    Ok(report(&sh, &history, &selected, t, timing, paths))
}

/// Per thread: its program's stores in order, and the stores before each
/// operation (`len` = operations + 1).
type ProgramStores = (Vec<Vec<(Addr, u64)>>, Vec<Vec<u64>>);

/// The threads' [`ProgramStores`], from their committed write sets.
fn program_stores(history: &History, threads: usize) -> ProgramStores {
    let mut writes = vec![Vec::new(); threads];
    let mut op_start = vec![vec![0u64]; threads];
    for t in 0..threads {
        for r in &history.per_thread[t] {
            writes[t].extend_from_slice(&history.writes[r.writes.clone()]);
            op_start[t].push(writes[t].len() as u64);
        }
    }
    (writes, op_start)
}

/// The report of the merged tally of every chunk (points `selected`).
fn report(
    sh: &EpochShared,
    history: &History,
    selected: &[u64],
    t: EpochTally,
    timing: Timing,
    recovery_paths: Vec<crate::crash::coverage::PathCoverage>,
) -> CrashReport {
    let EpochTally {
        clean,
        torn_v,
        rec_crash_v,
        rec_crashes,
        tested,
        torn_tested,
        first,
        verdicts,
        rec,
        counts,
        deduplicated,
        resumed,
        history_s,
        point_s,
    } = t;
    let spec = sh.spec;
    let background = &history.background;
    CrashReport {
        scheme: spec.scheme.clone(),
        workload: spec.workload.clone(),
        durability: Durability::Checkpoint,
        threads: sh.layout.threads,
        tx: spec.tx,
        seed: spec.seed,
        persist_events: sh.n,
        crash_points_tested: tested,
        torn_points_tested: torn_tested,
        recovery_crashes_tested: rec_crashes,
        background_persist_events: background_events(background),
        background_points_tested: selected
            .iter()
            .filter(|&&k| background_range_of(background, k, false).is_some())
            .count() as u64,
        // Per-kind counts and deduplication are the transactional driver's.
        background_by_kind: Vec::new(),
        recovery_paths,
        deduplicated_points: deduplicated,
        dedup_mismatches: counts.mismatches,
        resumed_points: resumed,
        resume_mismatches: 0,
        recovery_reruns_elided: counts.elided,
        host_threads: timing.host_threads,
        violations: clean + torn_v,
        clean_violations: clean,
        torn_violations: torn_v,
        recovery_crash_violations: rec_crash_v,
        first_violation: first,
        points_per_second: tested as f64 / timing.check_host_seconds.max(1e-9),
        check_host_seconds: timing.check_host_seconds,
        history_pass_host_seconds: history_s,
        point_host_seconds: point_s,
        sim_host_seconds: timing.sim_host_seconds,
        recovery_bytes_written_mean: rec.bytes_mean(),
        recovery_modeled_ns_max: rec.ns_max,
        verdicts,
        torn: sh.opts.torn || sh.single_mask.is_some(),
    }
}
