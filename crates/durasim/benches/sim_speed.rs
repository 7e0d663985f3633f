//! Simulator speed: simulated memory operations (loads + stores) per host
//! second on btree / 8 threads / 100 000 transactions with the HOOP preset
//! (`configs/hoop.toml`, the HOOP paper's machine), for the engine alone (`ideal`)
//! and with HOOP. Only `Engine::run` is timed (not setup, nor the final
//! drain): HOOP's one GC pass of this run (on demand, when the drain's
//! write-backs fill the mapping table) is outside the timed window, and
//! the window (~15 M cycles) is shorter than one 10 ms GC period.
//! Each runs with the op streams generated on a second host thread (what
//! `--gen-thread auto` does for a lone run on a host with two or more CPUs,
//! workloads/feed.rs) and inline (`_inline`, one host thread: the engine's
//! own speed).
//! Run: `cargo bench -p durasim --bench sim_speed`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use durasim::engine::GenThread;
use durasim::{schemes, Engine, Params, RunSpec};
use std::path::Path;

// The heap the CLI and the Python module use (huge pages for large blocks).
#[global_allocator]
static HEAP: durasim::alloc::HugePageAlloc = durasim::alloc::HugePageAlloc;

const THREADS: usize = 8;
const TX: u64 = 100_000;

fn spec(scheme: &str) -> RunSpec {
    let mut spec = RunSpec::new(scheme, "btree").expect("registered scheme/workload");
    let mut p = Params::defaults(&schemes::all_params());
    let preset = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/hoop.toml");
    let text = std::fs::read_to_string(&preset).expect("configs/hoop.toml is readable");
    p.apply_toml(&text, "configs/hoop.toml")
        .expect("configs/hoop.toml is valid");
    spec.params = p;
    spec.threads = THREADS;
    spec.tx = TX;
    spec.seed = 1;
    spec
}

fn sim_speed(c: &mut Criterion) {
    let mut g = c.benchmark_group("sim_speed");
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(20));
    for (scheme, gen) in [
        ("ideal", GenThread::On),
        ("hoop", GenThread::On),
        ("ideal", GenThread::Off),
        ("hoop", GenThread::Off),
    ] {
        let mut spec = spec(scheme);
        spec.gen_thread = gen;
        // The op count is deterministic for a seed: measure it once.
        let mut probe = Engine::new(spec.clone()).expect("engine");
        probe.run(&mut |_| {}).expect("run");
        g.throughput(Throughput::Elements(probe.sim_info().sim_mem_ops));
        drop(probe);
        let inline = if gen == GenThread::Off { "_inline" } else { "" };
        let id = format!("btree_{scheme}_{THREADS}threads_{TX}tx{inline}");
        g.bench_function(id, |b| {
            b.iter_batched(
                || Engine::new(spec.clone()).expect("engine"),
                |mut e| {
                    e.run(&mut |_| {}).expect("run");
                    e
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, sim_speed);
criterion_main!(benches);
