//! EHOU: efficient hardware-assisted out-place update on the Optane AIT
//! (Deng, Yue, Lu, Zhu; ../shared/papers/ehou.md §III), at cache-line
//! granularity.
//!
//! - A transactional write of line P goes out of place: P's AIT-cache entry
//!   is remapped to a newly allocated device line and marked speculative
//!   (S); the memory controller keeps the transaction's write set per
//!   core. Allocation: a line away from home goes back home, a line at
//!   home takes a free line of the pool (free list), so recovery can
//!   materialise every mapping by copying pool lines home (docs/MODEL.md).
//! - Victim rule: a speculative entry is evicted only when every way of
//!   its set is speculative; it then goes to the core's overflow log (a
//!   FIFO in PM behind a small ADR log buffer) and the core's Bloom filter,
//!   which an AIT-cache miss consults before the log.
//! - Commit: one durable per-core commit word (the S/C flip of the whole
//!   write set at once), then eager persisting writes the entries to the
//!   AIT, lazy persisting (EHOU) leaves them committed-dirty in the AIT
//!   cache until evicted or overwritten; the overflow log is applied to the
//!   AIT and cleared with the filter; the lines' previous device addresses
//!   are released to the free list.
//! - Durable bytes: the AIT (media), the overflow logs (PM), and the ADR
//!   domain: commit words, per-core reclaim lists, and the AIT cache's
//!   dirty entries as the supercapacitor flush would leave them (one 32 B
//!   image per way, written whenever a way's dirty content changes; a
//!   committed image is overwritten only after its AIT entry is written).
//! - Recovery (§III-D): AIT, then the overflow log of each core's last
//!   committed transaction, then the committed cache images; speculative
//!   ones are dropped and the reclaim list of an unfinished transaction is
//!   returned to the free list after an audit (no pool line mapped twice
//!   or both mapped and reclaimed); finally every remapped line is copied
//!   home and its AIT entry reset (the physical view the oracle reads).

use crate::cache::hierarchy::WritebackCause;
use crate::cache::LineExt;
use crate::config::{Check, DefaultValue, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::optane::{AitCache, EntryState};
use crate::mem::MemWrite;
use crate::schemes::undo::{csum, owner_of, recovery_ns, MAX_CORES};
use crate::schemes::{
    raise_advice, Durability, Layout, MemCtx, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    MUTANT_SOURCE,
};
use crate::types::{line_of, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose};
use rustc_hash::FxHashMap;

pub static PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "ehou.persist",
        default: DefaultValue::Str("lazy"),
        unit: "",
        check: Check::OneOf(&["lazy", "eager"]),
        source: "EHOU paper §III-A/B; §IV-A evaluates EHOU with lazy persisting",
        doc: "eager: commit writes the committed AIT-cache entries to the AIT (on the commit path); lazy: committed entries stay dirty in the AIT cache (inside the persistence domain) until evicted or overwritten",
    },
    ParamSpec {
        key: "ehou.pool_lines",
        default: DefaultValue::Int(1 << 20),
        unit: "lines",
        check: Check::Range(16.0, 1e10),
        source: "modelling choice, see docs/MODEL.md (64 MiB of free device lines; a line away from home holds one; sparse, so unused lines cost nothing)",
        doc: "device lines of the free pool (out-of-place targets of lines at home)",
    },
    ParamSpec {
        key: "ehou.log_entries_per_core",
        default: DefaultValue::Int(4096),
        unit: "entries",
        check: Check::Range(8.0, 1e8),
        source: "modelling choice, see docs/MODEL.md (no size in the paper; 128 KiB per core)",
        doc: "overflow log capacity per core (32 B entries: physical line, device line, transaction tag, checksum)",
    },
    ParamSpec {
        key: "ehou.log_buffer_entries",
        default: DefaultValue::Int(8),
        unit: "entries",
        check: Check::Range(1.0, 4096.0),
        source: "modelling choice, see docs/MODEL.md (\"extra small ADR protected log buffer\", §III-C; 8 x 32 B = one 256 B media block)",
        doc: "ADR-protected overflow-log buffer per core: entries are written to the PM log when it fills; entries applied at commit before that cost no PM write",
    },
    ParamSpec {
        key: "ehou.bloom_bits",
        default: DefaultValue::Int(4096),
        unit: "bits",
        check: Check::PowerOfTwo(64, 1 << 24),
        source: "modelling choice, see docs/MODEL.md (no size in the paper; Bloom, CACM 1970 = its ref. [13])",
        doc: "per-core Bloom filter of evicted speculative entries' physical lines",
    },
    ParamSpec {
        key: "ehou.bloom_hashes",
        default: DefaultValue::Int(3),
        unit: "hashes",
        check: Check::Range(1.0, 16.0),
        source: "modelling choice, see docs/MODEL.md",
        doc: "hash functions of the Bloom filter (double hashing)",
    },
    ParamSpec {
        key: "ehou.reclaim_entries_per_core",
        default: DefaultValue::Int(16384),
        unit: "entries",
        check: Check::Range(8.0, 16777215.0),
        source: "modelling choice, see docs/MODEL.md (ADR reclaim list, §III-D; one entry per speculative line of a transaction)",
        doc: "reclaim list capacity per core (device lines allocated by the running transaction)",
    },
    ParamSpec {
        key: "ehou.mutant",
        default: DefaultValue::Str("none"),
        unit: "",
        check: Check::OneOf(&["none", "evict-speculative-to-ait"]),
        source: MUTANT_SOURCE,
        doc: "test-only planted bug (tests/ehou.rs; refused by the CLI): evict-speculative-to-ait = an evicted speculative AIT-cache entry is written to the AIT instead of the overflow log (EHOU Fig. 5)",
    },
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "ehou",
    description: "EHOU: cache-line out-of-place updates remapped in the Optane AIT cache (speculative/committed entries, lazy or eager AIT persisting, overflow log + Bloom filter, ADR reclaim list)",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
};

const LOG_ENTRY_BYTES: u64 = 32;
const SLOT_BYTES: u64 = 32;
const TXSEQ_BITS: u32 = 48;
/// Reclaim-list header: transaction sequence above the entry count.
const RECLAIM_COUNT_BITS: u32 = 24;

fn reserved_bytes(p: &Params) -> u64 {
    // AIT: one 8 B entry per line of the whole capacity (covers home).
    p.u64("nvm.capacity_bytes") / 8
        + p.u64("ehou.pool_lines") * 64
        + MAX_CORES * p.u64("ehou.log_entries_per_core") * LOG_ENTRY_BYTES
        + p.u64("nvm.capacity_bytes") / 8 / 4096 / 8
        + (4 << 20)
}

