//! Fuzzing the input surface: a proptest generator of
//! command lines (subcommands including `device validate`, names, flags,
//! `--set` overrides) and TOML
//! presets, each run through the real binary. On every generated input the
//! binary must exit 0, 1 (crashtest violation) or 2 (bad input) — never a
//! panic, an abort or a signal — and stay within a wall-time and a
//! host-memory budget.
//!
//! Values come from a grammar of spellings that were accepted or crashed
//! before (unit suffix soup, byte suffixes on counts, out-of-range and
//! overflowing numbers, NaN, empty strings, typos of keys and names) next
//! to valid ones, so most runs are tiny real simulations. Case count:
//! `DURASIM_FUZZ_CASES` (default 400, about 5-15 s in release on 2 cores).
//!
//! In process, bounded in time: trace files of every format (and format
//! detection), plain or gzip, replayed on the controller from a grammar of
//! fields that hung, wrapped or were accepted wrongly before (addresses at
//! the top of the address space or past `nvm.capacity_bytes`, markers of
//! impossible cores, overflowing cycles); and TOML presets from arbitrary
//! bytes and from a grammar of sections and values through the loader.

use durasim::config::Params;
use proptest::prelude::*;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall time one generated command may take.
const TIME_BUDGET: Duration = Duration::from_secs(30);
/// Peak resident memory one generated command may reach.
const RSS_BUDGET_KIB: u64 = 3 << 20;

fn keys() -> Vec<&'static str> {
    let p = Params::defaults(&durasim::schemes::all_params());
    let mut k: Vec<&'static str> = p.specs().map(|s| s.key).collect();
    // Unknown keys and near misses.
    k.extend([
        "cache.llc_size",
        "nvm.capacity",
        "bogus",
        "hoop.",
        ".x",
        "workload.itemz_bytes",
    ]);
    k
}

const INTS: &[&str] = &[
    "0",
    "1",
    "2",
    "8",
    "16",
    "64",
    "100",
    "1000",
    "4096",
    "1KB",
    "64B",
    "4MiB",
    "2xyzMB",
    "2GiBMB",
    "4kbMB",
    "-5",
    "1e3",
    "0x40",
    "0xZZ",
    "18446744073709551615",
    "99999999999999999999",
    "",
    " ",
    "abc",
    "4 MiB",
    "3MB",
    "1TB",
    "1_000",
    "16GiB",
];
const FLOATS: &[&str] = &[
    "0",
    "0.0001",
    "0.5",
    "1",
    "2.5",
    "10",
    "1e308",
    "NaN",
    "inf",
    "-1",
    "250ns",
    "0.25us",
    "1e-9",
    "3 parsecs",
    "",
    "1e6",
];
const STRS: &[&str] = &[
    "ooo",
    "in-order",
    "permutation",
    "line-interleaved",
    "dcw",
    "uniform",
    "compact",
    "home",
    "",
    "magic",
    "OOO",
    "true",
];
const BOOLS: &[&str] = &["true", "false", "1", "0", "yes", "maybe", ""];

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(INTS).prop_map(str::to_string),
        prop::sample::select(FLOATS).prop_map(str::to_string),
        prop::sample::select(STRS).prop_map(str::to_string),
        prop::sample::select(BOOLS).prop_map(str::to_string),
    ]
}

fn name(valid: Vec<&'static str>) -> impl Strategy<Value = String> {
    const TYPOS: &[&str] = &["hop", "redo", "", "IDEAL", "vectr", "b-tree", "lsm,lsm"];
    prop_oneof![
        4 => prop::sample::select(valid).prop_map(str::to_string),
        1 => prop::sample::select(TYPOS).prop_map(str::to_string),
    ]
}

/// A key and a value: half the time the key's own default spelled out
/// (so many runs are real simulations), else a value from the grammar.
fn sets() -> impl Strategy<Value = Vec<(String, String)>> {
    let p = Params::defaults(&durasim::schemes::all_params());
    let default_of = move |k: &str| {
        p.specs()
            .find(|s| s.key == k)
            .map(|s| s.default.value().to_string())
    };
    prop::collection::vec(
        (
            prop::sample::select(keys()).prop_map(str::to_string),
            value(),
            any::<bool>(),
        )
            .prop_map(move |(k, v, keep)| {
                let v = match (keep, default_of(&k)) {
                    (true, Some(d)) => d,
                    _ => v,
                };
                (k, v)
            }),
        0..4,
    )
}

/// A TOML preset: sections of generated key/values, or garbage.
fn toml_text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => Just(None),
        2 => sets().prop_map(|kv| {
            let mut s = String::new();
            for (k, v) in kv {
                let (sec, key) = k.split_once('.').unwrap_or(("", k.as_str()));
                // Numbers stay TOML numbers when they parse; the rest are
                // strings (TOML type errors are part of the surface too).
                let tv = if v.parse::<i64>().is_ok() || v.parse::<f64>().is_ok() && !v.is_empty()
                {
                    v.clone()
                } else {
                    format!("{v:?}")
                };
                s.push_str(&format!("[{sec}]\n{key} = {tv}\n"));
            }
            Some(s)
        }),
        1 => prop::sample::select(&["[cache\n", "x = = 1", "\u{0}\u{1}", "[a.b.c]\nd = [1, 2]"][..])
            .prop_map(|s| Some(s.to_string())),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    args: Vec<String>,
    config: Option<String>,
}

