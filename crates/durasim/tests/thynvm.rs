//! ThyNVM and page overlays: crash verification with
//! checkpoint semantics on small runs (every persist point, including the
//! points inside ThyNVM's overlapped checkpoint and page overlays' merge),
//! the planted bugs that must fail it, and the statistics that show the
//! mechanisms were exercised.

mod common;

use durasim::config::Params;
use durasim::crash::{self, CrashOptions, CrashReport};
use durasim::engine::RunSpec;

/// A small hybrid machine: 64 KB DRAM cache, short epochs, small tables so
/// evictions, mode switches, migrations and forced checkpoints happen.
fn spec(scheme: &str, workload: &str, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    s.threads = 2;
    s.tx = tx;
    for (k, v) in [
        ("hybrid.dram_cache_bytes", "65536"),
        ("hybrid.dram_cache_ways", "4"),
        ("checkpoint.epoch_cycles", "5000"),
        ("nvm.capacity_bytes", "268435456"),
        ("cache.llc_size_bytes", "16384"),
        ("cache.llc_ways", "4"),
        ("cache.l2_size_bytes", "8192"),
        ("cache.l2_ways", "4"),
        ("cache.l1_size_bytes", "4096"),
        ("cache.l1_ways", "4"),
        ("workload.initial_items", "256"),
        ("thynvm.btt_entries", "4096"),
        ("thynvm.ptt_entries", "256"),
        ("overlay.oms_bytes", "1048576"),
    ]
    .iter()
    .chain(sets)
    {
        s.params
            .set_str(k, v)
            .unwrap_or_else(|e| panic!("{k}: {e}"));
    }
    s
}

fn opts() -> CrashOptions {
    CrashOptions {
        recovery_crashes: 2,
        ..CrashOptions::default()
    }
}

fn crashtest(s: RunSpec) -> CrashReport {
    crash::crashtest(s, &opts(), &mut |_, _| {}).unwrap()
}

fn stats(s: RunSpec) -> std::collections::HashMap<&'static str, f64> {
    let e = durasim::engine::run(s, &mut |_| {}).unwrap();
    e.check_equivalence().unwrap();
    e.scheme.stats().into_iter().collect()
}

/// Long epochs on a 16 KB DRAM cache: pages are written back several
/// times per epoch, tables fill (forced checkpoints, BTT-pressure
/// switches), overlay segments outgrow their class. ThyNVM's thresholds
/// are lowered so these small programs switch modes often.
const STRESS: &[(&str, &str)] = &[
    ("hybrid.dram_cache_bytes", "16384"),
    ("cache.llc_size_bytes", "8192"),
    ("cache.l2_size_bytes", "4096"),
    ("cache.l1_size_bytes", "2048"),
    ("workload.initial_items", "4096"),
    ("checkpoint.epoch_cycles", "1000000"),
    ("thynvm.btt_entries", "256"),
    ("thynvm.to_page_threshold", "6"),
    ("thynvm.to_block_threshold", "3"),
    ("overlay.oms_bytes", "20480"),
];

#[test]
fn thynvm_switches_modes_overlaps_and_migrates() {
    let st = stats(spec("thynvm", "btree", 600, STRESS));
    for k in [
        "switches_to_page_mode",
        "switches_to_block_mode",
        "page_lines_written",
        "block_lines_written",
        "clean_lines_copied",
        "migration_lines_written",
        "overlapped_checkpoint_cycles",
        "forced_checkpoints",
    ] {
        assert!(st[k] > 0.0, "{k} = {}", st[k]);
    }
    assert_eq!(st["controller_index_bits_per_line"], 42.0);
}

#[test]
fn page_overlay_segments_migrate_and_overlays_merge() {
    let st = stats(spec("page-overlay", "btree", 600, STRESS));
    for k in [
        "segment_migrations",
        "migration_lines_copied",
        "merge_lines_written",
        "overlay_lines_written",
        "segments_512B",
        "forced_checkpoints",
    ] {
        assert!(st[k] > 0.0, "{k} = {}", st[k]);
    }
    assert_eq!(st["controller_pointer_bits_per_page"], 352.0);
}

#[test]
fn every_crash_point_recovers_the_last_checkpoint() {
    for scheme in ["thynvm", "page-overlay"] {
        for w in ["btree", "hashmap", "queue", "vector", "rbtree", "ycsb"] {
            let r = crashtest(spec(scheme, w, 200, &[]));
            assert_eq!(r.violations, 0, "{scheme} {w}: {:?}", r.first_violation);
            assert!(r.crash_points_tested > 100, "{scheme} {w}");
            // Crash points inside checkpoints (background work) were tested.
            assert!(r.background_points_tested > 0, "{scheme} {w}");
        }
    }
}

#[test]
fn mode_switches_migrations_forced_checkpoints_and_torn_writes_are_survived() {
    let o = CrashOptions {
        torn: true,
        ..opts()
    };
    for scheme in ["thynvm", "page-overlay"] {
        for w in ["btree", "hashmap"] {
            let r = crash::crashtest(spec(scheme, w, 600, STRESS), &o, &mut |_, _| {}).unwrap();
            assert_eq!(r.violations, 0, "{scheme} {w}: {:?}", r.first_violation);
            assert!(r.torn_points_tested > 0);
        }
    }
}

/// ThyNVM's switch written before its recovery context: a crash inside
/// the backup recovers a half-written context. Fails with a replay line
/// that fails again alone.
#[test]
fn thynvm_switch_before_backup_fails_with_a_replay_line() {
    let s = spec(
        "thynvm",
        "btree",
        150,
        &[("thynvm.mutant", "switch-before-backup")],
    );
    let r = crashtest(s.clone());
    common::assert_fails_with_a_replay_line(s, &opts(), &r, "thynvm.mutant=switch-before-backup");
}

