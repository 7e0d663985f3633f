//! Red-black tree (HOOP Table III, after FWB): insert of a random key with
//! recoloring and rotations (CLRS), or update of an existing key's item.
//! Insert writes the new node (heap cursor, the whole item, its four link
//! and color words), the parent's child link, the count, and whatever the
//! fixup recolors and rotates (CLRS's fix-up stores some words twice: a
//! grandparent coloured red and then black by a later step, a parent link
//! rewritten by the second rotation of a double rotation); update assigns
//! the whole item (item_bytes / 8 stores; `workload.update_scope = field`:
//! one field and the seal, 2 stores).
//!
//! Values: keys uniform in [1, key_space) (or `workload.key_dist`); payload
//! words from the value model (`workload.values`; realistic: the delta
//! model fitted to MorLog Table II / Fig. 5, workloads/values.rs); links,
//! counts and seals are the structure's own.
//!
//! Layout: root = { tree_root, count }; node = { item (item_bytes) | left,
//! right, parent, color } so the item is line-aligned. Null is 0.

use super::labels::{self, Heap, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, item_payload_words, item_version, keyed_tx,
    random_key, rng, update_item, with_item_bytes, write_item, TxCtx, Workload, WorkloadArgs,
    WorkloadInfo, DEFAULT_ITEM_BYTES, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "rbtree",
    description: "red-black tree: insert random keys (rotations, recoloring) or update existing items (HOOP Table III, FWB)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::GROWING,
};

const TREE_ROOT: u64 = 0;
const COUNT: u64 = 8;
// Header word offsets, relative to the end of the item.
const LEFT: u64 = 0;
const RIGHT: u64 = 8;
const PARENT: u64 = 16;
const COLOR: u64 = 24;
const HDR_BYTES: u64 = 32;
const BLACK: u64 = 0;
const RED: u64 = 1;
/// A red-black tree of n nodes has height <= 2 log2(n + 1): 128 bounds
/// any tree that fits in memory (the checker's guard against cycles).
const MAX_DEPTH: u32 = 128;

pub(crate) struct RbTree {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    /// `workload.key_dist` (uniform by default).
    keys_dist: super::KeyChooser,
    root: Addr,
    /// Keys inserted so far (volatile program knowledge for updates).
    keys: Vec<u64>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(RbTree::new(a))
}

