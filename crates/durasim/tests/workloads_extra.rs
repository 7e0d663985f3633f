//! The other papers' transactional workloads (tatp, echo, sps, sdg,
//! array, hashtable), the knobs every keyed workload honours
//! (`workload.key_dist`, `workload.item_bytes` up to 4 KB,
//! `workload.copies`, `workload.values`), and each workload's write set
//! beside HOOP Table III. Exhaustive crash verification of every registered
//! workload under every shipped durable scheme is
//! `crash_oracle::every_registered_scheme_survives_every_crash_point`
//! (it iterates the registry, so it covers these workloads); here the
//! crash checks cover the new knobs.

use durasim::crash::{self, CrashOptions};
use durasim::engine;
use durasim::schemes::Durability;
use durasim::RunSpec;

const NEW: [&str; 6] = ["tatp", "echo", "sps", "sdg", "array", "hashtable"];

fn spec(scheme: &str, workload: &str, tx: u64, sets: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(scheme, workload).unwrap();
    s.threads = 2;
    s.tx = tx;
    s.seed = 5;
    s.params.set_str("workload.initial_items", "256").unwrap();
    s.params.set_str("run.check_reads", "true").unwrap();
    for (k, v) in sets {
        s.params.set_str(k, v).unwrap();
    }
    s
}

/// Run, drain, and check end-of-run equivalence and the invariants on the
/// architectural image and the NVM media; returns a metrics fingerprint.
fn run_checked(s: RunSpec) -> (u64, u64, u64) {
    let label = format!("{} x {}", s.scheme, s.workload);
    let tx = s.tx;
    let e = engine::run(s, &mut |_| {}).unwrap();
    let m = e.metrics();
    assert_eq!(m.committed_tx, tx, "{label}");
    let fp = (m.sim_cycles, m.nvm_bytes_written, m.nvm_bytes_read);
    e.check_equivalence()
        .unwrap_or_else(|x| panic!("{label}: {x}"));
    e.check_invariants(e.ctx.nvm.media())
        .unwrap_or_else(|x| panic!("{label} (NVM media): {x}"));
    e.check_invariants(&e.arch)
        .unwrap_or_else(|x| panic!("{label}: {x}"));
    fp
}

/// End-of-run equivalence under ideal and hoop, and determinism: the same
/// seed gives the same cycles and traffic.
#[test]
fn new_workloads_are_equivalent_and_deterministic_under_ideal_and_hoop() {
    for w in NEW {
        for scheme in ["ideal", "hoop"] {
            let a = run_checked(spec(scheme, w, 200, &[]));
            let b = run_checked(spec(scheme, w, 200, &[]));
            assert_eq!(a, b, "{scheme} x {w}: not deterministic");
            assert!(a.0 > 0);
        }
    }
}

/// Every workload runs at 4 KB items (MorLog's large data set), and its
/// checker accepts the result.
#[test]
fn every_workload_runs_at_4kb_items() {
    for w in durasim::workloads::names() {
        let mut sets = vec![
            ("workload.item_bytes", "4096"),
            ("workload.initial_items", "32"),
        ];
        if w == "tpcc" {
            sets.push(("workload.tpcc_items", "2000"));
            sets.push(("workload.tpcc_customers_per_district", "300"));
        }
        run_checked(spec("hoop", w, 60, &sets));
    }
}

/// `workload.key_dist` is honoured: every workload still validates under
/// both overrides, and for the keyed ones the override changes the run.
#[test]
fn key_dist_is_honoured_by_every_keyed_workload() {
    let keyed = [
        "vector",
        "hashmap",
        "rbtree",
        "btree",
        "ycsb",
        "tatp",
        "echo",
        "sps",
        "array",
        "hashtable",
    ];
    for w in durasim::workloads::names() {
        let fp: Vec<_> = ["default", "uniform", "zipfian"]
            .iter()
            .map(|d| {
                let mut sets = vec![("workload.key_dist", *d)];
                if w == "tpcc" {
                    sets.push(("workload.tpcc_items", "2000"));
                    sets.push(("workload.tpcc_customers_per_district", "300"));
                }
                run_checked(spec("ideal", w, 100, &sets))
            })
            .collect();
        if keyed.contains(&w) {
            assert_ne!(fp[1], fp[2], "{w}: zipfian did not change the run");
        } else {
            assert_eq!(fp[1], fp[2], "{w} draws no keys");
        }
        // The default is uniform except for ycsb (Zipfian) and tatp (NURand).
        if w == "ycsb" {
            assert_eq!(fp[0], fp[2], "ycsb defaults to zipfian");
        } else if w != "tatp" {
            assert_eq!(fp[0], fp[1], "{w} defaults to uniform");
        }
    }
}

