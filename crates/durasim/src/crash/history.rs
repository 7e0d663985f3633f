//! The run a crash test checks: the workload simulated once with history
//! recording (the persist log's events are the crash points), and where
//! background work lies among those events.

use crate::engine::{Engine, History, RunSpec};
use crate::error::{Error, Result};
use crate::schemes::SchemeInfo;
use std::time::Instant;

/// A run simulated with history recording: the engine (whose persist log
/// holds the crash points), its committed history, and the host seconds
/// the simulation took.
pub(super) struct Recorded {
    pub engine: Engine,
    pub history: History,
    pub sim_host_seconds: f64,
}

/// Simulate `spec` on `info` with history recording (turned on in `spec`).
pub(super) fn record(info: &'static SchemeInfo, spec: &mut RunSpec) -> Result<Recorded> {
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
    Ok(Recorded {
        engine,
        history,
        sim_host_seconds,
    })
}

/// Persist events issued by background work (tick/finish).
pub(super) fn background_events(background: &[std::ops::Range<u64>]) -> u64 {
    background.iter().map(|r| r.end - r.start).sum()
}

/// The background range (index into `background`, sorted by start) a crash
/// image at point `k` falls strictly inside, if any; a torn image at `k`
/// also holds part of event `k` itself.
pub(super) fn background_range_of(
    background: &[std::ops::Range<u64>],
    k: u64,
    torn: bool,
) -> Option<usize> {
    let i = background.partition_point(|r| r.start < k || (torn && r.start == k));
    (i > 0 && k < background[i - 1].end).then(|| i - 1)
}
