//! EHOU: efficient hardware-assisted out-place update on the Optane AIT
//! (Deng, Yue, Lu, Zhu; EHOU paper §III), at cache-line
//! granularity.
//!
//! - A transactional write of line P goes out of place: P's AIT-cache entry
//!   is remapped to a newly allocated device line and marked speculative
//!   (S); the memory controller keeps the transaction's write set per
//!   core. Allocation: a line away from home goes back home, a line at
//!   home takes a free line of the pool (free list), so recovery can
//!   materialise every mapping by copying pool lines home (docs/model/out-of-place.md).
//! - Victim rule: a speculative entry is evicted only when every way of
//!   its set is speculative; it then goes to the core's overflow log (a
//!   FIFO in PM behind a small ADR log buffer) and the core's Bloom filter,
//!   which an AIT-cache miss consults before the log.
//! - Commit: one durable per-core commit word (the S/C flip of the whole
//!   write set at once, once every line and mapping record of the set is
//!   durable, handled by the controller after the writes that arrived
//!   before it), then eager persisting writes the entries to the AIT, lazy
//!   persisting (EHOU) leaves them committed-dirty in the AIT cache until
//!   evicted or overwritten; the overflow log is applied to the
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
//!
//! Files: `layout` (geometry, record formats), `ait` (the AIT-cache
//! entries: lookup, install, speculative remap, AIT writes, end-of-run
//! homing), `overflow` (overflow log + Bloom filter, reclaim list),
//! `recovery` (§III-D as a scan that follows the writes, audit).

mod ait;
mod layout;
mod overflow;
mod recovery;
#[cfg(test)]
mod tests;

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::{Error, Result};
use crate::mem::optane::{AitCache, EntryState};
use crate::schemes::kit::line_index::LineIndex;
use crate::schemes::kit::log::{owner_of, MAX_CORES};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, Scheme, SchemeInfo, SchemeStats, Store, Writeback,
    MUTANT_SOURCE,
};

use crate::types::{line_of, word_index, write_word, Addr, CoreId, Cycle, LineData, Purpose};
use layout::{Geometry, LOG_ENTRY_BYTES, TXSEQ_BITS};
pub use overflow::Bloom;
use recovery::{new_scan, recover};
use rustc_hash::FxHashMap;

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
    p!("ehou.mutant", str "none", &["none", "evict-speculative-to-ait", "commit-before-lines", "reuse-before-flip", "log-any-tag"],
        MUTANT_SOURCE,
        "test-only planted bug (tests/ehou.rs, tests/mutants.rs; refused by the CLI): evict-speculative-to-ait = an evicted speculative AIT-cache entry is written to the AIT instead of the overflow log (EHOU Fig. 5); commit-before-lines = TxEnd persists the commit word before the write set's lines still in the CPU caches are written out of place; reuse-before-flip = a commit's previous device lines are free for writes arriving before its flip; log-any-tag = recovery applies overflow-log entries tagged with any of the core's transactions, not only its last committed one"),
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
    defaults: crate::schemes::RunDefaults {
        machine: Some(&crate::schemes::machines::EHOU),
        tx: 10_000,
        reaches: "no periodic mechanism (AIT-cache overflow log when sets fill)",
        needs: Some(crate::schemes::machines::needs_optane_dimm),
    },
};

fn reserved_bytes(p: &Params) -> u64 {
    // AIT: one 8 B entry per line of the whole capacity (covers home).
    p.u64("nvm.capacity_bytes") / 8
        + p.u64("ehou.pool_lines") * 64
        + MAX_CORES * p.u64("ehou.log_entries_per_core") * LOG_ENTRY_BYTES
        + p.u64("nvm.capacity_bytes") / 8 / 4096 / 8
        + (4 << 20)
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
    /// When the write queue accepted the line's latest write (the flip
    /// waits for it).
    written_at: Cycle,
}

