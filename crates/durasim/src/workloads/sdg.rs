//! SDG (MorLog Table IV, after the NV-heaps / DHTM micro-benchmark):
//! edge insertions into a persistent adjacency-list graph. The edges come
//! from an SSCA2-style scalable data generator (Bader & Madduri, SSCA#2
//! v2 "graph analysis" benchmark, its first kernel's generator): vertices
//! are randomly permuted and grouped into cliques whose sizes follow a
//! power law (P(size >= k) = k^-2, capped at sqrt(vertices): SSCA2's own
//! cap, MaxCliqueSize = 2^(SCALE/3), bounds the degree too tightly for a
//! power law to show; modelling choice); every ordered pair inside a
//! clique is an edge, and each vertex also links to the vertices at
//! distances 1, 2, 4, ... with a probability that halves at each doubling
//! (SSCA2's inter-clique edges). The edge list is shuffled (the order
//! edges arrive in) and transaction k inserts edge k (cycling past the
//! end, as a multigraph: SSCA2 also allows parallel edges).
//!
//! `workload.initial_items` is the vertex count; the graph starts empty.
//! An insert allocates an edge node (an item with key `src << 32 | dst`
//! and a generated weight payload, then a next pointer), links it at the
//! head of the source's list and bumps the source's degree and the edge
//! count: heap cursor + item_bytes / 8 + 4 stores.
//!
//! Values: the edge's weight item from the value model (`workload.values`,
//! workloads/values.rs); vertex links, degrees and counts are the
//! structure's own.
//!
//! Layout: root = { n_vertices, vertices_ptr, n_edges }; vertex = { head,
//! degree } (16 B); edge node = { item (item_bytes) | next }.

use super::labels::{self, Heap, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, rng, with_item_bytes, write_item, TxCtx,
    Workload, WorkloadArgs, WorkloadInfo, DEFAULT_ITEM_BYTES, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "sdg",
    description: "edge insertions into a persistent adjacency-list graph, SSCA2-style power-law cliques (MorLog Table IV SDG)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::GROWING,
};

const N_VERTICES: u64 = 0;
const VERTICES: u64 = 8;
const N_EDGES: u64 = 16;
const V_HEAD: u64 = 0;
const V_DEGREE: u64 = 8;
const VERTEX_BYTES: u64 = 16;
/// Probability of the distance-1 inter-clique edge (halving per doubling
/// of the distance): SSCA2 v2 `ProbInterClEdges` = 0.5.
const PROB_INTER_CLIQUE: f64 = 0.5;

/// Largest clique: sqrt(vertices) (modelling choice, see the module doc).
pub fn max_clique_size(vertices: u64) -> u64 {
    ((vertices as f64).sqrt() as u64).max(2)
}

/// The generator: directed edges (src, dst) over `vertices` vertices,
/// shuffled. Deterministic in `seed`.
pub fn generate(vertices: u64, seed: u64) -> Vec<(u32, u32)> {
    let n = vertices.max(2) as usize;
    let mut r = rng(seed ^ 0x5d9_55ca2);
    let mut perm: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        perm.swap(i, r.gen_range(0..=i));
    }
    let max = max_clique_size(n as u64) as usize;
    let mut edges = Vec::new();
    let mut start = 0;
    while start < n {
        // Power-law clique size: P(S >= k) = k^-2 (inverse transform).
        let u: f64 = r.gen();
        let s = ((1.0 / (1.0 - u).sqrt()) as usize)
            .clamp(1, max)
            .min(n - start);
        for a in start..start + s {
            for b in start..start + s {
                if a != b {
                    edges.push((perm[a], perm[b]));
                }
            }
        }
        start += s;
    }
    for i in 0..n {
        let (mut d, mut p) = (1, PROB_INTER_CLIQUE);
        while d < n {
            if r.gen_bool(p) {
                edges.push((perm[i], perm[(i + d) % n]));
            }
            d *= 2;
            p /= 2.0;
        }
    }
    for i in (1..edges.len()).rev() {
        edges.swap(i, r.gen_range(0..=i));
    }
    edges
}

