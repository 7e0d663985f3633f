//! Shared pieces of the programs without transactions (the dual-page
//! checkpointing paper's Table 5): footprint sizing, f64 words, the seeded R-MAT (Graph500) generator, CSR graphs in simulated
//! memory and a union-find for the graph checkers.
//!
//! Each program is a long computation cut into operations (one `run_tx`
//! each: a block of vertices, cells, vectors or queries); its progress
//! (iteration, cursor) lives in its root object, so its checker can tell
//! from an image alone which values are final, which are in progress and
//! which are still the previous iteration's. With `run.transactions=true`
//! each operation is a transaction, and the state between operations is
//! consistent, so the transactional crash oracle applies as well.

use super::{check_ptr, item_bytes_or, rng, TxCtx, WorkloadArgs, DEFAULT_ITEM_BYTES};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::{Rng, RngCore};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Smallest footprint a program sizes itself for (a few hundred vertices,
/// cells or vectors: enough structure for the checkers to mean something).
pub const MIN_FOOTPRINT_BYTES: u64 = 16 << 10;

/// The simulated bytes a program builds: `workload.footprint_bytes`, or
/// `initial_items` x item size when that is 0 (so the test suites' small
/// `initial_items` give small programs).
pub fn footprint_bytes(a: &WorkloadArgs) -> u64 {
    let f = if a.footprint_bytes > 0 {
        a.footprint_bytes
    } else {
        a.initial_items
            .saturating_mul(item_bytes_or(a.item_bytes, DEFAULT_ITEM_BYTES))
    };
    f.max(MIN_FOOTPRINT_BYTES)
}

#[inline]
pub fn load_f64(ctx: &mut TxCtx, addr: Addr) -> f64 {
    f64::from_bits(ctx.load(addr))
}

#[inline]
pub fn load_f64_dep(ctx: &mut TxCtx, addr: Addr) -> f64 {
    f64::from_bits(ctx.load_dependent(addr))
}

#[inline]
pub fn store_f64(ctx: &mut TxCtx, addr: Addr, v: f64) {
    ctx.store(addr, v.to_bits());
}

#[inline]
pub fn read_f64(img: &dyn MemRead, addr: Addr) -> f64 {
    f64::from_bits(img.read_u64(addr))
}

/// A deterministic value in [0, 1) for index `i` under `seed` (initial
/// grids, generated data): the top 53 bits of a 64-bit mix.
#[inline]
pub fn unit_value(seed: u64, i: u64) -> f64 {
    (super::mix64(seed ^ super::mix64(i.wrapping_add(0x1234_5678))) >> 11) as f64
        * (1.0 / (1u64 << 53) as f64)
}

/// Allocate `words` 8-byte words (setup). The caller fills them; see
/// [`alloc_zeroed`] for arrays that start as zeros.
pub fn alloc_words(ctx: &mut TxCtx, words: u64) -> Addr {
    ctx.alloc(words.max(1) * 8)
}

/// Allocate and zero-fill `words` words (setup): the program initialises
/// the array, as `calloc` or `std::vector<double>(n)` would, so its pages
/// are part of the footprint from the start.
pub fn alloc_zeroed(ctx: &mut TxCtx, words: u64) -> Addr {
    let p = alloc_words(ctx, words);
    for i in 0..words {
        ctx.store(p + i * 8, 0);
    }
    p
}

/// Check that an array of `words` words at `p` lies in the allocated heap.
pub fn check_array(
    img: &dyn MemRead,
    region_base: Addr,
    p: Addr,
    words: u64,
    what: &str,
) -> Result<(), String> {
    let bounds = super::heap_bounds(img, region_base)?;
    check_ptr(p, words.saturating_mul(8), bounds, what)
}

// ---- R-MAT / Graph500 generator ------------------------------------------

/// Graph500 Kronecker initiator (specification v3 §3: A = 0.57, B = 0.19,
/// C = 0.19, D = 0.05).
pub const RMAT_A: f64 = 0.57;
pub const RMAT_B: f64 = 0.19;
pub const RMAT_C: f64 = 0.19;

/// `m` directed edges over `n` vertices by R-MAT: each edge picks one
/// quadrant per bit of the vertex id with probabilities A, B, C, D (pairs
/// outside `[0, n)` when n is not a power of two are drawn again), then
/// the vertex labels are permuted at random (as Graph500's generator does,
/// so the high-degree vertices are not the low ids). Deterministic in `seed`.
pub fn rmat_edges(n: u64, m: u64, seed: u64) -> Vec<(u32, u32)> {
    // A draw is `r.gen::<f64>()`, which is (next_u64 >> 11) * 2^-53
    // exactly (rand's Standard f64), so `x < t` is `next_u64 >> 11 <
    // ceil(t * 2^53)`: the quadrant is picked from integer compares, with
    // no branch to mispredict, and the edges are those of the float form.
    let cut = |t: f64| (t * (1u64 << 53) as f64).ceil() as u64;
    let (ab, a_b, a_b_c) = (
        cut(RMAT_A),
        cut(RMAT_A + RMAT_B),
        cut(RMAT_A + RMAT_B + RMAT_C),
    );
    rmat_by(n, m, seed, |r| {
        let k = r.next_u64() >> 11;
        // Quadrants A (0,0), B (0,1), C (1,0), D (1,1) by `k`'s range.
        let bu = u64::from(k >= a_b);
        let bv = u64::from(k >= ab && k < a_b) | u64::from(k >= a_b_c);
        (bu, bv)
    })
}

/// [`rmat_edges`] with `quadrant` drawing one bit of each end (the
/// quadrant of one level) from the generator.
fn rmat_by(
    n: u64,
    m: u64,
    seed: u64,
    mut quadrant: impl FnMut(&mut Xoshiro256PlusPlus) -> (u64, u64),
) -> Vec<(u32, u32)> {
    let n = n.max(2);
    let scale = 64 - (n - 1).leading_zeros();
    let mut r = rng(seed ^ 0x0052_4d41_5447);
    let mut edges = Vec::with_capacity(m as usize);
    while (edges.len() as u64) < m {
        let (mut u, mut v) = (0u64, 0u64);
        for _ in 0..scale {
            let (bu, bv) = quadrant(&mut r);
            u = u << 1 | bu;
            v = v << 1 | bv;
        }
        if u < n && v < n {
            edges.push((u as u32, v as u32));
        }
    }
    let mut perm: Vec<u32> = (0..n as u32).collect();
    for i in (1..n as usize).rev() {
        perm.swap(i, r.gen_range(0..=i));
    }
    for e in &mut edges {
        *e = (perm[e.0 as usize], perm[e.1 as usize]);
    }
    edges
}

/// Vertex count of a graph program: `workload.graph_vertices`, or as many
/// as `footprint` holds at `bytes_per_vertex(edge_factor)`.
pub fn graph_vertices(a: &WorkloadArgs, bytes_per_vertex: u64) -> u64 {
    if a.graph_vertices > 0 {
        a.graph_vertices.max(2)
    } else {
        (footprint_bytes(a) / bytes_per_vertex.max(1)).max(16)
    }
}

/// Compressed sparse rows: `offsets[v]..offsets[v + 1]` index `targets`.
pub struct Csr {
    pub offsets: Vec<u64>,
    pub targets: Vec<u64>,
}

impl Csr {
    /// Rows of `n` vertices from `edges`: `(u, v)` lands in row `u`; with
    /// `reverse`, in row `v` (in-edges, for pull-style PageRank); with
    /// `both`, in both rows (the undirected graph of cc and cd).
    pub fn build(n: u64, edges: &[(u32, u32)], reverse: bool, both: bool) -> Csr {
        let n = n as usize;
        let mut deg = vec![0u64; n + 1];
        let rows = |&(u, v): &(u32, u32)| -> [(usize, u64); 2] {
            let (a, b) = if reverse { (v, u) } else { (u, v) };
            [(a as usize, b as u64), (b as usize, a as u64)]
        };
        for e in edges {
            let r = rows(e);
            deg[r[0].0 + 1] += 1;
            if both {
                deg[r[1].0 + 1] += 1;
            }
        }
        for i in 0..n {
            deg[i + 1] += deg[i];
        }
        let mut fill = deg.clone();
        let mut targets = vec![0u64; deg[n] as usize];
        for e in edges {
            let r = rows(e);
            for &(row, t) in &r[..1 + usize::from(both)] {
                targets[fill[row] as usize] = t;
                fill[row] += 1;
            }
        }
        Csr {
            offsets: deg,
            targets,
        }
    }

    /// Write the rows into simulated memory (setup): (offsets, targets).
    pub fn store(&self, ctx: &mut TxCtx) -> (Addr, Addr) {
        let offs = alloc_words(ctx, self.offsets.len() as u64);
        let tgts = alloc_words(ctx, self.targets.len() as u64);
        for (i, &o) in self.offsets.iter().enumerate() {
            ctx.store(offs + i as u64 * 8, o);
        }
        for (i, &t) in self.targets.iter().enumerate() {
            ctx.store(tgts + i as u64 * 8, t);
        }
        (offs, tgts)
    }

    /// Read and validate `n` rows from an image: offsets start at 0, never
    /// decrease, end at `m`; every target is a vertex.
    pub fn read(
        img: &dyn MemRead,
        region_base: Addr,
        n: u64,
        m: u64,
        offs: Addr,
        tgts: Addr,
        what: &str,
    ) -> Result<Csr, String> {
        if n > 1 << 32 || m > 1 << 40 {
            return Err(format!(
                "{what}: implausible graph size ({n} vertices, {m} edges)"
            ));
        }
        check_array(img, region_base, offs, n + 1, what)?;
        check_array(img, region_base, tgts, m, what)?;
        let offsets: Vec<u64> = (0..=n).map(|i| img.read_u64(offs + i * 8)).collect();
        if offsets[0] != 0 || offsets[n as usize] != m || offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!(
                "{what}: CSR offsets are not a non-decreasing sequence from 0 to the edge count {m}"
            ));
        }
        let targets: Vec<u64> = (0..m).map(|i| img.read_u64(tgts + i * 8)).collect();
        if let Some(i) = targets.iter().position(|&t| t >= n) {
            return Err(format!(
                "{what}: edge {i} points to vertex {} of {n}",
                targets[i]
            ));
        }
        Ok(Csr { offsets, targets })
    }

    pub fn row(&self, v: u64) -> &[u64] {
        &self.targets[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
    }

    /// For every vertex, the smallest vertex id of its connected component
    /// (edges taken as undirected): union-find with path halving.
    pub fn component_min(&self) -> Vec<u64> {
        let n = self.offsets.len() - 1;
        let mut parent: Vec<u64> = (0..n as u64).collect();
        fn find(p: &mut [u64], mut x: u64) -> u64 {
            while p[x as usize] != x {
                p[x as usize] = p[p[x as usize] as usize];
                x = p[x as usize];
            }
            x
        }
        for u in 0..n as u64 {
            for &v in self.row(u) {
                let (a, b) = (find(&mut parent, u), find(&mut parent, v));
                // The smaller root wins, so each root is its set's minimum.
                if a < b {
                    parent[b as usize] = a;
                } else if b < a {
                    parent[a as usize] = b;
                }
            }
        }
        (0..n as u64).map(|v| find(&mut parent, v)).collect()
    }
}

