//! HOOP: hardware-assisted out-of-place update (HOOP paper §III).
//!
//! Transactional stores go, at word granularity, to a per-core OOP data
//! buffer in the memory controller, are packed eight to a 128 B data slice
//! and written to a log-structured OOP region; TxEnd writes the last slice
//! and commits by persisting the transaction's start slice in an address
//! slice. Lines modified by transactions are never written home by LLC
//! evictions: a mapping table redirects later misses to the OOP copies
//! (read in parallel with home and merged). A periodic, coalescing GC
//! (Algorithm 1) migrates the newest committed version of each word home and
//! frees OOP blocks; recovery replays committed transactions newest-wins.
//!
//! Files: `layout` (bit-exact formats), `mapping` (mapping table, eviction
//! buffer), `gc` (Algorithm 1), `recovery` (recovery and its time model).

pub mod gc;
pub mod layout;
pub mod mapping;
pub mod recovery;
#[cfg(test)]
mod tests;

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params, MC};
use crate::error::{Error, Result};
use crate::mem::image::PAGE_BYTES;
use crate::mem::SparseImage;
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, Scheme, SchemeInfo, SchemeStats, Store, Writeback,
};
use crate::types::{line_of, prefetch, Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES};
use layout::{BlockHeader, BlockState, CommitEntry, DataSlice, SLICE_BYTES};
use mapping::{EvictionBuffer, Indirection, MappingEntry};
use std::collections::VecDeque;

pub static INFO: SchemeInfo = SchemeInfo {
    name: "hoop",
    description: "hardware-assisted out-of-place update with coalescing GC (HOOP, ISCA 2020)",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover: recovery::recover,
    recovery: RecoveryForm::Scan(recovery::new_scan),
    contexts: None,
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::HOOP),
        tx: 300_000,
        reaches: "2 periodic GCs (10 ms = 25 M cycles) and 2 on-demand ones on btree",
        needs: None,
    },
};

