//! B+-tree (HOOP Table III, after FWB): u64 keys, item pointers in the
//! leaves, leaves chained left to right. Insert of a random key (sorted
//! in-node insertion, leaf and internal splits, root growth) or update of an
//! existing key's item. Insert writes the new item (heap cursor and the
//! whole item), the count, the words of the leaf that the sorted insertion
//! shifts and its key count, and on a split the new node(s) and the parent
//! entries; update assigns the whole item (item_bytes / 8 stores;
//! `workload.update_scope = field`: one field and the seal, 2 stores).
//! Node code stores only the words that change, so no word is stored
//! twice in a transaction (PMDK's btree_map, which zeroes a new node and
//! then fills it, would: modelling choice, docs/model/workloads.md).
//!
//! Values: keys uniform in [1, key_space) (or `workload.key_dist`); payload
//! words from the value model (`workload.values`; realistic: the delta
//! model fitted to MorLog Table II / Fig. 5, workloads/values.rs); links,
//! counts and seals are the structure's own.
//!
//! Layout: root = { tree_root, count, height }; node (256 B, 4 lines) =
//! { meta = nkeys | leaf << 32, keys[15], ptrs[16] }. In a leaf ptrs[i] is
//! the item of keys[i] and ptrs[15] the next leaf; an internal node has
//! nkeys + 1 children, child i holding keys in [keys[i-1], keys[i]).

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
    name: "btree",
    description:
        "B+-tree: insert random keys (node splits) or update existing items (HOOP Table III, FWB)",
    build,
    check,
    check_incremental: Some(new_incremental),
    describe,
    sizing: super::Sizing::GROWING,
};

const TREE_ROOT: u64 = 0;
const COUNT: u64 = 8;
pub(crate) const HEIGHT: u64 = 16;

const MAX_KEYS: usize = 15;
const NODE_BYTES: u64 = 256;
const META: u64 = 0;
const LEAF_FLAG: u64 = 1 << 32;
/// After a split, a leaf keeps at least 8 keys and an internal node 7.
const MIN_LEAF_KEYS: u64 = 8;
const MIN_INTERNAL_KEYS: u64 = 7;
/// Far above any height reachable in memory (fanout >= 8).
const MAX_HEIGHT: u64 = 32;
const NEXT_LEAF: usize = MAX_KEYS;
/// Entries kept by the left node of a split (of MAX_KEYS + 1 = 16).
const HALF: usize = 8;

#[inline]
fn key_at(n: Addr, i: usize) -> Addr {
    n + 8 + 8 * i as u64
}
#[inline]
fn ptr_at(n: Addr, i: usize) -> Addr {
    n + 128 + 8 * i as u64
}

pub(crate) struct BTree {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    /// `workload.key_dist` (uniform by default).
    keys_dist: super::KeyChooser,
    root: Addr,
    keys: Vec<u64>,
    /// Scratch for the descent's path (reused: no per-transaction array
    /// to zero).
    path: Vec<(Addr, usize)>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(BTree::new(a))
}

/// Store the words of `new` that differ from `old` (an in-place shift
/// writes exactly those).
fn store_diff(ctx: &mut TxCtx, at: impl Fn(usize) -> Addr, old: &[u64], new: &[u64]) {
    for (i, &w) in new.iter().enumerate() {
        if old.get(i) != Some(&w) {
            ctx.store(at(i), w);
        }
    }
}

/// [`store_diff`] of `old` against `old` with `x` inserted at `pos` (the
/// sorted insertion's shift), without building the shifted copy: words
/// before `pos` never change.
fn store_shift_in(ctx: &mut TxCtx, at: impl Fn(usize) -> Addr, old: &[u64], pos: usize, x: u64) {
    for i in pos..=old.len() {
        let w = if i == pos { x } else { old[i - 1] };
        if old.get(i) != Some(&w) {
            ctx.store(at(i), w);
        }
    }
}

