//! Crash verification, generic over schemes: run a workload with history
//! recording, then for each selected crash point k build the durable state
//! (initial media + persist events `0..k`, optionally with the event in
//! flight torn), run the scheme's recovery on those bytes alone, and check
//! the result with the atomic-durability oracle ([`oracle`]) and the
//! workload's invariant checker. Recovery itself is crashed at seeded points
//! of its own writes and must then recover to the same image.
//!
//! The crashed image is maintained incrementally (events are applied in
//! order as k grows) and recovery runs on a copy-on-write [`Overlay`], so a
//! crash point costs about one recovery plus a check proportional to what
//! can differ, never a copy of the image.

pub mod epochs;
pub mod oracle;
pub mod points;

use crate::engine::{Engine, RunSpec};
use crate::error::{Error, Result};
use crate::mem::{MemRead, MemWrite, Overlay};
use crate::schemes::{self, Durability, SchemeInfo};
use crate::types::{Addr, LINE_BYTES, WORD_BYTES};
use oracle::Oracle;
pub use points::PointSel;
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

/// Default number of crashes injected into each recovery.
pub const DEFAULT_RECOVERY_CRASHES: u64 = 4;

/// What to test.
#[derive(Clone, Debug)]
pub struct CrashOptions {
    pub points: PointSel,
    /// Also crash with the event in flight torn (seeded word subset).
    pub torn: bool,
    /// Crashes injected into each recovery (at seeded points of its own
    /// writes); `u64::MAX` = every one.
    pub recovery_crashes: u64,
    /// Run the invariant checker once per distinct recovered state (thread,
    /// matched prefix) instead of at every point. Exact: a region equal to
    /// a prefix image gives the same checker result.
    pub memo_invariants: bool,
}

impl Default for CrashOptions {
    fn default() -> Self {
        CrashOptions {
            points: PointSel::All,
            torn: false,
            recovery_crashes: DEFAULT_RECOVERY_CRASHES,
            memo_invariants: true,
        }
    }
}

/// What kind of check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// Recovered data is no committed prefix allowed by the durability model.
    Oracle,
    /// The workload's invariant checker rejected the recovered image.
    Invariant,
    /// Recovery returned an error.
    RecoveryError,
    /// Recovery crashed and re-run gave a different image (or failed).
    RecoveryCrash,
}

impl ViolationKind {
    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::Oracle => "oracle",
            ViolationKind::Invariant => "invariant",
            ViolationKind::RecoveryError => "recovery_error",
            ViolationKind::RecoveryCrash => "recovery_crash",
        }
    }
}

/// One failed check, with everything needed to reproduce it.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub kind: ViolationKind,
    pub point: u64,
    pub tear_mask: Option<u8>,
    /// For recovery crashes: how many recovery writes had persisted.
    pub recovery_writes_persisted: Option<usize>,
    pub thread: Option<usize>,
    pub addr: Option<Addr>,
    pub expected: Option<u64>,
    pub found: Option<u64>,
    pub message: String,
    pub replay: String,
}

impl Violation {
    pub fn to_json(&self) -> serde_json::Value {
        let hex = |v: Option<u64>| v.map(|x| format!("{x:#018x}"));
        serde_json::json!({
            "kind": self.kind.name(),
            "crash_point": self.point,
            "tear_mask": self.tear_mask.map(|m| format!("{m:#04x}")),
            "recovery_writes_persisted": self.recovery_writes_persisted,
            "thread": self.thread,
            "addr": self.addr.map(|a| format!("{a:#x}")),
            "expected": hex(self.expected),
            "found": hex(self.found),
            "message": self.message,
            "replay": self.replay,
        })
    }
}

