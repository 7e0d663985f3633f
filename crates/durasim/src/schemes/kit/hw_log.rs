//! The hardware undo+redo log fwb and morlog share (MorLog Fig. 7): one
//! circular log of 32 B entries behind two alternating header lines, its
//! entry encoding with a torn bit per pass, the head's persistence, and the
//! read side of both schemes' resumable recovery scans.

use super::log::{csum, recovery_ns};
use crate::config::Params;
use crate::mem::{Layout, MemRead};
use crate::recovery::{RecoveryReport, ScanIo};
use crate::schemes::MemCtx;
use crate::types::{Addr, Cycle, LineData, Purpose};

/// Two header lines before the entry slots.
pub(crate) const HEADER_BYTES: u64 = 128;
pub const ENTRY_BYTES: u64 = 32;
pub(crate) const HDR_MAGIC: u64 = 0x4657_4248_4541_4431; // "FWBHEAD1"
pub(crate) const TYPE_DATA: u64 = 1;
pub(crate) const TYPE_COMMIT: u64 = 2;
/// A redo-only entry (MorLog's redo buffer; never in fwb's log).
pub(crate) const TYPE_REDO: u64 = 3;
const ADDR_MASK: u64 = (1 << 48) - 1;

/// Bits of each log record in Fig. 7's format (type 2, TID 8, TxID 16,
/// address 48, torn bit 1, data words 64 each): the log bits before
/// encoding (`log_bits_before_encoding`; the bits the device writes are
/// the media's `log_bits_written`). A commit record has no address or data; a
/// delay-persistence one adds its 10-bit ulog counter.
pub const UR_ENTRY_BITS: u64 = 2 + 8 + 16 + 48 + 1 + 128;
pub const REDO_ENTRY_BITS: u64 = 2 + 8 + 16 + 48 + 1 + 64;
pub const COMMIT_BITS: u64 = 2 + 8 + 16 + 1;
pub const DP_COUNTER_BITS: u64 = 10;

/// The circular log: `[header A][header B][slot 0][slot 1]...`; entry `seq`
/// (a sequence number that never repeats) lives in slot `seq % slots`, and
/// its torn bit is the parity of the pass over the region (`seq / slots`),
/// inverted so that the zeroed region never looks valid.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ring {
    pub(crate) base: Addr,
    pub(crate) slots: u64,
}

impl Ring {
    pub(crate) fn new(layout: &Layout, log_bytes: u64) -> Self {
        Ring {
            base: layout.reserved_base,
            slots: log_bytes / ENTRY_BYTES,
        }
    }
    pub(crate) fn slot_addr(&self, seq: u64) -> Addr {
        self.base + HEADER_BYTES + (seq % self.slots) * ENTRY_BYTES
    }
    pub(crate) fn torn_bit(&self, seq: u64) -> u64 {
        ((seq / self.slots) & 1) ^ 1
    }
    pub(crate) fn header_addr(&self, which: u64) -> Addr {
        self.base + 64 * (which & 1)
    }
}

/// One log record as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) kind: u64,
    pub(crate) core: u64,
    pub(crate) txid: u32,
    pub(crate) addr: Addr,
    pub(crate) undo: u64,
    pub(crate) redo: u64,
}

/// 32-bit checksum of a record at `seq` (the sequence number is covered, so
/// an entry left from an older pass never validates at a newer position).
fn rec_csum(w0: u64, txid: u32, undo: u64, redo: u64, seq: u64) -> u64 {
    csum(&[w0, u64::from(txid), undo, redo, seq], &[]) & 0xffff_ffff
}

pub(crate) fn encode(ring: &Ring, seq: u64, r: &Record) -> [u8; ENTRY_BYTES as usize] {
    let w0 = (r.addr & ADDR_MASK)
        | (r.core & 0xff) << 48
        | (r.kind & 3) << 56
        | ring.torn_bit(seq) << 63;
    let w1 = u64::from(r.txid) | rec_csum(w0, r.txid, r.undo, r.redo, seq) << 32;
    let mut b = [0u8; ENTRY_BYTES as usize];
    // Undo and redo side by side: SLDE's DLDC keeps only the redo's bytes
    // that differ from the undo (the FWB-SLDE dirty flag, MorLog §VI-A).
    for (i, w) in [w0, w1, r.undo, r.redo].into_iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    b
}

pub(crate) fn decode(ring: &Ring, seq: u64, b: &[u8; ENTRY_BYTES as usize]) -> Option<Record> {
    let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    let (w0, w1, undo, redo) = (w(0), w(1), w(2), w(3));
    let txid = w1 as u32;
    let kind = (w0 >> 56) & 3;
    if w0 >> 63 != ring.torn_bit(seq)
        || kind == 0
        || w1 >> 32 != rec_csum(w0, txid, undo, redo, seq)
    {
        return None;
    }
    Some(Record {
        kind,
        core: (w0 >> 48) & 0xff,
        txid,
        addr: w0 & ADDR_MASK,
        undo,
        redo,
    })
}

pub(crate) fn header_bytes(head: u64) -> LineData {
    let mut l = [0u8; 64];
    l[..8].copy_from_slice(&HDR_MAGIC.to_le_bytes());
    l[8..16].copy_from_slice(&head.to_le_bytes());
    l[16..24].copy_from_slice(&csum(&[HDR_MAGIC, head], &[]).to_le_bytes());
    l
}

