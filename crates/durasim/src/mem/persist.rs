//! The persistence domain, made explicit: every event at which bytes become
//! durable is appended to a [`PersistLog`] (when recording is on). A crash at
//! point `k` keeps exactly the initial media image plus events `0..k`.

use crate::types::{Addr, Cycle};

/// One durable write: `len` bytes at `addr` (never crossing a 64 B line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistEvent {
    pub addr: Addr,
    pub len: u8,
    /// Offset of the bytes in the log's arena.
    pub data_off: u32,
    /// Simulated time at which the bytes reached the persistence domain.
    pub at: Cycle,
}

/// Append-only record of durable writes, in the order they became durable.
#[derive(Clone, Default)]
pub struct PersistLog {
    enabled: bool,
    events: Vec<PersistEvent>,
    arena: Vec<u8>,
    /// Count of events even when recording is off (crash point numbering).
    count: u64,
    marks: Vec<DurableMark>,
    paths: Vec<PathWindow>,
}

/// The persist events `start..end` (call order) a scheme issued on one of
/// its declared recovery paths (`Scheme::recovery_paths`): a log wrap, a
/// head persist, a full table, ... Crash tests count the points that fall
/// in each path, so a path no crash point reached is visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathWindow {
    pub name: &'static str,
    pub start: u64,
    pub end: u64,
}

/// A scheme's report that `thread`'s first `tx_count` committed transactions
/// are durable from persist point `seq` on: the checkpoint that completed
/// (checkpoint schemes) or the commits reported persisted (delayed schemes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurableMark {
    pub seq: u64,
    pub thread: usize,
    pub tx_count: u64,
}

impl PersistLog {
    pub fn new(enabled: bool) -> Self {
        PersistLog {
            enabled,
            ..Default::default()
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    #[inline]
    pub fn record(&mut self, addr: Addr, data: &[u8], at: Cycle) {
        debug_assert!(data.len() <= 64 && (addr % 64) as usize + data.len() <= 64);
        self.count += 1;
        if self.enabled {
            let off = self.arena.len() as u32;
            self.arena.extend_from_slice(data);
            self.events.push(PersistEvent {
                addr,
                len: data.len() as u8,
                data_off: off,
                at,
            });
        }
    }

    /// Report that `thread`'s first `tx_count` transactions are durable as of
    /// now (see [`DurableMark`]; used by the crash oracle).
    pub fn report_durable(&mut self, thread: usize, tx_count: u64) {
        if self.enabled {
            self.marks.push(DurableMark {
                seq: self.count,
                thread,
                tx_count,
            });
        }
    }

    /// Where a path's writes start: pass it to [`PersistLog::path_done`]
    /// after the last of them.
    #[inline]
    pub fn path_start(&self) -> u64 {
        self.count
    }

    /// The writes since `start` were recovery path `name`'s (recorded only
    /// when they exist and history is on).
    #[inline]
    pub fn path_done(&mut self, name: &'static str, start: u64) {
        if self.enabled && self.count > start {
            self.paths.push(PathWindow {
                name,
                start,
                end: self.count,
            });
        }
    }

    pub fn paths(&self) -> &[PathWindow] {
        &self.paths
    }

    pub fn marks(&self) -> &[DurableMark] {
        &self.marks
    }

    /// Number of persist events so far (recorded or not).
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn events(&self) -> &[PersistEvent] {
        &self.events
    }

    pub fn data(&self, e: &PersistEvent) -> &[u8] {
        &self.arena[e.data_off as usize..e.data_off as usize + e.len as usize]
    }

    /// Forget recorded events (used when statistics are reset after warmup:
    /// the crash base image is then re-taken).
    pub fn clear(&mut self) {
        self.events.clear();
        self.arena.clear();
        self.marks.clear();
        self.paths.clear();
        self.count = 0;
    }
}
