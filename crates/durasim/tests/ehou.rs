//! EHOU on the Optane-like DIMM: crash verification of eager and
//! lazy persisting on the EHOU preset with a small AIT cache (so speculative
//! entries overflow to the log), the Fig. 5 mutant, and the DIMM itself.

use durasim::config::Params;
use durasim::crash::{self, CrashOptions, CrashReport};
use durasim::engine::RunSpec;
use durasim::schemes::Durability;
use durasim::Engine;

const PRESET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/ehou.toml");

/// The EHOU preset with a 4-set x 2-way AIT cache and small tables.
fn spec(scheme: &str, workload: &str, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    s.params
        .apply_toml(&std::fs::read_to_string(PRESET).unwrap(), PRESET)
        .unwrap();
    for (k, v) in [
        ("dimm.ait_cache_sets", "4"),
        ("dimm.ait_cache_ways", "2"),
        ("ehou.pool_lines", "4096"),
        ("workload.initial_items", "64"),
        ("workload.tpcc_items", "2000"),
        ("workload.tpcc_customers_per_district", "300"),
    ]
    .iter()
    .chain(sets)
    {
        s.params.set_str(k, v).unwrap();
    }
    s.threads = 2;
    s.tx = tx;
    s.seed = 3;
    s
}

fn scheme_stat(e: &Engine, key: &str) -> f64 {
    e.report_json()["scheme_stats"][key].as_f64().unwrap()
}

fn check(r: &CrashReport, what: &str) {
    assert_eq!(
        r.violations,
        0,
        "{what}: {}",
        r.first_violation
            .as_ref()
            .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
            .unwrap_or_default()
    );
}

/// Every crash point (and a crash inside each recovery) of ehou, eager and
/// lazy, on every transactional workload.
#[test]
fn ehou_eager_and_lazy_survive_every_crash_point_of_every_workload() {
    for w in durasim::workloads::REGISTRY {
        for persist in ["lazy", "eager"] {
            let tx = match w.name {
                "tpcc" => 12,
                "vector" | "hashmap" | "btree" => 60,
                _ => 30,
            };
            // Lazy runs with small CPU caches: lines of running
            // transactions are written back and read again (Bloom hits).
            let mut sets = vec![("ehou.persist", persist)];
            if persist == "lazy" {
                sets.extend_from_slice(SMALL_CACHES);
            }
            let s = spec("ehou", w.name, tx, &sets);
            let opts = CrashOptions {
                torn: w.name == "hashmap",
                ..CrashOptions::default()
            };
            let r = crash::crashtest(s, &opts, &mut |_, _| {}).unwrap();
            assert!(r.persist_events > 50, "{}", w.name);
            check(&r, &format!("ehou {persist} x {}", w.name));
        }
    }
}

/// Lazy EHOU with small caches on other seeds and four threads: each of
/// these failed before the commit was ordered in persist time (the flip
/// ahead of lines evicted mid-transaction or of the set's records, a
/// committed entry in the AIT ahead of its flip, a released line reused
/// before it, a reclaim header ahead of its entries, an AIT entry ahead
/// of its directory bit).
#[test]
fn lazy_ehou_survives_other_seeds_and_four_threads() {
    for (w, seed, threads) in [
        ("kdtree", 4, 2),
        ("lbm", 1, 2),
        ("hashmap", 2, 4),
        ("queue", 2, 4),
        ("ycsb", 2, 4),
        ("pagerank", 3, 2),
    ] {
        let mut s = spec("ehou", w, 60, SMALL_CACHES);
        s.seed = seed;
        s.threads = threads;
        let r = crash::crashtest(s, &CrashOptions::default(), &mut |_, _| {}).unwrap();
        check(
            &r,
            &format!("ehou lazy x {w}, seed {seed}, {threads} threads"),
        );
    }
}

/// Small CPU caches: lines of running transactions are written back (and
/// read again) before their commit.
const SMALL_CACHES: &[(&str, &str)] = &[
    ("cache.l1_size_bytes", "1KB"),
    ("cache.l1_ways", "2"),
    ("cache.l2_size_bytes", "2KB"),
    ("cache.l2_ways", "2"),
    ("cache.llc_size_bytes", "4KB"),
    ("cache.llc_ways", "2"),
];

/// The small AIT cache overflows: speculative entries go to the overflow
/// log, are reloaded through the Bloom filter and replayed at commit.
#[test]
fn small_ait_cache_overflows_to_the_log_and_filter() {
    let mut s = spec("ehou", "btree", 200, SMALL_CACHES);
    s.params.set_str("run.warmup_tx_share", "0").unwrap();
    let mut e = Engine::new(s).unwrap();
    e.run(&mut |_| {}).unwrap();
    e.finish();
    e.check_equivalence().unwrap();
    assert!(scheme_stat(&e, "overflow_log_entries") > 0.0);
    assert_eq!(
        scheme_stat(&e, "overflow_log_entries"),
        scheme_stat(&e, "overflow_log_applied")
    );
    assert!(scheme_stat(&e, "bloom_hits") > 0.0);
    assert!(scheme_stat(&e, "speculative_entries") >= scheme_stat(&e, "committed_entries"));
    assert!(scheme_stat(&e, "ait_flushes_lazy_evict") > 0.0);
    assert_eq!(scheme_stat(&e, "ait_flushes_eager"), 0.0);
    assert!(scheme_stat(&e, "pm_write_overhead_bytes") > 0.0);
    let j = e.report_json();
    assert!(j["nvm_dimm"]["media_block_writes"].as_u64().unwrap() > 0);
}

