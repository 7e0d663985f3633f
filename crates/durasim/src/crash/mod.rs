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
pub mod memo;
pub mod oracle;
pub mod points;
pub mod war;

use crate::engine::{Engine, RunSpec};
use crate::error::{Error, Result};
use crate::mem::Layout;
use crate::mem::{MemRead, MemWrite, Overlay, SparseImage};
use crate::recovery::writes::{self, Writes};
use crate::recovery::{Durability, RecoveryReport};
use crate::recovery::{RangeSet, ResumableScan, ScanIo};
use crate::schemes::{self, SchemeInfo};
use crate::types::{Addr, LINE_BYTES};
use memo::{Memo, ReadSet};
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
    /// Reuse a passing point's recoveries at later points whose recovery
    /// inputs are provably identical ([`memo`]). Exact; off only to check
    /// that it is (differential tests).
    pub dedup_recoveries: bool,
    /// Host threads verifying points (0 = rayon's default: every core).
    /// Verdicts, reports and replay lines do not depend on it.
    pub host_threads: usize,
    /// Differential check of the dedup (tests): at every reused point also
    /// recover from scratch and count images that differ
    /// (`CrashReport::dedup_mismatches`, must stay 0).
    pub verify_dedup: bool,
    /// Resume the previous point's recovery scan for schemes whose
    /// recovery is resumable ([`crate::recovery::scan`]). Exact; needs `dedup_recoveries`
    /// (crashes inside the replayed records are proven, not re-run).
    pub resume_scans: bool,
    /// Differential check of [`resume`] (tests, CI): every resumed point
    /// is also recovered and checked from scratch; any difference in the
    /// image, the write count or digest, or the verdict and report counts
    /// `CrashReport::resume_mismatches` (must stay 0).
    pub verify_resume: bool,
}

impl Default for CrashOptions {
    fn default() -> Self {
        CrashOptions {
            points: PointSel::All,
            torn: false,
            recovery_crashes: DEFAULT_RECOVERY_CRASHES,
            memo_invariants: true,
            dedup_recoveries: true,
            host_threads: 0,
            verify_dedup: false,
            resume_scans: true,
            verify_resume: false,
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
    /// Per kind of background work (`Scheme::background_kind`): persist
    /// events it issued and crash images inside it, by kind name.
    pub background_by_kind: Vec<(&'static str, u64, u64)>,
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
    /// The check's host time split, summed over host threads: bringing
    /// each worker's crash image (and kept recovered image) over the
    /// events since its previous point ("history pass"), and recovering
    /// and checking the points ("point"). Timings only, like
    /// `check_host_seconds`.
    pub history_pass_host_seconds: f64,
    pub point_host_seconds: f64,
    pub sim_host_seconds: f64,
    pub recovery_bytes_written_mean: f64,
    pub recovery_modeled_ns_max: f64,
    /// Crash images whose recoveries were reused from an earlier point with
    /// provably identical recovery inputs ([`memo`]).
    pub deduplicated_points: u64,
    /// Host threads that verified points.
    pub host_threads: usize,
    /// Recovery crash points verified by the write-after-read argument
    /// ([`war`]) instead of a re-run (included in `recovery_crashes_tested`).
    pub recovery_reruns_elided: u64,
    /// With `verify_dedup`: reused points whose from-scratch recovery gave
    /// a different image (a dedup bug; 0).
    pub dedup_mismatches: u64,
    /// Crash images recovered by resuming the previous point's scan
    /// ([`crate::recovery::scan`]) instead of from scratch.
    pub resumed_points: u64,
    /// With `verify_resume`: resumed points whose from-scratch recovery or
    /// check differed (a bug; 0).
    pub resume_mismatches: u64,
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
            "background_by_kind": self.background_by_kind.iter().map(|(k, ev, pts)| (k.to_string(), serde_json::json!({"persist_events": ev, "points_tested": pts}))).collect::<serde_json::Map<_, _>>(),
            "violations": self.violations,
            "clean_violations": self.clean_violations,
            "torn_violations": self.torn_violations,
            "recovery_crash_violations": self.recovery_crash_violations,
            "relies_on_64b_atomicity": self.relies_on_64b_atomicity(),
            "first_violation": self.first_violation.as_ref().map(|v| v.to_json()),
            "points_per_second": self.points_per_second,
            "check_host_seconds": self.check_host_seconds,
            "history_pass_host_seconds": self.history_pass_host_seconds,
            "point_host_seconds": self.point_host_seconds,
            "sim_host_seconds": self.sim_host_seconds,
            "recovery_bytes_written_mean": self.recovery_bytes_written_mean,
            "recovery_modeled_ns_max": self.recovery_modeled_ns_max,
            "deduplicated_points": self.deduplicated_points,
            "recovery_reruns_elided": self.recovery_reruns_elided,
            "resumed_points": self.resumed_points,
            "host_threads": self.host_threads,
        })
    }
}

/// The background range (index into `background`, sorted by start) a crash
/// image at point `k` falls strictly inside, if any; a torn image at `k`
/// also holds part of event `k` itself.
fn background_range_of(background: &[std::ops::Range<u64>], k: u64, torn: bool) -> Option<usize> {
    let i = background.partition_point(|r| r.start < k || (torn && r.start == k));
    (i > 0 && k < background[i - 1].end).then(|| i - 1)
}

/// A write-through wrapper around a recovery's image that records every
/// write (each 64 B piece is one of recovery's own persist points).
pub struct Recorder<W: MemWrite> {
    pub inner: W,
    pub writes: Writes,
}

