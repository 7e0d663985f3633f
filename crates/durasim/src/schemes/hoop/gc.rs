//! Garbage collection with data coalescing (HOOP §III-E, Algorithm 1).
//!
//! GC works on FULL blocks in allocation order, which is commit order (a
//! transaction's commit entry always goes to the active block). It takes the
//! longest prefix P of FULL blocks whose slices all belong to transactions
//! committed inside P, so freeing P never strands a commit entry that points
//! into a freed block. Then, reading only bytes from NVM: it reads P's
//! address slices, walks the committed transactions newest first, keeps the
//! first (newest) version of each home word in a hash map H, writes every
//! home line once, drops mapping entries whose newest data went home, puts
//! the lines into the eviction buffer, and finally marks the blocks UNUSED
//! oldest first.
//!
//! Crash safety: until a header says UNUSED, recovery replays the block's
//! transactions newest-wins, which rewrites what GC wrote. Headers are
//! cleared oldest first, so the blocks still live after a crash always hold
//! the newest versions of whatever words they contain.

use super::layout::{self, BlockState, DataSlice, SLICE_BYTES};
use super::{Hoop, MemCtx};
use crate::types::{Addr, Cycle, Purpose};
use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcKind {
    Periodic,
    OnDemand,
    Final,
}

impl Hoop {
    /// Length of the freeable prefix of FULL blocks.
    fn freeable_prefix(&self) -> usize {
        let mut best = 0;
        let mut need = 0u32;
        for (i, &b) in self.full.iter().enumerate() {
            let blk = &self.blocks[b];
            if blk.open_txs > 0 {
                break;
            }
            need = need.max(blk.max_commit_epoch);
            if need <= blk.epoch {
                best = i + 1;
            }
        }
        best
    }

    /// Run one GC pass at `now`; returns when its last write was persisted.
    pub(super) fn run_gc(&mut self, ctx: &mut MemCtx, now: Cycle, kind: GcKind) -> Cycle {
        match kind {
            GcKind::Periodic => self.stats.gc_runs_periodic += 1,
            GcKind::OnDemand => self.stats.gc_runs_on_demand += 1,
            GcKind::Final => self.stats.gc_runs_final += 1,
        }
        let k = self.freeable_prefix();
        if k == 0 {
            return now;
        }
        let victims: Vec<usize> = self.full.iter().take(k).copied().collect();
        let mut t = now;
        // Mark the blocks BLK_GC (recovery treats them like FULL ones).
        for &b in &victims {
            self.blocks[b].state = BlockState::Gc;
            t = t.max(self.write_header(ctx, b, None, now));
        }
        // Lines 4-18: read address slices, then each committed transaction
        // newest first; the first version seen of a word is the newest.
        let mut commits = Vec::new();
        let mut t_read = t;
        let mut buf = [0u8; SLICE_BYTES as usize];
        for &b in &victims {
            let epoch = self.blocks[b].epoch;
            for &s in &self.blocks[b].addr_slices {
                t_read = t_read.max(ctx.nvm.read(self.g.slot_addr(s), &mut buf, Purpose::Gc, t));
                let entries = layout::decode_address_slice(&buf, epoch)
                    .expect("GC: address slice bytes are intact");
                commits.extend(entries);
            }
        }
        commits.sort_unstable_by(|a, b| b.txid.cmp(&a.txid));
        let mut h: FxHashMap<Addr, (u64, u32)> = FxHashMap::default();
        let mut chain: Vec<DataSlice> = Vec::new();
        let t_chain = t_read;
        let mut t_scan = t_read;
        for c in &commits {
            chain.clear();
            let mut slot = c.start_slot;
            loop {
                t_scan = t_scan.max(ctx.nvm.read(self.g.slot_addr(slot), &mut buf, Purpose::Gc, t_chain));
                let s = DataSlice::decode(&buf).expect("GC: committed slice bytes are intact");
                debug_assert_eq!(s.txid, c.txid);
                chain.push(s);
                if s.next == 0 {
                    break;
                }
                slot = layout::follow_next(slot, s.next, self.g.slots());
            }
            // Within a transaction a later slice holds the later update.
            for s in chain.iter().rev() {
                for i in 0..s.count as usize {
                    self.stats.gc_words_in_slices += 1;
                    h.entry(s.homes[i]).or_insert((s.values[i], s.txid));
                }
            }
        }
        self.stats.gc_tx_migrated += commits.len() as u64;
        // Lines 20-27: write each home line once.
        let mut words: Vec<(Addr, u64, u32)> = h.into_iter().map(|(a, (v, x))| (a, v, x)).collect();
        words.sort_unstable_by_key(|w| w.0);
        self.stats.gc_words_migrated += words.len() as u64;
        let mut t_write = t_scan;
        let mut i = 0;
        while i < words.len() {
            let line = words[i].0 & !63;
            let mut j = i;
            let mut mask = 0u8;
            while j < words.len() && words[j].0 & !63 == line {
                mask |= 1 << ((words[j].0 & 63) / 8);
                j += 1;
            }
            let mut data = [0u8; 64];
            if mask != 0xff {
                // Partial line: merge into the current home content.
                t_write = t_write.max(ctx.nvm.read(line, &mut data, Purpose::Gc, t_scan));
                self.stats.gc_home_reads += 1;
            }
            for &(a, v, _) in &words[i..j] {
                let w = ((a & 63) / 8) as usize;
                data[w * 8..w * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            t_write = t_write.max(ctx.nvm.write(line, &data, Purpose::Gc, t_scan));
            self.stats.gc_lines_written += 1;
            self.stats.gc_bytes_migrated += 64;
            self.evb.insert(line, &data);
            let mut empty = false;
            for &(a, _, x) in &words[i..j] {
                empty = self.ind.migrated(a, x);
            }
            if empty && self.mapping_remove(line) {
                self.stats.mapping_removed_by_gc += 1;
            }
            i = j;
        }
        // Lines 28-29: headers UNUSED, oldest first; clear the index entries.
        let mut t_end = t_write;
        for &b in &victims {
            self.blocks[b].state = BlockState::Unused;
            self.blocks[b].addr_slices.clear();
            t_end = t_end.max(self.write_header(ctx, b, None, t_write));
            self.free_blocks += 1;
            self.stats.gc_blocks_freed += 1;
        }
        self.full.drain(..k);
        self.stats.gc_cycles += t_end - now;
        t_end
    }
}
