//! The redo log opt-redo and redu share: per-core circular logs of 128 B
//! records in one format (each scheme with its own magics), their recovery
//! as a resumable scan, and the controller's per-core log buffer that
//! coalesces a running transaction's lines into records.
//!
//! A data record is a metadata line {magic, seq, txid, kind, home,
//! checksum} and the new data line; a commit record one line {magic, seq,
//! txid, kind, record count, checksum}; a header line {magic, head,
//! checksum}.

use super::line_index::LineIndex;
use super::log::{csum, header_line, line_word, recovery_ns};
use crate::cache::LineExt;
use crate::config::Params;
use crate::error::Result;
use crate::recovery::{RecoveryReport, ResumableScan, ScanIo};
use crate::types::{line_of, word_index, write_word, Addr, LineData};

/// The `kind` word of a data record and of a commit record.
pub(crate) const KIND_DATA: u64 = 1;
pub(crate) const KIND_COMMIT: u64 = 2;
/// A data record: metadata line + data line (a commit record: one line).
pub(crate) const REC_BYTES: u64 = 128;

/// A data record {magic, seq, txid, kind, home, checksum} + the new line.
pub(crate) fn data_record(
    magic: u64,
    seq: u64,
    txid: u64,
    home: Addr,
    data: &LineData,
) -> [u8; REC_BYTES as usize] {
    let w = [magic, seq, txid, KIND_DATA, home];
    let c = csum(&w, data);
    let mut r = [0u8; REC_BYTES as usize];
    r[..64].copy_from_slice(&header_line(&[w[0], w[1], w[2], w[3], w[4], c]));
    r[64..].copy_from_slice(data);
    r
}

/// A commit record {magic, seq, txid, kind, records, checksum}.
pub(crate) fn commit_record(magic: u64, seq: u64, txid: u64, count: u64) -> LineData {
    let w = [magic, seq, txid, KIND_COMMIT, count];
    header_line(&[w[0], w[1], w[2], w[3], w[4], csum(&w, &[])])
}

/// A log header line {magic, head, checksum}.
pub(crate) fn header_record(magic: u64, head: u64) -> LineData {
    let w = [magic, head];
    header_line(&[w[0], w[1], csum(&w, &[])])
}

/// The head a header line holds, if it is valid.
pub(crate) fn decode_header(magic: u64, l: &LineData) -> Option<u64> {
    let w = [line_word(l, 0), line_word(l, 1)];
    (w[0] == magic && line_word(l, 2) == csum(&w, &[])).then_some(w[1])
}

/// A decoded log record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    Data {
        seq: u64,
        txid: u64,
        home: Addr,
        data: LineData,
    },
    Commit {
        seq: u64,
        txid: u64,
        count: u64,
    },
}

/// Decode the record whose metadata line is `meta` and that must carry
/// sequence number `seq`; `data` gives its data line (read only for data
/// records). None for a stale (other `seq`), torn or foreign line.
pub(crate) fn decode(
    magic: u64,
    meta: &LineData,
    seq: u64,
    data: impl FnOnce() -> LineData,
) -> Option<Record> {
    let w = [
        line_word(meta, 0),
        line_word(meta, 1),
        line_word(meta, 2),
        line_word(meta, 3),
        line_word(meta, 4),
    ];
    if w[0] != magic || w[1] != seq {
        return None;
    }
    let (txid, x) = (w[2], w[4]);
    match w[3] {
        KIND_DATA => {
            let d = data();
            (line_word(meta, 5) == csum(&w, &d)).then_some(Record::Data {
                seq,
                txid,
                home: x,
                data: d,
            })
        }
        KIND_COMMIT => (line_word(meta, 5) == csum(&w, &[])).then_some(Record::Commit {
            seq,
            txid,
            count: x,
        }),
        _ => None,
    }
}

/// Where per-core redo logs of 128 B records live and how their recovery
/// treats headers and home addresses. opt-redo and redu (EHOU's REDU
/// baseline) write the same record format with their own
/// magics: {magic, seq, txid, kind, home | record count, checksum} (+ the
/// data line of a data record), and header lines {magic, head, checksum};
/// their recoveries are the same scan over this.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RedoLog {
    pub(crate) hdr_magic: u64,
    pub(crate) rec_magic: u64,
    /// Core 0's log (its header lines, then its record slots); core c's is
    /// `c * stride` bytes on.
    pub(crate) base: Addr,
    pub(crate) stride: u64,
    pub(crate) headers: Headers,
    pub(crate) slots: u64,
    /// Replay only 64 B-aligned home lines below this (redu); `None`: every
    /// home line a valid record names (opt-redo).
    pub(crate) home_limit: Option<Addr>,
    /// Test-only planted bug (opt-redo's `scan-skips-last-commit`): a
    /// transaction is replayed only once the next commit record is read,
    /// so the last committed one never is.
    pub(crate) mutant_skip_last: bool,
}

