//! Software schemes (pmdk-undo, dudetm): end-of-run equivalence on every
//! workload, exhaustive crash verification under stress (small caches, torn
//! writes, frequent group commits), the mutants that must fail, and the core
//! model's Flush/Fence timing.

use durasim::crash::{self, CrashOptions, CrashReport, PointSel};
use durasim::engine::Engine;
use durasim::schemes::{self, software::mutants, Durability, SchemeInfo};
use durasim::workloads::{self, Op};
use durasim::{Params, RunSpec};

const SOFTWARE: &[&str] = &["pmdk-undo", "dudetm"];

fn spec(scheme: &str, workload: &str, threads: usize, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    // Every scheme's keys, so that a mutant's run accepts them too.
    s.params = Params::defaults(&schemes::all_params());
    s.threads = threads;
    s.tx = tx;
    s.seed = 5;
    s.params.set_str("run.check_reads", "true").unwrap();
    s.params.set_str("workload.initial_items", "64").unwrap();
    if workload == "tpcc" {
        s.params.set_str("workload.tpcc_items", "2000").unwrap();
        s.params
            .set_str("workload.tpcc_customers_per_district", "300")
            .unwrap();
    }
    // Small caches: mid-transaction evictions of data and log lines.
    for (k, v) in [
        ("cache.llc_size_bytes", "8KB"),
        ("cache.llc_ways", "2"),
        ("cache.l2_size_bytes", "4KB"),
        ("cache.l2_ways", "2"),
        ("cache.l1_size_bytes", "1KB"),
        ("cache.l1_ways", "2"),
        // DudeTM: a group commit every 2 us, so crash points fall inside
        // the background persist and reproduce steps, not only at the end.
        ("dudetm.group_commit_ms", "0.002"),
    ] {
        s.params.set_str(k, v).unwrap();
    }
    for (k, v) in sets {
        s.params.set_str(k, v).unwrap();
    }
    s
}

#[test]
fn registered_with_their_durability() {
    assert_eq!(
        schemes::find("pmdk-undo").unwrap().durability,
        Durability::AtCommit
    );
    assert_eq!(
        schemes::find("dudetm").unwrap().durability,
        Durability::Delayed
    );
}

#[test]
fn end_of_run_equivalence_every_workload() {
    for scheme in SOFTWARE {
        for wl in workloads::names() {
            let mut e = Engine::new(spec(scheme, wl, 4, 400, &[])).unwrap();
            e.run(&mut |_| {})
                .unwrap_or_else(|err| panic!("{scheme}/{wl}: {err}"));
            e.finish();
            e.check_equivalence()
                .unwrap_or_else(|m| panic!("{scheme}/{wl}: {m}"));
            e.check_invariants(e.ctx.nvm.media())
                .unwrap_or_else(|m| panic!("{scheme}/{wl}: {m}"));
            assert_eq!(e.metrics().committed_tx, 400);
        }
    }
}

/// TinySTM's clock and orecs are one set of lines in the real system; the
/// cache model has no coherence (a line lives in one core's private
/// caches), so each core must use its own alias of them. Shared aliases
/// left another core's private copy linked to an LLC slot reused by a
/// region header after the owner's eviction (hashmap, 2 threads, small
/// caches: the clock load returned the header's bytes).
#[test]
fn dudetm_stm_metadata_reads_its_own_values_with_two_threads() {
    for threads in [2, 4] {
        let mut e = Engine::new(spec("dudetm", "hashmap", threads, 200, &[])).unwrap();
        e.run(&mut |_| {})
            .unwrap_or_else(|err| panic!("{threads} threads: {err}"));
        e.finish();
        e.check_equivalence()
            .unwrap_or_else(|m| panic!("{threads} threads: {m}"));
    }
}

fn crash_run(info: &'static SchemeInfo, workload: &str, tx: u64) -> CrashReport {
    // A mutant's name is only a label: build the spec under a shipped name.
    let shipped = if info.durability == Durability::Delayed {
        "dudetm"
    } else {
        "pmdk-undo"
    };
    let mut s = spec(shipped, workload, 2, tx, &[]);
    s.record_history = true;
    let opts = CrashOptions {
        points: PointSel::All,
        torn: true,
        recovery_crashes: 2,
        ..CrashOptions::default()
    };
    crash::crashtest_with(info, s, &opts, &mut |_, _| {}).unwrap()
}

fn small_tx(workload: &str) -> u64 {
    if workload == "tpcc" {
        6
    } else {
        30
    }
}

/// Every persist point, clean and torn, crashes inside recovery: both
/// schemes on every (transactional) workload.
#[test]
fn crash_consistency_every_workload_small_caches_torn() {
    for name in SOFTWARE {
        let info = schemes::find(name).unwrap();
        for wl in workloads::names() {
            let r = crash_run(info, wl, small_tx(wl));
            assert_eq!(
                r.violations,
                0,
                "{name} x {wl}: {}",
                r.first_violation
                    .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                    .unwrap_or_default()
            );
            assert!(r.crash_points_tested > r.persist_events && r.torn_points_tested > 0);
            if *name == "dudetm" {
                // Group commits ran during the run, in the background.
                assert!(r.background_persist_events > 0, "{wl}");
            }
        }
    }
}