struct Sdg {
    a: WorkloadArgs,
    root: Addr,
    vertices: Addr,
    edges: Vec<(u32, u32)>,
    next: usize,
}

fn node_bytes(ib: u64) -> u64 {
    ib + 8
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    let a = with_item_bytes(a, DEFAULT_ITEM_BYTES);
    Box::new(Sdg {
        root: a.region_base + ROOT_OFFSET,
        vertices: 0,
        edges: generate(a.initial_items, a.seed),
        next: 0,
        a,
    })
}

impl Workload for Sdg {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let n = self.a.initial_items.max(2);
        self.vertices = ctx.alloc(n * VERTEX_BYTES);
        ctx.store(self.root + N_VERTICES, n);
        ctx.store(self.root + VERTICES, self.vertices);
        ctx.store(self.root + N_EDGES, 0);
        for v in 0..n {
            ctx.store(self.vertices + v * VERTEX_BYTES + V_HEAD, 0);
            ctx.store(self.vertices + v * VERTEX_BYTES + V_DEGREE, 0);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let ib = self.a.item_bytes;
        let (src, dst) = self.edges[self.next];
        self.next = (self.next + 1) % self.edges.len();
        let vx = self.vertices + src as u64 * VERTEX_BYTES;
        let e = ctx.alloc(node_bytes(ib));
        let key = (src as u64) << 32 | dst as u64;
        let version = ctx.load(self.root + N_EDGES);
        // The weight payload is a function of (edge, arrival), so parallel
        // edges differ.
        write_item(ctx, self.a.vm(), e, ib, key, version & 0xffff_ffff);
        let head = ctx.load(vx + V_HEAD);
        ctx.store(e + ib, head);
        ctx.store(vx + V_HEAD, e);
        let d = ctx.load(vx + V_DEGREE);
        ctx.store(vx + V_DEGREE, d + 1);
        ctx.store(self.root + N_EDGES, version + 1);
    }
}

