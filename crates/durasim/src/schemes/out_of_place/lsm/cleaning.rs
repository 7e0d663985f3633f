//! Log cleaning (GC): periodic, on-demand, emergency and final runs;
//! `compact` copies the live words of mostly-dead segments to the log
//! head, `home` migrates every live word home and retires the log.

use super::layout::{decode, entry_bytes, Entry, ENTRY_HDR};
use super::log::{Seg, SegState};
use super::{GcKind, Lsm};
use crate::schemes::MemCtx;
use crate::types::{line_of, write_word, Addr, Cycle, Purpose, LINE_BYTES};
use std::collections::BTreeMap;

impl Lsm {
    /// Background / on-demand / final GC. Returns the time it finished.
    pub(super) fn gc(&mut self, ctx: &mut MemCtx, now: Cycle, kind: GcKind) -> Cycle {
        match kind {
            GcKind::Periodic => self.stats.gc_runs_periodic += 1,
            GcKind::OnDemand => self.stats.gc_runs_on_demand += 1,
            GcKind::Emergency => self.stats.gc_runs_emergency += 1,
            GcKind::Final => self.stats.gc_runs_final += 1,
        }
        let home = match kind {
            GcKind::Emergency | GcKind::Final => true,
            _ => !self.compact,
        };
        let end = if home {
            self.migrate_home(ctx, now)
        } else {
            match self.compact_segments(ctx, now) {
                Some(t) => t,
                None => self.migrate_home(ctx, now),
            }
        };
        self.stats.gc_cycles += end - now;
        end
    }

    /// Migrate the newest version of every logged word home, then retire
    /// the whole log with one 8-byte write of the superblock's tail.
    /// Crash-safe: until the tail moves, recovery replays the same values.
    pub(super) fn migrate_home(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        self.stats.gc_migrations_home += 1;
        self.last_gc_kind = "gc-home";
        let mut t = now;
        if self.mutant_retire_early {
            ctx.nvm.write(
                self.g.superblock,
                &self.seq_next.to_le_bytes(),
                Purpose::Gc,
                now,
            );
        }
        for node in self.index.in_order() {
            let line = self.index.keys[node as usize];
            let l = self.index.locs[node as usize];
            let mut data = [0u8; 64];
            let mut rd = now;
            if l.mask != 0xff {
                rd = rd.max(ctx.nvm.read(line, &mut data, Purpose::Gc, now));
            }
            let mut last_burst = u64::MAX;
            for w in 0..8 {
                if l.mask & (1 << w) != 0 {
                    let mut b = [0u8; 8];
                    if line_of(l.loc[w]) != last_burst {
                        last_burst = line_of(l.loc[w]);
                        rd = rd.max(ctx.nvm.read(l.loc[w], &mut b, Purpose::Gc, now));
                    } else {
                        ctx.nvm.peek(l.loc[w], &mut b);
                    }
                    write_word(&mut data, w, u64::from_le_bytes(b));
                }
            }
            t = t.max(ctx.nvm.write(line, &data, Purpose::Gc, rd));
            self.stats.gc_home_lines_written += 1;
            self.stats.gc_bytes_home += LINE_BYTES;
        }
        // Everything below seq_next is dead from now on.
        t = t.max(ctx.nvm.write(
            self.g.superblock,
            &self.seq_next.to_le_bytes(),
            Purpose::Gc,
            t,
        ));
        self.active = None;
        self.free.clear();
        for (i, s) in self.segs.iter_mut().enumerate() {
            if s.state != SegState::Free {
                self.stats.gc_segments_freed += 1;
            }
            *s = Seg {
                state: SegState::Free,
                seq: 0,
                used: 0,
                live_words: 0,
                words_written: 0,
            };
            self.free.insert(i);
        }
        // DRAM: the index is rebuilt empty (head node written).
        t = t.max(ctx.dram.write(0, &[0u8; 64], Purpose::Metadata, t));
        self.index.clear();
        self.gc_demand = false;
        t
    }