/// Squared Euclidean distance between `q` and the `dims` f64 words at `p`,
/// accumulated in index order (the checkers recompute it bit for bit).
#[inline]
pub fn dist2_img(img: &dyn MemRead, p: Addr, q: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, &x) in q.iter().enumerate() {
        let d = read_f64(img, p + i as u64 * 8) - x;
        s += d * d;
    }
    s
}

/// The same distance, loading the vector through the program's context.
#[inline]
pub fn dist2_ctx(ctx: &mut TxCtx, p: Addr, q: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, &x) in q.iter().enumerate() {
        let d = load_f64_dep(ctx, p + i as u64 * 8) - x;
        s += d * d;
    }
    ctx.compute(3 * q.len() as u32);
    s
}

/// A standard normal draw (Box-Muller; generated vector data).
pub fn normal(r: &mut impl Rng) -> f64 {
    let u1: f64 = r.gen::<f64>().max(1e-300);
    let u2: f64 = r.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

// ---- Word labels of the programs (crash-test messages) -----------------

/// One array a program's root points to, for [`describe_arrays`]: the
/// root word holding its address, its elements and their words, and the
/// names a label gives them.
pub struct ArrayDesc {
    /// "rank array 0", "nodes".
    pub what: &'static str,
    /// Byte offset of its pointer in the root.
    pub ptr: u64,
    pub elems: u64,
    pub elem_words: u64,
    /// What one element is ("vertex", "cell").
    pub elem: &'static str,
    /// Names word `j` of an element (`None`: the element is one word).
    pub word: Option<fn(u64) -> String>,
}

/// A program's [`super::labels::DescribeFn`] body: the root's named words
/// (`root_words`), or an element of one of `arrays`, labelled
/// "`program` `what`" with the field "`elem` i" (and the element's word).
pub fn describe_arrays(
    program: &str,
    img: &dyn MemRead,
    region_base: Addr,
    addr: Addr,
    root_words: &[&str],
    arrays: &[ArrayDesc],
) -> Option<super::labels::Label> {
    use super::labels::{array_slot, root_word, Label};
    if let Some(l) = root_word(program, region_base, addr, root_words) {
        return Some(l);
    }
    let root = region_base + super::ROOT_OFFSET;
    arrays.iter().find_map(|a| {
        let base = img.read_u64(root + a.ptr);
        let bytes = a.elem_words.max(1) * 8;
        let (i, off) = array_slot(addr, base, bytes, a.elems)?;
        let field = match a.word {
            Some(w) => format!("{} {i}, {}", a.elem, w(off / 8)),
            None => format!("{} {i}", a.elem),
        };
        Some(Label::new(format!("{program} {}", a.what), base, field))
    })
}

/// [`describe_arrays`] of a label program (cc, cd).
pub fn describe_label_program(
    program: &str,
    img: &dyn MemRead,
    region_base: Addr,
    addr: Addr,
) -> Option<super::labels::Label> {
    let r = region_base + super::ROOT_OFFSET;
    let (n, m) = (img.read_u64(r + L_N), img.read_u64(r + L_M));
    let arrays = [
        ArrayDesc {
            what: "CSR offsets",
            ptr: L_OFFS,
            elems: n.saturating_add(1),
            elem_words: 1,
            elem: "row of vertex",
            word: None,
        },
        ArrayDesc {
            what: "CSR targets",
            ptr: L_TGTS,
            elems: m,
            elem_words: 1,
            elem: "edge",
            word: None,
        },
        ArrayDesc {
            what: "labels",
            ptr: L_LABEL,
            elems: n,
            elem_words: 1,
            elem: "label of vertex",
            word: None,
        },
    ];
    let root_words = [
        "n (vertices)",
        "m (edges, both directions)",
        "CSR offsets pointer",
        "CSR targets pointer",
        "labels pointer",
        "run",
        "pass",
        "cursor",
        "changes in this pass",
    ];
    describe_arrays(program, img, region_base, addr, &root_words, &arrays)
}

/// [`describe_arrays`] of a sweep program (stencil3d, lbm): cells of
/// `w` words in the two grids; `word` names a cell's word.
pub fn describe_sweep(
    program: &str,
    img: &dyn MemRead,
    region_base: Addr,
    addr: Addr,
    w: u64,
    word: Option<fn(u64) -> String>,
) -> Option<super::labels::Label> {
    let r = region_base + super::ROOT_OFFSET;
    let cells = img.read_u64(r + S_N).checked_pow(3).unwrap_or(0);
    let arrays = [
        ArrayDesc {
            what: "grid 0",
            ptr: S_GRID,
            elems: cells,
            elem_words: w,
            elem: "cell",
            word,
        },
        ArrayDesc {
            what: "grid 1",
            ptr: S_GRID + 8,
            elems: cells,
            elem_words: w,
            elem: "cell",
            word,
        },
    ];
    let root_words = [
        "n (grid edge)",
        "seed",
        "grid 0 pointer",
        "grid 1 pointer",
        "iteration",
        "cursor (next cell)",
        "total of the initial grid",
    ];
    describe_arrays(program, img, region_base, addr, &root_words, &arrays)
}

// ---- Point programs (ann, kdtree): build an index, then answer queries ---

/// Programs that insert generated points into an index one operation at a
/// time, then answer generated queries against it (ann, kdtree). Root =
/// { n, nq, nodes, queries, results, inserted, qdone, seed } (word
/// offsets below); node i starts with point i's coordinates.
pub mod points {
    use super::{alloc_zeroed, check_array, store_f64};
    use crate::mem::MemRead;
    use crate::types::Addr;
    use crate::workloads::{TxCtx, ROOT_OFFSET};

    pub const N: u64 = 0;
    pub const NQ: u64 = 8;
    pub const NODES: u64 = 16;
    pub const QUERIES: u64 = 24;
    pub const RESULTS: u64 = 32;
    pub const INSERTED: u64 = 40;
    pub const QDONE: u64 = 48;
    pub const SEED: u64 = 56;

    /// Word `j` of a point or query: its coordinate `j`.
    pub fn coordinate(j: u64) -> String {
        format!("coordinate {j}")
    }

    /// One such program's layout and names.
    pub struct Shape {
        /// The checker's name for the program and for its points
        /// ("ann", "vectors").
        pub name: &'static str,
        pub noun: &'static str,
        /// f64 coordinates per point and query.
        pub dims: u64,
        pub node_words: u64,
        pub result_words: u64,
        /// Queries for `n` points.
        pub query_count: fn(u64) -> u64,
    }

    /// What the root of a laid-out program holds.
    pub struct Root {
        pub n: u64,
        pub q: u64,
        pub nodes: Addr,
        pub queries: Addr,
        pub results: Addr,
        pub inserted: u64,
        pub done: u64,
        pub seed: u64,
    }

    impl Shape {
        /// Lay out the nodes (each: `points`' coordinates, then whatever
        /// `init_node(ctx, node)` stores), the `queries` and zeroed
        /// results, and write the root at `root`: point 0 inserted (the
        /// index's entry), no query answered. Returns (nodes, queries,
        /// results).
        pub fn setup(
            &self,
            ctx: &mut TxCtx,
            root: Addr,
            seed: u64,
            (points, queries): (&[f64], &[f64]),
            mut init_node: impl FnMut(&mut TxCtx, Addr),
        ) -> (Addr, Addr, Addr) {
            let (n, q) = (
                points.len() as u64 / self.dims,
                queries.len() as u64 / self.dims,
            );
            let nodes = ctx.alloc(n * self.node_words * 8);
            let qs = ctx.alloc(q * self.dims * 8);
            let results = alloc_zeroed(ctx, q * self.result_words);
            for i in 0..n {
                let node = nodes + i * self.node_words * 8;
                for j in 0..self.dims {
                    store_f64(ctx, node + j * 8, points[(i * self.dims + j) as usize]);
                }
                init_node(ctx, node);
            }
            for (i, &x) in queries.iter().enumerate() {
                store_f64(ctx, qs + i as u64 * 8, x);
            }
            for (off, x) in [
                (N, n),
                (NQ, q),
                (NODES, nodes),
                (QUERIES, qs),
                (RESULTS, results),
                (INSERTED, 1),
                (QDONE, 0),
                (SEED, seed),
            ] {
                ctx.store(root + off, x);
            }
            (nodes, qs, results)
        }

        /// [`super::describe_arrays`] of such a program: `node_word` and
        /// `result_word` name a node's and a result's words.
        pub fn describe(
            &self,
            img: &dyn MemRead,
            region_base: Addr,
            addr: Addr,
            node_word: fn(u64) -> String,
            result_word: fn(u64) -> String,
        ) -> Option<crate::workloads::labels::Label> {
            use super::ArrayDesc;
            let r = region_base + ROOT_OFFSET;
            let (n, q) = (img.read_u64(r + N), img.read_u64(r + NQ));
            let arrays = [
                ArrayDesc {
                    what: "nodes",
                    ptr: NODES,
                    elems: n,
                    elem_words: self.node_words,
                    elem: "node",
                    word: Some(node_word),
                },
                ArrayDesc {
                    what: "queries",
                    ptr: QUERIES,
                    elems: q,
                    elem_words: self.dims,
                    elem: "query",
                    word: Some(coordinate),
                },
                ArrayDesc {
                    what: "results",
                    ptr: RESULTS,
                    elems: q,
                    elem_words: self.result_words,
                    elem: "result of query",
                    word: Some(result_word),
                },
            ];
            let root_words = [
                "n (points)",
                "q (queries)",
                "nodes pointer",
                "queries pointer",
                "results pointer",
                "points inserted",
                "queries answered",
                "seed",
            ];
            super::describe_arrays(self.name, img, region_base, addr, &root_words, &arrays)
        }

        /// The root of an image, checked as every such checker starts:
        /// plausible sizes, the arrays inside the heap, and progress that
        /// answers queries only once every point is inserted.
        pub fn check_root(&self, img: &dyn MemRead, region_base: Addr) -> Result<Root, String> {
            let r = region_base + ROOT_OFFSET;
            let rd = |off| img.read_u64(r + off);
            let (name, noun) = (self.name, self.noun);
            let (n, q, inserted, done) = (rd(N), rd(NQ), rd(INSERTED), rd(QDONE));
            if n == 0 || n > 1 << 32 || q != (self.query_count)(n) {
                return Err(format!(
                    "{name}: implausible sizes ({n} {noun}, {q} queries)"
                ));
            }
            let (nodes, queries, results) = (rd(NODES), rd(QUERIES), rd(RESULTS));
            let arrays = [
                (nodes, n * self.node_words, "nodes"),
                (queries, q * self.dims, "queries"),
                (results, q * self.result_words, "results"),
            ];
            for (p, words, what) in arrays {
                check_array(img, region_base, p, words, &format!("{name} {what}"))?;
            }
            if inserted == 0 || inserted > n || (done > 0 && inserted < n) {
                return Err(format!(
                    "{name}: progress inconsistent ({inserted} of {n} inserted, {done} queries answered)"
                ));
            }
            Ok(Root {
                n,
                q,
                nodes,
                queries,
                results,
                inserted,
                done,
                seed: rd(SEED),
            })
        }
    }
}

// ---- Label programs (cc, cd): passes over an undirected R-MAT graph ------
//
// Root: { n, m, offsets, targets, labels, run, pass, cursor, changes }.
// Pass 0 of a run sets label[v] = v; passes >= 1 update labels from the
// neighbours'. A pass ends when the cursor reaches n; the next operation
// starts the next pass, or (no change in a pass >= 1, or the pass cap) a
// new run. The graph is symmetric: each generated edge in both rows.

pub const L_N: u64 = 0;
pub const L_M: u64 = 8;
pub const L_OFFS: u64 = 16;
pub const L_TGTS: u64 = 24;
pub const L_LABEL: u64 = 32;
pub const L_RUN: u64 = 40;
pub const L_PASS: u64 = 48;
pub const L_CURSOR: u64 = 56;
pub const L_CHANGES: u64 = 64;

/// Vertices one operation of a label program processes (modelling choice,
/// as for PageRank).
pub const LABEL_VERTICES_PER_OP: u64 = 16;

/// A label program's graph in simulated memory.
#[derive(Clone, Copy, Default)]
pub struct LabelGraph {
    pub root: Addr,
    pub n: u64,
    pub offs: Addr,
    pub tgts: Addr,
    pub label: Addr,
}

impl LabelGraph {
    /// Vertices for `a`: offsets, both directions of each edge and a label
    /// per vertex, 8 x (2 + 2 x edge factor) bytes.
    pub fn new(a: &WorkloadArgs) -> Self {
        LabelGraph {
            root: a.region_base + super::ROOT_OFFSET,
            n: graph_vertices(a, 8 * (2 + 2 * a.graph_edge_factor.max(1))),
            ..Default::default()
        }
    }

    /// Build the graph and label[v] = v (pass 0 of run 0, complete).
    pub fn setup(&mut self, ctx: &mut TxCtx, a: &WorkloadArgs) {
        ctx.init_region();
        let n = self.n;
        let edges = rmat_edges(n, n * a.graph_edge_factor.max(1), a.seed);
        let csr = Csr::build(n, &edges, false, true);
        drop(edges);
        (self.offs, self.tgts) = csr.store(ctx);
        self.label = alloc_words(ctx, n);
        for v in 0..n {
            ctx.store(self.label + v * 8, v);
        }
        for (off, v) in [
            (L_N, n),
            (L_M, csr.targets.len() as u64),
            (L_OFFS, self.offs),
            (L_TGTS, self.tgts),
            (L_LABEL, self.label),
            (L_RUN, 0),
            (L_PASS, 0),
            (L_CURSOR, n),
            (L_CHANGES, n),
        ] {
            ctx.store(self.root + off, v);
        }
    }

    /// Start an operation: (pass, first vertex, changes so far), rolling
    /// over to the next pass or run when the last one is complete.
    pub fn begin_op(&self, ctx: &mut TxCtx, max_passes: u64) -> (u64, u64, u64) {
        let r = self.root;
        let pass = ctx.load(r + L_PASS);
        let cursor = ctx.load(r + L_CURSOR);
        let changes = ctx.load(r + L_CHANGES);
        if cursor < self.n {
            return (pass, cursor, changes);
        }
        let next = if pass >= 1 && (changes == 0 || pass >= max_passes) {
            let run = ctx.load(r + L_RUN);
            ctx.store(r + L_RUN, run + 1);
            0
        } else {
            pass + 1
        };
        ctx.store(r + L_PASS, next);
        ctx.store(r + L_CHANGES, 0);
        (next, 0, 0)
    }

    /// End an operation that processed vertices up to `end`.
    pub fn end_op(&self, ctx: &mut TxCtx, end: u64, changes_before: u64, changes: u64) {
        if changes != changes_before {
            ctx.store(self.root + L_CHANGES, changes);
        }
        ctx.store(self.root + L_CURSOR, end);
    }

    /// The neighbours' labels of `v` into `out` (loads of the row and of
    /// each neighbour's label).
    pub fn neighbour_labels(&self, ctx: &mut TxCtx, v: u64, out: &mut Vec<u64>) {
        out.clear();
        let lo = ctx.load(self.offs + v * 8);
        let hi = ctx.load(self.offs + v * 8 + 8);
        for i in lo..hi {
            let t = ctx.load(self.tgts + i * 8);
            out.push(ctx.load_dependent(self.label + t * 8));
        }
    }
}

/// A label program's state read back from an image.
pub struct LabelImage {
    pub n: u64,
    pub run: u64,
    pub pass: u64,
    pub cursor: u64,
    pub changes: u64,
    pub csr: Csr,
    pub labels: Vec<u64>,
    /// Smallest vertex of each vertex's connected component.
    pub cmin: Vec<u64>,
}

impl LabelImage {
    /// Read and validate what cc and cd share: the graph, the progress
    /// words, labels that name a vertex of the labelled vertex's own
    /// component (labels only travel along edges), and pass 0's label[v]
    /// = v below the cursor.
    pub fn read(img: &dyn MemRead, region_base: Addr, what: &str) -> Result<LabelImage, String> {
        let r = region_base + super::ROOT_OFFSET;
        let rd = |off| img.read_u64(r + off);
        let (n, m) = (rd(L_N), rd(L_M));
        let csr = Csr::read(img, region_base, n, m, rd(L_OFFS), rd(L_TGTS), what)?;
        let label = rd(L_LABEL);
        check_array(img, region_base, label, n, what)?;
        let (run, pass, cursor, changes) = (rd(L_RUN), rd(L_PASS), rd(L_CURSOR), rd(L_CHANGES));
        if cursor > n || (pass >= 1 && changes > cursor) {
            return Err(format!(
                "{what}: progress words inconsistent (pass {pass}, cursor {cursor} of {n}, {changes} changes)"
            ));
        }
        let labels: Vec<u64> = (0..n).map(|v| img.read_u64(label + v * 8)).collect();
        let cmin = csr.component_min();
        for (v, &l) in labels.iter().enumerate() {
            if l >= n || cmin[l as usize] != cmin[v] {
                return Err(format!(
                    "{what} run {run} pass {pass}: vertex {v} has label {l}, not a vertex of its component"
                ));
            }
            if pass == 0 && (v as u64) < cursor && l != v as u64 {
                return Err(format!(
                    "{what} run {run}: vertex {v} below the initialising pass's cursor has label {l}"
                ));
            }
        }
        Ok(LabelImage {
            n,
            run,
            pass,
            cursor,
            changes,
            csr,
            labels,
            cmin,
        })
    }

    /// A pass >= 1 just completed without changing any label.
    pub fn converged(&self) -> bool {
        self.pass >= 1 && self.cursor == self.n && self.changes == 0
    }
}

// ---- Sweep programs (stencil3d, lbm): a periodic n^3 grid, two arrays ----
//
// Root: { n, seed, grid[0], grid[1], iter, cursor, total0 }. Iteration k
// reads grid[k % 2] and writes grid[(k + 1) % 2], cell by cell in index
// order; `total0` is the conserved quantity of the initial grid. A kernel
// computes one cell's `W` words from the source through `fetch(word)`, so
// the program (loads through its context) and the checker's host
// reference (a slice) run the same arithmetic, bit for bit.

pub const S_N: u64 = 0;
pub const S_SEED: u64 = 8;
pub const S_GRID: u64 = 16; // grid[0]; grid[1] at 24
pub const S_ITER: u64 = 32;
pub const S_CURSOR: u64 = 40;
pub const S_TOTAL0: u64 = 48;

/// A grid kernel: `W` words per cell.
pub trait Kernel<const W: usize> {
    const NAME: &'static str;
    /// Cells one operation updates (modelling choice: ~100-300 memory
    /// accesses per operation).
    const CELLS_PER_OP: u64;
    /// Initial words of cell `c`.
    fn init(seed: u64, n: u64, c: u64) -> [f64; W];
    /// New words of cell `c` of an `n`^3 periodic grid.
    fn update(n: u64, c: u64, fetch: &mut dyn FnMut(u64) -> f64) -> [f64; W];
}

/// Neighbour of cell `c` at offset (dx, dy, dz) on the periodic `n`^3 grid.
#[inline]
pub fn wrap(n: u64, c: u64, dx: i64, dy: i64, dz: i64) -> u64 {
    let (x, y, z) = ((c % n) as i64, ((c / n) % n) as i64, (c / (n * n)) as i64);
    let m = n as i64;
    let f = |v: i64| v.rem_euclid(m) as u64;
    f(x + dx) + n * (f(y + dy) + n * f(z + dz))
}

/// Edge length of a grid of `bytes_per_cell` (both arrays) in `footprint`.
pub fn grid_edge(footprint: u64, bytes_per_cell: u64) -> u64 {
    ((footprint / bytes_per_cell) as f64)
        .cbrt()
        .floor()
        .max(4.0) as u64
}

#[derive(Clone, Copy, Default)]
pub struct Sweep {
    pub root: Addr,
    pub n: u64,
    pub seed: u64,
    pub grid: [Addr; 2],
}

impl Sweep {
    pub fn new<const W: usize>(a: &WorkloadArgs) -> Self {
        Sweep {
            root: a.region_base + super::ROOT_OFFSET,
            n: grid_edge(footprint_bytes(a), 2 * 8 * W as u64),
            seed: a.seed,
            grid: [0; 2],
        }
    }

    pub fn setup<const W: usize, K: Kernel<W>>(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let cells = self.n.pow(3);
        self.grid = [
            alloc_words(ctx, cells * W as u64),
            alloc_zeroed(ctx, cells * W as u64),
        ];
        let mut total = 0.0;
        for c in 0..cells {
            for (i, v) in K::init(self.seed, self.n, c).into_iter().enumerate() {
                store_f64(ctx, self.grid[0] + (c * W as u64 + i as u64) * 8, v);
                total += v;
            }
        }
        for (off, v) in [
            (S_N, self.n),
            (S_SEED, self.seed),
            (S_GRID, self.grid[0]),
            (S_GRID + 8, self.grid[1]),
            (S_ITER, 0),
            (S_CURSOR, 0),
            (S_TOTAL0, total.to_bits()),
        ] {
            ctx.store(self.root + off, v);
        }
    }

    /// One operation: the next `CELLS_PER_OP` cells of the sweep.
    pub fn run_op<const W: usize, K: Kernel<W>>(&self, ctx: &mut TxCtx) {
        let r = self.root;
        let iter = ctx.load(r + S_ITER);
        let cursor = ctx.load(r + S_CURSOR);
        let (src, dst) = (
            self.grid[(iter & 1) as usize],
            self.grid[(!iter & 1) as usize],
        );
        let cells = self.n.pow(3);
        let end = (cursor + K::CELLS_PER_OP).min(cells);
        for c in cursor..end {
            let out = K::update(self.n, c, &mut |w| load_f64(ctx, src + w * 8));
            ctx.compute(3 * W as u32 + 8);
            for (i, v) in out.into_iter().enumerate() {
                store_f64(ctx, dst + (c * W as u64 + i as u64) * 8, v);
            }
        }
        if end == cells {
            ctx.store(r + S_ITER, iter + 1);
            ctx.store(r + S_CURSOR, 0);
        } else {
            ctx.store(r + S_CURSOR, end);
        }
    }
}

/// Checker of a sweep program: the last complete iteration equals a host
/// reference run of the same kernel from the seed, the cells of the
/// iteration in progress below the cursor equal one more step of it, and
/// the conserved total (`total0`) holds within 1e-9 relative.
pub fn check_sweep<const W: usize, K: Kernel<W>>(
    img: &dyn MemRead,
    region_base: Addr,
) -> Result<u64, String> {
    let what = K::NAME;
    let r = region_base + super::ROOT_OFFSET;
    let rd = |off| img.read_u64(r + off);
    let (n, seed, iter, cursor) = (rd(S_N), rd(S_SEED), rd(S_ITER), rd(S_CURSOR));
    if !(4..=1 << 12).contains(&n) {
        return Err(format!("{what}: grid edge {n} out of range"));
    }
    let cells = n.pow(3);
    let words = cells * W as u64;
    let grid = [rd(S_GRID), rd(S_GRID + 8)];
    for g in grid {
        check_array(img, region_base, g, words, what)?;
    }
    if cursor >= cells || iter > 1 << 20 {
        return Err(format!(
            "{what}: progress (iteration {iter}, cursor {cursor}) out of range"
        ));
    }
    let mut cur: Vec<f64> = (0..cells).flat_map(|c| K::init(seed, n, c)).collect();
    let total0 = cur.iter().sum::<f64>();
    if total0.to_bits() != rd(S_TOTAL0) {
        return Err(format!(
            "{what}: stored initial total differs from the seed's grid"
        ));
    }
    let mut next = vec![0.0; words as usize];
    let step = |src: &[f64], dst: &mut [f64], upto: u64| {
        for c in 0..upto {
            let out = K::update(n, c, &mut |w| src[w as usize]);
            dst[(c * W as u64) as usize..((c + 1) * W as u64) as usize].copy_from_slice(&out);
        }
    };
    for _ in 0..iter {
        step(&cur, &mut next, cells);
        std::mem::swap(&mut cur, &mut next);
    }
    let (src, dst) = (grid[(iter & 1) as usize], grid[(!iter & 1) as usize]);
    let mut total = 0.0;
    for (w, &want) in cur.iter().enumerate() {
        let got = read_f64(img, src + w as u64 * 8);
        if got.to_bits() != want.to_bits() {
            return Err(format!(
                "{what} iteration {iter}: cell {} word {} is {got}, the reference computes {want}",
                w / W,
                w % W
            ));
        }
        total += got;
    }
    if ((total - total0) / total0).abs() > 1e-9 {
        return Err(format!("{what}: conserved total {total0} became {total}"));
    }
    step(&cur, &mut next, cursor);
    for (w, &want) in next[..(cursor * W as u64) as usize].iter().enumerate() {
        let got = read_f64(img, dst + w as u64 * 8);
        if got.to_bits() != want.to_bits() {
            return Err(format!(
                "{what} iteration {}: cell {} word {} is {got}, the reference computes {want}",
                iter + 1,
                w / W,
                w % W
            ));
        }
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadrant choice by integer compares gives the edges of the
    /// float form it replaced (each draw `r.gen::<f64>()` compared to the
    /// cumulative probabilities), for vertex counts that are and are not
    /// powers of two and several seeds.
    #[test]
    fn rmat_edges_equal_the_float_definition() {
        // The quadrant as first written: one float draw against the
        // cumulative probabilities.
        let by_floats = |n: u64, m: u64, seed: u64| {
            rmat_by(n, m, seed, |r| {
                let x: f64 = r.gen();
                if x < RMAT_A {
                    (0, 0)
                } else if x < RMAT_A + RMAT_B {
                    (0, 1)
                } else if x < RMAT_A + RMAT_B + RMAT_C {
                    (1, 0)
                } else {
                    (1, 1)
                }
            })
        };
        for (n, seed) in [(1u64 << 12, 1u64), (3000, 2), (5, 3), (70_001, 4)] {
            assert_eq!(
                rmat_edges(n, 8 * n, seed),
                by_floats(n, 8 * n, seed),
                "n={n}"
            );
        }
    }

    /// R-MAT degrees are heavy-tailed: the largest out-degree is many times
    /// the mean (a uniform random graph of this size has max/mean near 3),
    /// and the generator is deterministic in its seed.
    #[test]
    fn rmat_degree_distribution_is_heavy_tailed() {
        let n = 1u64 << 14;
        let edges = rmat_edges(n, 16 * n, 5);
        assert_eq!(edges.len() as u64, 16 * n);
        let mut deg = vec![0u64; n as usize];
        for &(u, v) in &edges {
            assert!((u as u64) < n && (v as u64) < n);
            deg[u as usize] += 1;
        }
        let max = *deg.iter().max().unwrap() as f64;
        assert!(max / 16.0 > 20.0, "max/mean out-degree {}", max / 16.0);
        let isolated = deg.iter().filter(|&&d| d == 0).count();
        assert!(
            isolated > n as usize / 10,
            "R-MAT leaves many vertices without out-edges"
        );
        assert_eq!(rmat_edges(n, 16 * n, 5), edges);
        assert_ne!(rmat_edges(n, 16 * n, 6), edges);
        // A vertex count that is not a power of two stays in range.
        assert!(rmat_edges(1000, 5000, 1)
            .iter()
            .all(|&(u, v)| u < 1000 && v < 1000));
    }

    #[test]
    fn csr_rows_and_components() {
        let edges = [(0u32, 1u32), (1, 2), (4, 3), (5, 5)];
        let c = Csr::build(6, &edges, false, true);
        assert_eq!(c.row(1), &[0, 2]);
        assert_eq!(c.component_min(), vec![0, 0, 0, 3, 3, 5]);
        let r = Csr::build(6, &edges, true, false);
        assert_eq!(r.row(3), &[4]);
        assert_eq!(r.row(4), &[] as &[u64]);
    }
}
