//! Connected components (the dual-page checkpointing paper's Table 5 "CC",
//! on GraphChi): min-label propagation on the undirected R-MAT graph
//! (program.rs). Pass 0 sets label[v] = v; each later pass sets every
//! vertex's label to the smallest of its own and its neighbours' labels, in
//! place (vertices see labels updated earlier in the same pass, as
//! GraphChi's asynchronous engine does), until a pass changes nothing; then
//! the program starts over (a new run) for as long as the run lasts. No
//! transactions: one operation processes 16 vertices.
//!
//! Layout: program.rs's label-program root; footprint per vertex 8 x (2 +
//! 2 x edge factor) bytes.
//!
//! Checker (final image alone): the graph is well formed; every label is a
//! vertex of the labelled vertex's component, between the component's
//! smallest vertex and the vertex itself; and once a pass has changed
//! nothing, every label is exactly its component's smallest vertex (the
//! components of the edge list, found by union-find).

use super::labels::Label;
use super::program::{LabelGraph, LabelImage, LABEL_VERTICES_PER_OP};
use super::{TxCtx, Workload, WorkloadArgs, WorkloadInfo};
use crate::mem::MemRead;
use crate::types::Addr;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "cc",
    description: "connected components by min-label propagation on an undirected R-MAT graph in CSR; no transactions (DPC Table 5 CC); 272 B/vertex, 100-260 loads/store",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing {
        items_param: Some("workload.graph_vertices"),
        ..super::Sizing::PROGRAM
    },
};

struct Cc {
    g: LabelGraph,
    a: WorkloadArgs,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Cc {
        g: LabelGraph::new(a),
        a: a.clone(),
    })
}

impl Workload for Cc {
    fn setup(&mut self, ctx: &mut TxCtx) {
        self.g.setup(ctx, &self.a);
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let g = self.g;
        // No pass cap: min-label propagation converges.
        let (pass, cursor, changes0) = g.begin_op(ctx, u64::MAX);
        let mut changes = changes0;
        let end = (cursor + LABEL_VERTICES_PER_OP).min(g.n);
        for v in cursor..end {
            let at = g.label + v * 8;
            if pass == 0 {
                ctx.store(at, v);
                continue;
            }
            let l = ctx.load(at);
            let lo = ctx.load(g.offs + v * 8);
            let hi = ctx.load(g.offs + v * 8 + 8);
            let mut m = l;
            for i in lo..hi {
                let t = ctx.load(g.tgts + i * 8);
                m = m.min(ctx.load_dependent(g.label + t * 8));
            }
            ctx.compute((hi - lo) as u32 + 2);
            if m < l {
                ctx.store(at, m);
                changes += 1;
            }
        }
        g.end_op(ctx, end, changes0, changes);
    }
}

fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    let s = LabelImage::read(img, region_base, "cc")?;
    for (v, &l) in s.labels.iter().enumerate() {
        if l > v as u64 {
            return Err(format!(
                "cc pass {}: vertex {v} has label {l} above its own id",
                s.pass
            ));
        }
        if s.converged() && l != s.cmin[v] {
            return Err(format!(
                "cc run {}: converged, but vertex {v} has label {l}; its component's smallest vertex is {}",
                s.run, s.cmin[v]
            ));
        }
    }
    Ok(s.n)
}

/// [`super::labels::DescribeFn`]: the label program's root, CSR and labels.
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    super::program::describe_label_program("cc", img, region_base, addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::program::{L_CHANGES, L_CURSOR, L_LABEL, L_PASS, L_RUN};
    use crate::workloads::testutil::*;
    use crate::workloads::ROOT_OFFSET;

    /// Run operations until a pass completes without change; the checker
    /// accepts that image (labels = component minima) and every image on
    /// the way, and rejects wrong labels.
    #[test]
    fn converges_to_the_components_and_checker_detects_corruption() {
        let a = args(64, 256, 0, 0.5);
        let mut img = crate::mem::SparseImage::new();
        let mut wl = build(&a);
        with_ctx(&mut img, false, |ctx| wl.setup(ctx));
        let r = BASE + ROOT_OFFSET;
        let mut ops = 0;
        loop {
            with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
            ops += 1;
            check(&img, BASE, 64).unwrap();
            let n = img.read_u64(r);
            if img.read_u64(r + L_PASS) >= 1
                && img.read_u64(r + L_CURSOR) == n
                && img.read_u64(r + L_CHANGES) == 0
            {
                break;
            }
            assert!(ops < 10_000, "no convergence");
        }
        let s = LabelImage::read(&img, BASE, "cc").unwrap();
        assert!(s.converged() && s.pass >= 2);
        assert_eq!(s.labels, s.cmin);
        let components = s
            .cmin
            .iter()
            .enumerate()
            .filter(|&(v, &c)| v as u64 == c)
            .count();
        assert!(components > 1, "R-MAT leaves isolated vertices");
        // A label of a vertex that is not its component's minimum.
        let label = img.read_u64(r + L_LABEL);
        let v = (0..s.n).find(|&v| s.cmin[v as usize] != v).unwrap();
        let mut bad = img.clone();
        crate::mem::MemWrite::write_u64(&mut bad, label + v * 8, v);
        assert!(check(&bad, BASE, 64).is_err());
        assert_detects(&INFO, &img, label + v * 8, 64);
        // The next operation starts run 1, pass 0.
        with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
        assert_eq!((img.read_u64(r + L_RUN), img.read_u64(r + L_PASS)), (1, 0));
        check(&img, BASE, 64).unwrap();
    }
}