impl<W: MemWrite> Recorder<W> {
    pub fn new(inner: W) -> Self {
        Recorder {
            inner,
            writes: Writes::default(),
        }
    }

    pub fn writes(&self) -> usize {
        self.writes.len()
    }

    pub fn words_sorted(&mut self) -> &[Addr] {
        self.writes.sort_words()
    }
}

impl<W: MemWrite> MemRead for Recorder<W> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.inner.read_bytes(addr, buf);
    }

    // The inner image's word fast path (oracle checks read word by word).
    fn read_u64(&self, addr: Addr) -> u64 {
        self.inner.read_u64(addr)
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        self.inner.zeros_until(addr, end)
    }
}

/// A [`Recorder`] that also records the byte ranges read (for [`memo`])
/// and what [`war::Trace`] needs to prove crashed re-runs identical.
/// Reads take `&self`, so the read sets sit in cells.
pub struct Tracked<W: MemWrite> {
    rec: Recorder<W>,
    /// The reads, timed (one record serves both the memo and [`war`]).
    trace: std::cell::RefCell<war::Trace>,
}

impl<W: MemWrite> Tracked<W> {
    fn new(inner: W) -> Self {
        Tracked {
            rec: Recorder::new(inner),
            trace: Default::default(),
        }
    }

    fn into_parts(self) -> (Recorder<W>, ReadSet, war::Trace) {
        let trace = self.trace.into_inner();
        let mut reads = ReadSet::default();
        trace.read_ranges(|s, e| reads.push(s, e));
        (self.rec, reads, trace)
    }

    #[inline]
    fn note_read(&self, start: Addr, end: Addr) {
        self.trace
            .borrow_mut()
            .read(start, end, self.rec.writes.len());
    }
}

impl<W: MemWrite> MemRead for Tracked<W> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.note_read(addr, addr + buf.len() as u64);
        self.rec.read_bytes(addr, buf);
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let z = self.rec.zeros_until(addr, end);
        self.note_read(addr, z);
        z
    }
}

impl<W: MemWrite> MemWrite for Tracked<W> {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        // Each 64 B piece is one write of the recorder; note the pieces
        // that change bytes (a write of the bytes already there is
        // invisible to any read).
        let mut done = 0usize;
        let mut idx = self.rec.writes.len();
        let mut old = [0u8; crate::types::LINE_BYTES as usize];
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((crate::types::LINE_BYTES - a % crate::types::LINE_BYTES) as usize)
                .min(data.len() - done);
            self.rec.inner.read_bytes(a, &mut old[..n]);
            if old[..n] != data[done..done + n] {
                self.trace.get_mut().change(idx, a, a + n as u64);
            }
            idx += 1;
            done += n;
        }
        self.rec.write_bytes(addr, data);
    }
}

impl<W: MemWrite> MemWrite for Recorder<W> {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        self.writes.push(addr, data);
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

/// Recoveries counted in a report: how many ran (from scratch, replayed
/// or resumed), the bytes they wrote (for the mean) and the longest
/// modelled recovery time. Shared by this oracle's and the epoch oracle's
/// tallies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RecStats {
    pub runs: u64,
    pub bytes: f64,
    pub ns_max: f64,
}

impl RecStats {
    pub(crate) fn add(&mut self, bytes_written: u64, modeled_ns: f64) {
        self.runs += 1;
        self.bytes += bytes_written as f64;
        self.ns_max = self.ns_max.max(modeled_ns);
    }

    pub(crate) fn merge(&mut self, o: &RecStats) {
        self.runs += o.runs;
        self.bytes += o.bytes;
        self.ns_max = self.ns_max.max(o.ns_max);
    }

    pub(crate) fn bytes_mean(&self) -> f64 {
        self.bytes / self.runs.max(1) as f64
    }

    /// What a report shows (the differential checks compare a fast path
    /// with a from-scratch one on this; run counts may legitimately differ).
    pub(crate) fn same_output(&self, o: &RecStats) -> bool {
        self.bytes == o.bytes && self.ns_max == o.ns_max
    }
}

/// A recovery run from scratch on a crash image, its reads recorded.
/// `first_conflict` consumes the read trace, so only its verdict is kept.
pub(crate) struct Fresh<W: MemWrite> {
    pub rec: Recorder<W>,
    pub reads: ReadSet,
    /// Re-runs crashed after at most this many writes provably repeat the
    /// uninterrupted recovery ([`war`]); exact, so off with the dedup.
    pub proven: usize,
    pub report: RecoveryReport,
}

/// Recover `cur` from scratch through `info`'s registered recovery.
pub(crate) fn recover_from_scratch<'a>(
    info: &SchemeInfo,
    params: &crate::config::Params,
    layout: &Layout,
    cur: &'a SparseImage,
    opts: &CrashOptions,
) -> std::result::Result<Fresh<Overlay<'a, SparseImage>>, String> {
    recover_on(info, params, layout, Overlay::new(cur), opts, true)
}

