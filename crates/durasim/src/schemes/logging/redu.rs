//! REDU: hardware-assisted redo logging with asynchronous, direct update
//! from a DRAM write cache (Jeong et al., "Efficient Hardware-assisted
//! Logging with Asynchronous and Direct-Update for Persistent Memory",
//! MICRO 2018), as the EHOU paper's baseline (EHOU §IV-A, ref. [5];
//! BASELINES.md). docs/model/logging.md "REDU" records what is from the paper and
//! what is a modelling choice.
//!
//! - Stores inside a transaction reach a per-core log buffer in the memory
//!   controller, coalesced per line. When the buffer is full, and at TxEnd,
//!   each buffered line becomes a redo record {header line, data line} in a
//!   per-core circular log in PM, and the same line goes into the DRAM
//!   cache (a small region of the DRAM device, `MemCtx::dram`) as the
//!   transaction's speculative copy.
//! - TxEnd writes the remaining records and a commit record and returns when
//!   both are persisted; the transaction's DRAM-cache copies become its
//!   committed copies (replacing older committed copies of those lines).
//! - LLC write-backs of lines a transaction modified never go home: their
//!   bytes are in the log buffer, the DRAM cache or already home. Every
//!   LLC miss looks the DRAM cache up first (its DRAM access latency is paid
//!   on every PM read, EHOU §IV-A); logged-but-not-yet-applied lines are
//!   served from it.
//! - Asynchronous direct update (background kind `apply`, every
//!   `redu.apply_period_us`): committed copies are read from DRAM and
//!   written home (no log reads), then the log is truncated by persisting
//!   the log header (two alternating header lines, so a torn header write
//!   leaves the other). A full log or DRAM cache forces an application.
//! - Recovery (bytes only): per core, from the newest valid header's head,
//!   replay the data records of every transaction followed by its commit
//!   record, in log order (valid checksums, consecutive sequence numbers),
//!   then persist the new head. Idempotent, so a crash inside recovery is
//!   repaired by running it again.

use crate::cache::LineExt;
use crate::config::{p, Check, ParamSpec, Params};
use crate::error::Result;
use crate::mem::MemWrite;
use crate::recovery::ResumableScan;
use crate::schemes::kit::log::{log_stride, owner_of, MAX_CORES};
use crate::schemes::kit::redo_log::{self, Headers, RedoLog, TxBuffer, REC_BYTES};
use crate::schemes::{
    Durability, Layout, MemCtx, RecoveryForm, RecoveryReport, Scheme, SchemeInfo, SchemeStats,
    Store, Writeback,
};
use crate::types::{line_of, Addr, CoreId, Cycle, LineData, Purpose};
use rustc_hash::FxHashMap;

pub static PARAMS: &[ParamSpec] = &[
    p!("redu.log_bytes_per_core", int 4 << 20, "bytes", Check::PowerOfTwo(1 << 16, 1 << 30),
        "modelling choice, see docs/MODEL.md (same per-core redo log as opt-redo; a full log forces an application)",
        "per-core circular redo log in PM (two 64 B headers + 128 B per record)"),
    p!("redu.log_buffer_bytes_per_core", int 1024, "bytes", Check::Range(64.0, 1048576.0),
        "modelling choice, see docs/MODEL.md (the same 1 KB per-core on-chip budget as opt-redo and HOOP's OOP buffer, HOOP paper §III-C)",
        "controller log buffer coalescing a transaction's updated lines before they are written as records"),
    p!("redu.dram_cache_bytes", int 8 << 20, "bytes", Check::PowerOfTwo(4096, 1 << 34),
        "modelling choice, see docs/MODEL.md (REDU uses 'a small region of DRAM as a write-cache' (Jeong et al. 2018, abstract), size not in the EHOU paper; 8 MiB = EHOU Table I's LLC; a full cache forces an application)",
        "DRAM write cache holding logged lines until they are applied home (64 B entries)"),
    p!("redu.apply_period_us", float 1.0, "us", Check::Range(0.001, 1e7),
        "modelling choice, see docs/MODEL.md (REDU updates home asynchronously soon after commit; the event-driven engine batches the starts every 1 us)",
        "period of the background application of committed DRAM-cache lines home (and log truncation)"),
    p!("redu.mutant", str "none", &["none", "truncate-before-apply", "commit-before-records", "scan-skips-last-commit", "head-not-persisted"],
        crate::schemes::MUTANT_SOURCE,
        "test-only planted bug (tests/mutants.rs; refused by the CLI): truncate-before-apply = the application persists the log header (truncation) before its home writes; commit-before-records = TxEnd issues the commit record at its start instead of once the data records persisted; scan-skips-last-commit = recovery replays a transaction only once it reads the next commit record (the last committed transaction is not replayed); head-not-persisted = the application frees the log space it applied without persisting the new head in a log header"),
];