impl RbTree {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let a = &with_item_bytes(a, DEFAULT_ITEM_BYTES);
        RbTree {
            rng: rng(a.seed),
            keys_dist: super::KeyChooser::new(a.key_dist.or(super::KeyDist::Uniform)),
            root: a.region_base + ROOT_OFFSET,
            keys: Vec::with_capacity((a.initial_items + a.max_tx) as usize),
            a: a.clone(),
        }
    }

    #[inline]
    fn f(&self, n: Addr, field: u64) -> Addr {
        n + self.a.item_bytes + field
    }
    fn child(&self, ctx: &mut TxCtx, n: Addr, right: bool) -> Addr {
        ctx.load(self.f(n, if right { RIGHT } else { LEFT }))
    }
    fn set_child(&self, ctx: &mut TxCtx, n: Addr, right: bool, c: Addr) {
        ctx.store(self.f(n, if right { RIGHT } else { LEFT }), c);
    }
    fn parent(&self, ctx: &mut TxCtx, n: Addr) -> Addr {
        ctx.load(self.f(n, PARENT))
    }
    fn color(&self, ctx: &mut TxCtx, n: Addr) -> u64 {
        ctx.load(self.f(n, COLOR))
    }
    fn set_color(&self, ctx: &mut TxCtx, n: Addr, c: u64) {
        ctx.store(self.f(n, COLOR), c);
    }

    /// Rotate `x` down towards `dir` (false: left rotation).
    fn rotate(&self, ctx: &mut TxCtx, x: Addr, dir: bool) {
        let y = self.child(ctx, x, !dir);
        let b = self.child(ctx, y, dir);
        self.set_child(ctx, x, !dir, b);
        if b != 0 {
            ctx.store(self.f(b, PARENT), x);
        }
        let p = self.parent(ctx, x);
        ctx.store(self.f(y, PARENT), p);
        if p == 0 {
            ctx.store(self.root + TREE_ROOT, y);
        } else {
            let x_is_right = self.child(ctx, p, true) == x;
            self.set_child(ctx, p, x_is_right, y);
        }
        self.set_child(ctx, y, dir, x);
        ctx.store(self.f(x, PARENT), y);
    }

    /// Insert `key` (or update it if present); returns its new version.
    pub(crate) fn insert(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let ib = self.a.item_bytes;
        let mut parent = 0;
        let mut x = ctx.load(self.root + TREE_ROOT);
        let mut right = false;
        while x != 0 {
            parent = x;
            let k = ctx.load(x);
            ctx.compute(1);
            if k == key {
                return update_item(
                    ctx,
                    self.a.vm(),
                    x,
                    ib,
                    self.a.update_scope,
                    item_payload_words(ib),
                );
            }
            right = key > k;
            x = self.child(ctx, x, right);
        }
        let z = ctx.alloc(ib + HDR_BYTES);
        write_item(ctx, self.a.vm(), z, ib, key, 0);
        ctx.store(self.f(z, LEFT), 0);
        ctx.store(self.f(z, RIGHT), 0);
        ctx.store(self.f(z, PARENT), parent);
        ctx.store(self.f(z, COLOR), RED);
        if parent == 0 {
            ctx.store(self.root + TREE_ROOT, z);
        } else {
            self.set_child(ctx, parent, right, z);
        }
        let c = ctx.load(self.root + COUNT);
        ctx.store(self.root + COUNT, c + 1);
        self.fixup(ctx, z);
        self.keys.push(key);
        0
    }

    /// CLRS RB-INSERT-FIXUP.
    fn fixup(&self, ctx: &mut TxCtx, mut z: Addr) {
        loop {
            let p = self.parent(ctx, z);
            if p == 0 || self.color(ctx, p) != RED {
                break;
            }
            // p is red, so it is not the root and g exists.
            let g = self.parent(ctx, p);
            let p_is_right = self.child(ctx, g, true) == p;
            let u = self.child(ctx, g, !p_is_right);
            if u != 0 && self.color(ctx, u) == RED {
                self.set_color(ctx, p, BLACK);
                self.set_color(ctx, u, BLACK);
                self.set_color(ctx, g, RED);
                z = g;
                continue;
            }
            let mut p = p;
            if self.child(ctx, p, !p_is_right) == z {
                // Inner grandchild: rotate it to the outside first.
                self.rotate(ctx, p, p_is_right);
                z = p;
                p = self.parent(ctx, z);
            }
            self.set_color(ctx, p, BLACK);
            self.set_color(ctx, g, RED);
            self.rotate(ctx, g, !p_is_right);
            break;
        }
        let r = ctx.load(self.root + TREE_ROOT);
        if self.color(ctx, r) != BLACK {
            self.set_color(ctx, r, BLACK);
        }
    }

    /// Update an existing `key`; returns its new version.
    pub(crate) fn update(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let mut x = ctx.load(self.root + TREE_ROOT);
        while x != 0 {
            let k = ctx.load(x);
            ctx.compute(1);
            if k == key {
                let ib = self.a.item_bytes;
                return update_item(
                    ctx,
                    self.a.vm(),
                    x,
                    ib,
                    self.a.update_scope,
                    item_payload_words(ib),
                );
            }
            x = self.child(ctx, x, key > k);
        }
        panic!("update of key {key} the program never inserted");
    }
}

super::keyed_map!(RbTree);

impl Workload for RbTree {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        ctx.store(self.root + TREE_ROOT, 0);
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

struct Walk<'a, F> {
    img: &'a dyn MemRead,
    ib: u64,
    bounds: (Addr, Addr),
    count: u64,
    seen: u64,
    f: F,
}

impl<F: FnMut(u64, u64)> Walk<'_, F> {
    /// Validate the subtree at `n` (keys in the open range `(lo, hi)`);
    /// returns its black height. Visits items in key order.
    fn visit(
        &mut self,
        n: Addr,
        parent: Addr,
        lo: Option<u64>,
        hi: Option<u64>,
        depth: u32,
    ) -> Result<u32, String> {
        if n == 0 {
            return Ok(1);
        }
        if depth > MAX_DEPTH {
            return Err(format!("rbtree: depth exceeds {MAX_DEPTH} (cycle?)"));
        }
        self.seen += 1;
        if self.seen > self.count {
            return Err(format!(
                "rbtree: more nodes reachable than count {}",
                self.count
            ));
        }
        let ib = self.ib;
        check_ptr(n, ib + HDR_BYTES, self.bounds, "rbtree node")?;
        let key = check_item(self.img, n, ib).map_err(|e| format!("rbtree: {e}"))?;
        if lo.is_some_and(|l| key <= l) || hi.is_some_and(|h| key >= h) {
            return Err(format!(
                "rbtree: key {key} at {n:#x} violates search order (bounds {lo:?}..{hi:?})"
            ));
        }
        let rd = |o: u64| self.img.read_u64(n + ib + o);
        let (l, r, p, color) = (rd(LEFT), rd(RIGHT), rd(PARENT), rd(COLOR));
        if p != parent {
            return Err(format!(
                "rbtree: node {n:#x} (key {key}) has parent {p:#x}, expected {parent:#x}"
            ));
        }
        if color != RED && color != BLACK {
            return Err(format!("rbtree: node {n:#x} has color word {color}"));
        }
        if color == RED {
            for c in [l, r] {
                if c != 0 && self.img.read_u64(c.wrapping_add(ib + COLOR)) == RED {
                    return Err(format!(
                        "rbtree: red node {n:#x} (key {key}) has a red child"
                    ));
                }
            }
        }
        let bl = self.visit(l, n, lo, Some(key), depth + 1)?;
        (self.f)(key, item_version(self.img, n));
        let br = self.visit(r, n, Some(key), hi, depth + 1)?;
        if bl != br {
            return Err(format!(
                "rbtree: node {n:#x} (key {key}) has black heights {bl} (left) and {br} (right)"
            ));
        }
        Ok(bl + u32::from(color == BLACK))
    }
}

