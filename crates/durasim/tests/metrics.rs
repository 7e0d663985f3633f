//! The metrics named for a paper's definition and the workload
//! characterisation (docs/model/metrics.md): each checked against a
//! hand-counted op stream or against the counter it is defined from.

mod common;

use durasim::config::Params;
use durasim::engine::{self, Engine, RunSpec};
use durasim::workloads::Op;

/// An idle machine (ideal scheme: no commit work), one thread.
fn machine(sets: &[(&str, &str)]) -> Engine {
    let mut spec = RunSpec::new("ideal", "vector").unwrap();
    spec.threads = 1;
    spec.tx = 1;
    spec.params.set_str("workload.initial_items", "1").unwrap();
    for (k, v) in sets {
        spec.params.set_str(k, v).unwrap();
    }
    Engine::new(spec).unwrap()
}

/// Line `i` of a part of core 0's region the setup never touched (zero,
/// uncached), one row stride apart so no two share a set's ways early.
fn cold_line(e: &Engine, i: u64) -> u64 {
    e.ctx.layout.thread_base(0) + (64 << 20) + i * (64 * 1024 + 64)
}

fn store(addr: u64, value: u64) -> Op {
    Op::Store { addr, value }
}

/// Eight cold lines loaded twice: 8 LLC misses over 16 memory ops. The
/// LLC saw only the first 8 (the rest hit in L1), so the miss ratio per
/// LLC access is 1 while the misses per memory op are 1/2.
#[test]
fn llc_misses_per_mem_op_counts_every_load_and_store() {
    let mut e = machine(&[]);
    let lines: Vec<u64> = (0..8).map(|i| cold_line(&e, i)).collect();
    let ops: Vec<Op> = lines
        .iter()
        .chain(&lines)
        .map(|&addr| Op::Load {
            addr,
            value: 0,
            dep: 0,
        })
        .collect();
    e.run_ops(0, &ops).unwrap();
    let m = e.metrics();
    assert_eq!((m.loads, m.stores, m.llc_misses), (16, 0, 8));
    assert_eq!(m.llc_miss_ratio, 1.0);
    assert_eq!(m.llc_misses_per_mem_op, 0.5);
}

/// On a whole run the metric is its definition, and never above the
/// per-access ratio (an LLC access is an L1 and L2 miss of a memory op).
#[test]
fn llc_misses_per_mem_op_on_a_run_is_misses_over_loads_and_stores() {
    for w in ["btree", "hashmap"] {
        let e = engine::run(common::spec("ideal", w, 300, &[]), &mut |_| {}).unwrap();
        let m = e.metrics();
        assert!(m.llc_misses > 0, "{w}");
        assert_eq!(
            m.llc_misses_per_mem_op,
            m.llc_misses as f64 / (m.loads + m.stores) as f64,
            "{w}"
        );
        assert!(m.llc_misses_per_mem_op <= m.llc_miss_ratio, "{w}");
        assert!(m.llc_write_backs > 0, "{w}");
        assert_eq!(
            m.llc_misses_per_write_back,
            m.llc_misses as f64 / m.llc_write_backs as f64,
            "{w}"
        );
        // `ideal` writes each LLC write-back home as one request and
        // writes nothing else: no overhead.
        assert_eq!(
            m.nvm_write_requests_by_purpose["writeback"], m.llc_write_backs,
            "{w}"
        );
        assert_eq!((m.pm_write_overhead_ops, m.pm_write_overhead_bytes), (0, 0));
    }
}

