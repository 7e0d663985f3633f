//! Recovery contracts: what a scheme promises after a crash
//! ([`Durability`]), what its recovery returns ([`RecoveryReport`]), and
//! how the recovery is written ([`RecoveryForm`]), which decides the fast
//! paths crash verification may take. Below the schemes and the crash
//! checker, so that both depend on it and neither on the other: a scheme
//! writes its recovery as a [`scan`] or as [`units`] and crash/ reads only
//! what its registry entry declares.

pub mod scan;
pub mod units;
pub mod writes;

pub use scan::{recover_by_scan, NewScanFn, RangeSet, ResumableScan, ScanIo};
pub use units::{recover_by_units, NewUnitsFn, UnitCounts, UnitRecovery};

use crate::config::Params;
use crate::error::Result;
use crate::mem::{Layout, MemWrite};

/// What a scheme promises after a crash (the oracle checks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every transaction whose TxEnd returned survives, atomically.
    AtCommit,
    /// State rolls back to the last completed checkpoint/epoch.
    Checkpoint,
    /// Any prefix in commit order that includes what was reported persisted.
    Delayed,
    /// No guarantee (the native system; the oracle must reject it).
    None,
}

/// Result of a scheme's recovery on a crashed image.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Modeled recovery time (see each scheme's model).
    pub modeled_ns: f64,
    /// Scheme-specific numbers (transactions replayed, rolled back, ...).
    pub details: Vec<(&'static str, f64)>,
}

/// Recovery: a function of the durable bytes alone.
pub type RecoverFn =
    fn(image: &mut dyn MemWrite, params: &Params, layout: &Layout) -> Result<RecoveryReport>;

/// How a scheme's recovery is written. Crash verification is exact on
/// every form; the structured ones let it reuse work across crash points
/// (a mutant of the scheme, built with other hooks but the same recovery,
/// keeps the form).
#[derive(Clone, Copy, Debug)]
pub enum RecoveryForm {
    /// Any function of the bytes: every crash point recovers from scratch
    /// (or replays a recovery whose reads no event touched).
    Plain,
    /// A [`ResumableScan`]: the scheme's recovery must be
    /// [`recover_by_scan`] of this scan, so that a resumed scan and a
    /// recovery from scratch run the same code.
    Scan(NewScanFn),
    /// A checkpoint recovery as [`UnitRecovery`] units: the scheme's
    /// recovery must be [`recover_by_units`] of them.
    Units(NewUnitsFn),
    /// A checkpoint recovery that *copies home* (ckpt-cow's, argued at its
    /// `recover`): it reads its metadata and copies in the reserved area
    /// only, and at home only a line it then writes with copy bytes if
    /// they differ; a later copy of the same line wins. So the home lines
    /// it reads do not steer it, and a re-run crashed after any of its
    /// writes, whose reads of the reserved area are unchanged when every
    /// write lies at home, ends on the same image (each named line holds
    /// its last copy, the others the crash image): every re-run is proven
    /// although recovery reads what it writes.
    CopiesHome,
}

impl RecoveryForm {
    /// The resumable scan, if recovery is one.
    pub fn scan(self) -> Option<NewScanFn> {
        match self {
            RecoveryForm::Scan(f) => Some(f),
            _ => None,
        }
    }

    /// The units, if recovery is written as units.
    pub fn units(self) -> Option<NewUnitsFn> {
        match self {
            RecoveryForm::Units(f) => Some(f),
            _ => None,
        }
    }

    /// Whether recovery copies home ([`RecoveryForm::CopiesHome`]).
    pub fn copies_home(self) -> bool {
        matches!(self, RecoveryForm::CopiesHome)
    }
}
