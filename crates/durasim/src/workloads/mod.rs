//! Workloads: real data-structure code executed functionally on the
//! architectural image; each transaction emits the ops it performed, with
//! their values, for the timing back-end. One module per workload behind
//! [`Workload`]; each has an invariant checker that validates its structure
//! from a memory image alone (crash verification uses it).

pub mod ann;
pub mod array;
pub mod btree;
pub mod cc;
pub mod cd;
mod dep;
pub mod echo;
pub mod feed;
pub mod hashmap;
pub mod hashtable;
pub mod kdtree;
pub mod labels;
pub mod lbm;
pub mod pagerank;
pub mod program;
pub mod queue;
pub mod rbtree;
pub mod sdg;
pub mod sps;
pub mod stencil3d;
pub mod tatp;
pub mod tpcc;
pub mod values;
pub mod vector;
pub mod ycsb;

pub use self::values::{Fill, ValueMode, ValueModel};
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::{MemRead, SparseImage};
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
/// of up to 4 KiB (1 KiB items, 256 B B+-tree nodes, TPC-C rows); docs/model/processor.md.
pub const DEP_SPAN_BYTES: u64 = 4096;

/// The handle a workload uses to touch memory during one transaction (or
/// during setup, when no ops are recorded).
pub struct TxCtx<'a> {
    mem: &'a mut SparseImage,
    ops: &'a mut Vec<Op>,
    record: bool,
    region_base: Addr,
    region_end: Addr,
    /// `region_base + HEAP_OFFSET`: loaded values in `[heap_start,
    /// region_end)` are pointer candidates.
    heap_start: Addr,
    /// Set when the heap ran out of space (reported as a config error).
    pub out_of_memory: bool,
    /// Recently loaded values that look like pointers into this thread's
    /// heap, with the sequence number of the load that produced them.
    ptrs: dep::DepRing,
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
            heap_start: region_base + HEAP_OFFSET,
            out_of_memory: false,
            ptrs: dep::DepRing::new(),
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
        let value = self.mem.read_word(addr);
        if self.record {
            let dep = self.ptrs.dep(addr, self.load_seq);
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
        let value = self.mem.read_word(addr);
        if self.record {
            let dep = u8::from(self.load_seq > 0);
            self.push_load(addr, value, dep);
        }
        value
    }

    #[inline(always)]
    fn push_load(&mut self, addr: Addr, value: u64, dep: u8) {
        self.ops.push(Op::Load { addr, value, dep });
        let seq = self.load_seq;
        self.load_seq = seq + 1;
        if value.is_multiple_of(64) && value >= self.heap_start && value < self.region_end {
            self.ptrs.push(value, seq);
        }
    }

    #[inline]
    pub fn store(&mut self, addr: Addr, value: u64) {
        debug_assert_eq!(addr % 8, 0, "stores are 8-byte aligned words");
        self.mem.write_word(addr, value);
        if self.record {
            self.ops.push(Op::Store { addr, value });
        }
    }

    /// The current content of a word, without recording a load: what the
    /// value model ([`values`]) derives a new value from. The program
    /// itself does not read it (a store overwrites it).
    #[inline]
    pub fn peek(&self, addr: Addr) -> u64 {
        self.mem.read_word(addr)
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

    /// A context over the sub-region `[base, base + bytes)` that records
    /// into the same op stream (one copy of `workload.copies`).
    pub fn sub(&mut self, base: Addr, bytes: u64) -> TxCtx<'_> {
        TxCtx::new(self.mem, self.ops, self.record, base, bytes)
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
    /// `workload.key_dist`: how keyed workloads pick keys.
    pub key_dist: KeyDist,
    /// `workload.footprint_bytes` (programs without transactions; 0 =
    /// initial_items x item size).
    pub footprint_bytes: u64,
    /// `workload.graph_vertices` (0 = from the footprint).
    pub graph_vertices: u64,
    /// `workload.graph_edge_factor`.
    pub graph_edge_factor: u64,
    /// `workload.values`: what the data words hold.
    pub values: ValueMode,
    /// `workload.update_scope`: whether an update assigns the whole item
    /// or one field of it.
    pub update_scope: UpdateScope,
    /// `workload.ycsb_text = nstore`: ycsb's values are WHISPER N-Store's
    /// text (else YCSB's random printable bytes).
    pub ycsb_nstore_text: bool,
    /// `workload.ycsb_read_share`.
    pub ycsb_read_share: f64,
    /// `workload.ycsb_fields`.
    pub ycsb_fields: u64,
    /// `workload.ycsb_records` (0: `initial_items`).
    pub ycsb_records: u64,
    /// `workload.echo_batch`.
    pub echo_batch: u64,
    /// `workload.echo_put_share`.
    pub echo_put_share: f64,
    /// `workload.echo_update_share`.
    pub echo_update_share: f64,
    /// `workload.echo_keys` (0: `initial_items`).
    pub echo_keys: u64,
    /// `workload.tatp_subscribers` (0: `initial_items`).
    pub tatp_subscribers: u64,
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
            key_dist: KeyDist::parse(p.str("workload.key_dist")),
            footprint_bytes: p.u64("workload.footprint_bytes"),
            graph_vertices: p.u64("workload.graph_vertices"),
            graph_edge_factor: p.u64("workload.graph_edge_factor"),
            values: ValueMode::parse(p.str("workload.values")),
            update_scope: UpdateScope::parse(p.str("workload.update_scope")),
            ycsb_nstore_text: p.str("workload.ycsb_text") == "nstore",
            ycsb_read_share: p.f64("workload.ycsb_read_share"),
            ycsb_fields: p.u64("workload.ycsb_fields"),
            ycsb_records: p.u64("workload.ycsb_records"),
            echo_batch: p.u64("workload.echo_batch"),
            echo_put_share: p.f64("workload.echo_put_share"),
            echo_update_share: p.f64("workload.echo_update_share"),
            echo_keys: p.u64("workload.echo_keys"),
            tatp_subscribers: p.u64("workload.tatp_subscribers"),
        }
    }

    /// The value model of this instance (`workload.values`, its seed).
    pub fn vm(&self) -> ValueModel {
        ValueModel::new(self.values, self.seed)
    }
}

/// `workload.update_scope`: what an update of an item assigns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateScope {
    /// The whole item (`v[i] = entry`): key (unchanged, a silent store),
    /// payload and seal.
    Item,
    /// One field of the payload and the seal.
    Field,
}

impl UpdateScope {
    pub fn parse(s: &str) -> Self {
        if s == "field" {
            UpdateScope::Field
        } else {
            UpdateScope::Item
        }
    }
}

/// Invariant checker: validates the structure at `region_base` from an
/// image alone; returns the number of items found.
pub type CheckFn =
    fn(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> std::result::Result<u64, String>;

/// An invariant checker that re-verifies only what changed since the last
/// image it passed (crash verification: docs/model/crash.md).
/// Sound by contract: `true` only if the workload's
/// [`CheckFn`] passes on `img`; `false` means "not shown" (run the full
/// checker for the verdict and its message). Never panics on any image.
pub trait IncrementalCheck: Send {
    /// Whether `check(img, region_base, item_bytes)` passes. `changed`:
    /// a superset of the words where `img` differs from the image of this
    /// checker's last `true` (same region and item size), or `None` when
    /// unknown (verify from scratch).
    fn passes(
        &mut self,
        img: &dyn MemRead,
        region_base: Addr,
        item_bytes: u64,
        changed: Option<&[Addr]>,
    ) -> bool;
}

pub struct WorkloadInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub build: fn(&WorkloadArgs) -> Box<dyn Workload>,
    pub check: CheckFn,
    /// An incremental form of `check`, when the workload has one.
    pub check_incremental: Option<fn() -> Box<dyn IncrementalCheck>>,
    /// Names the structure and field a word belongs to (crash-test
    /// messages; [`labels`]).
    pub describe: labels::DescribeFn,
    /// How its data are sized, for the checks before a run.
    pub sizing: Sizing,
}