/// Stores to five distinct words: nothing repeated. The same stream with
/// two words stored again: 2 of 7 stores repeated. Words per written line
/// and the silent stores are counted by hand.
#[test]
fn repeated_store_share_is_zero_without_repeats_and_counts_them() {
    let mut e = machine(&[]);
    let (a, b) = (cold_line(&e, 0), cold_line(&e, 1));
    let once = [
        store(a, 1),
        store(a + 8, 2),
        store(a + 16, 3),
        store(b, 4),
        store(b + 56, 5),
    ];
    e.run_ops(0, &once).unwrap();
    let m = e.metrics();
    assert_eq!(
        (m.program_stores, m.written_words, m.written_lines),
        (5, 5, 2)
    );
    assert_eq!(m.repeated_store_share, 0.0);
    assert_eq!(m.words_per_written_line, 2.5);
    assert_eq!(m.silent_store_share, 0.0);

    let mut e = machine(&[]);
    let (a, b) = (cold_line(&e, 0), cold_line(&e, 1));
    let twice = [
        store(a, 1),
        store(a + 8, 2),
        store(b, 4),
        store(a, 7),
        store(b + 56, 5),
        store(b, 4),      // the same value again: repeated and silent
        store(a + 16, 0), // zero over zero: silent, not repeated
    ];
    e.run_ops(0, &twice).unwrap();
    let m = e.metrics();
    assert_eq!(
        (m.program_stores, m.written_words, m.written_lines),
        (7, 5, 2)
    );
    assert_eq!(m.repeated_store_share, 2.0 / 7.0);
    assert_eq!(m.silent_store_share, 2.0 / 7.0);
    assert_eq!(m.words_per_written_line, 2.5);
}

/// Each transaction is characterised on its own: a word stored once in
/// each of two transactions is not a repeat.
#[test]
fn repeats_are_within_one_transaction() {
    let mut e = machine(&[]);
    let a = cold_line(&e, 0);
    e.run_ops(0, &[store(a, 1)]).unwrap();
    e.run_ops(0, &[store(a, 2)]).unwrap();
    let m = e.metrics();
    assert_eq!(
        (m.program_stores, m.written_words, m.written_lines),
        (2, 2, 2)
    );
    assert_eq!(m.repeated_store_share, 0.0);
}

/// `run.characterise=false` records no write sets: the characterisation
/// reads 0 and every other metric of the same ops is unchanged.
#[test]
fn characterisation_off_records_nothing_else_unchanged() {
    let run = |on: &str| {
        let mut e = machine(&[("run.characterise", on)]);
        let a = cold_line(&e, 0);
        e.run_ops(0, &[store(a, 1), store(a + 8, 2), store(a, 4)])
            .unwrap();
        e.metrics()
    };
    let (on, off) = (run("true"), run("false"));
    assert_eq!((on.program_stores, on.written_words), (3, 2));
    assert_eq!(
        (off.program_stores, off.written_words, off.written_lines),
        (0, 0, 0)
    );
    assert_eq!(off.written_line_compression_ratio_fpc, 0.0);
    assert_eq!((off.stores, off.loads), (on.stores, on.loads));
    assert_eq!(off.window_cycles, on.window_cycles);
    assert_eq!(off.nvm_bytes_written, on.nvm_bytes_written);
}

/// One zero line gets two small values: FPC codes it in 20 bits (two
/// 4-bit words at 3 + 4 bits, one run of six zero words at 6), DLDC in
/// 8 x 8 flag bits plus two one-byte dirty words (matched bit, tag and a
/// 4-bit payload each: 8 bits). Ratios are 512 over those.
#[test]
fn written_line_compression_ratios_follow_fpc_and_dldc() {
    let mut e = machine(&[]);
    let a = cold_line(&e, 0);
    e.run_ops(0, &[store(a, 1), store(a + 8, 2), store(a, 4)])
        .unwrap();
    let m = e.metrics();
    assert_eq!(m.written_line_compression_ratio_fpc, 512.0 / 20.0);
    // 4 and 2 fit SE4_PER_BYTE (4-bit payload), not SE2_PER_BYTE
    // (-2..=1); the store of 1 was overwritten in the transaction.
    let dldc = 64 + 2 * (1 + 3 + 4);
    assert_eq!(m.written_line_compression_ratio_dldc, 512.0 / dldc as f64);
}

/// On a run, a hardware scheme's program stores are all its stores, and
/// the per-transaction counts are consistent.
#[test]
fn characterisation_of_a_run_is_consistent() {
    let e = engine::run(common::spec("ideal", "btree", 300, &[]), &mut |_| {}).unwrap();
    let m = e.metrics();
    assert_eq!(m.program_stores, m.stores);
    assert_eq!(
        m.program_stores_per_tx,
        m.program_stores as f64 / m.measured_tx as f64
    );
    assert!(m.written_lines > 0 && m.written_words >= m.written_lines);
    assert!((1.0..=8.0).contains(&m.words_per_written_line));
    assert!((0.0..1.0).contains(&m.repeated_store_share));
    assert!(m.written_line_compression_ratio_fpc >= 1.0);
    assert!(m.written_line_compression_ratio_dldc >= 1.0);
}

