//! SPS (MorLog Table IV, after the NV-heaps / Mnemosyne / DHTM micro-
//! benchmark "random swaps of entries in a persistent array"): each
//! transaction picks two entries of a large persistent array and swaps
//! them (reads both items, writes each into the other's place: 2 x
//! item_bytes / 8 stores). Entries are chosen by `workload.key_dist`
//! (uniform by default).
//!
//! Layout: root = { n, items_ptr }. The array starts as keys 1..=n; the
//! checker verifies every entry is a valid item and the keys are still a
//! permutation of 1..=n (a torn swap duplicates one key and loses another).
//!
//! Values: the setup's payload words from the value model
//! (`workload.values`, workloads/values.rs); a swap moves them unchanged.

use super::labels::{self, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, rng, with_item_bytes, write_item,
    KeyChooser, KeyDist, TxCtx, Workload, WorkloadArgs, WorkloadInfo, DEFAULT_ITEM_BYTES,
    ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "sps",
    description: "persistent array: swap two random entries (MorLog Table IV SPS)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::IN_PLACE,
};

const N: u64 = 0;
const ITEMS: u64 = 8;

struct Sps {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    keys_dist: KeyChooser,
    root: Addr,
    items: Addr,
    /// The two entries being swapped (the program's registers / stack);
    /// sized once so run_tx never allocates.
    buf: Vec<u64>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    let a = with_item_bytes(a, DEFAULT_ITEM_BYTES);
    Box::new(Sps {
        rng: rng(a.seed),
        keys_dist: KeyChooser::new(a.key_dist.or(KeyDist::Uniform)),
        root: a.region_base + ROOT_OFFSET,
        items: 0,
        buf: vec![0; 2 * (a.item_bytes / 8) as usize],
        a,
    })
}

impl Workload for Sps {
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
        let (n, ib) = (self.a.initial_items, self.a.item_bytes);
        if n < 2 {
            return;
        }
        let i = self.keys_dist.index(&mut self.rng, n as usize) as u64;
        let mut j = self.keys_dist.index(&mut self.rng, n as usize) as u64;
        if j == i {
            j = (i + 1) % n;
        }
        let words = (ib / 8) as usize;
        let (x, y) = (self.items + i * ib, self.items + j * ib);
        for w in 0..words {
            self.buf[w] = ctx.load(x + w as u64 * 8);
            self.buf[words + w] = ctx.load(y + w as u64 * 8);
        }
        for w in 0..words {
            ctx.store(x + w as u64 * 8, self.buf[words + w]);
            ctx.store(y + w as u64 * 8, self.buf[w]);
        }
    }
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let n = img.read_u64(root + N);
    let items = img.read_u64(root + ITEMS);
    check_ptr(items, n.saturating_mul(ib), bounds, "sps array")?;
    let mut seen = vec![false; n as usize];
    for i in 0..n {
        let k = check_item(img, items + i * ib, ib).map_err(|e| format!("sps entry {i}: {e}"))?;
        if k == 0 || k > n || std::mem::replace(&mut seen[(k - 1) as usize], true) {
            return Err(format!(
                "sps entry {i}: key {k} is out of 1..={n} or appears twice (torn swap)"
            ));
        }
    }
    Ok(n)
}

/// [`super::labels::DescribeFn`]: the root's words, an element's field.
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word("sps", region_base, addr, &["length", "items pointer"]) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let items = img.read_u64(root + ITEMS);
    let (i, off) = labels::array_slot(addr, items, ib, img.read_u64(root + N))?;
    Some(Label::new(
        format!("sps array entry {i}"),
        items + i * ib,
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
            let t = tx_stores(&INFO, &args(ib, 100, 200, 0.5), 200);
            assert!(t.iter().all(|&(w, _)| w as u64 == 2 * ib / 8));
        }
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let (img, _) = run_direct(&INFO, &args(ib, 50, 300, 0.5), 300);
            assert_eq!(check(&img, BASE, ib).unwrap(), 50);
            let items = img.read_u64(BASE + ROOT_OFFSET + ITEMS);
            // Swaps really moved entries.
            assert!((0..50).any(|i| img.read_u64(items + i * ib) != i + 1));
            assert_detects(&INFO, &img, items + 3 * ib + 16, ib);
            assert_detects(&INFO, &img, items + 3 * ib, ib);
            // Half a swap: entry 1 copied over entry 0 (a duplicate key).
            let mut bad = img.clone();
            for w in 0..ib / 8 {
                crate::mem::MemWrite::write_u64(
                    &mut bad,
                    items + w * 8,
                    img.read_u64(items + ib + w * 8),
                );
            }
            assert!(check(&bad, BASE, ib).is_err());
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("sps", 2, 300, &[]);
    }
}