/// Recovery scan bounds and page overlays' OMT backup: ThyNVM's and page
/// overlays' recoveries skipping the backup's last entry; the OMT backup
/// holding each page's overlay bit vector and segment but not its slot
/// pointers (recovery copies slot 0 for every overlay line). Each fails
/// the checkpoint oracle with a replay line that fails again alone, and
/// the configurations pass without them.
#[test]
fn scan_bound_and_backup_mutants_fail_with_a_replay_line() {
    for (scheme, key, value) in [
        ("thynvm", "thynvm.mutant", "scan-skips-last-entry"),
        ("page-overlay", "overlay.mutant", "backup-without-pointers"),
        ("page-overlay", "overlay.mutant", "scan-skips-last-entry"),
    ] {
        let s = spec(scheme, "btree", 150, &[(key, value)]);
        let r = crashtest(s.clone());
        common::assert_fails_with_a_replay_line(s, &opts(), &r, &format!("{key}={value}"));
    }
    for scheme in ["thynvm", "page-overlay"] {
        let r = crashtest(spec(scheme, "btree", 150, &[]));
        assert_eq!(r.violations, 0, "{scheme}: {:?}", r.first_violation);
    }
}

#[test]
fn planted_bugs_fail_the_checkpoint_oracle() {
    for (scheme, key, value) in [
        ("thynvm", "thynvm.mutant", "drop-penultimate"),
        ("page-overlay", "overlay.mutant", "merge-before-switch"),
    ] {
        for sets in [&[][..], STRESS] {
            let mut s = spec(scheme, "btree", 300, sets);
            s.params.set_str(key, value).unwrap();
            let r = crashtest(s);
            assert!(r.violations > 0, "{scheme} with {key}={value} passed");
        }
    }
}

/// STRESS with translation tables too small for one epoch's sparse writes
/// (they used to stop the run with "the tables are full"): the write that
/// finds both tables full waits for the checkpoint in flight to commit,
/// then idle committed entries are evicted home (their slots reserved
/// until the next commit), and the cores stall meanwhile.
fn table_full(workload: &str, btt: &'static str, ptt: &'static str) -> RunSpec {
    let mut s = spec("thynvm", workload, 600, STRESS);
    s.params.set_str("thynvm.btt_entries", btt).unwrap();
    s.params.set_str("thynvm.ptt_entries", ptt).unwrap();
    s
}

const TABLE_FULL: &[(&str, &str, &str)] = &[("btree", "160", "16"), ("hashmap", "192", "12")];

#[test]
fn full_tables_stall_the_cores_instead_of_stopping_the_run() {
    for &(w, btt, ptt) in TABLE_FULL {
        let st = stats(table_full(w, btt, ptt));
        for k in [
            "table_full_events",
            "table_full_stall_cycles",
            "table_full_evictions",
        ] {
            assert!(st[k] > 0.0, "{w}: {k} = {}", st[k]);
        }
        // Every event stalled the cores for a positive time.
        assert!(
            st["table_full_stall_cycles"] >= st["table_full_events"],
            "{w}"
        );
    }
}

#[test]
fn crashes_during_table_full_stalls_and_evictions_recover_the_last_checkpoint() {
    let torn = CrashOptions {
        torn: true,
        ..opts()
    };
    for &(w, btt, ptt) in TABLE_FULL {
        for o in [opts(), torn.clone()] {
            let r = crash::crashtest(table_full(w, btt, ptt), &o, &mut |_, _| {}).unwrap();
            assert_eq!(r.violations, 0, "{w}: {:?}", r.first_violation);
            assert!(r.crash_points_tested > 100, "{w}");
            assert!(r.background_points_tested > 0, "{w}");
        }
    }
}

#[test]
fn tables_that_cannot_hold_one_epoch_stop_with_a_clear_error() {
    let s = table_full("btree", "32", "2");
    let e = durasim::engine::run(s, &mut |_| {})
        .err()
        .expect("must stop");
    let msg = e.to_string();
    assert!(msg.contains("thynvm.btt_entries"), "{msg}");
    assert!(msg.contains("cannot hold one epoch"), "{msg}");
}

/// Verdicts and the first violation of thynvm and page-overlay (and of
/// their planted bugs) do not depend on the host thread count; proven
/// re-runs give the image a run gives (`verify_dedup`).
#[test]
fn verdicts_do_not_depend_on_host_threads() {
    for (scheme, mutant) in [
        ("thynvm", None),
        ("page-overlay", None),
        ("thynvm", Some(("thynvm.mutant", "drop-penultimate"))),
        (
            "page-overlay",
            Some(("overlay.mutant", "merge-before-switch")),
        ),
    ] {
        let s = spec(scheme, "btree", 300, mutant.as_slice());
        let go = |host_threads| {
            let o = CrashOptions {
                host_threads,
                verify_dedup: true,
                ..opts()
            };
            crash::crashtest(s.clone(), &o, &mut |_, _| {}).unwrap()
        };
        let (one, two) = (go(1), go(2));
        assert_eq!(one.dedup_mismatches + two.dedup_mismatches, 0, "{scheme}");
        assert_eq!(one.verdicts, two.verdicts, "{scheme}");
        assert_eq!(one.first_violation, two.first_violation, "{scheme}");
        assert_eq!(one.recovery_crashes_tested, two.recovery_crashes_tested);
        assert_eq!(one.violations > 0, mutant.is_some(), "{scheme}");
    }
}
