//! HOOP-paper baselines (opt-undo, opt-redo, lad, ...): end-of-run
//! equivalence on every workload, and crash consistency at sampled (or all)
//! persist points checked against the committed history.

use durasim::engine::Engine;
use durasim::mem::{MemRead, MemWrite, Overlay, SparseImage};
use durasim::schemes;
use durasim::types::Addr;
use durasim::{workloads, RunSpec};
use rustc_hash::{FxHashMap, FxHashSet};

const BASELINES: &[&str] = &["opt-undo", "opt-redo", "lad", "osp", "lsm"];

fn spec(scheme: &str, workload: &str, threads: usize, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.threads = threads;
    s.tx = tx;
    s.seed = 7;
    s.params.set_str("run.check_reads", "true").unwrap();
    s.params.set_str("workload.initial_items", "64").unwrap();
    // Small caches so that mid-transaction evictions happen often.
    for (k, v) in [
        ("cache.llc_size_bytes", "8KB"),
        ("cache.llc_ways", "2"),
        ("cache.l2_size_bytes", "4KB"),
        ("cache.l2_ways", "2"),
        ("cache.l1_size_bytes", "1KB"),
        ("cache.l1_ways", "2"),
    ] {
        s.params.set_str(k, v).unwrap();
    }
    for (k, v) in sets {
        s.params.set_str(k, v).unwrap();
    }
    s
}

fn run_equiv(scheme: &str, workload: &str, item_bytes: u64) -> Engine {
    let ib = item_bytes.to_string();
    let mut e = Engine::new(spec(
        scheme,
        workload,
        4,
        400,
        &[("workload.item_bytes", &ib)],
    ))
    .unwrap_or_else(|err| panic!("{scheme}/{workload}: {err}"));
    e.run(&mut |_| {})
        .unwrap_or_else(|err| panic!("{scheme}/{workload}: {err}"));
    e.finish();
    if let Err(msg) = e.check_equivalence() {
        panic!("{scheme}/{workload}/{item_bytes}B: {msg}");
    }
    e.check_invariants(e.ctx.nvm.media())
        .unwrap_or_else(|m| panic!("{scheme}/{workload}: {m}"));
    e
}

#[test]
fn end_of_run_equivalence_every_workload() {
    for scheme in BASELINES {
        for wl in workloads::names() {
            for ib in [64, 1024] {
                let e = run_equiv(scheme, wl, ib);
                assert_eq!(e.metrics().committed_tx, 400);
            }
        }
    }
}

