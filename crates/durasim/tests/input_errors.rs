//! A scheme parameter too small for one transaction of the workload (a log,
//! a segment, a journal, a pool) is bad input: the run ends with an input
//! error naming the parameter, its value and what it needs — never a panic.

use durasim::engine::{Engine, RunSpec};
use durasim::Error;

/// One thread of vector, `tx` transactions of `item_bytes` items, with the
/// overrides `set`.
fn run(scheme: &str, tx: u64, item_bytes: &str, set: &[(&str, &str)]) -> durasim::Result<()> {
    let mut s = RunSpec::new(scheme, "vector").unwrap();
    s.threads = 1;
    s.tx = tx;
    for (k, v) in [
        ("workload.item_bytes", item_bytes),
        ("workload.initial_items", "2"),
        // Inserts only: every transaction writes one whole new item.
        ("workload.update_ratio", "0"),
        ("nvm.capacity_bytes", "256MB"),
    ]
    .iter()
    .chain(set)
    {
        s.params.set_str(k, v).unwrap();
    }
    Engine::new(s)?.run(&mut |_| {})
}

/// The input error of [`run`]; if it advises a value for `key`, the same
/// run with that value must succeed.
fn input_error(scheme: &str, tx: u64, item_bytes: &str, set: &[(&str, &str)]) -> String {
    match run(scheme, tx, item_bytes, set) {
        Err(Error::Input(m)) => {
            for (key, _) in set {
                let advice = format!("set {key} to at least ");
                if let Some(i) = m.find(&advice) {
                    let n: String = m[i + advice.len()..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    let mut fixed: Vec<(&str, &str)> =
                        set.iter().filter(|kv| kv.0 != *key).copied().collect();
                    fixed.push((key, &n));
                    run(scheme, tx, item_bytes, &fixed)
                        .unwrap_or_else(|e| panic!("{scheme} with {key}={n}: {e}"));
                }
            }
            m
        }
        Err(other) => panic!("{scheme}: expected an input error, got {other}"),
        Ok(()) => panic!("{scheme}: run succeeded; expected an input error"),
    }
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "'{msg}' does not mention '{p}'");
    }
}

#[test]
fn undo_log_smaller_than_a_transaction() {
    // 64 KiB log = 511 records; a 64 KiB item is 1024 lines.
    let m = input_error(
        "opt-undo",
        2,
        "65536",
        &[("opt-undo.log_bytes_per_core", "65536")],
    );
    assert_mentions(
        &m,
        &[
            "opt-undo.log_bytes_per_core=65536",
            "511 undo records",
            "set opt-undo.log_bytes_per_core to at least 262144",
        ],
    );
}

#[test]
fn redo_log_smaller_than_a_transaction() {
    let m = input_error(
        "opt-redo",
        2,
        "65536",
        &[("opt-redo.log_bytes_per_core", "65536")],
    );
    assert_mentions(
        &m,
        &[
            "opt-redo.log_bytes_per_core=65536",
            "511 redo records",
            "set opt-redo.log_bytes_per_core to at least 262144",
        ],
    );
}

#[test]
fn lad_fallback_log_smaller_than_the_overflow() {
    let m = input_error(
        "lad",
        2,
        "65536",
        &[
            ("lad.staging_lines_per_core", "4"),
            ("lad.undo_log_bytes_per_core", "65536"),
        ],
    );
    assert_mentions(
        &m,
        &[
            "lad.undo_log_bytes_per_core=65536",
            "1025 modified lines",
            "set lad.undo_log_bytes_per_core to at least 131072",
            "lad.staging_lines_per_core",
        ],
    );
}

#[test]
fn lsm_record_larger_than_a_segment() {
    // 4 KiB item = 64 lines of 88 B entries: more than a 4 KiB segment.
    let m = input_error(
        "lsm",
        2,
        "4096",
        &[
            ("lsm.segment_bytes", "4096"),
            ("nvm.capacity_bytes", "64MB"),
        ],
    );
    assert_mentions(
        &m,
        &[
            "lsm.segment_bytes=4096",
            "set lsm.segment_bytes to at least 8192",
        ],
    );
}

#[test]
fn osp_journal_smaller_than_a_transaction() {
    // 4 KiB journal = 168 pages; a 1 MiB item spans 256 pages.
    let m = input_error(
        "osp",
        1,
        "1048576",
        &[
            ("osp.journal_bytes_per_core", "4096"),
            ("osp.shadow_pages", "4096"),
        ],
    );
    assert_mentions(
        &m,
        &[
            "osp.journal_bytes_per_core=4096",
            "168 pages",
            "set osp.journal_bytes_per_core to at least 8192",
        ],
    );
}

