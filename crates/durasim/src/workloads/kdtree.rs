//! kd-tree build and exact nearest-neighbour search, FLANN-style (the
//! dual-page checkpointing paper's Table 5 "Flann": FLANN's kd-tree over
//! 3D points, as point-cloud libraries use it), for as long as the run
//! lasts.
//!
//! Data: N points in [0, 1)^3 and N / 8 query points, uniform, from the
//! seed (f64). Build: Bentley's insertion (CACM 1975): point i descends
//! from the root, comparing coordinate `depth mod 3` (left if smaller),
//! and hangs where it falls off; FLANN builds its single kd-tree top down
//! by splitting at the mean of the highest-variance dimension instead,
//! which needs whole-subtree partition passes per operation; insertion
//! builds the same kind of tree with bounded operations. Query: exact
//! 1-NN search with backtracking (FLANN with unlimited checks): descend to
//! the query's side first, visit the far side only while the splitting
//! plane is no farther than the best distance. No transactions: one
//! operation inserts 8 points or answers 2 queries.
//!
//! Layout: root = { n, q, nodes, queries, results, inserted, queries_done,
//! seed }; node i = point i = { x, y, z, left, right } (ids, NIL = all
//! ones); query = 3 words; result = { id, squared distance }.
//!
//! Checker (final image alone): the points and queries are the seed's; the
//! inserted points form one tree from node 0 in which every node lies on
//! its side of every ancestor's plane, and the rest are unlinked; every
//! answered query's result equals brute force (id and distance).

use super::labels::Label;
use super::program::points::{Root, Shape, INSERTED, QDONE};
use super::program::{footprint_bytes, load_f64_dep, read_f64, store_f64};
use super::{rng, TxCtx, Workload, WorkloadArgs, WorkloadInfo, ROOT_OFFSET};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "kdtree",
    description: "3D kd-tree: build by insertion, then exact nearest-neighbour queries with backtracking (FLANN-style); no transactions (DPC Table 5 Flann); 45 B/point, 40-47 loads/store",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::PROGRAM,
};

const D: u64 = 3;
const NODE_WORDS: u64 = D + 2;
const LEFT: u64 = D * 8;
const RIGHT: u64 = D * 8 + 8;
const NIL: u64 = u64::MAX;
const INSERTS_PER_OP: u64 = 8;
const QUERIES_PER_OP: u64 = 2;
/// Answered queries the checker compares with brute force at most.
const CHECK_SAMPLE: u64 = 256;

const SHAPE: Shape = Shape {
    name: "kdtree",
    noun: "points",
    dims: D,
    node_words: NODE_WORDS,
    result_words: 2,
    query_count,
};

fn generate(n: u64, q: u64, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = rng(seed ^ 0x006b_d7ee);
    let p = (0..n * D).map(|_| r.gen::<f64>()).collect();
    let qs = (0..q * D).map(|_| r.gen::<f64>()).collect();
    (p, qs)
}

fn query_count(n: u64) -> u64 {
    (n / 8).max(16)
}

#[inline]
fn dist2(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..D as usize {
        let d = a[i] - b[i];
        s += d * d;
    }
    s
}

/// Brute force: the (squared distance, id) minimum over `points`.
fn brute_force(points: &[f64], q: &[f64]) -> (f64, u64) {
    let mut best = (f64::INFINITY, NIL);
    for (i, p) in points.chunks_exact(D as usize).enumerate() {
        let d = dist2(p, q);
        if (d, i as u64) < best {
            best = (d, i as u64);
        }
    }
    best
}

struct KdTree {
    root: Addr,
    n: u64,
    q: u64,
    seed: u64,
    nodes: Addr,
    queries: Addr,
    results: Addr,
    /// Backtracking stack (reused): (node, depth, plane distance bound).
    stack: Vec<(u64, u64, f64)>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    let per = NODE_WORDS * 8 + (D + 2) * 8 / 8;
    let n = (footprint_bytes(a) / per).max(64);
    Box::new(KdTree {
        root: a.region_base + ROOT_OFFSET,
        n,
        q: query_count(n),
        seed: a.seed,
        nodes: 0,
        queries: 0,
        results: 0,
        stack: Vec::new(),
    })
}

