//! LSM: log-structured NVM after LSNVMM (Hu et al., USENIX ATC 2017), as
//! the HOOP paper's baseline (§II-B, §IV-A, BASELINES.md).
//!
//! - Every line a transaction writes is appended to a per-core log in NVM
//!   (never written in place): chunks of one metadata line {magic, seq,
//!   txid/count/flags, checksum, 7 packed 36-bit home line numbers} and up
//!   to seven data lines. A transaction's last chunk carries the commit flag
//!   and its total entry count; TxEnd returns when it is persisted.
//! - An index in DRAM (a skip list in LSNVMM and in the HOOP paper's LSM)
//!   maps home lines to their newest committed log entry. Every LLC miss
//!   walks it: ceil(log2(N+1)) dependent DRAM node reads for N entries;
//!   every committed line updates it (a walk plus a node write).
//! - Garbage collection runs every `gc_period_ms` (HOOP's period, §IV-A):
//!   from the log head it cleans segments that are mostly dead (or all
//!   while the log is over half full), copying live entries to the tail in
//!   GC chunks, then advances the head (log header). It never passes the
//!   first chunk of a running transaction.
//! - Recovery: scan each log from its head, apply GC chunks and the entries
//!   of transactions whose commit chunk is valid, in log order, i.e. rebuild
//!   the index; the simulator materialises it at the home addresses (the
//!   oracle compares home images) and empties the log.

use super::undo::{csum, header_line, line_word, log_stride, owner_of, recovery_ns, MAX_CORES};
use super::{Durability, Layout, MemCtx, RecoveryReport, Scheme, SchemeInfo, SchemeStats};
use crate::cache::hierarchy::WritebackCause;
use crate::cache::LineExt;
use crate::config::{Check, DefaultValue, ParamSpec, Params};
use crate::error::Result;
use crate::mem::MemWrite;
use crate::types::{line_of, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose};
use rustc_hash::FxHashMap;

pub static PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "lsm.log_bytes_per_core",
        default: DefaultValue::Int(64 << 20),
        unit: "bytes",
        check: Check::PowerOfTwo(1 << 20, 1 << 34),
        source: "modelling choice, see docs/MODEL.md (all of a thread's written data lives in its log; sparse, so unused space costs nothing)",
        doc: "per-core log capacity (512 B chunks: 1 metadata + 7 data lines)",
    },
    ParamSpec {
        key: "lsm.segment_bytes",
        default: DefaultValue::Int(64 << 10),
        unit: "bytes",
        check: Check::PowerOfTwo(4096, 1 << 30),
        source: "modelling choice, see docs/MODEL.md (GC cleaning unit)",
        doc: "log segment size; GC frees whole segments",
    },
    ParamSpec {
        key: "lsm.gc_period_ms",
        default: DefaultValue::Float(10.0),
        unit: "ms",
        check: Check::Range(0.001, 10000.0),
        source: "HOOP paper §IV-A: LSM's GC runs at the same frequency as HOOP's (10 ms, §III-H)",
        doc: "period of log garbage collection",
    },
    ParamSpec {
        key: "lsm.gc_live_max",
        default: DefaultValue::Float(0.5),
        unit: "fraction",
        check: Check::Range(0.0, 1.0),
        source: "modelling choice, see docs/MODEL.md (greedy cleaning of mostly-dead segments, as log-structured file systems)",
        doc: "a head segment is cleaned when at most this share of its entries is live (or while the log is over half full)",
    },
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "lsm",
    description: "log-structured NVM after LSNVMM: all writes appended to a log, DRAM skip-list index walked on every miss, periodic GC",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
};

const CHUNK_BYTES: u64 = 512;
const CHUNK_LINES: usize = 7;
const HDR_MAGIC: u64 = 0x4c53_4d48_4452_5f31; // "LSMHDR_1"
const CHUNK_MAGIC: u64 = 0x4c53_4d43_484b_5f31; // "LSMCHK_1"
const F_LAST: u64 = 1;
const F_GC: u64 = 2;

