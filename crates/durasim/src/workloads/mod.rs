//! Workloads: real data-structure code executed functionally on the
//! architectural image; each transaction emits the ops it performed, with
//! their values, for the timing back-end. One module per workload behind
//! [`Workload`]; each has an invariant checker that validates its structure
//! from a memory image alone (crash verification uses it).

pub mod btree;
pub mod hashmap;
pub mod queue;
pub mod rbtree;
pub mod tpcc;
pub mod vector;
pub mod ycsb;

use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::{MemRead, MemWrite, SparseImage};
use crate::types::Addr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// One operation of a transaction's op stream. Addresses are 8-byte aligned
/// words; stores carry the value written, loads the value read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Load {
        addr: Addr,
        value: u64,
        /// Address dependency: the load's address was computed from the
        /// value of the load `dep` loads earlier in this stream (0: none).
        /// The out-of-order core issues it only after that load's data is
        /// back (pointer chasing serialises). Set by [`TxCtx`].
        dep: u8,
    },
    Store {
        addr: Addr,
        value: u64,
    },
    /// `n` non-memory instructions.
    Compute {
        n: u32,
    },
    /// clwb of the line holding `addr` (software schemes).
    Flush {
        addr: Addr,
    },
    /// sfence: wait for outstanding stores and flushes.
    Fence,
}

/// Per-thread region header (persistent): magic, heap cursor, root pointer.
pub const REGION_MAGIC: u64 = 0x6475_7261_7369_6d31; // "durasim1"
pub const HDR_MAGIC: u64 = 0;
pub const HDR_HEAP_CURSOR: u64 = 8;
/// First byte a workload may use for its root object.
pub const ROOT_OFFSET: u64 = 64;
/// The heap starts after the root area.
pub const HEAP_OFFSET: u64 = 4096;

/// Bytes above a loaded pointer within which a later load is taken to be
/// an access through that pointer (address dependency). Covers an object
/// of up to 4 KiB (1 KiB items, 256 B B+-tree nodes, TPC-C rows); docs/MODEL.md.
pub const DEP_SPAN_BYTES: u64 = 4096;
/// Loaded pointers remembered for dependency inference (newest first wins).
const DEP_PTRS: usize = 8;

/// The handle a workload uses to touch memory during one transaction (or
/// during setup, when no ops are recorded).
pub struct TxCtx<'a> {
    mem: &'a mut SparseImage,
    ops: &'a mut Vec<Op>,
    record: bool,
    region_base: Addr,
    region_end: Addr,
    /// Set when the heap ran out of space (reported as a config error).
    pub out_of_memory: bool,
    /// Recently loaded values that look like pointers into this thread's
    /// heap, with the sequence number of the load that produced them (ring).
    ptr_value: [Addr; DEP_PTRS],
    ptr_seq: [u32; DEP_PTRS],
    ptr_len: usize,
    ptr_next: usize,
    /// Loads recorded so far in this op stream.
    load_seq: u32,
}

impl<'a> TxCtx<'a> {
    pub fn new(
        mem: &'a mut SparseImage,
        ops: &'a mut Vec<Op>,
        record: bool,
        region_base: Addr,
        region_bytes: u64,
    ) -> Self {
        TxCtx {
            mem,
            ops,
            record,
            region_base,
            region_end: region_base + region_bytes,
            out_of_memory: false,
            ptr_value: [0; DEP_PTRS],
            ptr_seq: [0; DEP_PTRS],
            ptr_len: 0,
            ptr_next: 0,
            load_seq: 0,
        }
    }

    /// Load a word. Its address dependency is inferred from values: if
    /// `addr` lies in `[p, p + DEP_SPAN_BYTES)` for a recently loaded value
    /// `p` that is a 64 B-aligned pointer into this thread's heap (the
    /// workloads store pointers as absolute addresses and allocate 64 B
    /// aligned), the load depends on the newest such load.
    #[inline]
    pub fn load(&mut self, addr: Addr) -> u64 {
        debug_assert_eq!(addr % 8, 0, "loads are 8-byte aligned words");
        let value = self.mem.read_u64(addr);
        if self.record {
            let dep = self.inferred_dep(addr);
            self.push_load(addr, value, dep);
        }
        value
    }