impl BTree {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let a = &with_item_bytes(a, DEFAULT_ITEM_BYTES);
        BTree {
            rng: rng(a.seed),
            keys_dist: super::KeyChooser::new(a.key_dist.or(super::KeyDist::Uniform)),
            root: a.region_base + ROOT_OFFSET,
            keys: Vec::with_capacity((a.initial_items + a.max_tx) as usize),
            path: Vec::with_capacity(MAX_HEIGHT as usize),
            a: a.clone(),
        }
    }

    /// Index of the child of internal node `n` (with `nk` keys) for `key`.
    fn child_index(ctx: &mut TxCtx, n: Addr, nk: usize, key: u64) -> usize {
        let mut i = 0;
        while i < nk {
            ctx.compute(1);
            if key < ctx.load(key_at(n, i)) {
                break;
            }
            i += 1;
        }
        i
    }

    /// Descend to the leaf for `key`, recording the path (root first);
    /// returns the leaf.
    fn descend(&self, ctx: &mut TxCtx, key: u64, path: &mut Vec<(Addr, usize)>) -> Addr {
        path.clear();
        let mut n = ctx.load(self.root + TREE_ROOT);
        loop {
            let meta = ctx.load(n + META);
            if meta & LEAF_FLAG != 0 {
                return n;
            }
            let i = Self::child_index(ctx, n, (meta & 0xffff) as usize, key);
            path.push((n, i));
            n = ctx.load(ptr_at(n, i));
        }
    }

    /// Position of `key` in leaf `n`: (first index with key >= `key`, found).
    fn leaf_pos(ctx: &mut TxCtx, n: Addr, nk: usize, key: u64) -> (usize, bool) {
        for i in 0..nk {
            ctx.compute(1);
            let k = ctx.load(key_at(n, i));
            if k >= key {
                return (i, k == key);
            }
        }
        (nk, false)
    }

    /// Insert `key` (or update it if present); returns its new version.
    pub(crate) fn insert(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let mut path = std::mem::take(&mut self.path);
        let leaf = self.descend(ctx, key, &mut path);
        let v = self.insert_at_leaf(ctx, key, leaf, &path);
        self.path = path;
        v
    }

    /// [`Self::insert`] below the descent to `leaf` along `path`.
    fn insert_at_leaf(
        &mut self,
        ctx: &mut TxCtx,
        key: u64,
        leaf: Addr,
        path: &[(Addr, usize)],
    ) -> u64 {
        let ib = self.a.item_bytes;
        let nk = (ctx.load(leaf + META) & 0xffff) as usize;
        let (pos, found) = Self::leaf_pos(ctx, leaf, nk, key);
        if found {
            let item = ctx.load(ptr_at(leaf, pos));
            return update_item(
                ctx,
                self.a.vm(),
                item,
                ib,
                self.a.update_scope,
                item_payload_words(ib),
            );
        }
        let item = ctx.alloc(ib);
        write_item(ctx, self.a.vm(), item, ib, key, 0);
        let c = ctx.load(self.root + COUNT);
        ctx.store(self.root + COUNT, c + 1);
        self.keys.push(key);

        // Load the leaf's entries and insert the new one at `pos`.
        let mut ks = [0u64; MAX_KEYS + 1];
        let mut ps = [0u64; MAX_KEYS + 1];
        for i in 0..nk {
            ks[i] = ctx.load(key_at(leaf, i));
            ps[i] = ctx.load(ptr_at(leaf, i));
        }
        if nk < MAX_KEYS {
            store_shift_in(ctx, |i| key_at(leaf, i), &ks[..nk], pos, key);
            store_shift_in(ctx, |i| ptr_at(leaf, i), &ps[..nk], pos, item);
            ctx.store(leaf + META, LEAF_FLAG | (nk as u64 + 1));
            return 0;
        }
        let (old_k, old_p) = (ks, ps);
        ks.copy_within(pos..nk, pos + 1);
        ps.copy_within(pos..nk, pos + 1);
        ks[pos] = key;
        ps[pos] = item;
        // Leaf split: 8 entries stay, 8 move to a new right sibling.
        let half = HALF;
        let right = ctx.alloc(NODE_BYTES);
        for i in 0..MAX_KEYS + 1 - half {
            ctx.store(key_at(right, i), ks[half + i]);
            ctx.store(ptr_at(right, i), ps[half + i]);
        }
        let next = ctx.load(ptr_at(leaf, NEXT_LEAF));
        ctx.store(ptr_at(right, NEXT_LEAF), next);
        ctx.store(right + META, LEAF_FLAG | (MAX_KEYS + 1 - half) as u64);
        store_diff(ctx, |i| key_at(leaf, i), &old_k[..half], &ks[..half]);
        store_diff(ctx, |i| ptr_at(leaf, i), &old_p[..half], &ps[..half]);
        ctx.store(ptr_at(leaf, NEXT_LEAF), right);
        ctx.store(leaf + META, LEAF_FLAG | half as u64);
        self.insert_up(ctx, path, ks[half], right);
        0
    }

    /// Insert separator `sep` with right child `child` into the parents on
    /// `path` (deepest last), splitting as needed.
    fn insert_up(
        &mut self,
        ctx: &mut TxCtx,
        path: &[(Addr, usize)],
        mut sep: u64,
        mut child: Addr,
    ) {
        for &(n, idx) in path.iter().rev() {
            let nk = (ctx.load(n + META) & 0xffff) as usize;
            let mut ks = [0u64; MAX_KEYS + 1];
            let mut ps = [0u64; MAX_KEYS + 2];
            for (i, k) in ks.iter_mut().enumerate().take(nk) {
                *k = ctx.load(key_at(n, i));
            }
            for (i, p) in ps.iter_mut().enumerate().take(nk + 1) {
                *p = ctx.load(ptr_at(n, i));
            }
            let (old_k, old_p) = (ks, ps);
            ks.copy_within(idx..nk, idx + 1);
            ps.copy_within(idx + 1..nk + 1, idx + 2);
            ks[idx] = sep;
            ps[idx + 1] = child;
            if nk < MAX_KEYS {
                store_diff(ctx, |i| key_at(n, i), &old_k[..nk], &ks[..=nk]);
                store_diff(ctx, |i| ptr_at(n, i), &old_p[..=nk], &ps[..nk + 2]);
                ctx.store(n + META, nk as u64 + 1);
                return;
            }
            // Internal split: 16 keys -> 8 left, keys[8] moves up, 7 right.
            let half = HALF;
            let right = ctx.alloc(NODE_BYTES);
            let rk = MAX_KEYS - half;
            for i in 0..rk {
                ctx.store(key_at(right, i), ks[half + 1 + i]);
            }
            for i in 0..=rk {
                ctx.store(ptr_at(right, i), ps[half + 1 + i]);
            }
            ctx.store(right + META, rk as u64);
            store_diff(ctx, |i| key_at(n, i), &old_k[..half], &ks[..half]);
            store_diff(ctx, |i| ptr_at(n, i), &old_p[..=half], &ps[..=half]);
            ctx.store(n + META, half as u64);
            sep = ks[half];
            child = right;
        }
        // The root split: grow the tree by one level.
        let old_root = ctx.load(self.root + TREE_ROOT);
        let r = ctx.alloc(NODE_BYTES);
        ctx.store(key_at(r, 0), sep);
        ctx.store(ptr_at(r, 0), old_root);
        ctx.store(ptr_at(r, 1), child);
        ctx.store(r + META, 1);
        ctx.store(self.root + TREE_ROOT, r);
        let h = ctx.load(self.root + HEIGHT);
        ctx.store(self.root + HEIGHT, h + 1);
    }

    /// Update an existing `key`; returns its new version.
    pub(crate) fn update(&mut self, ctx: &mut TxCtx, key: u64) -> u64 {
        let mut path = std::mem::take(&mut self.path);
        let leaf = self.descend(ctx, key, &mut path);
        self.path = path;
        let nk = (ctx.load(leaf + META) & 0xffff) as usize;
        let (pos, found) = Self::leaf_pos(ctx, leaf, nk, key);
        assert!(found, "update of key {key} the program never inserted");
        let item = ctx.load(ptr_at(leaf, pos));
        let ib = self.a.item_bytes;
        update_item(
            ctx,
            self.a.vm(),
            item,
            ib,
            self.a.update_scope,
            item_payload_words(ib),
        )
    }
}