/// [`recover_from_scratch`] on `img`, a crash image recovery may write.
/// `track`: record the reads and prove re-runs ([`war`]); otherwise the
/// reads are left empty and no re-run is proven (the caller proves them
/// some other way, or runs them).
pub(crate) fn recover_on<W: MemWrite>(
    info: &SchemeInfo,
    params: &crate::config::Params,
    layout: &Layout,
    img: W,
    opts: &CrashOptions,
    track: bool,
) -> std::result::Result<Fresh<W>, String> {
    if !track {
        let mut rec = Recorder::new(img);
        let report = guarded(|| (info.recover)(&mut rec, params, layout))?;
        return Ok(Fresh {
            rec,
            reads: ReadSet::default(),
            proven: 0,
            report,
        });
    }
    let mut tracked = Tracked::new(img);
    let report = guarded(|| (info.recover)(&mut tracked, params, layout))?;
    let (rec, reads, trace) = tracked.into_parts();
    let proven = if opts.dedup_recoveries {
        trace.first_conflict()
    } else {
        0
    };
    Ok(Fresh {
        rec,
        reads,
        proven,
        report,
    })
}

/// Per-worker results, merged in point order.
#[derive(Default)]
struct Tally {
    clean: u64,
    torn: u64,
    recovery_crash: u64,
    first: Option<Violation>,
    rec: RecStats,
    recovery_crashes: u64,
    tested: u64,
    torn_tested: u64,
    bg_tested: u64,
    /// Crash points inside background work, per kind.
    bg_by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// Points whose recoveries were reused ([`memo`]).
    dedup_hits: u64,
    dedup_mismatches: u64,
    /// Recovery crash points proven identical without a re-run ([`war`]).
    reruns_elided: u64,
    resumed: u64,
    resume_mismatches: u64,
    verdicts: Vec<(u64, Option<u8>, bool)>,
    /// Host seconds in the history pass and in the points' checks.
    history_s: f64,
    point_s: f64,
}

impl Tally {
    /// Keep the first violation; counts are per crash image.
    fn add(&mut self, v: Violation) {
        if self.first.is_none() {
            self.first = Some(v);
        }
    }

    /// Append a later chunk's results.
    fn merge(&mut self, o: Tally) {
        self.clean += o.clean;
        self.torn += o.torn;
        self.recovery_crash += o.recovery_crash;
        if self.first.is_none() {
            self.first = o.first;
        }
        self.rec.merge(&o.rec);
        self.recovery_crashes += o.recovery_crashes;
        self.tested += o.tested;
        self.torn_tested += o.torn_tested;
        self.bg_tested += o.bg_tested;
        for (k, n) in o.bg_by_kind {
            *self.bg_by_kind.entry(k).or_default() += n;
        }
        self.dedup_hits += o.dedup_hits;
        self.dedup_mismatches += o.dedup_mismatches;
        self.reruns_elided += o.reruns_elided;
        self.resumed += o.resumed;
        self.resume_mismatches += o.resume_mismatches;
        self.verdicts.extend(o.verdicts);
        self.history_s += o.history_s;
        self.point_s += o.point_s;
    }
}

/// What every worker reads.
struct Shared<'a> {
    info: &'static SchemeInfo,
    spec: &'a RunSpec,
    opts: &'a CrashOptions,
    layout: &'a Layout,
    params: &'a crate::config::Params,
    check: crate::workloads::CheckFn,
    check_incremental: Option<fn() -> Box<dyn crate::workloads::IncrementalCheck>>,
    item_bytes: u64,
    log: &'a crate::mem::PersistLog,
    events: &'a [crate::mem::PersistEvent],
    n: u64,
    single_mask: Option<u8>,
    tx_writes: &'a [(Addr, u64)],
    per_thread: &'a [Vec<crate::engine::TxRecord>],
    background: &'a [std::ops::Range<u64>],
    background_kinds: &'a [&'static str],
    /// The scheme's resumable recovery, when used ([`crate::recovery::scan`]).
    resume: Option<crate::recovery::NewScanFn>,
}

/// A worker's state across the points of its chunk.
struct Worker<'a> {
    oracle: Oracle<'a>,
    scratch: Scratch,
    memo: Option<Memo>,
    undo: Vec<(Addr, u64)>,
    /// The resumed recovery's scan state ([`crate::recovery::scan`]); the recovered
    /// image is the oracle's view.
    fast: Option<Fast>,
    /// Resuming was found unusable here (home writes met the scan's
    /// reads): every later point of the chunk recovers from scratch.
    fast_off: bool,
}

/// A worker's resumable scan, valid for the crash image of `at` events.
struct Fast {
    scan: Box<dyn ResumableScan>,
    at: u64,
    /// Bytes every cursor read before its last mark.
    stable: RangeSet,
    /// Per cursor: bytes read after its last mark (where it stopped).
    frontier: Vec<RangeSet>,
    /// Cursors whose frontier an event touched since they last ran.
    dirty: Vec<bool>,
    /// Bytes recovery's home writes cover (must not meet a read).
    homes: RangeSet,
    home_pieces: usize,
    /// Sum of the home pieces' hashes ([`Writes::digest`]).
    home_sum: u64,
    /// Scratch: one resume's home ranges, before they join `homes`.
    new_homes: Vec<(Addr, Addr)>,
}

#[derive(Default)]
struct Scratch {
    extra: FxHashMap<Addr, u64>,
    /// (thread, prefix) states whose invariant check passed.
    inv_memo: FxHashSet<(usize, u64)>,
    /// Per thread: the workload's incremental checker and the prefix of
    /// the last image it passed ([`invariant_shown_incrementally`]).
    inv_inc: Vec<(Box<dyn crate::workloads::IncrementalCheck>, Option<u64>)>,
    /// Scratch: words where two prefix images may differ.
    inv_changed: Vec<Addr>,
}

