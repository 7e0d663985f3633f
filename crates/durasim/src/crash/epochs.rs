//! Crash verification with checkpoint semantics (issue 15): a crash at any
//! persist point must recover exactly the memory image *and* the CPU
//! contexts of the last checkpoint whose switch-pointer write persisted
//! (the initial image and contexts before the first one).
//!
//! A checkpoint may fall in the middle of an operation, so the expected
//! image is not a transaction prefix: for thread t it is the initial image
//! plus the first `S_t` stores of its program, where `S_t` comes from the
//! core's context recorded at the checkpoint (operations finished + stores
//! of the one in progress). The oracle keeps those images as per-epoch
//! diffs: the write history is applied to a word map over the initial
//! image epoch by epoch, never copied, and (as in [`super::oracle`]) only
//! the words where the crashed image differs from it, plus what recovery
//! wrote, are compared at each point.
//!
//! Workload invariant checkers are not run: an image taken in the middle of
//! an operation is not a consistent data structure (the resumed core
//! finishes it); exact equality with the program's store prefix is the
//! stronger check.

use super::{
    first_difference, guarded, points, replay_line, CrashOptions, CrashReport, Recorder, Violation,
    ViolationKind,
};
use crate::engine::{Engine, RunSpec};
use crate::error::{Error, Result};
use crate::mem::{MemRead, MemWrite, Overlay, SparseImage};
use crate::schemes::checkpoint::{contexts_reader, CoreContext};
use crate::schemes::{Durability, Layout, SchemeInfo};
use crate::types::{Addr, WORD_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

struct EpochOracle<'a> {
    layout: Layout,
    initial: &'a SparseImage,
    cur: SparseImage,
    applied: u64,
    /// Per thread: its program's stores in order.
    writes: &'a [Vec<(Addr, u64)>],
    /// Per thread: stores before each operation (`len` = operations + 1).
    op_start: &'a [Vec<u64>],
    /// Stores of each thread applied to `expected`.
    base: Vec<u64>,
    expected: FxHashMap<Addr, u64>,
    delta: Vec<FxHashSet<Addr>>,
}

impl EpochOracle<'_> {
    fn expected_word(&self, a: Addr) -> u64 {
        self.expected
            .get(&a)
            .copied()
            .unwrap_or_else(|| self.initial.read_u64(a))
    }

    fn refresh(&mut self, wa: Addr) {
        if let Some(t) = self.layout.thread_of(wa) {
            if self.cur.read_u64(wa) != self.expected_word(wa) {
                self.delta[t].insert(wa);
            } else {
                self.delta[t].remove(&wa);
            }
        }
    }

    fn persist(&mut self, addr: Addr, data: &[u8], mask: u8, undo: &mut Vec<(Addr, u64)>) {
        let end = addr + data.len() as u64;
        let mut a = addr;
        while a < end {
            let wa = a & !(WORD_BYTES - 1);
            let wend = (wa + WORD_BYTES).min(end);
            if mask & (1 << ((wa % 64) / WORD_BYTES)) != 0 {
                undo.push((wa, self.cur.read_u64(wa)));
                let off = (a - addr) as usize;
                self.cur
                    .write_bytes(a, &data[off..off + (wend - a) as usize]);
                self.refresh(wa);
            }
            a = wend;
        }
    }

    fn undo(&mut self, undo: &[(Addr, u64)]) {
        for &(wa, v) in undo.iter().rev() {
            self.cur.write_u64(wa, v);
            self.refresh(wa);
        }
    }

    /// Stores of thread `t` the context `c` has executed.
    fn stores_of(&self, t: usize, c: &CoreContext) -> Result<u64> {
        let starts = &self.op_start[t];
        let at = starts.get(c.tx as usize).copied().ok_or_else(|| {
            Error::Internal(format!(
                "checkpoint context of core {t} names operation {} of {}",
                c.tx,
                starts.len() - 1
            ))
        })?;
        Ok(at + c.stores)
    }

    /// Move the expected image forward to the checkpoint with contexts `cs`.
    fn advance_to(&mut self, cs: &[CoreContext]) -> Result<()> {
        for (t, c) in cs.iter().enumerate() {
            let s = self.stores_of(t, c)?;
            if s < self.base[t] {
                return Err(Error::Internal(format!(
                    "core {t}'s checkpointed position moved backwards"
                )));
            }
            for i in self.base[t]..s {
                let (a, v) = self.writes[t][i as usize];
                self.expected.insert(a, v);
                self.refresh(a);
            }
            self.base[t] = s;
        }
        Ok(())
    }
}

