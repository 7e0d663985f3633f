//! The mutant suite: planted bugs kept as permanent
//! test-only switches of the real schemes (`<scheme>.mutant`, refused by
//! the CLI), each crash-tested in a configuration that forces the code path
//! it breaks, and each asserted to FAIL the oracle. A mutant that passes
//! means the oracle (or the test configuration) lost strength.
//!
//! Mutants that cannot fail under the modelled faults are listed in
//! [`SURVIVORS`] and asserted to pass, so the documentation stays true.

mod common;

use durasim::config::{Check, Params};
use durasim::crash::{self, CrashOptions, CrashReport};
use durasim::engine::RunSpec;

/// A crash test of `scheme` on vector with `sets` (background work forced
/// by the caller's settings), exhaustive over the run's persist points.
fn crashtest(scheme: &str, tx: u64, sets: &[(&str, &str)], opts: &CrashOptions) -> CrashReport {
    crashtest_spec(mutant_spec(scheme, "vector", 2, tx, sets), opts)
}

/// `scheme` x `workload` on `threads` threads, seed 5, 64 initial items
/// and `sets`.
fn mutant_spec(
    scheme: &str,
    workload: &str,
    threads: usize,
    tx: u64,
    sets: &[(&str, &str)],
) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    s.threads = threads;
    s.tx = tx;
    s.seed = 5;
    s.params.set_str("workload.initial_items", "64").unwrap();
    for (k, v) in sets {
        s.params
            .set_str(k, v)
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    }
    s
}

fn crashtest_spec(s: RunSpec, opts: &CrashOptions) -> CrashReport {
    let scheme = s.scheme.clone();
    crash::crashtest(s, opts, &mut |_, _| {}).unwrap_or_else(|e| panic!("{scheme}: {e}"))
}

fn opts(recovery_crashes: u64) -> CrashOptions {
    CrashOptions {
        recovery_crashes,
        ..CrashOptions::default()
    }
}

type Set = (&'static str, &'static str);

/// Small caches: lines of running transactions are evicted (steals).
const SMALL_CACHES: &[Set] = common::SMALL;

/// The small caches followed by `extra`, as one list (`M` = 6 + `N`).
const fn with_small_caches<const N: usize, const M: usize>(extra: [Set; N]) -> [Set; M] {
    assert!(M == SMALL_CACHES.len() + N);
    let mut out = [("", ""); M];
    let mut i = 0;
    while i < M {
        out[i] = if i < SMALL_CACHES.len() {
            SMALL_CACHES[i]
        } else {
            extra[i - SMALL_CACHES.len()]
        };
        i += 1;
    }
    out
}

const SMALL_CACHES_NO_ADR: &[Set] = &with_small_caches::<1, 7>([("mc.adr", "false")]);

struct Mutant {
    scheme: &'static str,
    key: &'static str,
    value: &'static str,
    /// Settings that force the broken path (background work, steals).
    sets: &'static [(&'static str, &'static str)],
    tx: u64,
    recovery_crashes: u64,
    /// Also crash with the write in flight torn.
    torn: bool,
    threads: usize,
    workload: &'static str,
}

/// A three-line staging partition: LAD spills most lines to its undo log.
const LAD_SPILL: &[(&str, &str)] = &[
    ("lad.staging_lines_per_core", "3"),
    ("workload.item_bytes", "1024"),
];
const REDO_CKPT: &[(&str, &str)] = &[("opt-redo.checkpoint_period_ms", "0.002")];
/// Opt-Redo's 64 KiB log checkpointed only when full (forced).
const REDO_FORCED_CKPT: &[(&str, &str)] = &[
    ("opt-redo.log_bytes_per_core", "65536"),
    ("opt-redo.checkpoint_period_ms", "1000"),
];
const HOOP_GC: &[(&str, &str)] = &[("hoop.gc_period_ms", "0.002")];
const LSM_HOME: &[(&str, &str)] = &[
    ("lsm.gc_mode", "home"),
    ("lsm.gc_period_ms", "0.002"),
    ("lsm.segment_bytes", "4KB"),
];

/// A one-entry AIT cache: a vector transaction's second line evicts the
/// first one's speculative entry (EHOU Fig. 5).
const EHOU_SMALL_AIT: &[(&str, &str)] = &[
    ("dimm.ait_cache_sets", "1"),
    ("dimm.ait_cache_ways", "1"),
    ("ehou.pool_lines", "4096"),
];

