//! The core model: memory-level parallelism of the out-of-order core
//! (pointer chase vs stream, the MSHR limit), IPC of compute, a ROB-full
//! stall, load-dependency inference in `TxCtx`, and the steady-state
//! window's metrics.

use durasim::engine::{self, Engine, RunSpec};
use durasim::mem::SparseImage;
use durasim::workloads::{Op, TxCtx};

/// An idle machine (ideal scheme: no commit work) with `sets` applied.
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

/// Cold lines of core 0's region, each in a different NVM row (one row
/// stride apart plus one line, so the banks rotate): every load is a miss
/// with the same, row-miss latency.
fn cold_line(e: &Engine, i: u64) -> u64 {
    e.ctx.layout.thread_base(0) + (64 << 20) + i * (64 * 1024 + 64)
}

fn loads(e: &Engine, n: u64, dependent: bool) -> Vec<Op> {
    (0..n)
        .map(|i| Op::Load {
            addr: cold_line(e, i),
            value: 0,
            dep: u8::from(dependent && i > 0),
        })
        .collect()
}

/// Latency of one cold miss on an idle machine.
fn miss_latency(sets: &[(&str, &str)]) -> f64 {
    let mut e = machine(sets);
    let ops = loads(&e, 1, false);
    e.run_ops(0, &ops).unwrap() as f64
}

fn cycles(sets: &[(&str, &str)], ops: impl Fn(&Engine) -> Vec<Op>) -> f64 {
    let mut e = machine(sets);
    let ops = ops(&e);
    e.run_ops(0, &ops).unwrap() as f64
}

const N: u64 = 60;

#[test]
fn pointer_chase_serialises_one_miss_at_a_time() {
    let lat = miss_latency(&[]);
    let chase = cycles(&[], |e| loads(e, N, true));
    let per_miss = chase / N as f64;
    assert!(
        (per_miss - lat).abs() / lat < 0.10,
        "dependent misses should take one miss latency each: {per_miss:.0} vs {lat:.0} cycles"
    );
}

#[test]
fn independent_misses_overlap_up_to_the_mshr_limit() {
    let lat = miss_latency(&[]);
    for mshrs in [1u64, 2, 4] {
        let m = mshrs.to_string();
        let sets = [("cpu.mshrs", m.as_str())];
        let stream = cycles(&sets, |e| loads(e, N, false));
        let expect = N as f64 / mshrs as f64 * lat;
        assert!(
            (stream - expect).abs() / expect < 0.15,
            "{mshrs} MSHRs: {N} independent misses took {stream:.0} cycles, expected ~{expect:.0} (N/mshrs x {lat:.0})"
        );
    }
    // With the default 10 MSHRs the stream is far faster than the chase.
    let stream = cycles(&[], |e| loads(e, N, false));
    let chase = cycles(&[], |e| loads(e, N, true));
    assert!(
        stream < chase / 4.0,
        "stream {stream:.0} vs chase {chase:.0} cycles: no memory-level parallelism"
    );
    assert!(
        stream >= N as f64 / 10.0 * lat * 0.9,
        "stream {stream:.0} cycles beats the 10-MSHR bound {:.0}",
        N as f64 / 10.0 * lat
    );
}

#[test]
fn in_order_core_blocks_on_every_load() {
    let sets = [("cpu.model", "in-order")];
    let lat = miss_latency(&sets);
    let stream = cycles(&sets, |e| loads(e, N, false));
    let per_miss = stream / N as f64;
    assert!(
        (per_miss - lat).abs() / lat < 0.10,
        "in-order: {per_miss:.0} vs {lat:.0} cycles per miss"
    );
}

fn compute_loop(_: &Engine) -> Vec<Op> {
    vec![Op::Compute { n: 1000 }; 100]
}