#[derive(Clone, Copy, Debug)]
struct Geometry {
    ait_base: Addr,
    pool_base: Addr,
    pool_lines: u64,
    log_base: Addr,
    log_entries: u64,
    /// AIT directory: one bit per 4 KiB page of the AIT that ever held a
    /// non-identity entry (recovery finds remapped lines without reading
    /// the whole table).
    dir_base: Addr,
    /// ADR domain: commit words, reclaim lists, AIT-cache images.
    commit_base: Addr,
    reclaim_base: Addr,
    reclaim_cap: u64,
    slot_base: Addr,
    slots: u64,
    home_limit: Addr,
}

impl Geometry {
    fn new(p: &Params, layout: &Layout) -> Self {
        let ait_base = layout.reserved_base;
        let pool_base = (ait_base + p.u64("nvm.capacity_bytes") / 8).next_multiple_of(4096);
        let pool_lines = p.u64("ehou.pool_lines");
        let log_base = pool_base + pool_lines * 64;
        let log_entries = p.u64("ehou.log_entries_per_core");
        let dir_base = (log_base + MAX_CORES * log_entries * LOG_ENTRY_BYTES).next_multiple_of(64);
        let reclaim_cap = p.u64("ehou.reclaim_entries_per_core");
        let commit_base = layout.adr_base;
        let reclaim_base = commit_base + MAX_CORES * 64;
        let reclaim_bytes = (64 + reclaim_cap * 8).next_multiple_of(4096);
        Geometry {
            ait_base,
            pool_base,
            pool_lines,
            log_base,
            log_entries,
            dir_base,
            commit_base,
            reclaim_base,
            reclaim_cap,
            slot_base: reclaim_base + layout.threads as u64 * reclaim_bytes,
            slots: p.u64("dimm.ait_cache_sets") * p.u64("dimm.ait_cache_ways"),
            home_limit: layout.home_limit,
        }
    }
    fn ait_addr(&self, line: Addr) -> Addr {
        self.ait_base + line / 64 * 8
    }
    /// Directory word address and bit of the AIT page holding `line`'s entry.
    fn dir_bit(&self, line: Addr) -> (Addr, u64) {
        let page = (self.ait_addr(line) - self.ait_base) / 4096;
        (self.dir_base + page / 64 * 8, page % 64)
    }
    /// Device address of `line` under mapping `enc` (0 = home, k = pool
    /// line k - 1).
    fn dev_addr(&self, line: Addr, enc: u64) -> Addr {
        if enc == 0 {
            line
        } else {
            self.pool_base + (enc - 1) * 64
        }
    }
    fn log_addr(&self, core: usize, i: u64) -> Addr {
        self.log_base + (core as u64 * self.log_entries + i) * LOG_ENTRY_BYTES
    }
    fn commit_addr(&self, core: usize) -> Addr {
        self.commit_base + core as u64 * 64
    }
    fn reclaim_addr(&self, core: usize) -> Addr {
        self.reclaim_base + core as u64 * (64 + self.reclaim_cap * 8).next_multiple_of(4096)
    }
    fn slot_addr(&self, slot: usize) -> Addr {
        self.slot_base + slot as u64 * SLOT_BYTES
    }
}

fn tag(core: usize, txseq: u64) -> u64 {
    ((core as u64) << TXSEQ_BITS) | txseq
}

/// A 32 B record {physical line, mapping, tag, checksum} (log entries and
/// AIT-cache images).
fn record(line: Addr, enc: u64, tag: u64) -> [u8; 32] {
    let w = [line, enc, tag];
    let mut b = [0u8; 32];
    for (i, v) in w.iter().chain(std::iter::once(&csum(&w, &[]))).enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}

fn parse_record(b: &[u8; 32]) -> Option<(Addr, u64, u64)> {
    let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    let ws = [w(0), w(1), w(2)];
    (ws[2] != 0 && w(3) == csum(&ws, &[])).then_some((ws[0], ws[1], ws[2]))
}

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

struct WsLine {
    line: Addr,
    data: LineData,
    /// Mapping committed before this transaction, and the new one (None
    /// until the first write of the line reaches the controller).
    old: u64,
    new: Option<u64>,
    /// The new location holds `data`.
    flushed: bool,
}

struct Core {
    txid: u32,
    txseq: u64,
    in_tx: bool,
    ws: Vec<WsLine>,
    index: FxHashMap<Addr, usize>,
    /// Overflow log of the running transaction (mirror of the PM log).
    log: Vec<(Addr, u64)>,
    /// Log entries still in the ADR log buffer (the last ones).
    buffered: usize,
    bloom: Bloom,
    reclaim: u64,
}

#[derive(Default, Clone)]
struct Stats {
    ait_hits: u64,
    ait_misses: u64,
    speculative: u64,
    committed: u64,
    flush_eager: u64,
    flush_evict: u64,
    flush_overwrite: u64,
    log_entries: u64,
    log_pm_writes: u64,
    log_applied: u64,
    bloom_hits: u64,
    bloom_false: u64,
    reclaim_max: u64,
    released: u64,
    overhead_writes: u64,
    overhead_bytes: u64,
    /// Of `overhead_bytes`, those written by `finish` (end of run): lazy
    /// persisting defers AIT flushes to it, so the rest is the steady state.
    overhead_bytes_end_of_run: u64,
}

struct Ehou {
    g: Geometry,
    eager: bool,
    mutant: bool,
    cache: AitCache,
    ait_cycles: Cycle,
    /// Slots whose ADR image is non-zero.
    img: Vec<bool>,
    /// Non-home mappings in the AIT media (mirror of its bytes).
    ait: FxHashMap<Addr, u64>,
    /// AIT directory words written so far (mirror).
    dir: FxHashMap<Addr, u64>,
    /// Latest committed non-home mapping of each line.
    committed: FxHashMap<Addr, u64>,
    free: Vec<u64>,
    next_fresh: u64,
    cores: Vec<Core>,
    log_buffer: usize,
    next_txid: u32,
    flush_latency: Cycle,
    claimed: bool,
    /// Reused buffer for log reads and drains (no allocation per access).
    scratch: Vec<u8>,
    s: Stats,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(new_ehou(p, layout)?))
}

fn new_ehou(p: &Params, layout: &Layout) -> Result<Ehou> {
    let g = Geometry::new(p, layout);
    if layout.threads as u64 >= 1 << (64 - TXSEQ_BITS) {
        return Err(Error::input("ehou supports at most 65535 threads"));
    }
    let cache = AitCache::new(
        p.usize("dimm.ait_cache_sets"),
        p.usize("dimm.ait_cache_ways"),
    );
    Ok(Ehou {
        g,
        eager: p.str("ehou.persist") == "eager",
        mutant: p.str("ehou.mutant") == "evict-speculative-to-ait",
        img: vec![false; cache.capacity()],
        cache,
        ait_cycles: p.u64("dimm.ait_cache_latency_cycles"),
        ait: FxHashMap::default(),
        dir: FxHashMap::default(),
        committed: FxHashMap::default(),
        free: Vec::new(),
        next_fresh: 0,
        cores: (0..layout.threads)
            .map(|_| Core {
                txid: 0,
                txseq: 0,
                in_tx: false,
                ws: Vec::new(),
                index: FxHashMap::default(),
                log: Vec::new(),
                buffered: 0,
                bloom: Bloom::new(
                    p.usize("ehou.bloom_bits"),
                    p.u64("ehou.bloom_hashes") as u32,
                ),
                reclaim: 0,
            })
            .collect(),
        log_buffer: p.usize("ehou.log_buffer_entries"),
        next_txid: 1,
        flush_latency: p.u64("cache.llc_latency_cycles"),
        claimed: false,
        scratch: Vec::new(),
        s: Stats::default(),
    })
}

