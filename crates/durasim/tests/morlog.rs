//! MorLog (issue 18 parts 1-4 and 6): `morlog` and `morlog-dp` run, keep
//! home equal to the architectural image, survive every crash point of
//! every transactional workload with each encoding (and crashes inside
//! recovery); planted mutants fail with a replay line; the ordering rule
//! (no home write of a word before its undo is persisted) holds over random
//! store sequences.

use durasim::crash::{self, CrashOptions, CrashReport};
use durasim::engine::{self, RunSpec};

/// Small caches: L1 evictions, redo entries and steals within a few
/// transactions.
const SMALL: &[(&str, &str)] = &[
    ("cache.l1_size_bytes", "1KB"),
    ("cache.l1_ways", "2"),
    ("cache.l2_size_bytes", "2KB"),
    ("cache.l2_ways", "2"),
    ("cache.llc_size_bytes", "4KB"),
    ("cache.llc_ways", "2"),
];

fn spec(scheme: &str, workload: &str, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.threads = 2;
    s.tx = tx;
    s.seed = 3;
    for (k, v) in SMALL.iter().chain(sets) {
        s.params.set_str(k, v).unwrap();
    }
    s
}

fn crashtest(s: RunSpec, opts: &CrashOptions) -> CrashReport {
    let name = format!("{} x {}", s.scheme, s.workload);
    crash::crashtest(s, opts, &mut |_, _| {}).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn stat(e: &engine::Engine, key: &str) -> f64 {
    e.scheme
        .stats()
        .into_iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("no stat {key}"))
        .1
}

fn period(scheme: &str) -> String {
    format!("{scheme}.period_cycles")
}

/// Both variants run with the scan truncating the log, end with home equal
/// to the architectural image, and exercise every path of the design.
#[test]
fn morlog_runs_and_exercises_every_path() {
    for scheme in ["morlog", "morlog-dp"] {
        let key = period(scheme);
        let mut s = spec(scheme, "echo", 300, &[(key.as_str(), "5000")]);
        s.params.set_str("run.warmup_tx_share", "0").unwrap();
        let e = engine::run(s, &mut |_| {}).unwrap();
        e.check_equivalence().unwrap();
        for k in [
            "undo_redo_entries_created",
            "redo_entries_created",
            "redo_entries_on_l1_evict",
            "redo_kept_in_l1",
            "redo_buffer_discarded",
            "undo_redo_buffer_coalesced",
            "retired_tx",
            "log_head_advances",
            "log_bits_written",
        ] {
            assert!(stat(&e, k) > 0.0, "{scheme}: {k} = 0");
        }
        assert_eq!(stat(&e, "order_waits"), 0.0, "{scheme}: N < traversal");
        if scheme == "morlog" {
            assert!(stat(&e, "redo_entries_at_commit") > 0.0);
        } else {
            assert_eq!(stat(&e, "redo_entries_at_commit"), 0.0);
            assert!(stat(&e, "redo_entries_on_newer_tx") > 0.0);
        }
        println!("{scheme}: {:?}", e.scheme.stats());
    }
}

/// Every crash point (clean and torn) of small runs of every transactional
/// workload with each encoding, for both variants.
#[test]
fn morlog_survives_every_crash_point_of_every_workload_and_encoding() {
    for scheme in ["morlog", "morlog-dp"] {
        let key = period(scheme);
        for enc in ["none", "crade", "slde"] {
            let opts = CrashOptions {
                torn: enc == "none",
                ..CrashOptions::default()
            };
            for w in durasim::workloads::REGISTRY {
                let tx = match w.name {
                    "tpcc" => 12,
                    "echo" | "sps" | "sdg" => 30,
                    _ => 60,
                };
                let items = if w.name == "tatp" { "32" } else { "64" };
                let mut sets = vec![
                    (key.as_str(), "3000"),
                    ("nvm.encoding", enc),
                    ("workload.initial_items", items),
                ];
                if w.name == "tpcc" {
                    sets.push(("workload.tpcc_items", "2000"));
                    sets.push(("workload.tpcc_customers_per_district", "300"));
                }
                let r = crashtest(spec(scheme, w.name, tx, &sets), &opts);
                assert!(r.persist_events > 20, "{scheme} {} {enc}", w.name);
                assert_eq!(
                    r.violations,
                    0,
                    "{scheme} x {} ({enc}): {}",
                    w.name,
                    r.first_violation
                        .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                        .unwrap_or_default()
                );
            }
        }
    }
}

/// Crashes inside recovery: every one of recovery's own writes.
#[test]
fn morlog_recovery_survives_crashes_inside_it() {
    let opts = CrashOptions {
        recovery_crashes: u64::MAX,
        torn: true,
        ..CrashOptions::default()
    };
    for scheme in ["morlog", "morlog-dp"] {
        let key = period(scheme);
        for w in ["btree", "queue"] {
            let sets = [(key.as_str(), "1000"), ("workload.initial_items", "64")];
            let r = crashtest(spec(scheme, w, 40, &sets), &opts);
            assert!(r.recovery_crashes_tested > 100, "{scheme} {w}");
            assert!(r.background_points_tested > 0, "{scheme} {w}");
            assert_eq!(r.violations, 0, "{scheme} {w}: {:?}", r.first_violation);
        }
    }
}

/// The planted bugs fail the oracle with a replay line: the paper's literal
/// redo-discard-on-write-back rule, data overtaking their undo entries, and
/// a recovery that ignores morlog-dp's ulog counters.
#[test]
fn morlog_mutants_fail_with_a_replay_line() {
    for (scheme, mutant, workload, threads, tx) in [
        ("morlog", "discard-on-writeback", "echo", 2, 150),
        ("morlog", "no-order", "btree", 1, 300),
        ("morlog-dp", "no-order", "btree", 1, 300),
        ("morlog-dp", "ignore-counter", "echo", 1, 60),
    ] {
        let (key, mkey) = (period(scheme), format!("{scheme}.mutant"));
        let mut s = spec(
            scheme,
            workload,
            tx,
            &[(key.as_str(), "1000"), (mkey.as_str(), mutant)],
        );
        s.threads = threads;
        s.seed = 1;
        let r = crashtest(s, &CrashOptions::default());
        assert!(r.violations > 0, "{scheme} mutant {mutant} passed");
        let v = r.first_violation.expect("a first violation");
        assert!(
            v.replay.contains(&format!("--scheme {scheme}"))
                && v.replay.contains("--crash-at")
                && v.replay.contains(&format!("{mkey}={mutant}")),
            "{}",
            v.replay
        );
    }
}