/// Result of a crash test.
#[derive(Clone, Debug)]
pub struct CrashReport {
    pub scheme: String,
    pub workload: String,
    pub durability: Durability,
    pub threads: usize,
    pub tx: u64,
    pub seed: u64,
    pub persist_events: u64,
    /// Crash images checked (clean and torn).
    pub crash_points_tested: u64,
    pub torn_points_tested: u64,
    pub recovery_crashes_tested: u64,
    /// Persist events issued by background work (tick/finish) and crash
    /// images that fell strictly inside such work.
    pub background_persist_events: u64,
    pub background_points_tested: u64,
    /// Crash images that failed any check (clean + torn).
    pub violations: u64,
    pub clean_violations: u64,
    pub torn_violations: u64,
    /// Of those, images whose recovery, crashed and re-run, diverged.
    pub recovery_crash_violations: u64,
    pub first_violation: Option<Violation>,
    /// Points checked per host second (crash + recover + check).
    pub points_per_second: f64,
    pub check_host_seconds: f64,
    pub sim_host_seconds: f64,
    pub recovery_bytes_written_mean: f64,
    pub recovery_modeled_ns_max: f64,
    /// The points tested with their verdicts (true = passed), in order
    /// (clean and torn images, for determinism checks).
    pub verdicts: Vec<(u64, Option<u8>, bool)>,
    torn: bool,
}

impl CrashReport {
    /// With `--torn`: the scheme survives every clean crash but not torn
    /// writes, i.e. it relies on 64 B write atomicity.
    pub fn relies_on_64b_atomicity(&self) -> Option<bool> {
        self.torn
            .then_some(self.clean_violations == 0 && self.torn_violations > 0)
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "scheme": self.scheme,
            "workload": self.workload,
            "durability": format!("{:?}", self.durability),
            "threads": self.threads,
            "tx": self.tx,
            "seed": self.seed,
            "persist_events": self.persist_events,
            "crash_points_total": self.persist_events + 1,
            "crash_points_tested": self.crash_points_tested,
            "torn_points_tested": self.torn_points_tested,
            "recovery_crashes_tested": self.recovery_crashes_tested,
            "background_persist_events": self.background_persist_events,
            "background_points_tested": self.background_points_tested,
            "violations": self.violations,
            "clean_violations": self.clean_violations,
            "torn_violations": self.torn_violations,
            "recovery_crash_violations": self.recovery_crash_violations,
            "relies_on_64b_atomicity": self.relies_on_64b_atomicity(),
            "first_violation": self.first_violation.as_ref().map(|v| v.to_json()),
            "points_per_second": self.points_per_second,
            "check_host_seconds": self.check_host_seconds,
            "sim_host_seconds": self.sim_host_seconds,
            "recovery_bytes_written_mean": self.recovery_bytes_written_mean,
            "recovery_modeled_ns_max": self.recovery_modeled_ns_max,
        })
    }
}

/// A write-through wrapper around a recovery's image that records every
/// write, split at 64 B line boundaries (each piece is one of recovery's
/// own persist points).
pub struct Recorder<W: MemWrite> {
    pub inner: W,
    /// Word addresses written (unsorted until [`Recorder::words_sorted`]).
    words: Vec<Addr>,
    chunks: Vec<(Addr, u32, u8)>,
    arena: Vec<u8>,
}

impl<W: MemWrite> Recorder<W> {
    pub fn new(inner: W) -> Self {
        Recorder {
            inner,
            words: Vec::new(),
            chunks: Vec::new(),
            arena: Vec::new(),
        }
    }

    pub fn writes(&self) -> usize {
        self.chunks.len()
    }

    /// Replay the first `m` recorded writes onto `img`.
    pub fn replay_onto(&self, m: usize, img: &mut dyn MemWrite) {
        for &(a, off, len) in &self.chunks[..m] {
            img.write_bytes(a, &self.arena[off as usize..off as usize + len as usize]);
        }
    }

    pub fn words_sorted(&mut self) -> &[Addr] {
        self.words.sort_unstable();
        self.words.dedup();
        &self.words
    }
}

impl<W: MemWrite> MemRead for Recorder<W> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.inner.read_bytes(addr, buf);
    }
}

impl<W: MemWrite> MemWrite for Recorder<W> {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((LINE_BYTES - a % LINE_BYTES) as usize).min(data.len() - done);
            self.chunks.push((a, self.arena.len() as u32, n as u8));
            self.arena.extend_from_slice(&data[done..done + n]);
            let mut w = a & !(WORD_BYTES - 1);
            while w < a + n as u64 {
                self.words.push(w);
                w += WORD_BYTES;
            }
            done += n;
        }
        self.inner.write_bytes(addr, data);
    }
}

