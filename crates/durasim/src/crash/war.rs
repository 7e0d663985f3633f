//! Crashed recovery re-runs proven identical without running them.
//!
//! Recovery is a deterministic function of the bytes it reads. Crash it
//! after `m` of its writes `W` and re-run it on `cur + W[..m]`: the re-run
//! at its j-th write sees `cur + W[..m] + W[..j]`, where the uninterrupted
//! run saw `cur + W[..j]`. The two differ only at bytes the uninterrupted
//! run wrote later, in `W[j..m)`, and not before. So if no write among the
//! first `m` changed a byte that some read before it had seen (a
//! write-after-read of different bytes), every read of the re-run returns
//! what the uninterrupted run read, it takes the same path, makes the same
//! writes and ends on the same image `cur + W`. Recovery crash points
//! `m <= first_conflict()` are then verified by this argument instead of a
//! re-run; the others (e.g. after a log-head truncation that recovery read
//! first) still run. With `verify_dedup` the driver runs them anyway and
//! counts any difference as a dedup mismatch (tests).

use crate::types::Addr;

/// Reads, each with the number of writes made before it, and the writes
/// (recorder indices) that changed bytes.
#[derive(Default)]
pub struct Trace {
    reads: Vec<(Addr, Addr, usize)>,
    changes: Vec<(usize, Addr, Addr)>,
}

impl Trace {
    /// A read of `[start, end)` after `time` writes.
    #[inline]
    pub fn read(&mut self, start: Addr, end: Addr, time: usize) {
        if end <= start {
            return;
        }
        // Scans mostly ascend: extend the last range. Its time stays the
        // earlier one, which can only add conflicts (sound).
        if let Some(last) = self.reads.last_mut() {
            if start >= last.0 && start <= last.1 {
                last.1 = last.1.max(end);
                return;
            }
        }
        self.reads.push((start, end, time));
    }

    /// Every read range, in recording order.
    pub fn read_ranges(&self, mut f: impl FnMut(Addr, Addr)) {
        for &(s, e, _) in &self.reads {
            f(s, e);
        }
    }

    /// Write number `idx` changed bytes in `[start, end)`.
    #[inline]
    pub fn change(&mut self, idx: usize, start: Addr, end: Addr) {
        self.changes.push((idx, start, end));
    }

    /// The first write that changed a byte some earlier read saw
    /// (`usize::MAX` if none): re-runs crashed after at most this many
    /// writes are identical to the uninterrupted recovery.
    pub fn first_conflict(mut self) -> usize {
        if self.changes.is_empty() {
            return usize::MAX;
        }
        // Merge the reads into disjoint ranges keeping the earliest time
        // (conservative: a merged range may claim an earlier read).
        self.reads.sort_unstable_by_key(|r| r.0);
        let mut merged: Vec<(Addr, Addr, usize)> = Vec::with_capacity(self.reads.len());
        for &(s, e, t) in &self.reads {
            match merged.last_mut() {
                Some(l) if s < l.1 => {
                    l.1 = l.1.max(e);
                    l.2 = l.2.min(t);
                }
                _ => merged.push((s, e, t)),
            }
        }
        // Changes are recorded in write order: the first hit is the answer.
        for &(idx, s, e) in &self.changes {
            let mut i = merged.partition_point(|r| r.1 <= s);
            while i < merged.len() && merged[i].0 < e {
                if merged[i].2 <= idx {
                    return idx;
                }
                i += 1;
            }
        }
        usize::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_changing_write_after_a_read_conflicts() {
        let mut t = Trace::default();
        t.read(0, 64, 0); // header, read first
        t.read(64, 512, 0); // log scan
        t.change(0, 4096, 4160); // home write: never read
        t.read(8192, 8200, 1); // read after write 1
        t.change(1, 8192, 8200); // ...changed by write 1
        t.change(2, 0, 64); // header truncation: read before
                            // Write 1 changes a byte read at time 1 (before it): conflict.
        assert_eq!(t.first_conflict(), 1);

        let mut t = Trace::default();
        t.read(0, 64, 0);
        t.change(0, 4096, 4160);
        t.change(1, 128, 192); // written before it is read: no conflict
        t.read(128, 192, 2);
        assert_eq!(t.first_conflict(), usize::MAX);
        let mut t = Trace::default();
        t.read(0, 64, 0);
        t.change(0, 4096, 4160);
        t.change(1, 32, 40);
        assert_eq!(t.first_conflict(), 1);
    }
}
