//! Private L1 and L2 per core, shared inclusive LLC. L2 is inclusive of L1
//! and the LLC of both (HOOP paper Table II); evicting a line from a lower
//! level back-invalidates the upper copies and merges their newer data.
//! Threads own disjoint data (as in the papers), so no coherence protocol is
//! needed: the LLC remembers which core's private caches may hold a line.
//!
//! One copy of bytes and [`LineExt`] per line, in its LLC slot; L1 and L2
//! slots link to it and keep their own dirty bits. This is exact: a private
//! copy is filled from the level below and differs from it only after a
//! store, which marks it dirty, and the newer copy always leaves (eviction)
//! or is written everywhere (flush) before the older one is read again, so
//! the newest copy is the only one ever observed. Write-back decisions
//! still follow the per-level dirty bits.

use super::{Cache, LineExt};
use crate::config::Params;
use crate::types::{Addr, CoreId, Cycle, LineData, LINE_BYTES};

/// Why a dirty line is written towards memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritebackCause {
    /// Replacement in the LLC.
    Eviction,
    /// An explicit cache-line flush (clwb) from the op stream or a scheme.
    Flush,
    /// End-of-run drain of every dirty line.
    Drain,
    /// A periodic force-write-back pass (FWB, Ogleari et al. HPCA 2018):
    /// a line dirty at two consecutive passes; it stays cached, clean.
    ForceWriteBack,
}

/// A dirty line written towards memory, as [`MemSide::writeback`] and the
/// scheme's `writeback` hook see it: one value built where the line leaves
/// the caches and handed down unchanged.
#[derive(Clone, Copy, Debug)]
pub struct Writeback<'a> {
    pub core: CoreId,
    pub line_addr: Addr,
    /// The line's newest bytes.
    pub data: &'a LineData,
    /// The line's scheme state.
    pub ext: &'a LineExt,
    pub cause: WritebackCause,
    pub now: Cycle,
}

/// One force-write-back pass over the caches
/// ([`Hierarchy::force_write_back_pass`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FwbPass {
    /// Dirty lines flagged by the previous pass and written back now.
    pub written: u64,
    /// Dirty lines flagged now (written back at the next pass if still dirty).
    pub flagged: u64,
    /// When the scan and its last write-back were done.
    pub done: Cycle,
}

/// What lies below the LLC: the scheme and the memory controllers.
pub trait MemSide {
    /// LLC miss: fill `out` with the newest bytes of the line
    /// and `ext` with the state the LLC copy starts with; returns the time
    /// the data arrives and whether the line must be installed dirty (so its
    /// eviction is reported even if no store touches it again).
    fn read_miss(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        ext: &mut LineExt,
    ) -> (Cycle, bool);
    /// `line_addr` may soon be read or written back below the LLC: a hint
    /// to prefetch into the host caches (no simulated effect).
    #[inline]
    fn prefetch_miss(&self, _line_addr: Addr) {}
    /// A dirty line leaves the LLC (or is flushed); returns the time the
    /// write is persisted (write-backs are posted: callers other than flush
    /// do not wait for it).
    fn writeback(&mut self, ev: Writeback<'_>) -> Cycle;
    /// A dirty line leaves a private L1 (MorLog observes this).
    /// The line's extension is mutable: MorLog's L1 state leaves with the
    /// line.
    fn l1_evict(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        data: &LineData,
        ext: &mut LineExt,
        now: Cycle,
    );
}

/// Where an access was satisfied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitLevel {
    L1,
    L2,
    Llc,
    Memory,
}

pub struct Hierarchy {
    pub l1: Vec<Cache>,
    pub l2: Vec<Cache>,
    pub llc: Cache,
    /// LLC write-back buffer: when each entry is free again (its victim
    /// accepted by the memory controller).
    wb_free_at: Vec<Cycle>,
    /// Force-write-back flag per LLC slot (empty unless the scheme uses the
    /// scan, [`Hierarchy::enable_force_write_back`]): the line was dirty at
    /// the previous pass and has not been written back since. One flag per
    /// line of the inclusive hierarchy (its LLC slot): the newest copy of a
    /// line is the one written back, whichever level holds it.
    fwb_flag: Vec<bool>,
}

impl Hierarchy {
    pub fn new(p: &Params, cores: usize) -> Self {
        let mk = |lvl: &str, linked: bool| {
            let (size, ways, latency) = (
                p.u64(&format!("cache.{lvl}_size_bytes")),
                p.usize(&format!("cache.{lvl}_ways")),
                p.u64(&format!("cache.{lvl}_latency_cycles")),
            );
            if linked {
                Cache::new_linked(size, ways, latency)
            } else {
                Cache::new(size, ways, latency)
            }
        };
        Hierarchy {
            l1: (0..cores).map(|_| mk("l1", true)).collect(),
            l2: (0..cores).map(|_| mk("l2", true)).collect(),
            llc: mk("llc", false),
            wb_free_at: vec![0; p.usize("cache.llc_writeback_buffer_entries").max(1)],
            fwb_flag: Vec::new(),
        }
    }