pub static PARAMS: &[ParamSpec] = &[
    p!("hoop.mapping_table_bytes", int 2 << 20, "bytes", Check::Range(0.0, 1e12),
        "HOOP §III-C and §III-H (256 KB per core, 2 MB total)",
        "address mapping table capacity (home line -> OOP slices); when full, GC runs on demand"),
    p!("hoop.mapping_entry_bytes", int 8, "bytes", Check::Range(8.0, 4096.0),
        "HOOP §III-C (an entry holds the home-region and the OOP-region address; 40-bit home offsets), §III-G (the OOP address points into the OOP data buffer or an OOP block), §III-D/§III-H (128 B slices in 10 % of 512 GB): 34 + 29 + 1 bits, docs/model/hoop.md",
        "table space per mapping-table entry, one entry per (home line, OOP slice holding its newest words); the entry is encoded in 8 B, larger values model a wider entry (16 = durasim's former per-line entry with a word mask)"),
    p!("hoop.oop_buffer_bytes_per_core", int 1024, "bytes", Check::Range(128.0, 1048576.0),
        "HOOP §III-C and §III-H (1 KB per core)",
        "per-core OOP data buffer; holds the open 128 B slice and full slices waiting for the write queue"),
    p!("hoop.eviction_buffer_bytes", int 128 << 10, "bytes", Check::Range(0.0, 1e12),
        "HOOP §III-C and §III-H (128 KB)",
        "buffer of lines GC migrated home, checked on a mapping-table miss"),
    p!("hoop.oop_region_share", float 0.10, "fraction", Check::Range(0.0001, 0.9),
        "HOOP §III-H (10% of NVM capacity)",
        "share of NVM reserved for the OOP region (sparse: costs host memory only when touched)"),
    p!("hoop.block_bytes", int 2 << 20, "bytes", Check::PowerOfTwo(4096, 512 << 20),
        "HOOP §III-D (2 MB OOP blocks)",
        "OOP block size (slot 0 is the block header, the rest 128 B memory slices)"),
    p!("hoop.gc_period_ms", float 10.0, "ms", Check::Range(0.0001, 1e6),
        "HOOP §III-H (GC every ten milliseconds by default)",
        "period of the background GC in simulated time"),
    p!("hoop.gc_outstanding_reads", int 16, "requests", Check::Range(1.0, 4096.0),
        MC,
        "GC engine's request slots (like a DMA engine's tags): reads (and read-then-write line merges) in flight at once; 16 keeps each of the default 8 banks busy twice over while bounding what background GC puts in the queues"),
    p!("hoop.gc_low_free_blocks", int 2, "blocks", Check::Range(1.0, 1e9),
        MC,
        "GC runs on demand (stalling the cores) when fewer OOP blocks than this are free"),
    p!("hoop.lookup_ns", float 1.0, "ns", Check::Range(0.0, 1e6),
        MC,
        "mapping-table / eviction-buffer lookup on every LLC miss (paper: 'trivial', §III-G)"),
    p!("hoop.recovery_threads", int 8, "threads", Check::Range(1.0, 4096.0),
        "HOOP §IV (eight threads); varied in experiment (g)",
        "recovery threads in the recovery-time model"),
    p!("hoop.recovery_bandwidth_gbps", float 10.0, "GB/s", Check::Range(0.001, 1e6),
        "HOOP §IV experiment (g) (10 to 25 GB/s; lower end)",
        "NVM bandwidth available to recovery in the recovery-time model"),
    p!("hoop.recovery_thread_gbps", float 2.0, "GB/s", Check::Range(0.001, 1e6),
        MC,
        "rate at which one recovery thread parses slices and fills its hash map"),
    p!("hoop.recovery_merge_ns", float 5.0, "ns/entry", Check::Range(0.0, 1e6),
        MC,
        "cost for one recovery thread to merge one local hash-map entry into the global map; the merge is partitioned by home address over the recovery threads"),
    p!("hoop.mutant", str "none", &["none", "commit-before-last-slice", "gc-frees-before-home-writes", "recovery-skips-newest"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): commit-before-last-slice = TxEnd persists the commit entry before the transaction's last data slice; gc-frees-before-home-writes = GC retires the migrated transactions' address slices before its home writes; recovery-skips-newest = recovery does not replay the newest committed transaction"),
    p!("hoop.read.mutant", str "none", &["none", "mapping-entry-without-buffer-bit"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug of the load path (hoop/tests.rs; refused by the CLI), caught by run.check_reads, not by the crash oracle: the mapping table is volatile and recovery never reads it. mapping-entry-without-buffer-bit = entries lose the bit saying their slice is still in the OOP data buffer (§III-G), so a miss reads that slot from NVM"),
];

fn reserved_bytes(p: &Params) -> u64 {
    let cap = p.u64("nvm.capacity_bytes");
    let block = p.u64("hoop.block_bytes");
    let want = (cap as f64 * p.f64("hoop.oop_region_share")).ceil() as u64;
    want.div_ceil(block) * block
}

/// Start fetching into the host caches the media image's bytes of NVM
/// range `[addr, addr + len)` (within one page), which a controller call
/// is about to copy: lets several cold copies overlap.
#[inline]
fn prefetch_media(media: &SparseImage, addr: Addr, len: u64) {
    if let Some(page) = media.page(addr / PAGE_BYTES) {
        let off = (addr % PAGE_BYTES) as usize;
        for at in (off..off + len as usize).step_by(LINE_BYTES as usize) {
            prefetch(&page[at]);
        }
    }
}

/// Geometry of the OOP region, shared by the scheme and recovery.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub base: Addr,
    pub block_bytes: u64,
    pub blocks: u64,
    /// Slices per block, including slot 0 (the header).
    pub slots_per_block: u64,
    /// Blocks `0..first_block` hold the block index table: one bit per
    /// block, set while the block may be live (a superset of the live
    /// blocks, so recovery reads only their headers).
    pub first_block: u64,
}

impl Geometry {
    pub fn new(p: &Params, layout: &Layout) -> Result<Self> {
        let block_bytes = p.u64("hoop.block_bytes");
        let base = layout.reserved_base.div_ceil(block_bytes) * block_bytes;
        let blocks = layout.capacity_bytes.saturating_sub(base) / block_bytes;
        let first_block = blocks.div_ceil(64).max(1) * 8;
        let first_block = first_block.div_ceil(block_bytes);
        if blocks < first_block + 4 {
            return Err(Error::input(format!(
                "hoop.oop_region_share={} gives {blocks} OOP blocks of hoop.block_bytes={block_bytes}; need at least 4 (raise the share or lower the block size)",
                p.f64("hoop.oop_region_share")
            )));
        }
        if layout.home_limit > 1 << layout::HOME_ADDR_BITS {
            return Err(Error::input(format!(
                "nvm.capacity_bytes={} exceeds HOOP's 40-bit home addresses (1 TB, §III-C)",
                layout.capacity_bytes
            )));
        }
        let g = Geometry {
            base,
            block_bytes,
            blocks,
            slots_per_block: block_bytes / SLICE_BYTES,
            first_block,
        };
        if g.slots() > 1 << mapping::ENTRY_SLOT_BITS {
            return Err(Error::input(format!(
                "hoop.oop_region_share={} of nvm.capacity_bytes={} gives an OOP region of {} slices, more than the 2^{} a mapping-table entry addresses (HOOP sizes it for 10 % of 512 GB); lower hoop.oop_region_share or nvm.capacity_bytes",
                p.f64("hoop.oop_region_share"),
                layout.capacity_bytes,
                g.slots(),
                mapping::ENTRY_SLOT_BITS,
            )));
        }
        Ok(g)
    }
    /// Address of the block index word holding block `b`'s bit.
    #[inline]
    pub fn index_word_addr(&self, b: usize) -> Addr {
        self.base + (b as u64 / 64) * 8
    }
    #[inline]
    pub fn index_bytes(&self) -> u64 {
        self.blocks.div_ceil(64) * 8
    }
    #[inline]
    pub fn slots(&self) -> u64 {
        self.blocks * self.slots_per_block
    }
    #[inline]
    pub fn slot_addr(&self, slot: u64) -> Addr {
        self.base + slot * SLICE_BYTES
    }
    #[inline]
    pub fn block_addr(&self, b: usize) -> Addr {
        self.base + b as u64 * self.block_bytes
    }
    #[inline]
    pub fn block_of(&self, slot: u64) -> usize {
        (slot / self.slots_per_block) as usize
    }
}

/// Controller-side state of one OOP block (the block index table plus the
/// slice bitmap, which is a cursor since slices are allocated in order).
#[derive(Clone, Debug)]
struct Block {
    state: BlockState,
    epoch: u32,
    next_slot: u64,
    /// Transactions with slices here that GC has not migrated yet.
    live_txs: u32,
    /// Slots (global) of this block's address slices, in order.
    addr_slices: Vec<u64>,
}

/// The open slice of a core's OOP data buffer.
#[derive(Clone, Copy, Debug)]
struct OpenSlice {
    slot: u64,
    s: DataSlice,
    /// Bit `word_bit` of every word in `s`: a store whose bit is clear (most)
    /// skips the search for a buffered copy.
    words_seen: u64,
}

impl OpenSlice {
    fn new(slot: u64, s: DataSlice) -> Self {
        OpenSlice {
            slot,
            s,
            words_seen: 0,
        }
    }

    #[inline]
    fn word_bit(word: Addr) -> u64 {
        1 << ((word / 8) % 64)
    }

    /// Append home word `word` = `value` (the slice is not full).
    #[inline]
    fn push(&mut self, word: Addr, value: u64) {
        let i = self.s.count as usize;
        self.s.values[i] = value;
        self.s.homes[i] = word;
        self.s.count += 1;
        self.words_seen |= Self::word_bit(word);
    }
}

#[derive(Debug, Default)]
struct CoreState {
    txid: u32,
    in_tx: bool,
    open: Option<OpenSlice>,
    first_slot: Option<u64>,
    /// Blocks holding this transaction's slices.
    blocks: Vec<usize>,
    /// Write-queue acceptance times of full slices still in the buffer.
    pending: VecDeque<Cycle>,
    tx_words: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub tx_committed: u64,
    pub data_slices_written: u64,
    pub data_slice_words: u64,
    pub address_slices_opened: u64,
    /// Buffered address slices written to NVM (ADR: when full or sealed).
    pub address_slices_written: u64,
    pub commit_entries_written: u64,
    pub words_coalesced_in_buffer: u64,
    pub oop_buffer_full_stall_cycles: u64,
    pub mapping_inserts: u64,
    pub mapping_removed_by_gc: u64,
    pub mapping_removed_by_miss: u64,
    pub mapping_peak_entries: u64,
    pub mapping_peak_lines: u64,
    /// Most entries inserted in one GC period (§III-C's sizing quantity),
    /// over the periods that ended in the window.
    pub mapping_entries_inserted_max_per_gc_period: u64,
    pub mapping_over_capacity_inserts: u64,
    pub tx_evictions_already_home: u64,
    pub llc_misses: u64,
    pub miss_memory_loads: u64,
    pub parallel_read_misses: u64,
    pub oop_slice_reads_from_buffer: u64,
    pub eviction_buffer_hits: u64,
    pub gc_runs_periodic: u64,
    pub gc_runs_on_demand: u64,
    pub gc_runs_final: u64,
    pub gc_blocks_freed: u64,
    /// Passes with blocks to collect started in the window.
    pub gc_passes_started: u64,
    /// Passes retired in the window, and what they collected (each pass
    /// counted when it retires, wholly).
    pub gc_passes_retired: u64,
    pub gc_tx_migrated: u64,
    pub gc_words_in_slices: u64,
    pub gc_words_migrated: u64,
    /// The same for passes retired by the end-of-run `finish` (outside
    /// the window).
    pub gc_passes_retired_end_of_run: u64,
    pub gc_tx_migrated_end_of_run: u64,
    pub gc_words_in_slices_end_of_run: u64,
    pub gc_words_migrated_end_of_run: u64,
    pub gc_lines_written: u64,
    pub gc_bytes_migrated: u64,
    pub gc_home_reads: u64,
    /// Timed GC reads, and how many distinct cycles they were issued at.
    pub gc_reads_issued: u64,
    pub gc_read_issue_times: u64,
    pub gc_cycles: u64,
    /// Cycles of periodic passes, during which the cores keep running.
    pub gc_background_cycles: u64,
    pub gc_periodic_skipped_busy: u64,
    pub tx_committed_during_gc: u64,
    pub on_demand_gc_stall_cycles: u64,
    /// On-demand passes run because the mapping table filled.
    pub mapping_full_gc: u64,
    pub blocks_allocated: u64,
    pub blocks_peak_in_use: u64,
    pub emergency_gc: u64,
}

impl Stats {
    /// Count a retired pass, in the window or (`end_of_run`) in `finish`.
    fn add_pass(&mut self, c: gc::PassCounts, end_of_run: bool) {
        let (passes, tx, in_slices, migrated) = if end_of_run {
            (
                &mut self.gc_passes_retired_end_of_run,
                &mut self.gc_tx_migrated_end_of_run,
                &mut self.gc_words_in_slices_end_of_run,
                &mut self.gc_words_migrated_end_of_run,
            )
        } else {
            (
                &mut self.gc_passes_retired,
                &mut self.gc_tx_migrated,
                &mut self.gc_words_in_slices,
                &mut self.gc_words_migrated,
            )
        };
        *passes += 1;
        *tx += c.tx_migrated;
        *in_slices += c.words_in_slices;
        *migrated += c.words_migrated;
    }

    /// HOOP §IV (e): share of the words in collected slices that GC
    /// coalescing did not write home; in [0, 1] since a pass writes each
    /// distinct word of its slices at most once.
    pub fn gc_data_reduction_ratio(&self) -> f64 {
        if self.gc_words_in_slices == 0 {
            0.0
        } else {
            1.0 - self.gc_words_migrated as f64 / self.gc_words_in_slices as f64
        }
    }
}

pub struct Hoop {
    g: Geometry,
    /// Set by `finish`: passes retiring from then on are end-of-run work.
    in_finish: bool,
    /// Test-only planted bugs (`hoop.mutant`).
    mutant_commit_first: bool,
    mutant_gc_free_first: bool,
    /// Mapping entries encoded without the buffer bit (§III-G).
    mutant_entry_no_buffer_bit: bool,
    txid_next: u32,
    cores: Vec<CoreState>,
    blocks: Vec<Block>,
    active: Option<usize>,
    /// Last block opened: the round-robin allocation cursor (§III-D). Kept
    /// apart from `active`, which is `None` after an on-demand seal, so
    /// allocation never restarts behind the log head.
    cursor: Option<usize>,
    /// Current address slice (global slot) and entries used.
    addr_slice: Option<(u64, usize)>,
    /// With ADR, the current address slice's bytes, held in the controller's
    /// write-pending queue (persistence domain) where successive commit
    /// entries to the same line coalesce; written to NVM as one 128 B slice
    /// when full or when its block is sealed. See docs/model/hoop.md.
    addr_slice_bytes: [u8; SLICE_BYTES as usize],
    epoch_next: u32,
    /// FULL blocks in epoch (allocation) order = commit order.
    full: VecDeque<usize>,
    free_blocks: u64,
    /// Controller copy of the on-media block index bitmap.
    index: Vec<u64>,
    ind: Indirection,
    evb: EvictionBuffer,
    /// Out of its place (None) only while a GC step works on it: the step
    /// moves a pointer out, not the whole scratch, and puts it back.
    gc_scratch: Option<Box<gc::GcScratch>>,
    gc_lanes: usize,
    mapping_capacity: u64,
    /// Mapping entries inserted since the last periodic GC was due.
    entries_inserted_this_period: u64,
    demand_armed: bool,
    gc_demand: bool,
    /// End of an on-demand GC run inside an eviction: every core stalls
    /// until then (applied at the next tick).
    stall_until: Option<Cycle>,
    buffer_slices: usize,
    gc_period: Cycle,
    next_gc_at: Cycle,
    low_free: u64,
    /// `hoop.oop_region_share`, for error messages.
    share: f64,
    lookup: Cycle,
    recovery_model: recovery::RecoveryModel,
    /// Modeled recovery time if the machine crashed at the end of the run.
    end_recovery_ns: f64,
    end_recovery_live_bytes: u64,
    pub stats: Stats,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Hoop::new(p, layout)?))
}

