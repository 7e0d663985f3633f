//! Approximate nearest-neighbour search (the dual-page checkpointing
//! paper's Table 5 "Ann"): a navigable small-world graph (NSW; Malkov et
//! al., Information Systems 2014 — the single-layer graph that HNSW's
//! bottom layer is) built by inserting generated vectors one by one, then
//! k-NN queries against it, for as long as the run lasts.
//!
//! Data: N vectors of D = 16 f64 from a Gaussian mixture (sqrt(N) centres
//! uniform in [0, 1)^D, sigma 0.05), and N / 16 queries from the same
//! mixture, generated from the seed. Build: inserting vector i runs a beam
//! search (ef = EF_CONSTRUCTION) from vertex 0 over the graph of vectors
//! < i, links i to the M closest found, and adds i to each of their lists
//! (a full list keeps its MMAX closest). Query: a beam search (ef =
//! EF_SEARCH), the K closest found written to the query's result slot
//! (ids and distances). No transactions: one operation inserts one vector
//! or answers one query.
//!
//! Layout: root = { n, q, nodes, queries, results, inserted, queries_done,
//! seed }; node = { vector (D), degree, neighbours (MMAX) } (33 words);
//! query = D words; result = K ids then K distances.
//!
//! Checker (final image alone): the vectors and queries are the seed's;
//! every list holds distinct earlier-inserted vertices, at most MMAX; each
//! answered query's results are distinct, sorted, their distances
//! recomputed exactly; and recall@K of the (up to 64) answered queries
//! against brute force is at least RECALL_BOUND.

use super::labels::Label;
use super::program::points::{Root, Shape, INSERTED, N, NODES, NQ, QDONE, RESULTS, SEED};
use super::program::{dist2_ctx, dist2_img, footprint_bytes, load_f64, normal, read_f64};
use super::{rng, TxCtx, Workload, WorkloadArgs, WorkloadInfo, ROOT_OFFSET};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;
use rustc_hash::FxHashSet;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "ann",
    description: "approximate k-NN: navigable small-world graph (NSW) build by insertion, then beam-search queries over generated vectors; no transactions (DPC Table 5 Ann); 282 B/vector, ~200 loads/store",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::PROGRAM,
};

/// Vector dimensions (modelling choice: small enough that the simulated
/// distance loops stay fast; the structure of the search does not depend
/// on it).
pub const D: usize = 16;
/// Links made per insertion and list capacity (hnswlib's layer-0 rule
/// MMAX = 2M; M = 8 is a modelling choice, half of hnswlib's default 16,
/// for simulation speed).
pub const M: usize = 8;
pub const MMAX: usize = 2 * M;
/// Beam widths of construction and search (modelling choice).
pub const EF_CONSTRUCTION: usize = 32;
pub const EF_SEARCH: usize = 48;
/// Neighbours returned per query.
pub const K: usize = 10;
/// The checker's recall@K floor (modelling choice: well below what a
/// working NSW reaches at these settings, see the unit test's output; a
/// broken graph or search falls far below).
pub const RECALL_BOUND: f64 = 0.9;
/// Queries the checker compares with brute force at most.
const RECALL_SAMPLE: u64 = 64;

const NODE_WORDS: u64 = D as u64 + 1 + MMAX as u64;
const RESULT_WORDS: u64 = 2 * K as u64;

const SHAPE: Shape = Shape {
    name: "ann",
    noun: "vectors",
    dims: D as u64,
    node_words: NODE_WORDS,
    result_words: RESULT_WORDS,
    query_count,
};

/// The seed's data: (vectors, queries), row-major.
fn generate(n: u64, q: u64, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = rng(seed ^ 0x0a22_5eed);
    let k = ((n as f64).sqrt() as usize).max(2);
    let centres: Vec<f64> = (0..k * D).map(|_| r.gen::<f64>()).collect();
    let mut draw = |count: u64| -> Vec<f64> {
        let mut out = Vec::with_capacity(count as usize * D);
        for _ in 0..count {
            let c = r.gen_range(0..k);
            for j in 0..D {
                out.push(centres[c * D + j] + 0.05 * normal(&mut r));
            }
        }
        out
    };
    let v = draw(n);
    let qs = draw(q);
    (v, qs)
}

fn query_count(n: u64) -> u64 {
    (n / 16).max(16)
}

