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
//!
//! Files: `layout` (geometry and the bit-exact log format), `log`
//! (segments and appending records), `index` (the DRAM skip list and its
//! timed walks), `cleaning` (GC: compaction and migrate-home),
//! `recovery` (the log replay as a resumable scan).

mod cleaning;
mod index;
mod layout;
mod log;
mod recovery;
#[cfg(test)]
mod tests;

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params, MC};
use crate::error::Result;
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, Scheme, SchemeInfo, SchemeStats, Store, Writeback,
};
use crate::types::{
    line_of, read_word, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose, LINE_BYTES,
};
use crate::workloads::Op;
use index::{index_base, LineLoc, SkipList, CORE_SPAN, INDEX_SPAN, MAX_LEVEL};
pub use layout::Geometry;
use layout::{entry_bytes, ENTRY_HDR};
use log::{FreeSegs, Seg};
use recovery::new_scan;
pub use recovery::recover;
use rustc_hash::FxHashMap;

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
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::HOOP),
        tx: 300_000,
        reaches: "log cleaning every 10 ms (25 M cycles), HOOP's GC period, which runs twice in this length on btree",
        needs: None,
    },
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

fn reserved_bytes(p: &Params) -> u64 {
    let cap = p.u64("nvm.capacity_bytes");
    let seg = p.u64("lsm.segment_bytes");
    let want = (cap as f64 * p.f64("lsm.log_region_share")).ceil() as u64;
    // One extra slot for the superblock.
    (want.div_ceil(seg) + 1) * seg
}

/// A core's in-flight transaction: its write set, line by line in first
/// store order.
#[derive(Default)]
struct TxBuf {
    txid: u32,
    lines: Vec<(Addr, u8, [u64; 8])>,
    map: FxHashMap<Addr, u32>,
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

/// Why the log cleaner runs (the log and the cleaner both start runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GcKind {
    Periodic,
    OnDemand,
    Emergency,
    Final,
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

    fn recovery_paths(&self) -> &'static [&'static str] {
        // The cleaner's two forms (lsm.gc_mode): compacting live entries
        // into new segments, or copying them home (also the end of a run).
        if self.compact {
            &["gc-compact", "gc-home"]
        } else {
            &["gc-home"]
        }
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
