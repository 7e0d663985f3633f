//! Array (EHOU §IV's "Array", after the persistent-array micro-benchmark of
//! its Ref. [14]): a fixed persistent array of `initial_items` items; each
//! transaction overwrites one element in place with a new value
//! (`a[i] = v`: the whole item, item_bytes / 8 stores). The element is
//! chosen by `workload.key_dist` (uniform by default). Unlike `vector`
//! (append or one-field update), the array never grows and every write
//! replaces a whole element.
//!
//! Layout: root = { n, items_ptr }; element `i` holds key `i + 1`, so a
//! misplaced element is detected.
//!
//! Values: payload words from the value model (`workload.values`,
//! workloads/values.rs), each new value derived from the element's old
//! one (realistic: MorLog's delta model, so most bytes stay unchanged).

use super::labels::{self, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, rng, with_item_bytes, write_item,
    KeyChooser, KeyDist, TxCtx, Workload, WorkloadArgs, WorkloadInfo, DEFAULT_ITEM_BYTES,
    ITEM_SEAL, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "array",
    description: "fixed persistent array: overwrite a random element in place (EHOU §IV Array)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::IN_PLACE,
};

const N: u64 = 0;
const ITEMS: u64 = 8;

struct Array {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    keys_dist: KeyChooser,
    root: Addr,
    items: Addr,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    let a = with_item_bytes(a, DEFAULT_ITEM_BYTES);
    Box::new(Array {
        rng: rng(a.seed),
        keys_dist: KeyChooser::new(a.key_dist.or(KeyDist::Uniform)),
        root: a.region_base + ROOT_OFFSET,
        items: 0,
        a,
    })
}

impl Workload for Array {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let (n, ib) = (self.a.initial_items, self.a.item_bytes);
        self.items = ctx.alloc(n * ib);
        ctx.store(self.root + N, n);
        ctx.store(self.root + ITEMS, self.items);
        for i in 0..n {
            write_item(ctx, self.a.vm(), self.items + i * ib, ib, i + 1, 0);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let ib = self.a.item_bytes;
        let i = self
            .keys_dist
            .index(&mut self.rng, self.a.initial_items as usize) as u64;
        let e = self.items + i * ib;
        let key = ctx.load(e);
        let version = ctx.load(e + ITEM_SEAL) >> 32;
        write_item(ctx, self.a.vm(), e, ib, key, (version + 1) & 0xffff_ffff);
    }
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let n = img.read_u64(root + N);
    let items = img.read_u64(root + ITEMS);
    check_ptr(items, n.saturating_mul(ib), bounds, "array elements")?;
    for i in 0..n {
        let k =
            check_item(img, items + i * ib, ib).map_err(|e| format!("array element {i}: {e}"))?;
        if k != i + 1 {
            return Err(format!(
                "array element {i} holds key {k}, expected {}",
                i + 1
            ));
        }
    }
    Ok(n)
}

/// [`super::labels::DescribeFn`]: the root's words, an element's field.
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word("array", region_base, addr, &["length", "items pointer"]) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let items = img.read_u64(root + ITEMS);
    let (i, off) = labels::array_slot(addr, items, ib, img.read_u64(root + N))?;
    Some(Label::new(
        format!("array element {i}"),
        items + i * ib,
        labels::item_field(off),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    /// Every transaction overwrites one whole element.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 1024, 4096] {
            let t = tx_stores(&INFO, &args(ib, 100, 200, 0.5), 200);
            assert!(t.iter().all(|&(w, _)| w as u64 == ib / 8));
        }
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let (img, _) = run_direct(&INFO, &args(ib, 50, 300, 0.5), 300);
            assert_eq!(check(&img, BASE, ib).unwrap(), 50);
            let items = img.read_u64(BASE + ROOT_OFFSET + ITEMS);
            assert_detects(&INFO, &img, items + 3 * ib + 16, ib); // torn element
            assert_detects(&INFO, &img, items + 3 * ib, ib); // key
            assert_detects(&INFO, &img, BASE + ROOT_OFFSET + N, ib); // length
                                                                     // Two elements swapped: both valid items, but misplaced.
            let mut bad = img.clone();
            for w in 0..ib / 8 {
                let (x, y) = (items + w * 8, items + ib + w * 8);
                let (vx, vy) = (img.read_u64(x), img.read_u64(y));
                crate::mem::MemWrite::write_u64(&mut bad, x, vy);
                crate::mem::MemWrite::write_u64(&mut bad, y, vx);
            }
            assert!(check(&bad, BASE, ib).is_err());
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("array", 2, 300, &[]);
    }
}