    /// Load a word whose address was computed from the value of the
    /// previous load (index arithmetic the value rule cannot see, e.g. a
    /// row number read from memory). Explicit form of the dependency.
    #[inline]
    pub fn load_dependent(&mut self, addr: Addr) -> u64 {
        debug_assert_eq!(addr % 8, 0, "loads are 8-byte aligned words");
        let value = self.mem.read_u64(addr);
        if self.record {
            let dep = u8::from(self.load_seq > 0);
            self.push_load(addr, value, dep);
        }
        value
    }

    /// Distance (in loads) to the newest remembered pointer load whose
    /// object span holds `addr`; 0 when none (or too far back to encode).
    #[inline]
    fn inferred_dep(&self, addr: Addr) -> u8 {
        let mut i = self.ptr_next;
        for _ in 0..self.ptr_len {
            i = if i == 0 { DEP_PTRS - 1 } else { i - 1 };
            if addr.wrapping_sub(self.ptr_value[i]) < DEP_SPAN_BYTES {
                let d = self.load_seq - self.ptr_seq[i];
                return if d <= u8::MAX as u32 { d as u8 } else { 0 };
            }
        }
        0
    }

    #[inline]
    fn push_load(&mut self, addr: Addr, value: u64, dep: u8) {
        self.ops.push(Op::Load { addr, value, dep });
        self.load_seq += 1;
        let heap = self.region_base + HEAP_OFFSET;
        if value.is_multiple_of(64) && value >= heap && value < self.region_end {
            self.ptr_value[self.ptr_next] = value;
            self.ptr_seq[self.ptr_next] = self.load_seq - 1;
            self.ptr_next = if self.ptr_next + 1 == DEP_PTRS {
                0
            } else {
                self.ptr_next + 1
            };
            self.ptr_len = (self.ptr_len + 1).min(DEP_PTRS);
        }
    }

    #[inline]
    pub fn store(&mut self, addr: Addr, value: u64) {
        debug_assert_eq!(addr % 8, 0, "stores are 8-byte aligned words");
        self.mem.write_u64(addr, value);
        if self.record {
            self.ops.push(Op::Store { addr, value });
        }
    }

    /// `n` non-memory instructions (hashing, comparisons, ...).
    #[inline]
    pub fn compute(&mut self, n: u32) {
        if self.record && n > 0 {
            self.ops.push(Op::Compute { n });
        }
    }

    pub fn region_base(&self) -> Addr {
        self.region_base
    }

    /// Persistent-heap allocation (bump allocator whose cursor lives in the
    /// region header, updated inside the transaction). 64-byte aligned.
    pub fn alloc(&mut self, bytes: u64) -> Addr {
        let cursor_addr = self.region_base + HDR_HEAP_CURSOR;
        let cur = self.load(cursor_addr);
        let addr = (cur + 63) & !63;
        let end = addr + bytes;
        if end > self.region_end {
            self.out_of_memory = true;
            return self.region_base + HEAP_OFFSET;
        }
        self.store(cursor_addr, end);
        addr
    }

    /// Initialise the region header (setup only).
    pub fn init_region(&mut self) {
        self.store(self.region_base + HDR_MAGIC, REGION_MAGIC);
        self.store(
            self.region_base + HDR_HEAP_CURSOR,
            self.region_base + HEAP_OFFSET,
        );
    }
}

/// A transactional workload instance owned by one thread.
pub trait Workload: Send {
    /// Build the initial structure (not timed, not part of any transaction).
    fn setup(&mut self, ctx: &mut TxCtx);
    /// Execute one transaction functionally (between TxBegin and TxEnd).
    fn run_tx(&mut self, ctx: &mut TxCtx);
}

