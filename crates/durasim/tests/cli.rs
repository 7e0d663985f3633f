//! The CLI contract scripts rely on: JSON keys, exit codes, error messages.

use std::process::Command;

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

#[test]
fn run_json_has_the_documented_keys() {
    let (code, out, err) = durasim(&[
        "run",
        "--scheme",
        "ideal",
        "--workload",
        "vector",
        "--threads",
        "2",
        "--tx",
        "200",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "scheme",
        "workload",
        "config",
        "metrics",
        "scheme_stats",
        "sim",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for k in [
        "committed_tx",
        "sim_cycles",
        "throughput_tx_per_mcycle",
        "critical_path_cycles_mean",
        "critical_path_cycles_p99",
        "nvm_bytes_written",
        "nvm_bytes_read",
        "write_bytes_per_tx",
        "energy_nj",
        "llc_miss_ratio",
    ] {
        assert!(v["metrics"].get(k).is_some(), "missing metrics.{k}");
    }
    assert_eq!(v["metrics"]["committed_tx"], 200);
    for k in ["host_seconds", "sim_mem_ops", "mem_ops_per_host_second"] {
        assert!(v["sim"].get(k).is_some(), "missing sim.{k}");
    }
    // The process held at least the simulated footprint's pages.
    let rss = v["sim"]["peak_rss_mib"].as_f64().expect("sim.peak_rss_mib");
    assert!(rss > 1.0, "peak RSS {rss} MiB");
    // The native system has no mechanism to miss: no warning.
    assert_eq!(v["warnings"], serde_json::json!([]), "{err}");
}

/// A run too short for its scheme's mechanism, or a scheme without the
/// hardware it needs, warns on stderr and lists the same warnings in the
/// JSON report.
#[test]
fn run_json_lists_the_warnings_printed_on_stderr() {
    for (scheme, config, needle) in [
        (
            "hoop",
            "configs/hoop.toml",
            "shorter than one period of hoop.gc_period_ms",
        ),
        ("dpc", "default", "this machine has none"),
    ] {
        let cfg = if config == "default" {
            config.to_string()
        } else {
            format!("{}/../../{config}", env!("CARGO_MANIFEST_DIR"))
        };
        let (code, out, err) = durasim(&[
            "run",
            "--scheme",
            scheme,
            "--workload",
            "btree",
            "--threads",
            "2",
            "--tx",
            "200",
            "--config",
            &cfg,
            "--json",
            "-",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let listed: Vec<&str> = v["warnings"]
            .as_array()
            .expect("a warnings list")
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert!(
            listed.iter().any(|w| w.contains(needle)),
            "{scheme}: {listed:?}"
        );
        // Every listed warning was printed, and every printed one listed.
        let printed: Vec<&str> = err
            .lines()
            .filter_map(|l| l.strip_prefix("warning: "))
            .collect();
        assert_eq!(printed, listed, "{scheme}");
    }
}

#[test]
fn bad_names_keys_and_values_exit_2_naming_the_choices() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--scheme", "bogus", "--workload", "vector"],
            "ideal",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--gen-thread",
                "of",
            ],
            "a similar value exists: 'off'",
        ),
        (
            &["run", "--scheme", "ideal", "--workload", "bogus"],
            "vector",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--set",
                "cache.l9=1",
            ],
            "cache.l1_size_bytes",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--set",
                "cache.llc_size_bytes=3000",
            ],
            "power of two",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--set",
                "nvm.write_model=x",
            ],
            "dcw",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--threads",
                "0",
            ],
            "threads",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--set",
                "novalue",
            ],
            "KEY=VALUE",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--config",
                "/nonexistent.toml",
            ],
            "nonexistent",
        ),
        (
            &[
                "run",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--set",
                "cache.llc_ways=12",
            ],
            "cache.llc_ways",
        ),
        (&["list", "bogus"], "params"),
        (
            &[
                "compare",
                "--schemes",
                "ideal",
                "--workloads",
                "vector",
                "--baseline",
                "hoopla",
            ],
            "ideal",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = durasim(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: '{err}' does not mention '{needle}'"
        );
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    }
}

