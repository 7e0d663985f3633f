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

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::optane::{AitCache, EntryState};
use crate::mem::MemRead;
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::log::{csum, owner_of, recovery_ns, MAX_CORES};
use crate::schemes::{
    raise_advice, Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo,
    SchemeStats, Store, Writeback, MUTANT_SOURCE,
};
use crate::types::{line_of, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

pub static PARAMS: &[ParamSpec] = &[
    p!("ehou.persist", str "lazy", &["lazy", "eager"],
        "EHOU paper §III-A/B; §IV-A evaluates EHOU with lazy persisting",
        "eager: commit writes the committed AIT-cache entries to the AIT (on the commit path); lazy: committed entries stay dirty in the AIT cache (inside the persistence domain) until evicted or overwritten"),
    p!("ehou.pool_lines", int 1 << 20, "lines", Check::Range(16.0, 1e10),
        "modelling choice, see docs/MODEL.md (64 MiB of free device lines; a line away from home holds one; sparse, so unused lines cost nothing)",
        "device lines of the free pool (out-of-place targets of lines at home)"),
    p!("ehou.log_entries_per_core", int 4096, "entries", Check::Range(8.0, 1e8),
        "modelling choice, see docs/MODEL.md (no size in the paper; 128 KiB per core)",
        "overflow log capacity per core (32 B entries: physical line, device line, transaction tag, checksum)"),
    p!("ehou.log_buffer_entries", int 8, "entries", Check::Range(1.0, 4096.0),
        "modelling choice, see docs/MODEL.md (\"extra small ADR protected log buffer\", §III-C; 8 x 32 B = one 256 B media block)",
        "ADR-protected overflow-log buffer per core: entries are written to the PM log when it fills; entries applied at commit before that cost no PM write"),
    p!("ehou.bloom_bits", int 4096, "bits", Check::PowerOfTwo(64, 1 << 24),
        "modelling choice, see docs/MODEL.md (no size in the paper; Bloom, CACM 1970 = its ref. [13])",
        "per-core Bloom filter of evicted speculative entries' physical lines"),
    p!("ehou.bloom_hashes", int 3, "hashes", Check::Range(1.0, 16.0),
        "modelling choice, see docs/MODEL.md",
        "hash functions of the Bloom filter (double hashing)"),
    p!("ehou.reclaim_entries_per_core", int 16384, "entries", Check::Range(8.0, 16777215.0),
        "modelling choice, see docs/MODEL.md (ADR reclaim list, §III-D; one entry per speculative line of a transaction)",
        "reclaim list capacity per core (device lines allocated by the running transaction)"),
    p!("ehou.mutant", str "none", &["none", "evict-speculative-to-ait"],
        MUTANT_SOURCE,
        "test-only planted bug (tests/ehou.rs; refused by the CLI): evict-speculative-to-ait = an evicted speculative AIT-cache entry is written to the AIT instead of the overflow log (EHOU Fig. 5)"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "ehou",
    description: "EHOU: cache-line out-of-place updates remapped in the Optane AIT cache (speculative/committed entries, lazy or eager AIT persisting, overflow log + Bloom filter, ADR reclaim list)",
    durability: Durability::AtCommit,
    params: PARAMS,
    reserved_bytes,
    build,
    recover,
    recovery: RecoveryForm::Scan(new_scan),
    contexts: None,
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

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            ext,
            now,
            ..
        } = ev;
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

/// Recovery (§III-D) from the durable bytes alone: [`EhouScan`] from
/// scratch (recovery/scan.rs), so crash verification's resumed scan runs
/// the same parsing code.
fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// EHOU's recovery as a scan that follows the writes (recovery/scan.rs).
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    let g = Geometry::new(p, layout);
    let threads = layout.threads;
    Box::new(EhouScan {
        g,
        threads,
        started: false,
        stale: false,
        commits: vec![0; threads],
        dir: FxHashMap::default(),
        dir_reads: FxHashMap::default(),
        flagged: FxHashSet::default(),
        media: BTreeMap::new(),
        logs: (0..threads).map(|_| CoreLog::default()).collect(),
        slot_reads: FxHashMap::default(),
        slots: FxHashMap::default(),
        by_line: FxHashMap::default(),
        uncommitted: vec![FxHashSet::default(); threads],
        applied: 0,
        reclaims: (0..threads).map(|_| Reclaim::default()).collect(),
        map: FxHashMap::default(),
        owner: FxHashMap::default(),
        pending: Vec::new(),
        touched: Vec::new(),
        finish_sum: 0,
        dir_read_total: 0,
        slot_read_total: 0,
    })
}

/// A core's overflow log as recovery reads it: the entries of its last
/// committed transaction (a valid prefix), the last mapping of each line
/// among them, and the entries read (the first invalid one included).
#[derive(Default)]
struct CoreLog {
    entries: Vec<(Addr, u64)>,
    last: FxHashMap<Addr, u64>,
    reads: u64,
}

/// A core's reclaim list as the audit reads it: the device lines of an
/// uncommitted transaction (none if its transaction committed) and the
/// lines read.
#[derive(Default)]
struct Reclaim {
    lines: Vec<u64>,
    reads: u64,
}

/// Recovery's state for one crash image, kept up to date write by write.
///
/// Recovery's result is a function of small units of bytes: the commit
/// words, each AIT-directory word (and the AIT pages it flags), each AIT
/// entry of a flagged page, each core's overflow log (a prefix, read
/// whole), each 32 B AIT-cache image, each reclaim list and each pool
/// line a mapping names. The merged mapping of a line is a function of
/// its own entries (the last found wins: AIT < overflow logs in core
/// order < committed images by tag), so a write re-reads the unit it
/// touched and recomputes the lines whose entries changed; their home
/// writes (the copy of their pool line) are made, replaced or withdrawn
/// (`ScanIo::rehome`), each line written once with its final bytes. The
/// modelled read counts are kept per unit; the from-scratch scan counts
/// the bytes of each 4 KiB page of the directory and of the image area
/// from where the scan's zero probe lands, so they are re-probed per page.
struct EhouScan {
    g: Geometry,
    threads: usize,
    started: bool,
    stale: bool,
    commits: Vec<u64>,
    /// Nonzero AIT-directory words.
    dir: FxHashMap<Addr, u64>,
    /// Directory words read, per 4 KiB page of the directory.
    dir_reads: FxHashMap<u64, u64>,
    /// AIT pages whose directory bit is set.
    flagged: FxHashSet<u64>,
    /// Nonzero AIT entries of flagged pages (home lines only), by line.
    media: BTreeMap<Addr, u64>,
    logs: Vec<CoreLog>,
    /// Image slots read, per 4 KiB page of the image area.
    slot_reads: FxHashMap<u64, u64>,
    /// Images that parse: slot -> (line, mapping, tag).
    slots: FxHashMap<u64, (Addr, u64, u64)>,
    /// Images of home lines that parse, by line: (tag, mapping, slot).
    by_line: FxHashMap<Addr, Vec<(u64, u64, u64)>>,
    /// Per core: slots of its images not (yet) committed.
    uncommitted: Vec<FxHashSet<u64>>,
    /// Committed images of home lines.
    applied: u64,
    reclaims: Vec<Reclaim>,
    /// The merged nonzero mappings and the pool line bytes copied home.
    map: FxHashMap<Addr, (u64, LineData)>,
    /// Pool line -> the line mapping it.
    owner: FxHashMap<u64, Addr>,
    /// Reserved-area byte ranges written since the last resume.
    pending: Vec<(Addr, Addr)>,
    /// Lines whose entries changed in this resume.
    touched: Vec<Addr>,
    /// The wrapping sum of the finish writes' piece hashes.
    finish_sum: u64,
    /// Sums of `dir_reads` and `slot_reads`.
    dir_read_total: u64,
    slot_read_total: u64,
}

/// Image-area and directory pages are probed 4 KiB at a time, as the
/// from-scratch scan reads them.
const PROBE_PAGE: u64 = 4096;

impl EhouScan {
    fn dir_end(&self) -> Addr {
        let g = &self.g;
        let ait_pages = (g.ait_addr(g.home_limit) - g.ait_base).div_ceil(4096);
        g.dir_base + ait_pages.div_ceil(64) * 8
    }

    fn slot_end(&self) -> Addr {
        self.g.slot_addr(self.g.slots as usize)
    }

    fn committed(&self, tag: u64) -> bool {
        let (c, s) = ((tag >> TXSEQ_BITS) as usize, tag & ((1 << TXSEQ_BITS) - 1));
        c < self.commits.len() && s != 0 && s <= self.commits[c]
    }

    /// Where the scan starts reading units of `unit` bytes in the part of
    /// 4 KiB page `page` within `[lo, hi)` (`hi` if it reads none): the
    /// zero probe, aligned down to a unit.
    fn probe(
        io: &dyn ScanIo,
        base: Addr,
        unit: u64,
        page: u64,
        lo: Addr,
        hi: Addr,
    ) -> (Addr, Addr) {
        let (s, e) = (
            (page * PROBE_PAGE).max(lo),
            ((page + 1) * PROBE_PAGE).min(hi),
        );
        let a = io.zeros_until(s, e);
        if a >= e {
            return (e, e);
        }
        (a - (a - base) % unit, e)
    }

    /// Directory page `page`: probe it (its word count) and read its
    /// words `which` (all that it reads when `None`).
    fn dir_page(&mut self, io: &dyn ScanIo, page: u64, which: Option<&[Addr]>) {
        let (lo, hi) = (self.g.dir_base, self.dir_end());
        let (a0, e) = Self::probe(io, lo, 8, page, lo, hi);
        let n = (e - a0) / 8;
        self.dir_read_total += n - self.dir_reads.insert(page, n).unwrap_or(0);
        let word = |this: &mut Self, a: Addr| {
            let w = io.read_u64(a);
            let old = this.dir.get(&a).copied().unwrap_or(0);
            if w == old {
                return;
            }
            if w == 0 {
                this.dir.remove(&a);
            } else {
                this.dir.insert(a, w);
            }
            let mut changed = w ^ old;
            while changed != 0 {
                let bit = changed.trailing_zeros() as u64;
                changed &= changed - 1;
                let pg = (a - this.g.dir_base) / 8 * 64 + bit;
                this.ait_page(io, pg, w >> bit & 1 == 1);
            }
        };
        match which {
            None => {
                let mut a = a0;
                while a < e {
                    word(self, a);
                    a += 8;
                }
            }
            Some(ws) => {
                for &a in ws {
                    word(self, a);
                }
            }
        }
    }

    /// AIT page `pg` became flagged (its entries are read) or unflagged.
    fn ait_page(&mut self, io: &dyn ScanIo, pg: u64, set: bool) {
        let first = pg * 512 * 64;
        let lines = first..(first + 512 * 64).min(self.g.home_limit.max(first));
        if !set {
            self.flagged.remove(&pg);
            let gone: Vec<Addr> = self.media.range(lines).map(|(&l, _)| l).collect();
            for l in gone {
                self.set_media(l, 0);
            }
            return;
        }
        self.flagged.insert(pg);
        let mut page = [0u8; 4096];
        io.read_bytes(self.g.ait_base + pg * 4096, &mut page);
        for (i, e) in page.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(e.try_into().unwrap());
            let line = (pg * 512 + i as u64) * 64;
            if v != 0 && line < self.g.home_limit {
                self.set_media(line, v);
            }
        }
    }

    /// `line`'s AIT entry (of a flagged page) reads `v` (0: none).
    fn set_media(&mut self, line: Addr, v: u64) {
        let old = if v == 0 {
            self.media.remove(&line)
        } else {
            self.media.insert(line, v)
        };
        if old == (v != 0).then_some(v) {
            return;
        }
        self.touch(line);
        // Its finish write (the reset) comes or goes.
        let h = crate::recovery::writes::piece_hash(self.g.ait_addr(line), &[0u8; 8]);
        match (old.is_some(), v != 0) {
            (false, true) => self.finish_sum = self.finish_sum.wrapping_add(h),
            (true, false) => self.finish_sum = self.finish_sum.wrapping_sub(h),
            _ => {}
        }
    }

    /// AIT entry word at `a` was written: re-read it if its page is read.
    fn ait_word(&mut self, io: &dyn ScanIo, a: Addr) {
        let g = &self.g;
        let line = (a - g.ait_base) / 8 * 64;
        if line >= g.home_limit || !self.flagged.contains(&((a - g.ait_base) / 4096)) {
            return;
        }
        let v = io.read_u64(a);
        self.set_media(line, v);
    }

    /// Image-area page `page`: probe it (its slot count) and parse its
    /// slots `which` (all that it reads when `None`).
    fn slot_page(&mut self, io: &dyn ScanIo, page: u64, which: Option<&[u64]>) {
        let (lo, hi) = (self.g.slot_base, self.slot_end());
        let (a0, e) = Self::probe(io, lo, SLOT_BYTES, page, lo, hi);
        let n = (e - a0) / SLOT_BYTES;
        self.slot_read_total += n - self.slot_reads.insert(page, n).unwrap_or(0);
        match which {
            None if a0 < e => {
                let mut buf = [0u8; 4096];
                let buf = &mut buf[..(e - a0) as usize];
                io.read_bytes(a0, buf);
                let s0 = (a0 - lo) / SLOT_BYTES;
                for (i, b) in buf.chunks_exact(SLOT_BYTES as usize).enumerate() {
                    self.set_slot(s0 + i as u64, parse_record(b.try_into().unwrap()));
                }
            }
            None => {}
            Some(ss) => {
                for &s in ss {
                    let mut b = [0u8; SLOT_BYTES as usize];
                    io.read_bytes(self.g.slot_addr(s as usize), &mut b);
                    self.set_slot(s, parse_record(&b));
                }
            }
        }
    }

    /// Image slot `s` now parses as `rec`.
    fn set_slot(&mut self, s: u64, rec: Option<(Addr, u64, u64)>) {
        if self.slots.get(&s) == rec.as_ref() {
            return;
        }
        if let Some((line, enc, t)) = self.slots.remove(&s) {
            let c = (t >> TXSEQ_BITS) as usize;
            if c < self.threads {
                self.uncommitted[c].remove(&s);
            }
            if line < self.g.home_limit {
                if self.committed(t) {
                    self.applied -= 1;
                }
                let v = self.by_line.get_mut(&line).expect("indexed");
                v.retain(|x| *x != (t, enc, s));
                if v.is_empty() {
                    self.by_line.remove(&line);
                }
                self.touch(line);
            }
        }
        if let Some((line, enc, t)) = rec {
            self.slots.insert(s, (line, enc, t));
            let c = (t >> TXSEQ_BITS) as usize;
            let committed = self.committed(t);
            if c < self.threads && !committed {
                self.uncommitted[c].insert(s);
            }
            if line < self.g.home_limit {
                self.applied += u64::from(committed);
                self.by_line.entry(line).or_default().push((t, enc, s));
                self.touch(line);
            }
        }
    }

    /// Core `c`'s overflow log, parsed again (its commit word or its
    /// entries changed).
    fn read_log(&mut self, io: &dyn ScanIo, c: usize) {
        let mut log = std::mem::take(&mut self.logs[c]);
        for &(line, _) in &log.entries {
            self.touch(line);
        }
        log.entries.clear();
        log.last.clear();
        log.reads = 0;
        let cs = self.commits[c];
        if cs != 0 {
            for i in 0..self.g.log_entries {
                let mut b = [0u8; 32];
                io.read_bytes(self.g.log_addr(c, i), &mut b);
                log.reads += 1;
                match parse_record(&b) {
                    Some((line, enc, t)) if t == tag(c, cs) && line < self.g.home_limit => {
                        log.entries.push((line, enc));
                        log.last.insert(line, enc);
                        self.touch(line);
                    }
                    _ => break,
                }
            }
        }
        self.logs[c] = log;
    }

    /// Core `c`'s reclaim list, read again.
    fn read_reclaim(&mut self, io: &dyn ScanIo, c: usize) {
        let (lines, reads) = reclaim_list(io, &self.g, c, self.commits[c]);
        self.reclaims[c] = Reclaim { lines, reads };
    }

    /// The merged mapping of `line` (0: home): the last entry found wins.
    fn winner(&self, line: Addr) -> u64 {
        if let Some(v) = self.by_line.get(&line) {
            if let Some(&(_, enc, _)) = v
                .iter()
                .filter(|x| self.committed(x.0))
                .max_by_key(|x| (x.0, x.1))
            {
                return enc;
            }
        }
        for log in self.logs.iter().rev() {
            if let Some(&enc) = log.last.get(&line) {
                return enc;
            }
        }
        self.media.get(&line).copied().unwrap_or(0)
    }

    /// `line`'s entries changed since the last resume.
    fn touch(&mut self, line: Addr) {
        if self.started {
            self.touched.push(line);
        }
    }

    /// Fold a written reserved-area range into the state (module docs).
    fn reread(&self, s: Addr, e: Addr, work: &mut Work) {
        let g = self.g;
        let clip = |lo: Addr, hi: Addr| (s.max(lo) < e.min(hi)).then(|| (s.max(lo), e.min(hi)));
        if clip(g.commit_base, g.commit_addr(self.threads)).is_some() {
            work.commits = true;
        }
        if let Some((a, b)) = clip(g.reclaim_base, g.reclaim_addr(self.threads)) {
            let stride = g.reclaim_addr(1) - g.reclaim_addr(0);
            for c in (a - g.reclaim_base) / stride..=(b - 1 - g.reclaim_base) / stride {
                work.reclaim[c as usize] = true;
            }
        }
        if let Some((a, b)) = clip(g.slot_base, self.slot_end()) {
            for sl in (a - g.slot_base) / SLOT_BYTES..=(b - 1 - g.slot_base) / SLOT_BYTES {
                work.slots.push(sl);
            }
        }
        if let Some((a, b)) = clip(g.dir_base, self.dir_end()) {
            let first = a - (a - g.dir_base) % 8;
            work.dir.extend((first..b).step_by(8));
        }
        if let Some((a, b)) = clip(g.ait_base, g.ait_addr(g.home_limit)) {
            let first = a - (a - g.ait_base) % 8;
            work.ait.extend((first..b).step_by(8));
        }
        if let Some((a, b)) = clip(g.log_addr(0, 0), g.log_addr(self.threads, 0)) {
            let span = g.log_entries * LOG_ENTRY_BYTES;
            for c in (a - g.log_base) / span..=(b - 1 - g.log_base) / span {
                work.logs[c as usize] = true;
            }
        }
        if let Some((a, b)) = clip(g.pool_base, g.pool_base + g.pool_lines * 64) {
            for l in (a - g.pool_base) / 64..=(b - 1 - g.pool_base) / 64 {
                work.pool.push(l + 1);
            }
        }
    }

    /// Make the home write of `line` match its merged mapping `enc`:
    /// written, replaced or withdrawn.
    fn rehome_line(&mut self, io: &mut dyn ScanIo, line: Addr, enc: u64) -> Result<()> {
        let old = self.map.get(&line).map(|x| x.0);
        if enc == 0 {
            if let Some((_, bytes)) = self.map.remove(&line) {
                io.rehome(line, &bytes, None);
            }
            return Ok(());
        }
        if enc > self.g.pool_lines {
            return Err(Error::Internal(format!(
                "ehou recovery audit: line {line:#x} maps to a device line outside the pool"
            )));
        }
        if old != Some(enc) {
            if let Some(o) = self.owner.insert(enc, line) {
                return Err(Error::Internal(format!(
                    "ehou recovery audit: pool line {} mapped by both {o:#x} and {line:#x}",
                    enc - 1
                )));
            }
        }
        let mut buf = [0u8; 64];
        io.read_bytes(self.g.dev_addr(line, enc), &mut buf);
        match self.map.insert(line, (enc, buf)) {
            None => io.home(line, &buf),
            Some((_, b)) if b != buf => io.rehome(line, &b, Some(&buf)),
            Some(_) => {}
        }
        Ok(())
    }

    /// The from-scratch scan (`recover`): every unit read once, the
    /// audit as the reference recovery makes it, the copies in line order.
    fn scan_all(&mut self, io: &mut dyn ScanIo) -> Result<()> {
        let g = self.g;
        for c in 0..self.threads {
            self.commits[c] = io.read_u64(g.commit_addr(c));
        }
        // 1. The AIT (the directory names the pages to read).
        let dir_end = self.dir_end();
        nonzero_pages(&*io, g.dir_base, dir_end, |page| {
            self.dir_page(&*io, page, None)
        });
        // 2. The overflow log of each core's last committed transaction.
        for c in 0..self.threads {
            self.read_log(&*io, c);
        }
        // 3. The AIT-cache images.
        let slot_end = self.slot_end();
        nonzero_pages(&*io, g.slot_base, slot_end, |page| {
            self.slot_page(&*io, page, None)
        });
        // The merged mappings, by line.
        let mut lines: Vec<Addr> = self.media.keys().copied().collect();
        for log in &self.logs {
            lines.extend(log.entries.iter().map(|e| e.0));
        }
        lines.extend(self.by_line.keys().copied());
        lines.sort_unstable();
        lines.dedup();
        let map: Vec<(Addr, u64)> = lines
            .into_iter()
            .map(|l| (l, self.winner(l)))
            .filter(|x| x.1 != 0)
            .collect();
        // 4. Audit (its errors in the reference recovery's order).
        let owner = audit_map(&g, map.iter().copied())?;
        for c in 0..self.threads {
            self.read_reclaim(&*io, c);
            reclaim_check(&owner, c, &self.reclaims[c].lines)?;
        }
        self.owner = owner;
        // 5. Materialise: copy every remapped line home.
        for (line, enc) in map {
            let mut buf = [0u8; 64];
            io.read_bytes(g.dev_addr(line, enc), &mut buf);
            io.home(line, &buf);
            self.map.insert(line, (enc, buf));
        }
        Ok(())
    }
}

