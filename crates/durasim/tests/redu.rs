//! REDU (schemes/logging/redu.rs, EHOU's baseline): exhaustive crash
//! verification on small runs of every transactional workload (clean and
//! torn points, crashes inside recovery, crash points inside the background
//! application), and the DRAM cache serving logged-but-not-applied lines.

use durasim::crash::{self, CrashOptions, PointSel};
use durasim::engine::Engine;
use durasim::schemes::{self, Durability};
use durasim::workloads;
use durasim::{Params, RunSpec};

fn spec(workload: &str, threads: usize, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new("redu", workload).unwrap();
    s.params = Params::defaults(&schemes::all_params());
    s.threads = threads;
    s.tx = tx;
    s.seed = 5;
    s.params.set_str("run.check_reads", "true").unwrap();
    s.params.set_str("workload.initial_items", "64").unwrap();
    if workload == "tpcc" {
        s.params.set_str("workload.tpcc_items", "2000").unwrap();
        s.params
            .set_str("workload.tpcc_customers_per_district", "300")
            .unwrap();
    }
    // Small caches: lines of running and committed-not-applied
    // transactions leave the LLC and are read back through the DRAM cache.
    for (k, v) in [
        ("cache.llc_size_bytes", "8KB"),
        ("cache.llc_ways", "2"),
        ("cache.l2_size_bytes", "4KB"),
        ("cache.l2_ways", "2"),
        ("cache.l1_size_bytes", "1KB"),
        ("cache.l1_ways", "2"),
    ]
    .iter()
    .chain(sets)
    {
        s.params.set_str(k, v).unwrap();
    }
    s
}

fn stat(e: &Engine, k: &str) -> f64 {
    e.scheme
        .stats()
        .iter()
        .find(|s| s.0 == k)
        .unwrap_or_else(|| panic!("no stat {k}"))
        .1
}

#[test]
fn registered_at_commit() {
    assert_eq!(
        schemes::find("redu").unwrap().durability,
        Durability::AtCommit
    );
}

/// Every persist point of small runs, clean and torn, two crashes inside
/// each recovery, on every transactional workload; crash points fall inside
/// the background application.
#[test]
fn crash_consistency_every_workload_small_caches_torn() {
    for wl in workloads::names() {
        let tx = if wl == "tpcc" { 12 } else { 100 };
        // A small DRAM cache and log also force applications from the
        // store path.
        let s = spec(wl, 2, tx, &[("redu.dram_cache_bytes", "8KB")]);
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
            "redu x {wl}: {}",
            r.first_violation
                .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                .unwrap_or_default()
        );
        assert!(r.crash_points_tested > r.persist_events && r.torn_points_tested > 0);
        let apply = r.background_by_kind.iter().find(|k| k.0 == "apply");
        assert!(
            apply.is_some_and(|a| a.2 > 0),
            "{wl}: no crash point inside the application: {:?}",
            r.background_by_kind
        );
    }
}

/// A crash at every write of recovery (then recovery again) recovers the
/// same state: recovery is crash safe.
#[test]
fn recovery_is_crash_safe() {
    let s = spec("hashmap", 2, 60, &[]);
    let opts = CrashOptions {
        recovery_crashes: u64::MAX,
        ..CrashOptions::default()
    };
    let r = crash::crashtest(s, &opts, &mut |_, _| {}).unwrap();
    assert_eq!(
        r.violations,
        0,
        "{:?}",
        r.first_violation.map(|v| v.message)
    );
    assert!(r.recovery_crashes_tested > r.crash_points_tested);
}

/// With application held back (a long period), committed lines stay in
/// the DRAM cache: loads that miss the LLC are served from it and return
/// the new values (every load is checked against the architectural value),
/// the logical image matches while home does not hold them yet, and the
/// end of the run applies them home.
#[test]
fn dram_cache_serves_logged_not_applied_lines() {
    let mut e = Engine::new(spec(
        "vector",
        1,
        200,
        &[
            ("redu.apply_period_us", "1000000"),
            ("redu.dram_cache_bytes", "16MB"),
            // Updates of 1 KB items spread over 64 KB (> the 8 KB LLC):
            // items updated earlier are read again after their eviction.
            ("workload.update_ratio", "1.0"),
            ("workload.item_bytes", "1024"),
        ],
    ))
    .unwrap();
    e.run(&mut |_| {}).unwrap();
    assert!(stat(&e, "redo_records") > 100.0);
    assert_eq!(stat(&e, "applied_lines"), 0.0, "nothing is home yet");
    assert!(
        stat(&e, "dram_cache_read_hits") > 20.0,
        "{}",
        stat(&e, "dram_cache_read_hits")
    );
    // Through the DRAM cache the program's data is all there ...
    e.check_equivalence().unwrap();
    // ... while home lacks it (every committed line is still in DRAM).
    let stale = e.check_invariants(e.ctx.nvm.media()).is_err() || {
        let mut found = false;
        let mut buf = [0u8; 64];
        let mut home = [0u8; 64];
        let base = e.ctx.layout.thread_base(0);
        for a in (base..base + (1 << 20)).step_by(64) {
            e.scheme.read_logical(&e.ctx, a, &mut buf);
            e.ctx.nvm.peek(a, &mut home);
            if buf != home {
                found = true;
                break;
            }
        }
        found
    };
    assert!(stale, "home already held every committed line");
    e.finish();
    assert!(stat(&e, "applied_lines") > 0.0);
    e.check_equivalence().unwrap();
    e.check_invariants(e.ctx.nvm.media()).unwrap();
    // PM write overhead = log + application writes (+ log headers).
    let overhead = stat(&e, "pm_write_overhead_bytes");
    let log = stat(&e, "log_bytes");
    let applied = stat(&e, "applied_lines") * 64.0;
    assert!(overhead >= log + applied && overhead <= log + applied + 64.0 * 8.0);
}

/// The background application keeps the log short: with the default
/// period it runs many times and truncates the log, and repeated updates
/// of a line between applications are written home once.
#[test]
fn application_runs_in_the_background_and_truncates() {
    let mut e = Engine::new(spec("vector", 2, 400, &[])).unwrap();
    e.run(&mut |_| {}).unwrap();
    assert!(stat(&e, "applications") > 20.0);
    assert!(stat(&e, "log_header_writes") > 20.0);
    assert_eq!(stat(&e, "forced_applications"), 0.0);
    e.finish();
    e.check_equivalence().unwrap();
    assert!(stat(&e, "applied_lines") <= stat(&e, "redo_records"));
}
