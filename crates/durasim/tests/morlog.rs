//! MorLog: `morlog` and `morlog-dp` run, keep
//! home equal to the architectural image, survive every crash point of
//! every transactional workload with each encoding (and crashes inside
//! recovery); planted mutants fail with a replay line; the ordering rule
//! (no home write of a word before its undo is persisted) holds over random
//! store sequences.

use durasim::crash::CrashOptions;
use durasim::engine;

mod common;
use common::{crash_every_workload, crashtest, durasim, spec, stat};

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
            "log_bits_before_encoding",
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
            crash_every_workload(scheme, enc, &[(key.as_str(), "3000")]);
        }
    }
}

/// The settings of the transaction-table tests: a 4-entry table (full
/// often with two threads: the fallback write-backs run), a 64 KiB log
/// (2,048 slots, room for TPC-C's largest transactions: the ring wraps and
/// the head is persisted in the longer runs).
fn tx_table_sets(scheme: &str) -> Vec<(String, String)> {
    vec![
        (format!("{scheme}.log_management"), "tx-table".into()),
        (format!("{scheme}.tx_table_entries"), "4".into()),
        (format!("{scheme}.log_bytes"), "65536".into()),
    ]
}

fn as_refs(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(k, x)| (k.as_str(), x.as_str())).collect()
}

/// tx-table: no scan; the table fills, its fallback writes lines back,
/// counters release lines, the head moves and is persisted; home equals
/// the architectural image at the end.
#[test]
fn tx_table_runs_and_reclaims_the_log() {
    for scheme in ["morlog", "morlog-dp"] {
        let sets = tx_table_sets(scheme);
        let mut s = spec(scheme, "echo", 300, &as_refs(&sets));
        s.params.set_str("run.warmup_tx_share", "0").unwrap();
        let e = engine::run(s, &mut |_| {}).unwrap();
        e.check_equivalence().unwrap();
        assert_eq!(e.fwb.passes, 0, "{scheme}: no force-write-back scan");
        for k in [
            "tx_table_full_events",
            "tx_table_full_stall_cycles",
            "tx_table_lines_released",
            "log_entries_reclaimed",
            "log_head_persists",
            "retired_tx",
        ] {
            assert!(stat(&e, k) > 0.0, "{scheme}: {k} = 0");
        }
        assert_eq!(stat(&e, "tx_table_entries"), 4.0);
        // One spare entry: the transaction that found the table full.
        assert!(stat(&e, "tx_table_occupancy_max") <= 5.0);
        let mean = stat(&e, "tx_table_occupancy_mean");
        assert!(mean > 1.0 && mean <= 5.0, "{scheme}: mean {mean}");
        // Every committed transaction retires by the end of the run.
        assert_eq!(stat(&e, "retired_tx"), 300.0, "{scheme}");
        assert_eq!(stat(&e, "log_live_entries"), 0.0, "{scheme}");
    }
}

/// tx-table: every crash point of every transactional workload with each
/// encoding, for both variants.
#[test]
fn tx_table_survives_every_crash_point_of_every_workload_and_encoding() {
    for scheme in ["morlog", "morlog-dp"] {
        let sets = tx_table_sets(scheme);
        for enc in ["none", "crade", "slde"] {
            crash_every_workload(scheme, enc, &as_refs(&sets));
        }
    }
}

/// tx-table: releasing a line too early fails the oracle with a replay
/// line: at its L1 eviction while it is still dirty below (a counter of L1
/// lines only), or in its write-back before the data persist. The head is
/// persisted lazily (once the log behind it is 3/4 full), so the second
/// needs a small log and table (4 KiB, 2 entries, 1 thread: one of 5,135
/// points fails).
#[test]
fn tx_table_early_release_mutants_fail() {
    for scheme in ["morlog", "morlog-dp"] {
        let mkey = format!("{scheme}.mutant");
        for (mutant, log, entries, threads) in [
            ("release-on-l1-evict", "16384", "4", 2),
            ("release-early", "4096", "2", 1),
        ] {
            let mut sets = tx_table_sets(scheme);
            sets.push((format!("{scheme}.log_bytes"), log.into()));
            sets.push((format!("{scheme}.tx_table_entries"), entries.into()));
            sets.push((mkey.clone(), mutant.into()));
            sets.push(("workload.initial_items".into(), "64".into()));
            let mut s = spec(scheme, "btree", 300, &as_refs(&sets));
            s.threads = threads;
            s.seed = 1;
            let r = crashtest(s, &CrashOptions::default());
            assert!(r.violations > 0, "{scheme}: {mutant} passed");
            let v = r.first_violation.expect("a first violation");
            assert!(
                v.replay.contains(&format!("{mkey}={mutant}")) && v.replay.contains("--crash-at"),
                "{}",
                v.replay
            );
        }
    }
}

/// Bad log-management input: exit 2 naming the key, the choices and the
/// likely one; a table smaller than the thread count is refused.
#[test]
fn tx_table_bad_input_is_an_exit_2_error() {
    let run = |set: &str| {
        durasim(&[
            "run",
            "--scheme",
            "morlog",
            "--workload",
            "queue",
            "--tx",
            "10",
            "--set",
            set,
        ])
    };
    let (code, _, err) = run("morlog.log_management=tx-tabel");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("morlog.log_management")
            && err.contains("did you mean 'tx-table'")
            && err.contains("force-write-back, tx-table"),
        "{err}"
    );
    let (code, _, err) = durasim(&[
        "run",
        "--scheme",
        "morlog-dp",
        "--workload",
        "queue",
        "--tx",
        "10",
        "--threads",
        "4",
        "--set",
        "morlog-dp.log_management=tx-table",
        "--set",
        "morlog-dp.tx_table_entries=2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("morlog-dp.tx_table_entries = 2") && err.contains("at least 4"),
        "{err}"
    );
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
            // The same with the transaction table (no scan).
            let mut sets = tx_table_sets(scheme);
            sets.push(("workload.initial_items".into(), "64".into()));
            let r = crashtest(spec(scheme, w, 40, &as_refs(&sets)), &opts);
            assert!(r.recovery_crashes_tested > 100, "{scheme} {w} tx-table");
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
