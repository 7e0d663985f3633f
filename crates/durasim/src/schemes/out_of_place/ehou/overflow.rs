//! The per-core overflow log of evicted speculative entries with its
//! Bloom filter, and the ADR reclaim list of the running transaction.

use super::layout::{record, tag, LOG_ENTRY_BYTES, RECLAIM_COUNT_BITS};
use super::{Ehou, PARAMS};
use crate::schemes::{raise_advice, MemCtx};
use crate::types::{Addr, Cycle, Purpose};

/// The recovery path of overflowed speculative entries (`Scheme::recovery_paths`).
pub(super) const OVERFLOW_LOG_PATH: &str = "overflow log";

/// A per-core Bloom filter (double hashing over `bits`).
pub struct Bloom {
    words: Vec<u64>,
    mask: u64,
    hashes: u32,
    empty: bool,
}

impl Bloom {
    pub fn new(bits: usize, hashes: u32) -> Self {
        Bloom {
            words: vec![0; bits.div_ceil(64)],
            mask: bits as u64 - 1,
            hashes,
            empty: true,
        }
    }
    fn probes(&self, key: u64) -> impl Iterator<Item = u64> + '_ {
        let mut h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 31;
        let h2 = (h.wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 17) | 1;
        (0..self.hashes as u64).map(move |i| h.wrapping_add(i.wrapping_mul(h2)) & self.mask)
    }
    pub fn insert(&mut self, key: u64) {
        let mut ps = [0u64; 16];
        for (i, b) in self.probes(key).enumerate() {
            ps[i] = b;
        }
        for &b in &ps[..self.hashes as usize] {
            self.words[(b / 64) as usize] |= 1 << (b % 64);
        }
        self.empty = false;
    }
    pub fn may_contain(&self, key: u64) -> bool {
        !self.empty
            && self
                .probes(key)
                .all(|b| self.words[(b / 64) as usize] >> (b % 64) & 1 == 1)
    }
    pub fn clear(&mut self) {
        if !self.empty {
            self.words.iter_mut().for_each(|w| *w = 0);
            self.empty = true;
        }
    }
}

impl Ehou {
    /// Append an evicted speculative entry to `core`'s overflow log: the
    /// entry is durable in the ADR log buffer at once and reaches the PM
    /// log when the buffer fills.
    pub(super) fn log_append(
        &mut self,
        ctx: &mut MemCtx,
        core: usize,
        line: Addr,
        enc: u64,
        now: Cycle,
    ) -> Cycle {
        let c = &mut self.cores[core];
        let i = c.log.len() as u64;
        if i >= self.g.log_entries {
            let need = i + 1;
            ctx.input_error(format!(
                "ehou.log_entries_per_core={} is too small: a transaction on core {core} overflowed more AIT-cache entries; {}",
                self.g.log_entries,
                raise_advice(PARAMS, "ehou.log_entries_per_core", need)
            ));
            return now;
        }
        let rec = record(line, enc, tag(core, c.txseq));
        // Entries persist in slot order (slots go in handling order).
        let now = now.max(c.log_at);
        c.log_at = now;
        let path = ctx.nvm.persist_log.path_start();
        c.log.push((line, enc));
        c.bloom.insert(line);
        c.buffered += 1;
        self.s.log_entries += 1;
        let a = self.g.log_addr(core, i);
        ctx.nvm.persist_adr_structure(a, &rec, now);
        if self.cores[core].buffered >= self.log_buffer {
            // The buffer drains to the PM log (one write of its entries).
            let n = self.cores[core].buffered as u64;
            let first = i + 1 - n;
            let mut buf = std::mem::take(&mut self.scratch);
            buf.resize((n * LOG_ENTRY_BYTES) as usize, 0);
            ctx.nvm.peek(self.g.log_addr(core, first), &mut buf);
            self.cores[core].buffered = 0;
            self.s.log_pm_writes += 1;
            let t = self.overhead_write(ctx, self.g.log_addr(core, first), &buf, Purpose::Log, now);
            self.scratch = buf;
            ctx.nvm.persist_log.path_done(OVERFLOW_LOG_PATH, path);
            return t;
        }
        ctx.nvm.persist_log.path_done(OVERFLOW_LOG_PATH, path);
        now
    }

    /// Add device line `new` to `core`'s reclaim list (ADR): the entry,
    /// then the count.
    pub(super) fn reclaim_push(&mut self, ctx: &mut MemCtx, core: usize, new: u64, t: Cycle) {
        let c = &mut self.cores[core];
        if c.reclaim >= self.g.reclaim_cap {
            let need = c.reclaim + 1;
            ctx.input_error(format!(
                "ehou.reclaim_entries_per_core={} is too small for a transaction on core {core}; {}",
                self.g.reclaim_cap,
                raise_advice(PARAMS, "ehou.reclaim_entries_per_core", need)
            ));
        } else {
            let ra = self.g.reclaim_addr(core);
            let n = c.reclaim;
            c.reclaim += 1;
            // One word {txseq, count}: a torn header never pairs
            // a new transaction with an old count.
            let hdr = (c.txseq << RECLAIM_COUNT_BITS) | c.reclaim;
            // Pushed as the controller handles the write that took the
            // line: after the requests that arrived before it, among them
            // the flip that released the line. Slots are handed out in the
            // order the simulator handles the writes, which is not always
            // their arrival order, so the header that counts an entry goes
            // no earlier than the latest entry it counts.
            c.reclaim_at = if n == 0 { t } else { c.reclaim_at.max(t) };
            ctx.nvm
                .persist_adr_in_queue_order(ra + 64 + n * 8, &new.to_le_bytes(), t);
            ctx.nvm
                .persist_adr_in_queue_order(ra, &hdr.to_le_bytes(), c.reclaim_at);
            self.s.reclaim_max = self.s.reclaim_max.max(c.reclaim);
        }
    }
}
