//! Lattice-Boltzmann streaming update: a stand-in for SPEC CPU2006 470.lbm
//! (in the dual-page checkpointing paper's Table 5 SPEC2 mix). SPEC is
//! licensed and cannot run on this simulator's workload API; this kernel is
//! the same method: D3Q19 lattice, BGK collision with 470.lbm's relaxation
//! OMEGA = 1.95, fused pull streaming (each cell gathers its 19
//! distributions from its upstream neighbours, collides, and writes them to
//! the other array), periodic boundaries, n^3 cells of 19 f64 each (array
//! of structures). Streaming and collision conserve mass (the sum of all
//! distributions). No transactions: one operation updates 4 cells.
//!
//! Layout: program.rs's sweep root; footprint 304 bytes per cell.
//! Checker (final image alone): the lattice equals a host reference run of
//! the same steps from the seed, bit for bit, and the mass is conserved.

use super::labels::Label;
use super::program::{check_sweep, unit_value, wrap, Kernel, Sweep};
use super::{TxCtx, Workload, WorkloadArgs, WorkloadInfo};
use crate::mem::MemRead;
use crate::types::Addr;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "lbm",
    description: "D3Q19 lattice-Boltzmann (BGK, pull streaming, periodic); stand-in for SPEC CPU2006 470.lbm in DPC Table 5's SPEC2; no transactions; 304 B/cell, 1.0 loads/store",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::PROGRAM,
};

/// BGK relaxation: SPEC CPU2006 470.lbm, config.h `OMEGA (1.95)`.
const OMEGA: f64 = 1.95;
const Q: usize = 19;

/// D3Q19 velocities: rest, 6 faces, 12 edges.
const C: [(i64, i64, i64); Q] = [
    (0, 0, 0),
    (1, 0, 0),
    (-1, 0, 0),
    (0, 1, 0),
    (0, -1, 0),
    (0, 0, 1),
    (0, 0, -1),
    (1, 1, 0),
    (-1, -1, 0),
    (1, -1, 0),
    (-1, 1, 0),
    (1, 0, 1),
    (-1, 0, -1),
    (1, 0, -1),
    (-1, 0, 1),
    (0, 1, 1),
    (0, -1, -1),
    (0, 1, -1),
    (0, -1, 1),
];

/// D3Q19 weights: 1/3 rest, 1/18 faces, 1/36 edges.
fn weight(i: usize) -> f64 {
    match i {
        0 => 1.0 / 3.0,
        1..=6 => 1.0 / 18.0,
        _ => 1.0 / 36.0,
    }
}

fn equilibrium(rho: f64, u: (f64, f64, f64)) -> [f64; Q] {
    let uu = u.0 * u.0 + u.1 * u.1 + u.2 * u.2;
    let mut f = [0.0; Q];
    for (i, &(x, y, z)) in C.iter().enumerate() {
        let cu = x as f64 * u.0 + y as f64 * u.1 + z as f64 * u.2;
        f[i] = weight(i) * rho * (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * uu);
    }
    f
}

pub struct Lbm;

impl Kernel<Q> for Lbm {
    const NAME: &'static str = "lbm";
    const CELLS_PER_OP: u64 = 4;

    /// Density 1 +- 0.005 and velocity components +- 0.005 per cell, at
    /// equilibrium.
    fn init(seed: u64, _n: u64, c: u64) -> [f64; Q] {
        let v = |k: u64| 0.01 * (unit_value(seed, 4 * c + k) - 0.5);
        equilibrium(1.0 + v(0), (v(1), v(2), v(3)))
    }

    fn update(n: u64, c: u64, fetch: &mut dyn FnMut(u64) -> f64) -> [f64; Q] {
        let mut f = [0.0; Q];
        for (i, &(x, y, z)) in C.iter().enumerate() {
            // Pull: the distribution moving along c_i comes from x - c_i.
            f[i] = fetch(wrap(n, c, -x, -y, -z) * Q as u64 + i as u64);
        }
        let rho: f64 = f.iter().sum();
        let mut u = (0.0, 0.0, 0.0);
        for (i, &(x, y, z)) in C.iter().enumerate() {
            u.0 += x as f64 * f[i];
            u.1 += y as f64 * f[i];
            u.2 += z as f64 * f[i];
        }
        let u = (u.0 / rho, u.1 / rho, u.2 / rho);
        let feq = equilibrium(rho, u);
        for i in 0..Q {
            f[i] -= OMEGA * (f[i] - feq[i]);
        }
        f
    }
}

struct Program(Sweep);

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Program(Sweep::new::<Q>(a)))
}

impl Workload for Program {
    fn setup(&mut self, ctx: &mut TxCtx) {
        self.0.setup::<Q, Lbm>(ctx);
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        self.0.run_op::<Q, Lbm>(ctx);
    }
}

fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    check_sweep::<Q, Lbm>(img, region_base)
}

/// [`super::labels::DescribeFn`]: the sweep's root and the lattice cells'
/// distributions.
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    fn distribution(i: u64) -> String {
        format!("distribution f{i}")
    }
    super::program::describe_sweep("lbm", img, region_base, addr, Q as u64, Some(distribution))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::program::{read_f64, S_CURSOR, S_GRID, S_ITER, S_N, S_TOTAL0};
    use crate::workloads::testutil::*;
    use crate::workloads::ROOT_OFFSET;

    /// Steps conserve mass; the checker accepts the run and rejects a
    /// changed distribution, including one that keeps the mass.
    #[test]
    fn steps_conserve_mass_and_checker_detects_corruption() {
        let a = args(64, 256, 0, 0.5);
        let (img, _) = run_direct(&INFO, &a, 0);
        let r = BASE + ROOT_OFFSET;
        let n = img.read_u64(r + S_N);
        let cells = n.pow(3);
        let ops = cells.div_ceil(Lbm::CELLS_PER_OP);
        let (img, _) = run_direct(&INFO, &a, 2 * ops + ops / 2);
        assert_eq!(img.read_u64(r + S_ITER), 2);
        assert_eq!(check(&img, BASE, 64), Ok(cells));
        let g = img.read_u64(r + S_GRID);
        let mass: f64 = (0..cells * Q as u64)
            .map(|w| read_f64(&img, g + w * 8))
            .sum();
        let m0 = read_f64(&img, r + S_TOTAL0);
        assert!(((mass - m0) / m0).abs() < 1e-12, "{mass} vs {m0}");
        assert_detects(&INFO, &img, g + 8 * 40, 64);
        assert_detects(&INFO, &img, img.read_u64(r + S_GRID + 8) + 8 * 3, 64);
        let mut bad = img.clone();
        crate::mem::MemWrite::write_u64(&mut bad, r + S_CURSOR, img.read_u64(r + S_CURSOR) + 1);
        assert!(check(&bad, BASE, 64).is_err());
        // Mass moved between two distributions of a cell: total unchanged,
        // still rejected (the reference run differs).
        let mut bad = img.clone();
        let (x, y) = (read_f64(&img, g + 8), read_f64(&img, g + 16));
        crate::mem::MemWrite::write_u64(&mut bad, g + 8, (x + 1e-3).to_bits());
        crate::mem::MemWrite::write_u64(&mut bad, g + 16, (y - 1e-3).to_bits());
        assert!(check(&bad, BASE, 64).is_err());
    }
}
