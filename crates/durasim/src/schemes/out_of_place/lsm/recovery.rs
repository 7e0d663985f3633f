//! Recovery: the live log replayed newest-wins into home, as a resumable
//! scan that follows the writes (recovery/scan.rs).

use super::layout::{
    decode_with, entry_bytes, Entry, Geometry, ENTRY_HDR, KIND_DATA, SEG_MAGIC, SEQ_MASK,
};
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::{Layout, RecoveryReport};
use crate::types::{Addr, LINE_BYTES};
use rustc_hash::FxHashMap;

/// Recovery on the durable bytes alone: scan the live segments (header
/// magic, sequence >= the superblock's tail) in sequence order, replay the
/// data entries of every transaction whose commit record is valid into home
/// (newest wins), then retire the log by moving the tail past them.
/// Idempotent: until the tail moves, a second run replays the same values.
pub fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// Recovery as a resumable scan (recovery/scan.rs, one cursor: the live
/// log in sequence order). A word's home write is made when the first
/// committed transaction naming it is read and takes the value of every
/// later one (`ScanIo::rehome`), so recovery writes each word once with
/// its newest committed value, as a newest-wins map replayed at the end
/// would. The cursor marks after the segment headers, at the start of
/// each live segment and after each commit record, and reads each entry's
/// bytes exactly (no read-ahead), so an append at the log head touches
/// only where the scan stopped. Opening or freeing a segment and moving
/// the tail touch the headers or the superblock it read first: the scan
/// is then rebuilt.
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(LsmScan {
        g: Geometry::new(p, layout),
        verify: p.str("lsm.mutant") != "ignore-checksum",
        bandwidth_gbps: p.f64("lsm.recovery_bandwidth_gbps"),
        started: false,
        live: Vec::new(),
        headers_read: 0,
        cur: 0,
        off: LINE_BYTES,
        done_bytes: 0,
        newest: FxHashMap::default(),
        entries: 0,
        txs: 0,
        discarded: 0,
        pending: Vec::new(),
        tail_off: LINE_BYTES,
    })
}

struct LsmScan {
    /// `Err` (a log region too small) is reported by the first resume.
    g: Result<Geometry>,
    verify: bool,
    bandwidth_gbps: f64,
    started: bool,
    /// Live segments (sequence, slot) in sequence order; segment headers
    /// read.
    live: Vec<(u64, usize)>,
    headers_read: u64,
    /// As of the last mark: the segment being read (index into `live`),
    /// the offset of its next entry, the bytes of the segments before it.
    cur: usize,
    off: u64,
    done_bytes: u64,
    /// Newest committed value of every word replayed.
    newest: FxHashMap<Addr, u64>,
    entries: u64,
    txs: u64,
    discarded: u64,
    /// Since the mark (recomputed by every resume): data entries of the
    /// transaction without a commit record yet, and where the scan stopped.
    pending: Vec<Entry>,
    tail_off: u64,
}

impl LsmScan {
    /// Decode the entry at `base + off` of a segment with sequence `seq`,
    /// reading exactly its bytes (as [`decode_with`] over the segment).
    fn read_entry(
        &self,
        io: &mut dyn ScanIo,
        base: Addr,
        off: u64,
        seq: u64,
        g: &Geometry,
    ) -> Option<(Entry, u64)> {
        let mut buf = [0u8; (ENTRY_HDR + 64) as usize];
        if off + ENTRY_HDR > g.segment_bytes {
            return None;
        }
        io.read_bytes(base + off, &mut buf[..ENTRY_HDR as usize]);
        let w0 = u64::from_le_bytes(buf[..8].try_into().unwrap());
        let mut len = ENTRY_HDR;
        if w0 >> 56 == KIND_DATA {
            let need = entry_bytes((w0 >> 48) as u8);
            if off + need <= g.segment_bytes {
                io.read_bytes(
                    base + off + ENTRY_HDR,
                    &mut buf[ENTRY_HDR as usize..need as usize],
                );
                len = need;
            }
        }
        decode_with(&buf[..len as usize], 0, seq, self.verify).map(|(e, n)| (e, off + n as u64))
    }