    /// Give every LLC line a force-write-back flag (cleared).
    pub fn enable_force_write_back(&mut self) {
        self.fwb_flag = vec![false; self.llc.slot_count()];
    }

    /// The line in LLC slot `s` is dirty at some level (the LLC includes
    /// every private copy; only the owner's private caches may hold it).
    fn dirty_anywhere(&self, s: usize) -> bool {
        self.llc.is_dirty(s) || {
            let (core, addr) = (self.llc.owner(s) as usize, self.llc.line_addr(s));
            self.l2[core].find(addr).is_some_and(|s2| {
                self.l2[core].is_dirty(s2)
                    || self.l1[core]
                        .find(addr)
                        .is_some_and(|s1| self.l1[core].is_dirty(s1))
            })
        }
    }

    /// One force-write-back pass starting at `now` (FWB, Ogleari et al.
    /// HPCA 2018 §IV; MorLog §III-F "Log management"): the cache controller
    /// walks the tags; a dirty line whose flag is set (dirty at the previous
    /// pass too, not written back since) is written back through the normal
    /// path ([`WritebackCause::ForceWriteBack`]) and stays cached clean, a
    /// dirty line without the flag gets it, a clean line loses it. The walk
    /// reads one LLC set per cycle (modelling choice, docs/model/morlog.md, "The
    /// force-write-back scan"): set `i`'s write-backs leave at `now + i`, so they
    /// reach the controller as a stream over the walk instead of one burst,
    /// competing with the cores' requests there. The tag walk itself does
    /// not stall the cores (background work of the cache controller).
    pub fn force_write_back_pass(&mut self, now: Cycle, mem: &mut dyn MemSide) -> FwbPass {
        debug_assert!(!self.fwb_flag.is_empty(), "enable_force_write_back first");
        let mut pass = FwbPass {
            done: now,
            ..FwbPass::default()
        };
        let ways = self.llc.ways();
        for set in 0..self.llc.sets() {
            let t = now + set as Cycle;
            for way in 0..ways {
                let s = self.llc.slot_of(set, way);
                let Some(addr) = self.llc.valid_addr(s) else {
                    continue;
                };
                if !self.dirty_anywhere(s) {
                    self.fwb_flag[s] = false;
                } else if self.fwb_flag[s] {
                    let core = self.llc.owner(s) as usize;
                    let done = self.flush_cause(core, addr, t, mem, WritebackCause::ForceWriteBack);
                    pass.done = pass.done.max(done);
                    pass.written += 1;
                } else {
                    self.fwb_flag[s] = true;
                    pass.flagged += 1;
                }
            }
        }
        pass.done = pass.done.max(now + self.llc.sets() as Cycle);
        pass
    }

    /// The force-write-back flag of `line_addr` (tests).
    pub fn fwb_flagged(&self, line_addr: Addr) -> bool {
        self.llc
            .find(line_addr)
            .is_some_and(|s| self.fwb_flag.get(s).copied().unwrap_or(false))
    }

    /// Bytes of the line in `core`'s L1 slot `l1_slot`.
    #[inline]
    pub fn l1_data(&self, core: CoreId, l1_slot: usize) -> &LineData {
        self.llc.data(self.l1[core].link(l1_slot))
    }

    /// A store to the line in `core`'s L1 slot `l1_slot`: marks it dirty in
    /// L1 and returns its bytes and scheme state to update.
    #[inline]
    pub fn l1_write(&mut self, core: CoreId, l1_slot: usize) -> (&mut LineData, &mut LineExt) {
        let l1 = &mut self.l1[core];
        l1.set_dirty(l1_slot, true);
        self.llc.line_mut(l1.link(l1_slot))
    }

    /// Bring `line_addr` into `core`'s L1. Returns the completion time, the
    /// L1 slot holding the line, and where it was found.
    #[inline]
    pub fn access(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        mem: &mut dyn MemSide,
    ) -> (Cycle, usize, HitLevel) {
        let l1 = &mut self.l1[core];
        if let Some(s) = l1.lookup(line_addr) {
            l1.hits += 1;
            return (now + l1.latency, s, HitLevel::L1);
        }
        self.access_l1_miss(core, line_addr, now, mem)
    }