struct Ann {
    root: Addr,
    n: u64,
    q: u64,
    seed: u64,
    nodes: Addr,
    queries: Addr,
    results: Addr,
    /// Search scratch, reused (no allocation per operation).
    visited: FxHashSet<u64>,
    cand: BinaryHeap<Reverse<(u64, u64)>>,
    best: BinaryHeap<(u64, u64)>,
    found: Vec<(u64, u64)>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    // Bytes per vector: its node plus its share of queries and results.
    let per = NODE_WORDS * 8 + (D as u64 + RESULT_WORDS) * 8 / 16;
    let n = (footprint_bytes(a) / per).max(64);
    Box::new(Ann {
        root: a.region_base + ROOT_OFFSET,
        n,
        q: query_count(n),
        seed: a.seed,
        nodes: 0,
        queries: 0,
        results: 0,
        visited: FxHashSet::default(),
        cand: BinaryHeap::new(),
        best: BinaryHeap::new(),
        found: Vec::new(),
    })
}

/// Distances are compared as their bit patterns (non-negative f64 order).
#[inline]
fn key(d: f64) -> u64 {
    d.to_bits()
}

impl Ann {
    fn node(&self, i: u64) -> Addr {
        self.nodes + i * NODE_WORDS * 8
    }

    /// Beam search over vertices `< limit` from vertex 0: leaves the `ef`
    /// closest found in `self.best` (a max-heap of (distance bits, id)).
    fn search(&mut self, ctx: &mut TxCtx, q: &[f64; D], ef: usize) {
        self.visited.clear();
        self.cand.clear();
        self.best.clear();
        let d0 = key(dist2_ctx(ctx, self.node(0), q));
        self.visited.insert(0);
        self.cand.push(Reverse((d0, 0)));
        self.best.push((d0, 0));
        while let Some(Reverse((d, v))) = self.cand.pop() {
            if self.best.len() >= ef && d > self.best.peek().unwrap().0 {
                break;
            }
            let node = self.node(v);
            let deg = ctx.load(node + D as u64 * 8);
            for j in 0..deg.min(MMAX as u64) {
                let u = ctx.load(node + (D as u64 + 1 + j) * 8);
                if !self.visited.insert(u) {
                    continue;
                }
                let du = key(dist2_ctx(ctx, self.node(u), q));
                if self.best.len() < ef || du < self.best.peek().unwrap().0 {
                    self.cand.push(Reverse((du, u)));
                    self.best.push((du, u));
                    if self.best.len() > ef {
                        self.best.pop();
                    }
                }
            }
            ctx.compute(4 * deg as u32 + 8);
        }
    }

    fn load_vec(ctx: &mut TxCtx, p: Addr) -> [f64; D] {
        let mut v = [0.0; D];
        for (j, x) in v.iter_mut().enumerate() {
            *x = load_f64(ctx, p + j as u64 * 8);
        }
        v
    }

    /// Link `u` into `v`'s list (`v` at squared distance `d` from `u`):
    /// append, or replace the farthest when the list is full and `u` is
    /// closer.
    fn link(&self, ctx: &mut TxCtx, v: u64, u: u64, d: f64) {
        let node = self.node(v);
        let deg = ctx.load(node + D as u64 * 8);
        if deg < MMAX as u64 {
            ctx.store(node + (D as u64 + 1 + deg) * 8, u);
            ctx.store(node + D as u64 * 8, deg + 1);
            return;
        }
        let vv = Self::load_vec(ctx, node);
        let (mut far, mut far_d) = (0, d);
        for j in 0..MMAX as u64 {
            let w = ctx.load(node + (D as u64 + 1 + j) * 8);
            let dw = dist2_ctx(ctx, self.node(w), &vv);
            if dw > far_d {
                (far, far_d) = (j, dw);
            }
        }
        if far_d > d {
            ctx.store(node + (D as u64 + 1 + far) * 8, u);
        }
    }
}

