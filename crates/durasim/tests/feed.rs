//! `--gen-thread` (workloads/feed.rs): generating the op streams on a
//! second host thread changes nothing simulated. Every workload under
//! schemes of each kind (checkpointing ones included, whose engine
//! applies the stores to its own image), and every scheme on one
//! workload, reports the
//! same JSON (apart from the host-speed `sim` block) with the producer
//! thread on and off; the architectural image comes back whole (the
//! drained home image equals it); a run that fails mid-way reports the
//! same error either way and leaves no thread behind.

mod common;

use durasim::engine::{run, GenThread, RunSpec};
use durasim::{schemes, workloads};

fn spec(scheme: &str, workload: &str, gen: GenThread) -> RunSpec {
    let mut s = common::small_spec(scheme, workload, 5);
    s.tx = 300;
    s.gen_thread = gen;
    s
}

/// Run `scheme` on `workload` with the producer thread on and off: equal
/// reports; returns whether the "on" run used the thread.
fn same_both_ways(scheme: &str, workload: &str) -> bool {
    let on = run(spec(scheme, workload, GenThread::On), &mut |_| {})
        .unwrap_or_else(|e| panic!("{scheme}/{workload} (thread): {e}"));
    let off = run(spec(scheme, workload, GenThread::Off), &mut |_| {})
        .unwrap_or_else(|e| panic!("{scheme}/{workload} (inline): {e}"));
    let (mut a, mut b) = (on.report_json(), off.report_json());
    let fed = a["sim"]["gen_thread"].as_bool().expect("sim.gen_thread");
    assert_eq!(b["sim"]["gen_thread"], false, "{scheme}/{workload}");
    assert_eq!(a["sim"]["sim_mem_ops"], b["sim"]["sim_mem_ops"]);
    a.as_object_mut().unwrap().remove("sim");
    b.as_object_mut().unwrap().remove("sim");
    assert!(
        a == b,
        "{scheme}/{workload}: reports differ with the generator thread"
    );
    // The image the producer thread wrote came back to the engine whole.
    on.check_equivalence()
        .unwrap_or_else(|m| panic!("{scheme}/{workload} (thread): {m}"));
    assert_eq!(
        on.metrics().footprint_bytes,
        off.metrics().footprint_bytes,
        "{scheme}/{workload}"
    );
    fed
}

#[test]
fn every_workload_gives_the_same_report_with_the_generator_thread() {
    // The engine alone, a hardware scheme, a software scheme that rewrites
    // the op stream (instrumentation) and a log-structured one.
    for scheme in ["ideal", "hoop", "pmdk-undo", "lsm"] {
        for wl in workloads::REGISTRY {
            assert!(same_both_ways(scheme, wl.name), "{scheme}/{}", wl.name);
        }
    }
}

#[test]
fn every_scheme_gives_the_same_report_with_the_generator_thread() {
    // Checkpointing schemes (their media pages depend on the engine's
    // image) generate on a copy while the engine applies the stores.
    for s in schemes::REGISTRY {
        assert!(same_both_ways(s.name, "btree"), "{}", s.name);
    }
}

#[test]
fn checkpointing_schemes_give_the_same_report_on_every_workload() {
    for scheme in ["dpc", "thynvm", "ckpt-cow"] {
        let checkpoints = durasim::Engine::new(spec(scheme, "btree", GenThread::On))
            .unwrap()
            .checkpoints_enabled();
        assert!(checkpoints, "{scheme} checkpoints");
        for wl in workloads::REGISTRY {
            assert!(same_both_ways(scheme, wl.name), "{scheme}/{}", wl.name);
        }
    }
}

#[test]
fn a_run_failing_midway_reports_the_same_error_either_way() {
    let failing = |gen| {
        let mut s = RunSpec::new("ideal", "vector").unwrap();
        s.threads = 4;
        s.tx = 200_000;
        s.gen_thread = gen;
        // 4 MiB per thread: the vector outgrows it mid-run.
        s.params.set_str("nvm.capacity_bytes", "16777216").unwrap();
        match run(s, &mut |_| {}) {
            Ok(_) => panic!("the run should run out of memory"),
            Err(e) => (e.to_string(), e.exit_code()),
        }
    };
    let on = failing(GenThread::On);
    assert!(
        on.0.contains("smaller than the workload footprint"),
        "{}",
        on.0
    );
    assert_eq!(on, failing(GenThread::Off));
}

#[test]
fn auto_leaves_the_producer_out_of_a_parallel_grid() {
    // A run on a rayon pool's thread (`compare`) finds every CPU busy.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let fed = pool.install(|| {
        run(spec("ideal", "btree", GenThread::Auto), &mut |_| {})
            .unwrap()
            .sim_info()
            .gen_thread
    });
    assert!(!fed, "auto must not start a producer inside a grid");
}