impl Hoop {
    pub fn new(p: &Params, layout: &Layout) -> Result<Self> {
        let g = Geometry::new(p, layout)?;
        let freq = p.f64("cpu.freq_ghz");
        let (table, entry) = (
            p.u64("hoop.mapping_table_bytes"),
            p.u64("hoop.mapping_entry_bytes"),
        );
        let mapping_capacity = table / entry;
        if mapping_capacity == 0 {
            return Err(Error::input(format!(
                "invalid value '{table}' for 'hoop.mapping_table_bytes': it holds no entry of hoop.mapping_entry_bytes={entry}; expected at least {entry}"
            )));
        }
        let buf = p.u64("hoop.oop_buffer_bytes_per_core");
        if !buf.is_multiple_of(SLICE_BYTES) {
            return Err(Error::input(format!(
                "invalid value '{buf}' for 'hoop.oop_buffer_bytes_per_core': expected a multiple of the {SLICE_BYTES} B OOP slice (e.g. {})",
                (buf / SLICE_BYTES).max(1) * SLICE_BYTES
            )));
        }
        Ok(Hoop {
            g,
            in_finish: false,
            mutant_commit_first: p.str("hoop.mutant") == "commit-before-last-slice",
            mutant_gc_free_first: p.str("hoop.mutant") == "gc-frees-before-home-writes",
            mutant_entry_no_buffer_bit: p.str("hoop.read.mutant")
                == "mapping-entry-without-buffer-bit",
            txid_next: 1,
            cores: (0..layout.threads).map(|_| CoreState::default()).collect(),
            blocks: (0..g.blocks)
                .map(|_| Block {
                    state: BlockState::Unused,
                    epoch: 0,
                    next_slot: 1,
                    live_txs: 0,
                    addr_slices: Vec::new(),
                })
                .collect(),
            active: None,
            cursor: None,
            addr_slice: None,
            addr_slice_bytes: [0; SLICE_BYTES as usize],
            epoch_next: 1,
            full: VecDeque::new(),
            free_blocks: g.blocks - g.first_block,
            index: vec![0; g.blocks.div_ceil(64) as usize],
            // Starts small and doubles (a rare, cold rehash): host memory
            // follows the lines the run writes, not the mapping table's
            // capacity (a 2 MB table pre-sized 20 MiB of buckets for
            // every run, a 10,000-transaction run among them).
            ind: Indirection::with_capacity(mapping_capacity.min(1 << 12) as usize),
            gc_scratch: Some(Box::default()),
            gc_lanes: p.usize("hoop.gc_outstanding_reads").max(1),
            evb: EvictionBuffer::new((p.u64("hoop.eviction_buffer_bytes") / LINE_BYTES) as usize),
            mapping_capacity,
            entries_inserted_this_period: 0,
            demand_armed: true,
            gc_demand: false,
            stall_until: None,
            buffer_slices: (p.u64("hoop.oop_buffer_bytes_per_core") / SLICE_BYTES).max(1) as usize,
            gc_period: ((p.f64("hoop.gc_period_ms") * 1e6 * freq).ceil() as Cycle).max(1),
            next_gc_at: ((p.f64("hoop.gc_period_ms") * 1e6 * freq).ceil() as Cycle).max(1),
            low_free: p.u64("hoop.gc_low_free_blocks"),
            share: p.f64("hoop.oop_region_share"),
            lookup: p.ns_cycles("hoop.lookup_ns"),
            recovery_model: recovery::RecoveryModel::from_params(p),
            end_recovery_ns: 0.0,
            end_recovery_live_bytes: 0,
            stats: Stats::default(),
        })
    }