/// Crash-test a registered scheme.
pub fn crashtest(
    spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    let info = schemes::find(&spec.scheme)?;
    crashtest_with(info, spec, opts, progress)
}

/// The replay command line for one crash image.
fn replay_line(spec: &RunSpec, opts: &CrashOptions, point: u64, mask: Option<u8>) -> String {
    let mut s = format!(
        "durasim crashtest --scheme {} --workload {} --tx {} --threads {} --seed {} --crash-at {point}",
        spec.scheme, spec.workload, spec.tx, spec.threads, spec.seed
    );
    if let Some(m) = mask {
        s.push_str(&format!(" --tear-mask {m:#04x}"));
    }
    if opts.recovery_crashes != DEFAULT_RECOVERY_CRASHES {
        if opts.recovery_crashes == u64::MAX {
            s.push_str(" --recovery-crashes all");
        } else {
            s.push_str(&format!(" --recovery-crashes {}", opts.recovery_crashes));
        }
    }
    // Every parameter that differs from its default (covers --config too).
    for (k, v) in spec.params.overrides() {
        let kv = format!("{k}={v}");
        if kv
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-=+:/,".contains(c))
        {
            s.push_str(&format!(" --set {kv}"));
        } else {
            s.push_str(&format!(" --set '{}'", kv.replace('\'', "'\\''")));
        }
    }
    s
}

struct Tally {
    clean: u64,
    torn: u64,
    recovery_crash: u64,
    first: Option<Violation>,
    rec_bytes: f64,
    rec_runs: u64,
    rec_ns_max: f64,
    recovery_crashes: u64,
}

impl Tally {
    /// Keep the first violation; counts are per crash image.
    fn add(&mut self, v: Violation) {
        if self.first.is_none() {
            self.first = Some(v);
        }
    }
}

