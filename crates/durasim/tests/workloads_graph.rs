//! The programs without transactions (pagerank, cc,
//! cd, ann, kdtree, stencil3d, lbm) on the dual-page checkpointing preset
//! (configs/dpc.toml) at a tiny footprint: their checkers accept the final
//! image of a real run and reject a corrupted one, runs are deterministic,
//! the characteristics are reported, and `dpc` passes the epoch crash
//! oracle on a sample of crash points of each.

use durasim::config::Params;
use durasim::crash::{self, CrashOptions, PointSel};
use durasim::engine::{self, RunSpec};
use durasim::mem::{MemRead, MemWrite};
use durasim::schemes;
use durasim::workloads::{PROGRAMS, ROOT_OFFSET};

const DPC_TOML: &str = include_str!("../../../configs/dpc.toml");

/// dpc.toml with a tiny program (32 KiB per thread), 2 threads, epochs
/// short enough that a few hundred operations cross several checkpoints.
fn spec(scheme: &str, workload: &str, tx: u64, no_tx: bool) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.params = Params::defaults(&schemes::all_params());
    s.params.apply_toml(DPC_TOML, "configs/dpc.toml").unwrap();
    s.threads = 2;
    s.tx = tx;
    for (k, v) in [
        ("workload.footprint_bytes", "32768"),
        ("run.transactions", if no_tx { "false" } else { "true" }),
        ("checkpoint.epoch_cycles", "20000"),
        // A DRAM cache smaller than the programs, so pages are evicted.
        ("hybrid.dram_cache_bytes", "32768"),
        ("hybrid.dram_cache_ways", "4"),
        ("dpc.pool_bytes", "262144"),
        ("dpc.fallback_buffer_lines", "1024"),
        // Small CPU caches, so the tiny programs reach the DRAM cache.
        ("cache.llc_size_bytes", "16384"),
        ("cache.llc_ways", "4"),
        ("cache.l2_size_bytes", "8192"),
        ("cache.l2_ways", "4"),
        ("cache.l1_size_bytes", "4096"),
        ("cache.l1_ways", "4"),
    ] {
        s.params.set_str(k, v).unwrap();
    }
    s
}

/// Operations per run: enough to finish ann's and kdtree's builds (~115
/// and ~90 operations per thread at 32 KiB) and answer queries, and to run
/// several PageRank iterations and label passes.
const TX: u64 = 400;

#[test]
fn checkers_accept_real_runs_and_reject_corrupted_images() {
    for w in PROGRAMS {
        for no_tx in [true, false] {
            let e = engine::run(spec("ideal", w, TX, no_tx), &mut |_| {})
                .unwrap_or_else(|err| panic!("{w}: {err}"));
            assert_eq!(e.metrics().committed_tx, TX);
            e.check_equivalence().unwrap_or_else(|m| panic!("{w}: {m}"));
            e.check_invariants(&e.arch)
                .unwrap_or_else(|m| panic!("{w}: {m}"));
            e.check_invariants(e.ctx.nvm.media())
                .unwrap_or_else(|m| panic!("{w} (NVM after the final write-back): {m}"));
            // A size word of the root (edge count, query count or seed).
            let a = e.ctx.layout.thread_base(1) + ROOT_OFFSET + 8;
            let mut bad = e.arch.clone();
            bad.write_u64(a, e.arch.read_u64(a) ^ 0x10);
            assert!(
                e.check_invariants(&bad).is_err(),
                "{w}: corruption accepted"
            );
        }
    }
}

#[test]
fn same_seed_gives_identical_metrics_and_characteristics_are_reported() {
    for w in PROGRAMS {
        let a = engine::run(spec("ideal", w, TX, true), &mut |_| {}).unwrap();
        let b = engine::run(spec("ideal", w, TX, true), &mut |_| {}).unwrap();
        assert_eq!(a.metrics(), b.metrics(), "{w} not deterministic");
        let m = a.metrics();
        // Two threads' programs of at most 32 KiB (grids round down to a
        // whole cube: lbm's 4^3 cells are 19 KiB) plus region headers.
        assert!(
            m.footprint_bytes >= 2 * 16384 && m.footprint_bytes < 2 * 32768 + 16 * 4096,
            "{w}: footprint {}",
            m.footprint_bytes
        );
        assert!(m.read_write_ratio > 1.0, "{w}: {}", m.read_write_ratio);
        assert!((0.0..=1.0).contains(&m.dram_cache_miss_ratio));
        assert!(
            m.dram_cache_miss_ratio > 0.0,
            "{w}: the 32 KiB DRAM cache misses"
        );
        assert!(m.memory_read_write_ratio > 0.0, "{w}");
        let mut s = spec("ideal", w, TX, true);
        s.seed = 9;
        let c = engine::run(s, &mut |_| {}).unwrap();
        c.check_invariants(&c.arch).unwrap();
    }
}

/// dpc on dpc.toml: the epoch crash oracle (exact checkpoint images and
/// CPU contexts) on 150 sampled crash points of each program, clean and
/// torn.
#[test]
fn dpc_passes_the_epoch_oracle_on_every_program() {
    let info = schemes::find("dpc").unwrap();
    for w in PROGRAMS {
        let s = spec("dpc", w, TX, true);
        let e = engine::run(s.clone(), &mut |_| {}).unwrap();
        assert!(
            e.checkpoints.len() >= 3,
            "{w}: {} checkpoints",
            e.checkpoints.len()
        );
        let opts = CrashOptions {
            points: PointSel::Sampled(150),
            torn: true,
            recovery_crashes: 1,
            ..CrashOptions::default()
        };
        let r = crash::crashtest_with(info, s, &opts, &mut |_, _| {}).unwrap();
        assert_eq!(r.violations, 0, "{w}: {:?}", r.first_violation);
        assert!(
            r.crash_points_tested >= 150,
            "{w}: {}",
            r.crash_points_tested
        );
    }
}

/// Sizes come from workload.footprint_bytes, and one too large for the
/// NVM is a clear input error naming the knob.
#[test]
fn footprint_knob_sizes_programs_and_is_checked() {
    let mut s = spec("ideal", "stencil3d", 100, true);
    s.params.set_str("workload.footprint_bytes", "1M").unwrap();
    let e = engine::run(s, &mut |_| {}).unwrap();
    let f = e.metrics().footprint_bytes;
    assert!(f > 2 * 900_000 && f < 2 * 1_100_000, "{f}");
    let mut s = spec("ideal", "pagerank", 100, true);
    s.params.set_str("workload.footprint_bytes", "8G").unwrap();
    let err = engine::run(s, &mut |_| {})
        .err()
        .expect("rejected")
        .to_string();
    assert!(err.contains("workload.footprint_bytes"), "{err}");
}
