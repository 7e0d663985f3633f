//! PageRank (the dual-page checkpointing paper's Table 5 "PR", run there on
//! GraphChi): power iteration on a generated R-MAT graph (program.rs),
//! pull style over the in-edge CSR: `rank'[v] = (1 - d) / n + d * (sum over
//! in-edges (u, v) of rank[u] / outdeg(u) + dangling / n)`, d = 0.85
//! (Page et al. 1998; GraphChi's default), where `dangling` is the rank
//! held by vertices without out-edges (spread evenly, so ranks keep
//! summing to one). Two rank arrays alternate by iteration; the program
//! iterates for as long as the run lasts. No transactions: one operation
//! computes the next rank of 16 vertices.
//!
//! Layout: root = { n, m, in_offsets, in_targets, outdeg, rank[0], rank[1],
//! iter, cursor, dangling, dangling_next }; every array holds 8-byte words
//! (ranks as f64). Footprint per vertex: 8 x (4 + edge factor) bytes.
//!
//! Checker (final image alone): the CSR is well formed, out-degrees match
//! the edge list, the last complete iteration's ranks sum to one (1e-6),
//! `dangling` is their dangling vertices' sum, and every rank of the
//! iteration in progress below the cursor equals its recomputation.

use super::labels::Label;
use super::program::{
    graph_vertices, load_f64, load_f64_dep, read_f64, rmat_edges, store_f64, Csr,
};
use super::{check_ptr, heap_bounds, TxCtx, Workload, WorkloadArgs, WorkloadInfo, ROOT_OFFSET};
use crate::mem::MemRead;
use crate::types::Addr;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "pagerank",
    description: "PageRank power iteration (pull, d = 0.85) on an R-MAT graph in CSR; no transactions (DPC Table 5 PR); 160 B/vertex, ~46 loads/store",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing {
        items_param: Some("workload.graph_vertices"),
        ..super::Sizing::PROGRAM
    },
};

/// Damping factor: Page et al. 1998 and GraphChi's PageRank (0.85).
pub const DAMPING: f64 = 0.85;
/// Vertices one operation updates (modelling choice: a few hundred memory
/// accesses per operation, like the transactional workloads).
const VERTICES_PER_OP: u64 = 16;

const N: u64 = 0;
const M: u64 = 8;
const OFFS: u64 = 16;
const TGTS: u64 = 24;
const OUTDEG: u64 = 32;
const RANK: u64 = 40; // rank[0]; rank[1] at 48
const ITER: u64 = 56;
const CURSOR: u64 = 64;
const DANGLING: u64 = 72;
const DANGLING_NEXT: u64 = 80;

struct PageRank {
    root: Addr,
    n: u64,
    edge_factor: u64,
    seed: u64,
    offs: Addr,
    tgts: Addr,
    outdeg: Addr,
    rank: [Addr; 2],
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    let ef = a.graph_edge_factor.max(1);
    Box::new(PageRank {
        root: a.region_base + ROOT_OFFSET,
        n: graph_vertices(a, 8 * (4 + ef)),
        edge_factor: ef,
        seed: a.seed,
        offs: 0,
        tgts: 0,
        outdeg: 0,
        rank: [0; 2],
    })
}

/// The constant part of a new rank: teleport plus the dangling share.
#[inline]
fn base_rank(n: u64, dangling: f64) -> f64 {
    (1.0 - DAMPING) / n as f64 + DAMPING * dangling / n as f64
}