    fn write_header(
        &mut self,
        ctx: &mut MemCtx,
        b: usize,
        next: Option<usize>,
        now: Cycle,
    ) -> Cycle {
        let blk = &self.blocks[b];
        let h = BlockHeader {
            index: (b & 0xff) as u8,
            next: next.map_or(0, |n| n as u64 + 1),
            state: blk.state,
            epoch: blk.epoch,
        };
        ctx.nvm
            .write(self.g.block_addr(b), &h.encode(), Purpose::Metadata, now)
    }

    /// Next free block after the last one opened, round-robin (§III-D),
    /// among the blocks every open slice can link to: a data slice reaches
    /// its successor by a 24-bit forward distance (Fig. 5b), so each slot
    /// of the new block must lie less than 2^24 slices ahead of every
    /// core's open slice, modulo the region.
    fn pick_free_block(&self) -> Option<usize> {
        let n = self.blocks.len();
        let start = self.cursor.map_or(0, |a| a + 1);
        let spb = self.g.slots_per_block;
        let slots = self.g.slots();
        let reachable = |b: usize| {
            let last = b as u64 * spb + spb - 1;
            self.cores.iter().all(|c| {
                c.open
                    .is_none_or(|os| (last + slots - os.slot) % slots < 1 << layout::NEXT_BITS)
            })
        };
        (0..n).map(|i| (start + i) % n).find(|&b| {
            b as u64 >= self.g.first_block
                && self.blocks[b].state == BlockState::Unused
                && reachable(b)
        })
    }

    /// Set or clear block `b`'s bit in the on-media block index table.
    fn write_index_bit(&mut self, ctx: &mut MemCtx, b: usize, on: bool, now: Cycle) -> Cycle {
        let w = b / 64;
        if on {
            self.index[w] |= 1 << (b % 64);
        } else {
            self.index[w] &= !(1 << (b % 64));
        }
        ctx.nvm.write(
            self.g.index_word_addr(b),
            &self.index[w].to_le_bytes(),
            Purpose::Metadata,
            now,
        )
    }

    /// Make `b` the active block: header INUSE with a fresh epoch.
    fn open_block(&mut self, ctx: &mut MemCtx, b: usize, now: Cycle) -> Cycle {
        let epoch = self.epoch_next;
        self.epoch_next = self.epoch_next.wrapping_add(1).max(1);
        let blk = &mut self.blocks[b];
        blk.state = BlockState::InUse;
        blk.epoch = epoch;
        blk.next_slot = 1;
        blk.live_txs = 0;
        blk.addr_slices.clear();
        self.free_blocks -= 1;
        self.cursor = Some(b);
        self.stats.blocks_allocated += 1;
        self.stats.blocks_peak_in_use = self
            .stats
            .blocks_peak_in_use
            .max(self.g.blocks - self.free_blocks);
        if self.free_blocks < self.low_free {
            self.gc_demand = true;
        }
        // Index bit first: the index stays a superset of the live blocks.
        let t = self.write_index_bit(ctx, b, true, now);
        self.write_header(ctx, b, None, t).max(t)
    }

    /// Close the active block (FULL); `next` is the block that follows it.
    fn seal_active(&mut self, ctx: &mut MemCtx, next: Option<usize>, now: Cycle) {
        if let Some(a) = self.active.take() {
            self.blocks[a].state = BlockState::Full;
            self.write_header(ctx, a, next, now);
            self.full.push_back(a);
        }
        self.flush_addr_slice(ctx, now);
        self.addr_slice = None;
    }