/// Arguments to build a workload instance.
#[derive(Clone, Debug)]
pub struct WorkloadArgs {
    pub region_base: Addr,
    pub region_bytes: u64,
    pub seed: u64,
    pub item_bytes: u64,
    pub initial_items: u64,
    /// Upper bound on the transactions this instance will run.
    pub max_tx: u64,
    pub update_ratio: f64,
    pub key_space: u64,
    /// TPC-C: rows of the ITEM table (and STOCK rows per warehouse).
    pub tpcc_items: u64,
    /// TPC-C: customers per district.
    pub tpcc_customers: u64,
}

impl WorkloadArgs {
    pub fn from_params(
        p: &Params,
        region_base: Addr,
        region_bytes: u64,
        seed: u64,
        max_tx: u64,
    ) -> Self {
        WorkloadArgs {
            region_base,
            region_bytes,
            seed,
            item_bytes: p.u64("workload.item_bytes"),
            initial_items: p.u64("workload.initial_items"),
            max_tx,
            update_ratio: p.f64("workload.update_ratio"),
            key_space: p.u64("workload.key_space"),
            tpcc_items: p.u64("workload.tpcc_items"),
            tpcc_customers: p.u64("workload.tpcc_customers_per_district"),
        }
    }
}

/// Invariant checker: validates the structure at `region_base` from an
/// image alone; returns the number of items found.
pub type CheckFn =
    fn(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> std::result::Result<u64, String>;

pub struct WorkloadInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub build: fn(&WorkloadArgs) -> Box<dyn Workload>,
    pub check: CheckFn,
}

/// Every workload durasim ships.
pub static REGISTRY: &[&WorkloadInfo] = &[
    &vector::INFO,
    &hashmap::INFO,
    &queue::INFO,
    &rbtree::INFO,
    &btree::INFO,
    &ycsb::INFO,
    &tpcc::INFO,
];

pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|w| w.name).collect()
}

pub fn find(name: &str) -> Result<&'static WorkloadInfo> {
    REGISTRY
        .iter()
        .copied()
        .find(|w| w.name == name)
        .ok_or_else(|| {
            Error::input(format!(
                "unknown workload '{name}'; valid workloads: {}",
                names().join(", ")
            ))
        })
}

/// Validate workload parameters shared by all workloads.
pub fn validate(p: &Params) -> Result<()> {
    let ib = p.u64("workload.item_bytes");
    if !ib.is_multiple_of(8) || ib < 16 {
        return Err(Error::input(format!(
            "invalid value '{ib}' for 'workload.item_bytes': expected a multiple of 8, at least 16 (e.g. 64 or 1024)"
        )));
    }
    Ok(())
}

// ---- Items: self-validating records shared by all workloads -------------