/// EHOU with a 4 x 2 AIT cache and small CPU caches.
const EHOU_REUSE: &[Set] = &with_small_caches::<3, 9>([
    ("dimm.ait_cache_sets", "4"),
    ("dimm.ait_cache_ways", "2"),
    ("ehou.pool_lines", "4096"),
]);

/// MorLog's transaction table on a 4 KiB log with 2 entries and small
/// caches: the log head is persisted often enough (the log behind it fills)
/// that a log released too early is overwritten while a crash can still
/// need it.
const TX_TABLE_SMALL: &[Set] = &with_small_caches::<3, 9>([
    ("morlog.log_management", "tx-table"),
    ("morlog.tx_table_entries", "2"),
    ("morlog.log_bytes", "4096"),
]);

/// REDU with its smallest log (64 KiB per core) and a rare periodic
/// application: the log fills, and TxEnd's record writes wait for a forced
/// application home, so its data records are accepted after the time
/// TxEnd began.
const REDU_FORCED_APPLY: &[(&str, &str)] = &[
    ("redu.log_bytes_per_core", "65536"),
    ("redu.apply_period_us", "1000"),
];

/// DudeTM's group commit (and its reproduce step) every 2 us.
const DUDETM_GROUPS: &[(&str, &str)] = &[("dudetm.group_commit_ms", "0.002")];
/// OSP's smallest journal (4 KiB per core) over 1,024 items: it wraps
/// every few dozen commits while pages no later commit named still have
/// their only durable bitmap in the records it overwrites.
const OSP_SMALL_JOURNAL: &[(&str, &str)] = &[
    ("osp.journal_bytes_per_core", "4096"),
    ("workload.initial_items", "1024"),
];

/// FWB's and MorLog's force-write-back pass every 2,000 cycles: the log
/// head moves often (FWB with small caches: lines of running
/// transactions are written back, so the head entry can be an undo
/// recovery needs).
const FWB_PASSES: &[(&str, &str)] = &[
    ("fwb.period_cycles", "2000"),
    ("cache.l1_size_bytes", "1KB"),
    ("cache.l1_ways", "2"),
    ("cache.l2_size_bytes", "2KB"),
    ("cache.l2_ways", "2"),
    ("cache.llc_size_bytes", "4KB"),
    ("cache.llc_ways", "2"),
];
const MORLOG_PASSES: &[(&str, &str)] = &[("morlog.period_cycles", "2000")];
/// MorLog's pass every 2,000 cycles with small caches: lines of committed
/// transactions are still being written back when the head moves.
const MORLOG_PASSES_SMALL: &[Set] = &with_small_caches::<1, 7>([("morlog.period_cycles", "2000")]);