pub static INFO: SchemeInfo = SchemeInfo {
    name: "redu",
    description: "REDU: hardware redo logging with a DRAM write cache, asynchronous direct update of home from DRAM (EHOU's baseline)",
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
        reaches: "background application from the DRAM write cache every redu.apply_period_us (1 us)",
        needs: None,
    },
};

fn reserved_bytes(p: &Params) -> u64 {
    MAX_CORES * log_stride(p, p.u64("redu.log_bytes_per_core"))
}

// ---- Log format ---------------------------------------------------------

// opt-redo's record and header format (kit/redo_log.rs) with REDU's magics,
// two alternating header lines before the record slots.
const HDR_MAGIC: u64 = 0x5245_4455_4844_5231; // "REDUHDR1"
const REC_MAGIC: u64 = 0x5245_4455_5245_4331; // "REDUREC1"
/// Two header lines (A, B) precede the record slots.
const HEADERS_BYTES: u64 = 128;

/// The bytes of a data record: {magic, seq, txid, kind, home, checksum}
/// and the new line value.
fn encode_data(seq: u64, txid: u64, home: Addr, data: &LineData) -> [u8; REC_BYTES as usize] {
    redo_log::data_record(REC_MAGIC, seq, txid, home, data)
}

/// The bytes of a commit record: {magic, seq, txid, kind, records, checksum}.
fn encode_commit(seq: u64, txid: u64, count: u64) -> LineData {
    redo_log::commit_record(REC_MAGIC, seq, txid, count)
}

/// A log header line {magic, head, checksum}.
fn encode_header(head: u64) -> LineData {
    redo_log::header_record(HDR_MAGIC, head)
}

/// Geometry of the per-core circular logs.
#[derive(Clone, Copy, Debug)]
struct Ring {
    log: RedoLog,
    per_core_bytes: u64,
}

impl Ring {
    fn new(p: &Params, layout: &Layout) -> Self {
        let per_core = p.u64("redu.log_bytes_per_core");
        Ring {
            log: RedoLog {
                hdr_magic: HDR_MAGIC,
                rec_magic: REC_MAGIC,
                base: layout.reserved_base,
                stride: log_stride(p, per_core),
                headers: Headers::Alternating,
                slots: (per_core - HEADERS_BYTES) / REC_BYTES,
                home_limit: Some(layout.home_limit),
                mutant_skip_last: p.str("redu.mutant") == "scan-skips-last-commit",
            },
            per_core_bytes: per_core,
        }
    }
    fn header_addr(&self, core: usize, which: u64) -> Addr {
        self.log.header_addr(core, which & 1)
    }
    fn slot_addr(&self, core: usize, seq: u64) -> Addr {
        self.log.slot_addr(core, seq)
    }
}

fn recover(img: &mut dyn MemWrite, p: &Params, layout: &Layout) -> Result<RecoveryReport> {
    crate::recovery::recover_by_scan(new_scan(p, layout), img, p)
}