#[test]
fn a_log_too_small_for_one_transaction_exits_2_naming_the_parameter() {
    let (code, out, err) = durasim(&[
        "run",
        "--scheme",
        "opt-undo",
        "--workload",
        "vector",
        "--threads",
        "1",
        "--tx",
        "2",
        "--set",
        "workload.item_bytes=65536",
        "--set",
        "workload.initial_items=2",
        "--set",
        "workload.update_ratio=0",
        "--set",
        "opt-undo.log_bytes_per_core=65536",
        "--json",
        "-",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("opt-undo.log_bytes_per_core=65536")
            && err.contains("set opt-undo.log_bytes_per_core to at least 262144"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.is_empty(), "no report for a failed run: {out}");
}

#[test]
fn list_params_shows_defaults_units_and_sources() {
    let (code, out, _) = durasim(&["list", "params"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("nvm.array_write_ns")
            && out.contains("150")
            && out.contains("HOOP paper Table II")
    );
}

#[test]
fn compare_prints_a_table_and_csv() {
    let dir = std::env::temp_dir().join(format!("durasim-cmp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("grid.csv");
    let (code, out, err) = durasim(&[
        "compare",
        "--schemes",
        "ideal",
        "--workloads",
        "vector",
        "--threads",
        "2",
        "--tx",
        "200",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("vector") && out.contains("norm_tput"));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 2);
    // The first twelve columns keep their names and order; the paper
    // definitions and the workload characterisation follow.
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    assert_eq!(
        header[..12].join(","),
        "workload,scheme,committed_tx,sim_cycles,throughput_tx_per_mcycle,critical_path_cycles_mean,critical_path_cycles_p99,nvm_bytes_written,nvm_bytes_read,write_bytes_per_tx,energy_nj,llc_miss_ratio"
    );
    for k in [
        "llc_misses_per_mem_op",
        "pm_write_overhead_ops",
        "log_bits_written_no_expansion",
        "program_stores_per_tx",
        "words_per_written_line",
        "repeated_store_share",
        "written_line_compression_ratio_fpc",
        "written_line_compression_ratio_dldc",
        "llc_misses_per_write_back",
    ] {
        assert!(header.contains(&k), "csv lacks {k}");
    }
    let row = text.lines().nth(1).unwrap();
    assert_eq!(row.split(',').count(), header.len());
}

#[test]
fn misspelled_names_get_a_did_you_mean_and_exit_2() {
    let base = ["run", "--tx", "10", "--threads", "1"];
    let cases: &[(&[&str], &str)] = &[
        (
            &["--scheme", "hop", "--workload", "btree"],
            "did you mean 'hoop'?",
        ),
        (
            &["--scheme", "hoop", "--workload", "btre"],
            "did you mean 'btree'",
        ),
        (
            &[
                "--scheme",
                "hoop",
                "--workload",
                "btree",
                "--set",
                "cache.llc_size=4M",
            ],
            "did you mean 'cache.llc_size_bytes'",
        ),
        (
            &[
                "--scheme",
                "hoop",
                "--workload",
                "btree",
                "--set",
                "cache.llc_size_bytes=3MB",
            ],
            "invalid value '3MB' (= 3145728)",
        ),
        (
            &[
                "--scheme",
                "hoop",
                "--workload",
                "btree",
                "--set",
                "cache.llc_size_bytes=4 furlongs",
            ],
            "4MiB",
        ),
    ];
    for (args, needle) in cases {
        let all: Vec<&str> = base.iter().chain(args.iter()).copied().collect();
        let (code, _, err) = durasim(&all);
        assert_eq!(code, 2, "{all:?}: {err}");
        assert!(err.contains(needle), "{all:?}: {err}");
    }
    let (code, _, err) = durasim(&["list", "scheme"]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean 'schemes'?"), "{err}");
}

#[test]
fn unit_spellings_are_accepted_and_quiet_prints_no_progress() {
    for size in ["4M", "4 MB", "4MiB", "4MB"] {
        let set = format!("cache.llc_size_bytes={size}");
        let (code, out, err) = durasim(&[
            "--quiet",
            "run",
            "--scheme",
            "ideal",
            "--workload",
            "vector",
            "--tx",
            "10",
            "--threads",
            "1",
            "--set",
            &set,
            "--set",
            "nvm.array_read_ns=250ns",
            "--json",
            "-",
        ]);
        assert_eq!(code, 0, "{size}: {err}");
        assert!(err.is_empty(), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["config"]["cache"]["llc_size_bytes"], 4 << 20, "{size}");
    }
}
