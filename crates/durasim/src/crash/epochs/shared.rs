//! What every epoch worker reads ([`EpochShared`]) and what a chunk counts
//! ([`EpochTally`], merged in point order).

use super::super::options::CrashOptions;
use super::super::report::{RecStats, Violation};
use crate::engine::RunSpec;
use crate::mem::Layout;
use crate::recovery::writes::Writes;
use crate::recovery::NewUnitsFn;
use crate::schemes::SchemeInfo;
use crate::types::Addr;

/// What every epoch worker reads.
pub(super) struct EpochShared<'a> {
    pub(super) info: &'static SchemeInfo,
    pub(super) spec: &'a RunSpec,
    pub(super) opts: &'a CrashOptions,
    pub(super) layout: &'a Layout,
    pub(super) params: &'a crate::config::Params,
    pub(super) reader: Option<crate::schemes::checkpoint::ReadContextsFn>,
    pub(super) records: &'a [crate::schemes::checkpoint::CheckpointRecord],
    pub(super) log: &'a crate::mem::PersistLog,
    pub(super) events: &'a [crate::mem::PersistEvent],
    pub(super) n: u64,
    /// The tear mask of a single point given with one (replay): only that
    /// torn image is checked.
    pub(super) single_mask: Option<u8>,
    pub(super) writes: &'a [Vec<(Addr, u64)>],
    pub(super) op_start: &'a [Vec<u64>],
    /// The scheme's recovery as units, when used ([`crate::recovery::UnitRecovery`]).
    pub(super) units: Option<NewUnitsFn>,
    /// The scheme's recovery copies home (`RecoveryForm::CopiesHome`).
    pub(super) copies_home: bool,
}

impl EpochShared<'_> {
    /// Whether every crashed re-run of a recovery that wrote `writes` is
    /// proven by `RecoveryForm::CopiesHome`: the scheme copies home and
    /// every write lies below the home limit (so none changes a byte of
    /// the reserved area).
    pub(super) fn reruns_repeat(&self, writes: &Writes) -> bool {
        self.copies_home
            && writes
                .pieces(writes.len())
                .all(|(a, d)| a + d.len() as u64 <= self.layout.home_limit)
    }
}

/// One chunk's results, merged in point order.
#[derive(Default)]
pub(super) struct EpochTally {
    pub(super) clean: u64,
    pub(super) torn_v: u64,
    pub(super) rec_crash_v: u64,
    pub(super) rec_crashes: u64,
    pub(super) tested: u64,
    pub(super) torn_tested: u64,
    pub(super) first: Option<Violation>,
    pub(super) verdicts: Vec<(u64, Option<u8>, bool)>,
    pub(super) rec: RecStats,
    pub(super) counts: ElideCounts,
    /// Untorn points checked on a kept recovery ([`super::kept::Kept`]): from scratch,
    /// or per unit.
    pub(super) deduplicated: u64,
    pub(super) resumed: u64,
    /// Host seconds in the history pass and in the points' checks.
    pub(super) history_s: f64,
    pub(super) point_s: f64,
}

impl EpochTally {
    /// Append a later chunk's results.
    pub(super) fn merge(&mut self, p: EpochTally) {
        self.clean += p.clean;
        self.torn_v += p.torn_v;
        self.rec_crash_v += p.rec_crash_v;
        self.rec_crashes += p.rec_crashes;
        self.tested += p.tested;
        self.torn_tested += p.torn_tested;
        if self.first.is_none() {
            self.first = p.first;
        }
        self.verdicts.extend(p.verdicts);
        self.rec.merge(&p.rec);
        self.counts.elided += p.counts.elided;
        self.counts.mismatches += p.counts.mismatches;
        self.deduplicated += p.deduplicated;
        self.resumed += p.resumed;
        self.history_s += p.history_s;
        self.point_s += p.point_s;
    }
}

/// Recovery re-runs proven identical (crash/war.rs) and, with
/// `verify_dedup`, how many of them (or of the points whose kept recovery
/// was reused) differed when run anyway (a bug; 0).
#[derive(Default)]
pub(super) struct ElideCounts {
    pub(super) elided: u64,
    pub(super) mismatches: u64,
}
