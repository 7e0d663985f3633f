//! Community detection (the dual-page checkpointing paper's Table 5 "CD",
//! on GraphChi): label propagation (Raghavan, Albert, Kumara 2007) on the
//! undirected R-MAT graph (program.rs). Pass 0 sets label[v] = v; each
//! later pass gives every vertex the label most frequent among its
//! neighbours (keeping its own on a tie that includes it, else the
//! smallest tied label), in place, until a pass changes nothing or
//! `MAX_PASSES` passes ran; then the program starts over (a new run). No
//! transactions: one operation processes 16 vertices.
//!
//! Layout: program.rs's label-program root; footprint per vertex 8 x (2 +
//! 2 x edge factor) bytes.
//!
//! Checker (final image alone): the graph is well formed; every label is a
//! vertex of the labelled vertex's component (labels travel along edges
//! only); and once a pass has changed nothing the labelling is stable:
//! every vertex's label is one of the most frequent among its neighbours
//! (a vertex without neighbours keeps its own).

use super::labels::Label;
use super::program::{LabelGraph, LabelImage, LABEL_VERTICES_PER_OP};
use super::{TxCtx, Workload, WorkloadArgs, WorkloadInfo};
use crate::mem::MemRead;
use crate::types::Addr;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "cd",
    description: "community detection by label propagation on an undirected R-MAT graph in CSR; no transactions (DPC Table 5 CD); 272 B/vertex, ~100 loads/store",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing {
        items_param: Some("workload.graph_vertices"),
        ..super::Sizing::PROGRAM
    },
};

/// Passes per run at most (modelling choice: label propagation labels 95%
/// of vertices correctly within 5 iterations, Raghavan et al. 2007 §3.2;
/// ties can make it oscillate, so a cap ends the run).
pub const MAX_PASSES: u64 = 10;

struct Cd {
    g: LabelGraph,
    a: WorkloadArgs,
    /// Scratch for the neighbours' labels (reused: no allocation per op).
    scratch: Vec<u64>,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Cd {
        g: LabelGraph::new(a),
        a: a.clone(),
        scratch: Vec::new(),
    })
}

/// The label `own` changes to among the sorted neighbour labels `sorted`:
/// the most frequent, `own` on a tie that includes it, else the smallest
/// tied label. Also returns the top count and `own`'s count.
fn vote(sorted: &[u64], own: u64) -> (u64, usize, usize) {
    let (mut best, mut best_n, mut own_n) = (own, 0usize, 0usize);
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j < sorted.len() && sorted[j] == sorted[i] {
            j += 1;
        }
        if sorted[i] == own {
            own_n = j - i;
        }
        if j - i > best_n {
            (best, best_n) = (sorted[i], j - i);
        }
        i = j;
    }
    if own_n == best_n {
        best = own;
    }
    (best, best_n, own_n)
}

impl Workload for Cd {
    fn setup(&mut self, ctx: &mut TxCtx) {
        self.g.setup(ctx, &self.a);
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let g = self.g;
        let (pass, cursor, changes0) = g.begin_op(ctx, MAX_PASSES);
        let mut changes = changes0;
        let end = (cursor + LABEL_VERTICES_PER_OP).min(g.n);
        for v in cursor..end {
            let at = g.label + v * 8;
            if pass == 0 {
                ctx.store(at, v);
                continue;
            }
            let own = ctx.load(at);
            let mut labels = std::mem::take(&mut self.scratch);
            g.neighbour_labels(ctx, v, &mut labels);
            if !labels.is_empty() {
                labels.sort_unstable();
                let k = labels.len() as u32;
                ctx.compute(k * (32 - k.leading_zeros()) + k);
                let (best, _, _) = vote(&labels, own);
                if best != own {
                    ctx.store(at, best);
                    changes += 1;
                }
            }
            self.scratch = labels;
        }
        g.end_op(ctx, end, changes0, changes);
    }
}

fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    let s = LabelImage::read(img, region_base, "cd")?;
    if s.converged() {
        let mut labels = Vec::new();
        for v in 0..s.n {
            labels.clear();
            labels.extend(s.csr.row(v).iter().map(|&t| s.labels[t as usize]));
            let own = s.labels[v as usize];
            if labels.is_empty() {
                if own != v {
                    return Err(format!("cd: vertex {v} without neighbours has label {own}"));
                }
                continue;
            }
            labels.sort_unstable();
            let (_, best_n, own_n) = vote(&labels, own);
            if own_n != best_n {
                return Err(format!(
                    "cd run {}: a pass changed nothing, but vertex {v}'s label {own} is held by {own_n} of its neighbours and another by {best_n} (not stable)",
                    s.run
                ));
            }
        }
    }
    Ok(s.n)
}

/// [`super::labels::DescribeFn`]: the label program's root, CSR and labels.
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    super::program::describe_label_program("cd", img, region_base, addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::program::{L_CURSOR, L_LABEL, L_PASS, L_RUN};
    use crate::workloads::testutil::*;
    use crate::workloads::ROOT_OFFSET;

    #[test]
    fn vote_follows_the_rule() {
        assert_eq!(vote(&[1, 2, 2, 3], 1).0, 2);
        assert_eq!(vote(&[1, 2, 2, 3, 3], 3).0, 3, "own label on a tie");
        assert_eq!(vote(&[1, 2, 2, 3, 3], 1).0, 2, "smallest tied label");
    }

    /// Runs reach a stable labelling or the pass cap; every image on the
    /// way passes; a stable image with one label changed is rejected.
    #[test]
    fn labels_stay_valid_and_a_stable_labelling_is_checked() {
        let a = args(64, 256, 0, 0.5);
        let mut img = crate::mem::SparseImage::new();
        let mut wl = build(&a);
        with_ctx(&mut img, false, |ctx| wl.setup(ctx));
        let r = BASE + ROOT_OFFSET;
        let mut stable = None;
        for _ in 0..3000 {
            with_ctx(&mut img, true, |ctx| wl.run_tx(ctx));
            check(&img, BASE, 64).unwrap();
            let s = LabelImage::read(&img, BASE, "cd").unwrap();
            if s.converged() && stable.is_none() {
                stable = Some(img.clone());
            }
        }
        assert!(img.read_u64(r + L_RUN) >= 1, "runs complete");
        let img = stable.expect("some run reached a stable labelling");
        let s = LabelImage::read(&img, BASE, "cd").unwrap();
        let communities = s
            .labels
            .iter()
            .enumerate()
            .filter(|&(v, &l)| v as u64 == l)
            .count();
        assert!(
            communities < s.n as usize / 2,
            "labels merged into communities"
        );
        // A vertex given another valid label of its component that none
        // of its neighbours holds (its own id): valid, but not stable.
        let label = img.read_u64(r + L_LABEL);
        let v = (0..s.n)
            .find(|&v| !s.csr.row(v).is_empty() && s.labels[v as usize] != v)
            .unwrap();
        let mut bad = img.clone();
        crate::mem::MemWrite::write_u64(&mut bad, label + v * 8, v);
        assert!(LabelImage::read(&bad, BASE, "cd").is_ok(), "still valid");
        let e = check(&bad, BASE, 64).unwrap_err();
        assert!(e.contains("not stable"), "{e}");
        assert_eq!(img.read_u64(r + L_CURSOR), s.n);
        assert!(img.read_u64(r + L_PASS) >= 1);
        // A label from another component.
        let v = (0..s.n).find(|&v| s.cmin[v as usize] != s.cmin[0]).unwrap();
        let mut bad = img.clone();
        crate::mem::MemWrite::write_u64(&mut bad, label + v * 8, 0);
        assert!(check(&bad, BASE, 64).is_err());
    }
}