impl Workload for PageRank {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let n = self.n;
        let edges = rmat_edges(n, n * self.edge_factor, self.seed);
        let csr = Csr::build(n, &edges, true, false);
        let mut outdeg = vec![0u64; n as usize];
        for &(u, _) in &edges {
            outdeg[u as usize] += 1;
        }
        drop(edges);
        (self.offs, self.tgts) = csr.store(ctx);
        self.outdeg = super::program::alloc_words(ctx, n);
        self.rank = [
            super::program::alloc_words(ctx, n),
            super::program::alloc_zeroed(ctx, n),
        ];
        let r0 = 1.0 / n as f64;
        let mut dangling = 0.0;
        for v in 0..n {
            ctx.store(self.outdeg + v * 8, outdeg[v as usize]);
            store_f64(ctx, self.rank[0] + v * 8, r0);
            if outdeg[v as usize] == 0 {
                dangling += r0;
            }
        }
        let r = self.root;
        for (off, v) in [
            (N, n),
            (M, csr.targets.len() as u64),
            (OFFS, self.offs),
            (TGTS, self.tgts),
            (OUTDEG, self.outdeg),
            (RANK, self.rank[0]),
            (RANK + 8, self.rank[1]),
            (ITER, 0),
            (CURSOR, 0),
            (DANGLING, dangling.to_bits()),
            (DANGLING_NEXT, 0f64.to_bits()),
        ] {
            ctx.store(r + off, v);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let (r, n) = (self.root, self.n);
        let iter = ctx.load(r + ITER);
        let cursor = ctx.load(r + CURSOR);
        let (src, dst) = (
            self.rank[(iter & 1) as usize],
            self.rank[(!iter & 1) as usize],
        );
        let base = base_rank(n, load_f64(ctx, r + DANGLING));
        let mut dangling_next = load_f64(ctx, r + DANGLING_NEXT);
        let end = (cursor + VERTICES_PER_OP).min(n);
        for v in cursor..end {
            let lo = ctx.load(self.offs + v * 8);
            let hi = ctx.load(self.offs + v * 8 + 8);
            let mut sum = 0.0;
            for i in lo..hi {
                let u = ctx.load(self.tgts + i * 8);
                let deg = ctx.load_dependent(self.outdeg + u * 8);
                let ru = load_f64_dep(ctx, src + u * 8);
                sum += ru / deg as f64;
            }
            ctx.compute(2 * (hi - lo) as u32 + 4);
            let nr = base + DAMPING * sum;
            store_f64(ctx, dst + v * 8, nr);
            if ctx.load(self.outdeg + v * 8) == 0 {
                dangling_next += nr;
            }
        }
        if end == n {
            store_f64(ctx, r + DANGLING, dangling_next);
            store_f64(ctx, r + DANGLING_NEXT, 0.0);
            ctx.store(r + ITER, iter + 1);
            ctx.store(r + CURSOR, 0);
        } else {
            store_f64(ctx, r + DANGLING_NEXT, dangling_next);
            ctx.store(r + CURSOR, end);
        }
    }
}

fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    let bounds = heap_bounds(img, region_base)?;
    let r = region_base + ROOT_OFFSET;
    let rd = |off| img.read_u64(r + off);
    let (n, m, iter, cursor) = (rd(N), rd(M), rd(ITER), rd(CURSOR));
    let csr = Csr::read(
        img,
        region_base,
        n,
        m,
        rd(OFFS),
        rd(TGTS),
        "pagerank in-edges",
    )?;
    if cursor >= n.max(1) {
        return Err(format!(
            "pagerank: cursor {cursor} outside the {n} vertices"
        ));
    }
    let (outdeg, rank) = (rd(OUTDEG), [rd(RANK), rd(RANK + 8)]);
    for (p, what) in [
        (outdeg, "pagerank outdeg"),
        (rank[0], "pagerank rank[0]"),
        (rank[1], "pagerank rank[1]"),
    ] {
        check_ptr(p, n * 8, bounds, what)?;
    }
    // Out-degrees are the edge list's.
    let mut deg = vec![0u64; n as usize];
    for &u in &csr.targets {
        deg[u as usize] += 1;
    }
    for (v, &d) in deg.iter().enumerate() {
        let got = img.read_u64(outdeg + v as u64 * 8);
        if got != d {
            return Err(format!(
                "pagerank vertex {v}: out-degree {got}, the edge list gives {d}"
            ));
        }
    }
    let (src, dst) = (rank[(iter & 1) as usize], rank[(!iter & 1) as usize]);
    // The last complete iteration: a probability distribution.
    let (mut total, mut dangling) = (0.0, 0.0);
    for v in 0..n {
        let x = read_f64(img, src + v * 8);
        if !(x > 0.0 && x <= 1.0) {
            return Err(format!(
                "pagerank iteration {iter}: rank of vertex {v} is {x}"
            ));
        }
        total += x;
        if deg[v as usize] == 0 {
            dangling += x;
        }
    }
    if (total - 1.0).abs() > 1e-6 {
        return Err(format!(
            "pagerank iteration {iter}: ranks sum to {total}, not 1"
        ));
    }
    let stored = read_f64(img, r + DANGLING);
    if stored != dangling {
        return Err(format!(
            "pagerank iteration {iter}: dangling rank {stored}, its vertices hold {dangling}"
        ));
    }
    // The iteration in progress: every rank below the cursor, recomputed.
    let base = base_rank(n, dangling);
    let mut dangling_next = 0.0;
    for v in 0..cursor {
        let mut sum = 0.0;
        for &u in csr.row(v) {
            sum += read_f64(img, src + u * 8) / deg[u as usize] as f64;
        }
        let want = base + DAMPING * sum;
        let got = read_f64(img, dst + v * 8);
        if got.to_bits() != want.to_bits() {
            return Err(format!(
                "pagerank iteration {}: rank of vertex {v} is {got}, recomputed {want}",
                iter + 1
            ));
        }
        if deg[v as usize] == 0 {
            dangling_next += want;
        }
    }
    let stored = read_f64(img, r + DANGLING_NEXT);
    if stored.to_bits() != dangling_next.to_bits() {
        return Err(format!(
            "pagerank iteration {}: partial dangling rank {stored}, recomputed {dangling_next}",
            iter + 1
        ));
    }
    Ok(n)
}

