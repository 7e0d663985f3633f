//! HOOP-paper baselines (opt-undo, opt-redo, lad, osp, lsm): end-of-run
//! equivalence on every workload, and crash consistency under each scheme's
//! stress settings with the generic oracle (crate::crash).

use durasim::crash::{self, CrashOptions, PointSel};
use durasim::engine::Engine;
use durasim::schemes;
use durasim::{workloads, RunSpec};

const BASELINES: &[&str] = &["opt-undo", "opt-redo", "lad", "osp", "lsm"];

fn spec(scheme: &str, workload: &str, threads: usize, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.threads = threads;
    s.tx = tx;
    s.seed = 7;
    s.params.set_str("run.check_reads", "true").unwrap();
    s.params.set_str("workload.initial_items", "64").unwrap();
    // Small caches so that mid-transaction evictions happen often.
    for (k, v) in [
        ("cache.llc_size_bytes", "8KB"),
        ("cache.llc_ways", "2"),
        ("cache.l2_size_bytes", "4KB"),
        ("cache.l2_ways", "2"),
        ("cache.l1_size_bytes", "1KB"),
        ("cache.l1_ways", "2"),
    ] {
        s.params.set_str(k, v).unwrap();
    }
    for (k, v) in sets {
        s.params.set_str(k, v).unwrap();
    }
    s
}

fn run_equiv(scheme: &str, workload: &str, item_bytes: u64) -> Engine {
    let ib = item_bytes.to_string();
    let mut e = Engine::new(spec(
        scheme,
        workload,
        4,
        400,
        &[("workload.item_bytes", &ib)],
    ))
    .unwrap_or_else(|err| panic!("{scheme}/{workload}: {err}"));
    e.run(&mut |_| {})
        .unwrap_or_else(|err| panic!("{scheme}/{workload}: {err}"));
    e.finish();
    if let Err(msg) = e.check_equivalence() {
        panic!("{scheme}/{workload}/{item_bytes}B: {msg}");
    }
    e.check_invariants(e.ctx.nvm.media())
        .unwrap_or_else(|m| panic!("{scheme}/{workload}: {m}"));
    e
}

#[test]
fn end_of_run_equivalence_every_workload() {
    for scheme in BASELINES {
        for wl in workloads::names() {
            for ib in [64, 1024] {
                let e = run_equiv(scheme, wl, ib);
                assert_eq!(e.metrics().committed_tx, 400);
            }
        }
    }
}