#[test]
fn osp_shadow_pool_exhausted() {
    // 16 shadow pages; a 64 KiB item spans 16 pages plus the root's page.
    let m = input_error("osp", 2, "65536", &[("osp.shadow_pages", "16")]);
    assert_mentions(&m, &["osp.shadow_pages=16", "raise osp.shadow_pages"]);
}

#[test]
fn hoop_region_smaller_than_a_transaction() {
    // 64 MiB x 0.001 rounds up to a 2 MiB region of 4 KiB blocks (about
    // 126,000 words); a 1 MiB item is 131,072 words.
    let m = input_error(
        "hoop",
        1,
        "1048576",
        &[
            ("nvm.capacity_bytes", "64MB"),
            ("hoop.oop_region_share", "0.001"),
            ("hoop.block_bytes", "4096"),
        ],
    );
    assert_mentions(
        &m,
        &["hoop.oop_region_share=0.001", "raise hoop.oop_region_share"],
    );
}

#[test]
fn default_sizes_still_run() {
    // The same tiny runs with the default sizes succeed (the check does
    // not fire spuriously).
    for scheme in ["opt-undo", "opt-redo", "lad", "lsm", "osp", "hoop"] {
        let mut s = RunSpec::new(scheme, "vector").unwrap();
        s.threads = 1;
        s.tx = 4;
        s.params.set_str("workload.item_bytes", "4096").unwrap();
        s.params.set_str("workload.initial_items", "2").unwrap();
        s.params.set_str("nvm.capacity_bytes", "2GB").unwrap();
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {})
            .unwrap_or_else(|err| panic!("{scheme}: {err}"));
    }
}

// ---- Input errors: every listed bad input is an exit-2 error before any work
// starts, naming the field and what is valid (run through the binary).

fn durasim(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `durasim run` of a tiny ideal/vector run with `extra` arguments.
fn run_args<'a>(scheme: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["run", "--scheme", scheme, "--workload", "vector", "-q"];
    for (flag, default) in [("--threads", "1"), ("--tx", "10")] {
        if !extra.contains(&flag) {
            v.extend_from_slice(&[flag, default]);
        }
    }
    v.extend_from_slice(extra);
    v
}