/// Recovery as opt-redo's resumable scan ([`redo_log::redo_log_scan`]): per
/// core, from the newest valid header's head, replay the data records of
/// every transaction followed by its commit record (64 B-aligned home
/// lines only), in log order; then persist the new head over the older
/// header (the finish). docs/model/crash-reuse.md "REDU's resumable recovery".
pub(crate) fn new_scan(p: &Params, layout: &Layout) -> Box<dyn ResumableScan> {
    redo_log::redo_log_scan(Ring::new(p, layout).log, layout.threads)
}

// ---- The scheme -----------------------------------------------------------

/// DRAM-cache slots live from here in the DRAM device's address space
/// (apart from the hybrid memory's pages and dpc's table).
const DRAM_BASE: Addr = 1 << 45;
const NIL: u32 = u32::MAX;

/// A line's copies in the DRAM cache.
#[derive(Clone, Copy)]
struct Copies {
    /// The newest committed, not yet applied copy.
    committed: u32,
    /// The running transaction's logged copy (its owner core's).
    spec: u32,
}

#[derive(Default)]
struct CoreState {
    /// The running transaction in the log buffer.
    tx: TxBuffer,
    /// Next sequence number; oldest live record; after the last commit.
    tail: u64,
    head: u64,
    committed_tail: u64,
    /// Header slot the next truncation writes (alternates).
    next_header: u64,
    /// Lines with a committed copy waiting for application (may repeat).
    pending: Vec<Addr>,
}

struct Redu {
    ring: Ring,
    cores: Vec<CoreState>,
    next_txid: u32,
    buffer_lines: usize,
    copies: FxHashMap<Addr, Copies>,
    free_slots: Vec<u32>,
    fresh_slot: u32,
    slot_count: u32,
    used_slots: u32,
    period: Cycle,
    next_apply: Cycle,
    urgent: bool,
    scratch: Vec<Addr>,
    mutant_truncate_first: bool,
    mutant_commit_first: bool,
    mutant_head_volatile: bool,
    st_records: u64,
    st_commit_records: u64,
    st_header_writes: u64,
    st_buffer_flushes: u64,
    st_dram_hits: u64,
    st_dram_misses: u64,
    st_buffer_hits: u64,
    st_dram_writes: u64,
    st_dram_max_lines: u64,
    st_applied_lines: u64,
    st_applies: u64,
    st_forced_applies: u64,
    st_dropped_writebacks: u64,
    st_home_writebacks: u64,
    /// Of the PM write overhead, the bytes written by `finish`.
    st_overhead_end: u64,
}

fn build(p: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    let period = (p.f64("redu.apply_period_us") * 1e3 * p.f64("cpu.freq_ghz")).ceil() as Cycle;
    let slots = (p.u64("redu.dram_cache_bytes") / 64).min(u64::from(u32::MAX - 1)) as u32;
    Ok(Box::new(Redu {
        ring: Ring::new(p, layout),
        cores: (0..layout.threads).map(|_| CoreState::default()).collect(),
        next_txid: 1,
        buffer_lines: (p.u64("redu.log_buffer_bytes_per_core") / 64).max(1) as usize,
        copies: FxHashMap::default(),
        free_slots: Vec::new(),
        fresh_slot: 0,
        slot_count: slots,
        used_slots: 0,
        period: period.max(1),
        next_apply: period.max(1),
        urgent: false,
        scratch: Vec::new(),
        mutant_truncate_first: p.str("redu.mutant") == "truncate-before-apply",
        mutant_commit_first: p.str("redu.mutant") == "commit-before-records",
        mutant_head_volatile: p.str("redu.mutant") == "head-not-persisted",
        st_records: 0,
        st_commit_records: 0,
        st_header_writes: 0,
        st_buffer_flushes: 0,
        st_dram_hits: 0,
        st_dram_misses: 0,
        st_buffer_hits: 0,
        st_dram_writes: 0,
        st_dram_max_lines: 0,
        st_applied_lines: 0,
        st_applies: 0,
        st_forced_applies: 0,
        st_dropped_writebacks: 0,
        st_home_writebacks: 0,
        st_overhead_end: 0,
    }))
}

