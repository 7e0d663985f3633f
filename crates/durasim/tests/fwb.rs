//! FWB (MorLog's baseline): the engine's force-write-back scan, the
//! `fwb` scheme's crash consistency (every crash point, every transactional
//! workload, each encoding, crashes inside recovery), `fwb-unsafe` failing
//! with a replay line (negative control), the planted mutants, and the
//! named design presets.

use durasim::cache::hierarchy::{MemSide, Writeback, WritebackCause};
use durasim::cache::{Hierarchy, LineExt};
use durasim::config::Params;
use durasim::crash::{CrashOptions, PointSel};
use durasim::engine::{self, RunSpec};
use durasim::types::{Addr, CoreId, Cycle, LineData};

mod common;
use common::{crash_every_workload, crashtest, durasim, spec, stat, SMALL};

/// Records the write-backs the scan issues.
#[derive(Default)]
struct Recorder {
    writebacks: Vec<(Addr, WritebackCause)>,
}

impl MemSide for Recorder {
    fn read_miss(
        &mut self,
        _core: CoreId,
        _line: Addr,
        now: Cycle,
        _out: &mut LineData,
        _ext: &mut LineExt,
    ) -> (Cycle, bool) {
        (now + 100, false)
    }
    fn writeback(&mut self, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr: line,
            cause,
            now,
            ..
        } = ev;
        self.writebacks.push((line, cause));
        now
    }
    fn l1_evict(&mut self, _: CoreId, _: Addr, _: &LineData, _: &mut LineExt, _: Cycle) {}
}

fn store(h: &mut Hierarchy, m: &mut Recorder, line: Addr, t: Cycle) {
    let (_, slot, _) = h.access(0, line, t, m);
    h.l1_write(0, slot).0[0] ^= 1;
}

/// The flag rule: a line dirty at two consecutive passes is written back
/// (and stays cached, clean); one written back between the passes and
/// dirtied again is only flagged; a store to a flagged line does not clear
/// the flag (docs/model/morlog.md: clearing it would let a line stored in every
/// period escape the write-back forever, and the log truncation with it).
#[test]
fn scan_writes_back_lines_dirty_across_two_passes() {
    let p = Params::defaults(&[]);
    let mut h = Hierarchy::new(&p, 1);
    h.enable_force_write_back();
    let mut m = Recorder::default();
    let (a, b, c, clean) = (0x1000, 0x2000, 0x3000, 0x4000);
    for l in [a, b, c] {
        store(&mut h, &mut m, l, 10);
    }
    h.access(0, clean, 10, &mut m);
    let p1 = h.force_write_back_pass(100, &mut m);
    assert_eq!((p1.written, p1.flagged), (0, 3));
    assert!(m.writebacks.is_empty());
    assert!(h.fwb_flagged(a) && h.fwb_flagged(b) && h.fwb_flagged(c));
    assert!(!h.fwb_flagged(clean));
    // b is written back (clwb) and dirtied again; c is stored again.
    h.flush(0, b, 200, &mut m);
    assert!(!h.fwb_flagged(b), "a write-back clears the flag");
    store(&mut h, &mut m, b, 210);
    store(&mut h, &mut m, c, 220);
    m.writebacks.clear();
    let p2 = h.force_write_back_pass(300, &mut m);
    let mut wb = m.writebacks.clone();
    wb.sort_unstable_by_key(|x| x.0);
    assert_eq!(
        wb,
        vec![
            (a, WritebackCause::ForceWriteBack),
            (c, WritebackCause::ForceWriteBack)
        ]
    );
    assert_eq!((p2.written, p2.flagged), (2, 1));
    assert!(
        h.fwb_flagged(b),
        "re-dirtied after its write-back: flagged only"
    );
    assert!(!h.fwb_flagged(a) && !h.fwb_flagged(c));
    // The written-back lines stay cached, clean: the next pass ignores them
    // and writes back b.
    m.writebacks.clear();
    let p3 = h.force_write_back_pass(400, &mut m);
    assert_eq!(m.writebacks, vec![(b, WritebackCause::ForceWriteBack)]);
    assert_eq!((p3.written, p3.flagged), (1, 0));
    for l in [a, b, c] {
        assert!(h.llc.find(l).is_some(), "{l:#x} still cached");
    }
    // The walk reads one LLC set per cycle.
    assert!(p3.done >= 400 + h.llc.sets() as Cycle);
}

