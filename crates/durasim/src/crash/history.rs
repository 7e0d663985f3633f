//! The run a crash test checks: the workload simulated once with history
//! recording (the persist log's events, put in acceptance-time order, are
//! the crash points), and where background work lies among those events.

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
    let mut history = engine
        .history
        .take()
        .ok_or_else(|| Error::Internal("history recording was not enabled".into()))?;
    to_time_order(&mut engine, &mut history);
    Ok(Recorded {
        engine,
        history,
        sim_host_seconds,
    })
}

/// Put the persist log in persist-time order (the crash points;
/// `PersistLog::order_by_time`: each write stream by acceptance time, call
/// order across streams) and move every position taken in call order with
/// it: a transaction's acknowledgement becomes the point of its time (every
/// write of its core accepted before TxEnd returned, and those accepted in
/// that cycle and issued before it, and every write of another stream
/// issued before it; a write the controller reported accepted by then but
/// the queue order accepted later moves the time with it:
/// `TimeOrder::waited_times`), a checkpoint's commit the point right after its
/// switch write, background work the runs of its events in the new order.
fn to_time_order(engine: &mut Engine, history: &mut History) {
    let log = &mut engine.ctx.nvm.persist_log;
    let order = log.order_by_time();
    let events = log.events();
    // A recovery path's window: from the first to the last of its events
    // in the new order (a window's events may interleave with others').
    history.paths = log
        .paths()
        .iter()
        .map(|w| {
            let pos = (w.start..w.end).map(|e| order.position(e));
            let (lo, hi) = pos.fold((u64::MAX, 0), |(lo, hi), p| (lo.min(p), hi.max(p)));
            crate::mem::PathWindow {
                name: w.name,
                start: lo,
                end: hi + 1,
            }
        })
        .collect();
    for (c, txs) in history.per_thread.iter_mut().enumerate() {
        let marks: Vec<(u64, u64)> = txs.iter().map(|r| (r.ack_persist_seq, r.ack_at)).collect();
        let waited = order.waited_times(c as u16, &marks);
        for (r, at) in txs.iter_mut().zip(waited) {
            r.own_persist_seq = order.own_point(c as u16, r.ack_persist_seq, r.ack_at);
            r.ack_persist_seq = order.ack_point(c as u16, r.ack_persist_seq, at);
        }
    }
    if order.is_identity() {
        return;
    }
    for c in &mut engine.checkpoints {
        if c.committed_seq != u64::MAX {
            c.committed_seq = order.after_call(c.committed_seq);
        }
    }
    if history.background.is_empty() {
        return;
    }
    // Each event's background range, then the runs of equal ranges.
    let mut of = vec![u32::MAX; events.len()];
    for (i, r) in history.background.iter().enumerate() {
        for e in r.clone() {
            of[order.position(e) as usize] = i as u32;
        }
    }
    let kinds = std::mem::take(&mut history.background_kinds);
    history.background.clear();
    let mut k = 0;
    while k < of.len() {
        let i = of[k];
        let start = k;
        while k < of.len() && of[k] == i {
            k += 1;
        }
        if i != u32::MAX {
            history.background.push(start as u64..k as u64);
            history
                .background_kinds
                .push(kinds.get(i as usize).copied().unwrap_or(""));
        }
    }
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