/// Crash oracle for schemes durable at commit: for each crash point `k`
/// (persist events `0..k` survive), recover from the bytes and check that
/// every thread's data equals the initial image plus the write sets of its
/// first `p` committed transactions, for some `p >= acked(k)`; the
/// workload's invariants hold; recovering twice changes nothing.
/// Returns the number of crash points checked.
pub fn crash_check(e: &Engine, max_points: usize) -> usize {
    let h = e.history.as_ref().expect("record_history");
    let log = &e.ctx.nvm.persist_log;
    let events = log.events();
    let layout = &e.ctx.layout;
    let threads = e.spec.threads;
    let owner = |a: Addr| (a / layout.thread_region_bytes) as usize;
    // Words to check per thread: everything any transaction wrote plus
    // every home word any persist event touched.
    let mut check: Vec<FxHashSet<Addr>> = vec![FxHashSet::default(); threads];
    for &(a, _) in &h.writes {
        check[owner(a)].insert(a);
    }
    for ev in events {
        if ev.addr < layout.home_limit {
            let first = ev.addr & !7;
            let mut a = first;
            while a < ev.addr + ev.len as u64 {
                if owner(a) < threads {
                    check[owner(a)].insert(a);
                }
                a += 8;
            }
        }
    }
    let check: Vec<Vec<Addr>> = check
        .into_iter()
        .map(|s| {
            let mut v: Vec<Addr> = s.into_iter().collect();
            v.sort_unstable();
            v
        })
        .collect();
    // Each thread's committed write sets, in commit order. A record's range
    // may include writes of other threads' transactions that began while it
    // ran (the history vector is shared), so keep the thread's own words.
    let tx_writes: Vec<Vec<Vec<(Addr, u64)>>> = (0..threads)
        .map(|t| {
            h.per_thread[t]
                .iter()
                .map(|r| {
                    h.writes[r.writes.clone()]
                        .iter()
                        .copied()
                        .filter(|&(a, _)| owner(a) == t)
                        .collect()
                })
                .collect()
        })
        .collect();
    let n = events.len();
    let points: Vec<usize> = if n < max_points {
        (0..=n).collect()
    } else {
        (0..max_points).map(|i| i * n / (max_points - 1)).collect()
    };
    let mut acked_exp: Vec<FxHashMap<Addr, u64>> = check
        .iter()
        .map(|c| {
            c.iter()
                .map(|&a| (a, h.initial_media.read_u64(a)))
                .collect()
        })
        .collect();
    let mut acked_n = vec![0usize; threads];
    let mut base: SparseImage = h.initial_media.clone();
    let mut applied = 0usize;
    for (pi, &k) in points.iter().enumerate() {
        while applied < k {
            let ev = &events[applied];
            base.write_bytes(ev.addr, log.data(ev));
            applied += 1;
        }
        let mut ov = Overlay::new(&base);
        (e.scheme_info.recover)(&mut ov, &e.params, layout)
            .unwrap_or_else(|err| panic!("crash point {k}/{n}: recovery failed: {err}"));
        for t in 0..threads {
            let txs = &tx_writes[t];
            let acked = h.per_thread[t]
                .iter()
                .take_while(|r| r.ack_persist_seq <= k as u64)
                .count();
            // Expected values of the acked prefix, advanced incrementally
            // (acked only grows with k).
            while acked_n[t] < acked {
                for &(a, v) in &txs[acked_n[t]] {
                    acked_exp[t].insert(a, v);
                }
                acked_n[t] += 1;
            }
            let got: FxHashMap<Addr, u64> = check[t].iter().map(|&a| (a, ov.read_u64(a))).collect();
            let mut bad = check[t]
                .iter()
                .filter(|a| acked_exp[t][a] != got[a])
                .count();
            if bad == 0 {
                continue;
            }
            let exp0 = &acked_exp[t];
            let mut exp = exp0.clone();
            let mut p = acked;
            while bad > 0 && p < txs.len() {
                for &(a, v) in &txs[p] {
                    let before = exp[&a] != got[&a];
                    exp.insert(a, v);
                    let after = v != got[&a];
                    bad = bad + after as usize - before as usize;
                }
                p += 1;
            }
            if bad > 0 {
                let a = check[t].iter().find(|a| exp0[a] != got[a]).unwrap();
                panic!(
                    "{}: crash point {k}/{n}, thread {t}: no committed prefix p >= {acked} (of {}) matches; e.g. {a:#x} = {:#x}, acked prefix expects {:#x}",
                    e.spec.scheme,
                    txs.len(),
                    got[a],
                    exp0[a]
                );
            }
        }
        // The prefix check above implies the invariants; run the (possibly
        // expensive, e.g. TPC-C) checkers on every 8th point as a cross-check.
        if pi % 8 == 0 || pi + 1 == points.len() {
            e.check_invariants(&ov)
                .unwrap_or_else(|m| panic!("crash point {k}/{n}: invariant: {m}"));
        }
        // Recovery is idempotent (a crash during recovery then recovers again).
        let mut again = Overlay::new(&ov);
        (e.scheme_info.recover)(&mut again, &e.params, layout).unwrap();
        for words in &check {
            for &a in words {
                assert_eq!(
                    again.read_u64(a),
                    ov.read_u64(a),
                    "{}: second recovery changed {a:#x} at crash point {k}",
                    e.spec.scheme
                );
            }
        }
    }
    points.len()
}

fn crash_run(
    scheme: &str,
    workload: &str,
    threads: usize,
    tx: u64,
    sets: &[(&str, &str)],
) -> Engine {
    let mut s = spec(scheme, workload, threads, tx, sets);
    s.record_history = true;
    let mut e = Engine::new(s).unwrap();
    e.run(&mut |_| {}).unwrap();
    e
}

#[test]
fn crash_consistency_sampled_points() {
    for scheme in BASELINES {
        for wl in workloads::names() {
            let e = crash_run(scheme, wl, 3, 60, &[]);
            let n = crash_check(&e, 80);
            assert!(n >= 50, "{scheme}/{wl}: only {n} crash points");
        }
    }
}

#[test]
fn crash_consistency_exhaustive_small() {
    for scheme in BASELINES {
        let e = crash_run(scheme, "vector", 2, 12, &[("workload.item_bytes", "1024")]);
        let n = e.ctx.nvm.persist_log.events().len();
        assert_eq!(crash_check(&e, usize::MAX), n + 1);
    }
}