/// How a workload sizes its data, declared by the workload for the checks
/// before a run (engine/footprint.rs): the least simulated bytes its
/// initial structure takes per thread, and what a transaction may add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizing {
    pub initial: InitialSize,
    /// Item bytes when `workload.item_bytes` is 0 (a lower bound of the
    /// workload's own default).
    pub default_item_bytes: u64,
    pub per_tx: TxGrowth,
    /// The workload's own count parameter (`workload.ycsb_records`, ...):
    /// when non-zero it replaces `workload.initial_items` (and
    /// `workload.footprint_bytes`) as the number of items.
    pub items_param: Option<&'static str>,
}

/// The initial structure of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitialSize {
    /// `workload.initial_items` items, each with a distinct key drawn from
    /// `[1, workload.key_space)`.
    Items,
    /// A program without transactions: `workload.footprint_bytes`, or
    /// [`InitialSize::Items`] when that is 0.
    FootprintOrItems,
    /// Fixed-size records: the sum of each parameter's value times its
    /// bytes (`workload.initial_items` and the key space do not apply).
    Records(&'static [(&'static str, u64)]),
}

/// What one transaction may add to the structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxGrowth {
    /// Nothing: updates, reads and swaps in place, or a fixed-capacity
    /// table (charging these an item per transaction refused paper-scale
    /// runs: ycsb, 20M operations, 39 GiB estimated, 1.9 GB used).
    Nothing,
    /// One item (an insert).
    Item,
    /// Up to this many bytes.
    Bytes(u64),
}

impl Sizing {
    /// A structure that may insert an item per transaction, 64 B items by
    /// default.
    pub const GROWING: Sizing = Sizing {
        initial: InitialSize::Items,
        default_item_bytes: DEFAULT_ITEM_BYTES,
        per_tx: TxGrowth::Item,
        items_param: None,
    };
    /// A structure of 64 B items (by default) that never grows.
    pub const IN_PLACE: Sizing = Sizing {
        initial: InitialSize::Items,
        default_item_bytes: DEFAULT_ITEM_BYTES,
        per_tx: TxGrowth::Nothing,
        items_param: None,
    };
    /// A program without transactions (sized by `workload.footprint_bytes`).
    pub const PROGRAM: Sizing = Sizing {
        initial: InitialSize::FootprintOrItems,
        default_item_bytes: DEFAULT_ITEM_BYTES,
        per_tx: TxGrowth::Nothing,
        items_param: None,
    };

    /// The item size these parameters give.
    pub fn item_bytes(&self, p: &Params) -> u64 {
        item_bytes_or(p.u64("workload.item_bytes"), self.default_item_bytes)
    }

    /// Least simulated bytes of one thread's initial structure (saturating).
    pub fn initial_bytes(&self, p: &Params) -> u64 {
        let items = || {
            p.u64("workload.initial_items")
                .saturating_mul(self.item_bytes(p))
        };
        if let Some(n) = self.items_param.map(|k| p.u64(k)).filter(|&n| n > 0) {
            return n.saturating_mul(self.item_bytes(p));
        }
        match self.initial {
            InitialSize::Items => items(),
            InitialSize::FootprintOrItems => match p.u64("workload.footprint_bytes") {
                0 => items(),
                f => f,
            },
            InitialSize::Records(records) => records.iter().fold(0u64, |sum, &(key, bytes)| {
                sum.saturating_add(p.u64(key).saturating_mul(bytes))
            }),
        }
    }

    /// Bytes one transaction may add.
    pub fn tx_bytes(&self, p: &Params) -> u64 {
        match self.per_tx {
            TxGrowth::Nothing => 0,
            TxGrowth::Item => self.item_bytes(p),
            TxGrowth::Bytes(b) => b,
        }
    }

    /// Whether each initial item needs a distinct key of `workload.key_space`.
    pub fn keyed(&self) -> bool {
        !matches!(self.initial, InitialSize::Records(_))
    }

    /// The parameters that size the initial structure, as error messages
    /// name them.
    pub fn initial_params(&self) -> String {
        if let Some(k) = self.items_param {
            // A graph program is sized by its footprint unless the vertex
            // count is given.
            if matches!(self.initial, InitialSize::FootprintOrItems) {
                return format!(
                    "workload.footprint_bytes (or {k}, or workload.initial_items / workload.item_bytes)"
                );
            }
            return format!("{k} (or workload.initial_items) / workload.item_bytes");
        }
        match self.initial {
            InitialSize::Items => "workload.initial_items / workload.item_bytes".into(),
            InitialSize::FootprintOrItems => {
                "workload.footprint_bytes (or workload.initial_items / workload.item_bytes)".into()
            }
            InitialSize::Records(records) => records
                .iter()
                .map(|&(key, _)| key)
                .collect::<Vec<_>>()
                .join(" / "),
        }
    }
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
    // The other papers' transactional workloads.
    &tatp::INFO,
    &echo::INFO,
    &sps::INFO,
    &sdg::INFO,
    &array::INFO,
    &hashtable::INFO,
    // Programs without transactions (DPC paper Table 5).
    &pagerank::INFO,
    &cc::INFO,
    &cd::INFO,
    &ann::INFO,
    &kdtree::INFO,
    &stencil3d::INFO,
    &lbm::INFO,
];

/// Checker helper: `keys` (sorted in place) must hold no key twice.
pub(crate) fn keys_unique(workload: &str, keys: &mut [u64]) -> std::result::Result<(), String> {
    keys.sort_unstable();
    match keys.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(format!("{workload}: key {} appears twice", w[0])),
        None => Ok(()),
    }
}

/// The end of a map checker (hashmap, hashtable): the count word must equal
/// the keys reached (`what` names them in the message: "entries are
/// reachable"), each key once; returns the count.
pub(crate) fn keys_match_count(
    workload: &str,
    count: u64,
    keys: &mut [u64],
    what: &str,
) -> std::result::Result<u64, String> {
    if keys.len() as u64 != count {
        return Err(format!(
            "{workload}: count is {count} but {} {what}",
            keys.len()
        ));
    }
    keys_unique(workload, keys)?;
    Ok(count)
}

/// Programs without transactions (the dual-page
/// checkpointing paper's Table 5): sized by `workload.footprint_bytes`.
pub const PROGRAMS: [&str; 7] = ["pagerank", "cc", "cd", "ann", "kdtree", "stencil3d", "lbm"];

