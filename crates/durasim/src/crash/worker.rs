//! The transactional driver's worker state: what every worker reads
//! ([`Shared`]), what one keeps across the points of its chunk ([`Worker`],
//! with its resumable scan [`Fast`] and check [`Scratch`]), and what it
//! counts ([`Tally`], merged in point order). Data only; the checks live in
//! `chunk.rs`, `check.rs` and `resume.rs`.

use super::memo::Memo;
use super::options::CrashOptions;
use super::oracle::Oracle;
use super::report::{RecStats, Violation};
use crate::engine::RunSpec;
use crate::mem::Layout;
use crate::recovery::{RangeSet, ResumableScan};
use crate::schemes::SchemeInfo;
use crate::types::Addr;
use rustc_hash::{FxHashMap, FxHashSet};

/// Per-worker results, merged in point order.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) clean: u64,
    pub(super) torn: u64,
    pub(super) recovery_crash: u64,
    pub(super) first: Option<Violation>,
    pub(super) rec: RecStats,
    pub(super) recovery_crashes: u64,
    pub(super) tested: u64,
    pub(super) torn_tested: u64,
    pub(super) bg_tested: u64,
    /// Crash points inside background work, per kind.
    pub(super) bg_by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// Points whose recoveries were reused ([`super::memo`]).
    pub(super) dedup_hits: u64,
    pub(super) dedup_mismatches: u64,
    /// Recovery crash points proven identical without a re-run ([`super::war`]).
    pub(super) reruns_elided: u64,
    pub(super) resumed: u64,
    pub(super) resume_mismatches: u64,
    pub(super) verdicts: Vec<(u64, Option<u8>, bool)>,
    /// Host seconds in the history pass and in the points' checks.
    pub(super) history_s: f64,
    pub(super) point_s: f64,
}

impl Tally {
    /// Keep the first violation; counts are per crash image.
    pub(super) fn add(&mut self, v: Violation) {
        if self.first.is_none() {
            self.first = Some(v);
        }
    }

    /// Append a later chunk's results.
    pub(super) fn merge(&mut self, o: Tally) {
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
pub(super) struct Shared<'a> {
    pub(super) info: &'static SchemeInfo,
    pub(super) spec: &'a RunSpec,
    pub(super) opts: &'a CrashOptions,
    pub(super) layout: &'a Layout,
    pub(super) params: &'a crate::config::Params,
    pub(super) check: crate::workloads::CheckFn,
    pub(super) check_incremental: Option<fn() -> Box<dyn crate::workloads::IncrementalCheck>>,
    pub(super) item_bytes: u64,
    pub(super) log: &'a crate::mem::PersistLog,
    pub(super) events: &'a [crate::mem::PersistEvent],
    pub(super) n: u64,
    pub(super) single_mask: Option<u8>,
    pub(super) tx_writes: &'a [(Addr, u64)],
    pub(super) per_thread: &'a [Vec<crate::engine::TxRecord>],
    pub(super) background: &'a [std::ops::Range<u64>],
    pub(super) background_kinds: &'a [&'static str],
    /// The scheme's resumable recovery, when used ([`crate::recovery::scan`]).
    pub(super) resume: Option<crate::recovery::NewScanFn>,
}

/// A worker's state across the points of its chunk.
pub(super) struct Worker<'a> {
    pub(super) oracle: Oracle<'a>,
    pub(super) scratch: Scratch,
    pub(super) memo: Option<Memo>,
    pub(super) undo: Vec<(Addr, u64)>,
    /// The resumed recovery's scan state ([`crate::recovery::scan`]); the recovered
    /// image is the oracle's view.
    pub(super) fast: Option<Fast>,
    /// Resuming was found unusable here (home writes met the scan's
    /// reads): every later point of the chunk recovers from scratch.
    pub(super) fast_off: bool,
}

/// A worker's resumable scan, valid for the crash image of `at` events.
pub(super) struct Fast {
    pub(super) scan: Box<dyn ResumableScan>,
    pub(super) at: u64,
    /// Bytes every cursor read before its last mark.
    pub(super) stable: RangeSet,
    /// Per cursor: bytes read after its last mark (where it stopped).
    pub(super) frontier: Vec<RangeSet>,
    /// Cursors whose frontier an event touched since they last ran.
    pub(super) dirty: Vec<bool>,
    /// Bytes recovery's home writes cover (must not meet a read).
    pub(super) homes: RangeSet,
    pub(super) home_pieces: usize,
    /// Sum of the home pieces' hashes ([`crate::recovery::writes::Writes::digest`]).
    pub(super) home_sum: u64,
    /// Scratch: one resume's home ranges, before they join `homes`.
    pub(super) new_homes: Vec<(Addr, Addr)>,
}

#[derive(Default)]
pub(super) struct Scratch {
    pub(super) extra: FxHashMap<Addr, u64>,
    /// (thread, prefix) states whose invariant check passed.
    pub(super) inv_memo: FxHashSet<(usize, u64)>,
    /// Per thread: the workload's incremental checker and the prefix of
    /// the last image it passed (`check::invariant_shown_incrementally`).
    pub(super) inv_inc: Vec<(Box<dyn crate::workloads::IncrementalCheck>, Option<u64>)>,
    /// Scratch: words where two prefix images may differ.
    pub(super) inv_changed: Vec<Addr>,
}