    /// [`Hierarchy::access`] of a line `core`'s L1 does not hold (the
    /// caller's lookup missed): the rest of the access without a second L1
    /// lookup. Never returns [`HitLevel::L1`].
    pub fn access_l1_miss(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        mem: &mut dyn MemSide,
    ) -> (Cycle, usize, HitLevel) {
        let l1 = &mut self.l1[core];
        debug_assert!(l1.find(line_addr).is_none(), "the L1 misses");
        l1.misses += 1;
        // Host-cache hints for the lookups below (the LLC set and the
        // scheme's tables are mostly cold in the host caches).
        self.llc.prefetch_set(line_addr);
        mem.prefetch_miss(line_addr);
        let mut t = now + l1.latency;
        let (s2, level) = self.fetch_into_l2(core, line_addr, &mut t, mem);
        // Fill L1; an L1 victim is (by inclusion) present in L2.
        let slot = self.l1[core].victim_slot(line_addr);
        if let Some(vaddr) = self.l1[core].valid_addr(slot) {
            if self.l1[core].is_dirty(slot) {
                let s3 = self.l1[core].link(slot);
                let (d, x) = self.llc.line_mut(s3);
                mem.l1_evict(core, vaddr, d, x, t);
                let l2 = &mut self.l2[core];
                let v2 = l2.find(vaddr).expect("L2 must include every L1 line");
                l2.set_dirty(v2, true);
            }
            self.l1[core].invalidate(slot);
        }
        let link = self.l2[core].link(s2);
        self.l1[core].install_link(slot, line_addr, link);
        (t, slot, level)
    }

    /// Bring `line_addr` into `core`'s L2; returns its L2 slot and where it
    /// was found.
    fn fetch_into_l2(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        t: &mut Cycle,
        mem: &mut dyn MemSide,
    ) -> (usize, HitLevel) {
        let l2 = &mut self.l2[core];
        *t += l2.latency;
        if let Some(s2) = l2.lookup(line_addr) {
            l2.hits += 1;
            return (s2, HitLevel::L2);
        }
        l2.misses += 1;
        *t += self.llc.latency;
        // The victim is chosen before the read: `mem` cannot reach the
        // LLC, so the set is the same when the fill arrives.
        let (s3, level) = match self.llc.lookup_or_victim(line_addr) {
            Ok(s3) => {
                self.llc.hits += 1;
                (s3, HitLevel::Llc)
            }
            Err(slot) => {
                self.llc.misses += 1;
                let mut buf = [0u8; LINE_BYTES as usize];
                let mut fill_ext = LineExt::default();
                // `mem` cannot reach the LLC: the victim is the same after
                // the read.
                let victim = self.llc.valid_addr(slot);
                if let Some(vaddr) = victim {
                    // The victim is evicted after the read: start fetching
                    // what its eviction looks up (its owner's L2 set, the
                    // scheme's tables) while the read is simulated.
                    self.l2[self.llc.owner(slot) as usize].prefetch_set(vaddr);
                    mem.prefetch_miss(vaddr);
                }
                let (arrive, fill_dirty) =
                    mem.read_miss(core, line_addr, *t, &mut buf, &mut fill_ext);
                *t = arrive;
                if let Some(vaddr) = victim {
                    // A dirty victim moves into the LLC's write-back buffer and
                    // waits there for the memory controller to accept it (the
                    // write queue may be full); the fill waits only when every
                    // buffer entry is still occupied (back-pressure).
                    let accepted = self.evict_llc_slot(slot, vaddr, *t, mem);
                    if accepted > *t {
                        let (i, free) = self
                            .wb_free_at
                            .iter()
                            .copied()
                            .enumerate()
                            .min_by_key(|&(_, f)| f)
                            .unwrap_or((0, 0));
                        *t = (*t).max(free);
                        if let Some(e) = self.wb_free_at.get_mut(i) {
                            *e = accepted.max(*t);
                        }
                    }
                }
                self.llc
                    .install(slot, line_addr, &buf, fill_ext, fill_dirty, core as u16);
                if let Some(f) = self.fwb_flag.get_mut(slot) {
                    *f = false;
                }
                (slot, HitLevel::Memory)
            }
        };
        // Fill L2; its victim goes down into the LLC: dirty there if it was
        // dirty in L2 or in L1 (whose copy is dropped).
        let slot = self.l2[core].victim_slot(line_addr);
        if let Some(vaddr) = self.l2[core].valid_addr(slot) {
            let mut dirty = self.l2[core].is_dirty(slot);
            self.l2[core].invalidate(slot);
            if let Some(s1) = self.l1[core].find(vaddr) {
                if self.l1[core].is_dirty(s1) {
                    let v3 = self.l1[core].link(s1);
                    let (d, x) = self.llc.line_mut(v3);
                    mem.l1_evict(core, vaddr, d, x, *t);
                    dirty = true;
                }
                self.l1[core].invalidate(s1);
            }
            if dirty {
                // Read only now: a clean victim's link is never needed.
                let v3 = self.l2[core].link(slot);
                self.llc.set_dirty(v3, true);
            }
        }
        self.l2[core].install_link(slot, line_addr, s3);
        (slot, level)
    }