/// The scan runs in `fwb`'s runs: lines are written back by it, the log
/// head advances, home equals the architectural image at the end, and the
/// timing rule alone keeps every undo entry ahead of its data.
#[test]
fn fwb_truncates_its_log_through_the_scan() {
    let mut s = spec("fwb", "hashmap", 600, &[("fwb.period_cycles", "5000")]);
    s.params.set_str("run.warmup_tx_share", "0").unwrap();
    let e = engine::run(s, &mut |_| {}).unwrap();
    e.check_equivalence().unwrap();
    assert!(e.fwb.passes >= 10, "{:?}", e.fwb);
    assert!(e.fwb.lines_written > 0 && e.fwb.lines_flagged > 0);
    assert!(stat(&e, "retired_tx") > 100.0);
    assert!(stat(&e, "log_head_advances") >= 5.0);
    assert_eq!(stat(&e, "order_waits"), 0.0, "16 entries < the traversal");
    let entries = stat(&e, "log_entries_created");
    assert!(entries > 0.0 && stat(&e, "log_entries_written") == entries);
    let json = e.report_json();
    assert!(json["force_write_back"]["passes"].as_u64().unwrap() >= 10);
}

/// Every crash point (clean and torn) of small runs of every workload with
/// each encoding.
#[test]
fn fwb_survives_every_crash_point_of_every_workload_and_encoding() {
    for enc in ["none", "crade", "slde"] {
        crash_every_workload("fwb", enc, &[("fwb.period_cycles", "3000")]);
    }
}

/// Crashes inside recovery: every one of recovery's own writes, with the
/// scan and truncation running.
#[test]
fn fwb_recovery_survives_crashes_inside_it() {
    let opts = CrashOptions {
        recovery_crashes: u64::MAX,
        torn: true,
        ..CrashOptions::default()
    };
    for w in ["btree", "queue"] {
        // A short period keeps the live log, and so recovery, short.
        let sets = [
            ("fwb.period_cycles", "1000"),
            ("workload.initial_items", "64"),
        ];
        let r = crashtest(spec("fwb", w, 60, &sets), &opts);
        assert!(r.recovery_crashes_tested > 100, "{w}");
        assert!(r.background_points_tested > 0, "{w}");
        assert_eq!(r.violations, 0, "{w}: {:?}", r.first_violation);
    }
}

/// The configuration that exposes fwb-unsafe's race: small caches, one
/// thread, a scan every 1000 cycles on btree. A line written back by the
/// scan right after a store reaches NVM before that store's undo entry
/// (48 buffered cycles > 46 cycles of traversal).
fn unsafe_spec() -> RunSpec {
    let mut s = spec(
        "fwb-unsafe",
        "btree",
        300,
        &[("fwb-unsafe.period_cycles", "1000")],
    );
    s.threads = 1;
    s.seed = 1;
    s
}

/// Negative control: fwb-unsafe fails crash verification with a replay
/// line, the replayed point fails again, and the same run under `fwb`
/// passes.
#[test]
fn fwb_unsafe_fails_with_a_replay_line() {
    let e = engine::run(unsafe_spec(), &mut |_| {}).unwrap();
    assert!(stat(&e, "data_before_entry") > 0.0, "the race happens");
    let r = crashtest(unsafe_spec(), &CrashOptions::default());
    assert!(r.violations > 0, "fwb-unsafe must fail");
    let v = r.first_violation.expect("a first violation");
    assert!(
        v.replay.contains("--scheme fwb-unsafe") && v.replay.contains("--crash-at"),
        "{}",
        v.replay
    );
    let one = CrashOptions {
        points: PointSel::Single {
            point: v.point,
            tear_mask: v.tear_mask,
        },
        ..CrashOptions::default()
    };
    assert_eq!(crashtest(unsafe_spec(), &one).violations, 1);
    // The CLI says the failure is expected (exit code 1 all the same).
    let args: Vec<&str> = v.replay.split_whitespace().skip(1).collect();
    let (code, out, _) = durasim(&args);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("as expected"), "{out}");
    // Same run, fwb: passes.
    let mut s = unsafe_spec();
    s.scheme = "fwb".into();
    s.params = Params::defaults(&[durasim::schemes::logging::fwb::PARAMS]);
    for (k, v) in SMALL {
        s.params.set_str(k, v).unwrap();
    }
    s.params.set_str("fwb.period_cycles", "1000").unwrap();
    let r = crashtest(s, &CrashOptions::default());
    assert_eq!(r.violations, 0, "{:?}", r.first_violation);
}

