//! The hybrid memory's DRAM cache (dual-page checkpointing paper §4.1-§4.2,
//! HybridSim): a page-granularity cache of NVM in a DRAM device, managed by
//! the memory controller, between the LLC and the scheme.
//!
//! - 4 KiB pages, set-associative (`hybrid.dram_cache_ways`), true LRU.
//! - The cache page table (CPT) keeps, per cached page, a 64-bit dirty-line
//!   vector, so only dirty lines go back to NVM.
//! - An LLC miss looks up the CPT (`hybrid.cpt_lookup_cycles`): a hit reads
//!   the line from DRAM; a miss evicts the set's LRU page (its dirty lines go
//!   through [`Scheme::page_writeback`]) and fills the page from NVM through
//!   [`Scheme::page_fill`]; the requested line is forwarded as soon as it
//!   arrives, the page is written into DRAM behind it.
//! - An LLC write-back writes the line into its DRAM page (write-allocate:
//!   a missing page is filled first) and sets its dirty bit; the page's
//!   first dirty line is reported ([`Scheme::page_dirtied`]).
//! - Warm start (`hybrid.warm_start`, default on): the cache starts holding
//!   the pages the workload's setup wrote, clean, installed in page order
//!   (a set that overflows keeps its last pages), as a write-allocating
//!   cache holds a program's data after the program has loaded it. The
//!   paper measures after a warm-up phase; a reduced run's 25 % warm-up
//!   would otherwise leave first-touch fills of a cache larger than the
//!   footprint inside the measured window.
//!
//! Page data are real bytes in the DRAM device's media (`MemCtx::dram`),
//! at `slot * 4 KiB`; the device model gives their timing and energy.
//! The engine owns the cache: [`Below`], what the LLC sees, routes LLC
//! misses and write-backs through it to the scheme. Schemes never see the
//! cache itself, only its page-level hooks.

use crate::cache::hierarchy::{MemSide, Writeback};
use crate::cache::LineExt;
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::image::{MemRead, MemWrite, SparseImage};
use crate::mem::layout::PAGE_BYTES;
use crate::schemes::{MemCtx, Scheme};
use crate::types::{Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES};

const INVALID: u64 = u64::MAX;

/// Counters of the DRAM cache (reset with the measured window).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DramCacheStats {
    /// LLC misses served by a cached page.
    pub read_hits: u64,
    pub read_misses: u64,
    /// LLC write-backs into a cached page / into a page filled for them.
    pub write_hits: u64,
    pub write_misses: u64,
    pub page_fills: u64,
    pub evictions: u64,
    pub dirty_evictions: u64,
    /// Dirty lines written back on eviction / on a flush (checkpoint, end).
    pub evicted_dirty_lines: u64,
    pub flushed_dirty_lines: u64,
}

impl DramCacheStats {
    pub fn hit_ratio(&self) -> f64 {
        let hits = self.read_hits + self.write_hits;
        let all = hits + self.read_misses + self.write_misses;
        if all == 0 {
            0.0
        } else {
            hits as f64 / all as f64
        }
    }
}

pub struct DramCache {
    sets: usize,
    ways: usize,
    /// Page number cached in each slot (`INVALID` if none).
    tags: Vec<u64>,
    /// LRU stamps per slot (larger = more recent).
    stamps: Vec<u64>,
    clock: u64,
    /// Dirty-line vector per slot (the CPT's bit vector).
    dirty: Vec<u64>,
    lookup: Cycle,
    /// Page buffer reused by fills and write-backs (no allocation per miss).
    buf: Vec<u8>,
    /// Host memory only: store each filled slot as a
    /// dependent of its architectural page (the engine links the slots in
    /// `filled`; `SparseImage::link_equal_lines`). Set by the engine for
    /// checkpointing schemes.
    pub link_fills: bool,
    /// Slots filled since the engine last linked them.
    pub filled: Vec<usize>,
    pub stats: DramCacheStats,
}