const MUTANTS: &[Mutant] = &[
    // Opt-undo's commit point (the log head past the records) before the
    // forced lines: a crash in between leaves a committed transaction
    // half home with no record to roll back.
    Mutant {
        scheme: "opt-undo",
        key: "opt-undo.mutant",
        value: "truncate-before-force",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // Opt-redo's steal of a running transaction's line goes home (no
    // undo exists to take it back): small caches evict such lines.
    Mutant {
        scheme: "opt-redo",
        key: "opt-redo.mutant",
        value: "evict-uncommitted-home",
        sets: SMALL_CACHES,
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // DudeTM's log truncated (superblock) before the group's home writes:
    // a crash in between loses a durable group.
    Mutant {
        scheme: "dudetm",
        key: "dudetm.mutant",
        value: "truncate-before-reproduce",
        sets: DUDETM_GROUPS,
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // EHOU's commit word before the write set's last lines are out of
    // place: recovery maps lines to device lines never written.
    Mutant {
        scheme: "ehou",
        key: "ehou.mutant",
        value: "commit-before-lines",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // EHOU releases a commit's previous device lines for writes arriving
    // before its flip: another core's write reuses a line the last
    // durable commit still maps (small caches evict lines mid-transaction,
    // a small AIT cache sends entries home and back).
    Mutant {
        scheme: "ehou",
        key: "ehou.mutant",
        value: "reuse-before-flip",
        sets: EHOU_REUSE,
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // OSP's consolidation resets the page's bitmap before the committed
    // shadow lines are home (TLB evictions consolidate pages).
    Mutant {
        scheme: "osp",
        key: "osp.mutant",
        value: "consolidate-meta-first",
        sets: &[],
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // OSP's journal reused while its records hold the only durable copy
    // of a page's bitmap.
    Mutant {
        scheme: "osp",
        key: "osp.mutant",
        value: "reuse-journal-without-writeback",
        sets: OSP_SMALL_JOURNAL,
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // The same in opt-redo: with a 64 KiB log and checkpoints only when it
    // fills, the records wait for a forced checkpoint.
    Mutant {
        scheme: "opt-redo",
        key: "opt-redo.mutant",
        value: "commit-before-records",
        sets: REDO_FORCED_CKPT,
        tx: 300,
        recovery_crashes: 0,
        torn: false,
        threads: 1,
        workload: "vector",
    },
    // TxEnd's commit record issued at its start time rather than once the
    // data records persisted: in persist-time order it precedes them, and
    // TxEnd returns (acknowledges) before they persist.
    Mutant {
        scheme: "redu",
        key: "redu.mutant",
        value: "commit-before-records",
        sets: REDU_FORCED_APPLY,
        tx: 300,
        recovery_crashes: 0,
        torn: false,
        threads: 1,
        workload: "vector",
    },
    // The newest writer of a line takes its anchor: an older committed
    // writer's log is released while its data are still in the cache.
    Mutant {
        scheme: "morlog",
        key: "morlog.mutant",
        value: "anchor-newest-writer",
        sets: TX_TABLE_SMALL,
        tx: 300,
        recovery_crashes: 0,
        torn: false,
        threads: 1,
        workload: "btree",
    },
    // EHOU Fig. 5: an evicted speculative entry written to the AIT.
    Mutant {
        scheme: "ehou",
        key: "ehou.mutant",
        value: "evict-speculative-to-ait",
        sets: EHOU_SMALL_AIT,
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "opt-redo",
        key: "opt-redo.mutant",
        value: "truncate-before-checkpoint",
        sets: REDO_CKPT,
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "opt-undo",
        key: "opt-undo.mutant",
        value: "skip-record",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "opt-undo",
        key: "opt-undo.mutant",
        value: "truncate-before-rollback",
        sets: &[],
        tx: 60,
        recovery_crashes: u64::MAX,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "lsm",
        key: "lsm.mutant",
        value: "retire-log-early",
        sets: LSM_HOME,
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "lad",
        key: "lad.mutant",
        value: "release-before-commit",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // LAD's commit protocol: the controllers record the commit before the
    // flushed lines have arrived (a crash in between applies a partial
    // transaction).
    Mutant {
        scheme: "lad",
        key: "lad.mutant",
        value: "commit-before-flush-acks",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // LAD's overflow fallback: a spilled line goes home without its undo
    // record (a tiny partition makes most lines spill).
    Mutant {
        scheme: "lad",
        key: "lad.mutant",
        value: "overflow-skips-log",
        sets: LAD_SPILL,
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // LAD across two controllers: a crash between their commit updates,
    // decided per controller, applies half a transaction.
    Mutant {
        scheme: "lad",
        key: "lad.mutant",
        value: "per-controller-decision",
        sets: &[("lad.controllers", "2")],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // Opt-undo's queued-record drop done before the force: a crash among
    // the forced lines finds no records to roll them back.
    Mutant {
        scheme: "opt-undo",
        key: "opt-undo.mutant",
        value: "drop-before-force",
        sets: &[("opt-undo.drop_queued_records", "true")],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "hoop",
        key: "hoop.mutant",
        value: "commit-before-last-slice",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "hoop",
        key: "hoop.mutant",
        value: "gc-frees-before-home-writes",
        sets: HOOP_GC,
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "hoop",
        key: "hoop.mutant",
        value: "recovery-skips-newest",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "osp",
        key: "osp.mutant",
        value: "journal-before-flush",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    Mutant {
        scheme: "redu",
        key: "redu.mutant",
        value: "truncate-before-apply",
        sets: &[],
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // Opt-undo's write-backs not waiting for their undo record (no ADR):
    // the media programs the line before the record, so only the
    // persist-time order exposes it (in call order the record comes first).
    Mutant {
        scheme: "opt-undo",
        key: "opt-undo.mutant",
        value: "data-before-record",
        sets: SMALL_CACHES_NO_ADR,
        tx: 120,
        recovery_crashes: 0,
        torn: true,
        threads: 2,
        workload: "vector",
    },
    // Opt-undo's record scan not verifying the checksum: a crash between
    // the two lines of a record (its header persisted, its old data line
    // not yet) rolls the home line back to bytes it never held.
    Mutant {
        scheme: "opt-undo",
        key: "opt-undo.mutant",
        value: "scan-ignores-checksum",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // Opt-redo's scan replaying a transaction only once it reads the next
    // commit record: the last committed transaction of each log is lost.
    Mutant {
        scheme: "opt-redo",
        key: "opt-redo.mutant",
        value: "scan-skips-last-commit",
        sets: &[],
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // EHOU's overflow-log scan accepting entries of any of the core's
    // transactions: the running transaction's entries (a one-entry AIT
    // cache sends its speculative entries to the log) or a stale tail of
    // an older one map lines as if committed.
    Mutant {
        scheme: "ehou",
        key: "ehou.mutant",
        value: "log-any-tag",
        sets: EHOU_SMALL_AIT,
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // OSP's journal parse ending at the first line that starts no valid
    // record: once the small journal wraps, a new record overwrites the
    // start of an older one, and the valid records after its remains
    // (the only durable bitmaps of their pages) are lost.
    Mutant {
        scheme: "osp",
        key: "osp.mutant",
        value: "journal-scan-stops-at-invalid",
        sets: OSP_SMALL_JOURNAL,
        tx: 120,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // LAD's undo-log scan reading past the unresolved transaction's
    // records into an older transaction's (a three-line partition spills
    // most lines): a crash rolls homes back to values older than the
    // committed ones.
    Mutant {
        scheme: "lad",
        key: "lad.mutant",
        value: "scan-past-records",
        sets: LAD_SPILL,
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // FWB's log scan starting one entry after the persisted head (a pass
    // every 2,000 cycles moves the head): the entry there, an undo of an
    // uncommitted transaction or a redo of a committed one, is lost.
    Mutant {
        scheme: "fwb",
        key: "fwb.mutant",
        value: "scan-skips-head-entry",
        sets: FWB_PASSES,
        tx: 200,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "vector",
    },
    // MorLog's log scan (fwb's cursor) starting one entry after the
    // persisted head.
    Mutant {
        scheme: "morlog",
        key: "morlog.mutant",
        value: "scan-skips-head-entry",
        sets: MORLOG_PASSES,
        tx: 200,
        recovery_crashes: 0,
        torn: false,
        threads: 1,
        workload: "hashmap",
    },
    // REDU's application frees the log space it applied without persisting
    // the new head: once the log wraps, recovery starts at the old head,
    // finds a newer record there and replays none of the committed
    // transactions not yet applied.
    Mutant {
        scheme: "redu",
        key: "redu.mutant",
        value: "head-not-persisted",
        sets: REDU_FORCED_APPLY,
        tx: 300,
        recovery_crashes: 0,
        torn: false,
        threads: 1,
        workload: "vector",
    },
    // FWB's new log head persisted without waiting for the pass's
    // write-backs: a crash in between leaves a retired transaction's data
    // neither home nor in the live log.
    Mutant {
        scheme: "fwb",
        key: "fwb.mutant",
        value: "head-before-writebacks",
        sets: FWB_PASSES,
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "hashmap",
    },
    // The same in MorLog (the head write it shares with fwb).
    Mutant {
        scheme: "morlog",
        key: "morlog.mutant",
        value: "head-before-writebacks",
        sets: MORLOG_PASSES_SMALL,
        tx: 60,
        recovery_crashes: 0,
        torn: false,
        threads: 2,
        workload: "hashmap",
    },
    // DudeTM's recovery replaying a group without checking its checksum.
    Mutant {
        scheme: "dudetm",
        key: "dudetm.mutant",
        value: "ignore-checksum",
        sets: DUDETM_GROUPS,
        tx: 120,
        recovery_crashes: 0,
        torn: true,
        threads: 2,
        workload: "vector",
    },
    // Only torn writes expose it: a line holding the end of a data entry
    // and the commit record, persisted in part, leaves a stale data word
    // under a valid commit record.
    Mutant {
        scheme: "lsm",
        key: "lsm.mutant",
        value: "ignore-checksum",
        sets: LSM_HOME,
        tx: 400,
        recovery_crashes: 0,
        torn: true,
        threads: 2,
        workload: "vector",
    },
];

/// Planted bugs the modelled faults cannot expose, asserted to pass (and
/// documented in docs/model/crash.md). With ADR, opt-undo's write-backs and
/// forced lines not waiting for their undo record: the record is accepted
/// at the store, before any write-back of its line is issued, so the wait
/// only changes timing.
const SURVIVORS: &[Mutant] = &[Mutant {
    scheme: "opt-undo",
    key: "opt-undo.mutant",
    value: "data-before-record",
    sets: SMALL_CACHES,
    tx: 120,
    recovery_crashes: 0,
    torn: true,
    threads: 2,
    workload: "vector",
}];

/// Mutant switches whose values are crash-tested in their scheme's own
/// test file (configurations specific to the scheme); every other declared
/// value not in [`MUTANTS`] or [`SURVIVORS`] runs in [`DEFAULT_MUTANT`].
const TESTED_ELSEWHERE: &[(&str, &str)] = &[
    ("fwb.mutant", "tests/fwb.rs"),
    ("morlog.mutant", "tests/morlog.rs"),
    ("morlog-dp.mutant", "tests/morlog.rs"),
    ("ckpt-logging.mutant", "tests/ckpt.rs"),
    ("ckpt-cow.mutant", "tests/ckpt.rs"),
    ("dpc.mutant", "tests/ckpt.rs"),
    ("thynvm.mutant", "tests/thynvm.rs"),
    ("overlay.mutant", "tests/thynvm.rs"),
    // Load-path bug, caught by run.check_reads (the table is volatile).
    ("hoop.read.mutant", "src/schemes/out_of_place/hoop/tests.rs"),
];

/// The configuration of a declared mutant listed nowhere here: small
/// caches (steals), exhaustive, so that a new scheme's planted bug is
/// tested as soon as its `<scheme>.mutant` parameter declares it.
const DEFAULT_MUTANT: Mutant = Mutant {
    scheme: "",
    key: "",
    value: "",
    sets: SMALL_CACHES,
    tx: 60,
    recovery_crashes: 0,
    torn: false,
    threads: 2,
    workload: "vector",
};

/// Every value but `none` of every registered scheme's `<scheme>.mutant`
/// parameter, with its scheme.
fn declared_mutants() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut v = Vec::new();
    for info in durasim::schemes::REGISTRY {
        for spec in info.params.iter().filter(|s| s.key.ends_with(".mutant")) {
            if let Check::OneOf(values) = spec.check {
                for value in values.iter().filter(|&&x| x != "none") {
                    v.push((info.name, spec.key, *value));
                }
            }
        }
    }
    v
}

fn run_mutant(m: &Mutant, torn: bool) -> CrashReport {
    let (s, o) = mutant_run(m, torn);
    crashtest_spec(s, &o)
}

/// The spec and options of mutant `m`'s crash test.
fn mutant_run(m: &Mutant, torn: bool) -> (RunSpec, CrashOptions) {
    let mut sets = m.sets.to_vec();
    sets.push((m.key, m.value));
    let s = mutant_spec(m.scheme, m.workload, m.threads, m.tx, &sets);
    let o = CrashOptions {
        torn,
        ..opts(m.recovery_crashes)
    };
    (s, o)
}

#[test]
fn every_mutant_fails_the_oracle() {
    let mut passed = Vec::new();
    for m in MUTANTS {
        let r = run_mutant(m, m.torn);
        eprintln!(
            "{} {}={}: {} violations of {} points ({} in background work)",
            m.scheme,
            m.key,
            m.value,
            r.violations,
            r.crash_points_tested,
            r.background_points_tested
        );
        if r.violations == 0 {
            passed.push(format!("{}={}", m.key, m.value));
        } else {
            // The failure comes with the line that replays it, and the
            // replayed point fails again.
            let v = r.first_violation.as_ref().unwrap();
            eprintln!("  replay: {}", v.replay);
            assert!(
                v.replay.contains("--crash-at") && v.replay.contains(m.key),
                "{}",
                v.replay
            );
            let (s, o) = mutant_run(m, m.torn);
            common::assert_replay_fails(s, &o, &r);
        }
    }
    assert!(passed.is_empty(), "mutants not caught: {passed:?}");
}

/// The harness needs no entry for a new scheme's mutants: each declared
/// value is listed above, tested in its scheme's file, or run here in
/// [`DEFAULT_MUTANT`], where it must fail with a replay line.
#[test]
fn every_declared_mutant_is_tested() {
    let declared = declared_mutants();
    for m in MUTANTS.iter().chain(SURVIVORS) {
        assert!(
            declared.contains(&(m.scheme, m.key, m.value)),
            "{}={} is not declared by {}",
            m.key,
            m.value,
            m.scheme
        );
    }
    let listed = |key: &str, value: &str| {
        MUTANTS
            .iter()
            .chain(SURVIVORS)
            .any(|m| m.key == key && m.value == value)
            || TESTED_ELSEWHERE.iter().any(|e| e.0 == key)
    };
    for (scheme, key, value) in declared {
        if listed(key, value) {
            continue;
        }
        let m = Mutant {
            scheme,
            key,
            value,
            ..DEFAULT_MUTANT
        };
        let r = run_mutant(&m, m.torn);
        let v = r
            .first_violation
            .clone()
            .unwrap_or_else(|| panic!("{key}={value} passed the oracle"));
        eprintln!(
            "{scheme} {key}={value}: {} violations\n  replay: {}",
            r.violations, v.replay
        );
        assert!(
            v.replay.contains("--crash-at") && v.replay.contains(&format!("{key}={value}")),
            "{}",
            v.replay
        );
        let (s, o) = mutant_run(&m, m.torn);
        common::assert_replay_fails(s, &o, &r);
        // And its configuration passes without it.
        let r = crashtest_spec(
            mutant_spec(scheme, m.workload, m.threads, m.tx, m.sets),
            &opts(m.recovery_crashes),
        );
        assert_eq!(
            r.violations,
            0,
            "{scheme} {:?}",
            r.first_violation.map(|v| v.message)
        );
    }
}

#[test]
fn the_same_configurations_pass_without_the_mutant() {
    // The failures above are the mutants', not the configurations'.
    for m in MUTANTS.iter().chain(SURVIVORS) {
        let r = crashtest_spec(
            mutant_spec(m.scheme, m.workload, m.threads, m.tx, m.sets),
            &opts(m.recovery_crashes.min(4)),
        );
        assert_eq!(
            r.violations,
            0,
            "{} with {:?}: {:?}",
            m.scheme,
            m.sets,
            r.first_violation.map(|v| v.message)
        );
    }
}

#[test]
fn documented_survivors_pass_even_torn() {
    for m in SURVIVORS {
        let r = run_mutant(m, true);
        assert_eq!(
            r.violations,
            0,
            "{}={} now fails: move it to MUTANTS ({:?})",
            m.key,
            m.value,
            r.first_violation.map(|v| v.message)
        );
    }
}

#[test]
fn the_cli_refuses_mutants() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args([
            "run",
            "--scheme",
            "opt-redo",
            "--workload",
            "vector",
            "--tx",
            "10",
            "--set",
            "opt-redo.mutant=truncate-before-checkpoint",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("opt-redo.mutant") && err.contains("test-only"),
        "{err}"
    );
}

/// Background-work coverage: every scheme's background work (checkpoint, GC,
/// cleaning, migration, consolidation) happens many times inside a crash
/// test of these configurations, and crash points fall inside each kind.
/// A scheme whose crash test has background work with no crash point in
/// it — or a listed kind that never ran — fails.
#[test]
fn crash_points_fall_inside_every_kind_of_background_work() {
    let lsm_compact: &[(&str, &str)] = &[
        ("lsm.gc_period_ms", "0.002"),
        ("lsm.segment_bytes", "4KB"),
        ("workload.update_ratio", "0.9"),
        ("lsm.gc_victim_utilization", "0.9"),
    ];
    // (scheme, settings, kinds of background work that must run)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: &[Case] = &[
        ("opt-redo", REDO_CKPT, &["checkpoint"]),
        ("lsm", LSM_HOME, &["gc-home"]),
        ("lsm", lsm_compact, &["gc-compact", "gc-home"]),
        ("hoop", &[("hoop.gc_period_ms", "0.002")], &["gc"]),
        ("osp", &[], &["consolidation"]),
        (
            "fwb",
            &[("fwb.period_cycles", "2000")],
            &["force-write-back"],
        ),
        ("redu", &[], &["apply"]),
        (
            "morlog",
            &[("morlog.period_cycles", "2000")],
            &["force-write-back"],
        ),
        (
            "morlog-dp",
            &[("morlog-dp.period_cycles", "2000")],
            &["force-write-back"],
        ),
        // No background work: everything is on the commit path.
        ("opt-undo", &[], &[]),
        ("lad", &[], &[]),
        ("pmdk-undo", &[], &[]),
        // Group commit and reproduce run in `tick`.
        (
            "dudetm",
            &[("dudetm.group_commit_ms", "0.002")],
            &["group-commit"],
        ),
        // Checkpoints are checked by the epoch oracle (crash/epochs.rs).
        ("dpc", &[], &[]),
        // Lazy AIT flushes and overflow-log application happen on the
        // commit and eviction paths, not in background work.
        ("ehou", EHOU_SMALL_AIT, &[]),
        // Checkpointing baselines: also checked by the epoch oracle.
        ("ckpt-logging", &[], &[]),
        ("ckpt-cow", &[], &[]),
        ("thynvm", &[], &[]),
        ("page-overlay", &[], &[]),
    ];
    // A scheme without background work needs no entry: it is crash-tested
    // with its defaults. One with background work must name a
    // configuration that forces it.
    let mut cases = cases.to_vec();
    for info in durasim::schemes::REGISTRY {
        if info.durability == durasim::schemes::Durability::None
            || cases.iter().any(|c| c.0 == info.name)
        {
            continue;
        }
        let e = durasim::Engine::new(RunSpec::new(info.name, "vector").unwrap()).unwrap();
        let s = &e.scheme;
        assert!(
            s.next_event_at().is_none()
                && s.force_write_back_cycles().is_none()
                && s.epoch_cycles().is_none(),
            "{}: background work but no background-coverage configuration",
            info.name
        );
        cases.push((info.name, &[], &[]));
    }
    for (scheme, sets, kinds) in &cases {
        let r = crashtest(scheme, 200, sets, &opts(1));
        assert_eq!(r.violations, 0, "{scheme} {sets:?}");
        if r.background_persist_events > 0 {
            assert!(r.background_points_tested > 0, "{scheme} {sets:?}");
        }
        for kind in *kinds {
            let (_, events, points) = r
                .background_by_kind
                .iter()
                .find(|k| k.0 == *kind)
                .copied()
                .unwrap_or_else(|| {
                    panic!(
                        "{scheme} {sets:?}: no {kind} ran: {:?}",
                        r.background_by_kind
                    )
                });
            // Many times inside the run, and crashed inside.
            assert!(
                events >= 20 && points >= 20,
                "{scheme} {kind}: {events} events, {points} points"
            );
        }
        for (kind, _, points) in &r.background_by_kind {
            assert!(
                *points > 0,
                "{scheme} {sets:?}: background {kind} has no crash point"
            );
        }
    }
}

/// The hidden mutant switches are not listed to users: neither by `durasim
/// list params` nor by the Python bindings' `params()` (both filter with
/// `schemes::is_public_param`), while every scheme with planted bugs has one.
#[test]
fn mutant_keys_are_hidden_from_parameter_listings() {
    let p = Params::defaults(&durasim::schemes::all_params());
    let mutants: Vec<&str> = p
        .specs()
        .map(|s| s.key)
        .filter(|k| !durasim::schemes::is_public_param(k))
        .collect();
    for m in MUTANTS.iter().chain(SURVIVORS) {
        assert!(mutants.contains(&m.key), "{} is listed", m.key);
    }
    assert!(mutants.iter().all(|k| k.ends_with(".mutant")));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args(["list", "params"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("redu.apply_period_us"), "{text}");
    assert!(!text.contains(".mutant"), "{text}");
}