/// The EHOU preset with a tiny AIT cache (entries are flushed often).
fn ehou_spec() -> RunSpec {
    let preset = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/ehou.toml");
    let mut s = RunSpec::new("ehou", "hashmap").unwrap();
    s.params = Params::defaults(&durasim::schemes::all_params());
    s.params
        .apply_toml(&std::fs::read_to_string(preset).unwrap(), preset)
        .unwrap();
    for (k, v) in [
        ("dimm.ait_cache_sets", "4"),
        ("dimm.ait_cache_ways", "2"),
        ("ehou.pool_lines", "4096"),
        ("workload.initial_items", "64"),
    ] {
        s.params.set_str(k, v).unwrap();
    }
    s.threads = 2;
    s.tx = 300;
    s.seed = 3;
    s
}

/// EHOU counts its overhead writes itself: over the window (before the
/// end-of-run work) the controller's count of non-write-back requests is
/// exactly that count, in operations; its 8 B AIT entries make the bytes
/// far fewer than 64 B per operation.
#[test]
fn pm_write_overhead_ops_counts_operations_not_bytes() {
    let mut e = Engine::new(ehou_spec()).unwrap();
    e.run(&mut |_| {}).unwrap();
    let stat = |k: &str| e.report_json()["scheme_stats"][k].as_f64().unwrap();
    let m = e.metrics();
    assert!(m.pm_write_overhead_ops > 0);
    assert_eq!(
        m.pm_write_overhead_ops as f64,
        stat("pm_write_overhead_writes")
    );
    assert_eq!(
        m.pm_write_overhead_bytes as f64,
        stat("pm_write_overhead_bytes")
    );
    assert!(m.pm_write_overhead_bytes < 64 * m.pm_write_overhead_ops);
    // The device's bursts are 64 B whatever the request.
    assert_ne!(m.pm_write_overhead_bytes, m.nvm_bytes_written);
}

/// MorLog's log bits under their explicit name are the data-aware media's
/// count of log code-word bits.
#[test]
fn log_bits_written_no_expansion_is_the_media_count() {
    let mut s = common::spec("morlog", "btree", 200, &[("nvm.encoding", "slde")]);
    s.threads = 1;
    let e = engine::run(s, &mut |_| {}).unwrap();
    let doc = e.report_json();
    let bits = doc["metrics"]["log_bits_written_no_expansion"]
        .as_u64()
        .unwrap();
    assert!(bits > 0);
    assert_eq!(bits, doc["nvm_media"]["log_bits_written"].as_u64().unwrap());
    // Without the data-aware media there is no count.
    let e = engine::run(common::spec("ideal", "btree", 50, &[]), &mut |_| {}).unwrap();
    assert_eq!(e.metrics().log_bits_written_no_expansion, 0);
}

/// HOOP's parallel-read share under both definitions.
#[test]
fn parallel_reads_per_llc_miss_and_per_mem_op() {
    let e = engine::run(common::spec("hoop", "vector", 400, &[]), &mut |_| {}).unwrap();
    let doc = e.report_json();
    let st = &doc["scheme_stats"];
    let f = |k: &str| st[k].as_f64().unwrap_or_else(|| panic!("no {k}"));
    assert!(f("parallel_read_misses") > 0.0);
    assert_eq!(
        f("parallel_reads_per_llc_miss"),
        f("parallel_read_fraction")
    );
    let m = e.metrics();
    assert_eq!(
        f("parallel_reads_per_mem_op"),
        f("parallel_read_misses") / (m.loads + m.stores) as f64
    );
    assert!(f("parallel_reads_per_mem_op") < f("parallel_reads_per_llc_miss"));
    // Schemes without parallel reads get neither key.
    let e = engine::run(common::spec("ideal", "vector", 50, &[]), &mut |_| {}).unwrap();
    assert!(e.report_json()["scheme_stats"]
        .get("parallel_reads_per_mem_op")
        .is_none());
}
