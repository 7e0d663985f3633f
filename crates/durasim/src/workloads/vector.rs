//! Vector (HOOP Table III, after ReDU): a persistent array of items. Insert
//! appends an item and bumps the length (item_bytes / 8 + 1 stores); update
//! assigns a random element whole, `v[i] = entry` (item_bytes / 8 stores;
//! `workload.update_scope = field`: one field and the seal, 2 stores).
//!
//! Values: keys uniform in [1, key_space); payload words from the value
//! model (`workload.values`: realistic = the delta model of MorLog Table II
//! / Fig. 5); the length and the seal are the structure's.
//!
//! Layout: root = { len, capacity, items_ptr }; items are contiguous.

use super::labels::{self, Label};
use super::{
    check_item, item_bytes_or, item_payload_words, random_key, rng, update_item, with_item_bytes,
    write_item, TxCtx, Workload, WorkloadArgs, WorkloadInfo, DEFAULT_ITEM_BYTES, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "vector",
    description: "persistent array: append or update random entries (HOOP Table III, ReDU)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::GROWING,
};

const LEN: u64 = 0;
const CAP: u64 = 8;
const ITEMS: u64 = 16;

struct Vector {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    /// `workload.key_dist` over the elements (uniform by default).
    keys_dist: super::KeyChooser,
    root: Addr,
    items: Addr,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    let a = with_item_bytes(a, DEFAULT_ITEM_BYTES);
    Box::new(Vector {
        rng: rng(a.seed),
        keys_dist: super::KeyChooser::new(a.key_dist.or(super::KeyDist::Uniform)),
        root: a.region_base + ROOT_OFFSET,
        items: 0,
        a,
    })
}

impl Workload for Vector {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let cap = self.a.initial_items + self.a.max_tx;
        self.items = ctx.alloc(cap * self.a.item_bytes);
        ctx.store(self.root + CAP, cap);
        ctx.store(self.root + ITEMS, self.items);
        for i in 0..self.a.initial_items {
            let key = random_key(&mut self.rng, self.a.key_space);
            write_item(
                ctx,
                self.a.vm(),
                self.items + i * self.a.item_bytes,
                self.a.item_bytes,
                key,
                0,
            );
        }
        ctx.store(self.root + LEN, self.a.initial_items);
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let len = ctx.load(self.root + LEN);
        let ib = self.a.item_bytes;
        if len > 0 && self.rng.gen_bool(self.a.update_ratio) {
            let i = self.keys_dist.index(&mut self.rng, len as usize) as u64;
            update_item(
                ctx,
                self.a.vm(),
                self.items + i * ib,
                ib,
                self.a.update_scope,
                item_payload_words(ib),
            );
        } else {
            let key = random_key(&mut self.rng, self.a.key_space);
            write_item(ctx, self.a.vm(), self.items + len * ib, ib, key, 0);
            ctx.store(self.root + LEN, len + 1);
        }
    }
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    let item_bytes = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let root = region_base + ROOT_OFFSET;
    let len = img.read_u64(root + LEN);
    let cap = img.read_u64(root + CAP);
    let items = img.read_u64(root + ITEMS);
    if len > cap {
        return Err(format!(
            "vector at {root:#x}: len {len} exceeds capacity {cap}"
        ));
    }
    for i in 0..len {
        check_item(img, items + i * item_bytes, item_bytes)
            .map_err(|e| format!("vector element {i}: {e}"))?;
    }
    Ok(len)
}

/// [`super::labels::DescribeFn`]: the root's words, an element's field.
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word(
        "vector",
        region_base,
        addr,
        &["length", "capacity", "items pointer"],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let items = img.read_u64(root + ITEMS);
    let (i, off) = labels::array_slot(addr, items, ib, img.read_u64(root + CAP))?;
    Some(Label::new(
        format!("vector element {i}"),
        items + i * ib,
        labels::item_field(off),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    /// Insert: the whole item and the length; update: the whole item.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 1024] {
            let t = tx_stores(&INFO, &args(ib, 100, 400, 0.5), 400);
            let u = ib as usize / 8;
            assert!(t.iter().all(|&(w, _)| w == u || w == u + 1));
            assert!(t.iter().any(|&(w, _)| w == u) && t.iter().any(|&(w, _)| w > u));
        }
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let a = args(ib, 50, 300, 0.5);
            let (img, _) = run_direct(&INFO, &a, 300);
            let n = check(&img, BASE, ib).unwrap();
            assert!(n > 150 && n < 250, "{n}");
            let root = BASE + ROOT_OFFSET;
            let items = img.read_u64(root + ITEMS);
            assert_detects(&INFO, &img, items + 3 * ib + 16, ib); // torn payload
            assert_detects(&INFO, &img, items + 3 * ib + 8, ib); // seal
            assert_detects(&INFO, &img, items + 3 * ib, ib); // key
                                                             // A length past the capacity.
            let mut bad = img.clone();
            crate::mem::MemWrite::write_u64(&mut bad, root + LEN, img.read_u64(root + CAP) + 1);
            assert!(check(&bad, BASE, ib).is_err());
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("vector", 2, 300, &[]);
    }
}
