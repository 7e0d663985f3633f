//! A scheme parameter too small for one transaction of the workload (a log,
//! a segment, a journal, a pool) is bad input: the run ends with an input
//! error naming the parameter, its value and what it needs — never a panic.

use durasim::engine::{Engine, RunSpec};
use durasim::Error;

/// One thread of vector, `tx` transactions of `item_bytes` items, with the
/// overrides `set`.
fn run(scheme: &str, tx: u64, item_bytes: &str, set: &[(&str, &str)]) -> durasim::Result<()> {
    let mut s = RunSpec::new(scheme, "vector").unwrap();
    s.threads = 1;
    s.tx = tx;
    for (k, v) in [
        ("workload.item_bytes", item_bytes),
        ("workload.initial_items", "2"),
        // Inserts only: every transaction writes one whole new item.
        ("workload.update_ratio", "0"),
        ("nvm.capacity_bytes", "256MB"),
    ]
    .iter()
    .chain(set)
    {
        s.params.set_str(k, v).unwrap();
    }
    Engine::new(s)?.run(&mut |_| {})
}

/// The input error of [`run`]; if it advises a value for `key`, the same
/// run with that value must succeed.
fn input_error(scheme: &str, tx: u64, item_bytes: &str, set: &[(&str, &str)]) -> String {
    match run(scheme, tx, item_bytes, set) {
        Err(Error::Input(m)) => {
            for (key, _) in set {
                let advice = format!("set {key} to at least ");
                if let Some(i) = m.find(&advice) {
                    let n: String = m[i + advice.len()..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    let mut fixed: Vec<(&str, &str)> =
                        set.iter().filter(|kv| kv.0 != *key).copied().collect();
                    fixed.push((key, &n));
                    run(scheme, tx, item_bytes, &fixed)
                        .unwrap_or_else(|e| panic!("{scheme} with {key}={n}: {e}"));
                }
            }
            m
        }
        Err(other) => panic!("{scheme}: expected an input error, got {other}"),
        Ok(()) => panic!("{scheme}: run succeeded; expected an input error"),
    }
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "'{msg}' does not mention '{p}'");
    }
}

#[test]
fn undo_log_smaller_than_a_transaction() {
    // 64 KiB log = 511 records; a 64 KiB item is 1024 lines.
    let m = input_error(
        "opt-undo",
        2,
        "65536",
        &[("opt-undo.log_bytes_per_core", "65536")],
    );
    assert_mentions(
        &m,
        &[
            "opt-undo.log_bytes_per_core=65536",
            "511 undo records",
            "set opt-undo.log_bytes_per_core to at least 262144",
        ],
    );
}

#[test]
fn redo_log_smaller_than_a_transaction() {
    let m = input_error(
        "opt-redo",
        2,
        "65536",
        &[("opt-redo.log_bytes_per_core", "65536")],
    );
    assert_mentions(
        &m,
        &[
            "opt-redo.log_bytes_per_core=65536",
            "511 redo records",
            "set opt-redo.log_bytes_per_core to at least 262144",
        ],
    );
}

#[test]
fn lad_fallback_log_smaller_than_the_overflow() {
    let m = input_error(
        "lad",
        2,
        "65536",
        &[
            ("lad.staging_lines_per_core", "4"),
            ("lad.undo_log_bytes_per_core", "65536"),
        ],
    );
    assert_mentions(
        &m,
        &[
            "lad.undo_log_bytes_per_core=65536",
            "1025 modified lines",
            "set lad.undo_log_bytes_per_core to at least 131072",
            "lad.staging_lines_per_core",
        ],
    );
}

#[test]
fn lsm_record_larger_than_a_segment() {
    // 4 KiB item = 64 lines of 88 B entries: more than a 4 KiB segment.
    let m = input_error(
        "lsm",
        2,
        "4096",
        &[
            ("lsm.segment_bytes", "4096"),
            ("nvm.capacity_bytes", "64MB"),
        ],
    );
    assert_mentions(
        &m,
        &[
            "lsm.segment_bytes=4096",
            "set lsm.segment_bytes to at least 8192",
        ],
    );
}

#[test]
fn osp_journal_smaller_than_a_transaction() {
    // 4 KiB journal = 168 pages; a 1 MiB item spans 256 pages.
    let m = input_error(
        "osp",
        1,
        "1048576",
        &[
            ("osp.journal_bytes_per_core", "4096"),
            ("osp.shadow_pages", "4096"),
        ],
    );
    assert_mentions(
        &m,
        &[
            "osp.journal_bytes_per_core=4096",
            "168 pages",
            "set osp.journal_bytes_per_core to at least 8192",
        ],
    );
}

#[test]
fn osp_shadow_pool_exhausted() {
    // 16 shadow pages; a 64 KiB item spans 16 pages plus the root's page.
    let m = input_error("osp", 2, "65536", &[("osp.shadow_pages", "16")]);
    assert_mentions(&m, &["osp.shadow_pages=16", "raise osp.shadow_pages"]);
}

#[test]
fn hoop_region_smaller_than_a_transaction() {
    // 64 MiB x 0.001 rounds up to a 2 MiB region of 4 KiB blocks (about
    // 126,000 words); a 1 MiB item is 131,072 words.
    let m = input_error(
        "hoop",
        1,
        "1048576",
        &[
            ("nvm.capacity_bytes", "64MB"),
            ("hoop.oop_region_share", "0.001"),
            ("hoop.block_bytes", "4096"),
        ],
    );
    assert_mentions(
        &m,
        &["hoop.oop_region_share=0.001", "raise hoop.oop_region_share"],
    );
}

#[test]
fn default_sizes_still_run() {
    // The same tiny runs with the default sizes succeed (the check does
    // not fire spuriously).
    for scheme in ["opt-undo", "opt-redo", "lad", "lsm", "osp", "hoop"] {
        let mut s = RunSpec::new(scheme, "vector").unwrap();
        s.threads = 1;
        s.tx = 4;
        s.params.set_str("workload.item_bytes", "4096").unwrap();
        s.params.set_str("workload.initial_items", "2").unwrap();
        s.params.set_str("nvm.capacity_bytes", "2GB").unwrap();
        let mut e = Engine::new(s).unwrap();
        e.run(&mut |_| {})
            .unwrap_or_else(|err| panic!("{scheme}: {err}"));
    }
}