/// [`super::labels::DescribeFn`]: the root's words, a CSR entry, a
/// vertex's out-degree or rank.
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    use super::program::{describe_arrays, ArrayDesc};
    let r = region_base + ROOT_OFFSET;
    let (n, m) = (img.read_u64(r + N), img.read_u64(r + M));
    let vertex = |what, ptr, elem| ArrayDesc {
        what,
        ptr,
        elems: n,
        elem_words: 1,
        elem,
        word: None,
    };
    let arrays = [
        vertex("in-edge CSR offsets", OFFS, "row of vertex"),
        ArrayDesc {
            what: "in-edge CSR targets",
            ptr: TGTS,
            elems: m,
            elem_words: 1,
            elem: "edge",
            word: None,
        },
        vertex("outdeg", OUTDEG, "out-degree of vertex"),
        vertex("rank array 0", RANK, "rank of vertex"),
        vertex("rank array 1", RANK + 8, "rank of vertex"),
    ];
    let root_words = [
        "n (vertices)",
        "m (edges)",
        "in-edge offsets pointer",
        "in-edge targets pointer",
        "outdeg pointer",
        "rank array 0 pointer",
        "rank array 1 pointer",
        "iteration",
        "cursor (next vertex)",
        "dangling rank",
        "dangling rank of the next iteration",
    ];
    // The offsets array has n + 1 entries.
    if let Some(l) = describe_arrays("pagerank", img, region_base, addr, &root_words, &arrays) {
        return Some(l);
    }
    let offs = img.read_u64(r + OFFS);
    (addr == offs.wrapping_add(n * 8)).then(|| {
        Label::new(
            "pagerank in-edge CSR offsets",
            offs,
            format!("end of row {}", n.saturating_sub(1)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::testutil::*;

    /// Iterations converge to a distribution that sums to one; the checker
    /// accepts every operation boundary and rejects corrupted ranks,
    /// edges, degrees and progress words.
    #[test]
    fn checker_passes_and_detects_corruption() {
        let a = args(64, 256, 0, 0.5); // 16 KiB: 341 vertices
        let (img, _) = run_direct(&INFO, &a, 0);
        let n = img.read_u64(BASE + ROOT_OFFSET + N);
        assert_eq!(check(&img, BASE, 64), Ok(n));
        // Two and a half iterations.
        let ops = n.div_ceil(VERTICES_PER_OP);
        let (img, _) = run_direct(&INFO, &a, 2 * ops + ops / 2);
        let r = BASE + ROOT_OFFSET;
        assert_eq!(img.read_u64(r + ITER), 2);
        assert!(img.read_u64(r + CURSOR) > 0);
        assert_eq!(check(&img, BASE, 64), Ok(n));
        let (src, dst) = (img.read_u64(r + RANK), img.read_u64(r + RANK + 8));
        // A rank of the last iteration doubled: the sum is no longer one.
        let mut bad = img.clone();
        let x = read_f64(&img, src + 8 * 5);
        crate::mem::MemWrite::write_u64(&mut bad, src + 8 * 5, (2.0 * x).to_bits());
        assert!(check(&bad, BASE, 64).is_err());
        // A low bit of a rank the iteration in progress read.
        let u = img.read_u64(img.read_u64(r + TGTS));
        assert_detects(&INFO, &img, src + 8 * u, 64);
        assert_detects(&INFO, &img, dst + 8 * 2, 64); // a rank in progress
        assert_detects(&INFO, &img, img.read_u64(r + TGTS) + 8 * 3, 64);
        assert_detects(&INFO, &img, img.read_u64(r + OUTDEG) + 8 * 7, 64);
        assert_detects(&INFO, &img, r + CURSOR, 64);
        assert_detects(&INFO, &img, r + DANGLING, 64);
    }

    /// Power iteration converges: after 30 iterations the ranks move by
    /// less than 1e-6 per iteration (L1), as PageRank must at d = 0.85.
    #[test]
    fn iterations_converge() {
        let a = args(64, 256, 0, 0.5);
        let (img, _) = run_direct(&INFO, &a, 0);
        let n = img.read_u64(BASE + ROOT_OFFSET + N);
        let (img, _) = run_direct(&INFO, &a, 30 * n.div_ceil(VERTICES_PER_OP));
        let r = BASE + ROOT_OFFSET;
        assert_eq!(img.read_u64(r + ITER), 30);
        let (x, y) = (img.read_u64(r + RANK), img.read_u64(r + RANK + 8));
        let l1: f64 = (0..n)
            .map(|v| (read_f64(&img, x + v * 8) - read_f64(&img, y + v * 8)).abs())
            .sum();
        assert!(l1 < 1e-6, "L1 change {l1}");
        check(&img, BASE, 64).unwrap();
    }
}