super::keyed_map!(BTree);

impl Workload for BTree {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let leaf = ctx.alloc(NODE_BYTES);
        ctx.store(leaf + META, LEAF_FLAG);
        ctx.store(self.root + TREE_ROOT, leaf);
        ctx.store(self.root + COUNT, 0);
        ctx.store(self.root + HEIGHT, 1);
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
    height: u64,
    max_nodes: u64,
    nodes: u64,
    keys: u64,
    /// The previous leaf in key order (its next pointer must lead here).
    prev_leaf: Addr,
    f: F,
}

/// The checks of node `n` alone, at `depth` of a tree of `height`, holding
/// keys in `[lo, hi)`: pointer, meta word, level, fanout, key order and
/// range. Returns (leaf, key count).
fn check_node(
    img: &dyn MemRead,
    n: Addr,
    depth: u64,
    height: u64,
    bounds: (Addr, Addr),
    lo: Option<u64>,
    hi: Option<u64>,
) -> Result<(bool, usize), String> {
    check_ptr(n, NODE_BYTES, bounds, "btree node")?;
    let meta = img.read_u64(n + META);
    let leaf = meta & LEAF_FLAG != 0;
    let nk = meta & !LEAF_FLAG;
    if meta >> 33 != 0 || nk > MAX_KEYS as u64 {
        return Err(format!("btree: node {n:#x} has bad meta word {meta:#x}"));
    }
    if leaf != (depth + 1 == height) {
        return Err(format!(
            "btree: node {n:#x} at depth {depth} is {}a leaf but the height is {height}",
            if leaf { "" } else { "not " },
        ));
    }
    let min = match (depth, leaf) {
        (0, true) => 0,
        (0, false) => 1,
        (_, true) => MIN_LEAF_KEYS,
        (_, false) => MIN_INTERNAL_KEYS,
    };
    if nk < min {
        return Err(format!(
            "btree: node {n:#x} at depth {depth} has {nk} keys, fewer than {min}"
        ));
    }
    let nk = nk as usize;
    let mut last = lo;
    for i in 0..nk {
        let k = img.read_u64(key_at(n, i));
        let in_order = match last {
            None => true,
            Some(l) => {
                if i == 0 {
                    k >= l
                } else {
                    k > l
                }
            }
        };
        if !in_order || hi.is_some_and(|h| k >= h) {
            return Err(format!(
                "btree: node {n:#x} key {i} = {k} out of order (range {lo:?}..{hi:?})"
            ));
        }
        last = Some(k);
    }
    Ok((leaf, nk))
}