/// Crash-test a checkpointing scheme (or a scheme run on the hybrid memory
/// as a negative control) against checkpoint semantics.
pub fn crashtest_checkpoints(
    info: &'static SchemeInfo,
    mut spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    spec.record_history = true;
    let sim_start = Instant::now();
    let mut engine = Engine::with_scheme(spec.clone(), info)?;
    engine.run(&mut |_| {})?;
    engine.finish();
    let sim_host_seconds = sim_start.elapsed().as_secs_f64();
    let history = engine
        .history
        .take()
        .ok_or_else(|| Error::Internal("history recording was not enabled".into()))?;
    let layout = engine.ctx.layout.clone();
    let params = engine.params.clone();
    let reader = contexts_reader(info.name);
    let records = std::mem::take(&mut engine.checkpoints);
    let log = &engine.ctx.nvm.persist_log;
    let events = log.events();
    let n = events.len() as u64;
    let selected = points::select(&opts.points, n, spec.seed)?;
    let threads = layout.threads;
    let mut writes = vec![Vec::new(); threads];
    let mut op_start = vec![vec![0u64]; threads];
    for t in 0..threads {
        for r in &history.per_thread[t] {
            writes[t].extend_from_slice(&history.writes[r.writes.clone()]);
            op_start[t].push(writes[t].len() as u64);
        }
    }
    let sh = EpochShared {
        info,
        spec: &spec,
        opts,
        layout: &layout,
        params: &params,
        reader,
        records: &records,
        log,
        events,
        n,
        writes: &writes,
        op_start: &op_start,
    };
    // Contiguous chunks merged in point order, as in the transactional
    // driver: each starts cold (oracle advanced from point 0), which never
    // changes a verdict, so results do not depend on the thread count.
    let (pool, host_threads, chunk) = super::parallel_plan(opts.host_threads, selected.len())?;
    let total = selected.len() as u64;
    let start = Instant::now();
    let parts: Vec<Result<EpochTally>> = super::run_chunks(
        pool,
        &selected,
        chunk,
        &history.initial_media,
        progress,
        |pts, initial, tx| epoch_chunk(&sh, pts, &initial, tx),
    )?;
    let mut t = EpochTally::default();
    for p in parts {
        let p = p?;
        t.clean += p.clean;
        t.torn_v += p.torn_v;
        t.rec_crash_v += p.rec_crash_v;
        t.rec_crashes += p.rec_crashes;
        t.tested += p.tested;
        t.torn_tested += p.torn_tested;
        if t.first.is_none() {
            t.first = p.first;
        }
        t.verdicts.extend(p.verdicts);
        t.rec_bytes += p.rec_bytes;
        t.rec_runs += p.rec_runs;
        t.rec_ns_max = t.rec_ns_max.max(p.rec_ns_max);
        t.counts.elided += p.counts.elided;
        t.counts.mismatches += p.counts.mismatches;
    }
    let EpochTally {
        clean,
        torn_v,
        rec_crash_v,
        rec_crashes,
        tested,
        torn_tested,
        first,
        verdicts,
        rec_bytes,
        rec_runs,
        rec_ns_max,
        counts,
    } = t;
    progress(total, total);
    let check_host_seconds = start.elapsed().as_secs_f64();
    let background = &history.background;
    Ok(CrashReport {
        scheme: spec.scheme.clone(),
        workload: spec.workload.clone(),
        durability: Durability::Checkpoint,
        threads,
        tx: spec.tx,
        seed: spec.seed,
        persist_events: n,
        crash_points_tested: tested,
        torn_points_tested: torn_tested,
        recovery_crashes_tested: rec_crashes,
        background_persist_events: background.iter().map(|r| r.end - r.start).sum(),
        background_points_tested: selected
            .iter()
            .filter(|&&k| super::background_range_of(background, k, false).is_some())
            .count() as u64,
        // Per-kind counts and deduplication are the transactional driver's.
        background_by_kind: Vec::new(),
        deduplicated_points: 0,
        dedup_mismatches: counts.mismatches,
        resumed_points: 0,
        resume_mismatches: 0,
        recovery_reruns_elided: counts.elided,
        host_threads,
        violations: clean + torn_v,
        clean_violations: clean,
        torn_violations: torn_v,
        recovery_crash_violations: rec_crash_v,
        first_violation: first,
        points_per_second: tested as f64 / check_host_seconds.max(1e-9),
        check_host_seconds,
        sim_host_seconds,
        recovery_bytes_written_mean: rec_bytes / rec_runs.max(1) as f64,
        recovery_modeled_ns_max: rec_ns_max,
        verdicts,
        torn: opts.torn,
    })
}