/// A hash of the architectural image after `s` ran.
fn image_hash(s: RunSpec) -> u64 {
    use durasim::mem::MemRead;
    let e = engine::run(s, &mut |_| {}).unwrap();
    let mut h = 0u64;
    for p in e.arch.page_numbers() {
        for w in 0..512 {
            let v = e.arch.read_u64(p * 4096 + w * 8);
            h = (h ^ v ^ (p << 9 | w))
                .wrapping_mul(0x100_0000_01b3)
                .rotate_left(29);
        }
    }
    h
}

/// `workload.values`: every mode runs, validates and is deterministic (the
/// same seed gives the same run), and the modes store different data.
#[test]
fn value_modes_run_validate_and_are_deterministic() {
    for w in [
        "vector", "hashmap", "rbtree", "btree", "ycsb", "echo", "tatp", "array",
    ] {
        let fps: Vec<_> = ["realistic", "random", "zero"]
            .iter()
            .map(|v| {
                for scope in ["item", "field"] {
                    let sets = [("workload.values", *v), ("workload.update_scope", scope)];
                    let a = run_checked(spec("hoop", w, 150, &sets));
                    let b = run_checked(spec("hoop", w, 150, &sets));
                    assert_eq!(a, b, "{w}, values {v}, {scope}: not deterministic");
                }
                image_hash(spec("ideal", w, 150, &[("workload.values", *v)]))
            })
            .collect();
        assert_ne!(fps[0], fps[1], "{w}: realistic = random");
        assert_ne!(fps[1], fps[2], "{w}: random = zero");
    }
}

/// `workload.copies = 4`: four independent instances per thread, each
/// checked from the image; a corrupted copy is reported by number.
#[test]
fn copies_run_independent_instances() {
    for w in ["hashmap", "tatp", "sps"] {
        let one = run_checked(spec("ideal", w, 200, &[]));
        let four = run_checked(spec("ideal", w, 200, &[("workload.copies", "4")]));
        assert_ne!(one, four, "{w}");
    }
    let s = spec("ideal", "array", 200, &[("workload.copies", "4")]);
    let e = engine::run(s, &mut |_| {}).unwrap();
    let mut img = e.arch.clone();
    let base = e.ctx.layout.thread_base(1);
    let info = durasim::workloads::find("array").unwrap();
    let items = durasim::workloads::check_region(info.check, &img, base, 0).unwrap();
    assert_eq!(items, 4 * 256, "four arrays of 256 elements");
    // Corrupt an element of copy 2: its first element's payload.
    let copy_bytes = img_read(&img, base + 24);
    let copy2 = base + 4096 + 2 * copy_bytes;
    let elems = img_read(&img, copy2 + 64 + 8);
    durasim::mem::MemWrite::write_u64(&mut img, elems + 16, 1);
    let err = durasim::workloads::check_region(info.check, &img, base, 0).unwrap_err();
    assert!(err.starts_with("copy 2:"), "{err}");
}

/// `--set` pairs of one run.
type Sets = &'static [(&'static str, &'static str)];

fn img_read(img: &dyn durasim::mem::MemRead, a: u64) -> u64 {
    img.read_u64(a)
}

/// Exhaustive crash verification of the knobs on small runs: Zipfian
/// keys, 4 KB items and copies, under every shipped durable scheme.
#[test]
fn knobs_survive_every_crash_point_under_every_durable_scheme() {
    let runs: [(&str, u64, Sets); 5] = [
        // Zero values: every payload store of an update is silent.
        (
            "vector",
            24,
            &[
                ("workload.values", "zero"),
                ("workload.initial_items", "16"),
            ],
        ),
        // Echo's batches with gets and inserts; ycsb's N-Store text.
        ("echo", 12, &[("workload.initial_items", "16")]),
        (
            "hashtable",
            24,
            &[
                ("workload.key_dist", "zipfian"),
                ("workload.initial_items", "32"),
            ],
        ),
        (
            "sps",
            16,
            &[
                ("workload.item_bytes", "4096"),
                ("workload.initial_items", "16"),
            ],
        ),
        (
            "tatp",
            60,
            &[("workload.copies", "2"), ("workload.initial_items", "32")],
        ),
    ];
    for info in durasim::schemes::REGISTRY {
        if info.durability == Durability::None {
            continue;
        }
        for (w, tx, sets) in runs {
            let mut s = spec(info.name, w, tx, sets);
            s.params.set_str("run.check_reads", "false").unwrap();
            let r = crash::crashtest(s, &CrashOptions::default(), &mut |_, _| {}).unwrap();
            assert_eq!(
                r.violations,
                0,
                "{} x {w}: {}",
                info.name,
                r.first_violation
                    .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                    .unwrap_or_default()
            );
            assert_eq!(r.crash_points_tested, r.persist_events + 1);
        }
    }
}

