//! TinySTM's fast path (WB-ETL: write-back, encounter-time locking, the
//! library's default design; patrickmarlier/tinystm @02c10cc,
//! `src/stm_wbetl.h`), as DudeTM's Perform step runs it: the read and write
//! barriers, the write-set buffering and the commit, emitted as loads,
//! stores, atomics and `Compute` instructions on the simulated core.
//!
//! - `stm_start`: a load of the global clock.
//! - `stm_load` of a word the transaction has not written: load its
//!   ownership record (orec, `locks[(addr >> 5) & (2^20 - 1)]`, 8 B each),
//!   the data, the orec again, and append a 16 B read-set entry (2 stores).
//!   Of a word it wrote: the orec, then the write-set entry (no data load).
//! - `stm_store`, first to its 32 B stripe: load the orec, acquire it with a
//!   locked CAS (a load, a store and a fence: a locked RMW drains the store
//!   buffer on x86), and fill a 64 B write-set entry (6 stores). A new word
//!   of an owned stripe: orec load and a new entry; a word written before:
//!   orec load and 2 stores (value, mask). The program's store itself is
//!   deferred to commit (write-back design).
//! - `stm_commit`: a locked fetch-and-increment of the global clock;
//!   validation of the read set (2 loads per entry) when another thread
//!   committed since this one's previous transaction; per write-set entry a
//!   load, the deferred store of the data word, and per stripe the release
//!   store of its orec.
//!
//! Instruction counts are callgrind measurements of that build
//! (docs/design/baselines.md §3.1, [meas]); each call's count covers its
//! memory operations too, so the `Compute` emitted is the count minus the
//! memory operations emitted for the call.
//!
//! Metadata contents are not modelled: every metadata store writes 0, so
//! every metadata load reads 0 (the shared clock and orecs hold the same
//! value for every core, which keeps `run.check_reads` exact).
//!
//! Each core addresses the metadata through its own alias (`alias_bytes`
//! apart; DudeTM maps every alias to the same DRAM frames): the cache model
//! has no coherence protocol and keeps a line in one core's private caches
//! (docs/model/processor.md "Caches"), so a line two cores cached would leave one of
//! them linked to an LLC slot another line reuses.

use super::Instructions;
use crate::config::Params;
use crate::types::Addr;
use crate::workloads::Op;
use rustc_hash::FxHashMap;

/// TinySTM's lock array: 2^20 orecs of 8 B (`LOCK_ARRAY_LOG_SIZE` = 20).
const LOCKS: u64 = 1 << 20;
/// A stripe is 32 B (`LOCK_SHIFT` = 3 + `LOCK_SHIFT_EXTRA` 2).
const STRIPE_SHIFT: u32 = 5;
/// Read-set entry {version, lock*} and write-set entry (padded to a line).
const R_ENTRY_BYTES: u64 = 16;
const W_ENTRY_BYTES: u64 = 64;
/// TinySTM's initial set sizes (`RW_SET_SIZE` = 4096 entries); a larger
/// transaction wraps here (TinySTM would reallocate).
const SET_ENTRIES: u64 = 4096;
const PER_CORE_BYTES: u64 = SET_ENTRIES * (R_ENTRY_BYTES + W_ENTRY_BYTES);

/// Bytes of one core's alias of the STM metadata for `threads` cores (a
/// whole number of 4 KiB pages): clock page, orecs, every core's sets.
pub(crate) fn alias_bytes(threads: usize) -> u64 {
    4096 + LOCKS * 8 + threads as u64 * PER_CORE_BYTES
}

/// Bytes of the shadow address space the STM metadata's aliases take.
pub(crate) fn span_bytes(threads: usize) -> u64 {
    threads as u64 * alias_bytes(threads)
}

/// Per-call instruction counts (params `dudetm.stm_*`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StmCosts {
    pub start: u64,
    pub load: u64,
    pub load_raw: u64,
    pub store: u64,
    pub store_waw: u64,
    pub commit: u64,
    pub commit_per_write: u64,
    pub commit_per_read: u64,
}

impl StmCosts {
    pub fn from_params(p: &Params) -> Self {
        StmCosts {
            start: p.u64("dudetm.stm_start_instructions"),
            load: p.u64("dudetm.stm_load_instructions"),
            load_raw: p.u64("dudetm.stm_load_raw_instructions"),
            store: p.u64("dudetm.stm_store_instructions"),
            store_waw: p.u64("dudetm.stm_store_waw_instructions"),
            commit: p.u64("dudetm.stm_commit_instructions"),
            commit_per_write: p.u64("dudetm.stm_commit_per_write_instructions"),
            commit_per_read: p.u64("dudetm.stm_commit_per_read_instructions"),
        }
    }
}

/// Memory operations the STM issued (library work, not the program's).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StmStats {
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    pub validations: u64,
}