/// What every epoch worker reads.
struct EpochShared<'a> {
    info: &'static SchemeInfo,
    spec: &'a RunSpec,
    opts: &'a CrashOptions,
    layout: &'a Layout,
    params: &'a crate::config::Params,
    reader: Option<crate::schemes::checkpoint::ReadContextsFn>,
    records: &'a [crate::schemes::checkpoint::CheckpointRecord],
    log: &'a crate::mem::PersistLog,
    events: &'a [crate::mem::PersistEvent],
    n: u64,
    writes: &'a [Vec<(Addr, u64)>],
    op_start: &'a [Vec<u64>],
}

/// One chunk's results, merged in point order.
#[derive(Default)]
struct EpochTally {
    clean: u64,
    torn_v: u64,
    rec_crash_v: u64,
    rec_crashes: u64,
    tested: u64,
    torn_tested: u64,
    first: Option<Violation>,
    verdicts: Vec<(u64, Option<u8>, bool)>,
    rec_bytes: f64,
    rec_runs: u64,
    rec_ns_max: f64,
    counts: ElideCounts,
}

/// Check the crash points `pts` (ascending) in order.
fn epoch_chunk(
    sh: &EpochShared,
    pts: &[u64],
    initial: &SparseImage,
    done: &mut std::sync::mpsc::Sender<u64>,
) -> Result<EpochTally> {
    let threads = sh.layout.threads;
    let mut o = EpochOracle {
        layout: sh.layout.clone(),
        initial,
        cur: initial.clone(),
        applied: 0,
        writes: sh.writes,
        op_start: sh.op_start,
        base: vec![0; threads],
        expected: FxHashMap::default(),
        delta: vec![FxHashSet::default(); threads],
    };
    let initial_ctx = vec![CoreContext::initial(); threads];
    let mut epoch = 0usize;
    let mut undo = Vec::new();
    let mut t = EpochTally::default();
    let (records, events, log) = (sh.records, sh.events, sh.log);
    for &k in pts {
        while o.applied < k {
            let ev = &events[o.applied as usize];
            undo.clear();
            o.persist(ev.addr, log.data(ev), 0xff, &mut undo);
            o.applied += 1;
        }
        while epoch < records.len() && records[epoch].committed_seq <= k {
            o.advance_to(&records[epoch].contexts)?;
            epoch += 1;
        }
        let want_ctx = if epoch == 0 {
            &initial_ctx
        } else {
            &records[epoch - 1].contexts
        };
        let mask = if k < sh.n && sh.opts.torn {
            points::tear_mask(sh.spec.seed, k, points::covered_words(&events[k as usize]))
        } else {
            None
        };
        for m in std::iter::once(None).chain(mask.map(Some)) {
            undo.clear();
            if let Some(m) = m {
                let ev = &events[k as usize];
                o.persist(ev.addr, log.data(ev), m, &mut undo);
                t.torn_tested += 1;
            }
            t.tested += 1;
            let v = check_point(
                sh.info,
                sh.spec,
                sh.opts,
                &o,
                sh.params,
                sh.layout,
                sh.reader,
                want_ctx,
                epoch,
                k,
                m,
                &mut t.rec_crashes,
                &mut t.rec_bytes,
                &mut t.rec_runs,
                &mut t.rec_ns_max,
                &mut t.counts,
            );
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
            if m.is_some() {
                o.undo(&undo);
            }
        }
        let _ = done.send(1);
    }
    Ok(t)
}

/// Recovery re-runs proven identical (crash/war.rs) and, with
/// `verify_dedup`, how many of them differed when run anyway (a bug; 0).
#[derive(Default)]
struct ElideCounts {
    elided: u64,
    mismatches: u64,
}