/// Crash-test any scheme entry, registered or not (tests use this to check
/// schemes that must not ship).
pub fn crashtest_with(
    info: &'static SchemeInfo,
    mut spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    if info.durability == Durability::Checkpoint {
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
                if m & !cov != 0 || m == 0 || m == cov {
                    return Err(Error::input(format!(
                        "invalid value '{m:#04x}' for '--tear-mask': the write in flight at point {point} covers words {cov:#04x}; the mask must be a non-empty proper subset (all of them is crash point {} untorn)",
                        point + 1
                    )));
                }
            }
            tear_mask
        }
        _ => None,
    };
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
    let (pool, host_threads, chunk) = parallel_plan(opts.host_threads, selected.len(), n)?;
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
    let check_host_seconds = start.elapsed().as_secs_f64();
    let background = &history.background;
    Ok(CrashReport {
        scheme: spec.scheme.clone(),
        workload: spec.workload.clone(),
        durability: info.durability,
        threads: spec.threads,
        tx: spec.tx,
        seed: spec.seed,
        persist_events: n,
        crash_points_tested: tally.tested,
        torn_points_tested: tally.torn_tested,
        recovery_crashes_tested: tally.recovery_crashes,
        background_persist_events: background.iter().map(|r| r.end - r.start).sum(),
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
        violations: tally.clean + tally.torn,
        clean_violations: tally.clean,
        torn_violations: tally.torn,
        recovery_crash_violations: tally.recovery_crash,
        first_violation: tally.first,
        points_per_second: tally.tested as f64 / check_host_seconds.max(1e-9),
        check_host_seconds,
        history_pass_host_seconds: tally.history_s,
        point_host_seconds: tally.point_s,
        sim_host_seconds,
        recovery_bytes_written_mean: tally.rec.bytes_mean(),
        recovery_modeled_ns_max: tally.rec.ns_max,
        deduplicated_points: tally.dedup_hits,
        dedup_mismatches: tally.dedup_mismatches,
        resumed_points: tally.resumed,
        resume_mismatches: tally.resume_mismatches,
        recovery_reruns_elided: tally.reruns_elided,
        host_threads,
        verdicts: tally.verdicts,
        torn: opts.torn || single_mask.is_some(),
    })
}