    /// Evict the LLC line in `slot`: back-invalidate the owner's private
    /// copies and write the line back if it is dirty at any level. Returns
    /// when the write-back was accepted below (`t` if clean).
    fn evict_llc_slot(
        &mut self,
        slot: usize,
        vaddr: Addr,
        t: Cycle,
        mem: &mut dyn MemSide,
    ) -> Cycle {
        let core = self.llc.owner(slot) as usize;
        let mut dirty = self.llc.is_dirty(slot);
        self.llc.invalidate(slot);
        // L2 includes L1: a line the owner's L2 lacks is not in its L1.
        if let Some(s2) = self.l2[core].find(vaddr) {
            dirty |= self.l2[core].is_dirty(s2);
            self.l2[core].invalidate(s2);
            if let Some(s1) = self.l1[core].find(vaddr) {
                if self.l1[core].is_dirty(s1) {
                    let (d, x) = self.llc.line_mut(slot);
                    mem.l1_evict(core, vaddr, d, x, t);
                    dirty = true;
                }
                self.l1[core].invalidate(s1);
            }
        }
        if dirty {
            let (data, ext) = (self.llc.data(slot), self.llc.ext(slot));
            return mem.writeback(Writeback {
                core,
                line_addr: vaddr,
                data,
                ext,
                cause: WritebackCause::Eviction,
                now: t,
            });
        }
        t
    }

    /// clwb: write the line back if dirty anywhere, keep clean copies.
    /// Returns the time the write is persisted (or `now` if clean/absent).
    pub fn flush(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        mem: &mut dyn MemSide,
    ) -> Cycle {
        self.flush_cause(core, line_addr, now, mem, WritebackCause::Flush)
    }

    /// [`Hierarchy::flush`] with the cause the scheme sees.
    fn flush_cause(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        mem: &mut dyn MemSide,
        cause: WritebackCause,
    ) -> Cycle {
        // By inclusion a line cached anywhere is in the LLC, which holds
        // its only copy; its bytes are read only if some level is dirty.
        let Some(s3) = self.llc.find(line_addr) else {
            return now;
        };
        let mut dirty = self.llc.is_dirty(s3);
        if dirty {
            self.llc.set_dirty(s3, false);
        }
        for c in [&mut self.l1[core], &mut self.l2[core]] {
            if let Some(s) = c.find(line_addr) {
                if c.is_dirty(s) {
                    c.set_dirty(s, false);
                    dirty = true;
                }
            }
        }
        if let Some(f) = self.fwb_flag.get_mut(s3) {
            // Written back (or found clean): no longer dirty since a pass.
            *f = false;
        }
        if !dirty {
            return now;
        }
        mem.writeback(Writeback {
            core,
            line_addr,
            data: self.llc.data(s3),
            ext: self.llc.ext(s3),
            cause,
            now: now + self.llc.latency,
        })
    }

    /// clwb of `line_addr` by whichever core's private caches hold it
    /// (its LLC owner), with `cause`; returns when the write is persisted
    /// (`now` if clean or absent).
    pub fn flush_owned(
        &mut self,
        line_addr: Addr,
        now: Cycle,
        mem: &mut dyn MemSide,
        cause: WritebackCause,
    ) -> Cycle {
        match self.llc.find(line_addr) {
            Some(s) => {
                let core = self.llc.owner(s) as usize;
                self.flush_cause(core, line_addr, now, mem, cause)
            }
            None => now,
        }
    }

    /// Write back every dirty line (end of run); returns when the last write
    /// was persisted. Lines stay cached, clean.
    pub fn drain(&mut self, now: Cycle, mem: &mut dyn MemSide) -> Cycle {
        let mut lines: Vec<(Addr, usize)> = self
            .llc
            .valid_slots()
            .map(|s| (self.llc.line_addr(s), self.llc.owner(s) as usize))
            .collect();
        lines.sort_unstable();
        let mut t = now;
        for (addr, core) in lines {
            t = t.max(self.flush(core, addr, now, mem));
        }
        t
    }

    pub fn llc_miss_ratio(&self) -> f64 {
        let total = self.llc.hits + self.llc.misses;
        if total == 0 {
            0.0
        } else {
            self.llc.misses as f64 / total as f64
        }
    }

    pub fn reset_stats(&mut self) {
        for c in self
            .l1
            .iter_mut()
            .chain(self.l2.iter_mut())
            .chain(std::iter::once(&mut self.llc))
        {
            c.hits = 0;
            c.misses = 0;
        }
    }
}