    /// Replay the pending data entries of a committed transaction: the
    /// first value of a word makes its home write, a later different one
    /// replaces it.
    fn replay_pending(&mut self, io: &mut dyn ScanIo) {
        for d in &self.pending {
            if let Entry::Data {
                line, mask, data, ..
            } = *d
            {
                let mut k = 0;
                for w in 0..8 {
                    if mask & (1 << w) != 0 {
                        let (a, v) = (line + 8 * w as u64, data[k]);
                        k += 1;
                        match self.newest.entry(a) {
                            std::collections::hash_map::Entry::Vacant(x) => {
                                x.insert(v);
                                io.home(a, &v.to_le_bytes());
                            }
                            std::collections::hash_map::Entry::Occupied(mut x) => {
                                if *x.get() != v {
                                    let was = x.insert(v);
                                    io.rehome(a, &was.to_le_bytes(), Some(&v.to_le_bytes()));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

impl ResumableScan for LsmScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        let g = match &self.g {
            Ok(g) => *g,
            Err(e) => return Err(Error::input(e.to_string())),
        };
        if !self.started {
            let tail = io.read_u64(g.superblock);
            // Segments at or above the high-water mark were never used.
            let used = io.read_u64(g.superblock + 8).min(g.segments) as usize;
            for s in 0..used {
                let h = io.read_u64(g.seg_addr(s));
                if h >> 48 == SEG_MAGIC && (h & SEQ_MASK) >= tail {
                    self.live.push((h & SEQ_MASK, s));
                }
            }
            self.headers_read = used as u64;
            self.live.sort_unstable();
            self.started = true;
            io.mark();
        }
        self.pending.clear();
        while self.cur < self.live.len() {
            let (seq, s) = self.live[self.cur];
            let base = g.seg_addr(s);
            let mut off = self.off;
            while let Some((e, next)) = self.read_entry(io, base, off, seq, &g) {
                off = next;
                match e {
                    Entry::Data { .. } => self.pending.push(e),
                    Entry::Commit { entries: n, txid } => {
                        let ok = self.pending.len() as u64 == n
                            && self
                                .pending
                                .iter()
                                .all(|d| matches!(d, Entry::Data { txid: t, .. } if *t == txid));
                        if ok {
                            self.txs += 1;
                            self.replay_pending(io);
                        } else {
                            self.discarded += 1;
                        }
                        self.entries += self.pending.len() as u64 + 1;
                        self.pending.clear();
                        self.off = off;
                        io.mark();
                    }
                }
            }
            self.tail_off = off;
            if self.cur + 1 == self.live.len() {
                // The log head: an append continues it.
                return Ok(());
            }
            // The next live segment.
            self.entries += self.pending.len() as u64;
            if !self.pending.is_empty() {
                self.discarded += 1;
                self.pending.clear();
            }
            self.done_bytes += off;
            self.cur += 1;
            self.off = LINE_BYTES;
            self.tail_off = LINE_BYTES;
            io.mark();
        }
        Ok(())
    }

    /// Retire the log: the tail moves past the newest live segment.
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        if let (Some(&(max_seq, _)), Ok(g)) = (self.live.last(), &self.g) {
            out(g.superblock, &(max_seq + 1).to_le_bytes());
        }
    }

    fn report(&self, _p: &Params) -> RecoveryReport {
        let words = self.newest.len() as u64;
        let head_bytes = if self.cur < self.live.len() {
            self.tail_off
        } else {
            0
        };
        let bytes_read = 16 + 8 * self.headers_read + self.done_bytes + head_bytes;
        let bytes_written = 8 * words + 8 * u64::from(!self.live.is_empty());
        RecoveryReport {
            bytes_read,
            bytes_written,
            modeled_ns: (bytes_read + bytes_written) as f64 / self.bandwidth_gbps,
            details: vec![
                ("segments_scanned", self.live.len() as f64),
                (
                    "entries_parsed",
                    (self.entries + self.pending.len() as u64) as f64,
                ),
                ("tx_replayed", self.txs as f64),
                (
                    "tx_discarded",
                    (self.discarded + u64::from(!self.pending.is_empty())) as f64,
                ),
                ("words_replayed", words as f64),
            ],
        }
    }
}