impl DramCache {
    /// The DRAM cache the parameters ask for, if any.
    pub fn from_params(p: &Params) -> Result<Option<Box<Self>>> {
        let bytes = p.u64("hybrid.dram_cache_bytes");
        if bytes == 0 {
            return Ok(None);
        }
        let ways = p.u64("hybrid.dram_cache_ways");
        let pages = bytes / PAGE_BYTES;
        if pages == 0 || !bytes.is_multiple_of(PAGE_BYTES) || !pages.is_multiple_of(ways) {
            return Err(Error::input(format!(
                "invalid value '{bytes}' for 'hybrid.dram_cache_bytes': expected a multiple of hybrid.dram_cache_ways ({ways}) x 4096 B pages, e.g. {}",
                ways * PAGE_BYTES * 1024
            )));
        }
        let sets = pages / ways;
        if !sets.is_power_of_two() {
            return Err(Error::input(format!(
                "invalid value '{bytes}' for 'hybrid.dram_cache_bytes': the number of sets ({sets} = bytes / (hybrid.dram_cache_ways x 4096 B)) must be a power of two"
            )));
        }
        Ok(Some(Box::new(Self::new(
            sets as usize,
            ways as usize,
            p.u64("hybrid.cpt_lookup_cycles"),
        ))))
    }

    pub fn new(sets: usize, ways: usize, lookup: Cycle) -> Self {
        DramCache {
            sets,
            ways,
            tags: vec![INVALID; sets * ways],
            stamps: vec![0; sets * ways],
            clock: 0,
            dirty: vec![0; sets * ways],
            lookup,
            buf: vec![0; PAGE_BYTES as usize],
            link_fills: false,
            filled: Vec::new(),
            stats: DramCacheStats::default(),
        }
    }

    pub fn pages(&self) -> usize {
        self.sets * self.ways
    }

    #[inline]
    fn set_of(&self, page: u64) -> usize {
        (page as usize) & (self.sets - 1)
    }

    /// The page cached in `slot`, if any.
    pub fn tag(&self, slot: usize) -> Option<u64> {
        Some(self.tags[slot]).filter(|&p| p != INVALID)
    }

    /// The slot caching `page`, if any.
    #[inline]
    pub fn find(&self, page: u64) -> Option<usize> {
        let s = self.set_of(page) * self.ways;
        (s..s + self.ways).find(|&i| self.tags[i] == page)
    }

    /// Dirty-line vector of a cached page (0 if not cached).
    pub fn dirty_lines(&self, page_addr: Addr) -> u64 {
        self.find(page_addr / PAGE_BYTES)
            .map_or(0, |s| self.dirty[s])
    }

    #[inline]
    fn touch(&mut self, slot: usize) {
        self.clock += 1;
        self.stamps[slot] = self.clock;
    }

    #[inline]
    fn slot_addr(slot: usize) -> Addr {
        slot as u64 * PAGE_BYTES
    }

    /// The slot `page` goes to: an invalid way of its set first, else the
    /// least recently used.
    fn victim(&self, page: u64) -> usize {
        let base = self.set_of(page) * self.ways;
        (base..base + self.ways)
            .min_by_key(|&i| (self.tags[i] != INVALID, self.stamps[i]))
            .expect("at least one way")
    }

    /// Find `page` or bring it in (evicting the set's LRU page). Returns
    /// the slot and, on a miss, when line `first` arrived.
    fn lookup_or_fill(
        &mut self,
        scheme: &mut dyn Scheme,
        ctx: &mut MemCtx,
        core: CoreId,
        page: u64,
        first: usize,
        t: Cycle,
    ) -> (usize, Option<Cycle>) {
        if let Some(s) = self.find(page) {
            self.touch(s);
            return (s, None);
        }
        let slot = self.victim(page);
        self.evict(scheme, ctx, slot, t);
        self.stats.page_fills += 1;
        let page_addr = page * PAGE_BYTES;
        let mut buf = std::mem::take(&mut self.buf);
        let arrive = scheme.page_fill(ctx, core, page_addr, first, &mut buf, t);
        if self.link_fills {
            // Overwritten whole: stored as one block while it is written
            // (same bytes, no simulated effect), linked again afterwards.
            ctx.dram.media_mut().unlink_page(slot as u64);
            self.filled.push(slot);
        }
        // The page is written into DRAM as it streams in (posted writes).
        ctx.dram
            .write(Self::slot_addr(slot), &buf, Purpose::Demand, arrive);
        self.buf = buf;
        self.tags[slot] = page;
        self.dirty[slot] = 0;
        self.touch(slot);
        (slot, Some(arrive))
    }