/// One write-set entry: the word, its final value, its entry index.
struct WEntry {
    addr: Addr,
    value: u64,
    slot: u64,
}

pub(crate) struct TinyStm {
    /// Shadow address of core 0's alias of the clock line; orecs and
    /// per-core sets follow; core c's alias is `c * alias` above.
    base: Addr,
    alias: u64,
    costs: StmCosts,
    /// Commits of all threads so far, and the count each thread saw at its
    /// previous commit (validation runs when another thread committed).
    commits: u64,
    seen_commits: Vec<u64>,
    // Scratch for one transaction.
    words: Vec<WEntry>,
    word_idx: FxHashMap<Addr, usize>,
    stripes: FxHashMap<u64, ()>,
    reads: u64,
    pub stats: StmStats,
}

impl TinyStm {
    pub fn new(base: Addr, threads: usize, costs: StmCosts) -> Self {
        TinyStm {
            base,
            alias: alias_bytes(threads),
            costs,
            commits: 0,
            seen_commits: vec![0; threads],
            words: Vec::new(),
            word_idx: FxHashMap::default(),
            stripes: FxHashMap::default(),
            reads: 0,
            stats: StmStats::default(),
        }
    }

    /// `core`'s alias of the metadata.
    fn view(&self, core: usize) -> Addr {
        self.base + core as u64 * self.alias
    }

    fn clock(&self, core: usize) -> Addr {
        self.view(core)
    }

    /// The orec of program address `a` (shared by all cores), as `core`
    /// addresses it.
    fn orec(&self, core: usize, a: Addr) -> Addr {
        self.view(core) + 4096 + ((a >> STRIPE_SHIFT) & (LOCKS - 1)) * 8
    }

    fn rset(&self, core: usize, i: u64) -> Addr {
        self.view(core)
            + 4096
            + LOCKS * 8
            + core as u64 * PER_CORE_BYTES
            + (i % SET_ENTRIES) * R_ENTRY_BYTES
    }

    fn wset(&self, core: usize, j: u64) -> Addr {
        self.view(core)
            + 4096
            + LOCKS * 8
            + core as u64 * PER_CORE_BYTES
            + SET_ENTRIES * R_ENTRY_BYTES
            + (j % SET_ENTRIES) * W_ENTRY_BYTES
    }

    fn load(&mut self, out: &mut Vec<Op>, addr: Addr) {
        out.push(Op::Load {
            addr,
            value: 0,
            dep: 0,
        });
        self.stats.loads += 1;
    }

    fn store(&mut self, out: &mut Vec<Op>, addr: Addr) {
        out.push(Op::Store { addr, value: 0 });
        self.stats.stores += 1;
    }

    /// A call measured at `measured` instructions, `mem_ops` of which are
    /// the memory instructions emitted for it (a locked RMW is one): the
    /// rest is `Compute`, and the library's count is the measured one.
    fn charge(out: &mut Vec<Op>, ins: &mut Instructions, measured: u64, mem_ops: u64) {
        let m = mem_ops.min(measured);
        ins.emit(out, measured - m);
        ins.total += m;
    }

    /// A locked read-modify-write.
    fn atomic(&mut self, out: &mut Vec<Op>, addr: Addr) {
        out.push(Op::Load {
            addr,
            value: 0,
            dep: 0,
        });
        out.push(Op::Store { addr, value: 0 });
        out.push(Op::Fence);
        self.stats.atomics += 1;
    }

    /// `stm_start`. Returns the loads emitted.
    pub fn begin(&mut self, out: &mut Vec<Op>, ins: &mut Instructions, core: usize) -> u32 {
        self.words.clear();
        self.word_idx.clear();
        self.stripes.clear();
        self.reads = 0;
        self.load(out, self.clock(core));
        Self::charge(out, ins, self.costs.start, 1);
        1
    }

    /// The read barrier before the program's load of `addr`. Returns the
    /// loads emitted and whether the program's load is served by the write
    /// set (the caller then drops it: the value comes from the entry).
    pub fn read_barrier(
        &mut self,
        out: &mut Vec<Op>,
        ins: &mut Instructions,
        core: usize,
        addr: Addr,
    ) -> (u32, bool) {
        let o = self.orec(core, addr);
        if let Some(&w) = self.word_idx.get(&addr) {
            self.load(out, o);
            let e = self.wset(core, self.words[w].slot);
            self.load(out, e);
            Self::charge(out, ins, self.costs.load_raw, 2);
            return (2, true);
        }
        self.load(out, o);
        (1, false)
    }

    /// After the program's load (read from memory): the orec re-check and
    /// the read-set entry.
    pub fn after_load(
        &mut self,
        out: &mut Vec<Op>,
        ins: &mut Instructions,
        core: usize,
        addr: Addr,
    ) -> u32 {
        let o = self.orec(core, addr);
        self.load(out, o);
        let e = self.rset(core, self.reads);
        self.reads += 1;
        self.store(out, e);
        self.store(out, e + 8);
        // The orec twice, the program's load, two read-set stores.
        Self::charge(out, ins, self.costs.load, 5);
        1
    }