impl Ehou {
    #[inline]
    fn claim(&mut self, ctx: &mut MemCtx) {
        if !self.claimed {
            self.claimed = true;
            if let Some(d) = ctx.nvm.dimm.as_mut() {
                d.claim_ait();
            }
        }
    }

    /// `finish`'s work (see there).
    fn finish_inner(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut t = now;
        for slot in 0..self.cache.capacity() {
            let e = *self.cache.entry(slot);
            if e.state == EntryState::Committed {
                t = t.max(self.write_ait(ctx, e.tag * 64, e.dev, now));
                self.cache.entry_mut(slot).state = EntryState::Clean;
                self.set_image(ctx, slot, None, t);
            }
        }
        let mut away: Vec<(Addr, u64)> = self.committed.iter().map(|(&l, &e)| (l, e)).collect();
        away.sort_unstable();
        let mut buf = [0u8; 64];
        for (line, enc) in away {
            let r = ctx
                .nvm
                .read(self.g.dev_addr(line, enc), &mut buf, Purpose::Gc, now);
            t = t.max(ctx.nvm.write(line, &buf, Purpose::Gc, r));
            t = t.max(self.write_ait(ctx, line, 0, t));
            if let Some(s) = self.cache.find(line / 64) {
                self.cache.entry_mut(s).dev = 0;
            }
            self.free.push(enc);
        }
        self.committed.clear();
        t
    }

    /// A PM write that the CPU did not issue (AIT flush, overflow log).
    fn overhead_write(
        &mut self,
        ctx: &mut MemCtx,
        a: Addr,
        data: &[u8],
        p: Purpose,
        now: Cycle,
    ) -> Cycle {
        self.s.overhead_writes += 1;
        self.s.overhead_bytes += data.len() as u64;
        ctx.nvm.write(a, data, p, now)
    }

    fn write_ait(&mut self, ctx: &mut MemCtx, line: Addr, enc: u64, now: Cycle) -> Cycle {
        if enc == 0 {
            self.ait.remove(&line);
        } else {
            self.ait.insert(line, enc);
            let (wa, bit) = self.g.dir_bit(line);
            let w = self.dir.entry(wa).or_insert(0);
            if *w >> bit & 1 == 0 {
                // The directory bit persists before the entry it covers.
                *w |= 1 << bit;
                let v = *w;
                self.overhead_write(ctx, wa, &v.to_le_bytes(), Purpose::Metadata, now);
            }
        }
        let a = self.g.ait_addr(line);
        self.overhead_write(ctx, a, &enc.to_le_bytes(), Purpose::Metadata, now)
    }

    fn set_image(&mut self, ctx: &mut MemCtx, slot: usize, rec: Option<[u8; 32]>, now: Cycle) {
        let a = self.g.slot_addr(slot);
        match rec {
            Some(r) => {
                ctx.nvm.persist_adr_structure(a, &r, now);
                self.img[slot] = true;
            }
            None if self.img[slot] => {
                ctx.nvm.persist_adr_structure(a, &[0u8; 32], now);
                self.img[slot] = false;
            }
            None => {}
        }
    }

