//! Simulator speed: simulated memory operations (loads + stores) per host
//! second, on btree / 8 threads with the HOOP preset (issue 2, part 12).
//! Until the `btree` workload and the `hoop` scheme are registered, the
//! bench falls back to `vector` and `ideal` (it looks them up by name) and
//! says so in the benchmark id. Only `Engine::run` is timed (not setup or
//! the final drain). Run: `cargo bench -p durasim --bench sim_speed`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use durasim::{schemes, workloads, Engine, Params, RunSpec};
use std::path::Path;

const THREADS: usize = 8;
const TX: u64 = 40_000;

fn pick(preferred: &'static str, fallback: &'static str, found: bool) -> &'static str {
    if found {
        preferred
    } else {
        fallback
    }
}

fn spec() -> RunSpec {
    let scheme = pick("hoop", "ideal", schemes::find("hoop").is_ok());
    let workload = pick("btree", "vector", workloads::find("btree").is_ok());
    let mut spec = RunSpec::new(scheme, workload).expect("registered scheme/workload");
    let mut p = Params::defaults(&schemes::all_params());
    let preset = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/hoop.toml");
    if let Ok(text) = std::fs::read_to_string(&preset) {
        p.apply_toml(&text, "configs/hoop.toml")
            .expect("configs/hoop.toml is valid");
    }
    spec.params = p;
    spec.threads = THREADS;
    spec.tx = TX;
    spec.seed = 1;
    spec
}

fn sim_speed(c: &mut Criterion) {
    let spec = spec();
    // The op count is deterministic for a seed: measure it once.
    let mut probe = Engine::new(spec.clone()).expect("engine");
    probe.run(&mut |_| {}).expect("run");
    let ops = probe.sim_info().sim_mem_ops;
    drop(probe);

    let mut g = c.benchmark_group("sim_speed");
    g.throughput(Throughput::Elements(ops));
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(15));
    let id = format!(
        "{}_{}_{}threads_{}tx",
        spec.workload, spec.scheme, THREADS, TX
    );
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
    g.finish();
}

criterion_group!(benches, sim_speed);
criterion_main!(benches);
