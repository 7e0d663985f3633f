//! Vector (HOOP Table III, after ReDU): a persistent array of items. Insert
//! appends an item and bumps the length; update rewrites a random item.
//!
//! Layout: root = { len, capacity, items_ptr }; items are contiguous.

use super::{
    check_item, random_key, rng, update_item, write_item, TxCtx, Workload, WorkloadArgs,
    WorkloadInfo, ROOT_OFFSET,
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
};

const LEN: u64 = 0;
const CAP: u64 = 8;
const ITEMS: u64 = 16;

struct Vector {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    root: Addr,
    items: Addr,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Vector {
        rng: rng(a.seed),
        root: a.region_base + ROOT_OFFSET,
        items: 0,
        a: a.clone(),
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
            let i = self.rng.gen_range(0..len);
            let addr = self.items + i * ib;
            let key = ctx.load(addr);
            let version = ctx.load(addr + 8);
            update_item(ctx, addr, ib, key, version + 1);
        } else {
            let key = random_key(&mut self.rng, self.a.key_space);
            write_item(ctx, self.items + len * ib, ib, key, 0);
            ctx.store(self.root + LEN, len + 1);
        }
    }
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
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
