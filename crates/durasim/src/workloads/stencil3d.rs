//! 3D stencil sweep: a stand-in for the memory-intensive SPEC CPU2006
//! programs of the dual-page checkpointing paper's Table 5 (SPEC1/SPEC2
//! mixes: leslie3d, GemsFDTD, milc, wrf, ... are structured-grid solvers).
//! SPEC CPU2006 is licensed and its binaries cannot run on this simulator's
//! workload API, so this kernel reproduces their dominant memory behaviour
//! instead: a Jacobi sweep of the 7-point heat-diffusion stencil over a
//! periodic n^3 grid of f64, `u'[c] = 0.4 u[c] + 0.1 (sum of the six face
//! neighbours)`, alternating two arrays (streaming reads of three planes,
//! one streaming write). The weights sum to one, so the grid's total is
//! conserved. No transactions: one operation updates 64 cells.
//!
//! Layout: program.rs's sweep root; footprint 16 bytes per cell.
//! Checker (final image alone): the grid equals a host reference run of the
//! same sweeps from the seed, bit for bit, and the total is conserved.

use super::labels::Label;
use super::program::{check_sweep, wrap, Kernel, Sweep};
use super::{TxCtx, Workload, WorkloadArgs, WorkloadInfo};
use crate::mem::MemRead;
use crate::types::Addr;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "stencil3d",
    description: "7-point 3D Jacobi stencil sweeps over a periodic f64 grid; stand-in for DPC Table 5's SPEC CPU2006 grid solvers; no transactions; 16 B/cell, 6.9 loads/store",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::PROGRAM,
};

/// Diffusion number of the explicit heat step: u' = u + ALPHA (sum - 6u);
/// 0.1 < 1/6 keeps it stable (modelling choice).
const ALPHA: f64 = 0.1;

pub struct Stencil;

impl Kernel<1> for Stencil {
    const NAME: &'static str = "stencil3d";
    const CELLS_PER_OP: u64 = 64;

    fn init(seed: u64, _n: u64, c: u64) -> [f64; 1] {
        [super::program::unit_value(seed, c)]
    }

    fn update(n: u64, c: u64, fetch: &mut dyn FnMut(u64) -> f64) -> [f64; 1] {
        let centre = fetch(c);
        let mut s = 0.0;
        for (dx, dy, dz) in [
            (-1, 0, 0),
            (1, 0, 0),
            (0, -1, 0),
            (0, 1, 0),
            (0, 0, -1),
            (0, 0, 1),
        ] {
            s += fetch(wrap(n, c, dx, dy, dz));
        }
        [(1.0 - 6.0 * ALPHA) * centre + ALPHA * s]
    }
}

struct Program(Sweep);

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Program(Sweep::new::<1>(a)))
}

impl Workload for Program {
    fn setup(&mut self, ctx: &mut TxCtx) {
        self.0.setup::<1, Stencil>(ctx);
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        self.0.run_op::<1, Stencil>(ctx);
    }
}

fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    check_sweep::<1, Stencil>(img, region_base)
}

/// [`super::labels::DescribeFn`]: the sweep's root and grid cells.
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    super::program::describe_sweep("stencil3d", img, region_base, addr, 1, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::program::{read_f64, S_CURSOR, S_GRID, S_ITER, S_N};
    use crate::workloads::testutil::*;
    use crate::workloads::ROOT_OFFSET;

    /// Sweeps run and diffuse (the spread of values shrinks) while the
    /// total stays; the checker rejects any changed cell word.
    #[test]
    fn sweeps_diffuse_and_checker_detects_corruption() {
        let a = args(64, 256, 0, 0.5);
        let (img, _) = run_direct(&INFO, &a, 0);
        let r = BASE + ROOT_OFFSET;
        let n = img.read_u64(r + S_N);
        let cells = n.pow(3);
        let ops = cells.div_ceil(Stencil::CELLS_PER_OP);
        let (img, _) = run_direct(&INFO, &a, 3 * ops + ops / 3);
        assert_eq!(img.read_u64(r + S_ITER), 3);
        assert!(img.read_u64(r + S_CURSOR) > 0);
        assert_eq!(check(&img, BASE, 64), Ok(cells));
        let g1 = img.read_u64(r + S_GRID + 8);
        let spread = |g: u64| {
            let v: Vec<f64> = (0..cells).map(|c| read_f64(&img, g + c * 8)).collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
        };
        let (_, init_img) = (0, run_direct(&INFO, &a, 0).0);
        let g0 = init_img.read_u64(r + S_GRID);
        let v0: f64 = {
            let v: Vec<f64> = (0..cells)
                .map(|c| read_f64(&init_img, g0 + c * 8))
                .collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - mean).powi(2)).sum()
        };
        assert!(spread(g1) < 0.5 * v0, "diffusion smooths the grid");
        let g0 = img.read_u64(r + S_GRID);
        assert_detects(&INFO, &img, g1 + 8 * (cells / 2), 64); // last iteration
        assert_detects(&INFO, &img, g0 + 8, 64); // in progress
                                                 // The cursor moved past a cell not yet updated.
        let mut bad = img.clone();
        crate::mem::MemWrite::write_u64(&mut bad, r + S_CURSOR, img.read_u64(r + S_CURSOR) + 1);
        assert!(check(&bad, BASE, 64).is_err());
    }
}
