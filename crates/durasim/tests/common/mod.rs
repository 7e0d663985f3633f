//! Test scaffolding shared by the integration tests (tests/fwb.rs,
//! tests/morlog.rs, tests/resume.rs, tests/engine_runs.rs, tests/feed.rs):
//! small caches, run specs, crash tests over every transactional workload,
//! scheme statistics and the CLI.
#![allow(dead_code)] // each test crate uses its own subset

use durasim::crash::{self, CrashOptions, CrashReport, PointSel};
use durasim::engine::{self, RunSpec};
use std::process::Command;

/// Small caches: L1 evictions, redo entries and steals (lines of running
/// transactions written back) within a few transactions.
pub const SMALL: &[(&str, &str)] = &[
    ("cache.l1_size_bytes", "1KB"),
    ("cache.l1_ways", "2"),
    ("cache.l2_size_bytes", "2KB"),
    ("cache.l2_ways", "2"),
    ("cache.llc_size_bytes", "4KB"),
    ("cache.llc_ways", "2"),
];

/// `scheme` x `workload`, 2 threads, seed 3, small caches plus `sets`.
pub fn spec(scheme: &str, workload: &str, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.threads = 2;
    s.tx = tx;
    s.seed = 3;
    for (k, v) in SMALL.iter().chain(sets) {
        s.params.set_str(k, v).unwrap();
    }
    s
}

/// `scheme` x `workload`, 4 threads, 400 transactions, `seed`, 64 initial
/// items, caches small enough that evictions and write-backs happen in
/// short runs, and every load checked against the architectural value
/// (tests/engine_runs.rs, tests/feed.rs).
pub fn small_spec(scheme: &str, workload: &str, seed: u64) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.threads = 4;
    s.tx = 400;
    s.seed = seed;
    s.params.set_str("workload.initial_items", "64").unwrap();
    s.params.set_str("cache.l1_size_bytes", "4096").unwrap();
    s.params.set_str("cache.l2_size_bytes", "8192").unwrap();
    s.params.set_str("cache.llc_size_bytes", "32768").unwrap();
    s.params.set_str("run.check_reads", "true").unwrap();
    s
}

/// Whether a registry-wide loop tests `scheme`: every scheme, unless
/// `DURASIM_TEST_SCHEMES` lists names (comma-separated); `make test` runs
/// the loops of its `--features example-scheme` build on the example only.
pub fn scheme_selected(scheme: &str) -> bool {
    std::env::var("DURASIM_TEST_SCHEMES").map_or(true, |v| v.split(',').any(|s| s == scheme))
}

pub fn crashtest(s: RunSpec, opts: &CrashOptions) -> CrashReport {
    let name = format!("{} x {}", s.scheme, s.workload);
    crash::crashtest(s, opts, &mut |_, _| {}).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn stat(e: &engine::Engine, key: &str) -> f64 {
    e.scheme
        .stats()
        .into_iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("no stat {key}"))
        .1
}

/// Every crash point (clean, and torn on the plain device: the encoders
/// change the bytes, not the write sizes) of a small run of every
/// transactional workload with encoding `enc` and `sets`; no violation.
/// Resumable recoveries (recovery/scan.rs) are checked against from-scratch
/// ones at every resumed point (`verify_resume`).
pub fn crash_every_workload(scheme: &str, enc: &str, sets: &[(&str, &str)]) {
    let opts = CrashOptions {
        torn: enc == "none",
        verify_resume: true,
        ..CrashOptions::default()
    };
    for w in durasim::workloads::REGISTRY {
        let tx = match w.name {
            "tpcc" => 12,
            "echo" | "sps" | "sdg" => 30,
            _ => 60,
        };
        // Small initial structures: setup and checkers stay cheap.
        let items = if w.name == "tatp" { "32" } else { "64" };
        let mut all = vec![("nvm.encoding", enc), ("workload.initial_items", items)];
        all.extend_from_slice(sets);
        if w.name == "tpcc" {
            all.push(("workload.tpcc_items", "2000"));
            all.push(("workload.tpcc_customers_per_district", "300"));
        }
        let r = crashtest(spec(scheme, w.name, tx, &all), &opts);
        assert!(r.persist_events > 20, "{scheme} {} {enc}", w.name);
        assert_eq!(r.resume_mismatches, 0, "{scheme} {} {enc}", w.name);
        assert_eq!(
            r.violations,
            0,
            "{scheme} x {} ({enc}, {sets:?}): {}",
            w.name,
            r.first_violation
                .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                .unwrap_or_default()
        );
    }
}

/// Run the durasim binary: (exit code, stdout, stderr).
pub fn durasim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Parse `--crash-at K [--tear-mask M]` from a replay line.
pub fn replay_point(line: &str) -> PointSel {
    let w: Vec<&str> = line.split_whitespace().collect();
    let arg = |flag: &str| w.iter().position(|x| *x == flag).map(|i| w[i + 1]);
    PointSel::Single {
        point: arg("--crash-at").expect("--crash-at").parse().unwrap(),
        tear_mask: arg("--tear-mask").map(|m| crash::points::parse_tear_mask(m).unwrap()),
    }
}

/// A crash test `r` of `s` with the planted bug `key_value` set: it failed
/// the oracle, its first violation's replay line names the point and the
/// bug, and that line fails again alone.
pub fn assert_fails_with_a_replay_line(
    s: RunSpec,
    opts: &CrashOptions,
    r: &CrashReport,
    key_value: &str,
) {
    eprintln!(
        "{key_value}: {} violations of {} points",
        r.violations, r.crash_points_tested
    );
    let v = r
        .first_violation
        .as_ref()
        .unwrap_or_else(|| panic!("{key_value} passed the oracle"));
    assert!(
        v.replay.contains("--crash-at") && v.replay.contains(key_value),
        "{}",
        v.replay
    );
    assert_replay_fails(s, opts, r);
}

/// The first violation of `r` (a crash test of `s` with `opts`) replays:
/// its line names its point and tear, and that point checked alone, as
/// the line's command does (`--crash-at`, `--tear-mask`, the same
/// recovery crashes), fails at the same point with the same tear.
pub fn assert_replay_fails(s: RunSpec, opts: &CrashOptions, r: &CrashReport) {
    let v = r.first_violation.as_ref().expect("a violation");
    let points = replay_point(&v.replay);
    assert_eq!(
        points,
        PointSel::Single {
            point: v.point,
            tear_mask: v.tear_mask
        },
        "{}",
        v.replay
    );
    let one = CrashOptions {
        points,
        recovery_crashes: opts.recovery_crashes,
        ..CrashOptions::default()
    };
    let name = format!("{} x {}", s.scheme, s.workload);
    let again = crash::crashtest(s, &one, &mut |_, _| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    let w = again
        .first_violation
        .unwrap_or_else(|| panic!("{name}: the replay passed: {}", v.replay));
    assert_eq!(
        (w.point, w.tear_mask),
        (v.point, v.tear_mask),
        "{name}: {}",
        v.replay
    );
}