#[test]
fn every_reviewed_bad_input_is_a_clean_exit_2() {
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        (
            run_args("ideal", &["--config", "/dev/zero"]),
            &["--config /dev/zero", "larger than 1048576 bytes"],
        ),
        (
            run_args("ideal", &["--config", "/dev/urandom"]),
            &["--config /dev/urandom", "larger than"],
        ),
        (
            run_args(
                "ideal",
                &["--set", "workload.item_bytes=1048576", "--threads", "8"],
            ),
            &["host memory", "workload.item_bytes"],
        ),
        (
            run_args("ideal", &["--set", "cache.llc_size_bytes=16GiB"]),
            &["host memory", "cache.llc_size_bytes"],
        ),
        (
            run_args(
                "ideal",
                &[
                    "--set",
                    "workload.initial_items=1000000000",
                    "--threads",
                    "8",
                ],
            ),
            &["host memory", "workload.initial_items"],
        ),
        (
            run_args(
                "ideal",
                &[
                    "--set",
                    "workload.initial_items=1000000000",
                    "--set",
                    "workload.item_bytes=1MB",
                    "--set",
                    "nvm.capacity_bytes=1TB",
                ],
            ),
            &["per thread", "nvm.capacity_bytes", "workload.initial_items"],
        ),
        (
            run_args("ideal", &["--set", "cache.llc_size_bytes=2xyzMB"]),
            &["'2xyzMB'", "cache.llc_size_bytes", "4MiB"],
        ),
        (
            run_args("ideal", &["--set", "cache.llc_size_bytes=2GiBMB"]),
            &["'2GiBMB'"],
        ),
        (
            run_args("ideal", &["--set", "cache.llc_size_bytes=4kbMB"]),
            &["'4kbMB'"],
        ),
        (
            run_args("ideal", &["--set", "workload.initial_items=1KB"]),
            &["'1KB'", "workload.initial_items", "an integer"],
        ),
        (
            run_args("ideal", &["--set", "cache.llc_size_bytes=16KB"]),
            &[
                "cache.llc_size_bytes",
                "inclusive",
                "cache.l2_size_bytes (262144)",
            ],
        ),
        (
            run_args("ideal", &["--set", "cache.l2_size_bytes=16KB"]),
            &["cache.l2_size_bytes", "cache.l1_size_bytes (32768)"],
        ),
        (
            run_args(
                "ideal",
                &[
                    "--set",
                    "cache.llc_ways=64",
                    "--set",
                    "cache.llc_size_bytes=2KB",
                    "--set",
                    "cache.l2_size_bytes=1KB",
                    "--set",
                    "cache.l1_size_bytes=1KB",
                ],
            ),
            &["'64' for 'cache.llc_ways'", "between 1 and 32"],
        ),
        (
            run_args("ideal", &["--set", "nvm.capacity_bytes=104857601"]),
            &[
                "nvm.capacity_bytes",
                "multiple of the 64 B line",
                "104857600",
            ],
        ),
        (
            run_args("hoop", &["--set", "hoop.mapping_table_bytes=0"]),
            &[
                "hoop.mapping_table_bytes",
                "mapping_entry_bytes=8",
                "at least 8",
            ],
        ),
        (
            run_args(
                "hoop",
                &[
                    "--set",
                    "hoop.mapping_table_bytes=8",
                    "--set",
                    "hoop.mapping_entry_bytes=16",
                ],
            ),
            &["hoop.mapping_table_bytes", "at least 16"],
        ),
        (
            run_args("hoop", &["--set", "hoop.oop_buffer_bytes_per_core=1000"]),
            &["hoop.oop_buffer_bytes_per_core", "multiple of the 128 B"],
        ),
        (
            run_args("ideal", &["--set", "workload.key_space=16"]),
            &["workload.key_space", "more than 16384"],
        ),
        (
            run_args("ideal", &["--tx", "18446744073709551615"]),
            &["'tx'", "at most 1000000000"],
        ),
        (
            run_args("ideal", &["--json", "/nonexistent-dir/x.json"]),
            &["--json", "/nonexistent-dir/x.json"],
        ),
        (
            run_args("ideal", &["--json", "/tmp"]),
            &["--json", "directory"],
        ),
        (
            vec![
                "crashtest",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--tx",
                "10",
                "--crash-at",
                "3",
                "--points",
                "5",
            ],
            &["--crash-at", "--points"],
        ),
        (
            vec![
                "crashtest",
                "--scheme",
                "opt-redo",
                "--workload",
                "vector",
                "--tx",
                "10",
                "--crash-at",
                "3",
                "--tear-mask",
                "0xff",
            ],
            &["--tear-mask", "proper subset"],
        ),
        (
            vec![
                "crashtest",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--tx",
                "18446744073709551615",
            ],
            &["'tx'", "at most 10000000"],
        ),
        (
            vec![
                "crashtest",
                "--scheme",
                "ideal",
                "--workload",
                "vector",
                "--tx",
                "10",
                "--json",
                "/nonexistent-dir/r.json",
            ],
            &["--json", "/nonexistent-dir/r.json"],
        ),
        (
            vec![
                "compare",
                "--schemes",
                "ideal,ideal",
                "--workloads",
                "vector",
                "--tx",
                "10",
            ],
            &["--schemes", "listed twice"],
        ),
        (
            vec![
                "compare",
                "--schemes",
                "ideal",
                "--workloads",
                "vector,queue,vector",
                "--tx",
                "10",
            ],
            &["--workloads", "listed twice"],
        ),
        (
            vec![
                "compare",
                "--schemes",
                "ideal",
                "--workloads",
                "vector",
                "--tx",
                "10",
                "--csv",
                "/nonexistent-dir/g.csv",
            ],
            &["--csv", "/nonexistent-dir/g.csv"],
        ),
        (
            vec![
                "crashtest",
                "--scheme",
                "opt-redo",
                "--workload",
                "pagerank",
                "--tx",
                "100",
                "--threads",
                "1",
                "--points",
                "20",
                "--set",
                "run.transactions=false",
            ],
            &["run.transactions=false", "dpc", "no"],
        ),
        (
            run_args("thynvm", &["--set", "thynvm.to_block_threshold=30"]),
            &[
                "thynvm.to_block_threshold",
                "thynvm.to_page_threshold",
                "at most 22",
            ],
        ),
        (run_args("ideal", &["--tx", "-1"]), &["--tx", "'-1'"]),
        (
            run_args("ideal", &["--threads", "-2"]),
            &["--threads", "'-2'"],
        ),
        (
            run_args(
                "ehou",
                &[
                    "--config",
                    "../../configs/ehou.toml",
                    "--set",
                    "dimm.ait_cache_sets=16777216",
                    "--set",
                    "dimm.ait_cache_ways=256",
                ],
            ),
            &["host memory", "AIT cache", "dimm.ait_cache_sets"],
        ),
    ];
    for (args, parts) in cases {
        let start = std::time::Instant::now();
        let (code, out, err) = durasim(&args);
        assert_eq!(code, 2, "{args:?}: exit {code}\n{out}\n{err}");
        for p in parts {
            assert!(err.contains(p), "{args:?}: '{err}' does not mention '{p}'");
        }
        // Refused before any work: no metrics printed, and fast.
        assert!(!out.contains("committed"), "{args:?}: ran: {out}");
        assert!(
            start.elapsed().as_secs() < 10,
            "{args:?}: took {:?}",
            start.elapsed()
        );
    }
}

