//! LSM: log-structured NVM after LSNVMM (Hu et al., USENIX ATC 2017), as the
//! HOOP paper compares against it (HOOP §II-B, §IV-A).
//!
//! Every transactional store is captured in the transaction's write set; at
//! TxEnd the write set is appended to a log in NVM (one entry per modified
//! line: header with the home line, txid, word mask and a checksum, then the
//! written words) followed by a commit record, and TxEnd waits until both
//! are persisted. An index — a skip list kept in DRAM — maps each home line
//! to the newest log location of each of its words; every LLC miss walks it
//! (one DRAM access per skip-list node read) and merges the log words over
//! the home line. LLC evictions of transactionally written lines never go
//! home. A periodic GC (HOOP's period) cleans log segments: `compact` copies
//! the live words of mostly-dead segments to the log head (LSNVMM: the log is
//! the data's location), `home` migrates every live word home and retires the
//! whole log. Recovery scans the live segments in sequence order, replays
//! committed entries newest-wins into home and retires the log.
//!
//! NVM layout of the reserved region (all words little-endian):
//! - superblock (first segment slot, one line): word 0 = `tail_seq`; every
//!   segment whose sequence number is below it is dead; word 1 = high-water
//!   mark (segments at or above it were never used; raised before use).
//! - segment i (from the second slot on): line 0 = header, word 0 =
//!   `SEG_MAGIC << 48 | seq`; entries from byte 64 on, packed, 8-byte aligned.
//! - data entry: w0 = `KIND_DATA << 56 | mask << 48 | home_line_index`,
//!   w1 = `txid << 32 | seq (low 32 bits)`, w2 = checksum(w0, w1, data), then
//!   popcount(mask) data words in word order.
//! - commit record: w0 = `KIND_COMMIT << 56 | data entries`, w1, w2 as above.
//!
//! A transaction's entries and commit record always lie in one segment, so
//! freeing a segment removes whole transactions.

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params, MC};
use crate::error::{Error, Result};
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Store, Writeback,
};
use crate::types::{
    line_of, read_word, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES,
};
use crate::workloads::Op;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

pub static INFO: SchemeInfo = SchemeInfo {
    name: "lsm",
    description:
        "log-structured NVM with a DRAM skip-list index and log cleaning (LSNVMM, ATC 2017)",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
};

pub static PARAMS: &[ParamSpec] = &[
    p!("lsm.log_region_share", float 0.10, "fraction", Check::Range(0.0001, 0.9),
        "same NVM share as HOOP's OOP region (HOOP §III-H, 10%) for a like-for-like comparison",
        "share of NVM reserved for the log (sparse: costs host memory only when touched)"),
    p!("lsm.segment_bytes", int 2 << 20, "bytes", Check::PowerOfTwo(4096, 512 << 20),
        "same granularity as HOOP's OOP blocks (HOOP §III-D, 2 MB); LSNVMM cleans the log in fixed-size segments",
        "log segment size: the unit of allocation and cleaning"),
    p!("lsm.gc_period_ms", float 10.0, "ms", Check::Range(0.0001, 1e6),
        "HOOP §IV-A (GC in LSNVMM at the same frequency as HOOP) and §III-H (every 10 ms)",
        "period of the background log cleaning in simulated time"),
    p!("lsm.gc_mode", str "compact", &["compact", "home"],
        "LSNVMM (ATC 2017): the log becomes the location of the data, cleaning compacts it",
        "compact: copy the live words of mostly-dead segments to the log head; home: migrate every live word home and retire the log (HOOP-style GC)"),
    p!("lsm.gc_victim_utilization", float 0.5, "fraction", Check::Range(0.0, 1.0),
        MC,
        "compact mode: a sealed segment is cleaned when its live data is at most this share of its capacity (greedy cleaning, Rosenblum & Ousterhout, SOSP 1991)"),
    p!("lsm.gc_low_free_segments", int 2, "segments", Check::Range(1.0, 1e9),
        MC,
        "cleaning runs early when fewer free segments remain; an append that finds none migrates everything home first"),
    p!("lsm.skiplist_p", float 0.5, "probability", Check::Range(0.05, 0.95),
        "Pugh, CACM 1990 (p = 1/2); HOOP §IV-A implements LSNVMM's index as a skip list",
        "probability that a skip-list node gets one more level"),
    p!("lsm.index_seed", int 1, "", Check::Range(0.0, 1.8e19),
        MC,
        "seed of the skip list's level generator"),
    p!("lsm.index_node_bytes", int 64, "bytes", Check::Range(16.0, 4096.0),
        MC,
        "DRAM footprint of one skip-list node (key, word locations, forward pointers); a node read is one load through the CPU caches"),
    p!("lsm.recovery_bandwidth_gbps", float 10.0, "GB/s", Check::Range(0.001, 1e6),
        "HOOP §IV experiment (g) (10 to 25 GB/s; lower end), as for HOOP",
        "NVM bandwidth available to recovery in the recovery-time model"),
    p!("lsm.mutant", str "none", &["none", "retire-log-early", "ignore-checksum"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): retire-log-early = migrate-home moves the log tail before its home writes; ignore-checksum = recovery accepts entries whose checksum fails"),
];

const SEG_MAGIC: u64 = 0x4c53; // "LS"
const KIND_DATA: u64 = 0xd1;
const KIND_COMMIT: u64 = 0xc1;
const ENTRY_HDR: u64 = 24;
const SEQ_MASK: u64 = (1 << 48) - 1;
const LINE_IDX_MASK: u64 = (1 << 48) - 1;
const NIL: u32 = u32::MAX;
const MAX_LEVEL: usize = 32;
/// Address span of the DRAM index as the CPU caches see it.
const INDEX_SPAN: u64 = 1 << 40;
/// Each core walks its own alias of the index: the cache hierarchy models
/// no sharing between cores (an LLC line has one owner whose private copies
/// it invalidates), so a line two cores cached would leave a stale link.
/// The aliases all read the same DRAM bytes; the LLC may hold one copy of a
/// node per core (an upper bound on the index's LLC footprint).
const CORE_SPAN: u64 = INDEX_SPAN / crate::schemes::kit::log::MAX_CORES;

/// Where the DRAM index appears in the physical address space: above NVM
/// and below the ADR range (`Layout::adr_base`), so no NVM or ADR address
/// aliases it.
fn index_base(layout: &Layout) -> Addr {
    layout
        .capacity_bytes
        .next_power_of_two()
        .max(layout.capacity_bytes)
}

fn reserved_bytes(p: &Params) -> u64 {
    let cap = p.u64("nvm.capacity_bytes");
    let seg = p.u64("lsm.segment_bytes");
    let want = (cap as f64 * p.f64("lsm.log_region_share")).ceil() as u64;
    // One extra slot for the superblock.
    (want.div_ceil(seg) + 1) * seg
}

/// Geometry of the log region, shared by the scheme and recovery.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub superblock: Addr,
    pub first_segment: Addr,
    pub segment_bytes: u64,
    pub segments: u64,
}

impl Geometry {
    pub fn new(p: &Params, layout: &Layout) -> Result<Self> {
        let seg = p.u64("lsm.segment_bytes");
        let base = layout.reserved_base.div_ceil(seg) * seg;
        let slots = layout.capacity_bytes.saturating_sub(base) / seg;
        if slots < 5 {
            return Err(Error::input(format!(
                "lsm.log_region_share={} gives {} log segments of lsm.segment_bytes={seg}; need at least 4 (raise the share or lower the segment size)",
                p.f64("lsm.log_region_share"),
                slots.saturating_sub(1)
            )));
        }
        Ok(Geometry {
            superblock: base,
            first_segment: base + seg,
            segment_bytes: seg,
            segments: slots - 1,
        })
    }
    #[inline]
    pub fn seg_addr(&self, s: usize) -> Addr {
        self.first_segment + s as u64 * self.segment_bytes
    }
    #[inline]
    pub fn seg_of(&self, log_addr: Addr) -> usize {
        ((log_addr - self.first_segment) / self.segment_bytes) as usize
    }
}