/// Background work under stress: checkpoints every 1 us and a tiny log
/// (forced checkpoints), so crash points fall inside checkpoints.
#[test]
fn crash_consistency_with_frequent_checkpoints() {
    let e = crash_run(
        "opt-redo",
        "vector",
        2,
        80,
        &[
            ("opt-redo.checkpoint_period_ms", "0.001"),
            ("opt-redo.log_bytes_per_core", "64KB"),
            ("workload.item_bytes", "1024"),
        ],
    );
    let st = e.scheme.stats();
    let get = |k: &str| st.iter().find(|s| s.0 == k).unwrap().1;
    assert!(get("checkpoints") > 10.0, "{st:?}");
    assert!(get("held_evictions") > 0.0, "{st:?}");
    crash_check(&e, 1500);
}

/// LAD with a tiny staging partition: most lines take the undo fallback.
#[test]
fn crash_consistency_lad_overflow() {
    let e = crash_run(
        "lad",
        "vector",
        2,
        60,
        &[
            ("lad.staging_lines_per_core", "3"),
            ("workload.item_bytes", "1024"),
        ],
    );
    let st = e.scheme.stats();
    let get = |k: &str| st.iter().find(|s| s.0 == k).unwrap().1;
    assert!(get("staging_overflow_txs") > 10.0, "{st:?}");
    crash_check(&e, 1500);
}

/// OSP with a tiny TLB: pages are consolidated all the time, also while
/// their lines are being written (deferred consolidation).
#[test]
fn crash_consistency_osp_consolidation() {
    let e = crash_run(
        "osp",
        "vector",
        2,
        80,
        &[
            ("osp.l1_tlb_sets", "1"),
            ("osp.l1_tlb_ways", "1"),
            ("osp.l2_tlb_sets", "1"),
            ("osp.l2_tlb_ways", "1"),
            ("workload.item_bytes", "1024"),
        ],
    );
    let st = e.scheme.stats();
    let get = |k: &str| st.iter().find(|s| s.0 == k).unwrap().1;
    assert!(get("consolidations") > 20.0, "{st:?}");
    assert!(get("tlb_shootdowns") > 0.0, "{st:?}");
    assert!(get("deferred_consolidations") > 0.0, "{st:?}");
    crash_check(&e, 1500);
}

/// LSM with GC every 1 us in a tiny log of small segments: cleaning and
/// forced GC happen during the run.
#[test]
fn crash_consistency_lsm_gc() {
    let e = crash_run(
        "lsm",
        "vector",
        2,
        80,
        &[
            ("lsm.gc_period_ms", "0.001"),
            ("lsm.log_bytes_per_core", "1MB"),
            ("lsm.segment_bytes", "4KB"),
            ("workload.initial_items", "4"),
            ("workload.update_ratio", "1.0"),
            ("workload.item_bytes", "1024"),
        ],
    );
    let st = e.scheme.stats();
    let get = |k: &str| st.iter().find(|s| s.0 == k).unwrap().1;
    assert!(get("gc_segments_cleaned") > 5.0, "{st:?}");
    assert!(get("gc_live_lines_copied") > 0.0, "{st:?}");
    crash_check(&e, 1500);
}

#[test]
fn native_system_fails_the_crash_check() {
    let e = crash_run("ideal", "vector", 2, 60, &[("workload.item_bytes", "1024")]);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crash_check(&e, usize::MAX)));
    assert!(r.is_err(), "the oracle must reject the native system");
}

#[test]
fn registered() {
    for s in BASELINES {
        assert!(schemes::find(s).is_ok());
    }
}

/// configs/opt_baselines.toml parses and states exactly the defaults.
#[test]
fn baseline_config_matches_defaults() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/opt_baselines.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut p = durasim::Params::defaults(&schemes::all_params());
    p.apply_toml(&text, path).unwrap();
    assert!(p.overrides().is_empty(), "{:?}", p.overrides());
    for s in BASELINES {
        let info = schemes::find(s).unwrap();
        for spec in info.params {
            let (sec, key) = spec.key.split_once('.').unwrap();
            assert!(
                text.contains(&format!("[{sec}]")) && text.contains(&format!("\n{key} = ")),
                "{} missing from the config",
                spec.key
            );
        }
    }
}