/// The broken variants must fail the oracle.
#[test]
fn mutants_fail_crash_verification() {
    for (info, wl) in [
        (&mutants::PMDK_LOG_NOT_FLUSHED, "rbtree"),
        (&mutants::PMDK_INVALIDATE_BEFORE_FLUSH, "rbtree"),
        (&mutants::PMDK_SCAN_PAST_ENTRIES, "rbtree"),
        (&mutants::DUDETM_ACK_BEFORE_PERSIST, "vector"),
    ] {
        let r = crash_run(info, wl, 30);
        assert!(r.violations > 0, "{} x {wl} passed", info.name);
    }
}

fn stats(e: &Engine, k: &str) -> f64 {
    e.scheme
        .stats()
        .iter()
        .find(|s| s.0 == k)
        .unwrap_or_else(|| panic!("no stat {k}"))
        .1
}

/// The library's work is in the op stream: pmdk-undo flushes and fences
/// on the cores (the core model counts them), DudeTM no flush (its fences
/// are the STM's atomics) and group commits in the background.
#[test]
fn statistics_reflect_the_instrumented_work() {
    let mut e = Engine::new(spec("pmdk-undo", "hashmap", 2, 200, &[])).unwrap();
    e.run(&mut |_| {}).unwrap();
    let snaps = stats(&e, "snapshots");
    assert!(snaps > 0.0);
    // Two lines per entry, one fence per entry, plus the commit's.
    assert!(stats(&e, "flushes") >= 2.0 * snaps);
    assert!(stats(&e, "fences") >= snaps + stats(&e, "log_invalidations"));
    assert!(e.persist_ops.flushes > 0 && e.persist_ops.fences > 0);
    assert!(e.persist_ops.fence_stall_cycles > 0);

    let mut e = Engine::new(spec("dudetm", "hashmap", 2, 200, &[])).unwrap();
    e.run(&mut |_| {}).unwrap();
    // No flush; the only fences are TinySTM's locked RMWs (orec CAS, the
    // clock's fetch-and-increment).
    assert_eq!(e.persist_ops.flushes, 0);
    assert!(stats(&e, "library_atomics") > 0.0);
    assert!(e.persist_ops.fences > 0);
    assert!(stats(&e, "group_commits") >= 2.0);
    assert!(stats(&e, "replay_bytes") > 0.0);
    assert!(e.metrics().dram_bytes_read + e.metrics().dram_bytes_written > 0);
}

/// In-order core, ideal scheme, `n` stores to distinct fresh lines, their
/// clwbs, a fence and 1000 one-cycle instructions: (cycles, acceptance
/// times of the flushed write-backs).
fn flush_fence_run(n: u64, model: &str, mshrs: &str, wq: &str) -> (u64, Vec<u64>) {
    let mut s = RunSpec::new("ideal", "vector").unwrap();
    s.threads = 1;
    s.tx = 1;
    s.record_history = true;
    for (k, v) in [
        ("cpu.model", model),
        ("cpu.mshrs", mshrs),
        ("mc.write_queue_entries", wq),
        ("mc.write_drain_high", wq),
        ("mc.write_drain_low", "1"),
    ] {
        s.params.set_str(k, v).unwrap();
    }
    let mut e = Engine::new(s).unwrap();
    let base = e.ctx.layout.thread_base(0) + (1 << 20);
    let mut ops = Vec::new();
    for i in 0..n {
        ops.push(Op::Store {
            addr: base + i * 4096,
            value: i + 1,
        });
    }
    for i in 0..n {
        ops.push(Op::Flush {
            addr: base + i * 4096,
        });
    }
    ops.push(Op::Fence);
    ops.push(Op::Compute { n: 1000 });
    let cycles = e.run_ops(0, &ops).unwrap();
    let at = e
        .ctx
        .nvm
        .persist_log
        .events()
        .iter()
        .map(|ev| ev.at)
        .collect();
    (cycles, at)
}

/// A fence after N flushes waits exactly for the N-th write-back to be
/// accepted by the controller (the persistence domain, ADR), and not
/// longer; with a small write queue the N-th acceptance moves out with N.
#[test]
fn fence_waits_for_the_last_flush_to_be_accepted() {
    let mut last = 0;
    for n in [4, 16, 32] {
        let (cycles, at) = flush_fence_run(n, "in-order", "10", "4");
        assert_eq!(at.len() as u64, n, "one write-back per flushed line");
        let accepted = *at.iter().max().unwrap();
        assert_eq!(cycles - 1000, accepted, "n = {n}");
        assert!(accepted > last, "n = {n}: the fence moves out with N");
        last = accepted;
    }
    // The out-of-order core: the fence also holds the instructions after it.
    let (cycles, at) = flush_fence_run(16, "ooo", "10", "4");
    assert!(cycles >= *at.iter().max().unwrap() + 1000 / 4);
}

/// A clwb holds a fill buffer until its write-back is accepted: with one
/// MSHR the write-backs are accepted one after the other, each at least
/// the LLC-to-controller path later than the previous.
#[test]
fn a_flush_occupies_its_path_until_accepted() {
    let (_, at) = flush_fence_run(8, "ooo", "1", "64");
    let mut sorted = at.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, at, "accepted in program order");
    for w in at.windows(2) {
        assert!(w[1] > w[0], "{at:?}");
    }
    let (_, free) = flush_fence_run(8, "ooo", "10", "64");
    assert!(free.iter().max() < at.iter().max(), "{free:?} vs {at:?}");
}