fn slot_addr(slot: u32) -> Addr {
    DRAM_BASE + u64::from(slot) * 64
}

impl Redu {
    /// PM writes not issued by the CPU: redo records, commit records, log
    /// headers and the lines applied home.
    fn overhead_bytes(&self) -> u64 {
        self.st_records * REC_BYTES
            + self.st_commit_records * 64
            + self.st_header_writes * 64
            + self.st_applied_lines * 64
    }

    /// Where a miss probes the DRAM cache (its tag/data location): a hashed
    /// slot, so probes spread over the DRAM banks like a direct-mapped cache.
    fn probe_addr(&self, line: Addr) -> Addr {
        let h = (line / 64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
        slot_addr((h % u64::from(self.slot_count.max(1))) as u32)
    }

    fn pending_total(&self) -> bool {
        self.cores.iter().any(|c| !c.pending.is_empty())
    }

    /// A free DRAM-cache slot, applying committed copies if the cache is
    /// full. Returns (slot, time) or None if running transactions fill it.
    fn alloc_slot(&mut self, ctx: &mut MemCtx, now: Cycle) -> (Option<u32>, Cycle) {
        let mut t = now;
        if self.free_slots.is_empty() && self.fresh_slot == self.slot_count {
            self.st_forced_applies += 1;
            for core in 0..self.cores.len() {
                t = t.max(self.apply_core(ctx, core, now));
            }
        }
        let slot = self.free_slots.pop().or_else(|| {
            (self.fresh_slot < self.slot_count).then(|| {
                self.fresh_slot += 1;
                self.fresh_slot - 1
            })
        });
        if slot.is_some() {
            self.used_slots += 1;
            self.st_dram_max_lines = self.st_dram_max_lines.max(u64::from(self.used_slots));
            if u64::from(self.used_slots) * 4 > u64::from(self.slot_count) * 3 {
                self.urgent = true;
            }
        }
        (slot, t)
    }

    fn free_slot(&mut self, slot: u32) {
        self.free_slots.push(slot);
        self.used_slots -= 1;
    }

    /// Make room for `need` records in `core`'s log, applying its committed
    /// copies (and truncating) if necessary; returns when room is available.
    fn reserve(&mut self, ctx: &mut MemCtx, core: usize, need: u64, now: Cycle) -> Cycle {
        let c = &self.cores[core];
        if c.tail + need - c.head <= self.ring.log.slots {
            return now;
        }
        self.st_forced_applies += 1;
        let t = self.apply_core(ctx, core, now);
        let c = &mut self.cores[core];
        if c.tail + need - c.head > self.ring.log.slots {
            // One transaction outgrew the log: reported at TxEnd.
            c.tx.overflow = true;
        }
        t
    }

    /// Write a record (and the DRAM-cache copy) for every line changed
    /// since its last record.
    fn flush_buffer(&mut self, ctx: &mut MemCtx, core: usize, now: Cycle) -> Cycle {
        let need = self.cores[core].tx.buffered as u64;
        if need == 0 {
            return now;
        }
        let mut t = self.reserve(ctx, core, need + 1, now);
        let ring = self.ring;
        let mut done = t;
        for i in 0..self.cores[core].tx.lines.len() {
            if !self.cores[core].tx.lines[i].dirty {
                continue;
            }
            let c = &mut self.cores[core];
            let tl = &mut c.tx.lines[i];
            let (line, data) = (tl.addr, tl.data);
            tl.dirty = false;
            let rec = encode_data(c.tail, u64::from(c.tx.txid), line, &data);
            done = done.max(
                ctx.nvm
                    .write(ring.slot_addr(core, c.tail), &rec, Purpose::Log, t),
            );
            c.tail += 1;
            c.tx.records += 1;
            self.st_records += 1;
            // The same bytes go to the DRAM cache as the speculative copy.
            let spec = self.copies.get(&line).map_or(NIL, |x| x.spec);
            let slot = if spec != NIL {
                Some(spec)
            } else {
                let (s, ta) = self.alloc_slot(ctx, t);
                t = t.max(ta);
                s
            };
            match slot {
                Some(s) => {
                    ctx.dram.write(slot_addr(s), &data, Purpose::Log, t);
                    self.st_dram_writes += 1;
                    self.copies
                        .entry(line)
                        .or_insert(Copies {
                            committed: NIL,
                            spec: NIL,
                        })
                        .spec = s;
                }
                None => ctx.input_error(format!(
                    "redu.dram_cache_bytes={} is too small: the running transactions' logged lines fill all of its {} lines; {} (or more: every core's running transaction must fit)",
                    u64::from(self.slot_count) * 64,
                    self.slot_count,
                    crate::schemes::raise_advice(
                        PARAMS,
                        "redu.dram_cache_bytes",
                        2 * u64::from(self.slot_count) * 64
                    )
                )),
            }
        }
        self.cores[core].tx.buffered = 0;
        self.st_buffer_flushes += 1;
        done.max(t)
    }

    /// Apply `core`'s committed copies home from the DRAM cache, then
    /// truncate its log. Returns when the header is persisted.
    fn apply_core(&mut self, ctx: &mut MemCtx, core: usize, now: Cycle) -> Cycle {
        let ring = self.ring;
        let c = &mut self.cores[core];
        if c.committed_tail == c.head && c.pending.is_empty() {
            return now;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.append(&mut c.pending);
        scratch.sort_unstable();
        scratch.dedup();
        let head = c.committed_tail;
        let which = c.next_header;
        let mut done = now;
        if self.mutant_truncate_first {
            ctx.nvm.write(
                ring.header_addr(core, which),
                &encode_header(head),
                Purpose::Metadata,
                now,
            );
        }
        let mut buf = [0u8; 64];
        for &line in &scratch {
            let Some(x) = self.copies.get_mut(&line) else {
                continue;
            };
            let slot = x.committed;
            if slot == NIL {
                continue;
            }
            x.committed = NIL;
            if x.spec == NIL {
                self.copies.remove(&line);
            }
            let r = ctx.dram.read(slot_addr(slot), &mut buf, Purpose::Gc, now);
            done = done.max(ctx.nvm.write(line, &buf, Purpose::Gc, r));
            self.free_slot(slot);
            self.st_applied_lines += 1;
        }
        self.scratch = scratch;
        let c = &mut self.cores[core];
        if head != c.head && !self.mutant_head_volatile {
            done = ctx.nvm.write(
                ring.header_addr(core, which),
                &encode_header(head),
                Purpose::Metadata,
                done,
            );
            self.st_header_writes += 1;
            c.head = head;
            c.next_header ^= 1;
        } else if head != c.head {
            // Test-only (head-not-persisted): the space is reused anyway.
            c.head = head;
        }
        self.st_applies += 1;
        done
    }
}

impl Scheme for Redu {
    fn tx_begin(&mut self, _ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].tx.begin(self.next_txid);
        self.next_txid += 1;
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
        let copies = &self.copies;
        let full = self.cores[core]
            .tx
            .store(addr, new, ext, self.buffer_lines, |line| {
                // The newest committed value: its DRAM-cache copy if it is
                // not applied yet, else home.
                let mut base = [0u8; 64];
                match copies.get(&line).map_or(NIL, |x| x.committed) {
                    NIL => ctx.nvm.peek(line, &mut base),
                    s => ctx.dram.peek(slot_addr(s), &mut base),
                }
                base
            });
        if full {
            // The controller drains its full buffer; the store waits only
            // if the log or the DRAM cache had to be applied to make room.
            let before = self.st_forced_applies;
            let t = self.flush_buffer(ctx, core, now);
            if self.st_forced_applies > before {
                return t;
            }
        }
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
        let owner = owner_of(&ctx.layout, line_addr);
        let c = &self.cores[owner];
        if let Some(i) = c.tx.index.get(line_addr) {
            if c.tx.lines[i].dirty {
                // Still in the controller's log buffer (newer than any
                // copy): served from there after the DRAM-cache lookup.
                *out = c.tx.lines[i].data;
                self.st_buffer_hits += 1;
                let mut tag = [0u8; 64];
                let probe = self.probe_addr(line_addr);
                return (ctx.dram.read(probe, &mut tag, Purpose::Demand, now), false);
            }
        }
        let slot = self.copies.get(&line_addr).map_or(NIL, |x| {
            // The running transaction's copy is newer than the committed one.
            if x.spec != NIL && c.tx.in_tx {
                x.spec
            } else {
                x.committed
            }
        });
        if slot != NIL {
            self.st_dram_hits += 1;
            return (
                ctx.dram.read(slot_addr(slot), out, Purpose::Demand, now),
                false,
            );
        }
        self.st_dram_misses += 1;
        let mut tag = [0u8; 64];
        let t = ctx
            .dram
            .read(self.probe_addr(line_addr), &mut tag, Purpose::Demand, now);
        (ctx.nvm.read(line_addr, out, Purpose::Demand, t), false)
    }

    fn writeback(&mut self, ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            ext,
            now,
            ..
        } = ev;
        if ext.txid != 0 {
            // Its bytes are in the log buffer, the DRAM cache or home.
            self.st_dropped_writebacks += 1;
            return now;
        }
        self.st_home_writebacks += 1;
        ctx.nvm.write(line_addr, data, Purpose::WriteBack, now)
    }

    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        self.cores[core].tx.in_tx = false;
        if self.cores[core].tx.lines.is_empty() {
            return now;
        }
        let t = self.flush_buffer(ctx, core, now);
        let t = self.reserve(ctx, core, 1, t);
        let t = if self.mutant_commit_first { now } else { t };
        let ring = self.ring;
        let c = &mut self.cores[core];
        let rec = encode_commit(c.tail, u64::from(c.tx.txid), c.tx.records);
        let done = ctx
            .nvm
            .write(ring.slot_addr(core, c.tail), &rec, Purpose::Metadata, t);
        self.st_commit_records += 1;
        if c.tx.overflow {
            let records = c.tx.records + 1;
            ctx.input_error(format!(
                "redu.log_bytes_per_core={} holds {} redo records per core, but a transaction on core {core} needed {records} ({} modified lines, coalesced in the {}-line log buffer, plus a commit record); {}",
                ring.per_core_bytes,
                ring.log.slots,
                c.tx.lines.len(),
                self.buffer_lines,
                crate::schemes::raise_advice(PARAMS, "redu.log_bytes_per_core", HEADERS_BYTES + records * REC_BYTES)
            ));
        }
        c.tail += 1;
        c.committed_tail = c.tail;
        // The speculative copies become the committed ones.
        for i in 0..self.cores[core].tx.lines.len() {
            let line = self.cores[core].tx.lines[i].addr;
            let Some(x) = self.copies.get_mut(&line) else {
                continue;
            };
            if x.spec == NIL {
                continue;
            }
            let old = x.committed;
            x.committed = x.spec;
            x.spec = NIL;
            if old != NIL {
                self.free_slot(old);
            }
            self.cores[core].pending.push(line);
        }
        done
    }

    fn next_event_at(&self) -> Option<Cycle> {
        if self.urgent {
            Some(0)
        } else if self.pending_total() {
            Some(self.next_apply)
        } else {
            None
        }
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        for core in 0..self.cores.len() {
            self.apply_core(ctx, core, now);
        }
        if !self.urgent || now >= self.next_apply {
            self.next_apply = now + self.period;
        }
        self.urgent = false;
        None
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let before = self.overhead_bytes();
        let mut t = now;
        for core in 0..self.cores.len() {
            t = t.max(self.apply_core(ctx, core, now));
        }
        self.st_overhead_end += self.overhead_bytes() - before;
        t
    }

    fn background_kind(&self) -> &'static str {
        "apply"
    }

    fn recovery_paths(&self) -> &'static [&'static str] {
        &["apply"]
    }

    fn read_logical(&self, ctx: &MemCtx, addr: Addr, buf: &mut [u8]) {
        let line = line_of(addr);
        match self.copies.get(&line).map_or(NIL, |x| x.committed) {
            NIL => ctx.nvm.peek(addr, buf),
            s if (addr % 64) as usize + buf.len() <= 64 => {
                ctx.dram.peek(slot_addr(s) + addr % 64, buf)
            }
            _ => ctx.nvm.peek(addr, buf),
        }
    }

    fn stats(&self) -> SchemeStats {
        let log_bytes = self.st_records * REC_BYTES + self.st_commit_records * 64;
        vec![
            ("redo_records", self.st_records as f64),
            ("commit_records", self.st_commit_records as f64),
            ("log_bytes", log_bytes as f64),
            ("log_header_writes", self.st_header_writes as f64),
            ("log_buffer_flushes", self.st_buffer_flushes as f64),
            ("dram_cache_read_hits", self.st_dram_hits as f64),
            ("dram_cache_read_misses", self.st_dram_misses as f64),
            ("log_buffer_read_hits", self.st_buffer_hits as f64),
            ("dram_cache_line_writes", self.st_dram_writes as f64),
            ("dram_cache_max_lines", self.st_dram_max_lines as f64),
            ("applied_lines", self.st_applied_lines as f64),
            ("applications", self.st_applies as f64),
            ("forced_applications", self.st_forced_applies as f64),
            ("dropped_writebacks", self.st_dropped_writebacks as f64),
            ("home_writebacks", self.st_home_writebacks as f64),
            ("pm_write_overhead_bytes", self.overhead_bytes() as f64),
            // Of it, the final application of every core's log (`finish`),
            // as EHOU's: the rest is the steady state.
            (
                "pm_write_overhead_bytes_end_of_run",
                self.st_overhead_end as f64,
            ),
        ]
    }

    fn reset_stats(&mut self) {
        self.st_records = 0;
        self.st_commit_records = 0;
        self.st_header_writes = 0;
        self.st_buffer_flushes = 0;
        self.st_dram_hits = 0;
        self.st_dram_misses = 0;
        self.st_buffer_hits = 0;
        self.st_dram_writes = 0;
        self.st_dram_max_lines = u64::from(self.used_slots);
        self.st_applied_lines = 0;
        self.st_applies = 0;
        self.st_forced_applies = 0;
        self.st_dropped_writebacks = 0;
        self.st_home_writebacks = 0;
        self.st_overhead_end = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::kit::redo_log::Record;

    fn decode(meta: &LineData, seq: u64, data: impl FnOnce() -> LineData) -> Option<Record> {
        redo_log::decode(REC_MAGIC, meta, seq, data)
    }

    fn decode_header(l: &LineData) -> Option<u64> {
        redo_log::decode_header(HDR_MAGIC, l)
    }

    fn line(seed: u8) -> LineData {
        let mut l = [0u8; 64];
        for (i, b) in l.iter_mut().enumerate() {
            *b = seed.wrapping_mul(31).wrapping_add(i as u8);
        }
        l
    }

    fn meta_of(r: &[u8]) -> LineData {
        r[..64].try_into().unwrap()
    }

    #[test]
    fn data_record_round_trips() {
        let d = line(7);
        let r = encode_data(42, 9, 0x1_0040, &d);
        let data: LineData = r[64..].try_into().unwrap();
        let got = decode(&meta_of(&r), 42, || data).unwrap();
        assert_eq!(
            got,
            Record::Data {
                seq: 42,
                txid: 9,
                home: 0x1_0040,
                data: d
            }
        );
    }

    #[test]
    fn commit_record_round_trips_and_reads_no_data() {
        let c = encode_commit(5, 3, 17);
        let got = decode(&c, 5, || panic!("a commit record has no data line"));
        assert_eq!(
            got,
            Some(Record::Commit {
                seq: 5,
                txid: 3,
                count: 17
            })
        );
    }

    /// A stale record (previous lap of the ring), a torn data line, a torn
    /// header word and a foreign line are all rejected.
    #[test]
    fn stale_torn_and_foreign_records_are_rejected() {
        let d = line(1);
        let r = encode_data(100, 2, 0x40, &d);
        let meta = meta_of(&r);
        assert!(decode(&meta, 100 + 1024, || d).is_none(), "stale lap");
        let mut torn = d;
        torn[9] ^= 1;
        assert!(decode(&meta, 100, || torn).is_none(), "torn data");
        for w in 2..6 {
            let mut m = meta;
            m[w * 8] ^= 0x10;
            assert!(decode(&m, 100, || d).is_none(), "torn word {w}");
        }
        assert!(decode(&[0u8; 64], 0, || d).is_none());
        let mut c = encode_commit(3, 2, 1);
        c[32] ^= 1;
        assert!(decode(&c, 3, || d).is_none(), "torn commit count");
    }

    #[test]
    fn headers_round_trip_and_torn_ones_are_invalid() {
        assert_eq!(decode_header(&encode_header(77)), Some(77));
        let mut h = encode_header(77);
        h[8] ^= 4;
        assert_eq!(decode_header(&h), None);
        assert_eq!(decode_header(&[0u8; 64]), None);
    }

    /// Recovery takes the newer of the two headers, replays only committed
    /// transactions in log order and is idempotent.
    #[test]
    fn recovery_replays_committed_records_in_order() {
        use crate::mem::{MemRead, SparseImage};
        let mut p = Params::defaults(&crate::schemes::all_params());
        p.set_str("redu.log_bytes_per_core", "65536").unwrap();
        let layout = Layout::new(1 << 30, reserved_bytes(&p), 1).unwrap();
        let ring = Ring::new(&p, &layout);
        let mut img = SparseImage::default();
        // Old header (head 0) in A, newer (head 2) in B.
        img.write_bytes(ring.header_addr(0, 0), &encode_header(0));
        img.write_bytes(ring.header_addr(0, 1), &encode_header(2));
        let (a, b) = (line(1), line(2));
        // seq 0..1: an applied transaction (before head: must be skipped).
        img.write_bytes(ring.slot_addr(0, 0), &encode_data(0, 1, 0, &line(9)));
        img.write_bytes(ring.slot_addr(0, 1), &encode_commit(1, 1, 1));
        // seq 2..4: tx 2 writes line 0 twice (a then b) and commits.
        img.write_bytes(ring.slot_addr(0, 2), &encode_data(2, 2, 0, &a));
        img.write_bytes(ring.slot_addr(0, 3), &encode_data(3, 2, 0, &b));
        img.write_bytes(ring.slot_addr(0, 4), &encode_commit(4, 2, 2));
        // seq 5: tx 3 has no commit record.
        img.write_bytes(ring.slot_addr(0, 5), &encode_data(5, 3, 64, &a));
        for _ in 0..2 {
            let r = recover(&mut img, &p, &layout).unwrap();
            assert_eq!(img.read_line(0), b);
            assert_eq!(img.read_line(64), [0u8; 64]);
            let replayed = r.details.iter().find(|d| d.0 == "transactions_replayed");
            assert!(replayed.unwrap().1 <= 1.0);
        }
        // The truncation went over the older header (A).
        assert_eq!(
            decode_header(&img.read_line(ring.header_addr(0, 0))),
            Some(5)
        );
        assert_eq!(
            decode_header(&img.read_line(ring.header_addr(0, 1))),
            Some(2)
        );
    }
}