/// The leaf chain: `prev` (0 before the first leaf) links to `n`.
fn check_link(img: &dyn MemRead, prev: Addr, n: Addr) -> Result<(), String> {
    if prev != 0 && img.read_u64(ptr_at(prev, NEXT_LEAF)) != n {
        return Err(format!(
            "btree: leaf chain broken: leaf {prev:#x} does not link to {n:#x}"
        ));
    }
    Ok(())
}

/// Entry `i` of leaf `n`: a sealed item in the heap carrying the entry's
/// key. Returns (key, item).
fn check_entry(
    img: &dyn MemRead,
    n: Addr,
    i: usize,
    ib: u64,
    bounds: (Addr, Addr),
) -> Result<(u64, Addr), String> {
    let k = img.read_u64(key_at(n, i));
    let item = img.read_u64(ptr_at(n, i));
    check_ptr(item, ib, bounds, "btree item")?;
    let ik = check_item(img, item, ib).map_err(|e| format!("btree: {e}"))?;
    if ik != k {
        return Err(format!(
            "btree: leaf key {k} points to an item with key {ik}"
        ));
    }
    Ok((k, item))
}

/// Child `i` of internal node `n` (with `nk` keys, holding `[lo, hi)`)
/// and its key range.
fn child(
    img: &dyn MemRead,
    n: Addr,
    nk: usize,
    i: usize,
    lo: Option<u64>,
    hi: Option<u64>,
) -> (Addr, Option<u64>, Option<u64>) {
    let clo = if i == 0 {
        lo
    } else {
        Some(img.read_u64(key_at(n, i - 1)))
    };
    let chi = if i == nk {
        hi
    } else {
        Some(img.read_u64(key_at(n, i)))
    };
    (img.read_u64(ptr_at(n, i)), clo, chi)
}

/// The checks of the whole tree that are not per node: the last leaf ends
/// the chain, the count matches the leaves, and the nodes fit the heap.
fn check_totals(img: &dyn MemRead, last_leaf: Addr, keys: u64, count: u64) -> Result<(), String> {
    if img.read_u64(ptr_at(last_leaf, NEXT_LEAF)) != 0 {
        return Err("btree: the last leaf has a next pointer".into());
    }
    if keys != count {
        return Err(format!(
            "btree: count is {count} but the leaves hold {keys} keys"
        ));
    }
    Ok(())
}

impl<F: FnMut(u64, u64)> Walk<'_, F> {
    /// Validate the subtree at `n` at `depth` holding keys in `[lo, hi)`.
    fn visit(
        &mut self,
        n: Addr,
        depth: u64,
        lo: Option<u64>,
        hi: Option<u64>,
    ) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            return Err("btree: more nodes than the heap holds (cycle?)".into());
        }
        let img = self.img;
        let (leaf, nk) = check_node(img, n, depth, self.height, self.bounds, lo, hi)?;
        if leaf {
            check_link(img, self.prev_leaf, n)?;
            self.prev_leaf = n;
            for i in 0..nk {
                let (k, item) = check_entry(img, n, i, self.ib, self.bounds)?;
                (self.f)(k, item_version(img, item));
            }
            self.keys += nk as u64;
        } else {
            for i in 0..=nk {
                let (c, clo, chi) = child(img, n, nk, i, lo, hi);
                self.visit(c, depth + 1, clo, chi)?;
            }
        }
        Ok(())
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
    let height = img.read_u64(root + HEIGHT);
    let count = img.read_u64(root + COUNT);
    if height == 0 || height > MAX_HEIGHT {
        return Err(format!("btree: height {height} outside 1..={MAX_HEIGHT}"));
    }
    let mut w = Walk {
        img,
        ib: item_bytes,
        bounds,
        height,
        max_nodes: (bounds.1 - bounds.0) / NODE_BYTES,
        nodes: 0,
        keys: 0,
        prev_leaf: 0,
        f,
    };
    w.visit(img.read_u64(root + TREE_ROOT), 0, None, None)?;
    check_totals(img, w.prev_leaf, w.keys, count)?;
    Ok(count)
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    walk(img, region_base, item_bytes, |_, _| {})
}