    /// With ADR: write the buffered address slice to its slot (its bytes
    /// are already durable in the write-pending queue, so nothing waits for
    /// this write).
    fn flush_addr_slice(&mut self, ctx: &mut MemCtx, now: Cycle) {
        if let Some((s, used)) = self.addr_slice {
            if ctx.nvm.is_adr() && used > 0 {
                let bytes = self.addr_slice_bytes;
                ctx.nvm
                    .write(self.g.slot_addr(s), &bytes, Purpose::Metadata, now);
                self.stats.address_slices_written += 1;
            }
        }
    }

    /// Allocate the next slice slot of the log; returns (slot, time), or
    /// `None` (input error recorded) when in-flight transactions fill the
    /// whole region.
    fn alloc_slot(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<(u64, Cycle)> {
        let mut t = now;
        loop {
            if let Some(a) = self.active {
                let blk = &mut self.blocks[a];
                if blk.next_slot < self.g.slots_per_block {
                    let s = a as u64 * self.g.slots_per_block + blk.next_slot;
                    blk.next_slot += 1;
                    return Some((s, t));
                }
            }
            let nb = match self.pick_free_block() {
                Some(b) => b,
                None => {
                    // The region is full: GC synchronously (its time is
                    // charged to the request that needed the space).
                    self.stats.emergency_gc += 1;
                    t = self.run_gc(ctx, t, gc::GcKind::OnDemand);
                    match self.pick_free_block() {
                        Some(b) => b,
                        None => {
                            self.region_exhausted(ctx);
                            return None;
                        }
                    }
                }
            };
            t = t.max(self.open_block(ctx, nb, t));
            self.seal_active(ctx, Some(nb), t);
            self.active = Some(nb);
        }
    }

    /// Only uncommitted data is left in the OOP region and no block is
    /// free: the region is too small for the transactions in flight. The
    /// caller drops the data it could not place; the run ends with this
    /// error at TxEnd.
    #[cold]
    fn region_exhausted(&self, ctx: &mut MemCtx) {
        if ctx.pending_error.is_some() {
            return; // already reported by an earlier store
        }
        let words: u64 = self.cores.iter().map(|c| c.tx_words).sum();
        let usable = (self.g.blocks - self.g.first_block) * (self.g.slots_per_block - 1);
        ctx.input_error(format!(
            "the HOOP OOP region is too small for the transactions in flight: hoop.oop_region_share={} of nvm.capacity_bytes={} gives {} usable 128 B slices (hoop.block_bytes={}), and after GC no block is free within the 24-bit reach of every open slice while in-flight transactions hold {words} words; raise hoop.oop_region_share (or lower workload.item_bytes or threads)",
            self.share,
            ctx.layout.capacity_bytes,
            usable,
            self.g.block_bytes,
        ));
    }

    /// Note that the current transaction of `core` has a slice in `slot`.
    fn track_block(&mut self, core: CoreId, slot: u64) {
        let b = self.g.block_of(slot);
        if !self.cores[core].blocks.contains(&b) {
            self.cores[core].blocks.push(b);
            self.blocks[b].live_txs += 1;
        }
    }

    /// Write the open slice of `core` to its slot; `next` = the slot of the
    /// transaction's following slice. Returns the persist time.
    fn flush_open(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        next: Option<u64>,
        now: Cycle,
    ) -> Cycle {
        let Some(mut os) = self.cores[core].open.take() else {
            return now;
        };
        os.s.next = next.map_or(0, |n| layout::next_offset(os.slot, n, self.g.slots()));
        let bytes = os.s.encode();
        self.stats.data_slices_written += 1;
        self.stats.data_slice_words += u64::from(os.s.count);
        ctx.nvm
            .write(self.g.slot_addr(os.slot), &bytes, Purpose::Log, now)
    }

    /// Open a new slice for `core`'s transaction.
    fn open_slice(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let Some((slot, t)) = self.alloc_slot(ctx, now) else {
            return now;
        };
        self.track_block(core, slot);
        let c = &mut self.cores[core];
        let first = c.first_slot.is_none();
        if first {
            c.first_slot = Some(slot);
        }
        c.open = Some(OpenSlice::new(slot, DataSlice::new(c.txid, first)));
        t
    }

    /// A store of `core`'s transaction that needs a new slice (none open
    /// yet, or the open one is full): open or link one, then append.
    #[inline(never)]
    fn store_new_slice(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        word: Addr,
        new: u64,
        now: Cycle,
    ) -> Cycle {
        let txid = self.cores[core].txid;
        let mut t = now;
        if self.cores[core].open.is_some() {
            // A full slice leaves the buffer, linked to the next one.
            let Some((slot, ta)) = self.alloc_slot(ctx, t) else {
                return t; // region exhausted: input error recorded
            };
            self.track_block(core, slot);
            let accepted = self.flush_open(ctx, core, Some(slot), ta);
            let c = &mut self.cores[core];
            c.pending.push_back(accepted);
            c.open = Some(OpenSlice::new(slot, DataSlice::new(txid, false)));
            // The buffer holds the open slice plus full slices waiting
            // for the write queue; when it is full the store waits.
            while c.pending.len() >= self.buffer_slices {
                let oldest = c.pending.pop_front().unwrap();
                if oldest > t {
                    self.stats.oop_buffer_full_stall_cycles += oldest - t;
                    t = oldest;
                }
            }
        } else {
            t = self.open_slice(ctx, core, t);
        }
        // No open slice only when the region is exhausted (input error
        // recorded): the word is dropped.
        Self::append(&mut self.cores[core], &mut self.ind, word, new);
        t
    }

    /// Append `word` = `new` to `c`'s open slice (if any; not full) and
    /// record where the word's newest version lives.
    #[inline(always)]
    fn append(c: &mut CoreState, ind: &mut Indirection, word: Addr, new: u64) {
        if let Some(os) = c.open.as_mut() {
            os.push(word, new);
            c.tx_words += 1;
            ind.record(word, os.slot);
        }
    }

    /// The slice at `slot` if it is still open in a core's OOP buffer.
    fn open_slice_at(&self, slot: u64) -> Option<&DataSlice> {
        self.cores
            .iter()
            .filter_map(|c| c.open.as_ref())
            .find(|os| os.slot == slot)
            .map(|os| &os.s)
    }

    /// Decode the slice at `slot`, from a core's OOP buffer if it is still
    /// open there, else from the media (no timing).
    fn slice_at(&self, ctx: &MemCtx, slot: u64) -> DataSlice {
        if let Some(s) = self.open_slice_at(slot) {
            return *s;
        }
        let mut b = [0u8; SLICE_BYTES as usize];
        ctx.nvm.peek(self.g.slot_addr(slot), &mut b);
        DataSlice::decode(&b).expect("mapped OOP slot holds a data slice")
    }

    /// A line entered the mapping table (`Indirection::map_if_oop`) at
    /// `now`. The insert that fills the table runs GC at once (the paper
    /// is silent on a full table: our choice), sealing the active block so every committed
    /// transaction can go; every core stalls until it is done (the next
    /// tick applies the stall to all). Returns when the insert completes.
    fn mapping_inserted(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        self.stats.mapping_inserts += 1;
        let n = self.ind.mapped_entries();
        self.stats.mapping_peak_entries = self.stats.mapping_peak_entries.max(n);
        self.stats.mapping_peak_lines = self.stats.mapping_peak_lines.max(self.ind.mapped_len());
        if n > self.mapping_capacity {
            // Only entries of transactions not committed since the last
            // full-table GC are left: GC cannot free them.
            self.stats.mapping_over_capacity_inserts += 1;
        }
        if n < self.mapping_capacity || !self.demand_armed {
            return now;
        }
        self.demand_armed = false;
        self.stats.mapping_full_gc += 1;
        let t = self.gc_complete(ctx, now);
        self.seal_active(ctx, None, t);
        let end = self.run_gc(ctx, t, gc::GcKind::OnDemand);
        self.stats.on_demand_gc_stall_cycles += end - now;
        self.stall_until = Some(self.stall_until.unwrap_or(0).max(end));
        end
    }

    /// A mapping-table entry may have gone (`Indirection` removed it).
    /// On-demand GC is re-armed by commits, not here: an entry freed while
    /// the table is full of uncommitted transactions' lines must not
    /// trigger a pass that can free nothing.
    fn mapping_removed(&mut self) {}

    /// Modeled recovery time if the machine crashed now.
    fn model_recovery_now(&self) -> (f64, u64) {
        let mut live_slices = 0u64;
        let mut headers = 0u64;
        for (i, b) in self.blocks.iter().enumerate() {
            if self.index[i / 64] & (1 << (i % 64)) != 0 {
                headers += 1;
            }
            if b.state.is_live() {
                live_slices += b.next_slot - 1;
            }
        }
        let words = self.ind.oop_words();
        let work = recovery::RecoveryWork {
            oop_bytes_read: self.g.index_bytes() + headers * 64 + live_slices * SLICE_BYTES,
            home_bytes_written: words * 8,
            hash_entries: words,
        };
        (
            self.recovery_model.time_ns(&work),
            live_slices * SLICE_BYTES,
        )
    }
}

impl Scheme for Hoop {
    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        // TxIDs are assigned by the memory controller at TxBegin (§III-D).
        let c = &mut self.cores[core];
        c.txid = self.txid_next;
        self.txid_next = self.txid_next.wrapping_add(1).max(1);
        c.in_tx = true;
        c.first_slot = None;
        c.blocks.clear();
        c.tx_words = 0;
        now
    }