/// The header lines of a [`RedoLog`] and recovery's truncation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Headers {
    /// One line (head 0 if invalid), rewritten by every recovery (opt-redo).
    One,
    /// Two alternating lines, the valid one with the larger head wins (the
    /// first on a tie; head 0 if neither); recovery writes the other one
    /// (line 0 if neither is valid) only if the head moves or neither is
    /// valid: a torn truncation leaves the older header (redu).
    Alternating,
}

impl RedoLog {
    fn header_lines(&self) -> u64 {
        match self.headers {
            Headers::One => 1,
            Headers::Alternating => 2,
        }
    }
    pub(crate) fn header_addr(&self, core: usize, which: u64) -> Addr {
        self.base + core as u64 * self.stride + which * 64
    }
    pub(crate) fn slot_addr(&self, core: usize, seq: u64) -> Addr {
        self.header_addr(core, self.header_lines()) + (seq % self.slots) * REC_BYTES
    }
    /// Whether recovery writes the replayed line home.
    fn replays_home(&self, home: Addr) -> bool {
        self.home_limit
            .is_none_or(|lim| home.is_multiple_of(64) && home < lim && lim - home >= 64)
    }
    /// The header line recovery's truncation writes, if any.
    fn truncation(&self, s: &CoreScan) -> Option<u64> {
        match self.headers {
            Headers::One => Some(0),
            Headers::Alternating => {
                (s.new_head != s.head || s.newest.is_none()).then(|| s.newest.map_or(0, |w| w ^ 1))
            }
        }
    }
}

/// Recovery of `cores` per-core redo logs as a resumable scan, one cursor
/// per core: from the header's head, replay the data records of every
/// transaction followed by its commit record (valid checksums, consecutive
/// sequence numbers); then truncate every log (the finish writes). Home
/// lines and log lines are disjoint, so the home writes never change a
/// byte the scan read and a crash anywhere in the replay provably re-runs
/// identically (crash/war.rs).
pub(crate) fn redo_log_scan(log: RedoLog, cores: usize) -> Box<dyn ResumableScan> {
    Box::new(RedoScan {
        log,
        cores: vec![CoreScan::default(); cores],
    })
}

struct RedoScan {
    log: RedoLog,
    cores: Vec<CoreScan>,
}

/// One core's log scan, as of its last mark (plus `tail_reads`).
#[derive(Clone, Default)]
struct CoreScan {
    started: bool,
    head: u64,
    /// The header line holding `head` (none valid: `None`).
    newest: Option<u64>,
    /// Next slot to read.
    seq: u64,
    cur_tx: Option<u64>,
    /// Data records of the transaction being read (not yet committed).
    cur: Vec<(Addr, LineData)>,
    /// `mutant_skip_last`: the committed transaction not yet replayed.
    held: Vec<(Addr, LineData)>,
    new_head: u64,
    /// Lines read up to the mark, and after it (where the scan stopped).
    reads: u64,
    tail_reads: u64,
    written: u64,
    replayed_tx: u64,
    discarded: u64,
}

impl ResumableScan for RedoScan {
    fn cursors(&self) -> usize {
        self.cores.len()
    }

    fn resume(&mut self, c: usize, io: &mut dyn ScanIo) -> Result<()> {
        let log = self.log;
        let s = &mut self.cores[c];
        s.tail_reads = 0;
        if !s.started {
            for which in 0..log.header_lines() {
                let h = decode_header(log.hdr_magic, &io.read_line(log.header_addr(c, which)));
                if let Some(h) = h.filter(|&h| s.newest.is_none() || h > s.head) {
                    (s.head, s.newest) = (h, Some(which));
                }
            }
            s.started = true;
            s.reads += log.header_lines();
            (s.seq, s.new_head) = (s.head, s.head);
            io.mark();
        }
        while s.seq < s.head + log.slots {
            let seq = s.seq;
            let a = log.slot_addr(c, seq);
            let meta = io.read_line(a);
            let mut data_read = false;
            let rec = decode(log.rec_magic, &meta, seq, || {
                data_read = true;
                io.read_line(a + 64)
            });
            let lines = 1 + u64::from(data_read);
            let Some(rec) = rec else {
                s.tail_reads = lines;
                return Ok(());
            };
            match rec {
                Record::Data {
                    txid, home, data, ..
                } => {
                    if s.cur_tx != Some(txid) {
                        s.discarded += s.cur.len() as u64;
                        s.cur.clear();
                        s.cur_tx = Some(txid);
                    }
                    s.cur.push((home, data));
                }
                Record::Commit { txid, count, .. } => {
                    if s.cur_tx == Some(txid) && count == s.cur.len() as u64 {
                        if log.mutant_skip_last {
                            std::mem::swap(&mut s.cur, &mut s.held);
                        }
                        // In log order: a later transaction's line wins.
                        for (home, d) in &s.cur {
                            if log.replays_home(*home) {
                                io.home(*home, d);
                                s.written += 1;
                            }
                        }
                        s.replayed_tx += 1;
                    }
                    s.cur.clear();
                    s.cur_tx = None;
                    s.new_head = seq + 1;
                }
            }
            s.reads += lines;
            s.seq += 1;
            io.mark();
        }
        Ok(())
    }