/// The planted bugs fail the oracle: truncating one pass too early, and
/// letting data overtake their undo entries.
#[test]
fn fwb_mutants_fail() {
    for (mutant, workload) in [("truncate-early", "hashmap"), ("no-order", "btree")] {
        let mut s = spec(
            "fwb",
            workload,
            200,
            &[("fwb.period_cycles", "2000"), ("fwb.mutant", mutant)],
        );
        s.threads = 1;
        let r = crashtest(s, &CrashOptions::default());
        assert!(r.violations > 0, "mutant {mutant} passed");
    }
}

/// Named designs: resolve to their scheme with their settings, listed,
/// accepted by run; a misspelling gets "did you mean"; a contradicting
/// --set is refused; MorLog's presets stay hidden until `morlog` exists.
#[test]
fn presets_resolve_and_reject_bad_names() {
    use durasim::schemes;
    for (name, scheme, enc) in [
        ("fwb-crade", "fwb", "crade"),
        ("fwb-unsafe-crade", "fwb-unsafe", "crade"),
        ("fwb-slde", "fwb", "slde"),
    ] {
        assert_eq!(schemes::find(name).unwrap().name, scheme);
        let s = RunSpec::new(name, "btree").unwrap();
        assert_eq!(s.params.str("nvm.encoding"), enc, "{name}");
        assert!(schemes::names().contains(&name));
    }
    let morlog = schemes::REGISTRY.iter().any(|s| s.name == "morlog");
    assert_eq!(schemes::names().contains(&"morlog-slde"), morlog);
    let err = schemes::find("fwb-crad").err().unwrap().to_string();
    assert!(
        err.contains("did you mean") && err.contains("'fwb-crade'"),
        "{err}"
    );

    let (code, out, _) = durasim(&["list", "schemes"]);
    assert_eq!(code, 0);
    assert!(out.contains("fwb-crade") && out.contains("preset: fwb + nvm.encoding=crade"));
    let (code, out, err) = durasim(&[
        "run",
        "--scheme",
        "fwb-slde",
        "--workload",
        "queue",
        "--tx",
        "100",
        "--threads",
        "1",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["scheme"], "fwb-slde");
    assert_eq!(v["config"]["nvm"]["encoding"], "slde");
    let (code, _, err) = durasim(&[
        "run",
        "--scheme",
        "fwb-crad",
        "--workload",
        "queue",
        "--tx",
        "10",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean 'fwb-crade'"), "{err}");
    let (code, _, err) = durasim(&[
        "run",
        "--scheme",
        "fwb-crade",
        "--workload",
        "queue",
        "--tx",
        "10",
        "--set",
        "nvm.encoding=slde",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("preset 'fwb-crade' fixes nvm.encoding=crade"),
        "{err}"
    );
    // The same value is no contradiction (replay lines repeat it).
    let (code, _, err) = durasim(&[
        "run",
        "--scheme",
        "fwb-crade",
        "--workload",
        "queue",
        "--tx",
        "10",
        "--threads",
        "1",
        "--set",
        "nvm.encoding=crade",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// Log bits as MorLog counts them (expansion disabled) come from the TLC
/// media for every design, FWB included: SLDE's DLDC code words are
/// shorter than CRADE's FPC ones; the schemes also count the Fig. 7
/// record bits before encoding.
#[test]
fn log_bits_written_by_the_device_for_every_design() {
    let bits = |design: &str| {
        let mut s = RunSpec::new(design, "hashmap").unwrap();
        s.threads = 2;
        s.tx = 400;
        let e = engine::run(s, &mut |_| {}).unwrap();
        let m = &e.report_json()["nvm_media"];
        let written = m["log_bits_written"].as_u64().unwrap();
        assert!(m["log_line_writes"].as_u64().unwrap() > 0, "{design}");
        assert!(m["log_bits_programmed"].as_u64().unwrap() <= written);
        assert!(stat(&e, "log_bits_before_encoding") > 0.0, "{design}");
        written
    };
    for family in ["fwb", "morlog"] {
        let crade = bits(&format!("{family}-crade"));
        let slde = bits(&format!("{family}-slde"));
        assert!(slde < crade, "{family}: SLDE {slde} vs CRADE {crade}");
    }
}

/// The README's fwb-unsafe command, run exactly as printed there, fails
/// (the negative control is shown failing by the configuration the README
/// gives).
#[test]
fn readme_fwb_unsafe_command_fails() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("durasim crashtest --scheme fwb-unsafe"))
        .expect("the README gives a failing fwb-unsafe command");
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let (code, out, err) = durasim(&args);
    assert_eq!(code, 1, "{line}\n{out}{err}");
    assert!(
        out.contains("as expected") && out.contains("replay:"),
        "{out}"
    );
}
