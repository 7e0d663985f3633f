//! Resumable recovery (recovery/scan.rs): the resumed scan gives exactly what a
//! from-scratch recovery gives, on every workload, and verdicts do not depend
//! on it or on the host threads.

use durasim::config::Params;
use durasim::crash::{self, CrashOptions, CrashReport, PointSel};
use durasim::engine::RunSpec;

mod common;

/// The schemes whose recovery is resumable.
const RESUMABLE: &[&str] = &[
    "opt-redo",
    "fwb",
    "fwb-unsafe",
    "hoop",
    "morlog",
    "morlog-dp",
];

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

/// `tx` transactions, fewer where one transaction persists a lot: TPC-C
/// (~150 stores per transaction, a full-table checker) and YCSB (1 KB
/// records, ~37 persist events per transaction; its verified points cost
/// 20x those of the trees).
fn short_tx(workload: &str, tx: u64) -> u64 {
    match workload {
        "tpcc" => 20,
        "ycsb" => tx.min(40),
        _ => tx,
    }
}

fn run(s: RunSpec, o: &CrashOptions) -> CrashReport {
    crash::crashtest(s, o, &mut |_, _| {}).unwrap()
}

/// Every resumable scan on every workload: each resumed point is also
/// recovered and checked from scratch (`verify_resume`), with no
/// difference in image, write count, digest, verdict or report. fwb and
/// fwb-unsafe share one scan, as do morlog and morlog-dp: each pair splits
/// the workloads between its two schemes. hoop takes every other workload
/// here and all of them under GC below.
#[test]
fn resumed_recovery_equals_from_scratch_on_every_workload() {
    for (i, w) in durasim::workloads::REGISTRY.iter().enumerate() {
        let odd = i % 2 == 1;
        let mut schemes = vec![
            "opt-redo",
            if odd { "fwb-unsafe" } else { "fwb" },
            if odd { "morlog-dp" } else { "morlog" },
        ];
        if !odd {
            schemes.push("hoop");
        }
        for scheme in schemes {
            assert!(RESUMABLE.contains(&scheme));
            let tx = short_tx(w.name, 80);
            let o = CrashOptions {
                verify_resume: true,
                ..CrashOptions::default()
            };
            let r = run(spec(scheme, w.name, tx, &[]), &o);
            let at = format!("{scheme} x {}", w.name);
            assert_eq!(r.resume_mismatches, 0, "{at}");
            // fwb-unsafe is the negative control: it may fail, identically
            // on both paths (checked by verify_resume).
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

/// HOOP with GC every 2 us of simulated time: commits retired and blocks
/// freed and reused under the kept scan (commits leave the state, words
/// fall back to older versions or are no longer written), on every
/// workload and on sampled points far apart.
#[test]
fn hoop_resumed_recovery_equals_from_scratch_under_gc() {
    let gc = [("hoop.gc_period_ms", "0.002"), ("hoop.block_bytes", "4096")];
    for w in durasim::workloads::REGISTRY {
        let tx = short_tx(w.name, 120);
        let o = CrashOptions {
            verify_resume: true,
            ..CrashOptions::default()
        };
        let r = run(spec("hoop", w.name, tx, &gc), &o);
        let at = format!("hoop x {}", w.name);
        assert_eq!(r.resume_mismatches, 0, "{at}");
        assert_eq!(r.violations, 0, "{at}: {:?}", r.first_violation);
        assert!(r.resumed_points > 0, "{at}: never resumed");
    }
    sampled_resume_matches("hoop", &gc);
}

/// `scheme` on btree, 600 transactions, 200 sampled points far apart:
/// every resumed point also recovered from scratch, no difference.
fn sampled_resume_matches(scheme: &str, sets: &[(&str, &str)]) {
    let o = CrashOptions {
        points: PointSel::Sampled(200),
        verify_resume: true,
        ..CrashOptions::default()
    };
    let r = run(spec(scheme, "btree", 600, sets), &o);
    assert_eq!(r.resume_mismatches, 0, "{scheme}");
    assert_eq!(r.violations, 0, "{scheme}");
    assert!(r.resumed_points > 0, "{scheme}");
}

/// Same verdicts, first violation, replay line and recovery crash counts
/// with the resumed scan on or off and with 1 or 2 host threads, for a
/// correct run and a mutant that fails.
#[test]
fn verdicts_do_not_depend_on_resume_or_host_threads() {
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("opt-redo", vec![("opt-redo.checkpoint_period_ms", "0.002")]),
        (
            "opt-redo",
            vec![
                ("opt-redo.checkpoint_period_ms", "0.002"),
                ("opt-redo.mutant", "truncate-before-checkpoint"),
            ],
        ),
        ("hoop", vec![("hoop.gc_period_ms", "0.002")]),
        (
            "hoop",
            vec![
                ("hoop.gc_period_ms", "0.002"),
                ("hoop.mutant", "gc-frees-before-home-writes"),
            ],
        ),
        ("hoop", vec![("hoop.mutant", "recovery-skips-newest")]),
        ("hoop", vec![("hoop.mutant", "commit-before-last-slice")]),
    ];
    for (scheme, sets) in cases {
        let mutant = sets.iter().any(|(k, _)| k.ends_with(".mutant"));
        verdicts_agree(scheme, sets, 150, mutant);
    }
}

/// Crash-test `scheme` on vector (64 initial items) with 1 host thread
/// and the resumed scan, then with 2 threads and without resuming: same
/// verdicts, first violation, violation and recovery crash counts and
/// recovery bytes; it fails exactly when `fails`.
fn verdicts_agree(scheme: &str, mut sets: Vec<(&str, &str)>, tx: u64, fails: bool) {
    sets.push(("workload.initial_items", "64"));
    spec_verdicts_agree(spec(scheme, "vector", tx, &sets), fails);
}

/// [`verdicts_agree`] for any run.
fn spec_verdicts_agree(s: RunSpec, fails: bool) {
    let (scheme, sets) = (s.scheme.clone(), s.workload.clone());
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
    assert!(one.resumed_points > 0, "{scheme} {sets:?}");
    assert_eq!(one.violations > 0, fails, "{scheme} {sets:?}");
    for other in [go(2, true), go(1, false)] {
        assert_eq!(one.verdicts, other.verdicts, "{scheme} {sets:?}");
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

/// dudetm and lsm (resumable scans) on every workload,
/// also with parameters that exercise what invalidates their scans: many
/// group commits (dudetm), segment switches, compaction and migrate-home
/// GC (lsm). Every resumed point is checked from scratch too.
#[test]
fn dudetm_and_lsm_resume_equals_from_scratch() {
    let lsm_gc: &[(&str, &str)] = &[
        ("lsm.segment_bytes", "4096"),
        ("lsm.gc_victim_utilization", "0.9"),
        ("lsm.gc_period_ms", "0.001"),
    ];
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("dudetm", &[]),
        ("dudetm", &[("dudetm.group_commit_ms", "0.002")]),
        ("lsm", &[]),
        ("lsm", lsm_gc),
        (
            "lsm",
            &[("lsm.gc_mode", "home"), ("lsm.gc_period_ms", "0.001")],
        ),
    ];
    for scheme in ["dudetm", "lsm"] {
        let settings: Vec<_> = cases
            .iter()
            .filter(|c| c.0 == scheme)
            .map(|c| c.1)
            .collect();
        resume_matches_on_every_workload(scheme, &settings, 80);
    }
}

/// dudetm and lsm: same verdicts, first violation and recovery crash
/// counts with the resumed scan on or off and with 1 or 2 host threads,
/// for correct runs and lsm's mutants (one in the scheme, one in
/// recovery) that fail.
#[test]
fn dudetm_and_lsm_verdicts_do_not_depend_on_resume_or_host_threads() {
    // tests/mutants.rs's lsm setting: migrate-home GC, small segments.
    let lsm_home = [
        ("lsm.gc_mode", "home"),
        ("lsm.gc_period_ms", "0.002"),
        ("lsm.segment_bytes", "4KB"),
    ];
    let with = |extra: (&'static str, &'static str)| [&lsm_home[..], &[extra]].concat();
    // (scheme, parameters, transactions, whether it must fail)
    type Case = (&'static str, Vec<(&'static str, &'static str)>, u64, bool);
    let cases: Vec<Case> = vec![
        (
            "dudetm",
            vec![("dudetm.group_commit_ms", "0.002")],
            150,
            false,
        ),
        ("lsm", lsm_home.to_vec(), 150, false),
        ("lsm", with(("lsm.mutant", "retire-log-early")), 150, true),
        ("lsm", with(("lsm.mutant", "ignore-checksum")), 400, true),
    ];
    for (scheme, sets, tx, fails) in cases {
        verdicts_agree(scheme, sets, tx, fails);
    }
}

/// morlog and morlog-dp (resumable scans): same verdicts
/// with the resumed scan on or off and 1 or 2 host threads, for correct
/// runs and two mutants that fail.
#[test]
fn morlog_verdicts_do_not_depend_on_resume_or_host_threads() {
    verdicts_agree("morlog", vec![("morlog.period_cycles", "3000")], 150, false);
    verdicts_agree(
        "morlog-dp",
        vec![("morlog-dp.period_cycles", "3000")],
        150,
        false,
    );
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
    spec_verdicts_agree(small_echo("morlog-dp", "ignore-counter", 1, 60), true);
    spec_verdicts_agree(small_echo("morlog", "discard-on-writeback", 2, 150), true);
}

/// `verify_resume` on every workload (`tx` transactions, tpcc 20), the
/// workloads dealt round-robin to `settings` (each setting exercises one
/// path of the scan; every workload's write pattern meets the scan once):
/// every resumed point also recovered and checked from scratch with 0
/// mismatches, no violation, and resumed at least once.
fn resume_matches_on_every_workload(scheme: &str, settings: &[&[(&str, &str)]], tx: u64) {
    for (i, w) in durasim::workloads::REGISTRY.iter().enumerate() {
        let sets = settings[i % settings.len()];
        let tx = short_tx(w.name, tx);
        let o = CrashOptions {
            verify_resume: true,
            ..CrashOptions::default()
        };
        let r = run(spec(scheme, w.name, tx, sets), &o);
        let at = format!("{scheme} {sets:?} x {}", w.name);
        assert_eq!(r.resume_mismatches, 0, "{at}");
        assert_eq!(r.violations, 0, "{at}: {:?}", r.first_violation);
        assert!(r.resumed_points > 0, "{at}: never resumed");
    }
}

/// Settings that stress what the osp scan folds in: a 4 KiB journal that
/// wraps every few commits (records vanish, reuse write-backs), an SSP
/// cache of 4 entries per core (evict write-backs of metadata lines) and a
/// last-level TLB of 8 entries (consolidations all the time).
const OSP_STRESS: &[(&str, &str)] = &[
    ("osp.journal_bytes_per_core", "4096"),
    ("osp.ssp_cache_entries_per_core", "4"),
    ("osp.l2_tlb_sets", "4"),
    ("osp.l2_tlb_ways", "2"),
];

/// osp (resumable: a scan that follows the writes with
/// the finish re-runs proven): every resumed point of every workload also
/// recovered, checked and crashed inside recovery from scratch, with
/// default and stress settings, and on sampled points far apart.
#[test]
fn osp_resumed_recovery_equals_from_scratch() {
    resume_matches_on_every_workload("osp", &[&[], OSP_STRESS], 80);
    sampled_resume_matches("osp", OSP_STRESS);
}

/// osp: same verdicts, first violation and recovery crash counts with the
/// resumed scan on or off and 1 or 2 host threads, for correct runs and
/// the `journal-before-flush` mutant.
#[test]
fn osp_verdicts_do_not_depend_on_resume_or_host_threads() {
    let with = |extra: (&'static str, &'static str)| [OSP_STRESS, &[extra]].concat();
    verdicts_agree("osp", vec![], 150, false);
    verdicts_agree("osp", OSP_STRESS.to_vec(), 150, false);
    verdicts_agree(
        "osp",
        with(("osp.mutant", "journal-before-flush")),
        150,
        true,
    );
}

/// ehou (resumable: a scan that follows the writes)
/// on every workload: the default 131,072-slot AIT cache (lazy), a 4 x 2
/// AIT cache (entries evicted to the AIT and to the overflow logs, lazy
/// and eager), and sampled points far apart. Every resumed point is
/// checked from scratch too, its recovery crashes among the AIT resets
/// (proven by the scheme's argument) re-run for real.
#[test]
fn ehou_resumed_recovery_equals_from_scratch() {
    let small: &[(&str, &str)] = &[
        ("dimm.ait_cache_sets", "4"),
        ("dimm.ait_cache_ways", "2"),
        ("ehou.pool_lines", "4096"),
    ];
    let eager = [small, &[("ehou.persist", "eager")]].concat();
    resume_matches_on_every_workload("ehou", &[&[], small, &eager], 80);
    let o = CrashOptions {
        points: PointSel::Sampled(200),
        verify_resume: true,
        ..CrashOptions::default()
    };
    let r = run(spec("ehou", "btree", 600, small), &o);
    assert_eq!(r.resume_mismatches, 0);
    assert_eq!(r.violations, 0);
    assert!(r.resumed_points > 0);
}

/// ehou: same verdicts, first violation and recovery crash counts with the
/// resumed scan on or off and 1 or 2 host threads, for a correct run with
/// a small AIT cache and for the Fig. 5 mutant (tests/mutants.rs's
/// setting), which fails.
#[test]
fn ehou_verdicts_do_not_depend_on_resume_or_host_threads() {
    let small = vec![
        ("dimm.ait_cache_sets", "4"),
        ("dimm.ait_cache_ways", "2"),
        ("ehou.pool_lines", "4096"),
    ];
    verdicts_agree("ehou", small, 150, false);
    let mutant = vec![
        ("dimm.ait_cache_sets", "1"),
        ("dimm.ait_cache_ways", "1"),
        ("ehou.pool_lines", "4096"),
        ("ehou.mutant", "evict-speculative-to-ait"),
    ];
    verdicts_agree("ehou", mutant, 120, true);
}

/// Settings that stress what drops or truncates redu's kept scan: a 64 KiB
/// log (a full log forces an application and truncation) and an 8 KiB DRAM
/// cache (forced applications from the store path), and applications held
/// back (a long live log, truncated only when full).
const REDU_STRESS: &[(&str, &str)] = &[
    ("redu.log_bytes_per_core", "65536"),
    ("redu.dram_cache_bytes", "8KB"),
];
const REDU_HELD: &[(&str, &str)] = &[
    ("redu.apply_period_us", "1000000"),
    ("redu.log_bytes_per_core", "65536"),
];

/// redu (resumable: opt-redo's scan over REDU's
/// two-header log): every resumed point of every workload also recovered,
/// checked and crashed inside recovery from scratch, with default, stress
/// and held-back settings, and on sampled points far apart.
#[test]
fn redu_resumed_recovery_equals_from_scratch() {
    resume_matches_on_every_workload("redu", &[&[], REDU_STRESS, REDU_HELD], 80);
    sampled_resume_matches("redu", &[]);
    sampled_resume_matches("redu", REDU_HELD);
}

/// redu: same verdicts, first violation and recovery crash counts with the
/// resumed scan on or off and 1 or 2 host threads, for correct runs and
/// the `truncate-before-apply` mutant, which fails.
#[test]
fn redu_verdicts_do_not_depend_on_resume_or_host_threads() {
    verdicts_agree("redu", vec![], 150, false);
    verdicts_agree("redu", REDU_HELD.to_vec(), 150, false);
    verdicts_agree(
        "redu",
        vec![("redu.mutant", "truncate-before-apply")],
        150,
        true,
    );
}