fn per_core_bytes(p: &Params) -> u64 {
    CHUNK_BYTES + p.u64("lsm.log_bytes_per_core")
}

fn reserved_bytes(p: &Params) -> u64 {
    MAX_CORES * log_stride(p, per_core_bytes(p))
}

#[derive(Clone, Copy, Debug)]
struct Ring {
    base: Addr,
    stride: u64,
    slots: u64,
    seg_chunks: u64,
}

impl Ring {
    fn new(p: &Params, layout: &Layout) -> Self {
        let log = p.u64("lsm.log_bytes_per_core");
        Ring {
            base: layout.reserved_base,
            stride: log_stride(p, per_core_bytes(p)),
            slots: log / CHUNK_BYTES,
            seg_chunks: (p.u64("lsm.segment_bytes") / CHUNK_BYTES).clamp(1, log / CHUNK_BYTES),
        }
    }
    fn header_addr(&self, core: usize) -> Addr {
        self.base + core as u64 * self.stride
    }
    fn chunk_addr(&self, core: usize, seq: u64) -> Addr {
        self.header_addr(core) + CHUNK_BYTES + (seq % self.slots) * CHUNK_BYTES
    }
    fn entry_addr(&self, core: usize, loc: Loc) -> Addr {
        self.chunk_addr(core, loc.seq) + 64 + loc.idx as u64 * 64
    }
    fn header(head: u64) -> LineData {
        let w = [HDR_MAGIC, head];
        header_line(&[w[0], w[1], csum(&w, &[])])
    }
}

/// Pack seven 36-bit home line numbers into four words.
fn pack_homes(homes: &[Addr]) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (i, &h) in homes.iter().enumerate() {
        let v = (h / 64) & ((1 << 36) - 1);
        let bit = i * 36;
        w[bit / 64] |= v << (bit % 64);
        if bit % 64 + 36 > 64 {
            w[bit / 64 + 1] |= v >> (64 - bit % 64);
        }
    }
    w
}

fn unpack_home(w: &[u64; 4], i: usize) -> Addr {
    let bit = i * 36;
    let mut v = w[bit / 64] >> (bit % 64);
    if bit % 64 + 36 > 64 {
        v |= w[bit / 64 + 1] << (64 - bit % 64);
    }
    (v & ((1 << 36) - 1)) * 64
}

fn meta_word(txid: u32, n: usize, flags: u64, total: u64) -> u64 {
    txid as u64 | (n as u64) << 32 | flags << 36 | total << 40
}