/// Eager persisting writes every committed entry at commit: nothing stays
/// committed-dirty in the AIT cache, and evictions never flush.
#[test]
fn eager_persisting_leaves_no_dirty_committed_entries() {
    let mut s = spec("ehou", "hashmap", 120, &[("ehou.persist", "eager")]);
    s.params.set_str("run.warmup_tx_share", "0").unwrap();
    let mut e = Engine::new(s).unwrap();
    e.run(&mut |_| {}).unwrap();
    e.finish();
    e.check_equivalence().unwrap();
    assert!(scheme_stat(&e, "ait_flushes_eager") > 0.0);
    assert_eq!(scheme_stat(&e, "cached_committed_dirty"), 0.0);
    assert_eq!(scheme_stat(&e, "ait_flushes_lazy_evict"), 0.0);
}

/// Fig. 5: a speculative entry evicted straight to the AIT (no overflow
/// log) is a partial transaction after a crash; the oracle must catch it
/// and print a replay line.
#[test]
fn evicting_speculative_entries_to_the_ait_fails_the_oracle() {
    let s = spec(
        "ehou",
        "hashmap",
        80,
        &[("ehou.mutant", "evict-speculative-to-ait")],
    );
    let r = crash::crashtest(s, &CrashOptions::default(), &mut |_, _| {}).unwrap();
    assert!(r.violations > 0, "mutant not caught");
    let v = r.first_violation.unwrap();
    assert!(v.replay.contains("--crash-at"), "{}", v.replay);
}

/// The existing schemes run unchanged on the Optane-like DIMM, and the
/// DIMM's counters move.
#[test]
fn existing_schemes_run_on_the_dimm() {
    for scheme in ["ideal", "opt-redo", "hoop"] {
        let mut s = spec(scheme, "vector", 200, &[]);
        s.params.set_str("dimm.ait_cache_sets", "8192").unwrap();
        s.params.set_str("dimm.ait_cache_ways", "16").unwrap();
        s.params.set_str("run.warmup_tx_share", "0").unwrap();
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {}).unwrap();
        e.finish();
        e.check_equivalence().unwrap();
        let d = &e.report_json()["nvm_dimm"];
        assert!(d["ait_cache_misses"].as_u64().unwrap() > 0, "{scheme}");
        if scheme != "ideal" {
            // (ideal writes nothing back inside the measured window)
            assert!(d["wcb_misses"].as_u64().unwrap() > 0, "{scheme}");
        }
    }
    // Off by default: no DIMM block in the report.
    let mut s = RunSpec::new("ideal", "vector").unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    s.threads = 1;
    s.tx = 20;
    let mut e = Engine::new(s).unwrap();
    e.run(&mut |_| {}).unwrap();
    assert!(e.report_json().get("nvm_dimm").is_none());
    assert_eq!(
        durasim::schemes::find("ehou").unwrap().durability,
        Durability::AtCommit
    );
}

/// EHOU, SSP and REDU split their PM write overhead the same way: the
/// end-of-run share is exactly what `finish` wrote (the total before it is
/// the steady-state part), so figure (a) compares like for like.
#[test]
fn end_of_run_overhead_is_what_finish_wrote() {
    for scheme in ["ehou", "osp", "redu"] {
        let mut s = spec(scheme, "hashmap", 300, &[]);
        s.params.set_str("dimm.ait_cache_sets", "8192").unwrap();
        s.params.set_str("dimm.ait_cache_ways", "16").unwrap();
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {}).unwrap();
        let before = scheme_stat(&e, "pm_write_overhead_bytes");
        assert_eq!(scheme_stat(&e, "pm_write_overhead_bytes_end_of_run"), 0.0);
        e.finish();
        e.check_equivalence().unwrap();
        let total = scheme_stat(&e, "pm_write_overhead_bytes");
        let end = scheme_stat(&e, "pm_write_overhead_bytes_end_of_run");
        assert!(before > 0.0 && end > 0.0, "{scheme}: {before} {end}");
        assert_eq!(total - end, before, "{scheme}");
    }
}

/// Verdicts, reports and replay lines of ehou (and of its Fig. 5 mutant)
/// do not depend on the host thread count, and every recovery reused by
/// the dedup or proven by the write-after-read argument gives the image a
/// from-scratch recovery gives (`verify_dedup`: 0 mismatches).
#[test]
fn ehou_verdicts_do_not_depend_on_host_threads() {
    for mutant in ["none", "evict-speculative-to-ait"] {
        let s = spec("ehou", "hashmap", 60, &[("ehou.mutant", mutant)]);
        let go = |host_threads| {
            let o = CrashOptions {
                host_threads,
                torn: true,
                verify_dedup: true,
                ..CrashOptions::default()
            };
            crash::crashtest(s.clone(), &o, &mut |_, _| {}).unwrap()
        };
        let (one, two) = (go(1), go(2));
        assert_eq!(one.dedup_mismatches, 0, "{mutant}");
        assert_eq!(two.dedup_mismatches, 0, "{mutant}");
        assert_eq!(one.verdicts, two.verdicts, "{mutant}");
        assert_eq!(one.first_violation, two.first_violation, "{mutant}");
        assert_eq!(one.recovery_crashes_tested, two.recovery_crashes_tested);
        assert_eq!(one.violations > 0, mutant != "none");
    }
}
