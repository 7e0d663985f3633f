//! Hash Table (EHOU §IV lists "Hash Table" beside the chained "Hash Map",
//! after its Ref. [14]): a fixed-capacity open-addressing table with linear
//! probing whose slots hold the items inline. Insert adds a fresh key
//! (`workload.key_dist`, uniform by default) in the first empty slot of
//! its probe sequence and bumps the count (item_bytes / 8 + 1 stores), or
//! updates the key if present; update assigns an existing key's item
//! whole (item_bytes / 8 stores; `workload.update_scope = field`: one
//! field and the seal). There are no deletions (no tombstones). The
//! existing `hashmap` stays the chained table.
//!
//! Values: keys uniform in [1, key_space) (or `workload.key_dist`); payload
//! words from the value model (`workload.values`; realistic: the delta
//! model fitted to MorLog Table II / Fig. 5, workloads/values.rs); links,
//! counts and seals are the structure's own.
//!
//! Layout: root = { nslots, slots_ptr, count }; slot = item (key 0: empty).
//! Capacity: a power of two, at least twice the items the run can hold
//! (load factor at most 1/2).

use super::labels::{self, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, item_payload_words, keyed_tx,
    keys_match_count, mix64, rng, update_item, with_item_bytes, write_item, KeyChooser, KeyDist,
    TxCtx, Workload, WorkloadArgs, WorkloadInfo, DEFAULT_ITEM_BYTES, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "hashtable",
    description: "open-addressing hash table (linear probing, items inline): insert or update (EHOU §IV Hash Table)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::IN_PLACE,
};

const NSLOTS: u64 = 0;
const SLOTS: u64 = 8;
const COUNT: u64 = 16;
/// Instructions to hash a key (as hashmap).
const HASH_INSTRS: u32 = 8;

pub(crate) struct HashTable {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    keys_dist: KeyChooser,
    root: Addr,
    slots: Addr,
    mask: u64,
    /// Keys inserted so far (the program's volatile knowledge).
    keys: Vec<u64>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(HashTable::new(a))
}

impl HashTable {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let a = with_item_bytes(a, DEFAULT_ITEM_BYTES);
        HashTable {
            rng: rng(a.seed),
            keys_dist: KeyChooser::new(a.key_dist.or(KeyDist::Uniform)),
            root: a.region_base + ROOT_OFFSET,
            slots: 0,
            mask: (2 * (a.initial_items + a.max_tx))
                .next_power_of_two()
                .max(16)
                - 1,
            keys: Vec::with_capacity((a.initial_items + a.max_tx) as usize),
            a,
        }
    }

    /// Probe for `key`: (slot, whether it holds the key; else it is empty).
    fn probe(&self, ctx: &mut TxCtx, key: u64) -> (Addr, bool) {
        ctx.compute(HASH_INSTRS);
        let ib = self.a.item_bytes;
        let mut s = mix64(key) & self.mask;
        loop {
            let slot = self.slots + s * ib;
            let k = ctx.load(slot);
            if k == key || k == 0 {
                return (slot, k == key);
            }
            s = (s + 1) & self.mask;
        }
    }

    pub(crate) fn insert(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let ib = self.a.item_bytes;
        let (slot, found) = self.probe(ctx, key);
        if found {
            return update_item(
                ctx,
                self.a.vm(),
                slot,
                ib,
                self.a.update_scope,
                item_payload_words(ib),
            );
        }
        write_item(ctx, self.a.vm(), slot, ib, key, 0);
        let c = ctx.load(self.root + COUNT);
        ctx.store(self.root + COUNT, c + 1);
        self.keys.push(key);
        0
    }

    pub(crate) fn update(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let (slot, found) = self.probe(ctx, key);
        assert!(found, "update of a key the program inserted");
        let ib = self.a.item_bytes;
        update_item(
            ctx,
            self.a.vm(),
            slot,
            ib,
            self.a.update_scope,
            item_payload_words(ib),
        )
    }
}

super::keyed_map!(HashTable);

impl Workload for HashTable {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let n = self.mask + 1;
        self.slots = ctx.alloc(n * self.a.item_bytes);
        ctx.store(self.root + NSLOTS, n);
        ctx.store(self.root + SLOTS, self.slots);
        ctx.store(self.root + COUNT, 0);
        for _ in 0..self.a.initial_items {
            let key = self.keys_dist.key(&mut self.rng, self.a.key_space);
            self.insert(ctx, key);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        keyed_tx(self, ctx);
    }
}

/// Visit every item: `f(key, version)`. Validates the table.
pub(crate) fn walk(
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
    mut f: impl FnMut(u64, u64),
) -> Result<u64, String> {
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let n = img.read_u64(root + NSLOTS);
    let slots = img.read_u64(root + SLOTS);
    let count = img.read_u64(root + COUNT);
    if !n.is_power_of_two() || count >= n {
        return Err(format!("hashtable: {count} items in {n} slots"));
    }
    check_ptr(slots, n.saturating_mul(ib), bounds, "hashtable slots")?;
    let mask = n - 1;
    let mut keys = Vec::with_capacity(count.min(1 << 16) as usize);
    for s in 0..n {
        let slot = slots + s * ib;
        let key = img.read_u64(slot);
        if key == 0 {
            continue;
        }
        let mut h = mix64(key) & mask;
        while h != s {
            if img.read_u64(slots + h * ib) == 0 {
                return Err(format!(
                    "hashtable: key {key} in slot {s} is unreachable (empty slot {h} on its probe path)"
                ));
            }
            h = (h + 1) & mask;
        }
        check_item(img, slot, ib).map_err(|e| format!("hashtable slot {s}: {e}"))?;
        keys.push(key);
        f(key, super::item_version(img, slot));
    }
    keys_match_count("hashtable", count, &mut keys, "slots are in use")
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    walk(img, region_base, item_bytes, |_, _| {})
}

/// [`super::labels::DescribeFn`]: the root's words, a slot's item field.
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word(
        "hashtable",
        region_base,
        addr,
        &["slot count", "slot array pointer", "count"],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let slots = img.read_u64(root + SLOTS);
    let (s, off) = labels::array_slot(addr, slots, ib, img.read_u64(root + NSLOTS))?;
    Some(Label::new(
        format!("hashtable slot {s}"),
        slots + s * ib,
        labels::item_field(off),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 4096] {
            let t = tx_stores(&INFO, &args(ib, 100, 300, 0.5), 300);
            let u = ib as usize / 8;
            assert!(t.iter().all(|&(w, _)| w == u || w == u + 1));
            assert!(t.iter().any(|&(w, _)| w == u) && t.iter().any(|&(w, _)| w > u));
        }
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let (img, _) = run_direct(&INFO, &args(ib, 50, 300, 0.5), 300);
            let n = check(&img, BASE, ib).unwrap();
            assert!(n > 150 && n < 250, "{n}");
            let root = BASE + ROOT_OFFSET;
            let slots = img.read_u64(root + SLOTS);
            let s = (0..).find(|&s| img.read_u64(slots + s * ib) != 0).unwrap();
            assert_detects(&INFO, &img, slots + s * ib + 16, ib); // torn item
            assert_detects(&INFO, &img, slots + s * ib, ib); // key
            assert_detects(&INFO, &img, root + COUNT, ib);
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("hashtable", 2, 300, &[]);
    }
}