impl KdTree {
    fn node(&self, i: u64) -> Addr {
        self.nodes + i * NODE_WORDS * 8
    }

    fn insert(&self, ctx: &mut TxCtx, i: u64) {
        let p = self.node(i);
        let mut pt = [0.0; D as usize];
        for (j, x) in pt.iter_mut().enumerate() {
            *x = f64::from_bits(ctx.load(p + j as u64 * 8));
        }
        let (mut v, mut depth) = (0u64, 0u64);
        loop {
            let dim = depth % D;
            let split = load_f64_dep(ctx, self.node(v) + dim * 8);
            let side = if pt[dim as usize] < split {
                LEFT
            } else {
                RIGHT
            };
            let child = ctx.load(self.node(v) + side);
            ctx.compute(3);
            if child == NIL {
                ctx.store(self.node(v) + side, i);
                return;
            }
            v = child;
            depth += 1;
        }
    }

    fn nearest(&mut self, ctx: &mut TxCtx, q: &[f64; D as usize]) -> (f64, u64) {
        let mut best = (f64::INFINITY, NIL);
        self.stack.clear();
        self.stack.push((0, 0, 0.0));
        while let Some((v, depth, bound)) = self.stack.pop() {
            // Strictly farther planes only: an equally distant point with a
            // smaller id may still be there (ties resolve as brute force).
            if v == NIL || bound > best.0 {
                continue;
            }
            let node = self.node(v);
            let mut pt = [0.0; D as usize];
            for (j, x) in pt.iter_mut().enumerate() {
                *x = load_f64_dep(ctx, node + j as u64 * 8);
            }
            let d = dist2(&pt, q);
            if (d, v) < best {
                best = (d, v);
            }
            let dim = (depth % D) as usize;
            let diff = q[dim] - pt[dim];
            let (near, far) = if diff < 0.0 {
                (LEFT, RIGHT)
            } else {
                (RIGHT, LEFT)
            };
            let far_child = ctx.load(node + far);
            let near_child = ctx.load(node + near);
            ctx.compute(12);
            self.stack
                .push((far_child, depth + 1, bound.max(diff * diff)));
            self.stack.push((near_child, depth + 1, bound));
        }
        best
    }
}

impl Workload for KdTree {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let (p, qs) = generate(self.n, self.q, self.seed);
        // Node 0 is the root; every node starts childless.
        (self.nodes, self.queries, self.results) =
            SHAPE.setup(ctx, self.root, self.seed, (&p, &qs), |ctx, node| {
                ctx.store(node + LEFT, NIL);
                ctx.store(node + RIGHT, NIL);
            });
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let r = self.root;
        let inserted = ctx.load(r + INSERTED);
        if inserted < self.n {
            let end = (inserted + INSERTS_PER_OP).min(self.n);
            for i in inserted..end {
                self.insert(ctx, i);
            }
            ctx.store(r + INSERTED, end);
            return;
        }
        let done = ctx.load(r + QDONE);
        for k in 0..QUERIES_PER_OP {
            let slot = (done + k) % self.q;
            let mut qv = [0.0; D as usize];
            for (j, x) in qv.iter_mut().enumerate() {
                *x = f64::from_bits(ctx.load(self.queries + (slot * D + j as u64) * 8));
            }
            let (d, id) = self.nearest(ctx, &qv);
            ctx.store(self.results + slot * 16, id);
            store_f64(ctx, self.results + slot * 16 + 8, d);
        }
        ctx.store(r + QDONE, done + QUERIES_PER_OP);
    }
}

fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    let Root {
        n,
        q,
        nodes,
        results,
        inserted,
        done,
        seed,
        ..
    } = SHAPE.check_root(img, region_base)?;
    let (p, qs) = generate(n, q, seed);
    let node = |i: u64| nodes + i * NODE_WORDS * 8;
    for i in 0..n {
        for j in 0..D {
            if read_f64(img, node(i) + j * 8).to_bits() != p[(i * D + j) as usize].to_bits() {
                return Err(format!(
                    "kdtree: point {i} coordinate {j} is not the seed's data"
                ));
            }
        }
    }
    // One tree over exactly the inserted points, each inside its box.
    let mut seen = vec![false; n as usize];
    let mut stack = vec![(
        0u64,
        0u64,
        [f64::NEG_INFINITY; D as usize],
        [f64::INFINITY; D as usize],
    )];
    let mut reached = 0;
    while let Some((v, depth, lo, hi)) = stack.pop() {
        if v >= inserted || seen[v as usize] {
            return Err(format!(
                "kdtree: node {v} linked twice or not yet inserted ({inserted} inserted)"
            ));
        }
        seen[v as usize] = true;
        reached += 1;
        let pt = &p[(v * D) as usize..((v + 1) * D) as usize];
        for j in 0..D as usize {
            if !(pt[j] >= lo[j] && pt[j] < hi[j]) {
                return Err(format!(
                    "kdtree: point {v} lies on the wrong side of an ancestor's plane"
                ));
            }
        }
        let dim = (depth % D) as usize;
        for (side, is_left) in [(LEFT, true), (RIGHT, false)] {
            let c = img.read_u64(node(v) + side);
            if c == NIL {
                continue;
            }
            let (mut l2, mut h2) = (lo, hi);
            if is_left {
                h2[dim] = pt[dim];
            } else {
                l2[dim] = pt[dim];
            }
            stack.push((c, depth + 1, l2, h2));
        }
    }
    if reached != inserted {
        return Err(format!(
            "kdtree: {reached} of the {inserted} inserted points are in the tree"
        ));
    }
    for i in inserted..n {
        if img.read_u64(node(i) + LEFT) != NIL || img.read_u64(node(i) + RIGHT) != NIL {
            return Err(format!(
                "kdtree: point {i} is not inserted but has children"
            ));
        }
    }
    for s in 0..done.min(q).min(CHECK_SAMPLE) {
        let (d, id) = brute_force(&p, &qs[(s * D) as usize..((s + 1) * D) as usize]);
        let (gid, gd) = (
            img.read_u64(results + s * 16),
            read_f64(img, results + s * 16 + 8),
        );
        if gid != id || gd.to_bits() != d.to_bits() {
            return Err(format!(
                "kdtree query {s}: result point {gid} at {gd}, brute force finds {id} at {d}"
            ));
        }
    }
    Ok(n)
}

/// [`super::labels::DescribeFn`]: the root, a node's coordinate or child
/// link, a query, a result's id or squared distance.
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    fn node_word(j: u64) -> String {
        match j {
            j if j < D => ["x", "y", "z"][j as usize].into(),
            j if j == D => "left".into(),
            _ => "right".into(),
        }
    }
    fn result_word(j: u64) -> String {
        ["id", "squared distance"]
            .get(j as usize)
            .map_or_else(|| format!("word {j}"), |s| (*s).into())
    }
    SHAPE.describe(img, region_base, addr, node_word, result_word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::program::points::{N, NODES, NQ, RESULTS};
    use crate::workloads::testutil::*;

    #[test]
    fn build_and_exact_queries_pass_and_corruption_is_detected() {
        let a = args(64, 512, 0, 0.5);
        let (img, _) = run_direct(&INFO, &a, 0);
        let r = BASE + ROOT_OFFSET;
        let (n, q) = (img.read_u64(r + N), img.read_u64(r + NQ));
        let build_ops = (n - 1).div_ceil(INSERTS_PER_OP);
        let (mid, _) = run_direct(&INFO, &a, build_ops / 2);
        assert_eq!(check(&mid, BASE, 64), Ok(n));
        let (img, _) = run_direct(&INFO, &a, build_ops + q.div_ceil(QUERIES_PER_OP));
        assert!(img.read_u64(r + QDONE) >= q);
        assert_eq!(check(&img, BASE, 64), Ok(n));
        let (nodes, results) = (img.read_u64(r + NODES), img.read_u64(r + RESULTS));
        assert_detects(&INFO, &img, nodes + 9 * NODE_WORDS * 8 + 8, 64); // a coordinate
                                                                         // A child link moved to another subtree's node.
        let v = (0..n)
            .find(|&v| img.read_u64(nodes + v * NODE_WORDS * 8 + LEFT) != NIL)
            .unwrap();
        assert_detects(&INFO, &img, nodes + v * NODE_WORDS * 8 + LEFT, 64);
        assert_detects(&INFO, &img, results + 3 * 16, 64); // a result id
        assert_detects(&INFO, &img, results + 5 * 16 + 8, 64); // a distance
    }
}