    /// Append an evicted speculative entry to `core`'s overflow log: the
    /// entry is durable in the ADR log buffer at once and reaches the PM
    /// log when the buffer fills.
    fn log_append(
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
            return t;
        }
        now
    }

    /// Make room for and install `line -> enc` in the AIT cache; returns
    /// the slot and when the victim's write (if any) was accepted.
    fn install(
        &mut self,
        ctx: &mut MemCtx,
        line: Addr,
        enc: u64,
        state: EntryState,
        core: usize,
        now: Cycle,
    ) -> (usize, Cycle) {
        let t = line / 64;
        let (slot, victim) = self.cache.victim(t);
        let mut done = now;
        if let Some(v) = victim {
            let vline = v.tag * 64;
            match v.state {
                EntryState::Clean => {}
                EntryState::Committed => {
                    self.s.flush_evict += 1;
                    done = self.write_ait(ctx, vline, v.dev, now);
                }
                EntryState::Speculative => {
                    if self.mutant {
                        // Planted bug (Fig. 5): straight to the AIT.
                        done = self.write_ait(ctx, vline, v.dev, now);
                    } else {
                        done = self.log_append(ctx, v.core as usize, vline, v.dev, now);
                    }
                }
            }
        }
        let c = &self.cores[core];
        let rec = (state == EntryState::Speculative).then(|| record(line, enc, tag(core, c.txseq)));
        self.cache.fill(slot, t, enc, state, core as u16);
        self.set_image(ctx, slot, rec, now);
        (slot, done)
    }

    /// The AIT-cache slot of `line` (a miss consults the Bloom filters and
    /// overflow logs, then reads the AIT entry) and when it is available.
    fn lookup(&mut self, ctx: &mut MemCtx, line: Addr, now: Cycle) -> (usize, Cycle) {
        let t = now + self.ait_cycles;
        if let Some(s) = self.cache.lookup(line / 64) {
            self.s.ait_hits += 1;
            return (s, t);
        }
        self.s.ait_misses += 1;
        let mut t = t;
        for c in 0..self.cores.len() {
            if !self.cores[c].bloom.may_contain(line) {
                continue;
            }
            self.s.bloom_hits += 1;
            // Read the log (newest entries last) from PM.
            let n = self.cores[c].log.len() as u64;
            let mut buf = std::mem::take(&mut self.scratch);
            buf.resize((n * LOG_ENTRY_BYTES) as usize, 0);
            t = ctx
                .nvm
                .read(self.g.log_addr(c, 0), &mut buf, Purpose::Log, t);
            self.scratch = buf;
            if let Some(&(_, enc)) = self.cores[c].log.iter().rev().find(|e| e.0 == line) {
                let (s, _) = self.install(ctx, line, enc, EntryState::Speculative, c, t);
                return (s, t);
            }
            self.s.bloom_false += 1;
        }
        let mut b = [0u8; 8];
        t = ctx
            .nvm
            .read(self.g.ait_addr(line), &mut b, Purpose::Metadata, t);
        let enc = u64::from_le_bytes(b);
        debug_assert_eq!(enc, self.ait.get(&line).copied().unwrap_or(0));
        let (s, _) = self.install(ctx, line, enc, EntryState::Clean, 0, t);
        (s, t)
    }

    fn alloc(&mut self, ctx: &mut MemCtx) -> u64 {
        if let Some(e) = self.free.pop() {
            return e;
        }
        if self.next_fresh >= self.g.pool_lines {
            ctx.input_error(format!(
                "ehou.pool_lines={} is too small: more lines were away from home at once; raise ehou.pool_lines",
                self.g.pool_lines
            ));
            return 1;
        }
        self.next_fresh += 1;
        self.next_fresh
    }

    /// Write write-set line `i` of `core` to its new device line (first
    /// write: allocate it, remap the entry speculatively).
    fn write_tx_line(&mut self, ctx: &mut MemCtx, core: usize, i: usize, now: Cycle) -> Cycle {
        let line = self.cores[core].ws[i].line;
        let (slot, mut t) = self.lookup(ctx, line, now);
        let enc = match self.cores[core].ws[i].new {
            Some(e) => {
                let en = self.cache.entry(slot);
                // (The mutant put the entry in the AIT: it reloads clean.)
                debug_assert!(en.dev == e && (self.mutant || en.state == EntryState::Speculative));
                e
            }
            None => {
                let old = self.committed.get(&line).copied().unwrap_or(0);
                let new = if old == 0 { self.alloc(ctx) } else { 0 };
                // Reclaim list (ADR): the entry, then the count.
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
                    ctx.nvm
                        .persist_adr_structure(ra + 64 + n * 8, &new.to_le_bytes(), t);
                    ctx.nvm.persist_adr_structure(ra, &hdr.to_le_bytes(), t);
                    self.s.reclaim_max = self.s.reclaim_max.max(c.reclaim);
                }
                let w = &mut self.cores[core].ws[i];
                w.old = old;
                w.new = Some(new);
                // Lazy persisting: a committed entry about to be
                // overwritten is written to the AIT first.
                if self.cache.entry(slot).state == EntryState::Committed {
                    self.s.flush_overwrite += 1;
                    let d = self.cache.entry(slot).dev;
                    t = t.max(self.write_ait(ctx, line, d, t));
                }
                let e = self.cache.entry_mut(slot);
                e.dev = new;
                e.state = EntryState::Speculative;
                e.core = core as u16;
                let txseq = self.cores[core].txseq;
                self.set_image(ctx, slot, Some(record(line, new, tag(core, txseq))), t);
                self.s.speculative += 1;
                new
            }
        };
        let w = &mut self.cores[core].ws[i];
        w.flushed = true;
        let data = w.data;
        ctx.nvm
            .write(self.g.dev_addr(line, enc), &data, Purpose::WriteBack, t)
    }

    /// The device address a read of `line` returns now.
    fn logical_dev(&self, line: Addr) -> Addr {
        let owner = self
            .cores
            .iter()
            .find_map(|c| c.index.get(&line).map(|&i| &c.ws[i]));
        let enc = match owner {
            Some(w) if w.new.is_some() => w.new.unwrap(),
            _ => self.committed.get(&line).copied().unwrap_or(0),
        };
        self.g.dev_addr(line, enc)
    }
}

impl Scheme for Ehou {
    fn tx_begin(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.claim(ctx);
        let c = &mut self.cores[core];
        c.txid = self.next_txid;
        self.next_txid += 1;
        c.txseq += 1;
        c.in_tx = true;
        c.ws.clear();
        c.index.clear();
        c.reclaim = 0;
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
            // Written back in place at its committed location.
            ext.tx = false;
            ext.txid = 0;
            return now;
        }
        let line = line_of(addr);
        let c = &mut self.cores[core];
        ext.tx = true;
        ext.txid = c.txid;
        if let Some(&i) = c.index.get(&line) {
            let w = &mut c.ws[i];
            write_word(&mut w.data, word_index(addr), new);
            w.flushed = false;
            return now;
        }
        let mut base = [0u8; 64];
        ctx.nvm.peek(self.logical_dev(line), &mut base);
        write_word(&mut base, word_index(addr), new);
        let c = &mut self.cores[core];
        c.index.insert(line, c.ws.len());
        c.ws.push(WsLine {
            line,
            data: base,
            old: 0,
            new: None,
            flushed: false,
        });
        now
    }

    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut LineExt,
    ) -> (Cycle, bool) {
        self.claim(ctx);
        let (slot, t) = self.lookup(ctx, line_addr, now);
        let enc = self.cache.entry(slot).dev;
        let a = self.g.dev_addr(line_addr, enc);
        debug_assert_eq!(a, self.logical_dev(line_addr));
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
        self.claim(ctx);
        let owner = owner_of(&ctx.layout, line_addr);
        let c = &self.cores[owner];
        if ext.txid != 0 {
            if c.in_tx && ext.txid == c.txid {
                let i = c.index[&line_addr];
                self.cores[owner].ws[i].data = *data;
                return self.write_tx_line(ctx, owner, i, now);
            }
            // Written to its new location at its transaction's commit.
            return now;
        }
        // Outside transactions: in place at the current mapping.
        let (slot, t) = self.lookup(ctx, line_addr, now);
        let a = self.g.dev_addr(line_addr, self.cache.entry(slot).dev);
        ctx.nvm.write(a, data, Purpose::WriteBack, t)
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].in_tx = false;
        let n = self.cores[core].ws.len();
        if n == 0 {
            return now;
        }
        // The write set's lines still in the CPU caches go out of place.
        let arrive = now + self.flush_latency;
        let mut done = now;
        for i in 0..n {
            if !self.cores[core].ws[i].flushed {
                done = done.max(self.write_tx_line(ctx, core, i, arrive + i as Cycle));
            }
        }
        // Commit: the S/C flip of the whole write set is one durable word.
        let txseq = self.cores[core].txseq;
        ctx.nvm
            .persist_adr_structure(self.g.commit_addr(core), &txseq.to_le_bytes(), done);
        let mut finished = done;
        for i in 0..n {
            let (line, old, new) = {
                let w = &self.cores[core].ws[i];
                (w.line, w.old, w.new.expect("flushed"))
            };
            if let Some(s) = self.cache.find(line / 64) {
                let e = self.cache.entry_mut(s);
                if e.state == EntryState::Speculative && e.core as usize == core {
                    e.state = EntryState::Committed;
                    self.s.committed += 1;
                    if self.eager {
                        self.s.flush_eager += 1;
                        self.cache.entry_mut(s).state = EntryState::Clean;
                        finished = finished.max(self.write_ait(ctx, line, new, done));
                        self.set_image(ctx, s, None, finished);
                    }
                }
            }
            if new == 0 {
                self.committed.remove(&line);
            } else {
                self.committed.insert(line, new);
            }
            // The previous device line is free once the new mapping is
            // durable (committed in the persistence domain).
            if old != 0 {
                self.free.push(old);
                self.s.released += 1;
            }
        }
        // Apply the overflow log to the AIT, then clear log and filter.
        let log = std::mem::take(&mut self.cores[core].log);
        for &(line, enc) in &log {
            self.s.log_applied += 1;
            self.write_ait(ctx, line, enc, done);
            if let Some(s) = self.cache.find(line / 64) {
                // Reloaded from the log and flipped above: now clean.
                let e = self.cache.entry_mut(s);
                if e.state == EntryState::Committed && e.dev == enc {
                    e.state = EntryState::Clean;
                    self.set_image(ctx, s, None, done);
                }
            }
        }
        let c = &mut self.cores[core];
        c.log = log;
        c.log.clear();
        c.buffered = 0;
        c.bloom.clear();
        if self.eager {
            finished
        } else {
            done
        }
    }

    /// End of run: write the committed-dirty AIT-cache entries to the AIT,
    /// then bring every remapped line home (copy, then reset its AIT
    /// entry), so home locations hold the committed data. Each step keeps
    /// a durable mapping to bytes that are still there.
    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let before = self.s.overhead_bytes;
        let t = self.finish_inner(ctx, now);
        self.s.overhead_bytes_end_of_run += self.s.overhead_bytes - before;
        t
    }

    fn background_kind(&self) -> &'static str {
        "ehou-home"
    }

    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr + done as u64;
            let line = line_of(a);
            let n = ((line + 64 - a) as usize).min(buf.len() - done);
            let d = self.logical_dev(line) + (a - line);
            ctx.nvm.peek(d, &mut buf[done..done + n]);
            done += n;
        }
    }

    fn stats(&self) -> SchemeStats {
        let s = &self.s;
        vec![
            ("ait_cache_hits", s.ait_hits as f64),
            ("ait_cache_misses", s.ait_misses as f64),
            ("speculative_entries", s.speculative as f64),
            ("committed_entries", s.committed as f64),
            ("ait_flushes_eager", s.flush_eager as f64),
            ("ait_flushes_lazy_evict", s.flush_evict as f64),
            ("ait_flushes_lazy_overwrite", s.flush_overwrite as f64),
            ("overflow_log_entries", s.log_entries as f64),
            ("overflow_log_pm_writes", s.log_pm_writes as f64),
            ("overflow_log_applied", s.log_applied as f64),
            ("bloom_hits", s.bloom_hits as f64),
            ("bloom_false_positives", s.bloom_false as f64),
            ("reclaim_list_max", s.reclaim_max as f64),
            ("released_device_lines", s.released as f64),
            ("pm_write_overhead_writes", s.overhead_writes as f64),
            ("pm_write_overhead_bytes", s.overhead_bytes as f64),
            (
                "pm_write_overhead_bytes_end_of_run",
                s.overhead_bytes_end_of_run as f64,
            ),
            (
                "cached_speculative",
                self.cache.count(EntryState::Speculative) as f64,
            ),
            (
                "cached_committed_dirty",
                self.cache.count(EntryState::Committed) as f64,
            ),
            (
                "pool_lines_used",
                (self.next_fresh - self.free.len() as u64) as f64,
            ),
        ]
    }

    fn reset_stats(&mut self) {
        self.s = Stats::default();
    }
}

