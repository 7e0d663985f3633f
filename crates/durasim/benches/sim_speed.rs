//! Simulator speed: simulated memory operations (loads + stores) per host
//! second, timing only `Engine::run` (not setup, nor the final drain).
//!
//! `sim_speed`: btree / 8 threads / 100 000 transactions with the HOOP
//! preset (`configs/hoop.toml`, the HOOP paper's machine), for the engine
//! alone (`ideal`) and with HOOP. HOOP's one GC pass of this run (on
//! demand, when the drain's write-backs fill the mapping table) is outside
//! the timed window, and the window (~15 M cycles) is shorter than one
//! 10 ms GC period. Each runs with the op streams generated on a second
//! host thread (what `--gen-thread auto` does for a lone run on a host
//! with two or more CPUs, workloads/feed.rs) and inline (`_inline`, one
//! host thread: the engine's own speed).
//!
//! `sim_speed_paper`: every registered scheme, and the MorLog paper's named
//! designs (presets), on its paper's preset with a workload that paper
//! runs, beside `ideal` on the same preset, workload and threads (the
//! ratio to it is the README's speed table; `scripts/speed_table.py`
//! prints the table from a run). Op streams on a second host thread.
//!
//! Run: `cargo bench -p durasim --bench sim_speed` (`make bench`); one
//! group: append `-- sim_speed_paper`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use durasim::engine::GenThread;
use durasim::{schemes, Engine, Params, RunSpec};
use std::path::Path;

// The heap the CLI and the Python module use (huge pages for large blocks).
#[global_allocator]
static HEAP: durasim::alloc::HugePageAlloc = durasim::alloc::HugePageAlloc;

const THREADS: usize = 8;
const TX: u64 = 100_000;

/// `scheme` (a registered scheme or a named design) on `workload` with
/// the preset `configs/<config>.toml`.
fn spec_on(scheme: &str, workload: &str, config: &str, threads: usize, tx: u64) -> RunSpec {
    let mut spec = RunSpec::new(scheme, workload).expect("registered scheme/workload");
    let mut p = Params::defaults(&schemes::all_params());
    let file = format!("configs/{config}.toml");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(&file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    p.apply_toml(&text, &file)
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    // A named design's settings go over the preset, as `--scheme` does.
    schemes::apply_preset(scheme, &mut p).expect("preset settings are valid");
    spec.params = p;
    spec.threads = threads;
    spec.tx = tx;
    spec.seed = 1;
    spec
}

fn spec(scheme: &str) -> RunSpec {
    spec_on(scheme, "btree", "hoop", THREADS, TX)
}

/// Beside criterion's files of benchmark `id`, the simulated work of its
/// run (`work.json`: memory operations, NVM write requests and DRAM bytes
/// written in the measured window), which `scripts/speed_table.py` prints
/// per operation next to the speed: a scheme that sends many writes per
/// operation simulates more per operation than `ideal`.
fn save_work(group: &str, id: &str, e: &Engine) {
    let m = e.metrics();
    let dir = criterion_home().join(group).join(id);
    let work = serde_json::json!({
        "mem_ops": m.loads + m.stores,
        "nvm_write_requests": m.nvm_write_requests_by_purpose.values().sum::<u64>(),
        "nvm_bytes_written": m.nvm_bytes_written,
        "dram_bytes_written": m.dram_bytes_written,
        // The diagnostic build whose memory system costs nothing
        // (`make bench-free`): its speeds are the schemes' own host cost.
        "free_memory": cfg!(feature = "free-memory"),
    });
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("work.json"), work.to_string());
    }
}

/// Criterion's output directory (`$CARGO_TARGET_DIR/criterion`, else
/// the workspace's `target/criterion`).
fn criterion_home() -> std::path::PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => Path::new(&t).join("criterion"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/criterion"),
    }
}