/// The field at byte `off` of a node (`leaf`: its pointers are items and
/// the next-leaf link).
fn node_field(off: u64, leaf: bool) -> String {
    match off {
        META => "meta (key count, leaf flag)".into(),
        o if o < 128 => format!("keys[{}]", (o - 8) / 8),
        o if leaf && (o - 128) / 8 == NEXT_LEAF as u64 => "next leaf".into(),
        o if leaf => format!("items[{}] (item pointer)", (o - 128) / 8),
        o => format!("children[{}]", (o - 128) / 8),
    }
}

/// [`super::labels::DescribeFn`]: the root's words, a node's field, an
/// item's field (found from the root, depth first).
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    if let Some(l) = labels::root_word(
        "btree",
        region_base,
        addr,
        &["root node pointer", "count", "height"],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let heap = Heap::of(img, region_base)?;
    let mut budget = heap.max_objects(NODE_BYTES.min(ib));
    let mut stack = vec![(img.read_u64(region_base + ROOT_OFFSET + TREE_ROOT), 0u64)];
    while let Some((n, depth)) = stack.pop() {
        if budget == 0 || depth >= MAX_HEIGHT || !heap.holds(n, NODE_BYTES) {
            continue;
        }
        budget -= 1;
        let meta = img.read_u64(n + META);
        let leaf = meta & LEAF_FLAG != 0;
        if labels::within(addr, n, NODE_BYTES) {
            let what = if leaf {
                "btree leaf node"
            } else {
                "btree internal node"
            };
            return Some(Label::new(what, n, node_field(addr - n, leaf)));
        }
        let nk = ((meta & 0xffff) as usize).min(MAX_KEYS);
        if leaf {
            for i in 0..nk {
                let item = img.read_u64(ptr_at(n, i));
                if heap.holds(item, ib) && labels::within(addr, item, ib) {
                    let key = img.read_u64(key_at(n, i));
                    return Some(Label::new(
                        format!("btree item (key {key})"),
                        item,
                        labels::item_field(addr - item),
                    ));
                }
            }
        } else {
            stack.extend((0..=nk).map(|i| (img.read_u64(ptr_at(n, i)), depth + 1)));
        }
    }
    None
}

/// What a verified subtree contributes to the checks above it.
#[derive(Clone, Copy)]
struct Agg {
    first_leaf: Addr,
    last_leaf: Addr,
    keys: u64,
    nodes: u64,
    /// End of its highest node or item (all must lie below the heap cursor).
    end: Addr,
}

/// A node of the last verified tree, with the context it was verified in.
struct Node {
    parent: Addr,
    depth: u64,
    lo: Option<u64>,
    hi: Option<u64>,
    leaf: bool,
    agg: Agg,
    /// Generation in which a word of its subtree changed.
    dirty: u64,
    /// Generation in which the walk last reached it.
    seen: u64,
    /// Its children (internal node) or items (leaf), in order.
    kids: [Addr; MAX_KEYS + 1],
    nkids: usize,
}

/// The btree checker made incremental (crash verification: docs/model/crash.md).
/// It keeps the last tree it verified: every node
/// with its parent, depth, key range and subtree summary, and every item
/// with its leaf. A new image is walked from the root like [`walk`] does,
/// except that a subtree none of whose node or item words changed, reached
/// in the same context (depth, key range; same height and heap base), is
/// not re-read: its checks only involved its own words and that context,
/// so they hold again; what crosses its border is re-checked (the leaf
/// link into it, its extent below the heap cursor, the key and node
/// totals). Every check of [`walk`] on a re-read node runs the same code.
#[derive(Default)]
pub(crate) struct Incremental {
    nodes: rustc_hash::FxHashMap<Addr, Node>,
    /// Item -> (its leaf, generation the walk last reached it).
    items: rustc_hash::FxHashMap<Addr, (Addr, u64)>,
    gen: u64,
    /// Walks that started from scratch (tests).
    from_scratch: u64,
    /// The maps hold exactly the tree of the last passing image.
    valid: bool,
    region_base: Addr,
    ib: u64,
    height: u64,
    root: Addr,
    /// Scratch: changed lines; nodes and items that may have left the tree.
    lines: Vec<Addr>,
    gone_nodes: Vec<Addr>,
    gone_items: Vec<Addr>,
}

