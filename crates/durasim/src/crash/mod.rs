//! Crash verification, generic over schemes: run a workload with history
//! recording, then for each selected crash point k build the durable state
//! (initial media + persist events `0..k`, optionally with the event in
//! flight torn), run the scheme's recovery on those bytes alone, and check
//! the result with the atomic-durability oracle ([`oracle`]) and the
//! workload's invariant checker. Recovery itself is crashed at seeded points
//! of its own writes and must then recover to the same image.
//!
//! The crashed image is maintained incrementally (events are applied in
//! order as k grows) and recovery runs on a copy-on-write
//! [`Overlay`](crate::mem::Overlay), so a crash point costs about one
//! recovery plus a check proportional to what can differ, never a copy of
//! the image.
//!
//! Where things are: what to test and the report (`options.rs`,
//! `report.rs`); the recorded run and the parallel chunks both drivers use
//! (`history.rs`, `parallel.rs`); recording a recovery (`recorder.rs`); the
//! transactional driver (`driver.rs`) and its workers (`worker.rs` state,
//! `chunk.rs` point loop, `check.rs` recovery from scratch and the oracle
//! check, `resume.rs` resumed scans); the checkpoint driver ([`epochs`]).
//! Only `SchemeInfo` fields steer any of it, never a scheme's name.

mod check;
mod chunk;
pub mod coverage;
mod driver;
pub mod epochs;
mod history;
mod label;
pub mod memo;
mod options;
pub mod oracle;
mod parallel;
pub mod points;
mod recorder;
mod report;
mod resume;
pub mod war;
mod worker;

pub use options::{CrashOptions, DEFAULT_RECOVERY_CRASHES};
pub use points::PointSel;
pub use recorder::{Recorder, Tracked};
pub use report::{CrashReport, Violation, ViolationKind};

use crate::engine::RunSpec;
use crate::error::Result;
use crate::recovery::Durability;
use crate::schemes::{self, SchemeInfo};

/// Crash-test a registered scheme.
pub fn crashtest(
    spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    let info = schemes::find(&spec.scheme)?;
    crashtest_with(info, spec, opts, progress)
}

/// Crash-test any scheme entry, registered or not (tests use this to check
/// schemes that must not ship).
pub fn crashtest_with(
    info: &'static SchemeInfo,
    spec: RunSpec,
    opts: &CrashOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrashReport> {
    if info.durability != Durability::Checkpoint && !spec.params.bool("run.transactions") {
        let ckpt: Vec<&str> = schemes::REGISTRY
            .iter()
            .filter(|s| s.durability == Durability::Checkpoint)
            .map(|s| s.name)
            .collect();
        return Err(crate::error::Error::input(format!(
            "invalid crash test of {0} with run.transactions=false: {0} promises atomic durability of transactions, and a program without transactions has none to check (every crash point would be judged against transactions that never ran); crash-test a checkpointing scheme ({1}) on it, or keep run.transactions=true",
            info.name,
            ckpt.join(", ")
        )));
    }
    if info.durability == Durability::Checkpoint {
        // Whole-system checkpointing: checkpoint semantics (crash/epochs/).
        return epochs::crashtest_checkpoints(info, spec, opts, progress);
    }
    driver::crashtest_transactions(info, spec, opts, progress)
}