    /// The write barrier of the program's store (which is deferred to
    /// commit). Returns the loads emitted.
    pub fn write(
        &mut self,
        out: &mut Vec<Op>,
        ins: &mut Instructions,
        core: usize,
        addr: Addr,
        value: u64,
    ) -> u32 {
        let o = self.orec(core, addr);
        let stripe = addr >> STRIPE_SHIFT;
        self.load(out, o);
        if let Some(&w) = self.word_idx.get(&addr) {
            // Written before: update value and mask in its entry.
            self.words[w].value = value;
            let e = self.wset(core, self.words[w].slot);
            self.store(out, e + 8);
            self.store(out, e + 16);
            Self::charge(out, ins, self.costs.store_waw, 3);
            return 1;
        }
        let first = self.stripes.insert(stripe, ()).is_none();
        if first {
            self.atomic(out, o);
        }
        let slot = self.words.len() as u64;
        let e = self.wset(core, slot);
        for k in 0..6 {
            self.store(out, e + 8 * k);
        }
        self.word_idx.insert(addr, self.words.len());
        self.words.push(WEntry { addr, value, slot });
        if first {
            Self::charge(out, ins, self.costs.store, 8);
        } else {
            Self::charge(out, ins, self.costs.store_waw, 7);
        }
        if first {
            2
        } else {
            1
        }
    }