#[test]
fn compute_ipc_is_the_issue_width_ooo_and_one_over_cpi_in_order() {
    let instrs = 100_000.0;
    for width in [1u64, 2, 4, 8] {
        let w = width.to_string();
        let c = cycles(&[("cpu.issue_width", w.as_str())], compute_loop);
        let ipc = instrs / c;
        assert!(
            (ipc - width as f64).abs() / (width as f64) < 0.01,
            "width {width}: IPC {ipc:.3}"
        );
    }
    // Unit compute ops (one ROB entry each) flow at the same rate.
    let c = cycles(&[], |_| vec![Op::Compute { n: 1 }; 100_000]);
    assert!((instrs / c - 4.0).abs() < 0.04, "IPC {:.3}", instrs / c);
    for (cpi, want) in [("1", 1.0), ("2", 0.5)] {
        let c = cycles(
            &[("cpu.model", "in-order"), ("cpu.compute_cpi", cpi)],
            compute_loop,
        );
        assert!(
            (instrs / c - want).abs() < 0.01,
            "in-order cpi {cpi}: IPC {:.3}",
            instrs / c
        );
    }
}

#[test]
fn a_full_rob_stalls_dispatch_behind_a_miss() {
    let lat = miss_latency(&[]);
    // Miss A, M independent one-instruction ops, independent miss B.
    let m = 300u64;
    let ops = |e: &Engine| {
        let ab = loads(e, 2, false);
        let mut v = vec![ab[0]];
        v.extend(std::iter::repeat_n(Op::Compute { n: 1 }, m as usize));
        v.push(ab[1]);
        v
    };
    // A ROB that holds all of it lets B dispatch M/4 cycles after A: the
    // two misses overlap...
    let big = cycles(&[("cpu.rob_entries", "4096")], ops);
    let overlap = lat + m as f64 / 4.0;
    assert!(
        (big - overlap).abs() / overlap < 0.05,
        "4096-entry ROB: {big:.0} cycles, expected ~{overlap:.0}"
    );
    // ...the default 168 entries fill while A is outstanding: dispatch
    // stalls until A retires, so B's miss starts only then.
    let small = cycles(&[], ops);
    let stalled = 2.0 * lat + (m + 2 - 168) as f64 / 4.0;
    assert!(
        (small - stalled).abs() / stalled < 0.05,
        "168-entry ROB: {small:.0} cycles, expected ~{stalled:.0} (two serial misses of {lat:.0})"
    );
}

#[test]
fn load_queue_bounds_loads_in_flight() {
    let lat = miss_latency(&[]);
    // 4 load-queue entries with 10 MSHRs: at most 4 misses in flight
    // (few enough that bandwidth and tFAW do not bind).
    let c = cycles(&[("cpu.load_queue_entries", "4")], |e| loads(e, N, false));
    let expect = N as f64 / 4.0 * lat;
    assert!(
        (c - expect).abs() / expect < 0.15,
        "LQ 4: {c:.0} cycles, expected ~{expect:.0}"
    );
}