    /// The warm start (`hybrid.warm_start`): install `page`, clean, as a
    /// fill would, but untimed and without traffic; its bytes are
    /// `arch`'s (setup left the NVM equal to them). Returns the slot.
    pub fn install_clean(
        &mut self,
        scheme: &mut dyn Scheme,
        ctx: &mut MemCtx,
        arch: &SparseImage,
        page: u64,
    ) -> usize {
        if let Some(s) = self.find(page) {
            return s;
        }
        let slot = self.victim(page);
        // Pages installed before are clean: evicting one writes nothing.
        self.evict(scheme, ctx, slot, 0);
        let dram = ctx.dram.media_mut();
        if self.link_fills {
            dram.unlink_page(slot as u64);
            self.filled.push(slot);
        }
        // Shared copy-on-write where the block allows it, else copied.
        if self.link_fills || !dram.share_page(slot as u64, arch, page) {
            let mut buf = std::mem::take(&mut self.buf);
            arch.read_bytes(page * PAGE_BYTES, &mut buf);
            dram.write_bytes(Self::slot_addr(slot), &buf);
            self.buf = buf;
        }
        self.tags[slot] = page;
        self.dirty[slot] = 0;
        self.touch(slot);
        scheme.page_cached(page * PAGE_BYTES);
        slot
    }

    /// Evict the page in `slot` (write back its dirty lines).
    fn evict(&mut self, scheme: &mut dyn Scheme, ctx: &mut MemCtx, slot: usize, t: Cycle) {
        let page = self.tags[slot];
        if page == INVALID {
            return;
        }
        self.stats.evictions += 1;
        let d = self.dirty[slot];
        if d != 0 {
            self.stats.dirty_evictions += 1;
            self.stats.evicted_dirty_lines += u64::from(d.count_ones());
            let t = self.read_dirty(ctx, slot, d, t);
            let buf = std::mem::take(&mut self.buf);
            scheme.page_writeback(ctx, page * PAGE_BYTES, d, &buf, t);
            self.buf = buf;
        }
        scheme.page_evicted(page * PAGE_BYTES);
        self.tags[slot] = INVALID;
        self.dirty[slot] = 0;
    }

    /// Read the dirty lines `d` of `slot` from DRAM into the page buffer
    /// (timed); returns when the last arrived.
    fn read_dirty(&mut self, ctx: &mut MemCtx, slot: usize, d: u64, t: Cycle) -> Cycle {
        let mut done = t;
        let mut m = d;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let r = i * LINE_BYTES as usize..(i + 1) * LINE_BYTES as usize;
            done = done.max(ctx.dram.read(
                Self::slot_addr(slot) + (i as u64) * LINE_BYTES,
                &mut self.buf[r],
                Purpose::WriteBack,
                t,
            ));
        }
        done
    }

    /// An LLC miss: the line's bytes into `out`; returns when they arrive.
    #[cold]
    pub fn read_miss(
        &mut self,
        scheme: &mut dyn Scheme,
        ctx: &mut MemCtx,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
    ) -> Cycle {
        let t = now + self.lookup;
        let page = line_addr / PAGE_BYTES;
        let idx = ((line_addr % PAGE_BYTES) / LINE_BYTES) as usize;
        let (slot, filled) = self.lookup_or_fill(scheme, ctx, core, page, idx, t);
        let off = (idx as u64) * LINE_BYTES;
        match filled {
            Some(arrive) => {
                self.stats.read_misses += 1;
                ctx.dram.peek(Self::slot_addr(slot) + off, out);
                arrive
            }
            None => {
                self.stats.read_hits += 1;
                ctx.dram
                    .read(Self::slot_addr(slot) + off, out, Purpose::Demand, t)
            }
        }
    }

    /// An LLC write-back: the line into its DRAM page, marked dirty.
    /// Returns when the DRAM controller accepted it.
    #[cold]
    pub fn writeback(
        &mut self,
        scheme: &mut dyn Scheme,
        ctx: &mut MemCtx,
        ev: Writeback<'_>,
    ) -> Cycle {
        let Writeback {
            core,
            line_addr,
            data,
            now,
            ..
        } = ev;
        let t = now + self.lookup;
        let page = line_addr / PAGE_BYTES;
        let idx = ((line_addr % PAGE_BYTES) / LINE_BYTES) as usize;
        let (slot, filled) = self.lookup_or_fill(scheme, ctx, core, page, idx, t);
        let t = match filled {
            Some(arrive) => {
                self.stats.write_misses += 1;
                arrive
            }
            None => {
                self.stats.write_hits += 1;
                t
            }
        };
        if self.dirty[slot] == 0 {
            scheme.page_dirtied(ctx, page * PAGE_BYTES, t);
        }
        self.dirty[slot] |= 1 << idx;
        ctx.dram.write(
            Self::slot_addr(slot) + (idx as u64) * LINE_BYTES,
            data,
            Purpose::WriteBack,
            t,
        )
    }

    /// Write every dirty page back (checkpoint step 2, end of run), in page
    /// address order; pages stay cached, clean. Returns when the last
    /// write persisted.
    pub fn flush_dirty(&mut self, scheme: &mut dyn Scheme, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut slots: Vec<(u64, usize)> = (0..self.tags.len())
            .filter(|&s| self.dirty[s] != 0)
            .map(|s| (self.tags[s], s))
            .collect();
        slots.sort_unstable();
        let mut done = now;
        for (page, slot) in slots {
            let d = self.dirty[slot];
            self.stats.flushed_dirty_lines += u64::from(d.count_ones());
            let t = self.read_dirty(ctx, slot, d, now);
            let buf = std::mem::take(&mut self.buf);
            done = done.max(scheme.page_writeback(ctx, page * PAGE_BYTES, d, &buf, t));
            self.buf = buf;
            self.dirty[slot] = 0;
        }
        done
    }

    /// The newest bytes of a line if its page is cached (equivalence checks).
    pub fn peek_line(&self, ctx: &MemCtx, line_addr: Addr, out: &mut [u8]) -> bool {
        match self.find(line_addr / PAGE_BYTES) {
            Some(s) => {
                ctx.dram
                    .peek(Self::slot_addr(s) + line_addr % PAGE_BYTES, out);
                true
            }
            None => false,
        }
    }
}