impl Workload for Ann {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let (v, qs) = generate(self.n, self.q, self.seed);
        // Vertex 0 is the entry point.
        (self.nodes, self.queries, self.results) =
            SHAPE.setup(ctx, self.root, self.seed, (&v, &qs), |_, _| {});
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let r = self.root;
        let inserted = ctx.load(r + INSERTED);
        if inserted < self.n {
            let i = inserted;
            let v = Self::load_vec(ctx, self.node(i));
            self.search(ctx, &v, EF_CONSTRUCTION);
            let mut found = std::mem::take(&mut self.found);
            found.clear();
            found.extend(self.best.drain());
            found.sort_unstable();
            found.truncate(M);
            let node = self.node(i);
            for (j, &(_, u)) in found.iter().enumerate() {
                ctx.store(node + (D as u64 + 1 + j as u64) * 8, u);
            }
            ctx.store(node + D as u64 * 8, found.len() as u64);
            for &(d, u) in &found {
                self.link(ctx, u, i, f64::from_bits(d));
            }
            ctx.store(r + INSERTED, i + 1);
            self.found = found;
            return;
        }
        let done = ctx.load(r + QDONE);
        let slot = done % self.q;
        let qv = Self::load_vec(ctx, self.queries + slot * D as u64 * 8);
        self.search(ctx, &qv, EF_SEARCH);
        let mut found = std::mem::take(&mut self.found);
        found.clear();
        found.extend(self.best.drain());
        found.sort_unstable();
        found.truncate(K);
        let res = self.results + slot * RESULT_WORDS * 8;
        for (j, &(d, u)) in found.iter().enumerate() {
            ctx.store(res + j as u64 * 8, u);
            ctx.store(res + (K + j) as u64 * 8, d);
        }
        ctx.store(r + QDONE, done + 1);
        self.found = found;
    }
}

fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    let Root {
        n,
        q,
        nodes,
        queries,
        results,
        inserted,
        done,
        seed,
    } = SHAPE.check_root(img, region_base)?;
    let (v, qs) = generate(n, q, seed);
    let node = |i: u64| nodes + i * NODE_WORDS * 8;
    for i in 0..n {
        for j in 0..D as u64 {
            if read_f64(img, node(i) + j * 8).to_bits() != v[(i * D as u64 + j) as usize].to_bits()
            {
                return Err(format!(
                    "ann: vector {i} component {j} is not the seed's data"
                ));
            }
        }
        let deg = img.read_u64(node(i) + D as u64 * 8);
        if deg > MMAX as u64 || (i >= inserted && deg != 0) || (i > 0 && i < inserted && deg == 0) {
            return Err(format!(
                "ann: vertex {i} has {deg} neighbours ({inserted} inserted)"
            ));
        }
        let mut seen = [u64::MAX; MMAX];
        for j in 0..deg {
            let u = img.read_u64(node(i) + (D as u64 + 1 + j) * 8);
            if u >= inserted || u == i || seen.contains(&u) {
                return Err(format!(
                    "ann: vertex {i}'s neighbour {u} is not a distinct other inserted vertex"
                ));
            }
            seen[j as usize] = u;
        }
    }
    for (i, &x) in qs.iter().enumerate() {
        if read_f64(img, queries + i as u64 * 8).to_bits() != x.to_bits() {
            return Err(format!("ann: query word {i} is not the seed's data"));
        }
    }
    let answered = done.min(q);
    let (mut hits, mut checked) = (0u64, 0u64);
    for s in 0..answered {
        let res = results + s * RESULT_WORDS * 8;
        let qv = &qs[(s * D as u64) as usize..((s + 1) * D as u64) as usize];
        let mut ids = [0u64; K];
        let mut last = 0.0f64;
        for j in 0..K {
            let u = img.read_u64(res + j as u64 * 8);
            let d = read_f64(img, res + (K + j) as u64 * 8);
            if u >= n || ids[..j].contains(&u) {
                return Err(format!("ann query {s}: result {j} is vertex {u}"));
            }
            let want = dist2_img(img, node(u), qv);
            if d.to_bits() != want.to_bits() || d < last {
                return Err(format!(
                    "ann query {s}: result {j} (vertex {u}) has distance {d}, recomputed {want} (sorted after {last})"
                ));
            }
            ids[j] = u;
            last = d;
        }
        if s < RECALL_SAMPLE {
            let mut all: Vec<(u64, u64)> = (0..n)
                .map(|u| (key(dist2_img(img, node(u), qv)), u))
                .collect();
            all.select_nth_unstable(K - 1);
            hits += all[..K].iter().filter(|(_, u)| ids.contains(u)).count() as u64;
            checked += 1;
        }
    }
    if checked > 0 {
        let recall = hits as f64 / (checked * K as u64) as f64;
        if recall < RECALL_BOUND {
            return Err(format!(
                "ann: recall@{K} {recall:.3} over {checked} queries, below {RECALL_BOUND}"
            ));
        }
    }
    Ok(n)
}