/// Where a node sits in the tree the walk expects: its depth, the key
/// bounds its parent's separators give it, and the parent itself.
#[derive(Clone, Copy)]
struct Place {
    depth: u64,
    lo: Option<u64>,
    hi: Option<u64>,
    parent: Addr,
}

/// What one incremental walk reads.
struct Ctx<'a> {
    img: &'a dyn MemRead,
    bounds: (Addr, Addr),
    height: u64,
    ib: u64,
}

fn new_incremental() -> Box<dyn super::IncrementalCheck> {
    Box::<Incremental>::default()
}

impl super::IncrementalCheck for Incremental {
    fn passes(
        &mut self,
        img: &dyn MemRead,
        region_base: Addr,
        item_bytes: u64,
        changed: Option<&[Addr]>,
    ) -> bool {
        let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
        let ok = self.run(img, region_base, ib, changed).is_some();
        self.valid = ok;
        ok
    }
}

impl Incremental {
    fn run(
        &mut self,
        img: &dyn MemRead,
        region_base: Addr,
        ib: u64,
        changed: Option<&[Addr]>,
    ) -> Option<()> {
        let bounds = heap_bounds(img, region_base).ok()?;
        let root = region_base + ROOT_OFFSET;
        let height = img.read_u64(root + HEIGHT);
        let count = img.read_u64(root + COUNT);
        let top = img.read_u64(root + TREE_ROOT);
        if height == 0 || height > MAX_HEIGHT {
            return None;
        }
        self.gen += 1;
        // A jump over more changed words than the tree has objects costs
        // about a walk from scratch: take that.
        let objects = 4 * (self.nodes.len() + self.items.len()) + 64;
        match changed {
            Some(c)
                if self.valid
                    && (region_base, ib, height, top)
                        == (self.region_base, self.ib, self.height, self.root)
                    && c.len() <= objects =>
            {
                self.mark_changed(c, ib)
            }
            _ => {
                self.nodes.clear();
                self.items.clear();
                self.from_scratch += 1;
            }
        }
        (self.region_base, self.ib, self.height, self.root) = (region_base, ib, height, top);
        self.gone_nodes.clear();
        self.gone_items.clear();
        let cx = Ctx {
            img,
            bounds,
            height,
            ib,
        };
        let mut prev_leaf = 0;
        let top_place = Place {
            depth: 0,
            lo: None,
            hi: None,
            parent: 0,
        };
        let agg = self.visit(&cx, top, top_place, &mut prev_leaf)?;
        check_totals(img, agg.last_leaf, agg.keys, count).ok()?;
        if agg.nodes > (bounds.1 - bounds.0) / NODE_BYTES {
            return None;
        }
        self.sweep();
        Some(())
    }

    /// Mark dirty every node whose words, or whose leaf's items' words,
    /// hold a changed word, and their ancestors.
    fn mark_changed(&mut self, changed: &[Addr], ib: u64) {
        self.lines.clear();
        self.lines.extend(changed.iter().map(|&a| a & !63));
        self.lines.sort_unstable();
        self.lines.dedup();
        let node_lines = NODE_BYTES / 64;
        let item_lines = ib.div_ceil(64);
        for li in 0..self.lines.len() {
            let line = self.lines[li];
            for j in 0..node_lines.max(item_lines) {
                let Some(at) = line.checked_sub(64 * j) else {
                    break;
                };
                if j < node_lines && self.nodes.contains_key(&at) {
                    self.mark_up(at);
                }
                if j < item_lines {
                    if let Some(&(leaf, _)) = self.items.get(&at) {
                        self.mark_up(leaf);
                    }
                }
            }
        }
    }

    fn mark_up(&mut self, mut n: Addr) {
        while let Some(e) = self.nodes.get_mut(&n) {
            if e.dirty == self.gen {
                break; // its ancestors are marked too
            }
            e.dirty = self.gen;
            n = e.parent;
        }
    }

