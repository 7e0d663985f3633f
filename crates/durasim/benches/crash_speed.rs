//! Crash-verification speed: crash points checked per host second, per
//! shipped durable scheme, on btree / 2 threads, exhaustive (every persist
//! point, up to 4 crashes inside each recovery). The
//! checkpoint schemes run on their hybrid-memory preset (configs/dpc.toml)
//! and are checked by the epoch oracle. Each iteration is one whole
//! `crashtest` (simulation with history + every point); the throughput is
//! the number of points it checks, so criterion's elements/s is points/s
//! including the simulation (the CLI's `points_per_second` excludes it).
//! Run: `cargo bench -p durasim --bench crash_speed` (one scheme:
//! `... --bench crash_speed -- osp`). `crash_resume` compares resumed
//! recovery scans with from-scratch recovery at every point.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use durasim::crash::{self, CrashOptions};
use durasim::schemes::{Durability, REGISTRY};
use durasim::RunSpec;

const TX: u64 = 200;

/// The hybrid-memory preset the checkpoint schemes are evaluated on.
const DPC_TOML: &str = include_str!("../../../configs/dpc.toml");

fn spec(scheme: &str) -> RunSpec {
    let mut s = RunSpec::new(scheme, "btree").expect("registered scheme/workload");
    if durasim::schemes::find(scheme).is_ok_and(|i| i.durability == Durability::Checkpoint) {
        s.params
            .apply_toml(DPC_TOML, "configs/dpc.toml")
            .expect("the shipped preset parses");
    }
    s.threads = 2;
    s.tx = TX;
    s.seed = 1;
    s
}

fn crash_speed(c: &mut Criterion) {
    let mut g = c.benchmark_group("crash_speed");
    g.sample_size(10);
    let opts = CrashOptions::default();
    // Every shipped scheme that promises durability (not `ideal`, not the
    // deliberately unsafe variants, which fail and stop early).
    let schemes = REGISTRY
        .iter()
        .filter(|i| i.durability != Durability::None && !i.name.contains("unsafe"))
        .map(|i| i.name);
    for scheme in schemes {
        // The point count is deterministic for a seed: measure it once.
        let probe = crash::crashtest(spec(scheme), &opts, &mut |_, _| {}).expect("crashtest");
        g.throughput(Throughput::Elements(probe.crash_points_tested));
        g.bench_function(format!("btree_{scheme}_2threads_{TX}tx"), |b| {
            b.iter(|| crash::crashtest(spec(scheme), &opts, &mut |_, _| {}).expect("crashtest"))
        });
    }
    g.finish();
}

/// Resumed recovery scans (recovery/scan.rs) against from-scratch recovery
/// of every point, on a run whose live log grows (opt-redo, 500 tx): the
/// gap widens with the run.
fn crash_resume(c: &mut Criterion) {
    let mut g = c.benchmark_group("crash_resume");
    g.sample_size(10);
    for scheme in ["opt-redo", "fwb"] {
        let mut s = spec(scheme);
        s.tx = 500;
        for resume in [true, false] {
            let opts = CrashOptions {
                resume_scans: resume,
                ..CrashOptions::default()
            };
            let probe = crash::crashtest(s.clone(), &opts, &mut |_, _| {}).expect("crashtest");
            g.throughput(Throughput::Elements(probe.crash_points_tested));
            let name = if resume { "resumed" } else { "from_scratch" };
            g.bench_function(format!("btree_{scheme}_2threads_500tx_{name}"), |b| {
                b.iter(|| crash::crashtest(s.clone(), &opts, &mut |_, _| {}).expect("crashtest"))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, crash_speed, crash_resume);
criterion_main!(benches);