/// Payload word `i` of an item with `key` at `version`: a deterministic mix,
/// so a checker can tell a torn or mixed-version item from the image alone.
#[inline]
pub fn payload_word(key: u64, version: u64, i: u64) -> u64 {
    let mut x = key ^ version.rotate_left(32) ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

/// Write a whole item (key, version, payload) at `addr`.
pub fn write_item(ctx: &mut TxCtx, addr: Addr, item_bytes: u64, key: u64, version: u64) {
    ctx.store(addr, key);
    ctx.store(addr + 8, version);
    for i in 2..item_bytes / 8 {
        ctx.store(addr + i * 8, payload_word(key, version, i));
    }
}

/// Update an item in place to `version` (key unchanged).
pub fn update_item(ctx: &mut TxCtx, addr: Addr, item_bytes: u64, key: u64, version: u64) {
    ctx.store(addr + 8, version);
    for i in 2..item_bytes / 8 {
        ctx.store(addr + i * 8, payload_word(key, version, i));
    }
}

/// Check an item's self-consistency; returns its key.
pub fn check_item(
    img: &dyn MemRead,
    addr: Addr,
    item_bytes: u64,
) -> std::result::Result<u64, String> {
    let key = img.read_u64(addr);
    let version = img.read_u64(addr + 8);
    for i in 2..item_bytes / 8 {
        let got = img.read_u64(addr + i * 8);
        let want = payload_word(key, version, i);
        if got != want {
            return Err(format!(
                "item at {addr:#x} (key {key}, version {version}): word {i} is {got:#x}, expected {want:#x} (torn or mixed-version item)"
            ));
        }
    }
    Ok(key)
}

/// Deterministic RNG for a workload instance.
pub fn rng(seed: u64) -> Xoshiro256PlusPlus {
    use rand::SeedableRng;
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Draw a random key in `[1, key_space)` (0 is reserved for "empty").
pub fn random_key(rng: &mut impl Rng, key_space: u64) -> u64 {
    rng.gen_range(1..key_space.max(2))
}

/// 64-bit mixer (the splitmix64 finalizer): key hashing for hash tables.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Largest heap a checker accepts (guards against a garbage cursor).
const MAX_CHECK_HEAP_BYTES: u64 = 1 << 40;

/// The allocated heap `[lo, hi)` of a region, read from its header.
/// Checkers use it to reject wild pointers before following them.
pub fn heap_bounds(
    img: &dyn MemRead,
    region_base: Addr,
) -> std::result::Result<(Addr, Addr), String> {
    let magic = img.read_u64(region_base + HDR_MAGIC);
    if magic != REGION_MAGIC {
        return Err(format!(
            "region at {region_base:#x}: bad magic {magic:#x} (expected {REGION_MAGIC:#x})"
        ));
    }
    let lo = region_base + HEAP_OFFSET;
    let hi = img.read_u64(region_base + HDR_HEAP_CURSOR);
    if hi < lo || hi - lo > MAX_CHECK_HEAP_BYTES {
        return Err(format!(
            "region at {region_base:#x}: heap cursor {hi:#x} outside [{lo:#x}, {:#x}]",
            lo + MAX_CHECK_HEAP_BYTES
        ));
    }
    Ok((lo, hi))
}

/// Check that `[p, p + bytes)` is a 64-byte aligned object inside the
/// allocated heap `bounds`.
pub fn check_ptr(
    p: Addr,
    bytes: u64,
    bounds: (Addr, Addr),
    what: &str,
) -> std::result::Result<(), String> {
    if !p.is_multiple_of(64) || p < bounds.0 || p.checked_add(bytes).is_none_or(|e| e > bounds.1) {
        return Err(format!(
            "{what}: pointer {p:#x} is not an allocated object (heap [{:#x}, {:#x}))",
            bounds.0, bounds.1
        ));
    }
    Ok(())
}

/// Shared test drivers: run a workload directly on a [`SparseImage`]
/// through [`TxCtx`], or through the engine with the `ideal` scheme.
#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    use crate::engine::{self, RunSpec};
    use crate::mem::MemWrite;

    /// A region that does not start at 0, so base-relative bugs show.
    pub const BASE: Addr = 1 << 30;
    pub const REGION_BYTES: u64 = 1 << 30;

    pub fn args(
        item_bytes: u64,
        initial_items: u64,
        max_tx: u64,
        update_ratio: f64,
    ) -> WorkloadArgs {
        WorkloadArgs {
            region_base: BASE,
            region_bytes: REGION_BYTES,
            seed: 7,
            item_bytes,
            initial_items,
            max_tx,
            update_ratio,
            key_space: 1 << 32,
            tpcc_items: 2000,
            tpcc_customers: 300,
        }
    }

    /// Run `f` with a non-recording context (setup) or a recording one.
    pub fn with_ctx<R>(
        img: &mut SparseImage,
        record: bool,
        f: impl FnOnce(&mut TxCtx) -> R,
    ) -> (R, Vec<Op>) {
        let mut ops = Vec::new();
        let r = {
            let mut ctx = TxCtx::new(img, &mut ops, record, BASE, REGION_BYTES);
            let r = f(&mut ctx);
            assert!(!ctx.out_of_memory, "test region too small");
            r
        };
        (r, ops)
    }

    /// Setup + `n` transactions through the registry entry; returns the
    /// image and the mean stores per transaction.
    pub fn run_direct(info: &WorkloadInfo, a: &WorkloadArgs, n: u64) -> (SparseImage, f64) {
        let mut img = SparseImage::new();
        let mut wl = (info.build)(a);
        with_ctx(&mut img, false, |ctx| wl.setup(ctx));
        let mut stores = 0usize;
        for _ in 0..n {
            let (_, ops) = with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
            stores += ops.iter().filter(|o| matches!(o, Op::Store { .. })).count();
        }
        (img, stores as f64 / n.max(1) as f64)
    }

    #[test]
    #[ignore]
    fn print_stores_per_tx() {
        for info in REGISTRY {
            for ib in [64u64, 1024] {
                let a = args(ib, 1024, 2000, 0.5);
                let (img, s) = run_direct(info, &a, 2000);
                let n = (info.check)(&img, BASE, ib).unwrap();
                eprintln!("{} ib={ib}: {s:.1} stores/tx, {n} items", info.name);
            }
        }
    }

    /// Crash images hold torn or stale words: a checker must report them as
    /// errors, never panic or loop. Corrupt one random word of the region
    /// at a time (zero, all ones, random, one flipped bit).
    #[test]
    fn checkers_never_panic_on_corrupted_images() {
        use rand::Rng;
        for info in REGISTRY {
            let a = args(64, 64, 100, 0.5);
            let (img, _) = run_direct(info, &a, 100);
            let pages: Vec<u64> = img
                .page_numbers()
                .into_iter()
                .filter(|&p| p * 4096 >= BASE && p * 4096 < BASE + REGION_BYTES)
                .collect();
            let mut r = super::rng(17);
            let mut detected = 0;
            for k in 0..300 {
                let addr = pages[r.gen_range(0..pages.len())] * 4096 + r.gen_range(0..512) * 8;
                let old = img.read_u64(addr);
                let new = match k % 4 {
                    0 => 0,
                    1 => u64::MAX,
                    2 => r.gen(),
                    _ => old ^ (1 << r.gen_range(0..64)),
                };
                let mut bad = img.clone();
                bad.write_u64(addr, new);
                if (info.check)(&bad, BASE, 64).is_err() {
                    detected += 1;
                }
            }
            assert!(
                detected > 30,
                "{}: only {detected} of 300 corruptions detected",
                info.name
            );
        }
    }

    /// Flip one bit of the word at `addr`; the checker must then fail.
    pub fn assert_detects(info: &WorkloadInfo, img: &SparseImage, addr: Addr, item_bytes: u64) {
        (info.check)(img, BASE, item_bytes).expect("clean image passes");
        let mut bad = img.clone();
        bad.write_u64(addr, img.read_u64(addr) ^ 0x40);
        let r = (info.check)(&bad, BASE, item_bytes);
        assert!(
            r.is_err(),
            "{}: corruption at {addr:#x} not detected",
            info.name
        );
    }

    /// Run through the engine (ideal scheme, read checking on), drain, and
    /// check equivalence and the invariants on the NVM media.
    pub fn engine_check(workload: &str, threads: usize, tx: u64, sets: &[(&str, &str)]) {
        let mut spec = RunSpec::new("ideal", workload).unwrap();
        spec.threads = threads;
        spec.tx = tx;
        spec.seed = 3;
        spec.params.set_str("run.check_reads", "true").unwrap();
        spec.params.set_str("workload.initial_items", "64").unwrap();
        for (k, v) in sets {
            spec.params.set_str(k, v).unwrap();
        }
        let e = engine::run(spec, &mut |_| {}).unwrap();
        assert_eq!(e.metrics().committed_tx, tx);
        e.check_equivalence().unwrap();
        e.check_invariants(e.ctx.nvm.media()).unwrap();
        e.check_invariants(&e.arch).unwrap();
    }
}