/// A linked list built and walked through `TxCtx`: every `next` load
/// depends on the load that returned the node's address; loads of
/// unrelated data (a non-pointer array) do not.
#[test]
fn txctx_infers_pointer_chasing_dependencies() {
    let base = 1u64 << 30;
    let bytes = 1u64 << 26;
    let mut img = SparseImage::new();
    let mut ops = Vec::new();
    let head_at = base + 64;
    let mut ctx = TxCtx::new(&mut img, &mut ops, false, base, bytes);
    ctx.init_region();
    // The array below the nodes: no loaded pointer's span covers it. (An
    // object allocated right after a node whose pointer was loaded would be
    // inside that pointer's 4 KiB span: the rule's false positive,
    // docs/model/processor.md.)
    let array = ctx.alloc(8 * 64);
    // Nodes { value, next }, allocated 64 B aligned, linked in reverse.
    let mut next = 0;
    for v in 0..20u64 {
        let node = ctx.alloc(64);
        ctx.store(node, v * 1000);
        ctx.store(node + 8, next);
        next = node;
    }
    ctx.store(head_at, next);

    let mut ops = Vec::new();
    let mut ctx = TxCtx::new(&mut img, &mut ops, true, base, bytes);
    let mut p = ctx.load(head_at);
    let mut n = 0;
    while p != 0 {
        ctx.load(p); // value: depends on the load that returned p
        p = ctx.load(p + 8); // next: same producer
        n += 1;
    }
    for i in 0..64 {
        ctx.load(array + 8 * i);
    }

    assert_eq!(n, 20);
    let deps: Vec<u8> = ops
        .iter()
        .map(|o| match *o {
            Op::Load { dep, .. } => dep,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(deps[0], 0, "the head pointer's address is a constant");
    for k in 0..20 {
        // Load 1 + 2k reads node k's value, 2 + 2k its next pointer; the
        // node's address came from load 2k (the head or the previous next).
        assert_eq!(deps[1 + 2 * k], 1, "value load of node {k}");
        assert_eq!(deps[2 + 2 * k], 2, "next load of node {k}");
    }
    assert!(
        deps[41..].iter().all(|&d| d == 0),
        "array loads whose address no load produced are independent: {:?}",
        &deps[41..]
    );

    // Through the engine the walk is a pointer chase: one miss per node.
    let mut e = machine(&[]);
    let lat = miss_latency(&[]);
    let chase: Vec<Op> = ops[..41]
        .iter()
        .enumerate()
        .map(|(i, o)| match *o {
            // Spread the nodes over cold rows (the timing only needs the deps).
            Op::Load { value, dep, .. } => Op::Load {
                addr: cold_line(&e, i as u64 / 2) + 8 * (i as u64 % 2),
                value,
                dep,
            },
            _ => unreachable!(),
        })
        .collect();
    let c = e.run_ops(0, &chase).unwrap() as f64;
    let expect = 21.0 * lat;
    assert!(
        (c - expect).abs() / expect < 0.15,
        "list walk: {c:.0} cycles, expected ~{expect:.0} (21 dependent misses)"
    );
}

fn run(scheme: &str, workload: &str, threads: usize, tx: u64, sets: &[(&str, &str)]) -> Engine {
    let mut spec = RunSpec::new(scheme, workload).unwrap();
    spec.threads = threads;
    spec.tx = tx;
    for (k, v) in sets {
        spec.params.set_str(k, v).unwrap();
    }
    engine::run(spec, &mut |_| {}).unwrap()
}

/// Native write traffic is never zero at a moderate run: the window's
/// stores that are still dirty in the caches count (docs/model/metrics.md).
#[test]
fn ideal_vector_reports_nonzero_write_traffic() {
    let e = run("ideal", "vector", 8, 20_000, &[]);
    let m = e.metrics();
    assert!(
        m.write_bytes_per_tx > 32.0,
        "ideal vector: {} B/tx",
        m.write_bytes_per_tx
    );
    assert!(m.dirty_cached_bytes_growth > 0);
}

#[test]
fn the_window_excludes_the_warm_up() {
    let e = run("hoop", "btree", 4, 2000, &[]);
    let m = e.metrics();
    assert_eq!(m.committed_tx, 2000);
    assert_eq!(m.warmup_tx + m.measured_tx, m.committed_tx);
    // Each thread warms up a quarter of its 500 transactions.
    assert!(m.warmup_tx >= 500, "{}", m.warmup_tx);
    assert!(m.window_start_cycle > 0 && m.window_cycles < m.sim_cycles);
    assert_eq!(m.window_start_cycle + m.window_cycles, m.sim_cycles);
    let thr = m.measured_tx as f64 * 1e6 / m.window_cycles as f64;
    assert!((m.throughput_tx_per_mcycle - thr).abs() < 1e-9);

    let e = run("hoop", "btree", 4, 2000, &[("run.warmup_tx_share", "0")]);
    let m0 = e.metrics();
    assert_eq!((m0.warmup_tx, m0.window_start_cycle), (0, 0));
    assert_eq!(m0.measured_tx, 2000);
    // The warm-up's cold misses are excluded.
    assert!(m.llc_miss_ratio <= m0.llc_miss_ratio);

    let e = run(
        "hoop",
        "btree",
        4,
        2000,
        &[("run.warmup_tx_per_thread", "100")],
    );
    assert!(e.metrics().warmup_tx >= 400);
}

#[test]
fn bad_core_parameters_are_rejected() {
    let mut spec = RunSpec::new("ideal", "vector").unwrap();
    let err = spec.params.set_str("cpu.model", "superscalar").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("cpu.model") && msg.contains("in-order"),
        "{msg}"
    );
    assert!(spec.params.set_str("cpu.mshrs", "0").is_err());
    assert!(spec.params.set_str("run.warmup_tx_share", "1.5").is_err());
}