/// Recall@K of the answered queries (tests and the README's measurement).
pub fn recall(img: &dyn MemRead, region_base: Addr) -> f64 {
    let r = region_base + ROOT_OFFSET;
    let (n, q, done) = (
        img.read_u64(r + N),
        img.read_u64(r + NQ),
        img.read_u64(r + QDONE),
    );
    let (nodes, results) = (img.read_u64(r + NODES), img.read_u64(r + RESULTS));
    let (_, qs) = generate(n, q, img.read_u64(r + SEED));
    let mut hits = 0;
    let m = done.min(q);
    for s in 0..m {
        let qv = &qs[(s * D as u64) as usize..((s + 1) * D as u64) as usize];
        let mut all: Vec<(u64, u64)> = (0..n)
            .map(|u| (key(dist2_img(img, nodes + u * NODE_WORDS * 8, qv)), u))
            .collect();
        all.select_nth_unstable(K - 1);
        let res = results + s * RESULT_WORDS * 8;
        let ids: Vec<u64> = (0..K as u64).map(|j| img.read_u64(res + j * 8)).collect();
        hits += all[..K].iter().filter(|(_, u)| ids.contains(u)).count();
    }
    hits as f64 / (m.max(1) * K as u64) as f64
}

/// [`super::labels::DescribeFn`]: the root, a node's vector coordinate,
/// degree or neighbour slot, a query, a result's id or distance.
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    fn node_word(j: u64) -> String {
        match j {
            j if j < D as u64 => format!("vector coordinate {j}"),
            j if j == D as u64 => "degree".into(),
            j => format!("neighbours[{}]", j - D as u64 - 1),
        }
    }
    fn result_word(j: u64) -> String {
        if j < K as u64 {
            format!("ids[{j}]")
        } else {
            format!("distances[{}]", j - K as u64)
        }
    }
    SHAPE.describe(img, region_base, addr, node_word, result_word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    /// Build then queries: recall is high, the checker accepts the build
    /// in progress and the answered queries, and rejects corrupted
    /// vectors, lists and results.
    #[test]
    fn build_and_queries_pass_and_corruption_is_detected() {
        let a = args(64, 1024, 0, 0.5); // 64 KiB: ~230 vectors
        let (img, _) = run_direct(&INFO, &a, 0);
        let r = BASE + ROOT_OFFSET;
        let (n, q) = (img.read_u64(r + N), img.read_u64(r + NQ));
        let (mid, _) = run_direct(&INFO, &a, n / 2);
        assert_eq!(check(&mid, BASE, 64), Ok(n));
        let (img, _) = run_direct(&INFO, &a, n - 1 + q);
        assert_eq!(img.read_u64(r + QDONE), q);
        assert_eq!(check(&img, BASE, 64), Ok(n));
        let rc = recall(&img, BASE);
        eprintln!("ann: {n} vectors, {q} queries, recall@{K} {rc:.3}");
        assert!(rc >= RECALL_BOUND, "recall {rc}");
        let nodes = img.read_u64(r + NODES);
        let results = img.read_u64(r + RESULTS);
        assert_detects(&INFO, &img, nodes + 5 * NODE_WORDS * 8 + 16, 64); // a vector
                                                                          // A link to itself.
        let mut bad = img.clone();
        crate::mem::MemWrite::write_u64(
            &mut bad,
            nodes + 5 * NODE_WORDS * 8 + (D as u64 + 1) * 8,
            5,
        );
        assert!(check(&bad, BASE, 64).is_err());
        assert_detects(&INFO, &img, results + 8, 64); // a result id
        assert_detects(&INFO, &img, results + (K as u64 + 2) * 8, 64); // a distance
        assert_detects(&INFO, &img, r + INSERTED, 64);
        // Results replaced by far-away vertices: recall collapses.
        let mut bad = img.clone();
        let qs = generate(n, q, img.read_u64(r + SEED)).1;
        for s in 0..q {
            let qv = &qs[(s * D as u64) as usize..((s + 1) * D as u64) as usize];
            let mut all: Vec<(u64, u64)> = (0..n)
                .map(|u| (key(dist2_img(&img, nodes + u * NODE_WORDS * 8, qv)), u))
                .collect();
            all.sort_unstable();
            let res = results + s * RESULT_WORDS * 8;
            for j in 0..K {
                let (d, u) = all[n as usize / 2 + j];
                crate::mem::MemWrite::write_u64(&mut bad, res + j as u64 * 8, u);
                crate::mem::MemWrite::write_u64(&mut bad, res + (K + j) as u64 * 8, d);
            }
        }
        let e = check(&bad, BASE, 64).unwrap_err();
        assert!(e.contains("recall"), "{e}");
    }
}