fn case() -> impl Strategy<Value = Case> {
    let cmd = prop::sample::select(&["run", "crashtest", "compare", "list", "device"][..]);
    let tx = prop::sample::select(
        &[
            "1",
            "10",
            "40",
            "0",
            "-1",
            "1e3",
            "18446744073709551615",
            "1000000001",
        ][..],
    );
    let threads = prop::sample::select(&["1", "2", "3", "0", "257", "x"][..]);
    let extra = prop::sample::select(
        &[
            "",
            "--points 5",
            "--points all",
            "--points 0",
            "--points x",
            "--crash-at 3",
            "--crash-at 3 --tear-mask 0x01",
            "--crash-at 3 --tear-mask 0xff",
            "--tear-mask 0x1",
            "--torn",
            "--recovery-crashes all",
            "--recovery-crashes -1",
            "--json -",
            "--json /nonexistent-dir/x",
            "--seed 7",
            "--baseline nope",
        ][..],
    );
    (
        cmd,
        name(durasim::schemes::names()),
        name(durasim::workloads::names()),
        tx,
        threads,
        sets(),
        extra,
        toml_text(),
        prop::sample::select(&["schemes", "workloads", "params", "parms"][..]),
        device(),
    )
        .prop_map(
            |(cmd, scheme, workload, tx, threads, sets, extra, config, list, dev)| {
                let mut a: Vec<String> = vec![cmd.into(), "-q".into()];
                if cmd == "list" {
                    a.push(list.into());
                    return Case {
                        args: a,
                        config: None,
                    };
                }
                if cmd == "device" {
                    // `device validate` takes the same --set/--config
                    // surface as `run`, plus its own flags.
                    a.extend(dev);
                    for (k, v) in sets {
                        a.push("--set".into());
                        a.push(format!("{k}={v}"));
                    }
                    return Case { args: a, config };
                }
                if cmd == "compare" {
                    a.extend(["--schemes".into(), scheme, "--workloads".into(), workload]);
                } else {
                    a.extend(["--scheme".into(), scheme, "--workload".into(), workload]);
                }
                a.extend(["--tx".into(), tx.into(), "--threads".into(), threads.into()]);
                for (k, v) in sets {
                    a.push("--set".into());
                    a.push(format!("{k}={v}"));
                }
                a.extend(extra.split_whitespace().map(str::to_string));
                Case { args: a, config }
            },
        )
}

/// `device validate`'s own arguments (after `device`): the subcommand
/// (or a typo of it), `--lines` (small valid counts keep runs short; out of
/// range, overflowing and non-numeric ones must be input errors), `--seed`
/// and `--json`.
fn device() -> impl Strategy<Value = Vec<String>> {
    let sub = prop::sample::select(&["validate", "validate", "validate", "valdate", ""][..]);
    let lines = prop::sample::select(
        &[
            "64",
            "128",
            "256",
            "63",
            "0",
            "-1",
            "16777217",
            "18446744073709551615",
            "99999999999999999999",
            "1KB",
            "x",
            "",
        ][..],
    );
    let extra = prop::sample::select(
        &[
            "",
            "--seed 7",
            "--seed -1",
            "--seed x",
            "--json -",
            "--json",
            "--json /nonexistent-dir/x",
            "--tx 5",
        ][..],
    );
    (sub, lines, extra).prop_map(|(sub, lines, extra)| {
        let mut a: Vec<String> = Vec::new();
        if !sub.is_empty() {
            a.push(sub.into());
        }
        a.extend(["--lines".into(), lines.into()]);
        a.extend(extra.split_whitespace().map(str::to_string));
        a
    })
}

/// Peak resident set of a running process (KiB), from /proc.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

