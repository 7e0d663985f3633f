//! The undo-log record format and per-transaction log that opt-undo, LAD's
//! overflow fallback and the software pmdk-undo share: a header line
//! {magic, txid, index, home line, checksum} and the old data line per
//! record, and a log header {magic, resolved txid, checksum}.

use super::log::{csum, header_line, line_word, log_stride};
use crate::config::{ParamSpec, Params};
use crate::mem::MemWrite;
use crate::schemes::MemCtx;
use crate::types::{Addr, Cycle, LineData, Purpose};

const UNDO_HDR_MAGIC: u64 = 0x554e_444f_4844_5231; // "UNDOHDR1"
const UNDO_REC_MAGIC: u64 = 0x554e_444f_5245_4331; // "UNDOREC1"
/// Bytes per undo record: a header line and the old data line.
pub(crate) const UNDO_REC_BYTES: u64 = 128;

/// The bytes of one undo record: a header line {magic, txid, index, home
/// line, checksum} and the old data line. Shared by opt-undo, LAD and the
/// software pmdk-undo (which writes it with stores and clwb).
pub(crate) fn encode_record(
    txid: u64,
    index: u64,
    home: Addr,
    old: &LineData,
) -> [u8; UNDO_REC_BYTES as usize] {
    let words = [UNDO_REC_MAGIC, txid, index, home];
    let c = csum(&words, old);
    let mut rec = [0u8; UNDO_REC_BYTES as usize];
    rec[..64].copy_from_slice(&header_line(&[words[0], words[1], words[2], words[3], c]));
    rec[64..].copy_from_slice(old);
    rec
}

/// One undo record's fields: its transaction, its index in the log (a
/// slot number, or a ring's sequence number), the home line it saves and
/// that line's old bytes.
#[derive(Clone, Copy)]
pub(crate) struct UndoRecord<'a> {
    pub txid: u32,
    pub index: u64,
    pub home: Addr,
    pub old: &'a LineData,
}

impl UndoRecord<'_> {
    /// The record's bytes ([`encode_record`]).
    pub fn encode(&self) -> [u8; UNDO_REC_BYTES as usize] {
        encode_record(u64::from(self.txid), self.index, self.home, self.old)
    }
}

/// Per-core undo logs in NVM: `[header line][record 0][record 1]...`.
/// Header = {magic, resolved txid, checksum}; record header = {magic, txid,
/// index, home line, checksum(over those and the data)}.
#[derive(Clone, Debug)]
pub(crate) struct UndoLog {
    pub base: Addr,
    pub per_core_bytes: u64,
    pub stride: u64,
}

/// How [`scan_records`] validates a record: every check, or one of two
/// test-only planted bugs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ScanMode {
    Checked,
    /// The checksum is not verified: a torn record is taken as valid
    /// (opt-undo's `scan-ignores-checksum`).
    NoChecksum,
    /// After the first record, the txid is not checked: the scan reads on
    /// into an older transaction's records (LAD's `scan-past-records`).
    StaleTail,
}

/// Read undo records in log order from `(index, address)` pairs until the
/// first one that is not a valid record of one unresolved transaction
/// (magic, index, txid newer than `resolved` and equal across records,
/// checksum). Returns the records (home address, old line), their txid and
/// the lines read. Shared by the per-transaction log (LAD) and the
/// circular log (opt-undo), which differ only in where record i lives.
/// `mode` other than [`ScanMode::Checked`] is a test-only planted bug.
pub(crate) fn scan_records(
    img: &mut dyn MemWrite,
    slots: impl Iterator<Item = (u64, Addr)>,
    resolved: u64,
    mode: ScanMode,
) -> (Vec<(Addr, LineData)>, Option<u64>, u64) {
    let mut recs: Vec<(Addr, LineData)> = Vec::new();
    let mut txid = None;
    let mut read = 0u64;
    for (i, a) in slots {
        let h = img.read_line(a);
        let d = img.read_line(a + 64);
        read += 2;
        let w = [
            line_word(&h, 0),
            line_word(&h, 1),
            line_word(&h, 2),
            line_word(&h, 3),
        ];
        let ok = w[0] == UNDO_REC_MAGIC
            && w[2] == i
            && (mode == ScanMode::StaleTail && txid.is_some()
                || w[1] > resolved && txid.is_none_or(|t| t == w[1]))
            && (mode == ScanMode::NoChecksum || line_word(&h, 4) == csum(&w, &d));
        if !ok {
            break;
        }
        txid = txid.or(Some(w[1]));
        recs.push((w[3], d));
    }
    (recs, txid, read)
}

