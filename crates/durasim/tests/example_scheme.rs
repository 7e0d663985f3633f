//! "Adding a scheme = its module plus one registry line": the test-only
//! example scheme `example-redo` (schemes/logging/example_redo.rs, built
//! with `--features example-scheme`) is registered by one line in
//! `schemes::REGISTRY` and nothing else names it. These tests show that
//! every consumer of the registry picks it up: the registry's name lookup,
//! `durasim list schemes`, `compare`, `crashtest`, crash verification with
//! its resumable scan, the mutant harness (tests/mutants.rs discovers
//! `<scheme>.mutant` values) and the Python catalogue. The registry-wide
//! loops (tests/crash_oracle.rs, tests/engine_runs.rs) run it when their
//! test binaries are built with the feature (`make test`).
//!
//! Without the feature only [`absent_without_the_feature`] runs: the
//! example never reaches a default build.

use std::process::Command;

#[cfg(feature = "example-scheme")]
use durasim::crash::{self, CrashOptions, CrashReport};
#[cfg(feature = "example-scheme")]
use durasim::engine::RunSpec;

const NAME: &str = "example-redo";

fn durasim(args: &[&str]) -> (i32, String, String) {
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

fn listed() -> bool {
    let (code, out, err) = durasim(&["list", "schemes"]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .any(|l| l.split_whitespace().next() == Some(NAME))
}

#[cfg(not(feature = "example-scheme"))]
#[test]
fn absent_without_the_feature() {
    assert!(!durasim::schemes::names().contains(&NAME));
    assert!(!listed());
    let (code, _, err) = durasim(&["run", "--scheme", NAME, "--workload", "vector"]);
    assert_eq!(code, 2, "{err}");
}

#[cfg(feature = "example-scheme")]
fn crashtest(tx: u64, workload: &str, sets: &[(&str, &str)], opts: &CrashOptions) -> CrashReport {
    let mut s = RunSpec::new(NAME, workload).unwrap();
    s.threads = 2;
    s.tx = tx;
    s.seed = 5;
    for (k, v) in sets {
        s.params.set_str(k, v).unwrap();
    }
    crash::crashtest(s, opts, &mut |_, _| {}).unwrap()
}

/// Small caches: lines of running transactions are evicted and held.
#[cfg(feature = "example-scheme")]
const SMALL_CACHES: &[(&str, &str)] = &[
    ("workload.initial_items", "64"),
    ("cache.l1_size_bytes", "1KB"),
    ("cache.l1_ways", "2"),
    ("cache.l2_size_bytes", "2KB"),
    ("cache.l2_ways", "2"),
    ("cache.llc_size_bytes", "4KB"),
    ("cache.llc_ways", "2"),
];

/// The one registry line is the only registration: the entry is found by
/// name, appears once, and is the only addition to a default build's
/// registry (which `absent_without_the_feature` checks from the other side).
#[cfg(feature = "example-scheme")]
#[test]
fn registered_once_by_the_registry_line() {
    use durasim::schemes::{self, REGISTRY};
    let info = schemes::find(NAME).unwrap();
    assert_eq!(info.name, NAME);
    assert_eq!(REGISTRY.iter().filter(|s| s.name == NAME).count(), 1);
    assert!(info.recovery.scan().is_some(), "declares a resumable scan");
    assert!(schemes::names().contains(&NAME));
    // Its parameters join the global table; the mutant switch stays hidden.
    let p = durasim::config::Params::defaults(&schemes::all_params());
    assert_eq!(p.u64("example-redo.log_bytes_per_core"), 64 << 10);
    assert!(!schemes::is_public_param("example-redo.mutant"));
}

#[cfg(feature = "example-scheme")]
#[test]
fn listed_by_list_schemes() {
    assert!(listed());
    let (code, out, _) = durasim(&["list", "params"]);
    assert_eq!(code, 0);
    assert!(out.contains("example-redo.log_bytes_per_core"), "{out}");
    assert!(!out.contains("example-redo.mutant"), "{out}");
}

#[cfg(feature = "example-scheme")]
#[test]
fn runs_in_compare_and_crashtest_via_the_cli() {
    let csv = std::env::temp_dir().join(format!("durasim-example-{}.csv", std::process::id()));
    let csv_s = csv.to_str().unwrap();
    let args = [
        "compare",
        "--schemes",
        "ideal,example-redo",
        "--workloads",
        "vector,hashmap",
        "--threads",
        "2",
        "--tx",
        "200",
        "--csv",
        csv_s,
    ];
    let (code, out, err) = durasim(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(NAME), "{out}");
    let grid = std::fs::read_to_string(&csv).unwrap();
    std::fs::remove_file(&csv).ok();
    assert_eq!(
        grid.lines().filter(|l| l.contains(NAME)).count(),
        2,
        "{grid}"
    );
    let (code, out, err) = durasim(&[
        "crashtest",
        "--scheme",
        NAME,
        "--workload",
        "vector",
        "--tx",
        "40",
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Every crash point, clean and torn, with crashes inside recovery, on
/// small runs of a few workloads; every resumed scan also recovered from
/// scratch and compared.
#[cfg(feature = "example-scheme")]
#[test]
fn passes_exhaustive_crash_tests() {
    let opts = CrashOptions {
        torn: true,
        recovery_crashes: u64::MAX,
        verify_resume: true,
        verify_dedup: true,
        ..CrashOptions::default()
    };
    // 1 KB items: a transaction's lines outgrow the 4 KB LLC, so its
    // write-backs are held (checked below).
    let big: &[(&str, &str)] = &[("workload.item_bytes", "1024")];
    for (w, tx, extra) in [
        ("vector", 80, &[][..]),
        ("vector", 40, big),
        ("hashmap", 80, &[]),
        ("queue", 80, &[]),
        ("btree", 40, &[]),
    ] {
        let sets: Vec<_> = SMALL_CACHES.iter().chain(extra).copied().collect();
        let r = crashtest(tx, w, &sets, &opts);
        assert_eq!(
            r.violations,
            0,
            "{w}: {}",
            r.first_violation
                .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                .unwrap_or_default()
        );
        // Every persist point, each also with the write in flight torn.
        assert_eq!(
            r.crash_points_tested,
            r.persist_events + 1 + r.torn_points_tested,
            "{w}"
        );
        assert!(
            r.torn_points_tested > 0 && r.recovery_crashes_tested > 0,
            "{w}"
        );
        // The scan was resumed, and matched recovery from scratch.
        assert!(r.resumed_points > 0, "{w}: no resumed point");
        assert_eq!(r.resume_mismatches, 0, "{w}");
        assert_eq!(r.dedup_mismatches, 0, "{w}");
    }
    // Write-backs were held in the 1 KB run (the hold is exercised).
    let mut s = RunSpec::new(NAME, "vector").unwrap();
    s.threads = 2;
    s.tx = 40;
    s.seed = 5;
    for (k, v) in SMALL_CACHES.iter().chain(big) {
        s.params.set_str(k, v).unwrap();
    }
    let e = durasim::engine::run(s, &mut |_| {}).unwrap();
    let held = e
        .scheme
        .stats()
        .iter()
        .find(|x| x.0 == "held_evictions")
        .unwrap()
        .1;
    assert!(held > 0.0, "no write-back was held");
}

/// The planted bug fails the oracle with a replay line naming it.
#[cfg(feature = "example-scheme")]
#[test]
fn its_mutant_fails_with_a_replay_line() {
    let mut sets = SMALL_CACHES.to_vec();
    sets.push(("example-redo.mutant", "commit-before-records"));
    let r = crashtest(60, "vector", &sets, &CrashOptions::default());
    assert!(r.violations > 0, "the mutant passed");
    let v = r.first_violation.unwrap();
    assert!(
        v.replay.contains("--crash-at")
            && v.replay
                .contains("example-redo.mutant=commit-before-records"),
        "{}",
        v.replay
    );
    // The CLI refuses it, as every mutant.
    let (code, _, err) = durasim(&[
        "run",
        "--scheme",
        NAME,
        "--workload",
        "vector",
        "--tx",
        "10",
        "--set",
        "example-redo.mutant=commit-before-records",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// The Python catalogue (`durasim.schemes()`, durasim-py's `schemes_json`)
/// is generated from `schemes::REGISTRY`, so the example is in it whenever
/// the extension is built with the feature (durasim-py's `example-scheme`).
/// The extension cannot be linked into a Rust test (it needs the
/// interpreter), so this checks the function's source instead.
#[cfg(feature = "example-scheme")]
#[test]
fn python_catalogue_is_generated_from_the_registry() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../durasim-py/src/lib.rs"
    ))
    .unwrap();
    let start = src.find("fn schemes_json()").expect("schemes_json");
    let body = &src[start..start + src[start..].find("\n}\n").unwrap()];
    assert!(body.contains("schemes::REGISTRY"), "{body}");
    let toml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../durasim-py/Cargo.toml"
    ))
    .unwrap();
    assert!(toml.contains(r#"example-scheme = ["durasim/example-scheme"]"#));
}
