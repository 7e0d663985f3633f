//! Hashmap (HOOP Table III, after ATOM): a chained hash table with a fixed
//! bucket array. Insert adds an entry with a fresh random key (or updates
//! it if the key is already present): heap cursor, the whole item, its next
//! pointer, the bucket head and the count (item_bytes / 8 + 4 stores), as
//! PMDK's `hm_tx_insert`; update assigns the whole item of a random
//! existing key (item_bytes / 8 stores; `workload.update_scope = field`:
//! one field and the seal, 2 stores).
//!
//! Values: keys uniform in [1, key_space) (or `workload.key_dist`); payload
//! words from the value model (`workload.values`; realistic: the delta
//! model fitted to MorLog Table II / Fig. 5, workloads/values.rs); links,
//! counts and seals are the structure's own.
//!
//! Layout: root = { nbuckets, buckets_ptr, count }; buckets = nbuckets
//! head pointers; node = { item (item_bytes) | next } so the item is
//! line-aligned and an update touches only the item's lines.

use super::labels::{self, Heap, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, item_payload_words, item_version, keyed_tx,
    keys_match_count, mix64, random_key, rng, update_item, with_item_bytes, write_item, TxCtx,
    Workload, WorkloadArgs, WorkloadInfo, DEFAULT_ITEM_BYTES, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "hashmap",
    description:
        "chained hash table: insert random keys or update existing entries (HOOP Table III, ATOM)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::GROWING,
};

const NBUCKETS: u64 = 0;
const BUCKETS: u64 = 8;
const COUNT: u64 = 16;
/// Instructions to hash a key (splitmix64 finalizer: 3 shift-xors, 2
/// multiplies, a mask).
const HASH_INSTRS: u32 = 8;

pub(crate) struct Hashmap {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    /// `workload.key_dist` (uniform by default).
    keys_dist: super::KeyChooser,
    root: Addr,
    buckets: Addr,
    mask: u64,
    /// Keys inserted so far (the program's own volatile knowledge, used to
    /// pick update targets); reserved up front so run_tx never allocates.
    keys: Vec<u64>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Hashmap::new(a))
}

fn node_bytes(item_bytes: u64) -> u64 {
    item_bytes + 8
}

/// Bucket count: load factor at most 1 when every transaction inserts.
fn bucket_count(a: &WorkloadArgs) -> u64 {
    (a.initial_items + a.max_tx).next_power_of_two().max(16)
}

impl Hashmap {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let a = &with_item_bytes(a, DEFAULT_ITEM_BYTES);
        Hashmap {
            rng: rng(a.seed),
            keys_dist: super::KeyChooser::new(a.key_dist.or(super::KeyDist::Uniform)),
            root: a.region_base + ROOT_OFFSET,
            buckets: 0,
            mask: bucket_count(a) - 1,
            keys: Vec::with_capacity((a.initial_items + a.max_tx) as usize),
            a: a.clone(),
        }
    }

    fn bucket_addr(&self, ctx: &mut TxCtx, key: u64) -> Addr {
        ctx.compute(HASH_INSTRS);
        self.buckets + (mix64(key) & self.mask) * 8
    }

    /// Walk the chain of `key`'s bucket: (bucket address, node if found).
    fn find(&self, ctx: &mut TxCtx, key: u64) -> (Addr, Option<Addr>) {
        let b = self.bucket_addr(ctx, key);
        let mut n = ctx.load(b);
        while n != 0 {
            if ctx.load(n) == key {
                return (b, Some(n));
            }
            n = ctx.load(n + self.a.item_bytes);
        }
        (b, None)
    }

    /// Insert `key` (or update it if present); returns its new version.
    pub(crate) fn insert(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let ib = self.a.item_bytes;
        let (b, found) = self.find(ctx, key);
        if let Some(n) = found {
            return update_item(
                ctx,
                self.a.vm(),
                n,
                ib,
                self.a.update_scope,
                item_payload_words(ib),
            );
        }
        let n = ctx.alloc(node_bytes(ib));
        write_item(ctx, self.a.vm(), n, ib, key, 0);
        let head = ctx.load(b);
        ctx.store(n + ib, head);
        ctx.store(b, n);
        let c = ctx.load(self.root + COUNT);
        ctx.store(self.root + COUNT, c + 1);
        self.keys.push(key);
        0
    }

    /// Update an existing `key`; returns its new version.
    pub(crate) fn update(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let (_, found) = self.find(ctx, key);
        let n = found.expect("update of a key the program inserted");
        let ib = self.a.item_bytes;
        update_item(
            ctx,
            self.a.vm(),
            n,
            ib,
            self.a.update_scope,
            item_payload_words(ib),
        )
    }
}

super::keyed_map!(Hashmap);