/// Check the crash points `pts` (ascending) in order.
fn check_chunk(
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
    let background = sh.background;
    let inside_background = |k: u64, torn: bool| background_range_of(background, k, torn);
    let count_bg = |tally: &mut Tally, at: Option<usize>| {
        if let Some(i) = at {
            tally.bg_tested += 1;
            if let Some(&kind) = sh.background_kinds.get(i) {
                *tally.bg_by_kind.entry(kind).or_default() += 1;
            }
        }
    };
    for &k in pts {
        let pass_start = Instant::now();
        // Events since the scan's point: one that touches what a cursor
        // read before its mark invalidates the scan; one on a frontier
        // makes that cursor resume.
        if let Some(f) = w.fast.as_mut() {
            let mut keep = true;
            let follows = f.scan.follows_writes();
            while f.at < k && keep {
                let e = &sh.events[f.at as usize];
                let len = e.len as u64;
                if follows {
                    // The scan re-reads what the write touched itself.
                    f.scan.persisted(e.addr, len);
                    f.dirty.fill(true);
                    f.at += 1;
                    continue;
                }
                if f.stable.overlaps(e.addr, len) {
                    keep = false;
                }
                for (c, fr) in f.frontier.iter().enumerate() {
                    if fr.overlaps(e.addr, len) {
                        f.dirty[c] = true;
                    }
                }
                f.at += 1;
            }
            if !keep {
                w.fast = None;
                w.oracle.view_drop();
            }
        }
        w.oracle.advance(k, sh.log);
        let point_start = Instant::now();
        tally.history_s += (point_start - pass_start).as_secs_f64();
        let mask = if k < sh.n {
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
        } else {
            None
        };
        if sh.single_mask.is_none() {
            tally.tested += 1;
            count_bg(&mut tally, inside_background(k, false));
            let ok = check_image(sh, &mut w, &mut tally, k, None);
            if !ok {
                tally.clean += 1;
            }
            tally.verdicts.push((k, None, ok));
        }
        if let Some(m) = mask {
            let ev = &sh.events[k as usize];
            let mut undo = std::mem::take(&mut w.undo);
            undo.clear();
            w.oracle.persist(ev.addr, sh.log.data(ev), m, &mut undo);
            tally.tested += 1;
            tally.torn_tested += 1;
            count_bg(&mut tally, inside_background(k, true));
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

/// Whether a from-scratch recovery of the current crash image writes the
/// image the resumed recovery keeps (with its finish writes), with the
/// same number of writes and the same digest.
fn same_as_resumed(sh: &Shared, w: &Worker) -> bool {
    let (Some(f), Some(view)) = (w.fast.as_ref(), w.oracle.view()) else {
        return false;
    };
    let mut rec = Recorder::new(Overlay::new(&w.oracle.cur));
    if (sh.info.recover)(&mut rec, sh.params, sh.layout).is_err() {
        return false;
    }
    let mut fin = Writes::default();
    f.scan.finish(&mut |a, d| fin.push(a, d));
    if f.scan
        .finish_summary()
        .is_some_and(|(n, sum)| n != fin.len() || sum.is_some_and(|x| x != pieces_sum(&fin)))
    {
        return false;
    }
    let mut img = Overlay::new(&view.img);
    fin.replay_onto(fin.len(), &mut img);
    let nw = f.home_pieces + fin.len();
    let digest = writes::digest_of(f.home_sum.wrapping_add(pieces_sum(&fin)), nw);
    if rec.writes() != nw || rec.writes.digest() != digest {
        return false;
    }
    let mut fast_words: Vec<Addr> = view.covered_words().collect();
    fast_words.extend_from_slice(fin.sort_words());
    fast_words.sort_unstable();
    fast_words.dedup();
    let words = rec.words_sorted().to_vec();
    first_difference(&img, &fast_words, &rec, &words, Addr::MAX).is_none()
}

/// The wrapping sum of the piece hashes of `w` (its digest's sum).
fn pieces_sum(w: &Writes) -> u64 {
    w.pieces(w.len()).fold(0u64, |acc, (a, d)| {
        acc.wrapping_add(writes::piece_hash(a, d))
    })
}

/// Bring the worker's scan up to crash point `k`: resume the cursors
/// whose frontier changed (all of them when new), keep their home writes
/// in the recovered image. `None`: dropped (see [`check_resumed`]).
fn resume_scan(sh: &Shared, w: &mut Worker, k: u64) -> Option<()> {
    let new_scan = sh.resume?;
    let Worker {
        oracle,
        fast,
        fast_off,
        ..
    } = w;
    let fail = |fast: &mut Option<Fast>, oracle: &mut Oracle| {
        *fast = None;
        oracle.view_drop();
        None
    };
    loop {
        let fresh = fast.is_none();
        if fresh {
            oracle.view_start();
            let scan = new_scan(sh.params, sh.layout);
            let n = scan.cursors();
            *fast = Some(Fast {
                scan,
                at: k,
                stable: Default::default(),
                frontier: vec![Default::default(); n],
                dirty: vec![true; n],
                homes: Default::default(),
                home_pieces: 0,
                home_sum: 0,
                new_homes: Vec::new(),
            });
        }
        let f = fast.as_mut().expect("just set");
        debug_assert_eq!(f.at, k);
        let follows = f.scan.follows_writes();
        for c in 0..f.frontier.len() {
            if !f.dirty[c] {
                continue;
            }
            f.dirty[c] = false;
            let mut io = FastIo {
                img: &oracle.cur,
                reads: Default::default(),
                homes: Writes::default(),
                rehomes: Vec::new(),
                mark: (0, 0, 0),
                can_restart: f.home_pieces == 0,
            };
            let scan = &mut f.scan;
            if guarded(|| scan.resume(c, &mut io)).is_err() {
                return fail(fast, oracle);
            }
            let FastIo {
                reads,
                homes,
                rehomes,
                mark: (mr, mh, mx),
                ..
            } = io;
            let reads = reads.into_inner();
            f.frontier[c].clear();
            for &(s, e) in &reads[..mr] {
                f.stable.insert(s, e);
            }
            for &(s, e) in &reads[mr..] {
                f.frontier[c].insert(s, e);
            }
            let mut met = reads.iter().any(|&(s, e)| f.homes.overlaps(s, e - s));
            // A scan that follows the writes keeps the hull of each resume's
            // home writes (a superset: scattered words would make the range
            // set's inserts quadratic).
            let mut hull = (Addr::MAX, 0);
            // Inserted into `homes` together after the loop (nothing in it
            // reads `homes`).
            let mut new_homes = std::mem::take(&mut f.new_homes);
            let mut home = |f: &mut Fast, oracle: &mut Oracle, a: Addr, d: &[u8]| {
                let len = d.len() as u64;
                let met =
                    f.stable.overlaps(a, len) || f.frontier.iter().any(|fr| fr.overlaps(a, len));
                if follows {
                    hull = (hull.0.min(a), hull.1.max(a + len));
                } else {
                    new_homes.push((a, a + len));
                }
                f.home_sum = f.home_sum.wrapping_add(writes::piece_hash(a, d));
                oracle.view_home(a, d);
                met
            };
            for (a, d) in homes.pieces(mh) {
                f.home_pieces += 1;
                met |= home(f, oracle, a, d);
            }
            for r in &rehomes[..mx] {
                f.home_sum = f.home_sum.wrapping_sub(r.old_hash);
                match &r.new {
                    Some(d) => met |= home(f, oracle, r.addr, &d[..r.len as usize]),
                    None => {
                        f.home_pieces -= 1;
                        oracle.view_unhome(r.addr, u64::from(r.len));
                    }
                }
            }
            f.homes.insert_all(&mut new_homes);
            f.new_homes = new_homes;
            if hull.0 < hull.1 {
                f.homes.insert(hull.0, hull.1);
            }
            if met {
                // Home writes that may change bytes a scan read: the crashed
                // re-runs inside the replay are no longer provably identical.
                *fast_off = true;
                return fail(fast, oracle);
            }
        }
        if !f.scan.stale() {
            oracle.refresh_stale();
            return Some(());
        }
        if fresh {
            return fail(fast, oracle);
        }
        // A write the state could not absorb: start over at this point.
        *fast = None;
        oracle.view_drop();
    }
}

/// Recover crash point `k` (untorn) by resuming the worker's scan
/// ([`crate::recovery::scan`]) and check it. `None`: the scan could not be used (a
/// recovery error or panic, or home writes that meet the scan's reads);
/// the state is dropped and the caller recovers from scratch.
fn check_resumed(sh: &Shared, w: &mut Worker, tally: &mut Tally, k: u64) -> Option<bool> {
    resume_scan(sh, w, k)?;
    let Worker {
        oracle,
        scratch,
        fast,
        ..
    } = w;
    let f = fast.as_mut().expect("kept by resume_scan");
    let oracle: &Oracle = oracle;
    let view = oracle.view().expect("kept with the scan");
    let (info, params, layout) = (sh.info, sh.params, sh.layout);
    // The finish writes over the kept image; the first one that changes a
    // byte some read saw bounds the proven re-runs (all reads come before
    // every write in the from-scratch recovery).
    // A finish the scan summarises is not built (`finish_summary`).
    let summary = f
        .scan
        .finish_summary()
        .filter(|_| f.scan.finish_reruns_repeat());
    let mut fin = Writes::default();
    if summary.is_none() {
        f.scan.finish(&mut |a, d| fin.push(a, d));
    }
    let report = f.scan.report(params);
    let mut img = Overlay::new(&view.img);
    let mut proven = usize::MAX;
    let mut old = [0u8; crate::types::LINE_BYTES as usize];
    for (i, (a, d)) in fin.pieces(fin.len()).enumerate() {
        let len = d.len() as u64;
        img.read_bytes(a, &mut old[..d.len()]);
        if proven == usize::MAX
            && old[..d.len()] != *d
            && (f.stable.overlaps(a, len) || f.frontier.iter().any(|fr| fr.overlaps(a, len)))
        {
            proven = f.home_pieces + i;
        }
        img.write_bytes(a, d);
    }
    let (fin_len, fin_sum) = match summary {
        Some((n, sum)) => (n, sum.unwrap_or(0)),
        None => (fin.len(), pieces_sum(&fin)),
    };
    let nw = f.home_pieces + fin_len;
    let digest = writes::digest_of(f.home_sum.wrapping_add(fin_sum), nw);
    fin.sort_words();
    tally.rec.add(report.bytes_written, report.modeled_ns);
    tally.resumed += 1;
    // Without finish writes the kept image is the recovered one (the
    // checker's reads then skip the empty overlay).
    let rec: &dyn MemRead = if fin.is_empty() { &view.img } else { &img };
    let mut ok = check_recovered_with(sh, oracle, scratch, tally, k, None, rec, &fin.words, true);
    let key = digest.wrapping_mul(2);
    // A re-run crashed among the finish writes the scheme proves
    // repeats the uninterrupted recovery (`finish_reruns_repeat`).
    let repeats = f.scan.finish_reruns_repeat();
    for m in points::recovery_points(sh.spec.seed, key, nw, sh.opts.recovery_crashes) {
        tally.recovery_crashes += 1;
        if m <= proven || repeats {
            tally.reruns_elided += 1;
            continue;
        }
        // proven >= the home writes: the crash fell among the finish
        // writes, so the crashed image is the kept one plus some of them.
        let mut ov = Overlay::new(&view.img);
        fin.replay_onto(m - f.home_pieces, &mut ov);
        let mut rec2 = Recorder::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        // Both images are the kept one with writes over it: they can only
        // differ where the finish writes or the re-run wrote.
        if let Some(v) =
            rerun_violation(sh, oracle, k, None, m, nw, res, &img, &fin.words, &mut rec2)
        {
            ok = false;
            tally.recovery_crash += 1;
            tally.add(v);
            break;
        }
    }
    Some(ok)
}

/// A [`ScanIo`] over the crash image that records the reads and
/// keeps home writes, with the position of the last mark.
struct FastIo<'a> {
    img: &'a SparseImage,
    reads: std::cell::RefCell<Vec<(Addr, Addr)>>,
    homes: Writes,
    rehomes: Vec<Rehome>,
    /// Reads, home writes and replacements before the last mark.
    mark: (usize, usize, usize),
    /// No home write of this scan was applied yet ([`ScanIo::restart`]).
    can_restart: bool,
}

/// A home write of an earlier resume replaced or withdrawn
/// ([`ScanIo::rehome`]).
struct Rehome {
    addr: Addr,
    /// [`writes::piece_hash`] of the replaced piece.
    old_hash: u64,
    len: u8,
    new: Option<[u8; LINE_BYTES as usize]>,
}

impl FastIo<'_> {
    fn note(&self, start: Addr, end: Addr) {
        if end <= start {
            return;
        }
        let mut r = self.reads.borrow_mut();
        // Extend the last range (never across the mark).
        if r.len() > self.mark.0 {
            if let Some(last) = r.last_mut() {
                if start >= last.0 && start <= last.1 {
                    last.1 = last.1.max(end);
                    return;
                }
            }
        }
        r.push((start, end));
    }
}

impl MemRead for FastIo<'_> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.note(addr, addr + buf.len() as u64);
        self.img.read_bytes(addr, buf);
    }

    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        let z = self.img.zeros_until(addr, end);
        self.note(addr, z);
        z
    }
}