/// What the LLC sees below it: the DRAM cache when one is configured, else
/// the scheme (and through it the devices).
pub(super) struct Below<'a> {
    pub(super) scheme: &'a mut dyn Scheme,
    pub(super) ctx: &'a mut MemCtx,
    pub(super) dram_cache: Option<&'a mut DramCache>,
    /// Dirty lines the LLC sent down (evictions, flushes, force
    /// write-backs): the engine's count.
    write_backs: &'a mut u64,
}

impl<'a> Below<'a> {
    /// Built from the engine's fields (so the caches stay borrowable).
    #[inline]
    pub(super) fn new(
        scheme: &'a mut dyn Scheme,
        ctx: &'a mut MemCtx,
        dram_cache: &'a mut Option<Box<DramCache>>,
        write_backs: &'a mut u64,
    ) -> Self {
        Below {
            scheme,
            ctx,
            dram_cache: dram_cache.as_deref_mut(),
            write_backs,
        }
    }

    /// Write every dirty DRAM page back (checkpoint step 2, end of run);
    /// returns when the last write persisted (`now` without a DRAM cache).
    pub(super) fn flush_dram_cache(&mut self, now: Cycle) -> Cycle {
        match self.dram_cache.as_deref_mut() {
            Some(dc) => dc.flush_dirty(self.scheme, self.ctx, now),
            None => now,
        }
    }
}

impl MemSide for Below<'_> {
    #[inline]
    fn prefetch_miss(&self, line_addr: Addr) {
        self.scheme.prefetch_miss(line_addr);
    }
    #[inline]
    fn read_miss(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        ext: &mut LineExt,
    ) -> (Cycle, bool) {
        if let Some(dc) = self.dram_cache.as_deref_mut() {
            // A line from the DRAM cache carries no scheme state.
            *ext = LineExt::default();
            let t = dc.read_miss(self.scheme, self.ctx, core, line_addr, now, out);
            return (t, false);
        }
        self.scheme
            .read_miss(self.ctx, core, line_addr, now, out, ext)
    }
    #[inline]
    fn writeback(&mut self, ev: Writeback<'_>) -> Cycle {
        *self.write_backs += 1;
        if let Some(dc) = self.dram_cache.as_deref_mut() {
            return dc.writeback(self.scheme, self.ctx, ev);
        }
        self.scheme.writeback(self.ctx, ev)
    }
    #[inline]
    fn l1_evict(
        &mut self,
        core: CoreId,
        line_addr: Addr,
        data: &LineData,
        ext: &mut LineExt,
        now: Cycle,
    ) {
        self.scheme
            .l1_evict(self.ctx, core, line_addr, data, ext, now)
    }
}