    /// Truncate: the replayed records are home now. After every core's
    /// replay (home lines and log lines are disjoint).
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        let log = &self.log;
        for (c, s) in self.cores.iter().enumerate() {
            if let Some(which) = log.truncation(s) {
                out(
                    log.header_addr(c, which),
                    &header_record(log.hdr_magic, s.new_head),
                );
            }
        }
    }

    /// redu's (docs/model/crash-reuse.md "REDU's resumable recovery"): a re-run after
    /// all home writes and some truncations finds, in a truncated log, the
    /// records after the last commit the first run replayed, with no
    /// transaction open, i.e. nothing to replay, and writes no header there
    /// (its head is valid and does not move); the other logs replay the
    /// same lines again and truncate as the first run did. opt-redo's single
    /// header would allow the same argument; it keeps running its re-runs.
    fn finish_reruns_repeat(&self) -> bool {
        self.log.headers == Headers::Alternating
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let sum = |f: fn(&CoreScan) -> u64| self.cores.iter().map(f).sum::<u64>();
        let read = sum(|s| s.reads + s.tail_reads);
        let truncations = self
            .cores
            .iter()
            .filter(|s| self.log.truncation(s).is_some());
        let written = sum(|s| s.written) + truncations.count() as u64;
        RecoveryReport {
            bytes_read: read * 64,
            bytes_written: written * 64,
            modeled_ns: recovery_ns(p, read, written),
            details: vec![
                ("transactions_replayed", sum(|s| s.replayed_tx) as f64),
                (
                    "uncommitted_records_discarded",
                    sum(|s| s.discarded + s.cur.len() as u64) as f64,
                ),
            ],
        }
    }
}

/// A line of a running transaction in the controller's log buffer.
pub(crate) struct TxLine {
    pub(crate) addr: Addr,
    pub(crate) data: LineData,
    /// Changed since its last record was written.
    pub(crate) dirty: bool,
    /// Sequence number of its newest record (opt-redo's checkpoint reads
    /// the line back from there).
    pub(crate) seq: u64,
}

/// One core's running transaction as the memory controller holds it
/// (opt-redo, redu): its lines, coalesced in the per-core log buffer until
/// they are written as redo records.
#[derive(Default)]
pub(crate) struct TxBuffer {
    pub(crate) txid: u32,
    pub(crate) in_tx: bool,
    pub(crate) lines: Vec<TxLine>,
    pub(crate) index: LineIndex,
    /// Lines changed since their last record (the log buffer's occupancy).
    pub(crate) buffered: usize,
    /// Records of this transaction so far.
    pub(crate) records: u64,
    /// This transaction's records do not fit in the log (input error).
    pub(crate) overflow: bool,
}

impl TxBuffer {
    /// TxBegin of transaction `txid`.
    pub(crate) fn begin(&mut self, txid: u32) {
        self.txid = txid;
        self.in_tx = true;
        self.lines.clear();
        self.index.clear();
        self.buffered = 0;
        self.records = 0;
        self.overflow = false;
    }

    /// A transactional store of `new` at `addr` (the line's cache copy
    /// `ext` is tagged with the transaction): the word goes into the line's
    /// buffered copy, which `base` fills with the line's newest committed
    /// value at its first store. Returns whether the buffer now holds
    /// `capacity` changed lines (the controller drains it).
    pub(crate) fn store(
        &mut self,
        addr: Addr,
        new: u64,
        ext: &mut LineExt,
        capacity: usize,
        base: impl FnOnce(Addr) -> LineData,
    ) -> bool {
        let line = line_of(addr);
        ext.tx = true;
        ext.txid = self.txid;
        let i = match self.index.find(line) {
            Some(i) => i,
            None => {
                self.index.push(line);
                self.lines.push(TxLine {
                    addr: line,
                    data: base(line),
                    dirty: false,
                    seq: 0,
                });
                self.lines.len() - 1
            }
        };
        let tl = &mut self.lines[i];
        write_word(&mut tl.data, word_index(addr), new);
        if !tl.dirty {
            tl.dirty = true;
            self.buffered += 1;
        }
        self.buffered >= capacity
    }
}