fn run_case(c: &Case, dir: &std::path::Path, n: u64) -> Result<i32, String> {
    let mut args = c.args.clone();
    if let Some(text) = &c.config {
        let path = dir.join(format!("fuzz-{n}.toml"));
        std::fs::write(&path, text).unwrap();
        args.push("--config".into());
        args.push(path.display().to_string());
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        peak = peak.max(peak_rss_kib(child.id()).unwrap_or(0));
        if start.elapsed() > TIME_BUDGET || peak > RSS_BUDGET_KIB {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{args:?}: over budget ({:?}, peak {peak} KiB)",
                start.elapsed()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    match status.code() {
        Some(code @ (0..=2)) if !err.contains("panicked") => Ok(code),
        code => Err(format!(
            "{args:?} (config {:?}): exit {code:?}\n{err}",
            c.config
        )),
    }
}

#[test]
fn generated_command_lines_exit_cleanly_within_budget() {
    let cases = std::env::var("DURASIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let dir = std::env::temp_dir().join(format!("durasim-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let counter = std::sync::atomic::AtomicU64::new(0);
    let exits: [std::sync::atomic::AtomicU64; 3] = Default::default();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        // Every case is a process run: shrinking would rerun hundreds.
        max_shrink_iters: 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&case(), |c| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let code = run_case(&c, &dir, n).map_err(TestCaseError::fail)?;
        exits[code as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        panic!("{e}");
    }
    let [ok, violation, input] = exits.map(|a| a.into_inner());
    eprintln!("fuzz: {cases} cases: exit 0 {ok}, exit 1 {violation}, exit 2 {input}");
    // The generator must reach real simulations, not only input errors.
    assert!(
        ok + violation >= u64::from(cases) / 10,
        "{ok} + {violation} of {cases} ran"
    );
}

/// Longest one in-process replay or preset load may take: a hang (an
/// address whose line cursor wraps) fails the case instead of the suite.
const IN_PROCESS_BUDGET: Duration = Duration::from_secs(10);

/// One trace line from a grammar of fields of every format.
fn trace_line() -> impl Strategy<Value = String> {
    let field = prop::sample::select(
        &[
            "R",
            "W",
            "C",
            "R:3",
            "READ",
            "WRITE",
            "LD",
            "ST",
            "TXB",
            "TXE",
            "NVMV0",
            "NVMV1",
            "0x40",
            "0x80",
            "0xfffc0",
            "0x100000",
            "0x7fffffffc0",
            "0x8000000000",
            "0xffffffffffffffc0",
            "0xffffffffffffffff",
            "18446744073709551615",
            "0xZZ",
            "-1",
            "0",
            "1",
            "5",
            "255",
            "256",
            "99999",
            "1e9",
            "4294967296",
            "demand",
            "log",
            "writeback",
            "00",
            "ff",
            "#",
            "",
        ][..],
    );
    let data = Just("00".repeat(64));
    prop::collection::vec(
        prop_oneof![8 => field.prop_map(str::to_string), 1 => data],
        1..7,
    )
    .prop_map(|f| f.join(" "))
}

/// Run `f` on another thread and fail if it takes longer than the budget.
fn within_budget<T: Send + 'static>(what: String, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(IN_PROCESS_BUDGET) {
        Ok(v) => v,
        Err(_) => panic!("{what}: no result within {IN_PROCESS_BUDGET:?} (a hang)"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every generated trace, in every format and detected, replays to a
    /// report or an input error naming a line, within the time budget.
    #[test]
    fn generated_traces_replay_or_fail_cleanly(
        lines in prop::collection::vec(trace_line(), 1..8),
        fmt in prop::sample::select(&["auto", "durasim", "dramsim3", "ramulator2", "vans", "nvmain"][..]),
        gzip in any::<bool>(),
        small in any::<bool>(),
    ) {
        use durasim::trace::{replay, Format};
        let text = lines.join("\n") + "\n";
        let bytes = if gzip {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap()
        } else {
            text.clone().into_bytes()
        };
        let mut p = Params::defaults(&[]);
        if small {
            p.set_str("nvm.capacity_bytes", "1MB").unwrap();
        }
        let fmt = Format::parse(fmt, "--format", true).unwrap();
        let what = format!("{fmt:?} {text:?}");
        let result = within_budget(what.clone(), move || {
            let dir = std::env::temp_dir().join(format!("durasim-fuzz-trace-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("t{}.trace", rand_suffix()));
            std::fs::write(&path, &bytes).unwrap();
            let path = path.to_str().unwrap().to_string();
            let r = (|| {
                let mut mc = replay::replay_controller(&p)?;
                let input = durasim::trace::open_input(&path)?;
                replay::replay(input, &path, fmt, replay::ReplayConfig::from_params(&p), &mut mc)
            })();
            let _ = std::fs::remove_file(&path);
            r.map(|rep| rep.requests).map_err(|e| (matches!(e, durasim::Error::Input(_)), e.to_string()))
        });
        match result {
            Ok(_) => {}
            Err((input, msg)) => {
                prop_assert!(input, "{what}: not an input error: {msg}");
                prop_assert!(msg.contains("invalid trace"), "{what}: {msg}");
            }
        }
    }

    /// Arbitrary bytes and generated presets load or fail as input errors,
    /// never a panic, within the time budget.
    #[test]
    fn generated_presets_load_or_fail_cleanly(
        raw in prop::collection::vec(any::<u8>(), 0..300),
        text in toml_text(),
    ) {
        let texts = [String::from_utf8_lossy(&raw).into_owned(), text.unwrap_or_default()];
        for t in texts {
            let what = format!("{t:?}");
            let r = within_budget(what.clone(), move || {
                let mut p = Params::defaults(&[]);
                p.apply_toml(&t, "fuzz.toml").map_err(|e| matches!(e, durasim::Error::Input(_)))
            });
            prop_assert!(r.is_ok() || r == Err(true), "{what}: not an input error");
        }
    }
}

/// A distinct file name per case (cases may run while a timed-out one
/// still holds its file).
fn rand_suffix() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