impl ScanIo for FastIo<'_> {
    fn home(&mut self, addr: Addr, data: &[u8]) {
        self.homes.push(addr, data);
    }

    fn mark(&mut self) {
        self.mark = (
            self.reads.get_mut().len(),
            self.homes.len(),
            self.rehomes.len(),
        );
    }

    fn rehome(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>) {
        assert!(
            old.len() <= LINE_BYTES as usize
                && (addr % LINE_BYTES) + old.len() as u64 <= LINE_BYTES,
            "a replaced home write is one piece (within a 64 B line)"
        );
        self.rehomes.push(Rehome {
            addr,
            old_hash: writes::piece_hash(addr, old),
            len: old.len() as u8,
            new: new.map(|d| {
                assert_eq!(d.len(), old.len(), "a replacement keeps the length");
                let mut b = [0u8; LINE_BYTES as usize];
                b[..d.len()].copy_from_slice(d);
                b
            }),
        });
    }

    fn restart(&mut self) -> bool {
        // The reads so far stay recorded: the new scan reads them again,
        // and keeping them stable only makes the state drop sooner.
        if self.can_restart {
            self.homes.clear();
            self.rehomes.clear();
            self.mark.1 = 0;
            self.mark.2 = 0;
        }
        self.can_restart
    }
}

