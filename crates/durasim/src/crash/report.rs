//! What a crash test reports: the violations found ([`Violation`], with a
//! replay line each), the [`CrashReport`] and its JSON, and the recovery
//! counts both drivers tally into it ([`RecStats`]).

use crate::recovery::Durability;
use crate::types::Addr;

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
    /// A violation of `kind` at crash point `point` (torn by `tear_mask`)
    /// naming no thread, word or recovery crash; callers fill those in.
    pub(super) fn plain(
        kind: ViolationKind,
        point: u64,
        tear_mask: Option<u8>,
        message: String,
        replay: String,
    ) -> Violation {
        Violation {
            kind,
            point,
            tear_mask,
            recovery_writes_persisted: None,
            thread: None,
            addr: None,
            expected: None,
            found: None,
            message,
            replay,
        }
    }

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

/// How a violation's message names a torn image: the write in flight and
/// its tear mask (empty for an untorn image).
pub(super) fn torn_note(mask: Option<u8>) -> String {
    mask.map(|m| format!(" with the write in flight torn (mask {m:#04x})"))
        .unwrap_or_default()
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
    /// The scheme's declared recovery paths and the crash points in each.
    pub recovery_paths: Vec<super::coverage::PathCoverage>,
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
    /// provably identical recovery inputs ([`super::memo`]).
    pub deduplicated_points: u64,
    /// Host threads that verified points.
    pub host_threads: usize,
    /// Recovery crash points verified by the write-after-read argument
    /// ([`super::war`]) instead of a re-run (included in `recovery_crashes_tested`).
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
    pub(super) torn: bool,
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
            "recovery_paths": self.recovery_paths.iter().map(|c| (c.name.to_string(), serde_json::json!({"windows": c.windows, "persist_events": c.persist_events, "points_tested": c.points_tested}))).collect::<serde_json::Map<_, _>>(),
            "uncovered_recovery_paths": super::coverage::uncovered(&self.recovery_paths),
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

/// A report's host timings and the host threads that verified points.
pub(super) struct Timing {
    pub sim_host_seconds: f64,
    pub check_host_seconds: f64,
    pub host_threads: usize,
}

/// Recoveries counted in a report: how many ran (from scratch, replayed
/// or resumed), the bytes they wrote (for the mean) and the longest
/// modelled recovery time. Shared by the transactional driver's and the
/// epoch oracle's tallies.
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