/// Checksum of an entry: detects torn and stale entries.
fn checksum(w0: u64, w1: u64, data: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &w in [w0, w1].iter().chain(data) {
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    h | 1
}

/// Encode a data entry into `out` (appended); returns its size.
fn encode_data(out: &mut Vec<u8>, line: Addr, mask: u8, words: &[u64; 8], txid: u32, seq: u64) {
    let mut data = [0u64; 8];
    let mut n = 0;
    for (w, &v) in words.iter().enumerate() {
        if mask & (1 << w) != 0 {
            data[n] = v;
            n += 1;
        }
    }
    let w0 = KIND_DATA << 56 | u64::from(mask) << 48 | (line / LINE_BYTES) & LINE_IDX_MASK;
    let w1 = u64::from(txid) << 32 | (seq & 0xffff_ffff);
    let w2 = checksum(w0, w1, &data[..n]);
    for w in [w0, w1, w2].iter().chain(&data[..n]) {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

fn encode_commit(out: &mut Vec<u8>, entries: u64, txid: u32, seq: u64) {
    let w0 = KIND_COMMIT << 56 | (entries & LINE_IDX_MASK);
    let w1 = u64::from(txid) << 32 | (seq & 0xffff_ffff);
    let w2 = checksum(w0, w1, &[]);
    for w in [w0, w1, w2] {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

fn entry_bytes(mask: u8) -> u64 {
    ENTRY_HDR + 8 * u64::from(mask.count_ones())
}

/// A decoded entry.
#[derive(Clone, Copy, Debug)]
enum Entry {
    Data {
        line: Addr,
        mask: u8,
        txid: u32,
        /// Data words in word order (popcount(mask) of them).
        data: [u64; 8],
    },
    Commit {
        entries: u64,
        txid: u32,
    },
}

/// Decode the entry at `off` of a segment image `seg` with sequence `seq`;
/// `None` marks the end of the segment's valid content.
fn decode(seg: &[u8], off: usize, seq: u64) -> Option<(Entry, usize)> {
    decode_with(seg, off, seq, true)
}

/// [`decode`], with the checksum test switchable (`false` only for the
/// `ignore-checksum` mutant).
fn decode_with(seg: &[u8], off: usize, seq: u64, verify: bool) -> Option<(Entry, usize)> {
    let word = |o: usize| u64::from_le_bytes(seg[o..o + 8].try_into().unwrap());
    if off + ENTRY_HDR as usize > seg.len() {
        return None;
    }
    let (w0, w1, w2) = (word(off), word(off + 8), word(off + 16));
    if w1 & 0xffff_ffff != seq & 0xffff_ffff {
        return None;
    }
    let txid = (w1 >> 32) as u32;
    match w0 >> 56 {
        KIND_DATA => {
            let mask = (w0 >> 48) as u8;
            let n = mask.count_ones() as usize;
            let end = off + ENTRY_HDR as usize + 8 * n;
            if mask == 0 || end > seg.len() {
                return None;
            }
            let mut data = [0u64; 8];
            for (i, d) in data.iter_mut().enumerate().take(n) {
                *d = word(off + ENTRY_HDR as usize + 8 * i);
            }
            if verify && checksum(w0, w1, &data[..n]) != w2 {
                return None;
            }
            Some((
                Entry::Data {
                    line: (w0 & LINE_IDX_MASK) * LINE_BYTES,
                    mask,
                    txid,
                    data,
                },
                end,
            ))
        }
        KIND_COMMIT => {
            if verify && checksum(w0, w1, &[]) != w2 {
                return None;
            }
            Some((
                Entry::Commit {
                    entries: w0 & LINE_IDX_MASK,
                    txid,
                },
                off + ENTRY_HDR as usize,
            ))
        }
        _ => None,
    }
}

/// Newest log location (byte address of the data word) of each word of a
/// line; `mask` says which words have one.
#[derive(Clone, Copy, Debug, Default)]
struct LineLoc {
    mask: u8,
    loc: [Addr; 8],
}

/// The DRAM index: a skip list keyed by home line address (Pugh 1990).
/// Nodes live in an arena; node `i` occupies DRAM at `i * node_bytes`.
struct SkipList {
    keys: Vec<Addr>,
    first: Vec<u32>,
    next: Vec<u32>,
    locs: Vec<LineLoc>,
    level: usize,
    p: f64,
    seed: u64,
    rng: Xoshiro256PlusPlus,
    /// Host-side shortcut for untimed lookups (write-backs, checks); the
    /// timed path always walks the list.
    map: FxHashMap<Addr, u32>,
    update: [u32; MAX_LEVEL],
    /// Nodes read by the last walk, in order (for the DRAM accesses).
    visited: Vec<u32>,
}

impl SkipList {
    fn new(p: f64, seed: u64) -> Self {
        let mut s = SkipList {
            keys: Vec::new(),
            first: Vec::new(),
            next: Vec::new(),
            locs: Vec::new(),
            level: 1,
            p,
            seed,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            map: FxHashMap::default(),
            update: [0; MAX_LEVEL],
            visited: Vec::with_capacity(256),
        };
        s.clear();
        s
    }

    /// Drop every node (after a migrate-home GC); the level generator
    /// continues its sequence.
    fn clear(&mut self) {
        self.keys.clear();
        self.first.clear();
        self.next.clear();
        self.locs.clear();
        self.map.clear();
        // Head node: every level.
        self.keys.push(0);
        self.first.push(0);
        self.next.extend(std::iter::repeat_n(NIL, MAX_LEVEL));
        self.locs.push(LineLoc::default());
        self.level = 1;
        let _ = self.seed;
    }

    fn len(&self) -> usize {
        self.keys.len() - 1
    }

    #[inline]
    fn nxt(&self, node: u32, l: usize) -> u32 {
        self.next[self.first[node as usize] as usize + l]
    }

    /// Search for `key`, recording predecessors in `update` and the nodes
    /// read (head first) in `visited`. Returns the node holding `key`.
    fn walk(&mut self, key: Addr) -> Option<u32> {
        self.visited.clear();
        self.visited.push(0);
        let mut x = 0u32;
        let mut last_read = 0u32;
        for l in (0..self.level).rev() {
            loop {
                let nx = self.nxt(x, l);
                if nx == NIL {
                    break;
                }
                // Reading a node's key costs one access unless it is the
                // node just read (moving down a level at the same place).
                if nx != last_read {
                    self.visited.push(nx);
                    last_read = nx;
                }
                if self.keys[nx as usize] < key {
                    x = nx;
                } else {
                    break;
                }
            }
            self.update[l] = x;
        }
        let c = self.nxt(x, 0);
        (c != NIL && self.keys[c as usize] == key).then_some(c)
    }

    /// Insert `key` after a `walk(key)` that did not find it. Returns the
    /// new node and the predecessors whose pointers changed (in `visited`
    /// is left the walk; `changed` receives the written nodes).
    fn insert_after_walk(&mut self, key: Addr, changed: &mut Vec<u32>) -> u32 {
        let mut lvl = 1;
        while lvl < MAX_LEVEL && self.rng.gen::<f64>() < self.p {
            lvl += 1;
        }
        if lvl > self.level {
            for l in self.level..lvl {
                self.update[l] = 0;
            }
            self.level = lvl;
        }
        let id = self.keys.len() as u32;
        self.keys.push(key);
        self.first.push(self.next.len() as u32);
        self.locs.push(LineLoc::default());
        for l in 0..lvl {
            let pred = self.update[l];
            let after = self.nxt(pred, l);
            self.next.push(after);
            let pi = self.first[pred as usize] as usize + l;
            self.next[pi] = id;
        }
        changed.clear();
        changed.push(id);
        for l in 0..lvl {
            if !changed.contains(&self.update[l]) {
                changed.push(self.update[l]);
            }
        }
        self.map.insert(key, id);
        id
    }

    /// Nodes in key order (level 0).
    fn in_order(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.len());
        let mut x = self.nxt(0, 0);
        while x != NIL {
            v.push(x);
            x = self.nxt(x, 0);
        }
        v
    }
}

/// A core's in-flight transaction: its write set, line by line in first
/// store order.
#[derive(Default)]
struct TxBuf {
    txid: u32,
    lines: Vec<(Addr, u8, [u64; 8])>,
    map: FxHashMap<Addr, u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SegState {
    Free,
    Active,
    Sealed,
}

#[derive(Clone, Copy, Debug)]
struct Seg {
    state: SegState,
    seq: u64,
    /// Write cursor (bytes from the segment start).
    used: u64,
    /// Words whose newest version is in this segment.
    live_words: u64,
    /// Data words ever written into this segment (live or not): the
    /// cleaner's utilisation is live / written, so entry headers do not
    /// count as dead space (see `compact_segments`).
    words_written: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub tx_committed: u64,
    pub tx_read_only: u64,
    pub log_entries: u64,
    pub log_words: u64,
    pub log_bytes_appended: u64,
    pub commit_records: u64,
    pub segments_opened: u64,
    pub llc_misses: u64,
    pub misses_with_log_data: u64,
    pub miss_log_bursts_read: u64,
    pub miss_home_reads: u64,
    pub read_walks: u64,
    pub read_walk_nodes: u64,
    pub index_node_loads: u64,
    pub index_llc_misses: u64,
    pub gc_walk_nodes: u64,
    pub update_walks: u64,
    pub update_walk_nodes: u64,
    pub index_nodes_inserted: u64,
    pub index_peak_nodes: u64,
    pub dram_index_reads: u64,
    pub dram_index_writes: u64,
    pub tx_writebacks_dropped: u64,
    pub nontx_autocommits: u64,
    pub gc_runs_periodic: u64,
    pub gc_runs_on_demand: u64,
    pub gc_runs_emergency: u64,
    pub gc_runs_final: u64,
    pub gc_compactions: u64,
    pub gc_migrations_home: u64,
    pub gc_segments_freed: u64,
    pub gc_bytes_scanned: u64,
    pub gc_words_copied: u64,
    pub gc_bytes_copied: u64,
    pub gc_home_lines_written: u64,
    pub gc_bytes_home: u64,
    pub gc_cycles: u64,
    pub emergency_stall_cycles: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GcKind {
    Periodic,
    OnDemand,
    Emergency,
    Final,
}

/// Free log segments, host state sized by what the run used: segments
/// from `touched` on were never opened and are implicitly free; below it,
/// the freed ones are listed. The lowest free segment is reused first,
/// exactly as a set of every free segment would give.
struct FreeSegs {
    below: BTreeSet<usize>,
    touched: usize,
    total: usize,
}

impl FreeSegs {
    fn new(total: usize) -> Self {
        FreeSegs {
            below: BTreeSet::new(),
            touched: 0,
            total,
        }
    }
    fn len(&self) -> usize {
        self.below.len() + (self.total - self.touched)
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn pop_first(&mut self) -> Option<usize> {
        self.below.pop_first().or_else(|| {
            (self.touched < self.total).then(|| {
                self.touched += 1;
                self.touched - 1
            })
        })
    }
    fn insert(&mut self, s: usize) {
        debug_assert!(s < self.touched);
        self.below.insert(s);
    }
    fn clear(&mut self) {
        self.below.clear();
    }
}

const FREE_SEG: Seg = Seg {
    state: SegState::Free,
    seq: 0,
    used: 0,
    live_words: 0,
    words_written: 0,
};

pub struct Lsm {
    g: Geometry,
    /// Segments opened so far (index = segment number); never-opened ones
    /// have no host state (a 4 KiB segment size over a 512 GiB region
    /// would be 13 M entries).
    segs: Vec<Seg>,
    /// Free segments; the lowest is reused first, which keeps the
    /// high-water mark (and recovery's header scan) small.
    free: FreeSegs,
    high_water: usize,
    active: Option<usize>,
    seq_next: u64,
    txid_next: u32,
    cores: Vec<TxBuf>,
    index: SkipList,
    node_bytes: u64,
    /// Physical address of index node 0 as the CPU caches see it: the
    /// software walk's loads go through L1/L2/LLC; an LLC miss in
    /// `[index_base, index_base + INDEX_SPAN)` reads DRAM at the offset.
    index_base: Addr,
    /// Program data lies below this (reads of it walk the index).
    home_limit: Addr,
    /// Lines of the transaction being instrumented already translated
    /// (read set) or written (write set): they do not walk again.
    /// Value: whether the transaction writes the line.
    seen: FxHashMap<Addr, bool>,
    written: Vec<Addr>,
    /// Per original load of the transaction, its position among the loads
    /// emitted by `instrument` (to renumber address dependencies).
    load_pos: Vec<u32>,
    /// The cleaner thread's cache of index lines: it walks the index with
    /// loads through its own core's caches (an L2's worth of node lines,
    /// direct-mapped; `u32::MAX` = empty). Hits cost `cleaner_hit`.
    cleaner_tags: Vec<u32>,
    cleaner_hit: Cycle,
    compact: bool,
    victim_util: f64,
    low_free: u64,
    gc_period: Cycle,
    next_gc_at: Cycle,
    gc_demand: bool,
    staging: Vec<u8>,
    changed: Vec<u32>,
    pub stats: Stats,
    /// What the last GC did, for crash-point accounting.
    last_gc_kind: &'static str,
    /// Test-only planted bug (`lsm.mutant` = retire-log-early).
    mutant_retire_early: bool,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Lsm::new(p, layout)?))
}

impl Lsm {
    pub fn new(p: &Params, layout: &Layout) -> Result<Self> {
        let g = Geometry::new(p, layout)?;
        let period =
            ((p.f64("lsm.gc_period_ms") * 1e6 * p.f64("cpu.freq_ghz")).ceil() as Cycle).max(1);
        Ok(Lsm {
            g,
            segs: Vec::new(),
            free: FreeSegs::new(g.segments as usize),
            high_water: 0,
            active: None,
            seq_next: 1,
            txid_next: 1,
            cores: (0..layout.threads).map(|_| TxBuf::default()).collect(),
            index: SkipList::new(p.f64("lsm.skiplist_p"), p.u64("lsm.index_seed")),
            node_bytes: p.u64("lsm.index_node_bytes"),
            index_base: index_base(layout),
            home_limit: layout.home_limit,
            seen: FxHashMap::default(),
            written: Vec::new(),
            load_pos: Vec::new(),
            cleaner_tags: vec![
                u32::MAX;
                (p.u64("cache.l2_size_bytes") / p.u64("lsm.index_node_bytes").max(LINE_BYTES))
                    .max(1) as usize
            ],
            cleaner_hit: p.u64("cache.l2_latency_cycles"),
            compact: p.str("lsm.gc_mode") == "compact",
            victim_util: p.f64("lsm.gc_victim_utilization"),
            low_free: p.u64("lsm.gc_low_free_segments"),
            gc_period: period,
            next_gc_at: period,
            gc_demand: false,
            staging: Vec::with_capacity(1 << 16),
            changed: Vec::with_capacity(MAX_LEVEL + 1),
            stats: Stats::default(),
            mutant_retire_early: p.str("lsm.mutant") == "retire-log-early",
            last_gc_kind: "gc",
        })
    }

    fn fresh_txid(&mut self) -> u32 {
        let t = self.txid_next;
        self.txid_next = self.txid_next.wrapping_add(1).max(1);
        t
    }

    /// Walk the index for `line`. A transaction's walks were emitted as
    /// loads into its op stream (`instrument`): the core already paid them
    /// through its caches, so `charged` walks cost nothing here. Other walks
    /// (the cleaner's, auto-commits at write-back) have no core of ours:
    /// they are a chain of dependent DRAM reads, each issued when the
    /// previous one returned. Returns (node, time).
    fn timed_walk(
        &mut self,
        ctx: &mut MemCtx,
        line: Addr,
        charged: bool,
        now: Cycle,
    ) -> (Option<u32>, Cycle) {
        let found = self.index.walk(line);
        if charged {
            return (found, now);
        }
        let mut done = now;
        let mut buf = [0u8; 64];
        let n = (self.node_bytes as usize).min(64);
        let sets = self.cleaner_tags.len();
        for &node in &self.index.visited {
            let set = node as usize % sets;
            if self.cleaner_tags[set] == node {
                done += self.cleaner_hit;
                continue;
            }
            self.cleaner_tags[set] = node;
            self.stats.dram_index_reads += 1;
            done = ctx.dram.read(
                u64::from(node) * self.node_bytes,
                &mut buf[..n],
                Purpose::Metadata,
                done,
            );
        }
        self.stats.gc_walk_nodes += self.index.visited.len() as u64;
        (found, done)
    }

    /// Find or insert the node of `line` (see `timed_walk` for `charged`).
    /// Returns the node and the time.
    fn timed_upsert(
        &mut self,
        ctx: &mut MemCtx,
        line: Addr,
        charged: bool,
        now: Cycle,
    ) -> (u32, Cycle) {
        let (found, t) = self.timed_walk(ctx, line, charged, now);
        let node = match found {
            Some(n) => n,
            None => {
                let mut changed = std::mem::take(&mut self.changed);
                let id = self.index.insert_after_walk(line, &mut changed);
                // Node contents are not modelled (zeros): loads of index
                // lines read back what the walk found functionally.
                let buf = [0u8; 64];
                let n = (self.node_bytes as usize).min(64);
                for &c in &changed {
                    // Posted writes: they do not delay the walk's owner.
                    ctx.dram.write(
                        u64::from(c) * self.node_bytes,
                        &buf[..n],
                        Purpose::Metadata,
                        t,
                    );
                }
                self.stats.dram_index_writes += changed.len() as u64;
                self.changed = changed;
                self.stats.index_nodes_inserted += 1;
                self.stats.index_peak_nodes =
                    self.stats.index_peak_nodes.max(self.index.len() as u64);
                id
            }
        };
        (node, t)
    }

    /// Emit the last walk's node reads as loads (node contents are not
    /// modelled: they read as zero). Each node's address comes from the
    /// node before it (pointer chasing), so every load but the first (the
    /// head, whose address is known) depends on the previous one. Returns
    /// the number of loads emitted.
    fn emit_walk(&mut self, core: CoreId, out: &mut Vec<Op>) -> u32 {
        let base = self.index_base + core as u64 * CORE_SPAN;
        for (i, &node) in self.index.visited.iter().enumerate() {
            out.push(Op::Load {
                addr: base + u64::from(node) * self.node_bytes % CORE_SPAN,
                value: 0,
                dep: u8::from(i > 0),
            });
        }
        self.stats.index_node_loads += self.index.visited.len() as u64;
        self.index.visited.len() as u32
    }

    /// Point word `w` of `node` at `log_addr`, keeping segment live counts.
    fn set_loc(&mut self, node: u32, w: usize, log_addr: Addr) {
        let l = &mut self.index.locs[node as usize];
        if l.mask & (1 << w) != 0 {
            let old = self.g.seg_of(l.loc[w]);
            self.segs[old].live_words -= 1;
        }
        l.mask |= 1 << w;
        l.loc[w] = log_addr;
        let s = self.g.seg_of(log_addr);
        self.segs[s].live_words += 1;
        self.segs[s].words_written += 1;
    }

    /// Seal the active segment (its unused tail stays stale).
    fn seal_active(&mut self) {
        if let Some(a) = self.active.take() {
            self.segs[a].state = SegState::Sealed;
        }
    }

    /// Open a free segment: its header (new sequence number) is written
    /// before any entry. Returns the persist time.
    fn open_segment(&mut self, ctx: &mut MemCtx, purpose: Purpose, now: Cycle) -> Cycle {
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
    fn room(&self) -> u64 {
        self.active
            .map_or(0, |a| self.g.segment_bytes - self.segs[a].used)
    }

    /// Append one record (the `staging` bytes: entries then a commit record)
    /// to the active segment, which has room. Returns (log address, persist
    /// time).
    fn append_staging(
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
    fn reserve(&mut self, ctx: &mut MemCtx, bytes: u64, purpose: Purpose, now: Cycle) -> Cycle {
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
    fn commit_lines(
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

    /// Newest value of a line: home, then log words, then in-flight words
    /// (untimed).
    fn logical_line(&self, ctx: &MemCtx, line: Addr, out: &mut LineData) {
        ctx.nvm.peek(line, out);
        if let Some(&node) = self.index.map.get(&line) {
            let l = &self.index.locs[node as usize];
            for w in 0..8 {
                if l.mask & (1 << w) != 0 {
                    let mut b = [0u8; 8];
                    ctx.nvm.peek(l.loc[w], &mut b);
                    write_word(out, w, u64::from_le_bytes(b));
                }
            }
        }
        for c in &self.cores {
            if let Some(&i) = c.map.get(&line) {
                let (_, mask, words) = c.lines[i as usize];
                for (w, &v) in words.iter().enumerate() {
                    if mask & (1 << w) != 0 {
                        write_word(out, w, v);
                    }
                }
            }
        }
    }

    /// Background / on-demand / final GC. Returns the time it finished.
    fn gc(&mut self, ctx: &mut MemCtx, now: Cycle, kind: GcKind) -> Cycle {
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
    fn migrate_home(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
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
    fn compact_segments(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
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
            // Live words: those whose newest location is in this segment.
            let mut copies: BTreeMap<Addr, (u8, [u64; 8])> = BTreeMap::new();
            let mut off = LINE_BYTES as usize;
            while let Some((e, next)) = decode(&seg_buf[..used], off, seq) {
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
}

impl Scheme for Lsm {
    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let txid = self.fresh_txid();
        let c = &mut self.cores[core];
        c.txid = txid;
        c.lines.clear();
        c.map.clear();
        now
    }

    fn store(&mut self, _ctx: &mut MemCtx, ev: Store, ext: &mut LineExt) -> Cycle {
        let Store {
            core,
            addr,
            new,
            in_tx,
            now,
            ..
        } = ev;
        let w = word_index(addr);
        if !in_tx {
            // Non-transactional word: goes through the log on write-back.
            ext.word_mask2 |= 1 << w;
            return now;
        }
        let c = &mut self.cores[core];
        ext.tx = true;
        ext.txid = c.txid;
        let line = line_of(addr);
        let i = match c.map.get(&line) {
            Some(&i) => i as usize,
            None => {
                c.lines.push((line, 0, [0; 8]));
                c.map.insert(line, (c.lines.len() - 1) as u32);
                c.lines.len() - 1
            }
        };
        c.lines[i].1 |= 1 << w;
        c.lines[i].2[w] = new;
        now
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        if self.cores[core].lines.is_empty() {
            self.stats.tx_read_only += 1;
            return now;
        }
        let lines = std::mem::take(&mut self.cores[core].lines);
        let txid = self.cores[core].txid;
        let bytes: u64 = lines.iter().map(|l| entry_bytes(l.1)).sum::<u64>() + ENTRY_HDR;
        if bytes + LINE_BYTES > self.g.segment_bytes {
            // A record never spans segments. Nothing is logged; the run
            // ends with this error after TxEnd.
            ctx.input_error(format!(
                "lsm.segment_bytes={} holds log records of at most {} bytes (a record never spans segments), but a transaction on core {core} needs {bytes} ({} modified lines); {}",
                self.g.segment_bytes,
                self.g.segment_bytes - LINE_BYTES,
                lines.len(),
                crate::schemes::raise_advice(PARAMS, "lsm.segment_bytes", bytes + LINE_BYTES)
            ));
            let c = &mut self.cores[core];
            c.lines = lines;
            c.lines.clear();
            c.map.clear();
            return now;
        }
        let (persisted, indexed) = self.commit_lines(ctx, &lines, txid, Purpose::Log, true, now);
        let c = &mut self.cores[core];
        c.lines = lines;
        c.lines.clear();
        c.map.clear();
        self.stats.tx_committed += 1;
        // The software runtime updates the index before TxEnd returns.
        indexed.max(persisted)
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
        if (self.index_base..self.index_base + INDEX_SPAN).contains(&line_addr) {
            // A skip-list node the walk's load missed in the LLC: DRAM. Node
            // contents are not modelled (zeros, see `instrument`).
            self.stats.index_llc_misses += 1;
            let done = ctx.dram.read(
                (line_addr - self.index_base) % CORE_SPAN,
                out,
                Purpose::Metadata,
                now,
            );
            out.fill(0);
            return (done, false);
        }
        self.stats.llc_misses += 1;
        // The software found the line's location with the walk it emitted
        // before this load (`instrument`); the lookup here is functional.
        let t = now;
        let mut done = t;
        let l = self
            .index
            .map
            .get(&line_addr)
            .map_or(LineLoc::default(), |&n| self.index.locs[n as usize]);
        if l.mask != 0xff {
            done = done.max(ctx.nvm.read(line_addr, out, Purpose::Demand, t));
            self.stats.miss_home_reads += 1;
        }
        if l.mask != 0 {
            self.stats.misses_with_log_data += 1;
            // Read each distinct log burst once (in parallel), take the
            // newest words from the bytes.
            let mut bursts = [u64::MAX; 8];
            let mut nb = 0;
            for w in 0..8 {
                if l.mask & (1 << w) != 0 && !bursts[..nb].contains(&line_of(l.loc[w])) {
                    bursts[nb] = line_of(l.loc[w]);
                    nb += 1;
                }
            }
            for &b in &bursts[..nb] {
                let mut buf = [0u8; 64];
                done = done.max(ctx.nvm.read(b, &mut buf, Purpose::Demand, t));
                for w in 0..8 {
                    if l.mask & (1 << w) != 0 && line_of(l.loc[w]) == b {
                        let o = (l.loc[w] - b) as usize;
                        write_word(
                            out,
                            w,
                            u64::from_le_bytes(buf[o..o + 8].try_into().unwrap()),
                        );
                    }
                }
            }
            self.stats.miss_log_bursts_read += nb as u64;
            ext.tx = true;
        }
        // Words of an in-flight transaction evicted before its TxEnd live in
        // its write set.
        for c in &self.cores {
            if let Some(&i) = c.map.get(&line_addr) {
                let (_, mask, words) = c.lines[i as usize];
                for (w, &v) in words.iter().enumerate() {
                    if mask & (1 << w) != 0 {
                        write_word(out, w, v);
                    }
                }
                ext.tx = true;
                ext.txid = c.txid;
            }
        }
        (done, false)
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            ext,
            now,
            ..
        } = ev;
        if (self.index_base..self.index_base + INDEX_SPAN).contains(&line_addr) {
            // Index lines are only loaded, never dirty; nothing to write.
            return now;
        }
        let logged = ext.tx || self.index.map.contains_key(&line_addr);
        if !logged {
            return ctx.nvm.write(line_addr, data, Purpose::WriteBack, now);
        }
        if ext.word_mask2 == 0 {
            // Transactional words are in the log or a write set: never home.
            self.stats.tx_writebacks_dropped += 1;
            return now;
        }
        // Non-transactional words of a logged line: an auto-committed record
        // keeps the log the newest copy.
        let mut words = [0u64; 8];
        for (w, v) in words.iter_mut().enumerate() {
            *v = read_word(data, w);
        }
        let txid = self.fresh_txid();
        self.stats.nontx_autocommits += 1;
        let (p, _) = self.commit_lines(
            ctx,
            &[(line_addr, ext.word_mask2, words)],
            txid,
            Purpose::Log,
            false,
            now,
        );
        p
    }

    /// LSNVMM is a software library: the program reaches persistent data
    /// through it, and its index walk is the program's own loads, which go
    /// through the CPU caches like any other. Before the first load of each
    /// line in a transaction the library walks the index for that line (one
    /// load per node read); later loads of the line reuse the translation
    /// (its read set), and lines the transaction wrote first are read from
    /// its write set. At the end, before TxEnd, the commit walks the index
    /// once per written line to update it (the node writes themselves are
    /// posted to DRAM in `tx_end`).
    fn instrument(&mut self, core: CoreId, ops: &[Op], out: &mut Vec<Op>) -> bool {
        self.seen.clear();
        self.written.clear();
        out.reserve(ops.len() * 4);
        // Loads emitted so far; `load_pos[k]` is where the k-th original
        // load landed, so an original dependency distance is renumbered
        // across the walk loads inserted between producer and consumer.
        let mut emitted: u32 = 0;
        self.load_pos.clear();
        for &op in ops {
            let mut op = op;
            match op {
                Op::Load { addr, dep, .. } if addr < self.home_limit => {
                    let line = line_of(addr);
                    let mut walked = false;
                    if let std::collections::hash_map::Entry::Vacant(v) = self.seen.entry(line) {
                        v.insert(false);
                        self.index.walk(line);
                        self.stats.read_walks += 1;
                        self.stats.read_walk_nodes += self.index.visited.len() as u64;
                        let n = self.emit_walk(core, out);
                        emitted += n;
                        walked = n > 0;
                    }
                    // The data's log location comes from the walk's last
                    // node: the load depends on it. Otherwise keep the
                    // program's own dependency, renumbered.
                    let dep = if walked {
                        1
                    } else if dep > 0 {
                        let k = self.load_pos.len();
                        let producer = self.load_pos.get(k.wrapping_sub(dep as usize));
                        producer.map_or(0, |&p| u8::try_from(emitted - p).unwrap_or(0))
                    } else {
                        0
                    };
                    if let Op::Load { dep: d, .. } = &mut op {
                        *d = dep;
                    }
                    self.load_pos.push(emitted);
                    emitted += 1;
                }
                Op::Load { .. } => {
                    self.load_pos.push(emitted);
                    emitted += 1;
                }
                Op::Store { addr, .. } if addr < self.home_limit => {
                    // Read then written lines are updated at commit too.
                    let w = self.seen.entry(line_of(addr)).or_insert(false);
                    if !*w {
                        *w = true;
                        self.written.push(line_of(addr));
                    }
                }
                _ => {}
            }
            out.push(op);
        }
        let written = std::mem::take(&mut self.written);
        for &line in &written {
            self.index.walk(line);
            self.stats.update_walks += 1;
            self.stats.update_walk_nodes += self.index.visited.len() as u64;
            let _ = self.emit_walk(core, out);
        }
        self.written = written;
        true
    }

    fn next_event_at(&self) -> Option<Cycle> {
        if self.gc_demand {
            Some(0)
        } else {
            Some(self.next_gc_at)
        }
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        if self.gc_demand {
            self.gc_demand = false;
            self.gc(ctx, now, GcKind::OnDemand);
        }
        if now >= self.next_gc_at {
            self.gc(ctx, now, GcKind::Periodic);
            self.next_gc_at = now + self.gc_period;
        }
        // Cleaning runs in the background: cores only see its traffic.
        None
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        self.gc(ctx, now, GcKind::Final)
    }

    fn background_kind(&self) -> &'static str {
        self.last_gc_kind
    }

    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        let mut line = line_of(addr);
        let end = addr + buf.len() as u64;
        while line < end {
            let mut l = [0u8; 64];
            self.logical_line(ctx, line, &mut l);
            for (i, &b) in l.iter().enumerate() {
                let a = line + i as u64;
                if a >= addr && a < end {
                    buf[(a - addr) as usize] = b;
                }
            }
            line += LINE_BYTES;
        }
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.stats;
        let div = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        vec![
            ("tx_committed", s.tx_committed as f64),
            ("tx_read_only", s.tx_read_only as f64),
            ("log_entries", s.log_entries as f64),
            ("log_words", s.log_words as f64),
            ("log_bytes_appended", s.log_bytes_appended as f64),
            (
                "log_bytes_per_tx",
                div(s.log_bytes_appended, s.tx_committed),
            ),
            ("commit_records", s.commit_records as f64),
            ("segments_opened", s.segments_opened as f64),
            ("segments_total", self.g.segments as f64),
            ("llc_misses", s.llc_misses as f64),
            ("misses_with_log_data", s.misses_with_log_data as f64),
            ("miss_log_bursts_read", s.miss_log_bursts_read as f64),
            ("miss_home_reads", s.miss_home_reads as f64),
            ("read_walks", s.read_walks as f64),
            (
                "index_nodes_visited_per_read",
                div(s.read_walk_nodes, s.read_walks),
            ),
            ("update_walks", s.update_walks as f64),
            (
                "index_nodes_visited_per_update",
                div(s.update_walk_nodes, s.update_walks),
            ),
            ("index_node_loads", s.index_node_loads as f64),
            ("index_llc_misses", s.index_llc_misses as f64),
            (
                "index_llc_misses_per_node_load",
                div(s.index_llc_misses, s.index_node_loads),
            ),
            ("gc_walk_nodes", s.gc_walk_nodes as f64),
            ("index_nodes", self.index.len() as f64),
            ("index_peak_nodes", s.index_peak_nodes as f64),
            ("index_nodes_inserted", s.index_nodes_inserted as f64),
            ("dram_index_reads", s.dram_index_reads as f64),
            ("dram_index_writes", s.dram_index_writes as f64),
            ("tx_writebacks_dropped", s.tx_writebacks_dropped as f64),
            ("nontx_autocommits", s.nontx_autocommits as f64),
            ("gc_runs_periodic", s.gc_runs_periodic as f64),
            ("gc_runs_on_demand", s.gc_runs_on_demand as f64),
            ("gc_runs_emergency", s.gc_runs_emergency as f64),
            ("gc_runs_final", s.gc_runs_final as f64),
            ("gc_compactions", s.gc_compactions as f64),
            ("gc_migrations_home", s.gc_migrations_home as f64),
            ("gc_segments_freed", s.gc_segments_freed as f64),
            ("gc_bytes_scanned", s.gc_bytes_scanned as f64),
            ("gc_words_copied", s.gc_words_copied as f64),
            ("gc_bytes_copied", s.gc_bytes_copied as f64),
            ("gc_home_lines_written", s.gc_home_lines_written as f64),
            ("gc_bytes_home", s.gc_bytes_home as f64),
            ("gc_cycles", s.gc_cycles as f64),
            ("emergency_stall_cycles", s.emergency_stall_cycles as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.stats = Stats::default();
    }
}

/// Recovery on the durable bytes alone: scan the live segments (header
/// magic, sequence >= the superblock's tail) in sequence order, replay the
/// data entries of every transaction whose commit record is valid into home
/// (newest wins), then retire the log by moving the tail past them.
/// Idempotent: until the tail moves, a second run replays the same values.
pub fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// Recovery as a resumable scan (recovery/scan.rs, one cursor: the live
/// log in sequence order). A word's home write is made when the first
/// committed transaction naming it is read and takes the value of every
/// later one (`ScanIo::rehome`), so recovery writes each word once with
/// its newest committed value, as a newest-wins map replayed at the end
/// would. The cursor marks after the segment headers, at the start of
/// each live segment and after each commit record, and reads each entry's
/// bytes exactly (no read-ahead), so an append at the log head touches
/// only where the scan stopped. Opening or freeing a segment and moving
/// the tail touch the headers or the superblock it read first: the scan
/// is then rebuilt.
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    Box::new(LsmScan {
        g: Geometry::new(p, layout),
        verify: p.str("lsm.mutant") != "ignore-checksum",
        bandwidth_gbps: p.f64("lsm.recovery_bandwidth_gbps"),
        started: false,
        live: Vec::new(),
        headers_read: 0,
        cur: 0,
        off: LINE_BYTES,
        done_bytes: 0,
        newest: FxHashMap::default(),
        entries: 0,
        txs: 0,
        discarded: 0,
        pending: Vec::new(),
        tail_off: LINE_BYTES,
    })
}

struct LsmScan {
    /// `Err` (a log region too small) is reported by the first resume.
    g: Result<Geometry>,
    verify: bool,
    bandwidth_gbps: f64,
    started: bool,
    /// Live segments (sequence, slot) in sequence order; segment headers
    /// read.
    live: Vec<(u64, usize)>,
    headers_read: u64,
    /// As of the last mark: the segment being read (index into `live`),
    /// the offset of its next entry, the bytes of the segments before it.
    cur: usize,
    off: u64,
    done_bytes: u64,
    /// Newest committed value of every word replayed.
    newest: FxHashMap<Addr, u64>,
    entries: u64,
    txs: u64,
    discarded: u64,
    /// Since the mark (recomputed by every resume): data entries of the
    /// transaction without a commit record yet, and where the scan stopped.
    pending: Vec<Entry>,
    tail_off: u64,
}

impl LsmScan {
    /// Decode the entry at `base + off` of a segment with sequence `seq`,
    /// reading exactly its bytes (as [`decode_with`] over the segment).
    fn read_entry(
        &self,
        io: &mut dyn ScanIo,
        base: Addr,
        off: u64,
        seq: u64,
        g: &Geometry,
    ) -> Option<(Entry, u64)> {
        let mut buf = [0u8; (ENTRY_HDR + 64) as usize];
        if off + ENTRY_HDR > g.segment_bytes {
            return None;
        }
        io.read_bytes(base + off, &mut buf[..ENTRY_HDR as usize]);
        let w0 = u64::from_le_bytes(buf[..8].try_into().unwrap());
        let mut len = ENTRY_HDR;
        if w0 >> 56 == KIND_DATA {
            let need = entry_bytes((w0 >> 48) as u8);
            if off + need <= g.segment_bytes {
                io.read_bytes(
                    base + off + ENTRY_HDR,
                    &mut buf[ENTRY_HDR as usize..need as usize],
                );
                len = need;
            }
        }
        decode_with(&buf[..len as usize], 0, seq, self.verify).map(|(e, n)| (e, off + n as u64))
    }
}

impl ResumableScan for LsmScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        let g = match &self.g {
            Ok(g) => *g,
            Err(e) => return Err(Error::input(e.to_string())),
        };
        if !self.started {
            let tail = io.read_u64(g.superblock);
            // Segments at or above the high-water mark were never used.
            let used = io.read_u64(g.superblock + 8).min(g.segments) as usize;
            for s in 0..used {
                let h = io.read_u64(g.seg_addr(s));
                if h >> 48 == SEG_MAGIC && (h & SEQ_MASK) >= tail {
                    self.live.push((h & SEQ_MASK, s));
                }
            }
            self.headers_read = used as u64;
            self.live.sort_unstable();
            self.started = true;
            io.mark();
        }
        self.pending.clear();
        while self.cur < self.live.len() {
            let (seq, s) = self.live[self.cur];
            let base = g.seg_addr(s);
            let mut off = self.off;
            while let Some((e, next)) = self.read_entry(io, base, off, seq, &g) {
                off = next;
                match e {
                    Entry::Data { .. } => self.pending.push(e),
                    Entry::Commit { entries: n, txid } => {
                        let ok = self.pending.len() as u64 == n
                            && self
                                .pending
                                .iter()
                                .all(|d| matches!(d, Entry::Data { txid: t, .. } if *t == txid));
                        if ok {
                            self.txs += 1;
                            for d in &self.pending {
                                if let Entry::Data {
                                    line, mask, data, ..
                                } = *d
                                {
                                    let mut k = 0;
                                    for w in 0..8 {
                                        if mask & (1 << w) != 0 {
                                            let (a, v) = (line + 8 * w as u64, data[k]);
                                            k += 1;
                                            match self.newest.entry(a) {
                                                std::collections::hash_map::Entry::Vacant(x) => {
                                                    x.insert(v);
                                                    io.home(a, &v.to_le_bytes());
                                                }
                                                std::collections::hash_map::Entry::Occupied(
                                                    mut x,
                                                ) => {
                                                    if *x.get() != v {
                                                        let was = x.insert(v);
                                                        io.rehome(
                                                            a,
                                                            &was.to_le_bytes(),
                                                            Some(&v.to_le_bytes()),
                                                        );
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        } else {
                            self.discarded += 1;
                        }
                        self.entries += self.pending.len() as u64 + 1;
                        self.pending.clear();
                        self.off = off;
                        io.mark();
                    }
                }
            }
            self.tail_off = off;
            if self.cur + 1 == self.live.len() {
                // The log head: an append continues it.
                return Ok(());
            }
            // The next live segment.
            self.entries += self.pending.len() as u64;
            if !self.pending.is_empty() {
                self.discarded += 1;
                self.pending.clear();
            }
            self.done_bytes += off;
            self.cur += 1;
            self.off = LINE_BYTES;
            self.tail_off = LINE_BYTES;
            io.mark();
        }
        Ok(())
    }

    /// Retire the log: the tail moves past the newest live segment.
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        if let (Some(&(max_seq, _)), Ok(g)) = (self.live.last(), &self.g) {
            out(g.superblock, &(max_seq + 1).to_le_bytes());
        }
    }

    fn report(&self, _p: &Params) -> RecoveryReport {
        let words = self.newest.len() as u64;
        let head_bytes = if self.cur < self.live.len() {
            self.tail_off
        } else {
            0
        };
        let bytes_read = 16 + 8 * self.headers_read + self.done_bytes + head_bytes;
        let bytes_written = 8 * words + 8 * u64::from(!self.live.is_empty());
        RecoveryReport {
            bytes_read,
            bytes_written,
            modeled_ns: (bytes_read + bytes_written) as f64 / self.bandwidth_gbps,
            details: vec![
                ("segments_scanned", self.live.len() as f64),
                (
                    "entries_parsed",
                    (self.entries + self.pending.len() as u64) as f64,
                ),
                ("tx_replayed", self.txs as f64),
                (
                    "tx_discarded",
                    (self.discarded + u64::from(!self.pending.is_empty())) as f64,
                ),
                ("words_replayed", words as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, RunSpec};
    use crate::mem::{MemRead, SparseImage};
    use crate::workloads;

    /// Small machine: small caches (evictions), a small log of 64 KiB
    /// segments and a short GC period so cleaning happens in short runs.
    fn spec(workload: &str, mode: &str, threads: usize, tx: u64) -> RunSpec {
        let mut s = RunSpec::new("lsm", workload).unwrap();
        s.threads = threads;
        s.tx = tx;
        s.seed = 11;
        let p = &mut s.params;
        p.set_str("nvm.capacity_bytes", "64MB").unwrap();
        p.set_str("lsm.log_region_share", "0.25").unwrap();
        p.set_str("lsm.segment_bytes", "65536").unwrap();
        // 5 us: several periods even in the fastest 160-tx run (vector
        // after the controller's time-bound fix).
        p.set_str("lsm.gc_period_ms", "0.005").unwrap();
        p.set_str("lsm.gc_mode", mode).unwrap();
        p.set_str("workload.initial_items", "64").unwrap();
        p.set_str("workload.tpcc_items", "1000").unwrap();
        p.set_str("workload.tpcc_customers_per_district", "30")
            .unwrap();
        p.set_str("cache.l1_size_bytes", "4096").unwrap();
        p.set_str("cache.l2_size_bytes", "8192").unwrap();
        p.set_str("cache.llc_size_bytes", "32768").unwrap();
        p.set_str("run.check_reads", "true").unwrap();
        s
    }

    fn stat(e: &Engine, key: &str) -> f64 {
        e.scheme
            .stats()
            .into_iter()
            .find(|(k, _)| *k == key)
            .unwrap()
            .1
    }

    #[test]
    fn every_workload_is_equivalent_after_finish_in_both_gc_modes() {
        let mut dropped = 0.0;
        for wl in workloads::REGISTRY {
            for mode in ["compact", "home"] {
                let mut e = Engine::new(spec(wl.name, mode, 2, 160)).unwrap();
                e.run(&mut |_| {})
                    .unwrap_or_else(|err| panic!("{}/{mode}: {err}", wl.name));
                assert!(stat(&e, "read_walks") > 0.0);
                assert!(stat(&e, "log_entries") > 0.0, "{}", wl.name);
                assert!(
                    stat(&e, "gc_runs_periodic") > 0.0,
                    "{}/{mode}: no periodic GC",
                    wl.name
                );
                dropped += stat(&e, "tx_writebacks_dropped");
                e.finish();
                assert_eq!(stat(&e, "index_nodes"), 0.0, "final GC empties the log");
                e.check_equivalence()
                    .unwrap_or_else(|m| panic!("{}/{mode}: {m}", wl.name));
                // Home itself (not just reads through the index) matches.
                let mut buf = [0u8; 64];
                for page in e.arch.page_numbers() {
                    let data = e.arch.page(page).unwrap();
                    for (i, c) in data.chunks(64).enumerate() {
                        e.ctx.nvm.peek(page * 4096 + i as u64 * 64, &mut buf);
                        assert_eq!(&buf[..], c, "{}/{mode}: home differs", wl.name);
                    }
                }
                e.check_invariants(e.ctx.nvm.media())
                    .unwrap_or_else(|m| panic!("{}/{mode}: {m}", wl.name));
            }
        }
        assert!(
            dropped > 0.0,
            "LLC evictions of logged lines never went home"
        );
    }

    #[test]
    fn compaction_cleans_segments_and_index_walks_are_logarithmic() {
        let mut s = spec("hashmap", "compact", 2, 600);
        s.params
            .set_str("lsm.gc_victim_utilization", "0.9")
            .unwrap();
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {}).unwrap();
        assert!(stat(&e, "gc_compactions") > 0.0);
        assert!(stat(&e, "gc_segments_freed") > 0.0);
        assert!(stat(&e, "gc_words_copied") > 0.0);
        // Mean read walk between log2(N) and a few times it (p = 1/2).
        let n = stat(&e, "index_peak_nodes");
        let walk = stat(&e, "index_nodes_visited_per_read");
        assert!(n > 64.0, "{n}");
        assert!(
            walk >= n.log2() * 0.5 && walk <= 4.0 * n.log2() + 4.0,
            "walk {walk}, N {n}"
        );
        assert!(e.metrics().dram_bytes_read > 0);
    }

    /// LSNVMM's index walk is the program's own loads: they go through the
    /// CPU caches, so with caches large enough for the index every node
    /// line misses the LLC at most once (repeated walks hit), and the
    /// scheme issues no uncached DRAM walk for a transaction.
    #[test]
    fn index_walks_are_loads_that_hit_in_the_cpu_caches() {
        let mut s = spec("hashmap", "compact", 2, 400);
        for (k, v) in [
            ("cache.l1_size_bytes", "32768"),
            ("cache.l2_size_bytes", "262144"),
            ("cache.llc_size_bytes", "2097152"),
            ("lsm.gc_period_ms", "1000"),
        ] {
            s.params.set_str(k, v).unwrap();
        }
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {}).unwrap();
        let loads = stat(&e, "index_node_loads");
        let misses = stat(&e, "index_llc_misses");
        let nodes = stat(&e, "index_nodes_inserted");
        assert!(stat(&e, "read_walks") > 0.0 && stat(&e, "update_walks") > 0.0);
        assert!(loads > 20.0 * nodes, "{loads} loads, {nodes} nodes");
        // Each node (and the head) misses at most once per core's alias.
        assert!(
            misses > 0.0 && misses <= 2.0 * (nodes + 1.0),
            "{misses}, {nodes} nodes"
        );
        assert_eq!(stat(&e, "dram_index_reads"), 0.0, "no uncached walk");
        // The walks are loads the core executed.
        assert!(e.metrics().loads as f64 >= loads);
        e.finish();
        e.check_equivalence().unwrap();
    }

    #[test]
    fn skiplist_walk_grows_logarithmically() {
        let mut s = SkipList::new(0.5, 3);
        let mut changed = Vec::new();
        let mut mean = |s: &mut SkipList, n: u64| {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            while (s.len() as u64) < n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (x >> 20) * 64;
                if s.walk(k).is_none() {
                    s.insert_after_walk(k, &mut changed);
                }
            }
            let keys: Vec<Addr> = s.keys[1..].to_vec();
            let mut total = 0;
            for &k in &keys {
                assert_eq!(s.walk(k).map(|n| s.keys[n as usize]), Some(k));
                total += s.visited.len();
            }
            total as f64 / keys.len() as f64
        };
        let small = mean(&mut s, 256);
        let big = mean(&mut s, 16384);
        // Pugh: about log2(N)/p + O(1) nodes per search for p = 1/2.
        assert!(small > 4.0 && small < 30.0, "{small}");
        assert!(big > small + 4.0 && big < 60.0, "{small} -> {big}");
        // Level order keeps level 0 sorted.
        let order = s.in_order();
        assert!(order
            .windows(2)
            .all(|w| s.keys[w[0] as usize] < s.keys[w[1] as usize]));
    }

    /// Entries decoded from the current log on the media, with their byte
    /// ranges: (start, end, is_commit, txid).
    fn log_entries(e: &Engine) -> Vec<(Addr, Addr, bool, u32)> {
        let g = Geometry::new(&e.params, &e.ctx.layout).unwrap();
        let mut out = Vec::new();
        let mut seg = vec![0u8; g.segment_bytes as usize];
        for s in 0..g.segments as usize {
            let base = g.seg_addr(s);
            let h = e.ctx.nvm.media().read_u64(base);
            if h >> 48 != SEG_MAGIC {
                continue;
            }
            e.ctx.nvm.peek(base, &mut seg);
            let mut off = 64;
            while let Some((en, next)) = decode(&seg, off, h & SEQ_MASK) {
                let (c, t) = match en {
                    Entry::Data { txid, .. } => (false, txid),
                    Entry::Commit { txid, .. } => (true, txid),
                };
                out.push((base + off as u64, base + next as u64, c, t));
                off = next;
            }
        }
        out
    }

    #[test]
    fn commit_record_persists_after_all_entries_of_its_transaction() {
        let mut s = spec("btree", "compact", 2, 120);
        s.params.set_str("lsm.gc_period_ms", "1000").unwrap();
        s.record_history = true;
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {}).unwrap();
        // Last persist event that wrote each byte of the log.
        let events = e.ctx.nvm.persist_log.events();
        let mut last: BTreeMap<Addr, usize> = BTreeMap::new();
        let mut first: BTreeMap<Addr, usize> = BTreeMap::new();
        for (i, ev) in events.iter().enumerate() {
            for b in ev.addr..ev.addr + u64::from(ev.len) {
                last.insert(b, i);
                first.entry(b).or_insert(i);
            }
        }
        let entries = log_entries(&e);
        let mut checked = 0;
        let mut data_last: BTreeMap<u32, usize> = BTreeMap::new();
        for &(a, b, commit, txid) in &entries {
            if commit {
                let c_first = (a..b).map(|x| first[&x]).min().unwrap();
                let d = data_last
                    .remove(&txid)
                    .expect("commit record follows its entries");
                assert!(
                    d <= c_first,
                    "tx {txid}: entry persisted at {d}, commit at {c_first}"
                );
                checked += 1;
            } else {
                let d = (a..b).map(|x| last[&x]).max().unwrap();
                let m = data_last.entry(txid).or_insert(0);
                *m = (*m).max(d);
            }
        }
        assert!(checked > 100, "{checked}");
        // TxEnd returned only after its commit record was durable: the
        // acknowledged prefix of the persist log recovers every acked tx
        // (checked in depth by the crash test); here, acks never precede
        // the first commit record.
        let first_commit = entries.iter().find(|x| x.2).unwrap();
        let c = first[&first_commit.0] as u64;
        let h = e.history.as_ref().unwrap();
        let min_ack = h
            .per_thread
            .iter()
            .flatten()
            .map(|t| t.ack_persist_seq)
            .min()
            .unwrap();
        assert!(min_ack > c);
    }

    /// Every crash point (clean and torn), with crashes inside recovery,
    /// through the generic crash oracle (crate::crash): per thread, the
    /// recovered region is the initial image plus the first p committed
    /// transactions for some p >= acknowledged, and the checker passes.
    fn crash_check(workload: &str, mode: &str, tx: u64, segment_bytes: &str) {
        let mut s = spec(workload, mode, 2, tx);
        s.params
            .set_str("lsm.segment_bytes", segment_bytes)
            .unwrap();
        s.params
            .set_str("lsm.gc_victim_utilization", "0.9")
            .unwrap();
        s.params.set_str("lsm.gc_period_ms", "0.001").unwrap();
        s.params.set_str("run.check_reads", "false").unwrap();
        // The run the oracle crashes must exercise cleaning.
        let mut probe = s.clone();
        probe.record_history = false;
        let mut e = Engine::new(probe).unwrap();
        e.run(&mut |_| {}).unwrap();
        assert!(stat(&e, "gc_runs_periodic") > 0.0);
        if mode == "compact" && segment_bytes == "4096" {
            assert!(stat(&e, "gc_compactions") > 0.0 && stat(&e, "gc_segments_freed") > 0.0);
        }
        let opts = crate::crash::CrashOptions {
            torn: true,
            recovery_crashes: 2,
            ..Default::default()
        };
        let r = crate::crash::crashtest(s, &opts, &mut |_, _| {}).unwrap();
        assert!(r.crash_points_tested > 100, "{workload}/{mode}");
        assert!(r.torn_points_tested > 0 && r.recovery_crashes_tested > 0);
        assert_eq!(
            r.violations,
            0,
            "{workload}/{mode}: {:?}",
            r.first_violation.map(|v| (v.message, v.replay))
        );
    }

    #[test]
    fn crash_at_sampled_persist_points_recovers_committed_prefix_compact() {
        crash_check("hashmap", "compact", 60, "4096");
        crash_check("tpcc", "compact", 16, "65536");
    }

    #[test]
    fn crash_at_sampled_persist_points_recovers_committed_prefix_home() {
        crash_check("btree", "home", 40, "4096");
        crash_check("ycsb", "home", 30, "65536");
    }

    #[test]
    fn recovery_ignores_torn_and_uncommitted_records() {
        let p = Params::defaults(&[PARAMS]);
        let mut p = p;
        p.set_str("nvm.capacity_bytes", "64MB").unwrap();
        p.set_str("lsm.log_region_share", "0.25").unwrap();
        p.set_str("lsm.segment_bytes", "65536").unwrap();
        let layout = Layout::new(64 << 20, reserved_bytes(&p), 1).unwrap();
        let g = Geometry::new(&p, &layout).unwrap();
        let mut img = SparseImage::new();
        img.write_u64(g.seg_addr(3), SEG_MAGIC << 48 | 7);
        img.write_u64(g.superblock + 8, 4); // high-water mark
        let mut rec = Vec::new();
        let mut words = [0u64; 8];
        words[1] = 0xaa;
        encode_data(&mut rec, 0x1000, 0b10, &words, 5, 7);
        encode_commit(&mut rec, 1, 5, 7);
        words[1] = 0xbb;
        encode_data(&mut rec, 0x1000, 0b10, &words, 6, 7); // never committed
        img.write_bytes(g.seg_addr(3) + 64, &rec);
        // A stale record of an older incarnation after the valid ones.
        let mut stale = Vec::new();
        words[1] = 0xcc;
        encode_data(&mut stale, 0x1000, 0b10, &words, 9, 2);
        encode_commit(&mut stale, 1, 9, 2);
        img.write_bytes(g.seg_addr(3) + 64 + rec.len() as u64, &stale);
        let mut torn = img.clone();
        // Torn commit record of tx 5: nothing replays.
        torn.write_u64(g.seg_addr(3) + 64 + 32 + 16, 0);
        let r = recover(&mut img, &p, &layout).unwrap();
        assert_eq!(img.read_u64(0x1008), 0xaa);
        assert_eq!(r.details[2], ("tx_replayed", 1.0));
        assert_eq!(img.read_u64(g.superblock), 8, "log retired past seq 7");
        recover(&mut torn, &p, &layout).unwrap();
        assert_eq!(torn.read_u64(0x1008), 0);
        // Retired log: a second recovery changes nothing.
        img.write_u64(0x1008, 0x55);
        recover(&mut img, &p, &layout).unwrap();
        assert_eq!(img.read_u64(0x1008), 0x55);
    }
}