/// Out-degree of every vertex from the image; validates the graph.
pub(crate) fn degrees(
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
) -> Result<Vec<u64>, String> {
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let n = img.read_u64(root + N_VERTICES);
    let vertices = img.read_u64(root + VERTICES);
    let m = img.read_u64(root + N_EDGES);
    check_ptr(
        vertices,
        n.saturating_mul(VERTEX_BYTES),
        bounds,
        "sdg vertices",
    )?;
    if m > (bounds.1 - bounds.0) / node_bytes(ib) {
        return Err(format!("sdg: edge count {m} exceeds heap capacity"));
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut total = 0u64;
    for u in 0..n {
        let vx = vertices + u * VERTEX_BYTES;
        let degree = img.read_u64(vx + V_DEGREE);
        let mut e = img.read_u64(vx + V_HEAD);
        let mut d = 0u64;
        while e != 0 {
            d += 1;
            if d > degree || total + d > m {
                return Err(format!(
                    "sdg vertex {u}: more edges than its degree {degree} or the edge count {m}"
                ));
            }
            check_ptr(e, node_bytes(ib), bounds, "sdg edge")?;
            let key = check_item(img, e, ib).map_err(|x| format!("sdg vertex {u}: {x}"))?;
            if key >> 32 != u || key & 0xffff_ffff >= n {
                return Err(format!(
                    "sdg vertex {u}: edge {} -> {} does not start here or ends outside the graph",
                    key >> 32,
                    key & 0xffff_ffff
                ));
            }
            e = img.read_u64(e + ib);
        }
        if d != degree {
            return Err(format!("sdg vertex {u}: degree {degree}, {d} edges linked"));
        }
        total += d;
        out.push(d);
    }
    if total != m {
        return Err(format!("sdg: edge count {m}, {total} edges linked"));
    }
    Ok(out)
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    Ok(degrees(img, region_base, item_bytes)?.iter().sum())
}

/// [`super::labels::DescribeFn`]: the root's words, a vertex's field, an
/// edge node's weight item or next link (found along its source's list).
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word(
        "sdg",
        region_base,
        addr,
        &["vertex count", "vertex array pointer", "edge count"],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let heap = Heap::of(img, region_base)?;
    let n = img.read_u64(root + N_VERTICES);
    let vertices = img.read_u64(root + VERTICES);
    if !heap.holds(vertices, n.saturating_mul(VERTEX_BYTES)) {
        return None;
    }
    if let Some((v, off)) = labels::array_slot(addr, vertices, VERTEX_BYTES, n) {
        let field = labels::word_field(&["head (newest edge)", "degree"], off);
        return Some(Label::new(
            format!("sdg vertex {v}"),
            vertices + v * VERTEX_BYTES,
            field,
        ));
    }
    (0..n).find_map(|v| {
        let first = img.read_u64(vertices + v * VERTEX_BYTES + V_HEAD);
        let (e, pos) = labels::find_in_list(img, heap, first, node_bytes(ib), ib, addr)?;
        let off = addr - e;
        let field = if off < ib {
            labels::item_field(off)
        } else {
            "next".into()
        };
        let dst = img.read_u64(e) & 0xffff_ffff;
        Some(Label::new(
            format!("sdg edge node ({v} -> {dst}, list position {pos})"),
            e,
            field,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    /// The generator's out-degrees are heavy-tailed: the largest is many
    /// times the mean (a uniform random graph of the same edge count has
    /// max/mean near 3 at this size), and cliques make edges reciprocal.
    #[test]
    fn generator_degree_distribution_is_heavy_tailed() {
        let n = 1u64 << 14;
        let edges = generate(n, 1);
        let mut deg = vec![0u64; n as usize];
        for &(s, d) in &edges {
            assert_ne!(s, d);
            deg[s as usize] += 1;
        }
        let mean = edges.len() as f64 / n as f64;
        let max = *deg.iter().max().unwrap() as f64;
        eprintln!(
            "sdg n={n}: {} edges, mean degree {mean:.2}, max {max}",
            edges.len()
        );
        assert!(max / mean >= 5.0, "max/mean degree {max}/{mean:.2}");
        // Power law: the share of vertices with degree >= k falls off
        // roughly as a power of k, not exponentially.
        let share = |k: u64| deg.iter().filter(|&&d| d >= k).count() as f64 / n as f64;
        assert!(share(8) > 0.01 && share(8) < share(2));
        assert_eq!(generate(n, 1), edges, "deterministic");
    }

    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 4096] {
            let t = tx_stores(&INFO, &args(ib, 256, 200, 0.5), 200);
            assert!(t.iter().all(|&(w, _)| w as u64 == ib / 8 + 5));
        }
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let (img, _) = run_direct(&INFO, &args(ib, 256, 300, 0.5), 300);
            assert_eq!(check(&img, BASE, ib).unwrap(), 300);
            let root = BASE + ROOT_OFFSET;
            let vertices = img.read_u64(root + VERTICES);
            let u = (0..)
                .find(|&u| img.read_u64(vertices + u * VERTEX_BYTES) != 0)
                .unwrap();
            let vx = vertices + u * VERTEX_BYTES;
            let e = img.read_u64(vx + V_HEAD);
            assert_detects(&INFO, &img, e + 16, ib); // torn edge
            assert_detects(&INFO, &img, e, ib); // edge key
            assert_detects(&INFO, &img, vx + V_HEAD, ib);
            assert_detects(&INFO, &img, vx + V_DEGREE, ib);
            assert_detects(&INFO, &img, root + N_EDGES, ib);
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("sdg", 2, 300, &[]);
    }
}