/// The HOOP paper's seven workloads (its Table III), the default grid.
pub const HOOP_PAPER: [&str; 7] = [
    "vector", "hashmap", "queue", "rbtree", "btree", "ycsb", "tpcc",
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
    if ib != 0 && (!ib.is_multiple_of(8) || ib < MIN_ITEM_BYTES) {
        return Err(Error::input(format!(
            "invalid value '{ib}' for 'workload.item_bytes': expected 0 (the workload's default) or a multiple of 8, at least {MIN_ITEM_BYTES} (e.g. 64 or 1024)"
        )));
    }
    Ok(())
}

// ---- Items: self-validating records shared by all workloads -------------
//
// An item is a record of 8-byte words: [0] key, [1] seal, [2..) payload
// fields. The seal holds the item's version (high 32 bits) and a 32-bit
// checksum of (key, version, payload) (low 32 bits). An insert writes the
// whole item; an update (`workload.update_scope`) rewrites the whole item,
// as code that assigns a whole entry does, or changes one field and the
// seal, as code that assigns one field of a record and maintains its
// version/checksum would. The checksum is an XOR of per-word hashes, so a
// field update computes the new seal from the old seal and the old and new
// field words alone (no read of the rest of the item), and a crash image in
// which the payload and the seal do not come from the same transaction
// fails the check. Payload values come from the value model ([`values`]).

/// Word offset of the seal (version << 32 | checksum).
pub const ITEM_SEAL: u64 = 8;
/// First payload word.
const ITEM_FIRST_FIELD_WORD: u64 = 2;
/// Smallest item: key, seal and one payload word.
pub const MIN_ITEM_BYTES: u64 = 24;

/// Payload word `i` of an item with `key` written at `version` under
/// `workload.values = random` (a deterministic 64-bit mix).
#[inline]
pub fn payload_word(key: u64, version: u64, i: u64) -> u64 {
    values::random_word(key, version, i)
}

/// Checksum term of payload word `i` holding `w`.
#[inline]
fn sum_word(i: u64, w: u64) -> u64 {
    mix64(w ^ i.wrapping_mul(0xd6e8_feb8_6659_fd93))
}

/// Checksum term of the header (key and version).
#[inline]
fn sum_header(key: u64, version: u64) -> u64 {
    mix64(key ^ mix64(version ^ 0x5ea1))
}

#[inline]
fn seal(version: u64, sum: u64) -> u64 {
    ((version & 0xffff_ffff) << 32) | (sum & 0xffff_ffff)
}

/// The version an item's seal carries.
#[inline]
pub fn item_version(img: &dyn MemRead, addr: Addr) -> u64 {
    img.read_u64(addr + ITEM_SEAL) >> 32
}

/// Payload words of an item of `item_bytes`.
#[inline]
pub fn item_payload_words(item_bytes: u64) -> u64 {
    item_bytes / 8 - ITEM_FIRST_FIELD_WORD
}

/// Words `[first, end)` (item word indices) of field `f` when the payload is
/// split into `n_fields` fields as evenly as possible.
#[inline]
pub fn field_words(item_bytes: u64, n_fields: u64, f: u64) -> (u64, u64) {
    let p = item_payload_words(item_bytes);
    let n = n_fields.clamp(1, p);
    (
        ITEM_FIRST_FIELD_WORD + f * p / n,
        ITEM_FIRST_FIELD_WORD + (f + 1) * p / n,
    )
}

/// Write a whole item (key, seal, payload) at `addr`: item_bytes / 8
/// stores; payload values from `vm`.
pub fn write_item(
    ctx: &mut TxCtx,
    vm: ValueModel,
    addr: Addr,
    item_bytes: u64,
    key: u64,
    version: u64,
) {
    let mut sum = sum_header(key, version);
    ctx.store(addr, key);
    for i in ITEM_FIRST_FIELD_WORD..item_bytes / 8 {
        let w = vm.word(key, version, i, ctx.peek(addr + i * 8), item_bytes);
        sum ^= sum_word(i, w);
        ctx.store(addr + i * 8, w);
    }
    ctx.store(addr + ITEM_SEAL, seal(version, sum));
}

/// Update the item at `addr` as `scope` says, bumping its version; returns
/// the new version. `Item`: assign the whole item (the key word is
/// rewritten unchanged, then the payload and the seal: item_bytes / 8
/// stores), as `v[i] = entry` does. `Field`: [`update_field`] over
/// `n_fields` fields.
pub fn update_item(
    ctx: &mut TxCtx,
    vm: ValueModel,
    addr: Addr,
    item_bytes: u64,
    scope: UpdateScope,
    n_fields: u64,
) -> u64 {
    if scope == UpdateScope::Field {
        return update_field(ctx, vm, addr, item_bytes, n_fields);
    }
    let key = ctx.load(addr);
    let version = ctx.load(addr + ITEM_SEAL) >> 32;
    let new_version = (version + 1) & 0xffff_ffff;
    // Checksum and version-bump instructions.
    ctx.compute(4 * item_payload_words(item_bytes) as u32 + 4);
    write_item(ctx, vm, addr, item_bytes, key, new_version);
    new_version
}