    /// [`Walk::visit`] of node `n` at `place`, reusing its subtree's
    /// verdict when nothing in it changed; `None`: not shown to pass.
    fn visit(&mut self, cx: &Ctx, n: Addr, place: Place, prev_leaf: &mut Addr) -> Option<Agg> {
        let Place {
            depth,
            lo,
            hi,
            parent,
        } = place;
        let gen = self.gen;
        if depth >= cx.height {
            return None; // below the leaf level: the full checker decides
        }
        match self.nodes.get_mut(&n) {
            // Reached twice: not a tree (the full checker decides).
            Some(e) if e.seen == gen => return None,
            Some(e) if e.dirty != gen && (e.depth, e.lo, e.hi) == (depth, lo, hi) => {
                if e.agg.end > cx.bounds.1 {
                    return None;
                }
                check_link(cx.img, *prev_leaf, e.agg.first_leaf).ok()?;
                *prev_leaf = e.agg.last_leaf;
                e.seen = gen;
                e.parent = parent;
                return Some(e.agg);
            }
            Some(e) => {
                let gone = if e.leaf {
                    &mut self.gone_items
                } else {
                    &mut self.gone_nodes
                };
                gone.extend_from_slice(&e.kids[..e.nkids]);
                e.seen = gen;
                e.dirty = gen;
            }
            None => {
                self.nodes.insert(
                    n,
                    Node {
                        parent,
                        depth,
                        lo,
                        hi,
                        leaf: false,
                        agg: Agg {
                            first_leaf: 0,
                            last_leaf: 0,
                            keys: 0,
                            nodes: 0,
                            end: 0,
                        },
                        dirty: gen,
                        seen: gen,
                        kids: [0; MAX_KEYS + 1],
                        nkids: 0,
                    },
                );
            }
        }
        let img = cx.img;
        let (leaf, nk) = check_node(img, n, depth, cx.height, cx.bounds, lo, hi).ok()?;
        let mut kids = [0; MAX_KEYS + 1];
        let mut agg = Agg {
            first_leaf: n,
            last_leaf: n,
            keys: 0,
            nodes: 1,
            end: n + NODE_BYTES,
        };
        let nkids = if leaf {
            check_link(img, *prev_leaf, n).ok()?;
            *prev_leaf = n;
            for (i, kid) in kids.iter_mut().enumerate().take(nk) {
                let (_, item) = check_entry(img, n, i, cx.ib, cx.bounds).ok()?;
                match self.items.insert(item, (n, gen)) {
                    Some((_, g)) if g == gen => return None, // shared item
                    _ => {}
                }
                *kid = item;
                agg.end = agg.end.max(item + cx.ib);
            }
            agg.keys = nk as u64;
            nk
        } else {
            for (i, kid) in kids.iter_mut().enumerate().take(nk + 1) {
                let (c, clo, chi) = child(img, n, nk, i, lo, hi);
                let below = Place {
                    depth: depth + 1,
                    lo: clo,
                    hi: chi,
                    parent: n,
                };
                let a = self.visit(cx, c, below, prev_leaf)?;
                if i == 0 {
                    agg.first_leaf = a.first_leaf;
                }
                agg.last_leaf = a.last_leaf;
                agg.keys += a.keys;
                agg.nodes += a.nodes;
                agg.end = agg.end.max(a.end);
                *kid = c;
            }
            nk + 1
        };
        let e = self.nodes.get_mut(&n)?;
        (e.parent, e.depth, e.lo, e.hi, e.leaf, e.agg) = (parent, depth, lo, hi, leaf, agg);
        (e.kids, e.nkids) = (kids, nkids);
        Some(agg)
    }