/// Visit every entry in key order: `f(key, version)`. Validates the tree.
pub(crate) fn walk(
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
    f: impl FnMut(u64, u64),
) -> Result<u64, String> {
    let item_bytes = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let tree_root = img.read_u64(root + TREE_ROOT);
    let count = img.read_u64(root + COUNT);
    let mut w = Walk {
        img,
        ib: item_bytes,
        bounds,
        count,
        seen: 0,
        f,
    };
    if tree_root != 0 {
        check_ptr(tree_root, item_bytes + HDR_BYTES, bounds, "rbtree root")?;
        if img.read_u64(tree_root + item_bytes + COLOR) != BLACK {
            return Err("rbtree: root is red".into());
        }
    }
    w.visit(tree_root, 0, None, None, 0)?;
    if w.seen != count {
        return Err(format!(
            "rbtree: count is {count} but {} nodes are reachable",
            w.seen
        ));
    }
    Ok(count)
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    walk(img, region_base, item_bytes, |_, _| {})
}

/// [`super::labels::DescribeFn`]: the root's words, a node's item or link
/// field (found from the root, depth first).
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    if let Some(l) = labels::root_word("rbtree", region_base, addr, &["root node pointer", "count"])
    {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let node = ib + HDR_BYTES;
    let heap = Heap::of(img, region_base)?;
    let mut budget = heap.max_objects(node);
    let mut stack = vec![(img.read_u64(region_base + ROOT_OFFSET + TREE_ROOT), 0u32)];
    while let Some((n, depth)) = stack.pop() {
        if n == 0 || budget == 0 || depth > MAX_DEPTH || !heap.holds(n, node) {
            continue;
        }
        budget -= 1;
        if labels::within(addr, n, node) {
            let off = addr - n;
            let field = match off.checked_sub(ib) {
                None => labels::item_field(off),
                Some(o) => labels::word_field(&["left", "right", "parent", "color"], o),
            };
            let key = img.read_u64(n);
            return Some(Label::new(format!("rbtree node (key {key})"), n, field));
        }
        stack.push((img.read_u64(n + ib + LEFT), depth + 1));
        stack.push((img.read_u64(n + ib + RIGHT), depth + 1));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemWrite;
    use crate::workloads::testutil::*;

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let a = args(ib, 60, 300, 0.5);
            let (img, _) = run_direct(&INFO, &a, 300);
            let n = check(&img, BASE, ib).unwrap();
            assert!(n > 150, "{n}");
            let root = BASE + ROOT_OFFSET;
            let r = img.read_u64(root + TREE_ROOT);
            let l = img.read_u64(r + ib + LEFT);
            assert_detects(&INFO, &img, l + 8 * 3, ib); // torn item
            assert_detects(&INFO, &img, l + ib + PARENT, ib);
            assert_detects(&INFO, &img, r + ib + RIGHT, ib);
            assert_detects(&INFO, &img, root + COUNT, ib);
            // Recolor one node: breaks black height or red-red.
            let mut bad = img.clone();
            let c = img.read_u64(l + ib + COLOR);
            bad.write_u64(l + ib + COLOR, 1 - c);
            assert!(check(&bad, BASE, ib).is_err());
            // Swap the root's children: order violation.
            let mut bad = img.clone();
            let rr = img.read_u64(r + ib + RIGHT);
            bad.write_u64(r + ib + LEFT, rr);
            bad.write_u64(r + ib + RIGHT, l);
            assert!(check(&bad, BASE, ib).is_err());
        }
    }

    /// Insert: heap cursor, item, four node words, parent link, count,
    /// then the fixup's recolorings (3 per step up) and at most two
    /// rotations (6 words each) and the root's color; update: 2.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 1024] {
            let t = tx_stores(&INFO, &args(ib, 1000, 600, 0.5), 600);
            let w = ib as usize / 8;
            let ins: Vec<usize> = t.iter().map(|x| x.0).filter(|&s| s != w).collect();
            assert!(ins.len() > 200 && ins.len() < 400);
            // Height of ~1,300 nodes is at most 2 log2(n + 1) < 22.
            assert!(ins
                .iter()
                .all(|&s| s >= w + 7 && s <= w + 7 + 3 * 11 + 12 + 1));
            let mean_fixup =
                ins.iter().map(|&s| s - w - 7).sum::<usize>() as f64 / ins.len() as f64;
            assert!(mean_fixup > 1.0 && mean_fixup < 8.0, "{mean_fixup}");
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("rbtree", 2, 300, &[]);
    }
}