    /// `stm_commit`: `write_home` maps a program address to where the
    /// deferred store goes. Returns the loads emitted.
    pub fn commit(
        &mut self,
        out: &mut Vec<Op>,
        ins: &mut Instructions,
        core: usize,
        write_home: impl Fn(Addr) -> Addr,
    ) -> u32 {
        if self.words.is_empty() {
            // Read-only: TinySTM commits without touching the clock.
            self.seen_commits[core] = self.commits;
            Self::charge(out, ins, self.costs.commit, 0);
            return 0;
        }
        let mut loads = 0;
        self.atomic(out, self.clock(core));
        loads += 1;
        let mut n = self.costs.commit + self.costs.commit_per_write * self.words.len() as u64;
        let mut mem = 1u64;
        // Another thread committed since this one's previous commit: the
        // clock moved past this transaction's start, so validate.
        if self.commits > self.seen_commits[core] {
            self.stats.validations += 1;
            for i in 0..self.reads {
                let e = self.rset(core, i);
                self.load(out, e);
                // The orec the entry points to (its address is not kept
                // here: the entry's own line stands for both).
                self.load(out, e + 8);
                loads += 2;
                mem += 2;
            }
            n += self.costs.commit_per_read * self.reads;
        }
        let words = std::mem::take(&mut self.words);
        let mut released: FxHashMap<u64, ()> = FxHashMap::default();
        for w in &words {
            self.load(out, self.wset(core, w.slot));
            out.push(Op::Store {
                addr: write_home(w.addr),
                value: w.value,
            });
            loads += 1;
            mem += 2;
            if released.insert(w.addr >> STRIPE_SHIFT, ()).is_none() {
                self.store(out, self.orec(core, w.addr));
                mem += 1;
            }
        }
        self.words = words;
        Self::charge(out, ins, n, mem);
        self.commits += 1;
        self.seen_commits[core] = self.commits;
        loads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> StmCosts {
        StmCosts {
            start: 52,
            load: 44,
            load_raw: 37,
            store: 47,
            store_waw: 39,
            commit: 53,
            commit_per_write: 12,
            commit_per_read: 10,
        }
    }

    fn count(out: &[Op]) -> (u64, u64, u64, u64) {
        let (mut l, mut s, mut f, mut c) = (0, 0, 0, 0);
        for op in out {
            match op {
                Op::Load { .. } => l += 1,
                Op::Store { .. } => s += 1,
                Op::Fence => f += 1,
                Op::Compute { n } => c += u64::from(*n),
                Op::Flush { .. } => {}
            }
        }
        (l, s, f, c)
    }

    /// One transaction of R reads of distinct words and W writes of
    /// distinct stripes: the measured per-call counts, and the memory
    /// operations of the WB-ETL fast path (docs/design/baselines.md §3.1).
    fn tx(stm: &mut TinyStm, core: usize, r: u64, w: u64) -> (Vec<Op>, Instructions) {
        let mut out = Vec::new();
        let mut ins = Instructions::default();
        stm.begin(&mut out, &mut ins, core);
        for i in 0..r {
            let a = 0x10_0000 + i * 64;
            let (_, from_wset) = stm.read_barrier(&mut out, &mut ins, core, a);
            assert!(!from_wset);
            out.push(Op::Load {
                addr: a,
                value: 0,
                dep: 0,
            });
            stm.after_load(&mut out, &mut ins, core, a);
        }
        for i in 0..w {
            stm.write(&mut out, &mut ins, core, 0x20_0000 + i * 64, i);
        }
        stm.commit(&mut out, &mut ins, core, |a| a);
        (out, ins)
    }

    #[test]
    fn fast_path_costs_match_the_measured_calls() {
        let mut stm = TinyStm::new(1 << 40, 2, costs());
        // First transaction: nothing committed before, no validation.
        let (out, ins) = tx(&mut stm, 0, 10, 8);
        assert_eq!(ins.total, 52 + 10 * 44 + 8 * 47 + 53 + 8 * 12);
        let (l, s, f, c) = count(&out);
        // Loads: clock, 2 orecs + data per read, orec + CAS per write, the
        // clock's fetch-and-increment, one write-set entry per write.
        assert_eq!(l, 1 + 10 * 3 + 8 * 2 + 1 + 8);
        // Stores: 2 read-set words per read, CAS + 6 entry words per write,
        // the clock, per write the deferred data store and the orec release.
        assert_eq!(s, 10 * 2 + 8 * 7 + 1 + 8 * 2);
        assert_eq!(f, 8 + 1, "one per locked RMW");
        // The rest of each measured count is Compute: the emitted memory
        // instructions (a locked RMW counted once) make up the difference.
        assert_eq!(c + (l + s - f), ins.total);
        // Another thread commits: the next transaction validates its reads.
        tx(&mut stm, 1, 0, 1);
        let (_, ins) = tx(&mut stm, 0, 10, 8);
        assert_eq!(ins.total, 52 + 10 * 44 + 8 * 47 + 53 + 8 * 12 + 10 * 10);
        assert_eq!(
            stm.stats.validations, 2,
            "core 1 saw core 0's commit, then core 0 saw core 1's"
        );
    }

    /// The cache model keeps a line in one core's private caches, so no
    /// metadata line may be addressed by two cores; the clock and the
    /// orecs of a core are the other core's shifted by one alias (DudeTM
    /// maps both to the same DRAM bytes).
    #[test]
    fn cores_address_the_metadata_through_disjoint_aliases() {
        let base = 1 << 40;
        let mut stm = TinyStm::new(base, 2, costs());
        let meta = |out: &[Op]| -> Vec<Addr> {
            out.iter()
                .filter_map(|op| match *op {
                    Op::Load { addr, .. } | Op::Store { addr, .. } if addr >= base => Some(addr),
                    _ => None,
                })
                .collect()
        };
        // The same program addresses on both cores: same clock, same orecs.
        let (out0, _) = tx(&mut stm, 0, 4, 4);
        let (out1, _) = tx(&mut stm, 1, 4, 4);
        let (m0, m1) = (meta(&out0), meta(&out1));
        let lines0: std::collections::HashSet<Addr> = m0.iter().map(|a| a / 64).collect();
        assert!(
            m1.iter().all(|a| !lines0.contains(&(a / 64))),
            "a metadata line is shared by cores 0 and 1"
        );
        let alias = alias_bytes(2);
        assert_eq!(alias % 4096, 0, "aliases are page-aligned");
        assert_eq!(m1[0], m0[0] + alias, "clock");
        assert_eq!(m1[1], m0[1] + alias, "first orec");
        assert!(base + span_bytes(2) > *m1.iter().max().unwrap());
    }

    #[test]
    fn rewrites_and_reads_of_written_words_use_the_write_set() {
        let mut stm = TinyStm::new(1 << 40, 1, costs());
        let mut out = Vec::new();
        let mut ins = Instructions::default();
        stm.begin(&mut out, &mut ins, 0);
        stm.write(&mut out, &mut ins, 0, 0x1000, 1);
        stm.write(&mut out, &mut ins, 0, 0x1000, 2); // same word
        stm.write(&mut out, &mut ins, 0, 0x1008, 3); // same stripe, new word
        let (loads, from_wset) = stm.read_barrier(&mut out, &mut ins, 0, 0x1000);
        assert!(from_wset && loads == 2);
        assert_eq!(stm.stats.atomics, 1, "one CAS per stripe");
        stm.commit(&mut out, &mut ins, 0, |a| a + 7);
        // The deferred stores carry the final values, once per word.
        let data: Vec<(u64, u64)> = out
            .iter()
            .filter_map(|op| match *op {
                Op::Store { addr, value } if addr < 1 << 40 => Some((addr, value)),
                _ => None,
            })
            .collect();
        assert_eq!(data, vec![(0x1007, 2), (0x100f, 3)]);
        assert_eq!(ins.total, 52 + 47 + 39 + 39 + 37 + 53 + 2 * 12);
    }
}