/// Write-set characterisation of one run under `ideal` (every other
/// parameter at its default, 64 B items, 1 KB ycsb records): (program
/// stores per transaction, words per written line, repeated-store share).
fn write_set(workload: &str, sets: &[(&str, &str)]) -> (f64, f64, f64) {
    let mut s = RunSpec::new("ideal", workload).unwrap();
    s.threads = 1;
    s.tx = 1500;
    s.seed = 3;
    s.params.set_str("workload.tpcc_items", "2000").unwrap();
    s.params
        .set_str("workload.tpcc_customers_per_district", "300")
        .unwrap();
    for (k, v) in sets {
        s.params.set_str(k, v).unwrap();
    }
    let e = engine::run(s, &mut |_| {}).unwrap();
    let m = e.metrics();
    (
        m.program_stores_per_tx,
        m.words_per_written_line,
        m.repeated_store_share,
    )
}

/// Stores per transaction and words per written line, as every run JSON
/// reports them, stay in the ranges docs/model/workloads.md tabulates
/// beside HOOP Table III (vector/hashmap 8, queue 4, rbtree 2-10, btree
/// 2-12, ycsb 8-32, tpcc 10-35; units differ, see the doc). The ranges
/// pin what each structure's code path stores; they were measured, not
/// chosen to meet Table III. Repeated stores: a word stored twice in a
/// transaction where the real code does so (tree fix-ups, the heap cursor
/// per allocation, echo's key count), none where one operation touches
/// distinct words.
#[test]
fn write_set_beside_hoop_table_iii() {
    // (workload, stores/tx range, words per written line range, repeats?)
    type Range = (f64, f64);
    let expect: [(&str, Range, Range, bool); 9] = [
        ("vector", (8.0, 9.0), (5.0, 6.5), false),
        ("hashmap", (9.0, 11.0), (2.8, 3.8), false),
        ("queue", (8.0, 9.0), (5.0, 6.5), false),
        ("rbtree", (12.0, 17.0), (3.0, 4.2), true),
        ("btree", (14.0, 20.0), (3.4, 4.8), true),
        ("ycsb", (90.0, 115.0), (7.5, 8.0), false),
        ("tpcc", (145.0, 165.0), (3.9, 4.8), true),
        ("echo", (70.0, 100.0), (3.0, 4.5), true),
        ("tatp", (0.2, 1.0), (1.0, 2.0), false),
    ];
    let mut report = String::new();
    for (w, st, wpl, repeats) in expect {
        let (stores, words_per_line, rep) = write_set(w, &[]);
        report += &format!(
            "{w}: {stores:.2} stores/tx, {words_per_line:.2} words/line, repeated {rep:.4}\n"
        );
        assert!(
            (st.0..=st.1).contains(&stores),
            "{w}: {stores:.2} stores/tx outside {st:?}\n{report}"
        );
        assert!(
            (wpl.0..=wpl.1).contains(&words_per_line),
            "{w}: {words_per_line:.2} words per written line outside {wpl:?}\n{report}"
        );
        if repeats {
            assert!(rep > 0.0, "{w}: no repeated store\n{report}");
        } else {
            assert_eq!(rep, 0.0, "{w}: repeated stores\n{report}");
        }
    }
    eprintln!("{report}");
}

/// TPC-C and TATP text columns hold text under `workload.values =
/// realistic` (TPC-C §4.3.3.1 a-strings, C_LAST syllables, "ORIGINAL";
/// TATP digits and letters) and the packed values under `random`; the
/// written lines compress differently, and both validate.
#[test]
fn spec_text_columns_follow_workload_values() {
    let small = ("workload.tpcc_items", "1000");
    for w in ["tpcc", "tatp"] {
        let mut hashes = Vec::new();
        for v in ["realistic", "random", "zero"] {
            let sets = [("workload.values", v), small];
            assert!(run_checked(spec("ideal", w, 100, &sets)).0 > 0, "{w} {v}");
            hashes.push(image_hash(spec("ideal", w, 100, &sets)));
        }
        assert_ne!(hashes[0], hashes[1], "{w}: text columns did not change");
        assert_ne!(hashes[1], hashes[2], "{w}: zero = random");
    }
}