/// Recover one crash image and compare it (memory and contexts) with
/// checkpoint `epoch`; the violation if any.
#[allow(clippy::too_many_arguments)]
fn check_point(
    info: &SchemeInfo,
    spec: &RunSpec,
    opts: &CrashOptions,
    o: &EpochOracle,
    params: &crate::config::Params,
    layout: &Layout,
    reader: Option<crate::schemes::checkpoint::ReadContextsFn>,
    want_ctx: &[CoreContext],
    epoch: usize,
    k: u64,
    mask: Option<u8>,
    rec_crashes: &mut u64,
    rec_bytes: &mut f64,
    rec_runs: &mut u64,
    rec_ns_max: &mut f64,
    counts: &mut ElideCounts,
) -> Option<Violation> {
    let replay = || replay_line(spec, opts, k, mask);
    let torn_note = mask
        .map(|m| format!(" with the write in flight torn (mask {m:#04x})"))
        .unwrap_or_default();
    let violation = |kind, thread, at: Option<(Addr, u64, u64)>, message: String| Violation {
        kind,
        point: k,
        tear_mask: mask,
        recovery_writes_persisted: None,
        thread,
        addr: at.map(|x| x.0),
        expected: at.map(|x| x.1),
        found: at.map(|x| x.2),
        message,
        replay: replay(),
    };
    let mut tracked = super::Tracked::new(Overlay::new(&o.cur));
    let report = match guarded(|| (info.recover)(&mut tracked, params, layout)) {
        Ok(r) => r,
        Err(e) => {
            return Some(violation(
                ViolationKind::RecoveryError,
                None,
                None,
                format!("crash point {k}{torn_note}: recovery failed: {e}"),
            ))
        }
    };
    let (mut rec, _, trace) = tracked.into_parts();
    // Re-runs crashed within this many writes provably repeat the
    // uninterrupted recovery (crash/war.rs).
    let proven = if opts.dedup_recoveries {
        trace.first_conflict()
    } else {
        0
    };
    *rec_runs += 1;
    *rec_bytes += report.bytes_written as f64;
    *rec_ns_max = rec_ns_max.max(report.modeled_ns);
    if let Some(read) = reader {
        match read(&rec, params, layout) {
            Ok(got) if got == want_ctx => {}
            Ok(got) => {
                let c = (0..got.len().min(want_ctx.len()))
                    .find(|&c| got[c] != want_ctx[c])
                    .unwrap_or(0);
                return Some(violation(
                    ViolationKind::Oracle,
                    Some(c),
                    None,
                    format!(
                        "crash point {k}{torn_note}: recovered CPU context of core {c} is not that of checkpoint {epoch}: expected {:?}, found {:?}",
                        want_ctx.get(c),
                        got.get(c)
                    ),
                ));
            }
            Err(e) => {
                return Some(violation(
                    ViolationKind::RecoveryError,
                    None,
                    None,
                    format!("crash point {k}{torn_note}: recovered CPU contexts unreadable: {e}"),
                ))
            }
        }
    }
    let written = rec.words_sorted().to_vec();
    for t in 0..layout.threads {
        let region = layout.thread_base(t)..layout.thread_base(t) + layout.thread_region_bytes;
        let w0 = written.partition_point(|&a| a < region.start);
        let w1 = written.partition_point(|&a| a < region.end);
        // The lowest differing word (what sorting the candidates and
        // taking the first would report), without sorting them: the delta
        // holds the whole epoch's dirty words at every point.
        if let Some((a, want, got)) = o.delta[t]
            .iter()
            .chain(&written[w0..w1])
            .filter_map(|&a| {
                let (want, got) = (o.expected_word(a), rec.read_u64(a));
                (want != got).then_some((a, want, got))
            })
            .min_by_key(|d| d.0)
        {
            return Some(violation(
                ViolationKind::Oracle,
                Some(t),
                Some((a, want, got)),
                format!(
                    "crash point {k}{torn_note}: thread {t}'s recovered memory is not the image of checkpoint {epoch} ({} of its stores): at {a:#x} expected {want:#018x}, found {got:#018x}",
                    o.base[t]
                ),
            ));
        }
    }
    let key = k.wrapping_mul(2) + u64::from(mask.is_some());
    for m in points::recovery_points(spec.seed, key, rec.writes(), opts.recovery_crashes) {
        *rec_crashes += 1;
        if m <= proven {
            counts.elided += 1;
            if !opts.verify_dedup {
                continue;
            }
        }
        let mut ov = Overlay::new(&o.cur);
        rec.writes.replay_onto(m, &mut ov);
        let mut rec2 = Recorder::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        if m <= proven {
            // verify_dedup: the elided re-run must give the same image.
            let same = res.is_ok() && {
                let w2 = rec2.words_sorted().to_vec();
                first_difference(&rec, &written, &rec2, &w2, Addr::MAX).is_none()
            };
            counts.mismatches += u64::from(!same);
            continue;
        }
        let diff = match res {
            Err(e) => Some((None, format!("the second recovery failed: {e}"))),
            Ok(_) => {
                let w2 = rec2.words_sorted().to_vec();
                first_difference(&rec, &written, &rec2, &w2, layout.home_limit)
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
            let mut v = violation(
                ViolationKind::RecoveryCrash,
                at.and_then(|d| layout.thread_of(d.0)),
                at,
                format!(
                    "crash point {k}{torn_note}, then a crash after {m} of recovery's {} writes: {msg}",
                    rec.writes()
                ),
            );
            v.recovery_writes_persisted = Some(m);
            return Some(v);
        }
    }
    None
}