struct Core {
    txid: u32,
    txseq: u64,
    in_tx: bool,
    ws: Vec<WsLine>,
    index: LineIndex,
    /// Overflow log of the running transaction (mirror of the PM log).
    log: Vec<(Addr, u64)>,
    /// Log entries still in the ADR log buffer (the last ones).
    buffered: usize,
    bloom: Bloom,
    reclaim: u64,
    /// The latest arrival among the running transaction's reclaim entries.
    reclaim_at: Cycle,
    /// When the running transaction's latest mapping record (AIT-cache
    /// image or overflow-log entry) persisted: its flip waits for it.
    records_at: Cycle,
    /// When the latest overflow-log entry persisted.
    log_at: Cycle,
    /// When the core's latest commit flip arrived: entries it committed
    /// reach the AIT, and device lines it released are reused, no earlier.
    flip_at: Cycle,
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
    /// Test-only (`ehou.mutant=commit-before-lines`).
    commit_first: bool,
    /// Test-only (`ehou.mutant=reuse-before-flip`).
    reuse_early: bool,
    cache: AitCache,
    ait_cycles: Cycle,
    /// Slots whose ADR image is non-zero, and when each image last changed.
    img: Vec<bool>,
    img_at: Vec<Cycle>,
    /// Non-home mappings in the AIT media (mirror of its bytes; only
    /// checked by debug assertions).
    #[cfg(debug_assertions)]
    ait: FxHashMap<Addr, u64>,
    /// AIT directory words written so far (mirror), and per AIT page whose
    /// bit is set when the write that set it was accepted.
    dir: FxHashMap<Addr, u64>,
    dir_at: FxHashMap<u64, Cycle>,
    /// Latest committed non-home mapping of each line.
    committed: FxHashMap<Addr, u64>,
    /// Free device lines: (when the flip that released it arrived, line).
    free: Vec<(Cycle, u64)>,
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
        commit_first: p.str("ehou.mutant") == "commit-before-lines",
        reuse_early: p.str("ehou.mutant") == "reuse-before-flip",
        img: vec![false; cache.capacity()],
        img_at: vec![0; cache.capacity()],
        cache,
        ait_cycles: p.u64("dimm.ait_cache_latency_cycles"),
        #[cfg(debug_assertions)]
        ait: FxHashMap::default(),
        dir: FxHashMap::default(),
        dir_at: FxHashMap::default(),
        committed: FxHashMap::default(),
        free: Vec::new(),
        next_fresh: 0,
        cores: (0..layout.threads)
            .map(|_| Core {
                txid: 0,
                txseq: 0,
                in_tx: false,
                ws: Vec::new(),
                index: LineIndex::default(),
                log: Vec::new(),
                buffered: 0,
                bloom: Bloom::new(
                    p.usize("ehou.bloom_bits"),
                    p.u64("ehou.bloom_hashes") as u32,
                ),
                reclaim: 0,
                reclaim_at: 0,
                records_at: 0,
                log_at: 0,
                flip_at: 0,
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
        c.records_at = 0;
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
        if let Some(i) = c.index.get(line) {
            let w = &mut c.ws[i];
            write_word(&mut w.data, word_index(addr), new);
            w.flushed = false;
            return now;
        }
        let mut base = [0u8; 64];
        ctx.nvm.peek(self.logical_dev(line), &mut base);
        write_word(&mut base, word_index(addr), new);
        let c = &mut self.cores[core];
        c.index.push(line);
        c.ws.push(WsLine {
            line,
            data: base,
            old: 0,
            new: None,
            flushed: false,
            written_at: 0,
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
                let i = c.index.get(line_addr).expect("in the write set");
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
        let txseq = self.cores[core].txseq;
        if self.commit_first {
            ctx.nvm
                .persist_adr_structure(self.g.commit_addr(core), &txseq.to_le_bytes(), now);
        }
        // The write set's lines still in the CPU caches go out of place.
        let arrive = now + self.flush_latency;
        for i in 0..n {
            if !self.cores[core].ws[i].flushed {
                self.write_tx_line(ctx, core, i, arrive + i as Cycle);
            }
        }
        // Commit: the S/C flip of the whole write set is one durable word,
        // once every line of the set is in the persistence domain (those
        // written here and those evicted earlier in the transaction). The
        // request follows the data writes through the controller's queue,
        // which handles it after every write that arrived before it.
        let c = &self.cores[core];
        let done =
            c.ws.iter()
                .fold(now.max(c.records_at), |t, w| t.max(w.written_at));
        if !self.commit_first {
            ctx.nvm.persist_adr_in_queue_order(
                self.g.commit_addr(core),
                &txseq.to_le_bytes(),
                done,
            );
        }
        self.cores[core].flip_at = done;
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
            // durable (committed in the persistence domain): for writes
            // arriving after the flip.
            if old != 0 {
                let at = if self.reuse_early { 0 } else { done };
                self.free.push((at, old));
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

    fn recovery_paths(&self) -> &'static [&'static str] {
        &[overflow::OVERFLOW_LOG_PATH]
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