/// Recovery (§III-D) from the durable bytes alone.
///
/// Host-speed notes (crashtest runs this at every crash point; the bytes
/// read, the writes made and their order are those of a plain scan): the
/// AIT-cache images are read a 4 KiB page at a time instead of one 32 B
/// slot at a time, and the mappings are merged in a sorted vector instead
/// of a B-tree. The modelled cost (`read`) counts what the slot-by-slot
/// scan counted: every slot of a page that holds bytes.
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    let g = Geometry::new(p, layout);
    let (mut read, mut written) = (0u64, 0u64);
    let commits: Vec<u64> = (0..layout.threads)
        .map(|c| img.read_u64(g.commit_addr(c)))
        .collect();
    read += layout.threads as u64;
    let committed = |tag: u64| {
        let (c, s) = ((tag >> TXSEQ_BITS) as usize, tag & ((1 << TXSEQ_BITS) - 1));
        c < commits.len() && s != 0 && s <= commits[c]
    };
    // Every mapping found, in the order later ones override earlier ones
    // (AIT < overflow log < committed cache images); merged per line below.
    let mut found: Vec<(Addr, u64)> = Vec::new();
    // 1. The AIT in the media (non-zero entries).
    // The directory names the AIT pages to read.
    let ait_pages = (g.ait_addr(g.home_limit) - g.ait_base).div_ceil(4096);
    let dir_end = g.dir_base + ait_pages.div_ceil(64) * 8;
    let mut a = g.dir_base;
    let mut page = [0u8; 4096];
    while a < dir_end {
        a = img.zeros_until(a, dir_end);
        if a >= dir_end {
            break;
        }
        a -= (a - g.dir_base) % 8;
        let w = img.read_u64(a);
        read += 1;
        let mut bits = w;
        while bits != 0 {
            let pg = (a - g.dir_base) / 8 * 64 + bits.trailing_zeros() as u64;
            bits &= bits - 1;
            img.read_bytes(g.ait_base + pg * 4096, &mut page);
            read += 64;
            for (i, e) in page.chunks_exact(8).enumerate() {
                let v = u64::from_le_bytes(e.try_into().unwrap());
                let line = (pg * 512 + i as u64) * 64;
                if v != 0 && line < g.home_limit {
                    found.push((line, v));
                }
            }
        }
        a += 8;
    }
    // Directory pages ascend, so these are sorted by line: the AIT lines
    // whose entries are reset at the end.
    let media_len = found.len();
    // 2. The overflow log of each core's last committed transaction.
    let mut replayed = 0u64;
    for (c, &cs) in commits.iter().enumerate() {
        if cs == 0 {
            continue;
        }
        for i in 0..g.log_entries {
            let mut b = [0u8; 32];
            img.read_bytes(g.log_addr(c, i), &mut b);
            read += 1;
            match parse_record(&b) {
                Some((line, enc, t)) if t == tag(c, cs) && line < g.home_limit => {
                    found.push((line, enc));
                    replayed += 1;
                }
                _ => break,
            }
        }
    }
    // 3. The AIT cache's committed entries (supercapacitor flush); the
    // speculative ones are dropped. Images are read a page at a time: the
    // scan reads every slot of a page that holds bytes anyway.
    let (mut applied, mut dropped) = (0u64, 0u64);
    let slot_end = g.slot_addr(g.slots as usize);
    let mut a = g.slot_base;
    let mut images: Vec<(u64, Addr, u64)> = Vec::new();
    let mut chunk = [0u8; 4096 + SLOT_BYTES as usize];
    while a < slot_end {
        a = img.zeros_until(a, slot_end);
        if a >= slot_end {
            break;
        }
        let a0 = a - (a - g.slot_base) % SLOT_BYTES;
        // To the end of the page holding `a0`, in whole slots.
        let end = (a0 + (4096 - a0 % 4096).div_ceil(SLOT_BYTES) * SLOT_BYTES).min(slot_end);
        let buf = &mut chunk[..(end - a0) as usize];
        img.read_bytes(a0, buf);
        read += (end - a0) / SLOT_BYTES;
        for b in buf.chunks_exact(SLOT_BYTES as usize) {
            if let Some((line, enc, t)) = parse_record(b.try_into().unwrap()) {
                if committed(t) && line < g.home_limit {
                    images.push((t, line, enc));
                } else {
                    dropped += 1;
                }
            }
        }
        a = end;
    }
    images.sort_unstable();
    applied += images.len() as u64;
    found.extend(images.iter().map(|&(_, line, enc)| (line, enc)));
    // The last mapping found for each line wins; a zero one means home.
    let mut order: Vec<(Addr, u32)> = (0..found.len() as u32)
        .map(|i| (found[i as usize].0, i))
        .collect();
    order.sort_unstable();
    let mut map: Vec<(Addr, u64)> = Vec::with_capacity(order.len());
    for (j, &(line, i)) in order.iter().enumerate() {
        if order.get(j + 1).is_none_or(|n| n.0 != line) && found[i as usize].1 != 0 {
            map.push((line, found[i as usize].1));
        }
    }
    // 4. Audit: no pool line mapped twice, none both mapped and reclaimed.
    let reclaimed = audit(img, &g, &commits, map.iter().copied(), &mut read)?;
    // 5. Materialise: copy every remapped line home, reset its AIT entry
    // (idempotent: a crash here re-runs the same copies).
    let mut buf = [0u8; 64];
    for &(line, enc) in &map {
        img.read_bytes(g.dev_addr(line, enc), &mut buf);
        img.write_bytes(line, &buf);
        written += 1;
        read += 1;
    }
    for &(line, _) in &found[..media_len] {
        img.write_u64(g.ait_addr(line), 0);
        written += 1;
    }
    Ok(RecoveryReport {
        bytes_read: read * 64,
        bytes_written: written * 64,
        modeled_ns: recovery_ns(p, read, written),
        details: vec![
            ("remapped_lines", map.len() as f64),
            ("overflow_log_replayed", replayed as f64),
            ("committed_cache_entries", applied as f64),
            ("speculative_cache_entries_dropped", dropped as f64),
            ("reclaimed_lines", reclaimed as f64),
        ],
    })
}