impl Workload for Hashmap {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let nb = self.mask + 1;
        self.buckets = ctx.alloc(nb * 8);
        ctx.store(self.root + NBUCKETS, nb);
        ctx.store(self.root + BUCKETS, self.buckets);
        ctx.store(self.root + COUNT, 0);
        for _ in 0..self.a.initial_items {
            let key = random_key(&mut self.rng, self.a.key_space);
            self.insert(ctx, key);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        keyed_tx(self, ctx);
    }
}

/// Visit every entry: `f(key, version)`. Validates the structure.
pub(crate) fn walk(
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
    mut f: impl FnMut(u64, u64),
) -> Result<u64, String> {
    let item_bytes = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let nb = img.read_u64(root + NBUCKETS);
    let buckets = img.read_u64(root + BUCKETS);
    let count = img.read_u64(root + COUNT);
    if !nb.is_power_of_two() {
        return Err(format!("hashmap: bucket count {nb} is not a power of two"));
    }
    check_ptr(
        buckets,
        nb.saturating_mul(8),
        bounds,
        "hashmap bucket array",
    )?;
    let node = node_bytes(item_bytes);
    // More entries than fit in the heap means a cycle or garbage count.
    let max_nodes = (bounds.1 - bounds.0) / node;
    if count > max_nodes {
        return Err(format!("hashmap: count {count} exceeds heap capacity"));
    }
    // Capacity from an untrusted count is capped; the vector grows if needed.
    let mut keys = Vec::with_capacity(count.min(1 << 16) as usize);
    for b in 0..nb {
        let mut n = img.read_u64(buckets + b * 8);
        while n != 0 {
            if keys.len() as u64 >= count {
                return Err(format!(
                    "hashmap: more entries than count {count} (cycle or lost count update) in bucket {b}"
                ));
            }
            check_ptr(n, node, bounds, "hashmap node")?;
            let key =
                check_item(img, n, item_bytes).map_err(|e| format!("hashmap bucket {b}: {e}"))?;
            let home = mix64(key) & (nb - 1);
            if home != b {
                return Err(format!(
                    "hashmap: key {key} found in bucket {b} but hashes to bucket {home}"
                ));
            }
            keys.push(key);
            f(key, item_version(img, n));
            n = img.read_u64(n + item_bytes);
        }
    }
    keys_match_count("hashmap", count, &mut keys, "entries are reachable")
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    walk(img, region_base, item_bytes, |_, _| {})
}

/// [`super::labels::DescribeFn`]: the root's words, a bucket head, an
/// entry's item or next pointer (found along its bucket's chain).
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word(
        "hashmap",
        region_base,
        addr,
        &["bucket count", "bucket array pointer", "count"],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let heap = Heap::of(img, region_base)?;
    let (buckets, nb) = heap.bucket_array(img, root + NBUCKETS, root + BUCKETS)?;
    if let Some(l) = labels::word_array("hashmap bucket array", buckets, nb, addr, "head") {
        return Some(l);
    }
    for b in 0..nb {
        let first = img.read_u64(buckets + b * 8);
        if let Some((n, pos)) = labels::find_in_list(img, heap, first, node_bytes(ib), ib, addr) {
            let off = addr - n;
            let field = if off < ib {
                labels::item_field(off)
            } else {
                "next".into()
            };
            return Some(Label::new(
                format!("hashmap entry (bucket {b}, chain position {pos})"),
                n,
                field,
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let a = args(ib, 50, 300, 0.5);
            let (img, stores) = run_direct(&INFO, &a, 300);
            let n = check(&img, BASE, ib).unwrap();
            assert!(n > 100 && n < 250, "about half of 300 tx insert: {n}");
            assert!(stores > 0.0);
            let root = BASE + ROOT_OFFSET;
            let buckets = img.read_u64(root + BUCKETS);
            let nb = img.read_u64(root + NBUCKETS);
            let b = (0..nb)
                .find(|&b| img.read_u64(buckets + b * 8) != 0)
                .unwrap();
            let node = img.read_u64(buckets + b * 8);
            // A torn payload word, a wrong key, a broken chain pointer, the count.
            assert_detects(&INFO, &img, node + 24, ib);
            assert_detects(&INFO, &img, node, ib);
            assert_detects(&INFO, &img, buckets + b * 8, ib);
            assert_detects(&INFO, &img, root + COUNT, ib);
        }
    }

    /// Insert: heap cursor, item, next, bucket head, count; update (or an
    /// insert of a present key): one field and the seal.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 1024] {
            let t = tx_stores(&INFO, &args(ib, 100, 400, 0.5), 400);
            // Update: the whole entry (workload.update_scope = item).
            let u = ib as usize / 8;
            assert!(t.iter().all(|&(w, _)| w == u || w == u + 4));
            assert!(t.iter().any(|&(w, _)| w == u) && t.iter().any(|&(w, _)| w > u));
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("hashmap", 2, 300, &[]);
    }
}