/// The violation of a recovery crashed after `m` of its `total` writes and
/// re-run (`res`, writes recorded by `rec2`), compared with the
/// uninterrupted recovery `first` (sorted words written `first_words`;
/// both images share a base, so only written words can differ).
#[allow(clippy::too_many_arguments)]
fn rerun_violation<W: MemWrite>(
    sh: &Shared,
    oracle: &Oracle,
    k: u64,
    mask: Option<u8>,
    m: usize,
    total: usize,
    res: std::result::Result<RecoveryReport, String>,
    first: &dyn MemRead,
    first_words: &[Addr],
    rec2: &mut Recorder<W>,
) -> Option<Violation> {
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
    let torn_note = mask
        .map(|m| format!(" with the write in flight torn (mask {m:#04x})"))
        .unwrap_or_default();
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
fn check_scratch(sh: &Shared, w: &mut Worker, tally: &mut Tally, k: u64, mask: Option<u8>) -> bool {
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
        if memo.holds_at(k, sh.events) && memo.reruns_match(&oracle.cur, sh.layout.home_limit) {
            let mut img = Overlay::new(&oracle.cur);
            memo.writes.replay_onto(memo.writes.len(), &mut img);
            tally.rec.add(memo.bytes_written, memo.modeled_ns);
            tally.recovery_crashes += memo.reruns() as u64;
            tally.reruns_elided += memo.elided as u64;
            tally.dedup_hits += 1;
            if sh.opts.verify_dedup
                && !same_as_from_scratch(sh, &oracle.cur, &img, &memo.writes.words)
            {
                tally.dedup_mismatches += 1;
            }
            let ok = check_recovered(
                sh,
                oracle,
                scratch,
                tally,
                k,
                mask,
                &img,
                &memo.writes.words,
            );
            drop(img);
            *memo_slot = Some(memo);
            return ok;
        }
    }
    let replay = || replay_line(sh.spec, sh.opts, k, mask);
    let torn_note = mask
        .map(|m| format!(" with the write in flight torn (mask {m:#04x})"))
        .unwrap_or_default();
    let fresh = match recover_from_scratch(sh.info, sh.params, sh.layout, &oracle.cur, sh.opts) {
        Ok(f) => f,
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
    let Fresh {
        mut rec,
        mut reads,
        proven,
        report,
    } = fresh;
    let (info, params, layout, cur) = (sh.info, sh.params, sh.layout, &oracle.cur);
    tally.rec.add(report.bytes_written, report.modeled_ns);
    rec.words_sorted();
    let mut ok = check_recovered(sh, oracle, scratch, tally, k, mask, &rec, &rec.writes.words);
    // Crash recovery itself and recover again: the home image must match.
    // The crash points inside recovery are seeded by what recovery wrote
    // (a function of the crash image), so identical recoveries are crashed
    // identically and can be deduplicated.
    let key = rec.writes.digest().wrapping_mul(2) + u64::from(mask.is_some());
    let mut reruns: Vec<(usize, Writes)> = Vec::new();
    let mut elided = 0usize;
    for m in points::recovery_points(sh.spec.seed, key, rec.writes(), sh.opts.recovery_crashes) {
        tally.recovery_crashes += 1;
        if m <= proven {
            // Same reads, same writes, same image: nothing to compare, and
            // the re-run reads nothing the first run did not.
            elided += 1;
            tally.reruns_elided += 1;
            if sh.opts.verify_dedup {
                let mut ov = Overlay::new(cur);
                rec.writes.replay_onto(m, &mut ov);
                let mut rec2 = Recorder::new(ov);
                let same = (info.recover)(&mut rec2, params, layout).is_ok() && {
                    let w2 = rec2.words_sorted().to_vec();
                    first_difference(&rec, &rec.writes.words, &rec2, &w2, Addr::MAX).is_none()
                };
                if !same {
                    tally.dedup_mismatches += 1;
                }
            }
            continue;
        }
        let mut ov = Overlay::new(cur);
        rec.writes.replay_onto(m, &mut ov);
        let mut rec2 = Tracked::new(ov);
        let res = guarded(|| (info.recover)(&mut rec2, params, layout));
        let (mut rec2, reads2, _) = rec2.into_parts();
        reads.extend(&reads2);
        if let Some(v) = rerun_violation(
            sh,
            oracle,
            k,
            mask,
            m,
            rec.writes(),
            res,
            &rec,
            &rec.writes.words,
            &mut rec2,
        ) {
            ok = false;
            tally.recovery_crash += 1;
            tally.add(v);
            break;
        }
        reruns.push((m, std::mem::take(&mut rec2.writes)));
    }
    if ok && memoize {
        reads.seal();
        *memo_slot = Some(Memo::new(
            k,
            reads,
            std::mem::take(&mut rec.writes),
            report.bytes_written,
            report.modeled_ns,
            reruns,
            elided,
        ));
    }
    ok
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

/// Check a recovered image `rec` (recovery wrote the sorted words
/// `written`) against the oracle and the workload's invariants.
#[allow(clippy::too_many_arguments)]
fn check_recovered(
    sh: &Shared,
    oracle: &Oracle,
    scratch: &mut Scratch,
    tally: &mut Tally,
    k: u64,
    mask: Option<u8>,
    rec: &dyn MemRead,
    written: &[Addr],
) -> bool {
    check_recovered_with(sh, oracle, scratch, tally, k, mask, rec, written, false)
}

/// [`check_recovered`]; `view`: `rec` is the oracle's kept recovered
/// image ([`oracle::RecView`]) with writes to the sorted words `written`
/// over it (resumed recovery).
#[allow(clippy::too_many_arguments)]
fn check_recovered_with(
    sh: &Shared,
    oracle: &Oracle,
    scratch: &mut Scratch,
    tally: &mut Tally,
    k: u64,
    mask: Option<u8>,
    rec: &dyn MemRead,
    written: &[Addr],
    view: bool,
) -> bool {
    let replay = || replay_line(sh.spec, sh.opts, k, mask);
    let torn_note = mask
        .map(|m| format!(" with the write in flight torn (mask {m:#04x})"))
        .unwrap_or_default();
    let layout = sh.layout;
    let mut ok = true;
    for t in 0..layout.threads {
        let detail = tally.first.is_none();
        match oracle.check_thread_with(t, k, rec, written, &mut scratch.extra, detail, view) {
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
                                sh.spec.workload
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
                        sh.info.durability, m.prefix, m.words_differing, m.addr, m.expected, m.found
                    ),
                    replay: replay(),
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

/// First word below `limit` where two recovered images differ; only words
/// either recovery wrote (sorted lists) can differ (both start from the
/// same crash image).
fn first_difference(
    a: &dyn MemRead,
    a_words: &[Addr],
    b: &dyn MemRead,
    b_words: &[Addr],
    limit: Addr,
) -> Option<(Addr, u64, u64)> {
    // Merge the two sorted lists in address order.
    let (mut i, mut j) = (0, 0);
    loop {
        let w = match (a_words.get(i), b_words.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => return None,
        };
        if w >= limit {
            return None;
        }
        i += usize::from(a_words.get(i) == Some(&w));
        j += usize::from(b_words.get(j) == Some(&w));
        let (x, y) = (a.read_u64(w), b.read_u64(w));
        if x != y {
            return Some((w, x, y));
        }
    }
}

/// Mean persist events between sampled points from which
/// [`parallel_plan`] gives one chunk per host thread.
const SPARSE_GAP_EVENTS: u64 = 256;

/// Run `check` on contiguous chunks of `selected` on `pool` (rayon's global
/// pool if `None`), each chunk with its own copy of `initial` (images are
/// not `Sync`); results come back in point order, so they do not depend on
/// the thread count. Progress (points done, total) is reported on the
/// calling thread, so the callback need not be `Send`.
pub(crate) fn run_chunks<R: Send>(
    pool: Option<rayon::ThreadPool>,
    selected: &[u64],
    chunk: usize,
    initial: &SparseImage,
    progress: &mut dyn FnMut(u64, u64),
    check: impl Fn(&[u64], SparseImage, &mut std::sync::mpsc::Sender<u64>) -> R + Sync,
) -> Result<Vec<R>> {
    let jobs: Vec<(&[u64], SparseImage)> = selected
        .chunks(chunk)
        .map(|c| (c, initial.clone()))
        .collect();
    let total = selected.len() as u64;
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    std::thread::scope(|s| {
        let check = &check;
        let work = move || -> Vec<R> {
            use rayon::prelude::*;
            jobs.into_par_iter()
                .map_with(tx, |tx, (pts, initial)| check(pts, initial, tx))
                .collect()
        };
        let h = s.spawn(move || match &pool {
            Some(p) => p.install(work),
            None => work(),
        });
        let mut done = 0u64;
        for d in rx {
            done += d;
            progress(done, total);
        }
        h.join()
    })
    .map_err(|_| Error::Internal("a crash-test worker panicked".into()))
}

/// The host threads that verify crash points (`host_threads` 0 = rayon's
/// global pool) and the chunk of consecutive points each job takes: a few
/// chunks per thread, at least 64 points each. Shared by the transactional
/// driver and the epoch oracle, whose chunks are merged in point order.
///
/// Sampled points far apart (on average [`SPARSE_GAP_EVENTS`] or more of
/// the `events` persist events between two): one chunk per thread. Every
/// chunk's worker brings its images from point 0 to its first point, so
/// with sparse points the history pass, not the points, is the cost to
/// balance, and each further chunk would repeat part of it.
pub(crate) fn parallel_plan(
    host_threads: usize,
    points: usize,
    events: u64,
) -> Result<(Option<rayon::ThreadPool>, usize, usize)> {
    let pool = match host_threads {
        0 => None,
        t => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .map_err(|e| Error::Internal(format!("thread pool: {e}")))?,
        ),
    };
    let threads = pool
        .as_ref()
        .map_or_else(rayon::current_num_threads, |p| p.current_num_threads());
    let chunk = if events / (points.max(1) as u64) >= SPARSE_GAP_EVENTS {
        points.div_ceil(threads.max(1)).max(1)
    } else {
        points
            .div_ceil(threads.max(1) * 3)
            .max(64)
            .min(points.max(1))
    };
    Ok((pool, threads, chunk))
}
