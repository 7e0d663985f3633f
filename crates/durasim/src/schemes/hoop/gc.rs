//! Garbage collection with data coalescing (HOOP §III-E, Algorithm 1).
//!
//! GC works on the FULL blocks. Reading only bytes from NVM, it reads their
//! address slices (the transactions committed there: a prefix of commit
//! order, since commits always go to the active block), walks the
//! committed transactions newest first, keeps the first (newest) version of
//! each home word in a hash map H, writes every home line once, drops
//! mapping entries whose newest data went home and puts the lines into the
//! eviction buffer. Then it retires the address slices (one atomic word
//! each) in commit order and marks UNUSED every FULL block that holds no slice of a
//! transaction still live (in flight, or committed in the active block);
//! the others are freed by a later pass.
//!
//! Crash safety: recovery replays the committed transactions whose entries
//! are not retired, newest-wins, which rewrites what GC wrote. Address
//! slices are retired only after every home write, oldest first, so
//! whatever stays replayable after a crash is newer than whatever was
//! retired; blocks are freed only when no live entry points into them.

use super::layout::{self, BlockState, DataSlice, SLICE_BYTES};
use super::{Hoop, MemCtx};
use crate::types::{Addr, Cycle, Purpose};
use rustc_hash::FxHashMap;

/// The newest version of each migrated word of one home line.
#[derive(Clone, Copy, Default)]
struct GcLine {
    mask: u8,
    values: [u64; 8],
    /// Slice of each word's version (identifies it, see `LineLocs`).
    slots: [u32; 8],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcKind {
    Periodic,
    OnDemand,
    Final,
}

impl Hoop {
    /// Run one GC pass at `now`; returns when its last write was persisted.
    pub(super) fn run_gc(&mut self, ctx: &mut MemCtx, now: Cycle, kind: GcKind) -> Cycle {
        match kind {
            GcKind::Periodic => self.stats.gc_runs_periodic += 1,
            GcKind::OnDemand => self.stats.gc_runs_on_demand += 1,
            GcKind::Final => self.stats.gc_runs_final += 1,
        }
        if self.full.is_empty() {
            return now;
        }
        let victims: Vec<usize> = self.full.iter().copied().collect();
        let mut t = now;
        // Mark the blocks BLK_GC (recovery treats them like FULL ones).
        for &b in &victims {
            if self.blocks[b].state == BlockState::Full {
                self.blocks[b].state = BlockState::Gc;
                t = t.max(self.write_header(ctx, b, None, now));
            }
        }
        // Lines 4-18: read address slices, then each committed transaction
        // newest first; the first version seen of a word is the newest.
        let mut commits = Vec::new();
        let mut aslices: Vec<(u64, usize)> = Vec::new(); // (slot, block)
        let mut t_read = t;
        let mut buf = [0u8; SLICE_BYTES as usize];
        for &b in &victims {
            let epoch = self.blocks[b].epoch;
            for &s in &self.blocks[b].addr_slices {
                t_read = t_read.max(ctx.nvm.read(self.g.slot_addr(s), &mut buf, Purpose::Gc, t));
                let entries = layout::decode_address_slice(&buf, epoch)
                    .expect("GC: address slice bytes are intact");
                aslices.push((s, b));
                commits.extend(entries);
            }
        }
        commits.sort_unstable_by_key(|c| std::cmp::Reverse(c.txid));
        // H of Algorithm 1, grouped by home line: line -> index into
        // `newest` (per word of the line: first version seen = newest).
        let mut h: FxHashMap<Addr, u32> = FxHashMap::default();
        let mut newest: Vec<GcLine> = Vec::new();
        let mut chain: Vec<(u64, DataSlice)> = Vec::new();
        let mut chain_blocks: Vec<usize> = Vec::new();
        let t_chain = t_read;
        let mut t_scan = t_read;
        for c in &commits {
            chain.clear();
            chain_blocks.clear();
            let mut slot = c.start_slot;
            loop {
                t_scan = t_scan.max(ctx.nvm.read(
                    self.g.slot_addr(slot),
                    &mut buf,
                    Purpose::Gc,
                    t_chain,
                ));
                let s = DataSlice::decode(&buf).expect("GC: committed slice bytes are intact");
                debug_assert_eq!(s.txid, c.txid);
                chain.push((slot, s));
                let b = self.g.block_of(slot);
                if !chain_blocks.contains(&b) {
                    chain_blocks.push(b);
                }
                if s.next == 0 {
                    break;
                }
                slot = layout::follow_next(slot, s.next, self.g.slots());
            }
            for &b in &chain_blocks {
                self.blocks[b].live_txs -= 1;
            }
            // Within a transaction a later slice holds the later update.
            for (slot, s) in chain.iter().rev() {
                for i in 0..s.count as usize {
                    self.stats.gc_words_in_slices += 1;
                    let a = s.homes[i];
                    let e = *h.entry(a & !63).or_insert_with(|| {
                        newest.push(GcLine::default());
                        (newest.len() - 1) as u32
                    });
                    let l = &mut newest[e as usize];
                    let w = ((a & 63) / 8) as usize;
                    if l.mask & (1 << w) == 0 {
                        l.mask |= 1 << w;
                        l.values[w] = s.values[i];
                        l.slots[w] = *slot as u32;
                    }
                }
            }
        }
        self.stats.gc_tx_migrated += commits.len() as u64;
        // Lines 20-27: write each home line once, in address order.
        let mut lines: Vec<(Addr, u32)> = h.into_iter().collect();
        lines.sort_unstable_by_key(|l| l.0);
        let mut t_write = t_scan;
        for &(line, e) in &lines {
            let l = &newest[e as usize];
            self.stats.gc_words_migrated += u64::from(l.mask.count_ones());
            let mut data = [0u8; 64];
            if l.mask != 0xff {
                // Partial line: merge into the current home content.
                t_write = t_write.max(ctx.nvm.read(line, &mut data, Purpose::Gc, t_scan));
                self.stats.gc_home_reads += 1;
            }
            for w in (0..8).filter(|w| l.mask & (1 << w) != 0) {
                data[w * 8..w * 8 + 8].copy_from_slice(&l.values[w].to_le_bytes());
            }
            t_write = t_write.max(ctx.nvm.write(line, &data, Purpose::Gc, t_scan));
            self.stats.gc_lines_written += 1;
            self.stats.gc_bytes_migrated += 64;
            self.evb.insert(line, &data);
            let m = self.ind.migrated_line(line, l.mask, &l.slots);
            if m.empty {
                self.mapping_removed();
                self.stats.mapping_removed_by_gc += u64::from(m.unmapped);
            }
        }
        // Retire the migrated transactions: one atomic word per address
        // slice, in commit order, so a crash leaves only newer ones
        // replayable.
        let mut t_end = t_write;
        for &(s, b) in &aslices {
            let hdr = layout::address_slice_header(self.blocks[b].epoch, true);
            let a = self.g.slot_addr(s) + layout::ADDR_HEADER_OFFSET as u64;
            t_end = t_end.max(ctx.nvm.write(a, &hdr, Purpose::Gc, t_write));
        }
        // Lines 28-29: blocks holding no slice of a live transaction become
        // UNUSED; clear their index entries. Others wait for the next pass.
        let t_hdr = t_end;
        let mut kept = std::collections::VecDeque::new();
        for &b in &victims {
            self.blocks[b].addr_slices.clear();
            if self.blocks[b].live_txs == 0 {
                self.blocks[b].state = BlockState::Unused;
                t_end = t_end.max(self.write_header(ctx, b, None, t_hdr));
                t_end = t_end.max(self.write_index_bit(ctx, b, false, t_end));
                self.free_blocks += 1;
                self.stats.gc_blocks_freed += 1;
            } else {
                kept.push_back(b);
            }
        }
        self.full = kept;
        self.stats.gc_cycles += t_end - now;
        t_end
    }
}