/// Persist `head` in the header line other than the last written one
/// (`flip` toggles), stamped after every log write so far
/// (`log_durable_at`, which then covers it too); returns when it is
/// persisted. The head-advance tail shared by fwb and morlog.
pub(crate) fn persist_head(
    ctx: &mut MemCtx,
    ring: &Ring,
    flip: &mut u64,
    log_durable_at: &mut Cycle,
    head: u64,
    now: Cycle,
) -> Cycle {
    *flip ^= 1;
    let t = ctx.nvm.write(
        ring.header_addr(*flip),
        &header_bytes(head),
        Purpose::Metadata,
        now.max(*log_durable_at),
    );
    *log_durable_at = (*log_durable_at).max(t);
    t
}

/// The head from the valid header with the larger head (0 if none), and
/// the header slot that holds it (1 if none): where recovery starts, and
/// the slot its last write leaves alone.
pub(crate) fn scan_head<R: MemRead + ?Sized>(img: &R, ring: &Ring) -> (u64, u64) {
    let valid: Vec<Option<u64>> = (0..2)
        .map(|i| {
            let a = ring.header_addr(i);
            let (m, h, c) = (img.read_u64(a), img.read_u64(a + 8), img.read_u64(a + 16));
            (m == HDR_MAGIC && c == csum(&[HDR_MAGIC, h], &[])).then_some(h)
        })
        .collect();
    let head = valid.iter().flatten().copied().max().unwrap_or(0);
    let newest = (0..2u64)
        .find(|&i| valid[i as usize] == Some(head))
        .unwrap_or(1);
    (head, newest)
}

/// Recovery's last write (FWB and MorLog share the log ring): the header
/// slot other than the newest valid one gets head = end of the log `seq`;
/// a crash before it repeats the recovery. Nothing to do on an empty log.
pub(crate) fn head_to_end(
    ring: &Ring,
    newest: u64,
    head: u64,
    seq: u64,
    out: &mut dyn FnMut(Addr, &[u8]),
) {
    if seq > head {
        out(ring.header_addr(newest ^ 1), &header_bytes(seq));
    }
}

/// The read side of a resumable recovery scan over the ring (fwb's and
/// morlog's, recovery/scan.rs): the head from the headers, then records
/// from it while they decode. The scan folds each record [`next`] returns
/// into its own state and then calls [`advance`] (the mark), so a resume
/// continues at the first record not folded in.
///
/// [`next`]: RingCursor::next
/// [`advance`]: RingCursor::advance
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingCursor {
    pub(crate) ring: Ring,
    started: bool,
    pub(crate) head: u64,
    /// The header slot holding the head (the other one gets the new head).
    newest: u64,
    /// Next record to read.
    pub(crate) seq: u64,
    /// Test-only planted bug (fwb's and morlog's `scan-skips-head-entry`):
    /// the scan starts one entry after the persisted head.
    pub(crate) skip_head: bool,
}

impl RingCursor {
    /// Nothing read yet.
    pub(crate) fn new(ring: Ring) -> Self {
        RingCursor {
            ring,
            started: false,
            head: 0,
            newest: 1,
            seq: 0,
            skip_head: false,
        }
    }

    /// The record at `seq`, or `None` where the log ends (its slot's bytes
    /// are the frontier). The first call reads the headers and marks.
    pub(crate) fn next(&mut self, io: &mut dyn ScanIo) -> Option<Record> {
        if !self.started {
            (self.head, self.newest) = scan_head(&*io, &self.ring);
            self.seq = self.head + u64::from(self.skip_head);
            self.started = true;
            io.mark();
        }
        if self.seq >= self.head + self.ring.slots {
            return None;
        }
        let mut buf = [0u8; ENTRY_BYTES as usize];
        io.read_bytes(self.ring.slot_addr(self.seq), &mut buf);
        decode(&self.ring, self.seq, &buf)
    }

    /// The record `next` returned is folded into the scan's state.
    pub(crate) fn advance(&mut self, io: &mut dyn ScanIo) {
        self.seq += 1;
        io.mark();
    }

    /// Records read (the report's `log_records_scanned`).
    pub(crate) fn records(&self) -> u64 {
        self.seq - self.head
    }

    /// Recovery's last write: the new head ([`head_to_end`]).
    pub(crate) fn head_to_end(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        head_to_end(&self.ring, self.newest, self.head, self.seq, out);
    }

    /// The recovery report of a scan that wrote `words` home words (plus
    /// the header): the two header lines and the records (two per line)
    /// read; `details` follow `log_records_scanned`.
    pub(crate) fn report(
        &self,
        p: &Params,
        words: u64,
        details: &[(&'static str, f64)],
    ) -> RecoveryReport {
        let lines_read = 2 + (self.records() + 1).div_ceil(2);
        let lines_written = words + u64::from(self.seq > self.head);
        let mut d = vec![("log_records_scanned", self.records() as f64)];
        d.extend_from_slice(details);
        RecoveryReport {
            bytes_read: lines_read * 64,
            bytes_written: lines_written * 8,
            modeled_ns: recovery_ns(p, lines_read, lines_written),
            details: d,
        }
    }
}