/// Recovery step 4: no pool line mapped twice, none both mapped and
/// reclaimed by an uncommitted transaction. Returns the reclaimed lines.
fn audit(
    img: &mut dyn MemWrite,
    g: &Geometry,
    commits: &[u64],
    map: impl ExactSizeIterator<Item = (Addr, u64)>,
    read: &mut u64,
) -> Result<u64> {
    let mut owner: FxHashMap<u64, Addr> = FxHashMap::default();
    owner.reserve(map.len());
    for (line, enc) in map {
        if enc > g.pool_lines {
            return Err(Error::Internal(format!(
                "ehou recovery audit: line {line:#x} maps to device line {} outside the pool of {}",
                enc - 1,
                g.pool_lines
            )));
        }
        if let Some(o) = owner.insert(enc, line) {
            return Err(Error::Internal(format!(
                "ehou recovery audit: pool line {} mapped by both {o:#x} and {line:#x}",
                enc - 1
            )));
        }
    }
    let mut reclaimed = 0u64;
    for (c, &cs) in commits.iter().enumerate() {
        let ra = g.reclaim_addr(c);
        let h = img.read_u64(ra);
        let (txseq, n) = (h >> RECLAIM_COUNT_BITS, h & ((1 << RECLAIM_COUNT_BITS) - 1));
        *read += 1;
        if txseq <= cs || n > g.reclaim_cap {
            continue;
        }
        for i in 0..n {
            let enc = img.read_u64(ra + 64 + i * 8);
            if enc == 0 {
                continue;
            }
            if let Some(line) = owner.get(&enc) {
                return Err(Error::Internal(format!(
                    "ehou recovery audit: pool line {} of core {c}'s uncommitted transaction is mapped by {line:#x} (a speculative mapping reached the AIT)",
                    enc - 1
                )));
            }
            reclaimed += 1;
        }
        *read += n.div_ceil(8);
    }
    Ok(reclaimed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{MemRead, MemoryController, Overlay};

    /// One core, a 1-set x 2-way AIT cache, a small NVM.
    fn setup() -> (Ehou, MemCtx, Params) {
        let mut p = Params::defaults(&[PARAMS]);
        for (k, v) in [
            ("nvm.capacity_bytes", "64MiB"),
            ("dimm.ait_cache_sets", "1"),
            ("dimm.ait_cache_ways", "2"),
            ("ehou.pool_lines", "64"),
            ("ehou.log_entries_per_core", "64"),
        ] {
            p.set_str(k, v).unwrap();
        }
        let layout = Layout::new(p.u64("nvm.capacity_bytes"), reserved_bytes(&p), 1).unwrap();
        let ctx = MemCtx {
            nvm: MemoryController::nvm(&p, true),
            dram: MemoryController::dram(&p),
            hybrid: None,
            layout: layout.clone(),
            cores: 1,
            freq_ghz: 2.5,
            pending_error: None,
            write_back_request: Vec::new(),
        };
        (new_ehou(&p, &layout).unwrap(), ctx, p)
    }

    /// Store `v` into word 0 of `line` in the running transaction and
    /// write the line back (it reaches the controller before commit).
    fn store_and_write_back(e: &mut Ehou, ctx: &mut MemCtx, line: Addr, v: u64) {
        let mut ext = LineExt::default();
        e.store(ctx, 0, line, 0, v, true, &mut ext, 0);
        let mut data = [0u8; 64];
        data[..8].copy_from_slice(&v.to_le_bytes());
        e.writeback(ctx, 0, line, &data, &ext, WritebackCause::Eviction, 0);
    }

    /// Recover a copy of the durable image; returns (word 0 of each line,
    /// recovery details).
    fn crash(ctx: &MemCtx, p: &Params, lines: &[Addr]) -> (Vec<u64>, Vec<(&'static str, f64)>) {
        let mut ov = Overlay::new(ctx.nvm.media());
        let r = recover(&mut ov, p, &ctx.layout).unwrap();
        (lines.iter().map(|&l| ov.read_u64(l)).collect(), r.details)
    }

    fn detail(d: &[(&'static str, f64)], k: &str) -> f64 {
        d.iter().find(|x| x.0 == k).unwrap().1
    }

    /// A write-through image that logs every write in order.
    struct Logged<'a> {
        ov: Overlay<'a, crate::mem::SparseImage>,
        writes: Vec<(Addr, Vec<u8>)>,
    }

    impl MemRead for Logged<'_> {
        fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
            self.ov.read_bytes(addr, buf)
        }
        fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
            self.ov.zeros_until(addr, end)
        }
    }

    impl MemWrite for Logged<'_> {
        fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
            self.writes.push((addr, data.to_vec()));
            self.ov.write_bytes(addr, data)
        }
    }

    /// The slot-by-slot, B-tree recovery this module shipped before the
    /// page-at-a-time scan (the reference of the differential test).
    fn recover_reference(
        img: &mut dyn MemWrite,
        p: &Params,
        layout: &Layout,
    ) -> Result<RecoveryReport> {
        let g = Geometry::new(p, layout);
        let (mut read, mut written) = (0u64, 0u64);
        let commits: Vec<u64> = (0..layout.threads)
            .map(|c| img.read_u64(g.commit_addr(c)))
            .collect();
        read += layout.threads as u64;
        let committed = |tag: u64| {
            let (c, s) = ((tag >> TXSEQ_BITS) as usize, tag & ((1 << TXSEQ_BITS) - 1));
            c < commits.len() && s != 0 && s <= commits[c]
        };
        // 1. The AIT in the media (non-zero entries).
        // The directory names the AIT pages to read.
        let mut media: std::collections::BTreeMap<Addr, u64> = std::collections::BTreeMap::new();
        let ait_pages = (g.ait_addr(g.home_limit) - g.ait_base).div_ceil(4096);
        let dir_end = g.dir_base + ait_pages.div_ceil(64) * 8;
        let mut a = g.dir_base;
        let mut buf = vec![0u8; 4096];
        while a < dir_end {
            a = img.zeros_until(a, dir_end);
            if a >= dir_end {
                break;
            }
            a -= (a - g.dir_base) % 8;
            let w = img.read_u64(a);
            read += 1;
            let mut bits = w;
            while bits != 0 {
                let page = (a - g.dir_base) / 8 * 64 + bits.trailing_zeros() as u64;
                bits &= bits - 1;
                let pa = g.ait_base + page * 4096;
                img.read_bytes(pa, &mut buf);
                read += 64;
                for (i, e) in buf.chunks_exact(8).enumerate() {
                    let v = u64::from_le_bytes(e.try_into().unwrap());
                    let line = (page * 512 + i as u64) * 64;
                    if v != 0 && line < g.home_limit {
                        media.insert(line, v);
                    }
                }
            }
            a += 8;
        }
        let mut map = media.clone();
        // 2. The overflow log of each core's last committed transaction.
        let mut replayed = 0u64;
        for (c, &cs) in commits.iter().enumerate() {
            if cs == 0 {
                continue;
            }
            for i in 0..g.log_entries {
                let mut b = [0u8; 32];
                img.read_bytes(g.log_addr(c, i), &mut b);
                read += 1;
                match parse_record(&b) {
                    Some((line, enc, t)) if t == tag(c, cs) && line < g.home_limit => {
                        map.insert(line, enc);
                        replayed += 1;
                    }
                    _ => break,
                }
            }
        }
        // 3. The AIT cache's committed entries (supercapacitor flush); the
        // speculative ones are dropped.
        let (mut applied, mut dropped) = (0u64, 0u64);
        let slot_end = g.slot_addr(g.slots as usize);
        let mut a = g.slot_base;
        let mut found: Vec<(u64, Addr, u64)> = Vec::new();
        while a < slot_end {
            a = img.zeros_until(a, slot_end);
            if a >= slot_end {
                break;
            }
            let a0 = a - (a - g.slot_base) % SLOT_BYTES;
            let mut b = [0u8; 32];
            img.read_bytes(a0, &mut b);
            read += 1;
            if let Some((line, enc, t)) = parse_record(&b) {
                if committed(t) && line < g.home_limit {
                    found.push((t, line, enc));
                } else {
                    dropped += 1;
                }
            }
            a = a0 + SLOT_BYTES;
        }
        found.sort_unstable();
        for (_, line, enc) in found {
            map.insert(line, enc);
            applied += 1;
        }
        map.retain(|_, e| *e != 0);
        // 4. Audit (shared: the reference differs in how it finds mappings).
        let reclaimed = audit(
            img,
            &g,
            &commits,
            map.iter().map(|(&l, &e)| (l, e)),
            &mut read,
        )?;
        // 5. Materialise: copy every remapped line home, reset its AIT entry
        // (idempotent: a crash here re-runs the same copies).
        let mut buf = [0u8; 64];
        for (&line, &enc) in &map {
            img.read_bytes(g.dev_addr(line, enc), &mut buf);
            img.write_bytes(line, &buf);
            written += 1;
            read += 1;
        }
        for (&line, _) in media.iter() {
            img.write_u64(g.ait_addr(line), 0);
            written += 1;
        }
        Ok(RecoveryReport {
            bytes_read: read * 64,
            bytes_written: written * 64,
            modeled_ns: recovery_ns(p, read, written),
            details: vec![
                ("remapped_lines", map.len() as f64),
                ("overflow_log_replayed", replayed as f64),
                ("committed_cache_entries", applied as f64),
                ("speculative_cache_entries_dropped", dropped as f64),
                ("reclaimed_lines", reclaimed as f64),
            ],
        })
    }

    /// Differential: on seeded crash images of every workload (lazy with
    /// a small AIT cache and small CPU caches, so entries overflow to the
    /// log; eager; the Fig. 5 mutant, whose images fail the audit), the
    /// page-at-a-time recovery makes exactly the writes of the reference
    /// scan, in the same order, with the same report or the same error.
    #[test]
    fn fast_recovery_equals_the_reference_scan_on_seeded_crash_images() {
        use crate::engine::{Engine, RunSpec};
        let mut compared = (0u64, 0u64);
        for w in crate::workloads::REGISTRY {
            for (persist, small, mutant) in [
                ("lazy", true, "none"),
                ("eager", false, "none"),
                ("lazy", false, "evict-speculative-to-ait"),
            ] {
                let mut s = RunSpec::new("ehou", w.name).unwrap();
                s.params = Params::defaults(&crate::schemes::all_params());
                let mut sets = vec![
                    ("ehou.persist", persist),
                    ("ehou.mutant", mutant),
                    ("ehou.pool_lines", "4096"),
                    ("workload.initial_items", "64"),
                    ("workload.tpcc_items", "2000"),
                    ("workload.tpcc_customers_per_district", "300"),
                ];
                if small {
                    sets.extend([
                        ("dimm.ait_cache_sets", "4"),
                        ("dimm.ait_cache_ways", "2"),
                        ("cache.l1_size_bytes", "1KB"),
                        ("cache.l1_ways", "2"),
                        ("cache.l2_size_bytes", "2KB"),
                        ("cache.l2_ways", "2"),
                        ("cache.llc_size_bytes", "4KB"),
                        ("cache.llc_ways", "2"),
                    ]);
                }
                for (k, v) in sets {
                    s.params.set_str(k, v).unwrap();
                }
                s.threads = 2;
                s.tx = if w.name == "tpcc" { 12 } else { 60 };
                s.seed = 5;
                s.record_history = true;
                let mut e = Engine::new(s).unwrap();
                e.run(&mut |_| {}).unwrap();
                e.finish();
                let base = e.history.as_ref().unwrap().initial_media.clone();
                let log = &e.ctx.nvm.persist_log;
                let events = log.events();
                let n = events.len() as u64;
                // Seeded points, plus the first and the last.
                let mut pts: Vec<u64> = (0..48u64)
                    .map(|i| {
                        let h = (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n;
                        (h ^ (h >> 29)) % (n + 1)
                    })
                    .chain([0, n])
                    .collect();
                pts.sort_unstable();
                pts.dedup();
                let mut img = base;
                let mut applied = 0u64;
                for k in pts {
                    while applied < k {
                        let ev = &events[applied as usize];
                        img.write_bytes(ev.addr, log.data(ev));
                        applied += 1;
                    }
                    let mut fast = Logged {
                        ov: Overlay::new(&img),
                        writes: Vec::new(),
                    };
                    let mut slow = Logged {
                        ov: Overlay::new(&img),
                        writes: Vec::new(),
                    };
                    let what = format!("{} {persist} {mutant} point {k}", w.name);
                    match (
                        recover(&mut fast, &e.params, &e.ctx.layout),
                        recover_reference(&mut slow, &e.params, &e.ctx.layout),
                    ) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(
                                (a.bytes_read, a.bytes_written, &a.details),
                                (b.bytes_read, b.bytes_written, &b.details),
                                "{what}"
                            );
                            assert_eq!(a.modeled_ns, b.modeled_ns, "{what}");
                            compared.0 += 1;
                        }
                        (Err(a), Err(b)) => {
                            assert_eq!(a.to_string(), b.to_string(), "{what}");
                            compared.1 += 1;
                        }
                        (a, b) => panic!("{what}: {:?} vs {:?}", a.is_ok(), b.is_ok()),
                    }
                    assert_eq!(fast.writes, slow.writes, "{what}");
                }
            }
        }
        assert!(compared.0 > 500, "{compared:?}");
    }

    #[test]
    fn entries_go_speculative_then_committed_and_a_crash_reclaims_speculative_lines() {
        let (mut e, mut ctx, p) = setup();
        let (a, b) = (0x1000, 0x2040);
        e.tx_begin(&mut ctx, 0, 0);
        store_and_write_back(&mut e, &mut ctx, a, 11);
        store_and_write_back(&mut e, &mut ctx, b, 22);
        for l in [a, b] {
            let s = e.cache.find(l / 64).unwrap();
            assert_eq!(e.cache.entry(s).state, EntryState::Speculative);
            assert_ne!(e.cache.entry(s).dev, 0, "out of place: a pool line");
        }
        // Crash before commit: nothing of the transaction, both lines reclaimed.
        let (v, d) = crash(&ctx, &p, &[a, b]);
        assert_eq!(v, vec![0, 0]);
        assert_eq!(detail(&d, "reclaimed_lines"), 2.0);
        assert_eq!(detail(&d, "speculative_cache_entries_dropped"), 2.0);
        e.tx_end(&mut ctx, 0, 10);
        for l in [a, b] {
            let s = e.cache.find(l / 64).unwrap();
            assert_eq!(e.cache.entry(s).state, EntryState::Committed, "lazy: dirty");
        }
        // After commit: both, from the AIT-cache images (supercapacitor).
        let (v, d) = crash(&ctx, &p, &[a, b]);
        assert_eq!(v, vec![11, 22]);
        assert_eq!(detail(&d, "committed_cache_entries"), 2.0);
        assert_eq!(detail(&d, "reclaimed_lines"), 0.0);
        // The next transaction overwrites a: its committed entry goes to
        // the AIT first and the line goes back home.
        e.tx_begin(&mut ctx, 0, 20);
        store_and_write_back(&mut e, &mut ctx, a, 33);
        assert_eq!(e.s.flush_overwrite, 1);
        let s = e.cache.find(a / 64).unwrap();
        assert_eq!(e.cache.entry(s).dev, 0, "back home");
        let (v, _) = crash(&ctx, &p, &[a, b]);
        assert_eq!(v, vec![11, 22]);
        e.tx_end(&mut ctx, 0, 30);
        assert_eq!(crash(&ctx, &p, &[a, b]).0, vec![33, 22]);
        assert_eq!(e.s.released, 1, "a's pool line is free again");
    }

    #[test]
    fn overflowed_speculative_entries_are_logged_and_replayed_after_commit() {
        let (mut e, mut ctx, p) = setup();
        let lines = [0x1000, 0x2040, 0x3080];
        e.tx_begin(&mut ctx, 0, 0);
        for (i, &l) in lines.iter().enumerate() {
            store_and_write_back(&mut e, &mut ctx, l, 100 + i as u64);
        }
        // Three speculative entries in two ways: one overflowed.
        assert_eq!(e.s.log_entries, 1);
        assert!(e.cores[0].bloom.may_contain(lines[0]));
        e.tx_end(&mut ctx, 0, 10);
        assert_eq!(e.s.log_applied, 1);
        // A crash after the commit word but before the log reached the
        // AIT: the committed log is replayed from its bytes.
        let mut img = ctx.nvm.media().clone();
        img.write_u64(e.g.ait_addr(lines[0]), 0);
        let mut ov = Overlay::new(&img);
        let r = recover(&mut ov, &p, &ctx.layout).unwrap();
        assert_eq!(detail(&r.details, "overflow_log_replayed"), 1.0);
        let v: Vec<u64> = lines.iter().map(|&l| ov.read_u64(l)).collect();
        assert_eq!(v, vec![100, 101, 102]);
    }

    #[test]
    fn bloom_filter_has_no_false_negatives() {
        let mut b = Bloom::new(256, 3);
        let keys: Vec<u64> = (0..200u64)
            .map(|i| i.wrapping_mul(0x1234_5677) * 64)
            .collect();
        assert!(!b.may_contain(keys[0]));
        for &k in &keys {
            b.insert(k);
        }
        assert!(keys.iter().all(|&k| b.may_contain(k)));
        b.clear();
        assert!(keys.iter().all(|&k| !b.may_contain(k)));
    }

    #[test]
    fn records_round_trip_and_reject_tears() {
        let r = record(0x4000, 7, tag(3, 9));
        assert_eq!(parse_record(&r), Some((0x4000, 7, tag(3, 9))));
        let mut t = r;
        t[8] ^= 1;
        assert_eq!(parse_record(&t), None);
        assert_eq!(parse_record(&[0u8; 32]), None);
    }
}