/// Time `spec`'s simulation loop as benchmark `id` of `g` (named
/// `group`), with its simulated memory operations as the throughput.
fn bench_run(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    group: &str,
    id: &str,
    spec: &RunSpec,
) {
    // The op count is deterministic for a seed: measure it once.
    let mut probe = Engine::new(spec.clone()).expect("engine");
    probe.run(&mut |_| {}).expect("run");
    g.throughput(Throughput::Elements(probe.sim_info().sim_mem_ops));
    save_work(group, id, &probe);
    drop(probe);
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
        let inline = if gen == GenThread::Off { "_inline" } else { "" };
        let id = format!("btree_{scheme}_{THREADS}threads_{TX}tx{inline}");
        bench_run(&mut g, "sim_speed", &id, &spec);
    }
    g.finish();
}

/// Each paper's preset: the workload the benchmark runs on it (one the
/// paper evaluates), threads (the paper's cores), transactions, and the
/// schemes whose paper it is (`osp`, in both HOOP's and EHOU's
/// evaluations, runs on HOOP's). `ideal` runs on every preset.
const PAPERS: &[(&str, &str, usize, u64, &[&str])] = &[
    // HOOP §5: btree among its micro-benchmarks, 8 threads (Table II).
    (
        "hoop",
        "btree",
        8,
        100_000,
        &["hoop", "opt-undo", "opt-redo", "lad", "osp", "lsm"],
    ),
    // MorLog §VI-A: btree micro-benchmark, 8 threads, the FWB and MorLog
    // designs with and without their encoders.
    (
        "morlog",
        "btree",
        8,
        100_000,
        &[
            "fwb",
            "fwb-unsafe",
            "morlog",
            "morlog-dp",
            "fwb-crade",
            "fwb-unsafe-crade",
            "fwb-slde",
            "morlog-crade",
            "morlog-slde",
            "morlog-dp-slde",
        ],
    ),
    // Dual-page checkpointing §5: TATP with four threads (its software
    // comparison's workload; every checkpointing design runs it).
    (
        "dpc",
        "tatp",
        4,
        100_000,
        &[
            "dpc",
            "ckpt-logging",
            "ckpt-cow",
            "thynvm",
            "page-overlay",
            "dudetm",
            "pmdk-undo",
        ],
    ),
    // EHOU §IV: btree, four copies (Table I: 4 cores).
    ("ehou", "btree", 4, 100_000, &["redu", "ehou"]),
];

fn sim_speed_paper(c: &mut Criterion) {
    let mut g = c.benchmark_group("sim_speed_paper");
    // Ten samples of equal run counts (one run each when a run takes
    // 0.5 s or more): 29 benchmarks in minutes, not the 55+ runs each of
    // criterion's linear sampling.
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(std::time::Duration::from_secs(1));
    g.measurement_time(std::time::Duration::from_secs(5));
    for &(config, workload, threads, tx, names) in PAPERS {
        for scheme in std::iter::once(&"ideal").chain(names) {
            let mut spec = spec_on(scheme, workload, config, threads, tx);
            spec.gen_thread = GenThread::On;
            // Parsed by scripts/speed_table.py: scheme@preset.
            bench_run(
                &mut g,
                "sim_speed_paper",
                &format!("{scheme}@{config}"),
                &spec,
            );
        }
    }
    g.finish();
}

/// Every registered scheme is benchmarked on some paper's preset.
fn check_coverage() {
    for info in schemes::REGISTRY {
        let covered = info.name == "ideal"
            || PAPERS.iter().any(|p| p.4.contains(&info.name))
            || cfg!(feature = "example-scheme") && info.name == "example-redo";
        assert!(
            covered,
            "scheme {} has no paper preset in the benchmark",
            info.name
        );
    }
}

fn all(c: &mut Criterion) {
    check_coverage();
    sim_speed(c);
    sim_speed_paper(c);
}

criterion_group!(benches, all);
criterion_main!(benches);
