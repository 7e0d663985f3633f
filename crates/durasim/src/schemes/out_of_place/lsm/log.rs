//! Log segments (state, free list) and appending a record: open a
//! segment, reserve room, write entries then the commit record, index it.

use super::layout::{encode_commit, encode_data, entry_bytes, ENTRY_HDR, SEG_MAGIC, SEQ_MASK};
use super::{GcKind, Lsm};
use crate::schemes::MemCtx;
use crate::types::{Addr, Cycle, Purpose, LINE_BYTES};
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SegState {
    Free,
    Active,
    Sealed,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Seg {
    pub(super) state: SegState,
    pub(super) seq: u64,
    /// Write cursor (bytes from the segment start).
    pub(super) used: u64,
    /// Words whose newest version is in this segment.
    pub(super) live_words: u64,
    /// Data words ever written into this segment (live or not): the
    /// cleaner's utilisation is live / written, so entry headers do not
    /// count as dead space (see `compact_segments`).
    pub(super) words_written: u64,
}

/// Free log segments, host state sized by what the run used: segments
/// from `touched` on were never opened and are implicitly free; below it,
/// the freed ones are listed. The lowest free segment is reused first,
/// exactly as a set of every free segment would give.
pub(super) struct FreeSegs {
    below: BTreeSet<usize>,
    touched: usize,
    total: usize,
}

impl FreeSegs {
    pub(super) fn new(total: usize) -> Self {
        FreeSegs {
            below: BTreeSet::new(),
            touched: 0,
            total,
        }
    }
    pub(super) fn len(&self) -> usize {
        self.below.len() + (self.total - self.touched)
    }
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(super) fn pop_first(&mut self) -> Option<usize> {
        self.below.pop_first().or_else(|| {
            (self.touched < self.total).then(|| {
                self.touched += 1;
                self.touched - 1
            })
        })
    }
    pub(super) fn insert(&mut self, s: usize) {
        debug_assert!(s < self.touched);
        self.below.insert(s);
    }
    pub(super) fn clear(&mut self) {
        self.below.clear();
    }
}

pub(super) const FREE_SEG: Seg = Seg {
    state: SegState::Free,
    seq: 0,
    used: 0,
    live_words: 0,
    words_written: 0,
};

impl Lsm {
    /// Seal the active segment (its unused tail stays stale).
    pub(super) fn seal_active(&mut self) {
        if let Some(a) = self.active.take() {
            self.segs[a].state = SegState::Sealed;
        }
    }

    /// Open a free segment: its header (new sequence number) is written
    /// before any entry. Returns the persist time.
    pub(super) fn open_segment(&mut self, ctx: &mut MemCtx, purpose: Purpose, now: Cycle) -> Cycle {
        self.seal_active();
        let s = self
            .free
            .pop_first()
            .expect("caller ensured a free segment");
        if s == self.segs.len() {
            self.segs.push(FREE_SEG);
        }
        let purpose = if purpose == Purpose::Gc {
            Purpose::Gc
        } else {
            Purpose::Metadata
        };
        let mut now = now;
        if s >= self.high_water {
            // Recovery scans headers below the mark: raise it before the
            // segment's header can exist.
            self.high_water = s + 1;
            now = now.max(ctx.nvm.write(
                self.g.superblock + 8,
                &(s as u64 + 1).to_le_bytes(),
                purpose,
                now,
            ));
        }
        let seq = self.seq_next;
        self.seq_next += 1;
        self.segs[s] = Seg {
            state: SegState::Active,
            seq,
            used: LINE_BYTES,
            live_words: 0,
            words_written: 0,
        };
        self.active = Some(s);
        self.stats.segments_opened += 1;
        if (self.free.len() as u64) < self.low_free {
            self.gc_demand = true;
        }
        let hdr = (SEG_MAGIC << 48 | (seq & SEQ_MASK)).to_le_bytes();
        ctx.nvm.write(self.g.seg_addr(s), &hdr, purpose, now)
    }

    /// Space left in the active segment.
    pub(super) fn room(&self) -> u64 {
        self.active
            .map_or(0, |a| self.g.segment_bytes - self.segs[a].used)
    }

    /// Append one record (the `staging` bytes: entries then a commit record)
    /// to the active segment, which has room. Returns (log address, persist
    /// time).
    pub(super) fn append_staging(
        &mut self,
        ctx: &mut MemCtx,
        purpose_data: Purpose,
        now: Cycle,
    ) -> (Addr, Cycle) {
        let a = self.active.unwrap();
        let at = self.g.seg_addr(a) + self.segs[a].used;
        let len = self.staging.len();
        let commit_at = len - ENTRY_HDR as usize;
        // Entries, then the commit record: one write call issues bursts in
        // address order, so the commit record persists last (ADR queue).
        let mut t = now;
        if commit_at > 0 {
            t = t.max(
                ctx.nvm
                    .write(at, &self.staging[..commit_at], purpose_data, now),
            );
        }
        let cpurpose = if purpose_data == Purpose::Gc {
            Purpose::Gc
        } else {
            Purpose::Metadata
        };
        t = t.max(ctx.nvm.write(
            at + commit_at as u64,
            &self.staging[commit_at..],
            cpurpose,
            now,
        ));
        self.segs[a].used += len as u64;
        self.stats.log_bytes_appended += len as u64;
        self.stats.commit_records += 1;
        (at, t)
    }

    /// Make sure a record of `bytes` fits: in the active segment, else in
    /// a freshly opened one (running an emergency migrate-home GC if no
    /// segment is free). Returns the time.
    pub(super) fn reserve(
        &mut self,
        ctx: &mut MemCtx,
        bytes: u64,
        purpose: Purpose,
        now: Cycle,
    ) -> Cycle {
        // TxEnd rejects larger transactions (input error); GC and
        // auto-commit records are bounded well below a segment.
        assert!(
            bytes + LINE_BYTES <= self.g.segment_bytes,
            "internal: a {bytes}-byte log record exceeds a segment"
        );
        if self.room() >= bytes {
            return now;
        }
        let mut t = now;
        if self.free.is_empty() {
            let end = self.gc(ctx, t, GcKind::Emergency);
            self.stats.emergency_stall_cycles += end - t;
            t = end;
        }
        t.max(self.open_segment(ctx, purpose, t))
    }

    /// Commit a write set `lines` as one record; updates the index. Returns
    /// (time the record persisted, time the index update finished).
    pub(super) fn commit_lines(
        &mut self,
        ctx: &mut MemCtx,
        lines: &[(Addr, u8, [u64; 8])],
        txid: u32,
        purpose: Purpose,
        charged_walks: bool,
        now: Cycle,
    ) -> (Cycle, Cycle) {
        let bytes: u64 = lines.iter().map(|l| entry_bytes(l.1)).sum::<u64>() + ENTRY_HDR;
        let t = self.reserve(ctx, bytes, purpose, now);
        let a = self.active.unwrap();
        let seq = self.segs[a].seq;
        self.staging.clear();
        for &(line, mask, words) in lines {
            encode_data(&mut self.staging, line, mask, &words, txid, seq);
            self.stats.log_entries += 1;
            self.stats.log_words += u64::from(mask.count_ones());
        }
        encode_commit(&mut self.staging, lines.len() as u64, txid, seq);
        let (base, persisted) = self.append_staging(ctx, purpose, t);
        // The index points at the new data once the record is durable. A
        // transaction's update walks were emitted as loads (`instrument`).
        let charged = purpose == Purpose::Log && charged_walks;
        let mut ti = persisted;
        let mut off = base;
        for &(line, mask, _) in lines {
            let (node, t2) = self.timed_upsert(ctx, line, charged, ti);
            ti = t2;
            let mut d = off + ENTRY_HDR;
            for w in 0..8 {
                if mask & (1 << w) != 0 {
                    self.set_loc(node, w, d);
                    d += 8;
                }
            }
            off = d;
        }
        (persisted, ti)
    }
}