/// A chunk header line; the checksum covers the header words and the data.
fn chunk_header(seq: u64, meta: u64, homes: &[u64; 4], data: &[u8]) -> LineData {
    let w = [
        CHUNK_MAGIC,
        seq,
        meta,
        homes[0],
        homes[1],
        homes[2],
        homes[3],
    ];
    let c = csum(&w, data);
    header_line(&[w[0], w[1], w[2], c, w[3], w[4], w[5], w[6]])
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Loc {
    seq: u64,
    idx: u8,
}

struct TxLine {
    addr: Addr,
    data: LineData,
    /// Changed since it was last handed to the log.
    dirty: bool,
    /// Its newest entry in this transaction (None while only buffered).
    loc: Option<Loc>,
    /// Waiting in the controller's chunk buffer.
    buffered: bool,
}

#[derive(Default)]
struct CoreState {
    txid: u32,
    in_tx: bool,
    lines: Vec<TxLine>,
    index_tx: FxHashMap<Addr, usize>,
    /// Indices of lines in the chunk being assembled.
    chunk: Vec<usize>,
    tx_entries: u64,
    tx_first_seq: Option<u64>,
    head: u64,
    tail: u64,
    /// Committed index: home line -> newest entry.
    index: FxHashMap<Addr, Loc>,
    /// Live entries per segment (ring of segments).
    live: Vec<u32>,
}

struct Lsm {
    ring: Ring,
    cores: Vec<CoreState>,
    next_txid: u32,
    period: Cycle,
    next_gc: Cycle,
    live_max: f64,
    node_buf: LineData,
    scratch: Vec<(Addr, Loc)>,
    s_chunks: u64,
    s_entries: u64,
    s_reads: u64,
    s_walk_nodes: u64,
    s_index_updates: u64,
    s_gc_runs: u64,
    s_gc_segments: u64,
    s_gc_copied: u64,
    s_forced_gc: u64,
    s_dropped_clean: u64,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    let ring = Ring::new(p, layout);
    let period = ((p.f64("lsm.gc_period_ms") * 1e6 * p.f64("cpu.freq_ghz")) as Cycle).max(1);
    let nseg = ring.slots.div_ceil(ring.seg_chunks) as usize;
    Ok(Box::new(Lsm {
        ring,
        cores: (0..layout.threads)
            .map(|_| CoreState {
                live: vec![0; nseg],
                ..Default::default()
            })
            .collect(),
        next_txid: 1,
        period,
        next_gc: period,
        live_max: p.f64("lsm.gc_live_max"),
        node_buf: [0; 64],
        scratch: Vec::new(),
        s_chunks: 0,
        s_entries: 0,
        s_reads: 0,
        s_walk_nodes: 0,
        s_index_updates: 0,
        s_gc_runs: 0,
        s_gc_segments: 0,
        s_gc_copied: 0,
        s_forced_gc: 0,
        s_dropped_clean: 0,
    }))
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    let ring = Ring::new(p, layout);
    let (mut read, mut written, mut txs, mut entries) = (0u64, 0u64, 0u64, 0u64);
    let mut cur: Vec<(Addr, LineData)> = Vec::new();
    let mut data = vec![0u8; CHUNK_LINES * 64];
    for c in 0..layout.threads {
        let h = img.read_line(ring.header_addr(c));
        read += 1;
        let hw = [line_word(&h, 0), line_word(&h, 1)];
        let head = if hw[0] == HDR_MAGIC && line_word(&h, 2) == csum(&hw, &[]) {
            hw[1]
        } else {
            0
        };
        cur.clear();
        let mut cur_tx = None;
        let mut cur_from_head = false;
        let mut seen_tx = false;
        let mut seq = head;
        while seq < head + ring.slots {
            let a = ring.chunk_addr(c, seq);
            let m = img.read_line(a);
            read += 1;
            let meta = line_word(&m, 2);
            let n = ((meta >> 32) & 0xf) as usize;
            if line_word(&m, 0) != CHUNK_MAGIC || line_word(&m, 1) != seq || n > CHUNK_LINES {
                break;
            }
            let homes = [
                line_word(&m, 4),
                line_word(&m, 5),
                line_word(&m, 6),
                line_word(&m, 7),
            ];
            img.read_bytes(a + 64, &mut data[..n * 64]);
            read += n as u64;
            let w = [
                CHUNK_MAGIC,
                seq,
                meta,
                homes[0],
                homes[1],
                homes[2],
                homes[3],
            ];
            if line_word(&m, 3) != csum(&w, &data[..n * 64]) {
                break;
            }
            let flags = (meta >> 36) & 0xf;
            let txid = meta & 0xffff_ffff;
            let entry = |i: usize| -> (Addr, LineData) {
                (
                    unpack_home(&homes, i),
                    data[i * 64..i * 64 + 64].try_into().unwrap(),
                )
            };
            if flags & F_GC != 0 {
                for i in 0..n {
                    let (home, d) = entry(i);
                    img.write_bytes(home, &d);
                    written += 1;
                }
            } else {
                if cur_tx != Some(txid) {
                    cur.clear();
                    cur_tx = Some(txid);
                    // The first transaction after the head (GC chunks
                    // aside) may have begun before it.
                    cur_from_head = !seen_tx;
                    seen_tx = true;
                }
                cur.extend((0..n).map(entry));
                if flags & F_LAST != 0 {
                    // A transaction whose first chunks lie before the head
                    // was committed before GC cleaned them (GC never passes
                    // a running transaction) and their live entries were
                    // copied; apply the rest.
                    let total = meta >> 40;
                    if cur.len() as u64 == total || (cur_from_head && (cur.len() as u64) < total) {
                        for (home, d) in &cur {
                            img.write_bytes(*home, d);
                            written += 1;
                        }
                        entries += cur.len() as u64;
                        txs += 1;
                    }
                    cur.clear();
                    cur_tx = None;
                }
            }
            seq += 1;
        }
        // Everything valid is now materialised: the log is empty.
        img.write_bytes(ring.header_addr(c), &Ring::header(seq));
        written += 1;
    }
    Ok(RecoveryReport {
        bytes_read: read * 64,
        bytes_written: written * 64,
        modeled_ns: recovery_ns(p, read, written),
        details: vec![
            ("transactions_replayed", txs as f64),
            ("index_entries_rebuilt", entries as f64),
        ],
    })
}

impl Lsm {
    fn seg(&self, seq: u64) -> usize {
        ((seq / self.ring.seg_chunks) % self.cores[0].live.len() as u64) as usize
    }

    /// Walk the DRAM skip list for `line` of `core`: one dependent node
    /// read per level; returns when the walk ends.
    fn walk(&mut self, ctx: &mut MemCtx, core: usize, line: Addr, now: Cycle) -> Cycle {
        let n = self.cores[core].index.len() as u64;
        let levels = 64 - n.leading_zeros() as u64 + 1; // ceil(log2(n+1)) + 1
        let nodes = n.max(1);
        let mut t = now;
        for lvl in 0..levels {
            // Node addresses: a deterministic spread over the index's nodes.
            let h = (line ^ lvl.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (core as u64) << 56)
                .wrapping_mul(0xff51_afd7_ed55_8ccd);
            let node = ((core as u64) << 32) + (h % nodes) * 64;
            t = ctx
                .dram
                .read(node, &mut self.node_buf, Purpose::Metadata, t);
        }
        self.s_walk_nodes += levels;
        t
    }

    fn kill(&mut self, core: usize, loc: Loc) {
        let s = self.seg(loc.seq);
        let c = &mut self.cores[core];
        c.live[s] = c.live[s].saturating_sub(1);
    }

    /// Make room for `need` chunks, garbage-collecting synchronously.
    fn reserve(&mut self, ctx: &mut MemCtx, core: usize, need: u64, now: Cycle) -> Cycle {
        // One segment stays free so that GC can copy live entries.
        let ring = self.ring;
        let room = move |c: &CoreState| c.tail + need - c.head + ring.seg_chunks <= ring.slots;
        if room(&self.cores[core]) {
            return now;
        }
        self.s_forced_gc += 1;
        let t = self.gc_core(ctx, core, now, true);
        assert!(
            room(&self.cores[core]),
            "the LSM log of core {core} is full of live data; raise lsm.log_bytes_per_core"
        );
        t
    }

    /// Write one chunk of `core`'s transaction (or of GC copies).
    fn write_chunk(
        &mut self,
        ctx: &mut MemCtx,
        core: usize,
        items: &[(Addr, LineData)],
        meta: u64,
        gc: bool,
        now: Cycle,
    ) -> (Cycle, u64) {
        let t = if gc {
            now
        } else {
            self.reserve(ctx, core, 1, now)
        };
        let c = &mut self.cores[core];
        let seq = c.tail;
        c.tail += 1;
        let mut data = [0u8; CHUNK_LINES * 64];
        let mut homes = [0u64; CHUNK_LINES];
        for (i, (h, d)) in items.iter().enumerate() {
            data[i * 64..i * 64 + 64].copy_from_slice(d);
            homes[i] = *h;
        }
        let n = items.len();
        let packed = pack_homes(&homes[..n]);
        let hdr = chunk_header(seq, meta, &packed, &data[..n * 64]);
        let a = self.ring.chunk_addr(core, seq);
        let (pd, pm) = if gc {
            (Purpose::Gc, Purpose::Gc)
        } else {
            (Purpose::Log, Purpose::Metadata)
        };
        let mut done = t;
        if n > 0 {
            done = ctx.nvm.write(a + 64, &data[..n * 64], pd, t);
        }
        done = done.max(ctx.nvm.write(a, &hdr, pm, t));
        let s = self.seg(seq);
        self.cores[core].live[s] += n as u32;
        if !gc {
            self.s_chunks += 1;
            self.s_entries += n as u64;
        }
        (done, seq)
    }

    /// Append the buffered lines of the running transaction as a chunk.
    fn flush_chunk(&mut self, ctx: &mut MemCtx, core: usize, last: bool, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        let mut items = [(0u64, [0u8; 64]); CHUNK_LINES];
        let n = c.chunk.len();
        for (k, &i) in c.chunk.iter().enumerate() {
            items[k] = (c.lines[i].addr, c.lines[i].data);
        }
        c.tx_entries += n as u64;
        let meta = meta_word(c.txid, n, if last { F_LAST } else { 0 }, c.tx_entries);
        let (done, seq) = self.write_chunk(ctx, core, &items[..n], meta, false, now);
        let c = &mut self.cores[core];
        c.tx_first_seq.get_or_insert(seq);
        let chunk = std::mem::take(&mut c.chunk);
        let mut dead = [None; CHUNK_LINES];
        for (k, &i) in chunk.iter().enumerate() {
            let tl = &mut c.lines[i];
            dead[k] = tl.loc.replace(Loc { seq, idx: k as u8 });
            tl.buffered = false;
        }
        c.chunk = chunk;
        c.chunk.clear();
        for l in dead.into_iter().flatten() {
            self.kill(core, l);
        }
        done
    }

    /// Hand line `i` to the controller's chunk buffer.
    fn enqueue(&mut self, ctx: &mut MemCtx, core: usize, i: usize, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.lines[i].dirty = false;
        if !c.lines[i].buffered {
            c.lines[i].buffered = true;
            c.chunk.push(i);
        }
        if c.chunk.len() == CHUNK_LINES {
            return self.flush_chunk(ctx, core, false, now);
        }
        now
    }

    /// Clean head segments of `core` (all reclaimable ones if `forced`).
    fn gc_core(&mut self, ctx: &mut MemCtx, core: usize, now: Cycle, forced: bool) -> Cycle {
        let ring = self.ring;
        let mut t = now;
        let mut cleaned = false;
        loop {
            let c = &self.cores[core];
            let seg_start = c.head;
            let seg_end = (seg_start / ring.seg_chunks + 1) * ring.seg_chunks;
            let limit = c.tx_first_seq.unwrap_or(c.tail).min(c.tail);
            if seg_end > limit {
                break;
            }
            let live = c.live[self.seg(seg_start)] as f64;
            let cap = (ring.seg_chunks * CHUNK_LINES as u64) as f64;
            let full = (c.tail - c.head) * 2 > ring.slots;
            if !(forced || full || live <= self.live_max * cap) {
                break;
            }
            // Copy the live entries (those the index still points at).
            self.scratch.clear();
            let c = &self.cores[core];
            self.scratch.extend(
                c.index
                    .iter()
                    .filter(|(_, l)| l.seq >= seg_start && l.seq < seg_end)
                    .map(|(&h, &l)| (h, l)),
            );
            self.scratch
                .sort_unstable_by_key(|x| x.1.seq * 8 + x.1.idx as u64);
            // The cleaner reads every chunk header of the segment.
            let mut buf = [0u8; 64];
            for seq in seg_start..seg_end {
                t = ctx
                    .nvm
                    .read(ring.chunk_addr(core, seq), &mut buf, Purpose::Gc, t);
            }
            let moves = std::mem::take(&mut self.scratch);
            for group in moves.chunks(CHUNK_LINES) {
                let mut items = [(0u64, [0u8; 64]); CHUNK_LINES];
                for (k, &(home, loc)) in group.iter().enumerate() {
                    let mut d = [0u8; 64];
                    t = ctx
                        .nvm
                        .read(ring.entry_addr(core, loc), &mut d, Purpose::Gc, t);
                    items[k] = (home, d);
                }
                let meta = meta_word(0, group.len(), F_GC | F_LAST, group.len() as u64);
                // The segment being cleaned is not reclaimed yet, so the
                // copy goes to the tail without recursion into GC.
                let (done, seq) = self.write_chunk_gc(ctx, core, &items[..group.len()], meta, t);
                t = done;
                for (k, &(home, _)) in group.iter().enumerate() {
                    self.cores[core]
                        .index
                        .insert(home, Loc { seq, idx: k as u8 });
                }
                self.s_gc_copied += group.len() as u64;
            }
            self.scratch = moves;
            let s = self.seg(seg_start);
            let c = &mut self.cores[core];
            c.live[s] = 0;
            c.head = seg_end;
            self.s_gc_segments += 1;
            cleaned = true;
        }
        if cleaned {
            let head = self.cores[core].head;
            t = ctx.nvm.write(
                ring.header_addr(core),
                &Ring::header(head),
                Purpose::Metadata,
                t,
            );
        }
        t
    }

    /// GC copies: the log must have room (GC needs one free segment).
    fn write_chunk_gc(
        &mut self,
        ctx: &mut MemCtx,
        core: usize,
        items: &[(Addr, LineData)],
        meta: u64,
        now: Cycle,
    ) -> (Cycle, u64) {
        let c = &self.cores[core];
        assert!(
            c.tail + 1 - c.head <= self.ring.slots,
            "the LSM log of core {core} has no room for GC; raise lsm.log_bytes_per_core"
        );
        self.write_chunk(ctx, core, items, meta, true, now)
    }
}

impl Scheme for Lsm {
    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let c = &mut self.cores[core];
        c.txid = self.next_txid;
        self.next_txid += 1;
        c.in_tx = true;
        c.lines.clear();
        c.index_tx.clear();
        c.chunk.clear();
        c.tx_entries = 0;
        c.tx_first_seq = None;
        now
    }

    fn store(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        addr: Addr,
        _old: u64,
        new: u64,
        in_tx: bool,
        ext: &mut LineExt,
        now: Cycle,
    ) -> Cycle {
        if !in_tx {
            return now;
        }
        let line = line_of(addr);
        let ring = self.ring;
        let c = &mut self.cores[core];
        ext.tx = true;
        ext.txid = c.txid;
        ext.word_mask |= 1 << word_index(addr);
        let i = match c.index_tx.get(&line) {
            Some(&i) => i,
            None => {
                let mut base = [0u8; 64];
                match c.index.get(&line) {
                    Some(&loc) => ctx.nvm.peek(ring.entry_addr(core, loc), &mut base),
                    None => ctx.nvm.peek(line, &mut base),
                }
                c.index_tx.insert(line, c.lines.len());
                c.lines.push(TxLine {
                    addr: line,
                    data: base,
                    dirty: false,
                    loc: None,
                    buffered: false,
                });
                c.lines.len() - 1
            }
        };
        let tl = &mut c.lines[i];
        write_word(&mut tl.data, word_index(addr), new);
        tl.dirty = true;
        now
    }

    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut LineExt,
    ) -> (Cycle, bool) {
        let owner = owner_of(&ctx.layout, line_addr);
        self.s_reads += 1;
        let t = self.walk(ctx, owner, line_addr, now);
        let _ = core;
        let c = &self.cores[owner];
        if c.in_tx {
            if let Some(&i) = c.index_tx.get(&line_addr) {
                let tl = &c.lines[i];
                if !tl.dirty {
                    if tl.buffered {
                        *out = tl.data; // still in the controller's chunk buffer
                        return (t + 1, false);
                    }
                    if let Some(loc) = tl.loc {
                        let a = self.ring.entry_addr(owner, loc);
                        return (ctx.nvm.read(a, out, Purpose::Demand, t), false);
                    }
                }
            }
        }
        let a = match c.index.get(&line_addr) {
            Some(&loc) => self.ring.entry_addr(owner, loc),
            None => line_addr,
        };
        (ctx.nvm.read(a, out, Purpose::Demand, t), false)
    }

    fn writeback(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        data: &LineData,
        ext: &LineExt,
        _cause: WritebackCause,
        now: Cycle,
    ) -> Cycle {
        let owner = owner_of(&ctx.layout, line_addr);
        if ext.txid == 0 {
            // Not transactional: in place, and the index must not shadow it.
            if let Some(l) = self.cores[owner].index.remove(&line_addr) {
                self.kill(owner, l);
            }
            return ctx.nvm.write(line_addr, data, Purpose::WriteBack, now);
        }
        let c = &mut self.cores[owner];
        if c.in_tx && ext.txid == c.txid {
            let i = c.index_tx[&line_addr];
            c.lines[i].data = *data;
            return self.enqueue(ctx, owner, i, now);
        }
        // Its committed version is in the log already.
        self.s_dropped_clean += 1;
        now
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].in_tx = false;
        let n = self.cores[core].lines.len();
        if n == 0 {
            return now;
        }
        let mut t = now;
        for i in 0..n {
            if self.cores[core].lines[i].dirty {
                t = t.max(self.enqueue(ctx, core, i, now));
            }
        }
        // The commit chunk (possibly without data lines).
        let done = t.max(self.flush_chunk(ctx, core, true, t));
        // Index update: a walk and a node write per committed line.
        let mut ti = done;
        for i in 0..n {
            let (addr, loc) = {
                let tl = &self.cores[core].lines[i];
                (tl.addr, tl.loc.expect("every line has an entry at commit"))
            };
            ti = self.walk(ctx, core, addr, ti);
            ti = ctx.dram.write(
                ((core as u64) << 32) + (addr / 64 % 4096) * 64,
                &[0u8; 64],
                Purpose::Metadata,
                ti,
            );
            if let Some(old) = self.cores[core].index.insert(addr, loc) {
                self.kill(core, old);
            }
            self.s_index_updates += 1;
        }
        self.cores[core].tx_first_seq = None;
        ti
    }

    fn next_event_at(&self) -> Option<Cycle> {
        Some(self.next_gc)
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        self.s_gc_runs += 1;
        for core in 0..self.cores.len() {
            self.gc_core(ctx, core, now, false);
        }
        self.next_gc = now + self.period;
        None
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        // Materialise every indexed line at home and empty the logs.
        let mut t = now;
        for core in 0..self.cores.len() {
            self.scratch.clear();
            self.scratch
                .extend(self.cores[core].index.iter().map(|(&h, &l)| (h, l)));
            self.scratch.sort_unstable_by_key(|x| x.0);
            let mut d = [0u8; 64];
            for &(home, loc) in &self.scratch {
                let r = ctx
                    .nvm
                    .read(self.ring.entry_addr(core, loc), &mut d, Purpose::Gc, now);
                t = t.max(ctx.nvm.write(home, &d, Purpose::Gc, r));
            }
            let c = &mut self.cores[core];
            c.index.clear();
            c.live.iter_mut().for_each(|x| *x = 0);
            c.head = c.tail;
            t = t.max(ctx.nvm.write(
                self.ring.header_addr(core),
                &Ring::header(c.tail),
                Purpose::Metadata,
                t,
            ));
        }
        t
    }

    fn stats(&self) -> SchemeStats {
        vec![
            ("log_chunks", self.s_chunks as f64),
            ("log_entries", self.s_entries as f64),
            (
                "log_bytes",
                (self.s_chunks * 64 + self.s_entries * 64) as f64,
            ),
            ("index_walks", (self.s_reads + self.s_index_updates) as f64),
            ("index_walk_nodes", self.s_walk_nodes as f64),
            (
                "index_walk_nodes_per_walk",
                self.s_walk_nodes as f64 / (self.s_reads + self.s_index_updates).max(1) as f64,
            ),
            ("gc_runs", self.s_gc_runs as f64),
            ("gc_segments_cleaned", self.s_gc_segments as f64),
            ("gc_live_lines_copied", self.s_gc_copied as f64),
            ("forced_gc", self.s_forced_gc as f64),
            ("clean_evictions_dropped", self.s_dropped_clean as f64),
        ]
    }

    fn reset_stats(&mut self) {
        self.s_chunks = 0;
        self.s_entries = 0;
        self.s_reads = 0;
        self.s_walk_nodes = 0;
        self.s_index_updates = 0;
        self.s_gc_runs = 0;
        self.s_gc_segments = 0;
        self.s_gc_copied = 0;
        self.s_forced_gc = 0;
        self.s_dropped_clean = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, RunSpec};

    fn run(threads: usize, tx: u64, extra: &[(&str, &str)]) -> Engine {
        let mut s = RunSpec::new("lsm", "vector").unwrap();
        s.threads = threads;
        s.tx = tx;
        s.record_history = true;
        for (k, v) in [
            ("workload.item_bytes", "1024"),
            ("workload.initial_items", "64"),
            ("cache.llc_size_bytes", "4KB"),
            ("cache.llc_ways", "2"),
            ("cache.l2_size_bytes", "2KB"),
            ("cache.l2_ways", "2"),
            ("cache.l1_size_bytes", "1KB"),
            ("cache.l1_ways", "2"),
        ]
        .iter()
        .chain(extra)
        {
            s.params.set_str(k, v).unwrap();
        }
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {}).unwrap();
        e
    }

    fn stat(e: &Engine, k: &str) -> f64 {
        e.scheme.stats().iter().find(|s| s.0 == k).unwrap().1
    }

    /// Rule: transactional data never goes in place; every persisted byte
    /// during the run is in the log region; TxEnd acks after its commit
    /// chunk header.
    #[test]
    fn writes_only_append_and_ack_follows_commit_chunk() {
        let e = run(1, 40, &[]);
        let ring = Ring::new(&e.params, &e.ctx.layout);
        let pl = &e.ctx.nvm.persist_log;
        assert!(pl.events().iter().all(|ev| ev.addr >= ring.base));
        let h = e.history.as_ref().unwrap();
        for (i, r) in h.per_thread[0].iter().enumerate() {
            let commits = pl.events()[..r.ack_persist_seq as usize]
                .iter()
                .filter(|ev| {
                    let d = pl.data(ev);
                    d.len() == 64
                        && u64::from_le_bytes(d[..8].try_into().unwrap()) == CHUNK_MAGIC
                        && (u64::from_le_bytes(d[16..24].try_into().unwrap()) >> 36) & F_LAST != 0
                })
                .count();
            assert_eq!(commits, i + 1, "tx {i} acked before its commit chunk");
        }
    }

    /// Every LLC miss walks the index; the walk grows like log2(N).
    #[test]
    fn index_walk_is_logarithmic() {
        let small = run(1, 20, &[]);
        let big = run(1, 400, &[]);
        let (ws, wb) = (
            stat(&small, "index_walk_nodes_per_walk"),
            stat(&big, "index_walk_nodes_per_walk"),
        );
        assert!(
            wb > ws + 1.0 && wb < 16.0,
            "walk per read: {ws} (small) vs {wb} (big)"
        );
        assert!(stat(&big, "index_walks") as u64 >= big.metrics().loads.min(1));
    }

    /// Packing of 36-bit home line numbers round-trips.
    #[test]
    fn home_packing_roundtrip() {
        let homes: Vec<Addr> = (0..7u64)
            .map(|i| ((i * 0x0001_2345_6789 + 0x0fff_ffff) * 64 % (1 << 40)) & !63)
            .collect();
        let w = pack_homes(&homes);
        for (i, &h) in homes.iter().enumerate() {
            assert_eq!(unpack_home(&w, i), h);
        }
    }
}