/// Crash-test any scheme entry, registered or not (tests use this to check
/// schemes that must not ship).
pub fn crashtest_with(
    info: &'static SchemeInfo,
    mut spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    if crate::schemes::checkpoint::contexts_reader(info.name).is_some() {
        // Whole-system checkpointing: checkpoint semantics (crash/epochs.rs).
        return epochs::crashtest_checkpoints(info, spec, opts, progress);
    }
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
    let single_mask = match opts.points {
        PointSel::Single { point, tear_mask } => {
            if let Some(m) = tear_mask {
                if point >= n {
                    return Err(Error::input(format!(
                        "invalid '--tear-mask' with '--crash-at {point}': no write is in flight at the last crash point; valid crash points for a tear are 0..{n}"
                    )));
                }
                let cov = points::covered_words(&events[point as usize]);
                if m & !cov != 0 || m == 0 {
                    return Err(Error::input(format!(
                        "invalid value '{m:#04x}' for '--tear-mask': the write in flight at point {point} covers words {cov:#04x}; the mask must be a non-empty subset"
                    )));
                }
            }
            tear_mask
        }
        _ => None,
    };
    let layout = engine.ctx.layout.clone();
    let params = &engine.params;
    let item_bytes = params.u64("workload.item_bytes");
    let check = engine.workload_info.check;
    let mut oracle = Oracle::new(&layout, &history, info.durability, log.marks());
    let mut memo: FxHashSet<(usize, u64)> = FxHashSet::default();
    let mut extra: FxHashMap<Addr, u64> = FxHashMap::default();
    let mut tally = Tally {
        clean: 0,
        torn: 0,
        recovery_crash: 0,
        first: None,
        rec_bytes: 0.0,
        rec_runs: 0,
        rec_ns_max: 0.0,
        recovery_crashes: 0,
    };
    let background = &history.background;
    let inside_background = |k: u64, torn: bool| {
        let i = background.partition_point(|r| r.start < k || (torn && r.start == k));
        i > 0 && k < background[i - 1].end
    };
    let mut verdicts = Vec::with_capacity(selected.len());
    let mut tested = 0u64;
    let mut torn_tested = 0u64;
    let mut bg_tested = 0u64;
    let mut undo = Vec::new();
    let start = Instant::now();
    let total = selected.len() as u64;
    for (i, &k) in selected.iter().enumerate() {
        oracle.advance(k, log);
        let mask = if k < n {
            single_mask.or_else(|| {
                opts.torn
                    .then(|| {
                        points::tear_mask(spec.seed, k, points::covered_words(&events[k as usize]))
                    })
                    .flatten()
            })
        } else {
            None
        };
        if single_mask.is_none() {
            tested += 1;
            bg_tested += u64::from(inside_background(k, false));
            let ok = check_image(
                info, &spec, opts, &oracle, &mut extra, &mut memo, &mut tally, params, &layout,
                check, item_bytes, k, None,
            );
            if !ok {
                tally.clean += 1;
            }
            verdicts.push((k, None, ok));
        }
        if let Some(m) = mask {
            let ev = &events[k as usize];
            undo.clear();
            oracle.persist(ev.addr, log.data(ev), m, &mut undo);
            tested += 1;
            torn_tested += 1;
            bg_tested += u64::from(inside_background(k, true));
            let ok = check_image(
                info,
                &spec,
                opts,
                &oracle,
                &mut extra,
                &mut memo,
                &mut tally,
                params,
                &layout,
                check,
                item_bytes,
                k,
                Some(m),
            );
            if !ok {
                tally.torn += 1;
            }
            verdicts.push((k, Some(m), ok));
            oracle.undo(&undo);
        }
        // Every point: slow recoveries make 1,024 points take ~20 s, and the
        // callback is cheap next to one recovery.
        progress(i as u64, total);
    }
    progress(total, total);
    let check_host_seconds = start.elapsed().as_secs_f64();
    Ok(CrashReport {
        scheme: spec.scheme.clone(),
        workload: spec.workload.clone(),
        durability: info.durability,
        threads: spec.threads,
        tx: spec.tx,
        seed: spec.seed,
        persist_events: n,
        crash_points_tested: tested,
        torn_points_tested: torn_tested,
        recovery_crashes_tested: tally.recovery_crashes,
        background_persist_events: background.iter().map(|r| r.end - r.start).sum(),
        background_points_tested: bg_tested,
        violations: tally.clean + tally.torn,
        clean_violations: tally.clean,
        torn_violations: tally.torn,
        recovery_crash_violations: tally.recovery_crash,
        first_violation: tally.first,
        points_per_second: tested as f64 / check_host_seconds.max(1e-9),
        check_host_seconds,
        sim_host_seconds,
        recovery_bytes_written_mean: tally.rec_bytes / tally.rec_runs.max(1) as f64,
        recovery_modeled_ns_max: tally.rec_ns_max,
        verdicts,
        torn: opts.torn || single_mask.is_some(),
    })
}

/// Run scheme or workload code on crashed bytes; a panic (a bug in that
/// code, provoked by garbage) becomes an error so it is reported with a
/// replay line instead of aborting the test.
fn guarded<T, E: std::fmt::Display>(
    f: impl FnOnce() -> std::result::Result<T, E>,
) -> std::result::Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default()
        )),
    }
}