    /// Clean sealed segments whose live share is at most the threshold:
    /// read each, copy its live words to the log head as committed GC
    /// records, then free it (header word cleared). Returns `None` when the
    /// copies would not fit in the free segments.
    pub(super) fn compact_segments(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        let mut victims: Vec<usize> = (0..self.segs.len())
            .filter(|&i| {
                let s = &self.segs[i];
                // Utilisation is live words over data words written, not
                // over capacity: each entry carries a 24-byte header, so a
                // segment the cleaner itself filled with one- or two-word
                // entries would look 25-40% live with every word live, and
                // be copied again every period (hashmap collapsed on long
                // runs: 99% of log writes were such re-copies).
                s.state == SegState::Sealed
                    && s.live_words as f64 <= self.victim_util * s.words_written as f64
            })
            .collect();
        victims.sort_by_key(|&i| self.segs[i].seq);
        if victims.is_empty() {
            return Some(now);
        }
        // Space the copies need, generously (one entry per live word).
        let live: u64 = victims.iter().map(|&i| self.segs[i].live_words).sum();
        // Records of at most half a segment may leave half of each segment
        // unused, hence the factor two.
        let per_seg = self.g.segment_bytes - LINE_BYTES;
        let need = 2 * (live * (ENTRY_HDR + 8) + ENTRY_HDR * (1 + victims.len() as u64)) + per_seg;
        if need > self.free.len().saturating_sub(self.low_free as usize) as u64 * per_seg {
            return None;
        }
        self.stats.gc_compactions += 1;
        self.last_gc_kind = "gc-compact";
        let mut t = now;
        let mut seg_buf = vec![0u8; self.g.segment_bytes as usize];
        for &v in &victims {
            let used = self.segs[v].used as usize;
            let seq = self.segs[v].seq;
            let base = self.g.seg_addr(v);
            let rd = ctx.nvm.read(base, &mut seg_buf[..used], Purpose::Gc, now);
            self.stats.gc_bytes_scanned += used as u64;
            let copies = self.live_words(&seg_buf[..used], base, seq);
            // Copy in records that each fit in one segment.
            let all: Vec<(Addr, u8, [u64; 8])> =
                copies.into_iter().map(|(l, (m, d))| (l, m, d)).collect();
            let max_rec = (self.g.segment_bytes - LINE_BYTES - ENTRY_HDR) / 2;
            let mut i = 0;
            while i < all.len() {
                let mut j = i;
                let mut bytes = 0;
                while j < all.len() && bytes + entry_bytes(all[j].1) <= max_rec {
                    bytes += entry_bytes(all[j].1);
                    j += 1;
                }
                let txid = self.fresh_txid();
                let (p, _) =
                    self.commit_lines(ctx, &all[i..j], txid, Purpose::Gc, false, rd.max(t));
                t = t.max(p);
                self.stats.gc_words_copied += all[i..j]
                    .iter()
                    .map(|l| u64::from(l.1.count_ones()))
                    .sum::<u64>();
                self.stats.gc_bytes_copied += bytes + ENTRY_HDR;
                i = j;
            }
            debug_assert_eq!(self.segs[v].live_words, 0);
            // Free the victim only after its live words are durable
            // elsewhere (ADR persists in write order).
            t = t.max(
                ctx.nvm
                    .write(base, &0u64.to_le_bytes(), Purpose::Gc, t.max(rd)),
            );
            self.segs[v] = Seg {
                state: SegState::Free,
                seq: 0,
                used: 0,
                live_words: 0,
                words_written: 0,
            };
            self.free.insert(v);
            self.stats.gc_segments_freed += 1;
        }
        self.gc_demand = false;
        Some(t)
    }

    /// The live words of a victim segment (image `seg`, at `base`, with
    /// sequence `seq`): those whose newest location is in it, by line.
    fn live_words(&self, seg: &[u8], base: Addr, seq: u64) -> BTreeMap<Addr, (u8, [u64; 8])> {
        let mut copies: BTreeMap<Addr, (u8, [u64; 8])> = BTreeMap::new();
        let mut off = LINE_BYTES as usize;
        while let Some((e, next)) = decode(seg, off, seq) {
            if let Entry::Data {
                line, mask, data, ..
            } = e
            {
                if let Some(&node) = self.index.map.get(&line) {
                    let l = self.index.locs[node as usize];
                    let mut k = 0;
                    for w in 0..8 {
                        if mask & (1 << w) != 0 {
                            let a = base + off as u64 + ENTRY_HDR + 8 * k;
                            if l.mask & (1 << w) != 0 && l.loc[w] == a {
                                let c = copies.entry(line).or_insert((0, [0; 8]));
                                c.0 |= 1 << w;
                                c.1[w] = data[k as usize];
                            }
                            k += 1;
                        }
                    }
                }
            }
            off = next;
        }
        copies
    }
}