    fn store(&mut self, ctx: &mut MemCtx, ev: Store, ext: &mut LineExt) -> Cycle {
        let Store {
            core,
            addr,
            new,
            in_tx,
            now,
            ..
        } = ev;
        if !in_tx {
            return now;
        }
        let word = addr & !7;
        let c = &mut self.cores[core];
        ext.tx = true;
        ext.txid = c.txid;
        // The common cases touch only this core's open slice: a repeated
        // update of a buffered word (overwritten in place) or an append.
        if let Some(os) = c.open.as_mut() {
            if os.words_seen & OpenSlice::word_bit(word) != 0 {
                if let Some(i) = os.s.find(word) {
                    os.s.values[i] = new;
                    self.stats.words_coalesced_in_buffer += 1;
                    return now;
                }
            }
            if !os.s.is_full() {
                Self::append(c, &mut self.ind, word, new);
                return now;
            }
        }
        self.store_new_slice(ctx, core, word, new, now)
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].in_tx = false;
        let Some(start) = self.cores[core].first_slot else {
            return now; // read-only transaction: nothing to commit
        };
        let txid = self.cores[core].txid;
        // The mutant writes the last slice only after the commit entry.
        let mut t = if self.mutant_commit_first {
            now
        } else {
            self.flush_open(ctx, core, None, now).max(now)
        };
        while let Some(p) = self.cores[core].pending.pop_front() {
            t = t.max(p);
        }
        // Commit: append the start address to the active block's address
        // slice (opening one if needed), after every data slice (the ADR
        // write queue persists in acceptance order).
        let (aslot, used) = match self.addr_slice {
            Some((s, u)) if u < layout::ADDR_ENTRIES => (s, u),
            _ => {
                let Some((s, ta)) = self.alloc_slot(ctx, t) else {
                    // Region exhausted (input error recorded): no commit.
                    self.cores[core].blocks.clear();
                    self.cores[core].first_slot = None;
                    return t;
                };
                t = t.max(ta);
                let b = self.g.block_of(s);
                let hdr = layout::address_slice_header(self.blocks[b].epoch, false);
                let a = self.g.slot_addr(s);
                // Zero the entries first, then write the header word, so a
                // torn open never exposes stale entries under a new epoch.
                if ctx.nvm.is_adr() {
                    let bytes = &mut self.addr_slice_bytes;
                    bytes.fill(0);
                    bytes[layout::ADDR_HEADER_OFFSET..].copy_from_slice(&hdr);
                    ctx.nvm.persist_adr_structure(a, &bytes[..], t);
                } else {
                    t = t.max(ctx.nvm.write(a, &[0u8; 64], Purpose::Metadata, t));
                    t = t.max(ctx.nvm.write(a + 64, &[0u8; 56], Purpose::Metadata, t));
                    t = t.max(ctx.nvm.write(a + 120, &hdr, Purpose::Metadata, t));
                }
                self.blocks[b].addr_slices.push(s);
                self.stats.address_slices_opened += 1;
                (s, 0)
            }
        };
        let entry = CommitEntry {
            start_slot: start,
            txid,
        };
        let entry_addr = self.g.slot_addr(aslot) + used as u64 * 8;
        let entry_bytes = entry.encode().to_le_bytes();
        let done = if ctx.nvm.is_adr() {
            // Durable once in the write-pending queue; the slice goes to
            // NVM when full (or sealed), as one 128 B write.
            self.addr_slice_bytes[used * 8..used * 8 + 8].copy_from_slice(&entry_bytes);
            ctx.nvm.persist_adr_structure(entry_addr, &entry_bytes, t);
            t
        } else {
            ctx.nvm
                .write(entry_addr, &entry_bytes, Purpose::Metadata, t)
        };
        self.addr_slice = Some((aslot, used + 1));
        if used + 1 == layout::ADDR_ENTRIES {
            self.flush_addr_slice(ctx, done);
            self.addr_slice = None;
        }
        if self.mutant_commit_first {
            t = t.max(self.flush_open(ctx, core, None, done));
        }
        self.stats.commit_entries_written += 1;
        self.stats.tx_committed += 1;
        if self.gc_busy() {
            self.stats.tx_committed_during_gc += 1;
        }
        // A commit makes its lines' entries collectable: a full mapping
        // table may trigger GC again.
        self.demand_armed = true;
        self.cores[core].blocks.clear();
        self.cores[core].first_slot = None;
        done.max(t)
    }

    #[inline]
    fn prefetch_miss(&self, line_addr: Addr) {
        self.ind.prefetch(line_addr);
    }

    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        ext: &mut LineExt,
    ) -> (Cycle, bool) {
        self.stats.llc_misses += 1;
        let t0 = now + self.lookup;
        if let Some(locs) = self.ind.take_mapped(line_addr) {
            // Mapping hit: home line and OOP slices in parallel, then merge.
            // (The entry leaves the mapping table; the words stay tracked.)
            let mut slots = [0u64; 8];
            let n = locs.distinct_slots(&mut slots);
            prefetch_media(ctx.nvm.media(), line_addr, LINE_BYTES);
            for &slot in &slots[..n] {
                prefetch_media(ctx.nvm.media(), self.g.slot_addr(slot), SLICE_BYTES);
            }
            let mut done = ctx.nvm.read(line_addr, out, Purpose::Demand, t0);
            self.stats.miss_memory_loads += 1;
            let mut newest = 0;
            for &slot in &slots[..n] {
                // The controller follows the line's entries as encoded.
                let entry = MappingEntry {
                    line: line_addr,
                    slot,
                    in_buffer: !self.mutant_entry_no_buffer_bit
                        && self.open_slice_at(slot).is_some(),
                }
                .encode();
                let MappingEntry {
                    slot, in_buffer, ..
                } = MappingEntry::decode(&entry);
                // Only the words whose newest copy is in this slice.
                let words = locs.words_in(slot);
                let buffered = in_buffer
                    .then(|| self.open_slice_at(slot).map(DataSlice::encode))
                    .flatten();
                let txid = if let Some(b) = buffered {
                    self.stats.oop_slice_reads_from_buffer += 1;
                    layout::merge_slice_bytes(&b, line_addr, words, out)
                } else {
                    // The timed read returns the media bytes: merge from those.
                    let mut b = [0u8; SLICE_BYTES as usize];
                    done =
                        done.max(
                            ctx.nvm
                                .read(self.g.slot_addr(slot), &mut b, Purpose::Demand, t0),
                        );
                    self.stats.miss_memory_loads += 1;
                    layout::merge_slice_bytes(&b, line_addr, words, out)
                };
                let txid = match txid {
                    Some(t) => t,
                    // The planted bug read a slot not yet written.
                    None if self.mutant_entry_no_buffer_bit => 0,
                    None => panic!("mapped OOP slot holds a data slice"),
                };
                newest = newest.max(txid);
            }
            self.mapping_removed();
            self.stats.mapping_removed_by_miss += 1;
            self.stats.parallel_read_misses += 1;
            // The newest copy now lives in the caches; it must come back to
            // the controller when evicted (even clean), or it would be lost.
            ext.tx = true;
            ext.txid = newest;
            return (done, true);
        }
        if let Some(d) = self.evb.get(line_addr) {
            *out = *d;
            self.stats.eviction_buffer_hits += 1;
            return (t0, false);
        }
        self.stats.miss_memory_loads += 1;
        (ctx.nvm.read(line_addr, out, Purpose::Demand, t0), false)
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            ext,
            now,
            ..
        } = ev;
        let before = self.ind.mapped_entries();
        if let Some(new) = self.ind.map_if_oop(line_addr) {
            // Its transactional words are in the OOP region/buffer: never
            // written home before GC; track it in the mapping table.
            if new {
                self.entries_inserted_this_period += self.ind.mapped_entries() - before;
                return self.mapping_inserted(ctx, now);
            }
            return now;
        }
        if ext.tx {
            // Every transactional word was already migrated home by GC.
            self.stats.tx_evictions_already_home += 1;
            return now;
        }
        self.evb.update_if_present(line_addr, data);
        ctx.nvm.write(line_addr, data, Purpose::WriteBack, now)
    }

    fn next_event_at(&self) -> Option<Cycle> {
        if self.gc_demand || self.stall_until.is_some() {
            return Some(0);
        }
        Some(match self.gc_next_at() {
            Some(t) => t.min(self.next_gc_at),
            None => self.next_gc_at,
        })
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        if let Some(end) = self.stall_until.take() {
            // A full mapping table ran GC during an eviction: all cores
            // wait for it.
            return Some(end);
        }
        if self.gc_demand {
            // On-demand GC stalls every core until it is done; a periodic
            // pass in flight is finished first (stalled too).
            self.gc_demand = false;
            let t = self.gc_complete(ctx, now);
            // Seal the active block so its committed transactions can go.
            if self.ind.mapped_entries() >= self.mapping_capacity {
                self.seal_active(ctx, None, t);
            }
            let end = self.run_gc(ctx, t, gc::GcKind::OnDemand);
            self.stats.on_demand_gc_stall_cycles += end - now;
            return Some(end);
        }
        // Periodic GC is background traffic: its requests are issued as
        // its engine's slots free up, competing with the cores' requests.
        if self.gc_next_at().is_some_and(|t| t <= now) {
            self.gc_advance(ctx, now);
        }
        if now >= self.next_gc_at {
            // §III-C sizes the table by the lines evicted between two GCs.
            self.stats.mapping_entries_inserted_max_per_gc_period = self
                .stats
                .mapping_entries_inserted_max_per_gc_period
                .max(self.entries_inserted_this_period);
            self.entries_inserted_this_period = 0;
            if self.gc_busy() {
                self.stats.gc_periodic_skipped_busy += 1;
            } else {
                self.gc_start(ctx, now, gc::GcKind::Periodic);
            }
            self.next_gc_at = now + self.gc_period;
        }
        None
    }

    fn background_kind(&self) -> &'static str {
        "gc"
    }

    fn recovery_paths(&self) -> &'static [&'static str] {
        &["gc"]
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        self.in_finish = true;
        let (ns, live) = self.model_recovery_now();
        self.end_recovery_ns = ns;
        self.end_recovery_live_bytes = live;
        // Final GC of everything committed: afterwards home == architecture.
        let mut t = self.gc_complete(ctx, now);
        self.seal_active(ctx, None, t);
        while !self.full.is_empty() {
            let before = self.full.len();
            t = self.run_gc(ctx, t, gc::GcKind::Final);
            if self.full.len() == before {
                break;
            }
        }
        t
    }

    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        ctx.nvm.peek(addr, buf);
        let mut a = addr & !7;
        while a < addr + buf.len() as u64 {
            if let Some(l) = self.ind.get(line_of(a)) {
                let w = ((a & 63) / 8) as usize;
                if l.mask & (1 << w) != 0 {
                    let s = self.slice_at(ctx, l.slot(w));
                    let i = s.find(a).expect("slice holds the word");
                    let v = s.values[i].to_le_bytes();
                    for (k, byte) in v.iter().enumerate() {
                        let p = a + k as u64;
                        if p >= addr && p < addr + buf.len() as u64 {
                            buf[(p - addr) as usize] = *byte;
                        }
                    }
                }
            }
            a += 8;
        }
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        let div = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let (ns_now, _) = self.model_recovery_now();
        vec![
            ("tx_committed", s.tx_committed as f64),
            ("data_slices_written", s.data_slices_written as f64),
            ("address_slices_opened", s.address_slices_opened as f64),
            ("address_slices_written", s.address_slices_written as f64),
            ("commit_entries_written", s.commit_entries_written as f64),
            (
                "packing_words_per_slice",
                div(s.data_slice_words, s.data_slices_written),
            ),
            (
                "words_coalesced_in_buffer",
                s.words_coalesced_in_buffer as f64,
            ),
            (
                "oop_buffer_full_stall_cycles",
                s.oop_buffer_full_stall_cycles as f64,
            ),
            ("mapping_capacity_entries", self.mapping_capacity as f64),
            ("mapping_entries", self.ind.mapped_entries() as f64),
            ("mapping_lines", self.ind.mapped_len() as f64),
            ("mapping_peak_entries", s.mapping_peak_entries as f64),
            ("mapping_peak_lines", s.mapping_peak_lines as f64),
            (
                "mapping_entries_inserted_max_per_gc_period",
                s.mapping_entries_inserted_max_per_gc_period as f64,
            ),
            (
                "mapping_peak_occupancy",
                div(s.mapping_peak_entries, self.mapping_capacity),
            ),
            ("mapping_inserts", s.mapping_inserts as f64),
            ("mapping_removed_by_gc", s.mapping_removed_by_gc as f64),
            ("mapping_removed_by_miss", s.mapping_removed_by_miss as f64),
            (
                "mapping_over_capacity_inserts",
                s.mapping_over_capacity_inserts as f64,
            ),
            (
                "tx_evictions_already_home",
                s.tx_evictions_already_home as f64,
            ),
            ("llc_misses", s.llc_misses as f64),
            ("loads_per_llc_miss", div(s.miss_memory_loads, s.llc_misses)),
            ("parallel_read_misses", s.parallel_read_misses as f64),
            (
                "parallel_read_fraction",
                div(s.parallel_read_misses, s.llc_misses),
            ),
            (
                "oop_slice_reads_from_buffer",
                s.oop_slice_reads_from_buffer as f64,
            ),
            ("eviction_buffer_hits", s.eviction_buffer_hits as f64),
            ("gc_runs_periodic", s.gc_runs_periodic as f64),
            ("gc_runs_on_demand", s.gc_runs_on_demand as f64),
            ("gc_runs_final", s.gc_runs_final as f64),
            ("gc_blocks_freed", s.gc_blocks_freed as f64),
            ("gc_passes_started", s.gc_passes_started as f64),
            ("gc_passes_retired", s.gc_passes_retired as f64),
            ("gc_tx_migrated", s.gc_tx_migrated as f64),
            ("gc_words_in_slices", s.gc_words_in_slices as f64),
            ("gc_words_migrated", s.gc_words_migrated as f64),
            ("gc_data_reduction_ratio", s.gc_data_reduction_ratio()),
            (
                "gc_passes_retired_end_of_run",
                s.gc_passes_retired_end_of_run as f64,
            ),
            (
                "gc_tx_migrated_end_of_run",
                s.gc_tx_migrated_end_of_run as f64,
            ),
            (
                "gc_words_in_slices_end_of_run",
                s.gc_words_in_slices_end_of_run as f64,
            ),
            (
                "gc_words_migrated_end_of_run",
                s.gc_words_migrated_end_of_run as f64,
            ),
            ("gc_lines_written", s.gc_lines_written as f64),
            ("gc_bytes_migrated", s.gc_bytes_migrated as f64),
            ("gc_home_reads", s.gc_home_reads as f64),
            ("gc_reads_issued", s.gc_reads_issued as f64),
            ("gc_read_issue_times", s.gc_read_issue_times as f64),
            ("gc_cycles", s.gc_cycles as f64),
            ("gc_background_cycles", s.gc_background_cycles as f64),
            (
                "gc_periodic_skipped_busy",
                s.gc_periodic_skipped_busy as f64,
            ),
            ("tx_committed_during_gc", s.tx_committed_during_gc as f64),
            (
                "on_demand_gc_stall_cycles",
                s.on_demand_gc_stall_cycles as f64,
            ),
            ("mapping_full_gc", s.mapping_full_gc as f64),
            ("emergency_gc", s.emergency_gc as f64),
            ("oop_blocks", self.g.blocks as f64),
            ("oop_blocks_allocated", s.blocks_allocated as f64),
            ("oop_blocks_peak_in_use", s.blocks_peak_in_use as f64),
            ("recovery_modeled_ns_at_run_end", self.end_recovery_ns),
            (
                "recovery_live_oop_bytes_at_run_end",
                self.end_recovery_live_bytes as f64,
            ),
            ("recovery_modeled_ns_now", ns_now),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = Stats::default();
    }
}