impl UndoLog {
    pub fn new(base: Addr, per_core_bytes: u64, p: &Params) -> Self {
        UndoLog {
            base,
            per_core_bytes,
            stride: log_stride(p, per_core_bytes),
        }
    }

    pub fn core_base(&self, core: usize) -> Addr {
        self.base + core as u64 * self.stride
    }

    pub fn capacity_records(&self) -> u64 {
        (self.per_core_bytes - 64) / UNDO_REC_BYTES
    }

    pub fn record_addr(&self, core: usize, index: u64) -> Addr {
        self.core_base(core) + 64 + index * UNDO_REC_BYTES
    }

    /// Encode and write `rec` into `core`'s log at its index; returns its
    /// persist time, or `None` (nothing written) when the log cannot hold
    /// it: the caller reports the parameter as too small
    /// ([`UndoLog::too_small`]).
    pub fn append(
        &self,
        ctx: &mut MemCtx,
        core: usize,
        rec: UndoRecord<'_>,
        now: Cycle,
    ) -> Option<Cycle> {
        if rec.index >= self.capacity_records() {
            return None;
        }
        Some(ctx.nvm.write(
            self.record_addr(core, rec.index),
            &rec.encode(),
            Purpose::Log,
            now,
        ))
    }

    /// The input error for a transaction on `core` that needed `records`
    /// undo records in a log sized by parameter `key` of `specs`.
    pub fn too_small(
        &self,
        specs: &[ParamSpec],
        key: &str,
        core: usize,
        records: u64,
        why: &str,
    ) -> String {
        format!(
            "{key}={} holds {} undo records per core, but a transaction on core {core} needed {records} ({why}); {}",
            self.per_core_bytes,
            self.capacity_records(),
            crate::schemes::raise_advice(specs, key, 64 + records * UNDO_REC_BYTES)
        )
    }

    /// Truncate: persist the header saying every transaction up to `txid`
    /// is resolved (its records must never be rolled back).
    pub fn resolve(&self, ctx: &mut MemCtx, core: usize, txid: u32, now: Cycle) -> Cycle {
        let l = Self::header(txid);
        ctx.nvm
            .write(self.core_base(core), &l, Purpose::Metadata, now)
    }

    pub(crate) fn header(txid: u32) -> LineData {
        let w = [UNDO_HDR_MAGIC, txid as u64];
        header_line(&[w[0], w[1], csum(&w, &[])])
    }

    /// Resolved txid from a header line (0 if the header was never written
    /// or is torn: then nothing was resolved yet on this core).
    fn parse_header(l: &LineData) -> u64 {
        let w = [line_word(l, 0), line_word(l, 1)];
        if w[0] == UNDO_HDR_MAGIC && line_word(l, 2) == csum(&w, &[]) {
            w[1]
        } else {
            0
        }
    }

    /// Recover one core's log from bytes: roll back the records of the
    /// unresolved transaction unless it is `committed` (LAD: committed by
    /// its staging marker), then resolve it. Returns (records rolled back,
    /// lines read, lines written).
    pub fn recover_core(
        &self,
        img: &mut dyn MemWrite,
        core: usize,
        committed: Option<u64>,
        mode: ScanMode,
    ) -> (u64, u64, u64) {
        let hdr = img.read_line(self.core_base(core));
        let resolved = Self::parse_header(&hdr);
        let (recs, txid, scanned) = scan_records(
            img,
            (0..self.capacity_records()).map(|i| (i, self.record_addr(core, i))),
            resolved,
            mode,
        );
        let read = 1 + scanned;
        let Some(t) = txid else {
            return (0, read, 0);
        };
        let mut written = 0;
        let mut rolled = 0;
        if committed != Some(t) {
            for (home, old) in recs.iter().rev() {
                img.write_bytes(*home, old);
                written += 1;
                rolled += 1;
            }
        }
        img.write_bytes(self.core_base(core), &Self::header(t as u32));
        (rolled, read, written + 1)
    }
}
