//! Resumable recovery (crash/resume.rs, issue 20 part 1): the resumed
//! scan gives exactly what a from-scratch recovery gives, on every
//! workload, and verdicts do not depend on it or on the host threads.

use durasim::config::Params;
use durasim::crash::{self, CrashOptions, CrashReport, PointSel};
use durasim::engine::RunSpec;

mod common;

/// The schemes whose recovery is resumable.
const RESUMABLE: &[&str] = &["opt-redo", "fwb", "fwb-unsafe", "morlog", "morlog-dp"];

fn spec(scheme: &str, workload: &str, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    s.threads = 2;
    s.tx = tx;
    s.seed = 17;
    if workload == "tpcc" {
        s.params.set_str("workload.tpcc_items", "2000").unwrap();
        s.params
            .set_str("workload.tpcc_customers_per_district", "300")
            .unwrap();
    }
    for (k, v) in sets {
        s.params.set_str(k, v).unwrap();
    }
    s
}

fn run(s: RunSpec, o: &CrashOptions) -> CrashReport {
    crash::crashtest(s, o, &mut |_, _| {}).unwrap()
}

/// Every resumable scheme on every workload: each resumed point is also
/// recovered and checked from scratch (`verify_resume`), with no
/// difference in image, write count, digest, verdict or report.
#[test]
fn resumed_recovery_equals_from_scratch_on_every_workload() {
    for &scheme in RESUMABLE {
        for w in durasim::workloads::REGISTRY {
            let tx = if w.name == "tpcc" { 20 } else { 80 };
            let o = CrashOptions {
                verify_resume: true,
                ..CrashOptions::default()
            };
            let r = run(spec(scheme, w.name, tx, &[]), &o);
            let at = format!("{scheme} x {}", w.name);
            assert_eq!(r.resume_mismatches, 0, "{at}");
            // fwb-unsafe is the negative control: it must fail somewhere,
            // identically on both paths (checked by verify_resume).
            if !scheme.contains("unsafe") {
                assert_eq!(r.violations, 0, "{at}: {:?}", r.first_violation);
            }
            assert!(r.resumed_points > 0, "{at}: never resumed");
        }
    }
}

/// Sampled points far apart (many events between them, log truncations
/// among them) on a longer run, with frequent checkpoints.
#[test]
fn resumed_recovery_equals_from_scratch_on_sampled_points() {
    let o = CrashOptions {
        points: PointSel::Sampled(300),
        verify_resume: true,
        ..CrashOptions::default()
    };
    for sets in [&[][..], &[("opt-redo.checkpoint_period_ms", "0.002")][..]] {
        let r = run(spec("opt-redo", "btree", 600, sets), &o);
        assert_eq!(r.resume_mismatches, 0, "{sets:?}");
        assert_eq!(r.violations, 0, "{sets:?}");
        assert!(r.resumed_points > 0);
    }
}

/// Same verdicts, first violation, replay line and recovery crash counts
/// with the resumed scan on or off and with 1 or 2 host threads, for
/// correct runs and mutants that fail.
#[test]
fn verdicts_do_not_depend_on_resume_or_host_threads() {
    let on_vector = |scheme, sets: Vec<(&str, &str)>| {
        let mut sets = sets;
        sets.push(("workload.initial_items", "64"));
        spec(scheme, "vector", 150, &sets)
    };
    // morlog's mutants as tests/morlog.rs makes them fail: small caches
    // (steals and L1 evictions within a few transactions), echo.
    let small_echo = |scheme: &str, mutant, threads, tx| {
        let (period, mkey) = (
            format!("{scheme}.period_cycles"),
            format!("{scheme}.mutant"),
        );
        let mut sets = common::SMALL.to_vec();
        sets.extend([(period.as_str(), "1000"), (mkey.as_str(), mutant)]);
        let mut s = spec(scheme, "echo", tx, &sets);
        s.threads = threads;
        s.seed = 1;
        s
    };
    // (run, is a mutant that must fail)
    let cases: Vec<(RunSpec, bool)> = vec![
        (
            on_vector("opt-redo", vec![("opt-redo.checkpoint_period_ms", "0.002")]),
            false,
        ),
        (
            on_vector(
                "opt-redo",
                vec![
                    ("opt-redo.checkpoint_period_ms", "0.002"),
                    ("opt-redo.mutant", "truncate-before-checkpoint"),
                ],
            ),
            true,
        ),
        (
            on_vector("morlog", vec![("morlog.period_cycles", "3000")]),
            false,
        ),
        (
            on_vector("morlog-dp", vec![("morlog-dp.period_cycles", "3000")]),
            false,
        ),
        (small_echo("morlog-dp", "ignore-counter", 1, 60), true),
        (small_echo("morlog", "discard-on-writeback", 2, 150), true),
    ];
    for (s, mutant) in cases {
        let sets = format!("{} {}", s.scheme, s.workload);
        let go = |host_threads, resume| {
            let o = CrashOptions {
                host_threads,
                resume_scans: resume,
                recovery_crashes: 3,
                torn: true,
                ..CrashOptions::default()
            };
            run(s.clone(), &o)
        };
        let one = go(1, true);
        assert!(one.resumed_points > 0);
        assert_eq!(one.violations > 0, mutant, "{sets:?}");
        for other in [go(2, true), go(1, false)] {
            assert_eq!(one.verdicts, other.verdicts, "{sets:?}");
            assert_eq!(one.first_violation, other.first_violation, "{sets:?}");
            assert_eq!(one.violations, other.violations);
            assert_eq!(one.recovery_crashes_tested, other.recovery_crashes_tested);
            assert_eq!(
                one.recovery_crash_violations,
                other.recovery_crash_violations
            );
            assert_eq!(
                one.recovery_bytes_written_mean,
                other.recovery_bytes_written_mean
            );
        }
    }
}
