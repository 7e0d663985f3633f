//! Every recovery path a scheme declares (`Scheme::recovery_paths`: log
//! wrap and head persists, full tables, fallback buffers, overflow logs, GC,
//! checkpoints) gets crash points in CI: one crash-test configuration per
//! scheme that reaches all of its paths, and a registry check that no
//! scheme with declared paths is left out.

use durasim::cli::{spec_for, CommonArgs};
use durasim::crash::points::PointSel;
use durasim::crash::{self, CrashOptions};
use durasim::engine::Engine;
use durasim::schemes;
use std::collections::BTreeMap;

/// (scheme, workload, threads, tx, sampled points or 0 for all, --set).
type Case = (
    &'static str,
    &'static str,
    usize,
    u64,
    u64,
    &'static [&'static str],
);

/// The checkpointing tests' small hybrid machine (tests/ckpt.rs,
/// tests/thynvm.rs), on the bare machine (`--config default`).
const SMALL_HYBRID: &[&str] = &[
    "hybrid.dram_cache_ways=4",
    "nvm.capacity_bytes=268435456",
    "cache.llc_ways=4",
    "cache.l2_ways=4",
    "cache.l1_ways=4",
];

/// Each on the scheme's paper machine (as the CLI runs it), with what
/// makes its rare paths happen in a short run.
const CASES: &[Case] = &[
    ("hoop", "btree", 2, 100, 0, &[]),
    ("opt-undo", "btree", 2, 60, 0, &[]),
    // A 12 KB item (192 line records of 128 B) fills a 64 KB log to 75 %
    // within two transactions: the asynchronous checkpoint it requests
    // runs before the log is full. A 16 KB item (256 records, half the
    // log) forces one instead. The periodic ones at 1 s never come.
    (
        "opt-redo",
        "hashmap",
        2,
        40,
        600,
        &[
            "opt-redo.log_bytes_per_core=64KB",
            "opt-redo.checkpoint_period_ms=1000",
            "workload.item_bytes=12288",
            "workload.initial_items=64",
        ],
    ),
    (
        "opt-redo",
        "hashmap",
        2,
        40,
        600,
        &[
            "opt-redo.log_bytes_per_core=64KB",
            "opt-redo.checkpoint_period_ms=1000",
            "workload.item_bytes=16384",
            "workload.initial_items=64",
        ],
    ),
    (
        "lad",
        "vector",
        2,
        40,
        0,
        &["lad.staging_lines_per_core=3", "workload.item_bytes=1024"],
    ),
    ("osp", "btree", 2, 100, 0, &[]),
    (
        "lsm",
        "hashmap",
        2,
        400,
        0,
        &[
            "lsm.gc_period_ms=0.01",
            "lsm.segment_bytes=4096",
            "lsm.gc_victim_utilization=0.9",
        ],
    ),
    ("redu", "btree", 2, 100, 0, &[]),
    ("fwb", "btree", 2, 150, 0, &["fwb.period_cycles=20000"]),
    (
        "fwb-unsafe",
        "btree",
        2,
        150,
        0,
        &["fwb-unsafe.period_cycles=20000"],
    ),
    (
        "morlog",
        "btree",
        2,
        150,
        0,
        &["morlog.period_cycles=20000"],
    ),
    (
        "morlog-dp",
        "btree",
        2,
        150,
        0,
        &["morlog-dp.period_cycles=20000"],
    ),
    (
        "ehou",
        "btree",
        2,
        60,
        0,
        &[
            "dimm.ait_cache_sets=4",
            "dimm.ait_cache_ways=2",
            "ehou.pool_lines=4096",
            "workload.initial_items=64",
        ],
    ),
    // A 16 KB derivative pool: allocations fail, lines go to the fallback
    // buffer and the checkpoint after them is forced.
    (
        "dpc",
        "btree",
        2,
        300,
        0,
        &[
            "checkpoint.epoch_cycles=5000",
            "dpc.fallback_buffer_lines=1024",
            "dpc.pool_bytes=16384",
            "hybrid.dram_cache_bytes=65536",
            "hybrid.dram_cache_ways=4",
        ],
    ),
    ("ckpt-cow", "btree", 2, 60, 0, &[]),
];

/// On the bare machine with [`SMALL_HYBRID`]: (scheme, workload, threads,
/// tx, sampled points, --set).
const BARE_CASES: &[Case] = &[
    // Regular checkpoints every 5,000 cycles on the small machine.
    (
        "ckpt-logging",
        "btree",
        2,
        60,
        0,
        &[
            "hybrid.dram_cache_bytes=65536",
            "ckpt-logging.log_bytes=16777216",
            "checkpoint.epoch_cycles=5000",
            "cache.llc_size_bytes=16384",
            "cache.l2_size_bytes=8192",
            "cache.l1_size_bytes=4096",
            "workload.initial_items=256",
        ],
    ),
    // tests/ckpt.rs: a log just above its flush reserve, one long epoch,
    // 1 KB items: a checkpoint forced by the log.
    (
        "ckpt-logging",
        "vector",
        2,
        100,
        0,
        &[
            "hybrid.dram_cache_bytes=16384",
            "ckpt-logging.log_bytes=129024",
            "checkpoint.epoch_cycles=50000000",
            "cache.llc_size_bytes=16384",
            "cache.l2_size_bytes=8192",
            "cache.l1_size_bytes=4096",
            "workload.initial_items=256",
            "workload.item_bytes=1024",
            "workload.update_scope=field",
        ],
    ),
    (
        "page-overlay",
        "btree",
        2,
        100,
        0,
        &[
            "hybrid.dram_cache_bytes=65536",
            "checkpoint.epoch_cycles=5000",
            "cache.llc_size_bytes=16384",
            "cache.l2_size_bytes=8192",
            "cache.l1_size_bytes=4096",
            "workload.initial_items=256",
            "overlay.oms_bytes=1048576",
        ],
    ),
    // tests/thynvm.rs's stress: full tables force checkpoints.
    (
        "thynvm",
        "btree",
        2,
        600,
        1500,
        &[
            "hybrid.dram_cache_bytes=16384",
            "cache.llc_size_bytes=8192",
            "cache.l2_size_bytes=4096",
            "cache.l1_size_bytes=2048",
            "workload.initial_items=4096",
            "checkpoint.epoch_cycles=1000000",
            "thynvm.btt_entries=256",
            "thynvm.ptt_entries=256",
            "thynvm.to_page_threshold=6",
            "thynvm.to_block_threshold=3",
        ],
    ),
    (
        "page-overlay",
        "btree",
        2,
        600,
        1500,
        &[
            "hybrid.dram_cache_bytes=16384",
            "cache.llc_size_bytes=8192",
            "cache.l2_size_bytes=4096",
            "cache.l1_size_bytes=2048",
            "workload.initial_items=4096",
            "checkpoint.epoch_cycles=1000000",
            "overlay.oms_bytes=20480",
        ],
    ),
];