/// Recover one crash image and check it; returns whether it passed.
#[allow(clippy::too_many_arguments)]
fn check_image(
    info: &SchemeInfo,
    spec: &RunSpec,
    opts: &CrashOptions,
    oracle: &Oracle,
    extra: &mut FxHashMap<Addr, u64>,
    memo: &mut FxHashSet<(usize, u64)>,
    tally: &mut Tally,
    params: &crate::config::Params,
    layout: &schemes::Layout,
    check: crate::workloads::CheckFn,
    item_bytes: u64,
    k: u64,
    mask: Option<u8>,
) -> bool {
    let replay = || replay_line(spec, opts, k, mask);
    let torn_note = mask
        .map(|m| format!(" with the write in flight torn (mask {m:#04x})"))
        .unwrap_or_default();
    let mut rec = Recorder::new(Overlay::new(&oracle.cur));
    let report = match guarded(|| (info.recover)(&mut rec, params, layout)) {
        Ok(r) => r,
        Err(e) => {
            tally.add(Violation {
                kind: ViolationKind::RecoveryError,
                point: k,
                tear_mask: mask,
                recovery_writes_persisted: None,
                thread: None,
                addr: None,
                expected: None,
                found: None,
                message: format!("crash point {k}{torn_note}: recovery failed: {e}"),
                replay: replay(),
            });
            return false;
        }
    };
    tally.rec_runs += 1;
    tally.rec_bytes += report.bytes_written as f64;
    tally.rec_ns_max = tally.rec_ns_max.max(report.modeled_ns);
    let mut ok = true;
    rec.words_sorted();
    for t in 0..layout.threads {
        match oracle.check_thread(t, k, &rec, &rec.words, extra, tally.first.is_none()) {
            Ok(p) => {
                if opts.memo_invariants && memo.contains(&(t, p)) {
                    continue;
                }
                match guarded(|| check(&rec, layout.thread_base(t), item_bytes)) {
                    Ok(_) => {
                        if opts.memo_invariants {
                            memo.insert((t, p));
                        }
                    }
                    Err(msg) => {
                        ok = false;
                        tally.add(Violation {
                            kind: ViolationKind::Invariant,
                            point: k,
                            tear_mask: mask,
                            recovery_writes_persisted: None,
                            thread: Some(t),
                            addr: None,
                            expected: None,
                            found: None,
                            message: format!(
                                "crash point {k}{torn_note}: thread {t} matches its first {p} transactions but the {} invariant fails: {msg}",
                                spec.workload
                            ),
                            replay: replay(),
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
                tally.add(Violation {
                    kind: ViolationKind::Oracle,
                    point: k,
                    tear_mask: mask,
                    recovery_writes_persisted: None,
                    thread: Some(t),
                    addr: Some(m.addr),
                    expected: Some(m.expected),
                    found: Some(m.found),
                    message: format!(
                        "crash point {k}{torn_note}: thread {t}'s recovered data is no allowed committed prefix ({range} of its transactions; durability {:?}); closest is prefix {} with {} differing words, first at {:#x}: expected {:#018x}, found {:#018x}",
                        info.durability, m.prefix, m.words_differing, m.addr, m.expected, m.found
                    ),
                    replay: replay(),
                });
            }
        }
    }
    // Crash recovery itself and recover again: the home image must match.
    let key = k.wrapping_mul(2) + u64::from(mask.is_some());
    for m in points::recovery_points(spec.seed, key, rec.writes(), opts.recovery_crashes) {
        tally.recovery_crashes += 1;
        let mut ov = Overlay::new(&oracle.cur);
        rec.replay_onto(m, &mut ov);
        let mut rec2 = Recorder::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        let diff = match res {
            Err(e) => Some((None, format!("the second recovery failed: {e}"))),
            Ok(_) => first_difference(&rec, &mut rec2, layout.home_limit).map(|(a, want, got)| {
                (
                    Some((a, want, got)),
                    format!(
                        "home image differs from the uninterrupted recovery at {a:#x}: expected {want:#018x}, found {got:#018x}"
                    ),
                )
            }),
        };
        if let Some((at, msg)) = diff {
            ok = false;
            tally.recovery_crash += 1;
            tally.add(Violation {
                kind: ViolationKind::RecoveryCrash,
                point: k,
                tear_mask: mask,
                recovery_writes_persisted: Some(m),
                thread: at.and_then(|(a, _, _)| oracle.thread_of(a)),
                addr: at.map(|x| x.0),
                expected: at.map(|x| x.1),
                found: at.map(|x| x.2),
                message: format!(
                    "crash point {k}{torn_note}, then a crash after {m} of recovery's {} writes: {msg}",
                    rec.writes()
                ),
                replay: replay(),
            });
            break;
        }
    }
    ok
}

/// First word below `limit` where two recovered images differ; only words
/// either recovery wrote can differ (both start from the same crash image).
fn first_difference<A: MemWrite, B: MemWrite>(
    a: &Recorder<A>,
    b: &mut Recorder<B>,
    limit: Addr,
) -> Option<(Addr, u64, u64)> {
    let bw = b.words_sorted().to_vec();
    let mut all: Vec<Addr> = a.words.iter().chain(bw.iter()).copied().collect();
    all.sort_unstable();
    all.dedup();
    all.into_iter().filter(|&w| w < limit).find_map(|w| {
        let (x, y) = (a.read_u64(w), b.read_u64(w));
        (x != y).then_some((w, x, y))
    })
}