/// Crash-test with the generic oracle (crate::crash): every persist point,
/// clean and torn, with crashes injected into recovery.
fn crash_all(
    scheme: &str,
    workload: &str,
    threads: usize,
    tx: u64,
    sets: &[(&str, &str)],
) -> (u64, Vec<(&'static str, f64)>) {
    let mut s = spec(scheme, workload, threads, tx, sets);
    s.record_history = true;
    // The scheme statistics of the same run, for the stress assertions.
    let mut e = Engine::new(s.clone()).unwrap();
    e.run(&mut |_| {}).unwrap();
    let stats = e.scheme.stats();
    let opts = CrashOptions {
        points: PointSel::All,
        torn: true,
        recovery_crashes: 2,
        ..CrashOptions::default()
    };
    let r = crash::crashtest(s, &opts, &mut |_, _| {}).unwrap();
    assert_eq!(
        r.violations,
        0,
        "{scheme} x {workload}: {}",
        r.first_violation
            .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
            .unwrap_or_default()
    );
    assert!(r.crash_points_tested > r.persist_events && r.torn_points_tested > 0);
    (r.crash_points_tested, stats)
}

fn get(st: &[(&'static str, f64)], k: &str) -> f64 {
    st.iter().find(|s| s.0 == k).unwrap().1
}

/// Small caches (mid-transaction write-backs), 1 KB items, every point,
/// torn writes: every baseline.
#[test]
fn crash_consistency_small_caches_torn() {
    // Every workload is crash-tested with default parameters by
    // crash_oracle.rs; here three structurally different ones, stressed.
    for scheme in BASELINES {
        for wl in ["vector", "rbtree", "tpcc"] {
            let tx = if wl == "tpcc" { 6 } else { 30 };
            let (n, _) = crash_all(scheme, wl, 2, tx, &[("workload.item_bytes", "1024")]);
            assert!(n > 100, "{scheme}/{wl}: {n} points");
        }
    }
}

/// Background work under stress: checkpoints every 1 us and a tiny log
/// (forced checkpoints), so crash points fall inside checkpoints.
#[test]
fn crash_consistency_with_frequent_checkpoints() {
    let (_, st) = crash_all(
        "opt-redo",
        "vector",
        2,
        80,
        &[
            ("opt-redo.checkpoint_period_ms", "0.001"),
            ("opt-redo.log_bytes_per_core", "64KB"),
            ("workload.item_bytes", "1024"),
        ],
    );
    assert!(get(&st, "checkpoints") > 10.0, "{st:?}");
    assert!(get(&st, "held_evictions") > 0.0, "{st:?}");
}

/// LAD with a tiny staging partition: most lines take the undo fallback.
#[test]
fn crash_consistency_lad_overflow() {
    let (_, st) = crash_all(
        "lad",
        "vector",
        2,
        60,
        &[
            ("lad.staging_lines_per_core", "3"),
            ("workload.item_bytes", "1024"),
        ],
    );
    assert!(get(&st, "staging_overflow_txs") > 10.0, "{st:?}");
}

/// LAD across two controllers with a small queue each: the commit updates
/// two headers, and lines that find their controller's queue full spill.
#[test]
fn crash_consistency_lad_two_controllers_spilling() {
    let (_, st) = crash_all(
        "lad",
        "vector",
        2,
        60,
        &[
            ("lad.controllers", "2"),
            ("lad.staging_lines_total", "8"),
            ("workload.item_bytes", "1024"),
        ],
    );
    assert!(get(&st, "staging_pool_full_lines") > 10.0, "{st:?}");
    assert!(get(&st, "staging_pool_max_lines") <= 8.0, "{st:?}");
}

/// Opt-undo dropping queued records at commit, with a small queue so that
/// records also spill to the NVM log mid-transaction; torn writes.
#[test]
fn crash_consistency_opt_undo_dropping_queued_records() {
    for records in ["32", "4"] {
        let (_, st) = crash_all(
            "opt-undo",
            "vector",
            2,
            60,
            &[
                ("opt-undo.drop_queued_records", "true"),
                ("opt-undo.log_queue_records", records),
                ("workload.item_bytes", "1024"),
            ],
        );
        assert!(get(&st, "undo_records_dropped") > 0.0, "{st:?}");
        if records == "4" {
            assert!(get(&st, "undo_records_spilled") > 0.0, "{st:?}");
        }
    }
}

/// OSP with a one-entry TLB: pages are consolidated all the time, also
/// while their lines are being written (deferred consolidation).
#[test]
fn crash_consistency_osp_consolidation() {
    let (_, st) = crash_all(
        "osp",
        "vector",
        2,
        80,
        &[
            ("osp.l1_tlb_sets", "1"),
            ("osp.l1_tlb_ways", "1"),
            ("osp.l2_tlb_sets", "1"),
            ("osp.l2_tlb_ways", "1"),
            ("workload.item_bytes", "1024"),
        ],
    );
    assert!(get(&st, "consolidations") > 20.0, "{st:?}");
    assert!(get(&st, "tlb_shootdowns") > 0.0, "{st:?}");
    assert!(get(&st, "deferred_consolidations") > 0.0, "{st:?}");
}

/// LSM with GC every 1 us in a tiny log of small segments: cleaning and
/// live copies happen during the run.
#[test]
fn crash_consistency_lsm_gc() {
    let (_, st) = crash_all(
        "lsm",
        "vector",
        2,
        // An update appends one field and its seal (about 130 B of log per
        // transaction), so freeing several 4 KB segments takes ~300 tx.
        300,
        &[
            ("lsm.gc_period_ms", "0.001"),
            ("lsm.segment_bytes", "4KB"),
            ("lsm.gc_victim_utilization", "0.9"),
            ("workload.initial_items", "4"),
            ("workload.update_ratio", "1.0"),
            ("workload.item_bytes", "1024"),
        ],
    );
    assert!(get(&st, "gc_segments_freed") > 5.0, "{st:?}");
    assert!(get(&st, "gc_words_copied") > 0.0, "{st:?}");
}

#[test]
fn registered() {
    for s in BASELINES {
        assert!(schemes::find(s).is_ok());
    }
}

/// configs/hoop.toml parses and states exactly the defaults.
#[test]
fn baseline_config_matches_defaults() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/hoop.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let mut p = durasim::Params::defaults(&schemes::all_params());
    p.apply_toml(&text, path).unwrap();
    assert!(p.overrides().is_empty(), "{:?}", p.overrides());
    for s in BASELINES {
        let info = schemes::find(s).unwrap();
        // Test-only mutant switches are not model settings.
        for spec in info.params.iter().filter(|s| !s.key.ends_with(".mutant")) {
            let (sec, key) = spec.key.split_once('.').unwrap();
            assert!(
                text.contains(&format!("[{sec}]")) && text.contains(&format!("\n{key} = ")),
                "{} missing from the config",
                spec.key
            );
        }
    }
}