/// Update: assign one field of the item at `addr`, whose payload is split
/// into `n_fields` fields, and bump its version in the seal; returns the
/// new version. Which field changes is a hash of (key, version), uniform
/// over the fields (the program's choice; YCSB draws it at random).
/// Stores: the field's words plus the seal.
pub fn update_field(
    ctx: &mut TxCtx,
    vm: ValueModel,
    addr: Addr,
    item_bytes: u64,
    n_fields: u64,
) -> u64 {
    let key = ctx.load(addr);
    let old_seal = ctx.load(addr + ITEM_SEAL);
    let version = old_seal >> 32;
    let new_version = (version + 1) & 0xffff_ffff;
    let n = n_fields.clamp(1, item_payload_words(item_bytes));
    let f = mix64(key ^ version.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % n;
    let (lo, hi) = field_words(item_bytes, n, f);
    let mut sum = old_seal ^ sum_header(key, version) ^ sum_header(key, new_version);
    for i in lo..hi {
        let old = ctx.load(addr + i * 8);
        let w = vm.word(key, new_version, i, old, item_bytes);
        sum ^= sum_word(i, old) ^ sum_word(i, w);
        ctx.store(addr + i * 8, w);
    }
    // Checksum and version-bump instructions.
    ctx.compute(4 * (hi - lo) as u32 + 4);
    ctx.store(addr + ITEM_SEAL, seal(new_version, sum));
    new_version
}

/// Check an item's seal against its key and payload; returns its key.
pub fn check_item(
    img: &dyn MemRead,
    addr: Addr,
    item_bytes: u64,
) -> std::result::Result<u64, String> {
    let key = img.read_u64(addr);
    let s = img.read_u64(addr + ITEM_SEAL);
    let version = s >> 32;
    let mut sum = sum_header(key, version);
    for i in ITEM_FIRST_FIELD_WORD..item_bytes / 8 {
        sum ^= sum_word(i, img.read_u64(addr + i * 8));
    }
    let want = seal(version, sum);
    if s != want {
        return Err(format!(
            "item at {addr:#x} (key {key}, version {version}): seal is {s:#x}, the payload gives {want:#x} (torn or mixed-version item)"
        ));
    }
    Ok(key)
}

/// Insert with named fields: write a whole item whose first payload words
/// are `fields` (the rest deterministic filler); item_bytes / 8 stores.
pub fn write_item_fields(
    ctx: &mut TxCtx,
    vm: ValueModel,
    addr: Addr,
    item_bytes: u64,
    key: u64,
    version: u64,
    fields: &[u64],
) {
    let mut sum = sum_header(key, version);
    ctx.store(addr, key);
    for i in ITEM_FIRST_FIELD_WORD..item_bytes / 8 {
        let w = fields
            .get((i - ITEM_FIRST_FIELD_WORD) as usize)
            .copied()
            .unwrap_or_else(|| vm.word(key, version, i, ctx.peek(addr + i * 8), item_bytes));
        sum ^= sum_word(i, w);
        ctx.store(addr + i * 8, w);
    }
    ctx.store(addr + ITEM_SEAL, seal(version, sum));
}

/// Update named payload words: assign `(word index, value)` pairs of the
/// item at `addr` and its seal (version + 1), as `UPDATE t SET f = v` on a
/// record does; returns the new version. Stores: the words plus the seal.
pub fn update_words(ctx: &mut TxCtx, addr: Addr, words: &[(u64, u64)]) -> u64 {
    let key = ctx.load(addr);
    let old_seal = ctx.load(addr + ITEM_SEAL);
    let version = old_seal >> 32;
    let new_version = (version + 1) & 0xffff_ffff;
    let mut sum = old_seal ^ sum_header(key, version) ^ sum_header(key, new_version);
    for &(i, w) in words {
        debug_assert!(i >= ITEM_FIRST_FIELD_WORD);
        let old = ctx.load(addr + i * 8);
        sum ^= sum_word(i, old) ^ sum_word(i, w);
        ctx.store(addr + i * 8, w);
    }
    ctx.store(addr + ITEM_SEAL, seal(new_version, sum));
    new_version
}

/// Item size of the synthetic workloads when `workload.item_bytes` is 0:
/// 64 B, the first of the HOOP paper's two data sets (§IV-A: 64 B and 1 KB).
pub const DEFAULT_ITEM_BYTES: u64 = 64;

/// The item size a workload uses: `workload.item_bytes`, or the workload's
/// own default when that is 0.
#[inline]
pub fn item_bytes_or(item_bytes: u64, default: u64) -> u64 {
    if item_bytes == 0 {
        default
    } else {
        item_bytes
    }
}

/// `a` with its item size resolved (`workload.item_bytes = 0`: the
/// workload's `default`), as a workload keeps it.
pub fn with_item_bytes(a: &WorkloadArgs, default: u64) -> WorkloadArgs {
    WorkloadArgs {
        item_bytes: item_bytes_or(a.item_bytes, default),
        ..a.clone()
    }
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

// ---- Key distributions (`workload.key_dist`) ----------------------------

/// How a keyed workload picks keys: `default` is the workload's own choice
/// (uniform for the synthetic structures, Zipfian for ycsb, NURand for
/// tatp), `uniform` and `zipfian` override it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyDist {
    Default,
    Uniform,
    Zipfian,
    /// WHISPER N-Store's `simple_skew` (its YCSB "zipf_dist"): with
    /// probability [`NSTORE_SKEW`] one of the 10 hottest keys, else uniform
    /// over the rest.
    NStoreSkew,
}

/// WHISPER N-Store main.cpp default `ycsb_skew` (run.py passes no `-q`).
pub const NSTORE_SKEW: f64 = 0.1;
/// Hot keys of N-Store's `simple_skew`.
pub const NSTORE_HOT_KEYS: u64 = 10;

impl KeyDist {
    /// From the (already validated) `workload.key_dist` string.
    pub fn parse(s: &str) -> Self {
        match s {
            "uniform" => KeyDist::Uniform,
            "zipfian" => KeyDist::Zipfian,
            "nstore-skew" => KeyDist::NStoreSkew,
            _ => KeyDist::Default,
        }
    }

    /// This distribution, with `Default` replaced by the workload's own.
    pub fn or(self, workload_default: KeyDist) -> KeyDist {
        if self == KeyDist::Default {
            workload_default
        } else {
            self
        }
    }
}

/// Items of YCSB's ScrambledZipfianGenerator (ITEM_COUNT = 10^10): ranks
/// are drawn over this fixed population and hashed onto the key range, so
/// any key range (and a growing one) gets the same skew.
pub const SCRAMBLED_ZIPF_ITEMS: u64 = 10_000_000_000;
/// zeta(10^10, 0.99): YCSB ScrambledZipfianGenerator.ZETAN (precomputed
/// there; checked in `key_tests::scrambled_zetan_matches_the_sum`).
pub const SCRAMBLED_ZIPF_ZETAN: f64 = 26.469_028_201_783_02;

/// Picks keys (or indices into the program's own key list) by a
/// [`KeyDist`]. Uniform draws exactly as the workloads always did (one
/// `gen_range`), so `default` leaves their streams unchanged.
#[derive(Clone, Debug)]
pub struct KeyChooser {
    zipf: Option<ycsb::Zipfian>,
    nstore_skew: bool,
}

impl KeyChooser {
    /// `dist` must be resolved (not `Default`; `Default` means uniform).
    pub fn new(dist: KeyDist) -> Self {
        KeyChooser {
            zipf: (dist == KeyDist::Zipfian).then(|| {
                ycsb::Zipfian::with_zetan(
                    SCRAMBLED_ZIPF_ITEMS,
                    ycsb::ZIPFIAN_CONSTANT,
                    SCRAMBLED_ZIPF_ZETAN,
                )
            }),
            nstore_skew: dist == KeyDist::NStoreSkew,
        }
    }

    pub fn is_zipfian(&self) -> bool {
        self.zipf.is_some()
    }

    /// N-Store `simple_skew` over `[0, n)`, `n > 0`.
    #[inline]
    fn skewed(&self, rng: &mut impl Rng, n: u64) -> u64 {
        let hot = NSTORE_HOT_KEYS.min(n);
        if hot == n || rng.gen_bool(NSTORE_SKEW) {
            rng.gen_range(0..hot)
        } else {
            rng.gen_range(hot..n)
        }
    }

    /// A key in `[1, key_space)`: uniform, or YCSB's scrambled Zipfian
    /// (`1 + fnvhash64(rank) % (key_space - 1)`).
    #[inline]
    pub fn key(&self, rng: &mut impl Rng, key_space: u64) -> u64 {
        if self.nstore_skew {
            return 1 + self.skewed(rng, key_space.max(2) - 1);
        }
        match &self.zipf {
            None => random_key(rng, key_space),
            Some(z) => 1 + ycsb::fnvhash64(z.next(rng)) % (key_space.max(2) - 1),
        }
    }

    /// An index in `[0, n)`, `n > 0`: uniform, or scrambled Zipfian.
    #[inline]
    pub fn index(&self, rng: &mut impl Rng, n: usize) -> usize {
        if self.nstore_skew {
            return self.skewed(rng, n as u64) as usize;
        }
        match &self.zipf {
            None => rng.gen_range(0..n),
            Some(z) => (ycsb::fnvhash64(z.next(rng)) % n as u64) as usize,
        }
    }
}

/// A workload keyed like a map (btree, rbtree, hashmap, hashtable): each
/// transaction updates a known key or inserts one ([`keyed_tx`]).
/// [`keyed_map!`] implements it from the workload's fields and methods.
pub(crate) trait KeyedMap {
    /// Insert `key`, or update it if present: the item's new version.
    fn insert_key(&mut self, ctx: &mut TxCtx, key: u64) -> u64;
    /// Update the existing `key`: the item's new version.
    fn update_key(&mut self, ctx: &mut TxCtx, key: u64) -> u64;
    /// What a transaction draws from: the workload's RNG, its key chooser,
    /// the keys inserted so far (the program's volatile knowledge) and its
    /// arguments.
    fn draw_from(&mut self) -> (&mut Xoshiro256PlusPlus, &KeyChooser, &[u64], &WorkloadArgs);
}

/// `impl KeyedMap for $t` from its fields `rng`, `keys_dist`, `keys` and
/// `a` and its methods `insert` and `update`.
macro_rules! keyed_map {
    ($t:ty) => {
        impl $crate::workloads::KeyedMap for $t {
            fn insert_key(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
                self.insert(ctx, key)
            }
            fn update_key(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
                self.update(ctx, key)
            }
            fn draw_from(
                &mut self,
            ) -> (
                &mut rand_xoshiro::Xoshiro256PlusPlus,
                &$crate::workloads::KeyChooser,
                &[u64],
                &WorkloadArgs,
            ) {
                (&mut self.rng, &self.keys_dist, &self.keys, &self.a)
            }
        }
    };
}
pub(crate) use keyed_map;

/// One transaction of a [`KeyedMap`]: with probability
/// `workload.update_ratio` an update of a known key (`workload.key_dist`
/// picks which), else an insert of a key `workload.key_dist` draws from
/// `workload.key_space` (an existing key is updated). No key known yet:
/// an insert, without drawing the coin.
#[inline]
pub(crate) fn keyed_tx(w: &mut impl KeyedMap, ctx: &mut TxCtx) {
    let (rng, dist, keys, a) = w.draw_from();
    if !keys.is_empty() && rng.gen_bool(a.update_ratio) {
        let key = keys[dist.index(rng, keys.len())];
        w.update_key(ctx, key);
    } else {
        let key = dist.key(rng, a.key_space);
        w.insert_key(ctx, key);
    }
}

// ---- N independent copies per thread (`workload.copies`) ---------------
//
// With `workload.copies = N > 1`, each thread's region holds N independent
// instances of the workload, each in its own sub-region with its own
// header, heap and seed; the thread's transactions rotate over them (tx k
// runs on copy k mod N). The region header then carries COPIES_MAGIC, N
// and the sub-region size, so the checker finds the copies from the image
// alone. (EHOU runs four copies of each workload at once, one per core:
// that is `--threads 4`, since every thread already owns an independent
// instance; `workload.copies` adds copies within a thread.)

/// Region magic of a multi-copy region ("durasimC").
pub const COPIES_MAGIC: u64 = 0x6475_7261_7369_6d43;
const HDR_COPIES: u64 = 16;
const HDR_COPY_BYTES: u64 = 24;
/// Most copies per thread (`workload.copies` range).
pub const MAX_COPIES: u64 = 64;

fn copy_base(region_base: Addr, i: u64, copy_bytes: u64) -> Addr {
    region_base + HEAP_OFFSET + i * copy_bytes
}

struct Copies {
    inner: Vec<Box<dyn Workload>>,
    region_base: Addr,
    copy_bytes: u64,
    next: usize,
}

/// Build a thread's workload: one instance, or `copies` independent ones.
pub fn build(info: &WorkloadInfo, a: &WorkloadArgs, copies: u64) -> Box<dyn Workload> {
    if copies <= 1 {
        return (info.build)(a);
    }
    let copy_bytes = (a.region_bytes.saturating_sub(HEAP_OFFSET) / copies) & !4095;
    let inner = (0..copies)
        .map(|i| {
            let mut c = a.clone();
            c.region_base = copy_base(a.region_base, i, copy_bytes);
            c.region_bytes = copy_bytes;
            c.seed = mix64(a.seed ^ (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            c.max_tx = a.max_tx.div_ceil(copies);
            (info.build)(&c)
        })
        .collect();
    Box::new(Copies {
        inner,
        region_base: a.region_base,
        copy_bytes,
        next: 0,
    })
}

impl Workload for Copies {
    fn setup(&mut self, ctx: &mut TxCtx) {
        let b = self.region_base;
        ctx.store(b + HDR_MAGIC, COPIES_MAGIC);
        ctx.store(b + HDR_COPIES, self.inner.len() as u64);
        ctx.store(b + HDR_COPY_BYTES, self.copy_bytes);
        for (i, w) in self.inner.iter_mut().enumerate() {
            let mut sub = ctx.sub(copy_base(b, i as u64, self.copy_bytes), self.copy_bytes);
            w.setup(&mut sub);
            let oom = sub.out_of_memory;
            ctx.out_of_memory |= oom;
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let i = self.next;
        self.next = if i + 1 == self.inner.len() { 0 } else { i + 1 };
        let mut sub = ctx.sub(
            copy_base(self.region_base, i as u64, self.copy_bytes),
            self.copy_bytes,
        );
        self.inner[i].run_tx(&mut sub);
        let oom = sub.out_of_memory;
        ctx.out_of_memory |= oom;
    }
}

/// Check a thread's region: the workload's checker on the region, or on
/// each copy when the region holds `workload.copies` copies (found from the
/// image's header). Returns the items found (summed over copies).
pub fn check_region(
    check: CheckFn,
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
) -> std::result::Result<u64, String> {
    if img.read_u64(region_base + HDR_MAGIC) != COPIES_MAGIC {
        return check(img, region_base, item_bytes);
    }
    let n = img.read_u64(region_base + HDR_COPIES);
    let cb = img.read_u64(region_base + HDR_COPY_BYTES);
    if !(2..=MAX_COPIES).contains(&n) || cb == 0 || !cb.is_multiple_of(4096) || cb > 1 << 40 {
        return Err(format!(
            "region at {region_base:#x}: bad copies header ({n} copies of {cb:#x} bytes)"
        ));
    }
    let mut items = 0;
    for i in 0..n {
        items += check(img, copy_base(region_base, i, cb), item_bytes)
            .map_err(|e| format!("copy {i}: {e}"))?;
    }
    Ok(items)
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
            key_dist: KeyDist::Default,
            footprint_bytes: 0,
            graph_vertices: 0,
            graph_edge_factor: 16,
            values: ValueMode::Realistic,
            update_scope: UpdateScope::Item,
            ycsb_nstore_text: true,
            ycsb_read_share: 0.2,
            ycsb_fields: 10,
            ycsb_records: 0,
            echo_batch: 8,
            echo_put_share: 0.8,
            echo_update_share: 0.7,
            echo_keys: 0,
            tatp_subscribers: 0,
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

    /// Setup + `n` transactions; per transaction, (stores, distinct lines
    /// stored to).
    pub fn tx_stores(info: &WorkloadInfo, a: &WorkloadArgs, n: u64) -> Vec<(usize, usize)> {
        let mut img = SparseImage::new();
        let mut wl = (info.build)(a);
        with_ctx(&mut img, false, |ctx| wl.setup(ctx));
        let mut out = Vec::with_capacity(n as usize);
        let mut lines = Vec::new();
        for _ in 0..n {
            let (_, ops) = with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
            lines.clear();
            lines.extend(ops.iter().filter_map(|o| match o {
                Op::Store { addr, .. } => Some(addr / 64),
                _ => None,
            }));
            let words = lines.len();
            lines.sort_unstable();
            lines.dedup();
            out.push((words, lines.len()));
        }
        (info.check)(&img, BASE, a.item_bytes).expect("clean image passes");
        out
    }

    /// Setup + `n` transactions; per transaction, (words stored two or
    /// more times, stores to the heap cursor).
    pub fn tx_repeats(info: &WorkloadInfo, a: &WorkloadArgs, n: u64) -> Vec<(usize, usize)> {
        let mut img = SparseImage::new();
        let mut wl = (info.build)(a);
        with_ctx(&mut img, false, |ctx| wl.setup(ctx));
        let cursor = BASE + HDR_HEAP_CURSOR;
        let mut out = Vec::with_capacity(n as usize);
        let mut words = Vec::new();
        for _ in 0..n {
            let (_, ops) = with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
            words.clear();
            words.extend(ops.iter().filter_map(|o| match o {
                Op::Store { addr, .. } => Some(*addr),
                _ => None,
            }));
            let on_cursor = words.iter().filter(|&&w| w == cursor).count();
            words.sort_unstable();
            let repeated = words
                .chunk_by(|x, y| x == y)
                .filter(|run| run.len() >= 2)
                .count();
            out.push((repeated, on_cursor));
        }
        (info.check)(&img, BASE, a.item_bytes).expect("clean image passes");
        out
    }

    /// `cargo test --release -p durasim --lib print_stores_per_tx -- --ignored --nocapture`:
    /// the stores/tx table of docs/model/workloads.md (words and distinct lines).
    #[test]
    #[ignore]
    fn print_stores_per_tx() {
        for info in REGISTRY {
            let sizes: &[u64] = match info.name {
                "ycsb" => &[512, 1024],
                "tpcc" => &[0],
                _ => &[64, 1024],
            };
            for &ib in sizes {
                let mut a = args(ib, 16384, 5000, 0.5);
                a.tpcc_items = 100_000;
                a.tpcc_customers = 3000;
                let (img, _) = run_direct(info, &a, 0);
                let heap = img.read_u64(BASE + HDR_HEAP_CURSOR) - BASE;
                let t = tx_stores(info, &a, 5000);
                let n = t.len() as f64;
                let words = t.iter().map(|x| x.0).sum::<usize>() as f64 / n;
                let lines = t.iter().map(|x| x.1).sum::<usize>() as f64 / n;
                let wr: Vec<usize> = t.iter().map(|x| x.0).filter(|&w| w > 0).collect();
                eprintln!(
                    "{} ib={ib}: {words:.2} words/tx ({}..{} in writing tx), {lines:.2} lines/tx, setup footprint {:.2} MiB/thread",
                    info.name,
                    wr.iter().min().unwrap(),
                    wr.iter().max().unwrap(),
                    heap as f64 / (1 << 20) as f64
                );
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

    /// A [`KeyedMap`] as [`keyed_model_test`] drives it: also its
    /// checker's walk ([`impl_keyed!`] implements it from `walk`).
    pub trait Keyed: KeyedMap + Workload {
        /// Whether the walk visits the keys in ascending order.
        const SORTED_WALK: bool;
        /// The checker's walk over 64-byte items at [`BASE`]: every
        /// (key, version), then the count.
        fn walk_items(
            img: &dyn MemRead,
            visit: &mut dyn FnMut(u64, u64),
        ) -> std::result::Result<u64, String>;
    }

    /// What [`keyed_model_test`] leaves: the image and how many items
    /// setup made.
    pub struct KeyedRun {
        pub img: SparseImage,
        pub setup_items: usize,
    }

    /// Set `new(a)` up on a fresh image, then run `a.max_tx` transactions
    /// (RNG seeded with `seed`), each an update of a known key (share
    /// `a.update_ratio`) or an insert of `new_key(i, rng)`, against a map
    /// model: every returned version must be the model's next (0 for a new
    /// key), the checker must pass every `check_every` transactions (0:
    /// only at the end), and the final walk must return exactly the model
    /// (in key order where the walk is sorted) and count it.
    pub fn keyed_model_test<W: Keyed>(
        a: &WorkloadArgs,
        new: fn(&WorkloadArgs) -> W,
        seed: u64,
        check_every: u64,
        mut new_key: impl FnMut(u64, &mut Xoshiro256PlusPlus) -> u64,
    ) -> KeyedRun {
        let mut w = new(a);
        let mut img = SparseImage::new();
        with_ctx(&mut img, false, |ctx| w.setup(ctx));
        let mut model = std::collections::BTreeMap::new();
        W::walk_items(&img, &mut |k, v| {
            model.insert(k, v);
        })
        .unwrap();
        let setup_items = model.len();
        let mut r = rng(seed);
        for i in 0..a.max_tx {
            let (key, v) = if r.gen_bool(a.update_ratio) {
                let keys = w.draw_from().2;
                let key = keys[r.gen_range(0..keys.len())];
                (
                    key,
                    with_ctx(&mut img, true, |ctx| w.update_key(ctx, key)).0,
                )
            } else {
                let key = new_key(i, &mut r);
                (
                    key,
                    with_ctx(&mut img, true, |ctx| w.insert_key(ctx, key)).0,
                )
            };
            assert_eq!(v, model.get(&key).map_or(0, |v| v + 1), "key {key}");
            model.insert(key, v);
            if check_every > 0 && i % check_every == 0 {
                W::walk_items(&img, &mut |_, _| {}).unwrap();
            }
        }
        let mut got = Vec::new();
        let n = W::walk_items(&img, &mut |k, v| got.push((k, v))).unwrap();
        if !W::SORTED_WALK {
            got.sort_unstable();
        }
        assert_eq!(n as usize, model.len());
        assert_eq!(got, model.into_iter().collect::<Vec<_>>());
        KeyedRun { img, setup_items }
    }
}

/// The reference-model test of the keyed workloads ([`KeyedMap`]), each
/// with the keys that stress it.
#[cfg(test)]
mod keyed_tests {
    use super::testutil::*;
    use super::*;

    /// `impl Keyed for $t` from the `walk` of its module; `sorted` says
    /// the walk is in key order.
    macro_rules! impl_keyed {
        ($t:ty, $walk:path, sorted: $sorted:expr) => {
            impl Keyed for $t {
                const SORTED_WALK: bool = $sorted;
                fn walk_items(
                    img: &dyn MemRead,
                    visit: &mut dyn FnMut(u64, u64),
                ) -> std::result::Result<u64, String> {
                    $walk(img, BASE, 64, visit)
                }
            }
        };
    }
    impl_keyed!(btree::BTree, btree::walk, sorted: true);
    impl_keyed!(rbtree::RbTree, rbtree::walk, sorted: true);
    impl_keyed!(hashmap::Hashmap, hashmap::walk, sorted: false);
    impl_keyed!(hashtable::HashTable, hashtable::walk, sorted: false);

    #[test]
    fn btree_matches_reference_model() {
        let a = args(64, 40, 2000, 0.25);
        let run = keyed_model_test(&a, btree::BTree::new, 13, 100, |i, r| match i % 3 {
            0 => 1_000_000 + i,        // ascending: right-most splits
            1 => 900_000 - i,          // descending: left-most splits
            _ => r.gen_range(1..5000), // random, with repeats
        });
        let height = run.img.read_u64(BASE + ROOT_OFFSET + btree::HEIGHT);
        assert!(height >= 3, "internal splits happened");
    }

    /// Ascending runs stress rotations; a small key space gives
    /// insert-of-existing-key hits.
    #[test]
    fn rbtree_matches_reference_model() {
        let a = args(64, 50, 600, 0.3);
        keyed_model_test(&a, rbtree::RbTree::new, 11, 50, |i, r| {
            if i % 3 == 0 {
                10_000 + i
            } else {
                r.gen_range(1..3000)
            }
        });
    }

    /// Small key spaces, so that some inserts hit existing keys.
    #[test]
    fn hash_tables_match_reference_model() {
        let a = args(64, 100, 400, 0.5);
        let run = keyed_model_test(&a, hashmap::Hashmap::new, 99, 0, |_, r| {
            r.gen_range(1..2000)
        });
        assert_eq!(run.setup_items, 100);
        keyed_model_test(&a, hashtable::HashTable::new, 5, 0, |_, r| {
            r.gen_range(1..2000)
        });
    }
}

#[cfg(test)]
mod item_tests {
    use super::testutil::*;
    use super::*;
    use crate::mem::MemWrite;

    /// Apply the stores `keep(i)` selects to a copy of `img`.
    fn apply(
        img: &SparseImage,
        stores: &[(Addr, u64)],
        keep: impl Fn(usize) -> bool,
    ) -> SparseImage {
        let mut out = img.clone();
        for (i, &(a, v)) in stores.iter().enumerate() {
            if keep(i) {
                out.write_u64(a, v);
            }
        }
        out
    }

    fn stores_of(ops: &[Op]) -> Vec<(Addr, u64)> {
        ops.iter()
            .filter_map(|o| match *o {
                Op::Store { addr, value } => Some((addr, value)),
                _ => None,
            })
            .collect()
    }

    /// An update stores exactly one field and the seal; every partial
    /// application of it (a torn transaction), and every mix of two
    /// versions' fields and seals, fails the check.
    #[test]
    fn partial_and_mixed_version_updates_are_rejected() {
        let addr = BASE + HEAP_OFFSET;
        for ib in [24u64, 64, 512, 1024] {
            for n_fields in [1, 10, item_payload_words(ib)] {
                let mut img = SparseImage::new();
                let (_, ops) = with_ctx(&mut img, true, |ctx| {
                    write_item(
                        ctx,
                        ValueModel::new(ValueMode::Realistic, 1),
                        addr,
                        ib,
                        77,
                        0,
                    )
                });
                assert_eq!(
                    stores_of(&ops).len() as u64,
                    ib / 8,
                    "insert writes the item"
                );
                assert_eq!(check_item(&img, addr, ib), Ok(77));
                let v0 = img.clone();
                let mut versions = vec![v0.clone()];
                for round in 1..=3u64 {
                    let before = img.clone();
                    let (v, ops) = with_ctx(&mut img, true, |ctx| {
                        update_field(
                            ctx,
                            ValueModel::new(ValueMode::Random, 1),
                            addr,
                            ib,
                            n_fields,
                        )
                    });
                    assert_eq!(v, round);
                    assert_eq!(item_version(&img, addr), round);
                    assert_eq!(check_item(&img, addr, ib), Ok(77));
                    let st = stores_of(&ops);
                    let p = item_payload_words(ib);
                    let n = n_fields.clamp(1, p);
                    let (lo_w, hi_w) = (p / n, p.div_ceil(n));
                    assert!(
                        (lo_w + 1..=hi_w + 1).contains(&(st.len() as u64)),
                        "ib {ib}, {n_fields} fields: {} stores",
                        st.len()
                    );
                    assert_eq!(st.last().unwrap().0, addr + ITEM_SEAL, "seal last");
                    // Every proper non-empty subset of the stores (up to
                    // 12 stores; beyond, each single store and each
                    // all-but-one): torn.
                    let n = st.len();
                    let torn_ok = |keep: &dyn Fn(usize) -> bool| {
                        check_item(&apply(&before, &st, keep), addr, ib).is_ok()
                    };
                    if n <= 12 {
                        for m in 1..(1u64 << n) - 1 {
                            assert!(!torn_ok(&|i| m >> i & 1 == 1), "ib {ib}: mask {m:#b}");
                        }
                    } else {
                        for j in 0..n {
                            assert!(!torn_ok(&|i| i == j), "ib {ib}: only store {j}");
                            assert!(!torn_ok(&|i| i != j), "ib {ib}: all but store {j}");
                        }
                    }
                    versions.push(img.clone());
                }
                // Mixed versions: the seal of one version over the payload
                // of another.
                for (i, a) in versions.iter().enumerate() {
                    for (j, b) in versions.iter().enumerate() {
                        if i != j {
                            let mut mixed = a.clone();
                            mixed.write_u64(addr + ITEM_SEAL, b.read_u64(addr + ITEM_SEAL));
                            assert!(check_item(&mixed, addr, ib).is_err(), "{i} vs {j}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fields_partition_the_payload() {
        for ib in [24u64, 64, 512, 1024] {
            for n in [1, 3, 10, item_payload_words(ib)] {
                let n = n.min(item_payload_words(ib));
                let mut next = ITEM_FIRST_FIELD_WORD;
                for f in 0..n {
                    let (lo, hi) = field_words(ib, n, f);
                    assert_eq!(lo, next);
                    assert!(hi > lo);
                    next = hi;
                }
                assert_eq!(next, ib / 8);
            }
        }
    }
}

/// Transaction shape from each structure's code path: which words a
/// transaction stores more than once (docs/model/workloads.md).
#[cfg(test)]
mod shape_tests {
    use super::testutil::*;
    use super::*;

    fn repeats(name: &str, a: &WorkloadArgs, n: u64) -> Vec<(usize, usize)> {
        tx_repeats(find(name).unwrap(), a, n)
    }

    /// One operation per transaction on distinct words: no word is stored
    /// twice (an update rewrites the item once; an insert writes the item,
    /// its links and the counters once each).
    #[test]
    fn single_op_structures_store_no_word_twice() {
        for name in [
            "vector",
            "hashmap",
            "queue",
            "hashtable",
            "array",
            "sps",
            "sdg",
            "tatp",
            "ycsb",
        ] {
            for ib in [64u64, 1024] {
                let mut a = args(ib, 200, 500, 0.5);
                if name == "tatp" {
                    a.item_bytes = 0;
                }
                let r = repeats(name, &a, 500);
                assert!(
                    r.iter().all(|&(rep, _)| rep == 0),
                    "{name} ib {ib}: {:?}",
                    r.iter().find(|x| x.0 > 0)
                );
            }
        }
    }

    /// Echo's merge allocates a version per put: the heap cursor is
    /// written once per put of the batch (twice for a new key), the key
    /// count once per new key.
    #[test]
    fn echo_writes_the_heap_cursor_per_put() {
        let a = args(64, 200, 500, 0.5);
        let r = repeats("echo", &a, 500);
        for &(rep, cursor) in &r {
            if cursor > 0 {
                let inserts = cursor as u64 - a.echo_batch;
                assert!(inserts <= a.echo_batch, "{cursor}");
                assert!(rep >= 1, "the cursor repeats");
            } else {
                assert_eq!(rep, 0, "a get stores nothing");
            }
        }
        assert!(r.iter().any(|&(_, c)| c as u64 > a.echo_batch), "inserts");
    }

    /// TPC-C New-Order allocates the ORDER and each ORDER-LINE: the heap
    /// cursor is written 1 + o_ol_cnt (6..=16) times; a STOCK row twice
    /// when an item repeats among the lines (NURand; not forced).
    #[test]
    fn tpcc_writes_the_heap_cursor_per_record() {
        let a = args(0, 0, 300, 0.0);
        let r = repeats("tpcc", &a, 300);
        assert!(r.iter().all(|&(rep, c)| (6..=16).contains(&c) && rep >= 1));
    }

    /// Red-black insertion: a fix-up's recolouring and rotations store
    /// some words twice (a colour set red then black, a parent link
    /// rewritten by the second rotation of a double rotation).
    #[test]
    fn rbtree_fixups_store_words_twice() {
        let a = args(64, 200, 1000, 0.0);
        let r = repeats("rbtree", &a, 1000);
        let with = r.iter().filter(|x| x.0 > 0).count();
        assert!(with >= 1, "no repeated store in 1,000 inserts");
        let a = args(64, 200, 300, 1.0);
        assert!(
            repeats("rbtree", &a, 300).iter().all(|x| x.0 == 0),
            "updates"
        );
    }

    /// B+-tree: durasim's node code stores only the words that change
    /// (shifts, the new slot, the count); the one word a transaction
    /// stores twice is the heap cursor, when a split allocates a node
    /// after the item.
    #[test]
    fn btree_repeats_only_the_heap_cursor_on_splits() {
        let a = args(64, 200, 1000, 0.3);
        let r = repeats("btree", &a, 1000);
        assert!(r.iter().all(|&(rep, c)| rep == usize::from(c >= 2)));
        assert!(r.iter().any(|&(_, c)| c >= 2), "splits happened");
    }

    /// `cargo test --release -p durasim --lib print_repeated_stores -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn print_repeated_stores() {
        for info in REGISTRY.iter().filter(|i| !PROGRAMS.contains(&i.name)) {
            let mut a = args(64, 16384, 5000, 0.5);
            a.tpcc_items = 100_000;
            a.tpcc_customers = 3000;
            let r = tx_repeats(info, &a, 5000);
            let n = r.len() as f64;
            let with = r.iter().filter(|x| x.0 > 0).count() as f64;
            let words = r.iter().map(|x| x.0).sum::<usize>() as f64;
            eprintln!(
                "{:10} tx with a repeated store {:5.1}%, repeated words/tx {:.2}",
                info.name,
                100.0 * with / n,
                words / n
            );
        }
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;

    /// YCSB's precomputed zeta(10^10, 0.99) is the sum it names: the
    /// first 10^6 terms exactly, the rest by the Euler-Maclaurin integral
    /// (error far below 1e-9 here).
    #[test]
    fn scrambled_zetan_matches_the_sum() {
        let theta = ycsb::ZIPFIAN_CONSTANT;
        let m = 1_000_000u64;
        let head = ycsb::zeta(m, theta);
        let f = |x: f64| x.powf(1.0 - theta) / (1.0 - theta);
        let n = SCRAMBLED_ZIPF_ITEMS as f64;
        let mf = m as f64;
        let tail = f(n) - f(mf) + 0.5 * (n.powf(-theta) - mf.powf(-theta));
        let z = head + tail;
        assert!((z - SCRAMBLED_ZIPF_ZETAN).abs() < 1e-6, "{z}");
    }

    /// `workload.key_dist = zipfian` draws ranks whose CDF matches the
    /// analytic Zipf CDF zeta(k) / zeta(10^10) (Kolmogorov-Smirnov over
    /// the first 10^5 ranks, which hold ~45% of the mass), and its keys
    /// are skewed: the hottest key takes ~1 / zeta(10^10) = 3.8% of draws.
    #[test]
    fn zipfian_keys_match_the_analytic_cdf() {
        let c = KeyChooser::new(KeyDist::Zipfian);
        let z = c.zipf.clone().unwrap();
        let mut r = rng(9);
        let samples = 200_000u64;
        let k_max = 100_000u64;
        let mut counts = vec![0u64; k_max as usize];
        for _ in 0..samples {
            let rank = z.next(&mut r);
            if rank < k_max {
                counts[rank as usize] += 1;
            }
        }
        let theta = ycsb::ZIPFIAN_CONSTANT;
        let (mut emp, mut ana, mut ks) = (0.0f64, 0.0f64, 0.0f64);
        for (i, &n) in counts.iter().enumerate() {
            emp += n as f64 / samples as f64;
            ana += 1.0 / ((i + 1) as f64).powf(theta) / SCRAMBLED_ZIPF_ZETAN;
            ks = ks.max((emp - ana).abs());
        }
        // Sampling noise ~0.003 at 1%; Gray's method is exact for ranks
        // 0 and 1 and approximate beyond (the same bound as ycsb's test).
        assert!(ks < 0.025, "KS distance {ks}");
        // Keys: hashed onto the key range, skewed.
        let mut r = rng(10);
        let mut hits = std::collections::HashMap::new();
        for _ in 0..samples {
            *hits.entry(c.key(&mut r, 1 << 32)).or_insert(0u64) += 1;
        }
        let top = *hits.values().max().unwrap() as f64 / samples as f64;
        let want = 1.0 / SCRAMBLED_ZIPF_ZETAN;
        assert!((top - want).abs() < 0.005, "hottest key {top} vs {want}");
        assert!(hits.keys().all(|&k| (1..1 << 32).contains(&k)));
        // Indices into a small list stay in range and are skewed.
        let mut idx = [0u64; 100];
        for _ in 0..samples {
            idx[c.index(&mut r, 100)] += 1;
        }
        let (mx, mn) = (idx.iter().max().unwrap(), idx.iter().min().unwrap());
        assert!(*mx > 2 * *mn, "skewed: {mx} vs {mn}");
    }

    /// `nstore-skew`: N-Store's simple_skew puts 10% of the draws on the
    /// 10 hottest keys (indices [0, 10)), the rest uniform.
    #[test]
    fn nstore_skew_draws_ten_percent_hot() {
        let c = KeyChooser::new(KeyDist::NStoreSkew);
        let mut r = rng(4);
        let n = 100_000;
        let hot = (0..n).filter(|_| c.index(&mut r, 1000) < 10).count() as f64 / n as f64;
        // 10% plus the uniform part's 0 (it draws from [10, n)).
        assert!((hot - 0.1).abs() < 0.01, "{hot}");
        let hot_keys = (0..n).filter(|_| c.key(&mut r, 1 << 32) <= 10).count() as f64 / n as f64;
        assert!((hot_keys - 0.1).abs() < 0.01, "{hot_keys}");
    }

    /// Uniform is exactly the draw the workloads always made.
    #[test]
    fn uniform_chooser_draws_as_before() {
        let c = KeyChooser::new(KeyDist::Uniform);
        let (mut a, mut b) = (rng(3), rng(3));
        for _ in 0..1000 {
            assert_eq!(c.key(&mut a, 1 << 32), random_key(&mut b, 1 << 32));
            assert_eq!(c.index(&mut a, 77), b.gen_range(0..77usize));
        }
    }
}