/// Every case with its machine (None: the scheme's paper machine).
fn cases() -> Vec<(Option<&'static str>, Case)> {
    let paper = CASES.iter().map(|c| (None, *c));
    let bare = BARE_CASES.iter().map(|c| (Some("default"), *c));
    paper.chain(bare).collect()
}

fn common(threads: usize, tx: u64, set: &[&str]) -> CommonArgs {
    CommonArgs {
        config: None,
        set: set.iter().map(|s| s.to_string()).collect(),
        threads: Some(threads),
        tx: Some(tx),
        seed: 1,
    }
}

fn declared(scheme: &str) -> &'static [&'static str] {
    let spec = spec_for(scheme, "btree", &common(1, 10, &[])).unwrap();
    Engine::new(spec).unwrap().scheme.recovery_paths()
}

#[test]
fn every_scheme_with_declared_paths_has_a_configuration_here() {
    for s in schemes::REGISTRY {
        if declared(s.name).is_empty() {
            continue;
        }
        // MorLog's named designs share their base scheme's paths.
        let base = s.name.trim_end_matches("-crade").trim_end_matches("-slde");
        assert!(
            cases().iter().any(|(_, c)| c.0 == base),
            "{} declares recovery paths {:?} but has no crash-coverage configuration",
            s.name,
            declared(s.name)
        );
    }
}

#[test]
fn every_declared_recovery_path_gets_crash_points() {
    // Per scheme, the points each declared path got over its cases (a
    // scheme may need two: e.g. a log that forces every checkpoint).
    let mut reached: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    for (config, (scheme, workload, threads, tx, points, set)) in cases() {
        let mut args = common(threads, tx, set);
        if let Some(c) = config {
            args.config = Some(c.to_string());
            args.set.extend(SMALL_HYBRID.iter().map(|s| s.to_string()));
        }
        let spec = spec_for(scheme, workload, &args).unwrap();
        let opts = CrashOptions {
            points: if points == 0 {
                PointSel::All
            } else {
                PointSel::Sampled(points)
            },
            ..CrashOptions::default()
        };
        let r = crash::crashtest(spec, &opts, &mut |_, _| {}).unwrap();
        let names: Vec<&str> = r.recovery_paths.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            declared(scheme),
            "{scheme}: the report lists the declared paths"
        );
        // The JSON's list of unreached paths is the report's.
        let unreached: Vec<&str> = r
            .recovery_paths
            .iter()
            .filter(|c| c.points_tested == 0)
            .map(|c| c.name)
            .collect();
        assert_eq!(
            r.to_json()["uncovered_recovery_paths"],
            serde_json::json!(unreached)
        );
        for c in &r.recovery_paths {
            assert!(c.points_tested == 0 || c.windows > 0, "{scheme}: {c:?}");
            *reached
                .entry(scheme)
                .or_default()
                .entry(c.name)
                .or_default() += c.points_tested;
        }
    }
    for (scheme, paths) in &reached {
        for (name, &points) in paths {
            assert!(
                points > 0,
                "{scheme}: recovery path '{name}' got no crash point in any configuration"
            );
        }
    }
}

#[test]
fn an_unreached_path_is_reported_and_warned_about() {
    // 100 transactions on a 4 MB log: opt-redo never forces a checkpoint.
    let spec = spec_for("opt-redo", "vector", &common(2, 100, &[])).unwrap();
    let r = crash::crashtest(spec, &CrashOptions::default(), &mut |_, _| {}).unwrap();
    let forced = r
        .recovery_paths
        .iter()
        .find(|c| c.name == "forced checkpoint")
        .unwrap();
    assert_eq!((forced.windows, forced.points_tested), (0, 0));
    let json = r.to_json();
    assert_eq!(
        json["uncovered_recovery_paths"],
        serde_json::json!(["forced checkpoint"])
    );
    assert_eq!(
        json["recovery_paths"]["forced checkpoint"]["points_tested"],
        0
    );
    // The CLI says so on stderr.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args([
            "crashtest",
            "--scheme",
            "opt-redo",
            "--workload",
            "vector",
            "--tx",
            "100",
            "--threads",
            "2",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: opt-redo's recovery path 'forced checkpoint' got no crash point"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("forced checkpoint"));
}