/// The units a resume re-reads (persisted writes, classified).
struct Work {
    commits: bool,
    reclaim: Vec<bool>,
    logs: Vec<bool>,
    slots: Vec<u64>,
    dir: Vec<Addr>,
    ait: Vec<Addr>,
    /// Pool lines (mappings, 1-based).
    pool: Vec<u64>,
}

impl ResumableScan for EhouScan {
    fn cursors(&self) -> usize {
        1
    }

    fn resume(&mut self, _c: usize, io: &mut dyn ScanIo) -> Result<()> {
        if !self.started {
            self.scan_all(io)?;
            self.started = true;
            io.mark();
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let mut work = Work {
            commits: false,
            reclaim: vec![false; self.threads],
            logs: vec![false; self.threads],
            slots: Vec::new(),
            dir: Vec::new(),
            ait: Vec::new(),
            pool: Vec::new(),
        };
        for &(s, e) in &pending {
            self.reread(s, e, &mut work);
        }
        if work.commits {
            for c in 0..self.threads {
                let v = io.read_u64(self.g.commit_addr(c));
                let old = self.commits[c];
                if v == old {
                    continue;
                }
                if v < old {
                    // Not a run's order: start over (never seen).
                    self.stale = true;
                    return Ok(());
                }
                self.commits[c] = v;
                work.logs[c] = true;
                work.reclaim[c] = true;
                let now: Vec<u64> = self.uncommitted[c]
                    .iter()
                    .copied()
                    .filter(|s| self.committed(self.slots[s].2))
                    .collect();
                for s in now {
                    self.uncommitted[c].remove(&s);
                    let line = self.slots[&s].0;
                    if line < self.g.home_limit {
                        self.applied += 1;
                        self.touch(line);
                    }
                }
            }
        }
        if !work.dir.is_empty() {
            work.dir.sort_unstable();
            work.dir.dedup();
            let dir = std::mem::take(&mut work.dir);
            for ws in dir.chunk_by(|a, b| a / PROBE_PAGE == b / PROBE_PAGE) {
                self.dir_page(&*io, ws[0] / PROBE_PAGE, Some(ws));
            }
        }
        for &a in &work.ait {
            self.ait_word(&*io, a);
        }
        if !work.slots.is_empty() {
            work.slots.sort_unstable();
            work.slots.dedup();
            let sb = self.g.slot_base;
            let slots = std::mem::take(&mut work.slots);
            for ss in slots.chunk_by(|a, b| {
                (sb + a * SLOT_BYTES) / PROBE_PAGE == (sb + b * SLOT_BYTES) / PROBE_PAGE
            }) {
                self.slot_page(&*io, (sb + ss[0] * SLOT_BYTES) / PROBE_PAGE, Some(ss));
            }
        }
        for c in 0..self.threads {
            if work.logs[c] {
                self.read_log(&*io, c);
            }
            if work.reclaim[c] {
                self.read_reclaim(&*io, c);
            }
        }
        // The lines whose entries changed, then those whose pool line did.
        // Pool lines change hands in any order: every changed mapping
        // gives its old one up before the new ones are claimed.
        let mut lines = std::mem::take(&mut self.touched);
        lines.sort_unstable();
        lines.dedup();
        let now: Vec<u64> = lines.iter().map(|&l| self.winner(l)).collect();
        for (&line, &enc) in lines.iter().zip(&now) {
            match self.map.get(&line) {
                Some(&(o, _)) if o != enc && self.owner.get(&o) == Some(&line) => {
                    self.owner.remove(&o);
                }
                _ => {}
            }
        }
        for (&line, &enc) in lines.iter().zip(&now) {
            self.rehome_line(io, line, enc)?;
        }
        work.pool.sort_unstable();
        work.pool.dedup();
        for enc in work.pool {
            if let Some(&line) = self.owner.get(&enc) {
                if lines.binary_search(&line).is_err() {
                    self.rehome_line(io, line, enc)?;
                }
            }
        }
        for c in 0..self.threads {
            reclaim_check(&self.owner, c, &self.reclaims[c].lines)?;
        }
        self.pending = pending;
        self.pending.clear();
        self.touched = lines;
        self.touched.clear();
        io.mark();
        Ok(())
    }

    /// Reset the AIT entry of every line the AIT maps (after every copy:
    /// a crash here re-runs the same copies).
    fn finish(&self, out: &mut dyn FnMut(Addr, &[u8])) {
        for &line in self.media.keys() {
            out(self.g.ait_addr(line), &[0u8; 8]);
        }
    }

    fn report(&self, p: &Params) -> RecoveryReport {
        let map = self.map.len() as u64;
        let read = self.threads as u64
            + self.dir_read_total
            + 64 * self.flagged.len() as u64
            + self.logs.iter().map(|l| l.reads).sum::<u64>()
            + self.slot_read_total
            + self.reclaims.iter().map(|r| r.reads).sum::<u64>()
            + map;
        let written = map + self.media.len() as u64;
        RecoveryReport {
            bytes_read: read * 64,
            bytes_written: written * 64,
            modeled_ns: recovery_ns(p, read, written),
            details: vec![
                ("remapped_lines", map as f64),
                (
                    "overflow_log_replayed",
                    self.logs.iter().map(|l| l.entries.len()).sum::<usize>() as f64,
                ),
                ("committed_cache_entries", self.applied as f64),
                (
                    "speculative_cache_entries_dropped",
                    (self.slots.len() as u64 - self.applied) as f64,
                ),
                (
                    "reclaimed_lines",
                    self.reclaims.iter().map(|r| r.lines.len()).sum::<usize>() as f64,
                ),
            ],
        }
    }

    fn follows_writes(&self) -> bool {
        true
    }

    fn persisted(&mut self, addr: Addr, len: u64) {
        // Home lines are not read by recovery.
        if addr + len > self.g.home_limit {
            self.pending.push((addr.max(self.g.home_limit), addr + len));
        }
    }

    fn stale(&self) -> bool {
        self.stale
    }

    /// A re-run crashed after every copy and some AIT resets reads the
    /// same bytes but for those entries (now zero): each line whose
    /// mapping came from a reset entry alone is no longer mapped (its copy
    /// is already home), every other line maps and is copied as before
    /// (pool lines are not written by recovery), the audit of that subset
    /// passes as the full one did, and the remaining entries are reset:
    /// the same image.
    fn finish_reruns_repeat(&self) -> bool {
        true
    }

    /// The AIT resets lie in the reserved area.
    fn finish_summary(&self) -> Option<(usize, Option<u64>)> {
        Some((self.media.len(), Some(self.finish_sum)))
    }
}

/// Recovery step 4, mappings: no pool line mapped twice or outside the
/// pool. Returns the owner of each mapped pool line.
fn audit_map(
    g: &Geometry,
    map: impl ExactSizeIterator<Item = (Addr, u64)>,
) -> Result<FxHashMap<u64, Addr>> {
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
    Ok(owner)
}

/// Core `c`'s reclaim list: the device lines (nonzero entries) of its
/// uncommitted transaction, none if it committed (`cs` is its commit
/// word); and the lines read.
fn reclaim_list(img: &dyn MemRead, g: &Geometry, c: usize, cs: u64) -> (Vec<u64>, u64) {
    let ra = g.reclaim_addr(c);
    let h = img.read_u64(ra);
    let (txseq, n) = (h >> RECLAIM_COUNT_BITS, h & ((1 << RECLAIM_COUNT_BITS) - 1));
    if txseq <= cs || n > g.reclaim_cap {
        return (Vec::new(), 1);
    }
    let lines = (0..n)
        .map(|i| img.read_u64(ra + 64 + i * 8))
        .filter(|&e| e != 0)
        .collect();
    (lines, 1 + n.div_ceil(8))
}

/// Recovery step 4, reclaim lists: no device line of core `c`'s
/// uncommitted transaction is mapped.
fn reclaim_check(owner: &FxHashMap<u64, Addr>, c: usize, lines: &[u64]) -> Result<()> {
    for enc in lines {
        if let Some(line) = owner.get(enc) {
            return Err(Error::Internal(format!(
                "ehou recovery audit: pool line {} of core {c}'s uncommitted transaction is mapped by {line:#x} (a speculative mapping reached the AIT)",
                enc - 1
            )));
        }
    }
    Ok(())
}

/// Recovery step 4 as one function (the reference recovery of the tests):
/// no pool line mapped twice, none both mapped and reclaimed by an
/// uncommitted transaction. Returns the reclaimed lines.
#[cfg(test)]
fn audit(
    img: &dyn MemRead,
    g: &Geometry,
    commits: &[u64],
    map: impl ExactSizeIterator<Item = (Addr, u64)>,
    read: &mut u64,
) -> Result<u64> {
    let owner = audit_map(g, map)?;
    let mut reclaimed = 0u64;
    for (c, &cs) in commits.iter().enumerate() {
        let (lines, reads) = reclaim_list(img, g, c, cs);
        *read += reads;
        reclaim_check(&owner, c, &lines)?;
        reclaimed += lines.len() as u64;
    }
    Ok(reclaimed)
}

/// Each `PROBE_PAGE` page of `[base, end)` holding a nonzero byte, in
/// address order (the from-scratch scan skips all-zero pages).
fn nonzero_pages(io: &dyn ScanIo, base: Addr, end: Addr, mut each: impl FnMut(u64)) {
    let mut a = base;
    while a < end {
        a = io.zeros_until(a, end);
        if a >= end {
            break;
        }
        let page = a / PROBE_PAGE;
        each(page);
        a = (page + 1) * PROBE_PAGE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::hierarchy::WritebackCause;
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
        let ev = Store {
            core: 0,
            addr: line,
            old: 0,
            new: v,
            in_tx: true,
            now: 0,
        };
        e.store(ctx, ev, &mut ext);
        let mut data = [0u8; 64];
        data[..8].copy_from_slice(&v.to_le_bytes());
        let ev = Writeback {
            core: 0,
            line_addr: line,
            data: &data,
            ext: &ext,
            cause: WritebackCause::Eviction,
            now: 0,
        };
        e.writeback(ctx, ev);
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