/// LSM's per-segment host state is sized by the segments used: 4 KiB
/// segments over the default 512 GiB NVM (13 M segments) construct and
/// migrate home in a moment (was 6 GB of host memory, 52 s for 60 tx).
#[test]
fn lsm_small_segments_at_default_capacity_are_cheap() {
    let start = std::time::Instant::now();
    let (code, out, err) = durasim(&run_args(
        "lsm",
        &[
            "--tx",
            "200",
            "--set",
            "lsm.segment_bytes=4KB",
            "--set",
            "lsm.gc_mode=home",
            "--set",
            "lsm.gc_period_ms=0.001",
        ],
    ));
    assert_eq!(code, 0, "{err}");
    let migrations = out
        .lines()
        .find(|l| l.trim_start().starts_with("gc_migrations_home"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(migrations >= 2.0, "home migrations: {migrations}\n{out}");
    assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
}

/// A report path that can be opened but not written (/dev/full, a /proc
/// file) is refused before the work, like a missing directory: exit 2, no
/// verdict printed. The same for run's --json and --trace-out.
#[test]
fn unwritable_special_report_paths_are_refused_before_the_work() {
    let (code, out, err) = durasim(&[
        "crashtest",
        "--scheme",
        "opt-redo",
        "--workload",
        "vector",
        "--tx",
        "20",
        "--points",
        "20",
        "--json",
        "/dev/full",
    ]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        !out.contains("PASS") && err.contains("/dev/full"),
        "{out}\n{err}"
    );
    for (flag, path) in [
        ("--json", "/dev/full"),
        ("--json", "/proc/version"),
        ("--trace-out", "/dev/full"),
        ("--trace-out", "t.trace.bz2"),
    ] {
        let (code, out, err) = durasim(&run_args("ideal", &[flag, path]));
        assert_eq!(code, 2, "{flag} {path}: {out}\n{err}");
        assert!(err.contains(flag) && err.contains(path), "{err}");
        assert!(!out.contains("committed"), "{out}");
    }
    assert!(!std::path::Path::new("t.trace.bz2").exists());
    let (code, _, err) = durasim(&run_args("ideal", &["--trace-format", "vans"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--trace-out"), "{err}");
    // /dev/null still takes a report.
    let (code, _, err) = durasim(&run_args("ideal", &["--json", "/dev/null"]));
    assert_eq!(code, 0, "{err}");
}

/// Output into a closed pipe (`durasim list params | head -1`) ends the
/// program quietly, as for any Unix filter, not with a panic.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args(["list", "params"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is dropped here: later writes meet a closed pipe.
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(status.code(), Some(101), "{err}");
}

/// A run too short for its scheme's periodic mechanism says so on stderr
/// (and still runs); a long-enough period or a scheme without one is quiet.
#[test]
fn runs_shorter_than_a_period_are_warned_about() {
    let (code, _, err) = durasim(&run_args("hoop", &["--tx", "20"]));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: hoop")
            && err.contains("hoop.gc_period_ms")
            && err.contains("--tx 300000"),
        "{err}"
    );
    assert_eq!(err.matches("hoop.gc_period_ms (").count(), 1, "{err}");
    let (code, _, err) = durasim(&run_args(
        "hoop",
        &["--tx", "20", "--set", "hoop.gc_period_ms=0.001"],
    ));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    let (code, _, err) = durasim(&run_args("opt-undo", &["--tx", "20"]));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
}