    /// Forget the nodes and items that left the tree: children and items
    /// a re-read node had before that this walk did not reach, and
    /// (recursively) theirs. Any that left has such an ancestor, as the
    /// subtrees the walk skipped are whole in the new tree.
    fn sweep(&mut self) {
        let gen = self.gen;
        while let Some(c) = self.gone_nodes.pop() {
            if self.nodes.get(&c).is_some_and(|e| e.seen != gen) {
                let e = self.nodes.remove(&c).expect("present");
                let gone = if e.leaf {
                    &mut self.gone_items
                } else {
                    &mut self.gone_nodes
                };
                gone.extend_from_slice(&e.kids[..e.nkids]);
            }
        }
        for it in self.gone_items.drain(..) {
            if self.items.get(&it).is_some_and(|&(_, g)| g != gen) {
                self.items.remove(&it);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let a = args(ib, 200, 300, 0.5);
            let (img, _) = run_direct(&INFO, &a, 300);
            assert!(check(&img, BASE, ib).unwrap() > 300);
            let root = BASE + ROOT_OFFSET;
            let r = img.read_u64(root + TREE_ROOT);
            let mut leaf = img.read_u64(ptr_at(r, 0));
            while img.read_u64(leaf + META) & LEAF_FLAG == 0 {
                leaf = img.read_u64(ptr_at(leaf, 0));
            }
            let item = img.read_u64(ptr_at(leaf, 2));
            assert_detects(&INFO, &img, item + 16, ib); // torn item
            assert_detects(&INFO, &img, key_at(leaf, 3), ib); // key order / item key
            assert_detects(&INFO, &img, ptr_at(leaf, NEXT_LEAF), ib); // leaf chain
            assert_detects(&INFO, &img, ptr_at(r, 1), ib); // child pointer
            assert_detects(&INFO, &img, leaf + META, ib); // fanout / count
            assert_detects(&INFO, &img, root + COUNT, ib);
        }
    }

    /// Insert: heap cursor, item, count, the shifted leaf words and the key
    /// count (no split: at most 2 x 15 + 1 words), more on a split; update:
    /// one field and the seal.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 1024] {
            let t = tx_stores(&INFO, &args(ib, 1000, 600, 0.5), 600);
            let w = ib as usize / 8;
            let ins: Vec<usize> = t.iter().map(|x| x.0).filter(|&s| s != w).collect();
            assert!(ins.len() > 200 && ins.len() < 400);
            assert!(ins.iter().all(|&s| s >= w + 5), "{ins:?}");
            let no_split = ins.iter().filter(|&&s| s <= w + 2 + 31).count();
            assert!(no_split * 10 > ins.len() * 8, "most inserts do not split");
        }
    }

    /// The incremental checker along a lineage of prefix images (steps
    /// back and forth, jumps, rebuilds) passes every image the full
    /// checker passes, and never passes a corrupted image the full checker
    /// fails.
    #[test]
    fn incremental_checker_agrees_with_the_full_one() {
        use crate::mem::MemWrite;
        use crate::workloads::{IncrementalCheck, Op};
        use rand::Rng;
        for ib in [64, 1024] {
            let n = 500;
            let a = args(ib, 40, n, 0.3);
            let mut img = crate::mem::SparseImage::new();
            let mut wl = (INFO.build)(&a);
            with_ctx(&mut img, false, |ctx| wl.setup(ctx));
            // Per transaction: (word, value before, value after).
            let mut txs: Vec<Vec<(Addr, u64, u64)>> = Vec::new();
            for _ in 0..n {
                let before = img.clone();
                let (_, ops) = with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
                txs.push(
                    ops.iter()
                        .filter_map(|o| match *o {
                            Op::Store { addr, value } => Some((addr, before.read_u64(addr), value)),
                            _ => None,
                        })
                        .collect(),
                );
            }
            let mut at = n as usize; // img is the image of prefix `at`
            let mut inc = Incremental::default();
            let mut r = crate::workloads::rng(11);
            let mut changed: Option<Vec<Addr>> = None;
            let mut caught = 0;
            for step in 0..1500 {
                let to = match step % 10 {
                    0 => r.gen_range(0..=n as usize),
                    1..=3 => at.saturating_sub(1),
                    _ => (at + 1).min(n as usize),
                };
                let ch = changed.get_or_insert_with(Vec::new);
                while at < to {
                    for &(w, _, v) in &txs[at] {
                        img.write_u64(w, v);
                        ch.push(w);
                    }
                    at += 1;
                }
                while at > to {
                    at -= 1;
                    for &(w, old, _) in txs[at].iter().rev() {
                        img.write_u64(w, old);
                        ch.push(w);
                    }
                }
                assert!(check(&img, BASE, ib).is_ok());
                assert!(
                    inc.passes(&img, BASE, ib, changed.as_deref()),
                    "ib {ib} step {step}: prefix {at} not shown"
                );
                changed = Some(Vec::new());
                if step % 3 == 0 {
                    // A word the run wrote (structure) or any heap word.
                    let w = if step % 2 == 0 {
                        let t = &txs[r.gen_range(0..n as usize)];
                        t[r.gen_range(0..t.len())].0
                    } else {
                        let (lo, hi) = heap_bounds(&img, BASE).unwrap();
                        lo + r.gen_range(0..(hi - lo) / 8) * 8
                    };
                    let old = img.read_u64(w);
                    img.write_u64(w, old ^ (1 << r.gen_range(0..64)));
                    let full = check(&img, BASE, ib).is_ok();
                    caught += usize::from(!full);
                    if inc.passes(&img, BASE, ib, Some(&[w])) {
                        assert!(full, "ib {ib} step {step}: corruption at {w:#x} passed");
                        changed.as_mut().unwrap().push(w);
                    }
                    img.write_u64(w, old);
                }
            }
            assert!(caught > 100, "{caught} corruptions caught");
            assert!(
                inc.from_scratch < 600,
                "{} walks from scratch",
                inc.from_scratch
            );
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("btree", 2, 300, &[]);
    }
}
