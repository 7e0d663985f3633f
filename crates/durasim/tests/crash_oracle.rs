//! Negative and positive controls for the crash oracle. A small test-only
//! redo-logging scheme (correct) and mutations of it (ordering bugs, a
//! commit record sharing a line with data, a non-idempotent recovery) are
//! crash-checked through `crash::crashtest_with`; they are not in the
//! shipped registry.

mod common;

use durasim::cache::LineExt;
use durasim::cli::{main_with, Cli};
use durasim::config::Params;
use durasim::crash::{self, CrashOptions, CrashReport, PointSel, ViolationKind};
use durasim::error::{Error, Result};
use durasim::mem::Layout;
use durasim::mem::MemWrite;
use durasim::recovery::{Durability, RecoveryForm, RecoveryReport};
use durasim::schemes::{MemCtx, Scheme, SchemeInfo, Store, Writeback};
use durasim::types::{Addr, CoreId, Cycle, LineData, Purpose};
use durasim::RunSpec;
use std::collections::BTreeMap;

const CORRECT: u8 = 0;
/// Mutation: commit record persisted before the redo records.
const COMMIT_FIRST: u8 = 1;
/// Mutation: home locations updated before the commit record.
const HOME_FIRST: u8 = 2;
/// Commit record shares the first log line with records and is written as
/// one 64 B burst: correct only if 64 B writes are atomic.
const PACKED: u8 = 3;
/// Mutation of recovery: clears the commit record before replaying.
const CLEAR_FIRST: u8 = 4;
/// Correct, but home writes and log truncation run as background work.
const LAZY: u8 = 5;
/// Recovery panics on a committed log (a bug provoked by crash bytes).
const PANICKY: u8 = 6;

const LAZY_DELAY_CYCLES: Cycle = 3000;

fn rec_off(v: u8) -> u64 {
    if v == PACKED {
        8
    } else {
        64
    }
}

fn log_base(layout: &Layout, core: usize) -> Addr {
    let per = ((layout.capacity_bytes - layout.reserved_base) / layout.threads as u64) & !63;
    layout.reserved_base + core as u64 * per
}

fn reserve(_: &Params) -> u64 {
    64 << 20
}

struct Redo<const V: u8> {
    layout: Layout,
    /// Per core: the open transaction's stores.
    open: Vec<BTreeMap<Addr, u64>>,
    /// Per core: committed but not yet home (LAZY), and when it is due.
    lazy: Vec<(BTreeMap<Addr, u64>, Cycle)>,
    seq: u64,
}

fn build<const V: u8>(_: &Params, layout: &Layout) -> Result<Box<dyn Scheme>> {
    Ok(Box::new(Redo::<V> {
        layout: layout.clone(),
        open: vec![BTreeMap::new(); layout.threads],
        lazy: vec![(BTreeMap::new(), Cycle::MAX); layout.threads],
        seq: 0,
    }))
}

fn recover<const V: u8>(
    img: &mut dyn MemWrite,
    _: &Params,
    layout: &Layout,
) -> Result<RecoveryReport> {
    let mut rep = RecoveryReport::default();
    let mut replayed = 0.0;
    for c in 0..layout.threads {
        let base = log_base(layout, c);
        let h = img.read_u64(base);
        if h == 0 {
            continue;
        }
        let n = h & 0xffff_ffff;
        if V == PANICKY {
            panic!("log {c} is not empty");
        }
        if n > 4096 {
            return Err(Error::Internal(format!("log {c}: bad record count {n}")));
        }
        if V == CLEAR_FIRST {
            img.write_u64(base, 0);
        }
        for i in 0..n {
            let ra = base + rec_off(V) + i * 16;
            let a = img.read_u64(ra);
            let v = img.read_u64(ra + 8);
            if a >= layout.home_limit || !a.is_multiple_of(8) {
                return Err(Error::Internal(format!(
                    "log {c}: record {i} has bad address {a:#x}"
                )));
            }
            img.write_u64(a, v);
            rep.bytes_written += 8;
        }
        img.write_u64(base, 0);
        replayed += 1.0;
    }
    rep.details.push(("logs_replayed", replayed));
    Ok(rep)
}

impl<const V: u8> Redo<V> {
    fn home(ctx: &mut MemCtx, base: Addr, recs: &BTreeMap<Addr, u64>, now: Cycle) -> Cycle {
        let mut t = now;
        for (&a, &v) in recs {
            t = t.max(ctx.nvm.write(a, &v.to_le_bytes(), Purpose::WriteBack, now));
        }
        // The log is cleared once the home writes persisted.
        ctx.nvm
            .write(base, &0u64.to_le_bytes(), Purpose::Metadata, t)
    }

    fn apply_lazy(&mut self, ctx: &mut MemCtx, core: usize, now: Cycle) -> Cycle {
        let (recs, _) = std::mem::replace(&mut self.lazy[core], (BTreeMap::new(), Cycle::MAX));
        if recs.is_empty() {
            return now;
        }
        Self::home(ctx, log_base(&self.layout, core), &recs, now)
    }
}

impl<const V: u8> Scheme for Redo<V> {
    fn tx_end(&mut self, ctx: &mut MemCtx, core: CoreId, now: Cycle) -> Cycle {
        let recs = std::mem::take(&mut self.open[core]);
        if recs.is_empty() {
            return now;
        }
        let mut t = now;
        if V == LAZY {
            // The log holds one transaction: make room synchronously.
            t = self.apply_lazy(ctx, core, t);
        }
        self.seq += 1;
        let base = log_base(&self.layout, core);
        let off = rec_off(V);
        // At least one line: PACKED writes the first 64 B as one burst
        // even when the transaction has fewer than 4 records.
        let mut bytes = vec![0u8; (off as usize + recs.len() * 16).max(64)];
        bytes[..8].copy_from_slice(&((self.seq << 32) | recs.len() as u64).to_le_bytes());
        for (i, (&a, &v)) in recs.iter().enumerate() {
            let o = off as usize + i * 16;
            bytes[o..o + 8].copy_from_slice(&a.to_le_bytes());
            bytes[o + 8..o + 16].copy_from_slice(&v.to_le_bytes());
        }
        let records =
            |ctx: &mut MemCtx, at| ctx.nvm.write(base + 64, &bytes[64..], Purpose::Log, at);
        let commit = |ctx: &mut MemCtx, at| {
            if V == PACKED {
                ctx.nvm.write(base, &bytes[..64], Purpose::Metadata, at)
            } else {
                ctx.nvm.write(base, &bytes[..8], Purpose::Metadata, at)
            }
        };
        match V {
            COMMIT_FIRST => {
                t = t.max(commit(ctx, now));
                t = t.max(records(ctx, now));
                t = t.max(Self::home(ctx, base, &recs, now));
            }
            HOME_FIRST => {
                t = t.max(Self::home(ctx, base, &recs, now));
                t = t.max(records(ctx, now));
                t = t.max(commit(ctx, now));
                t = t.max(
                    ctx.nvm
                        .write(base, &0u64.to_le_bytes(), Purpose::Metadata, now),
                );
            }
            LAZY => {
                t = t.max(records(ctx, t));
                t = t.max(commit(ctx, t));
                self.lazy[core] = (recs, t + LAZY_DELAY_CYCLES);
            }
            _ => {
                // Records, commit, home: each once the previous persisted
                // (without ADR the media may program them in another order).
                if bytes.len() > 64 {
                    t = t.max(records(ctx, t));
                }
                t = t.max(commit(ctx, t));
                t = t.max(Self::home(ctx, base, &recs, t));
            }
        }
        t
    }

    fn store(&mut self, _ctx: &mut MemCtx, ev: Store, _ext: &mut LineExt) -> Cycle {
        let Store {
            core,
            addr,
            new,
            in_tx,
            now,
            ..
        } = ev;
        if in_tx {
            self.open[core].insert(addr, new);
        }
        now
    }

    fn read_miss(
        &mut self,
        ctx: &mut MemCtx,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut LineExt,
    ) -> (Cycle, bool) {
        let t = ctx.nvm.read(line_addr, out, Purpose::Demand, now);
        // Home holds committed data; newer words live in the scheme's
        // volatile buffers (committed-not-home, then the open transaction).
        for c in 0..self.open.len() {
            for map in [&self.lazy[c].0, &self.open[c]] {
                for (&a, &v) in map.range(line_addr..line_addr + 64) {
                    let o = (a - line_addr) as usize;
                    out[o..o + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        (t, false)
    }

    /// Home locations are written by the scheme at (or after) commit;
    /// cache write-backs never reach NVM (they could carry uncommitted data).
    fn writeback(&mut self, _ctx: &mut MemCtx, ev: Writeback<'_>) -> Cycle {
        let Writeback { now, .. } = ev;
        now
    }

    fn next_event_at(&self) -> Option<Cycle> {
        self.lazy
            .iter()
            .map(|l| l.1)
            .min()
            .filter(|&t| t != Cycle::MAX)
    }

    fn tick(&mut self, ctx: &mut MemCtx, now: Cycle) -> Option<Cycle> {
        for c in 0..self.lazy.len() {
            if self.lazy[c].1 <= now {
                self.apply_lazy(ctx, c, now);
            }
        }
        None
    }

    fn finish(&mut self, ctx: &mut MemCtx, now: Cycle) -> Cycle {
        let mut t = now;
        for c in 0..self.lazy.len() {
            t = t.max(self.apply_lazy(ctx, c, now));
        }
        t
    }
}

macro_rules! redo_info {
    ($name:ident, $label:expr, $v:expr) => {
        static $name: SchemeInfo = SchemeInfo {
            name: $label,
            description: "test-only redo logging",
            durability: Durability::AtCommit,
            params: &[],
            reserved_bytes: reserve,
            build: build::<{ $v }>,
            recover: recover::<{ $v }>,
            recovery: RecoveryForm::Plain,
            contexts: None,
            defaults: durasim::schemes::RunDefaults::BARE,
        };
    };
}
redo_info!(REDO, "redo-test", CORRECT);
redo_info!(REDO_COMMIT_FIRST, "redo-commit-first", COMMIT_FIRST);
redo_info!(REDO_HOME_FIRST, "redo-home-first", HOME_FIRST);
redo_info!(REDO_PACKED, "redo-packed", PACKED);
redo_info!(REDO_CLEAR_FIRST, "redo-clear-first", CLEAR_FIRST);
redo_info!(REDO_LAZY, "redo-lazy", LAZY);
redo_info!(REDO_PANICKY, "redo-panicky", PANICKY);

fn spec(info: &SchemeInfo, tx: u64, seed: u64) -> RunSpec {
    let mut params = Params::defaults(&[info.params]);
    // Small structures keep the invariant checker cheap.
    params.set_str("workload.initial_items", "64").unwrap();
    params.set_str("run.check_reads", "true").unwrap();
    RunSpec {
        scheme: info.name.to_string(),
        workload: "vector".to_string(),
        threads: 2,
        tx,
        seed,
        params,
        record_history: true,
        gen_thread: durasim::engine::GenThread::Auto,
    }
}

fn run(info: &'static SchemeInfo, tx: u64, opts: &CrashOptions) -> CrashReport {
    crash::crashtest_with(info, spec(info, tx, 3), opts, &mut |_, _| {}).unwrap()
}

fn exhaustive() -> CrashOptions {
    CrashOptions {
        recovery_crashes: 2,
        ..CrashOptions::default()
    }
}

#[test]
fn correct_redo_passes_every_crash_point_clean_and_torn() {
    let r = run(
        &REDO,
        300,
        &CrashOptions {
            torn: true,
            ..exhaustive()
        },
    );
    assert!(r.persist_events > 1000, "{} events", r.persist_events);
    assert_eq!(r.violations, 0, "{:?}", r.first_violation);
    assert!(r.first_violation.is_none());
    assert!(r.torn_points_tested > 100);
    assert!(r.recovery_crashes_tested > 1000);
    assert_eq!(r.relies_on_64b_atomicity(), Some(false));
    // Every point 0..=events was checked clean.
    let clean = r.verdicts.iter().filter(|v| v.1.is_none()).count() as u64;
    assert_eq!(clean, r.persist_events + 1);
}

#[test]
fn without_adr_crash_points_are_media_writes() {
    let mut s = spec(&REDO, 200, 3);
    s.params.set_str("mc.adr", "false").unwrap();
    let r = crash::crashtest_with(&REDO, s, &exhaustive(), &mut |_, _| {}).unwrap();
    assert!(r.persist_events > 1000);
    assert_eq!(r.violations, 0, "{:?}", r.first_violation);
    let mut s = spec(&REDO_HOME_FIRST, 200, 3);
    s.params.set_str("mc.adr", "false").unwrap();
    let r = crash::crashtest_with(&REDO_HOME_FIRST, s, &exhaustive(), &mut |_, _| {}).unwrap();
    assert!(r.violations > 0);
}

#[test]
fn correct_redo_passes_on_every_workload() {
    for w in durasim::workloads::REGISTRY {
        // TPC-C: ~150 stores per transaction and a full-table checker run
        // per distinct recovered state; fewer transactions keep this fast.
        let tx = if w.name == "tpcc" { 40 } else { 200 };
        let mut s = spec(&REDO, tx, 5);
        s.workload = w.name.into();
        let r = crash::crashtest_with(&REDO, s, &exhaustive(), &mut |_, _| {}).unwrap();
        assert!(r.persist_events > 100, "{}", w.name);
        assert_eq!(r.violations, 0, "{}: {:?}", w.name, r.first_violation);
    }
}

/// CI: every shipped scheme except `ideal` survives every crash point of a
/// small run of every workload, with one crash injected into each recovery.
/// The differential checks of the dedup and of the resumed scans (every
/// reused or resumed point recovered again from scratch, images compared)
/// cost 2-20x a plain run (ycsb and tpcc the most), so each scheme gets
/// them on two of the HOOP paper's five data structures, rotating with the
/// scheme so that each structure is checked by several schemes;
/// tests/resume.rs checks the resumed scans on every workload.
#[test]
fn every_registered_scheme_survives_every_crash_point() {
    let hoop_paper = durasim::workloads::HOOP_PAPER;
    const STRUCTURES: [&str; 5] = ["vector", "hashmap", "queue", "rbtree", "btree"];
    for (i, info) in durasim::schemes::REGISTRY.iter().enumerate() {
        if info.durability == Durability::None || !common::scheme_selected(info.name) {
            continue;
        }
        let verified = [STRUCTURES[i % 5], STRUCTURES[(i + 2) % 5]];
        for w in durasim::workloads::REGISTRY {
            let mut s = RunSpec::new(info.name, w.name).unwrap();
            s.params = Params::defaults(&durasim::schemes::all_params());
            s.threads = 2;
            // Exhaustive checking costs (points x recovery), and log-replaying
            // recoveries grow with the run: keep runs small. The HOOP
            // paper's seven workloads at 150 transactions; the later
            // workloads at 60, which still crosses every structure's growth
            // paths at 2 threads. TPC-C has ~150 stores per transaction and
            // a full-table checker, so it gets 30 transactions and small
            // tables.
            s.tx = if hoop_paper.contains(&w.name) {
                150
            } else {
                60
            };
            if w.name == "tpcc" {
                s.tx = 30;
                s.params.set_str("workload.tpcc_items", "2000").unwrap();
                s.params
                    .set_str("workload.tpcc_customers_per_district", "300")
                    .unwrap();
            }
            s.seed = 11;
            let verify = verified.contains(&w.name);
            let opts = CrashOptions {
                verify_dedup: verify,
                verify_resume: verify,
                ..CrashOptions::default()
            };
            let r = crash::crashtest(s, &opts, &mut |_, _| {}).unwrap();
            assert_eq!(r.dedup_mismatches, 0, "{} x {}", info.name, w.name);
            assert_eq!(r.resume_mismatches, 0, "{} x {}", info.name, w.name);
            assert_eq!(
                r.violations,
                0,
                "{} x {}: {}",
                info.name,
                w.name,
                r.first_violation
                    .map(|v| format!("{}\n  replay: {}", v.message, v.replay))
                    .unwrap_or_default()
            );
            assert_eq!(r.crash_points_tested, r.persist_events + 1);
        }
    }
}

#[test]
fn ordering_mutations_fail() {
    for info in [&REDO_COMMIT_FIRST, &REDO_HOME_FIRST] {
        let r = run(info, 200, &exhaustive());
        assert!(r.violations > 0, "{} passed", info.name);
        let v = r.first_violation.unwrap();
        assert!(
            matches!(v.kind, ViolationKind::Oracle | ViolationKind::RecoveryError),
            "{v:?}"
        );
        assert!(v.replay.contains(&format!("--scheme {}", info.name)));
    }
}

#[test]
fn home_first_reports_thread_address_and_bytes() {
    let r = run(&REDO_HOME_FIRST, 100, &exhaustive());
    let v = r.first_violation.unwrap();
    assert_eq!(v.kind, ViolationKind::Oracle);
    let (t, a) = (v.thread.unwrap(), v.addr.unwrap());
    // The address lies in the reported thread's region and the bytes differ.
    let layout = Layout::new(512 << 30, 64 << 20, 2).unwrap();
    assert!(a >= layout.thread_base(t) && a < layout.thread_base(t) + layout.thread_region_bytes);
    assert_ne!(v.expected, v.found);
}

#[test]
fn packed_commit_relies_on_64b_atomicity() {
    let clean = run(&REDO_PACKED, 200, &exhaustive());
    assert_eq!(clean.violations, 0, "{:?}", clean.first_violation);
    let torn = run(
        &REDO_PACKED,
        200,
        &CrashOptions {
            torn: true,
            ..exhaustive()
        },
    );
    assert_eq!(torn.clean_violations, 0);
    assert!(torn.torn_violations > 0);
    assert_eq!(torn.relies_on_64b_atomicity(), Some(true));
    let v = torn.first_violation.unwrap();
    assert!(v.tear_mask.is_some());
    assert!(v.replay.contains("--tear-mask"));
}

#[test]
fn non_idempotent_recovery_fails_crash_inside_recovery() {
    let r = run(
        &REDO_CLEAR_FIRST,
        100,
        &CrashOptions {
            recovery_crashes: u64::MAX,
            ..CrashOptions::default()
        },
    );
    assert!(r.recovery_crash_violations > 0);
    // Uninterrupted, this recovery is correct: only recovery crashes fail.
    assert_eq!(r.recovery_crash_violations, r.violations);
    let v = r.first_violation.unwrap();
    assert_eq!(v.kind, ViolationKind::RecoveryCrash);
    assert!(v.recovery_writes_persisted.is_some());
    let ok = run(
        &REDO_CLEAR_FIRST,
        100,
        &CrashOptions {
            recovery_crashes: 0,
            ..CrashOptions::default()
        },
    );
    assert_eq!(ok.violations, 0, "{:?}", ok.first_violation);
}

#[test]
fn background_work_points_are_counted_and_pass() {
    let r = run(&REDO_LAZY, 300, &exhaustive());
    assert_eq!(r.violations, 0, "{:?}", r.first_violation);
    assert!(r.background_persist_events > 0);
    assert!(r.background_points_tested > 0);
    let r = run(&REDO, 100, &exhaustive());
    assert_eq!(r.background_points_tested, 0);
}

#[test]
fn a_panicking_recovery_is_a_reported_violation() {
    let r = run(&REDO_PANICKY, 50, &CrashOptions::default());
    assert!(r.violations > 0);
    let v = r.first_violation.unwrap();
    assert_eq!(v.kind, ViolationKind::RecoveryError);
    assert!(v.message.contains("panicked: log"), "{}", v.message);
}

#[test]
fn ideal_fails_the_oracle() {
    let mut s = spec(&durasim::schemes::ideal::INFO, 200, 3);
    s.scheme = "ideal".into();
    let r = crash::crashtest(s, &CrashOptions::default(), &mut |_, _| {}).unwrap();
    assert!(r.violations > 0);
    let v = r.first_violation.unwrap();
    assert_eq!(v.kind, ViolationKind::Oracle);
    // The report names the word's place in the thread's region and the
    // transactions whose values were expected and found.
    let t = v.thread.unwrap();
    assert!(
        v.message.contains(&format!("of thread {t}'s region"))
            && v.message.contains("expected as")
            && v.message.contains("found "),
        "{}",
        v.message
    );
    // ... and the structure holding it: vector's root is { len, capacity,
    // items_ptr } at 0x40, its 64 B items from the heap's start (0x1000).
    let (off, place) = violation_place(&v.message);
    let want = match off {
        0x40 => "vector root at 0x40, field length".to_string(),
        0x48 => "vector root at 0x40, field capacity".to_string(),
        o if o >= 0x1000 => {
            let (i, w) = ((o - 0x1000) / 64, (o % 64) / 8);
            let field = match w {
                0 => "key".to_string(),
                1 => "seal (version, checksum)".to_string(),
                w => format!("payload word {}", w - 2),
            };
            format!(
                "vector element {i} at {:#x}, field {field}",
                0x1000 + i * 64
            )
        }
        o => panic!("vector writes no word at {o:#x}"),
    };
    assert_eq!(place, want, "{}", v.message);
}

/// The differing word's offset in its thread's region and the place the
/// message names for it ("btree leaf node at 0x1000, field keys[3]").
fn violation_place(message: &str) -> (u64, String) {
    let (_, rest) = message.split_once("; word 0x").expect("the word is placed");
    let (off, rest) = rest.split_once(' ').unwrap();
    let (_, rest) = rest.split_once("'s region (").unwrap();
    let (place, _) = rest.split_once("): expected").unwrap();
    (u64::from_str_radix(off, 16).unwrap(), place.to_string())
}

/// A place "WHAT at 0xSTART, field FIELD": (what, start offset, field).
fn place_parts(place: &str) -> (&str, u64, &str) {
    let (what, rest) = place.split_once(" at 0x").expect(place);
    let (start, field) = rest.split_once(", field ").expect(place);
    (what, u64::from_str_radix(start, 16).unwrap(), field)
}

/// The byte offset a field name of an item or a btree node denotes.
fn field_offset(field: &str, item_bytes: u64) -> Option<u64> {
    let index = |prefix: &str| {
        field
            .strip_prefix(prefix)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|d| d.parse::<u64>().ok())
    };
    match field {
        "key" | "meta (key count, leaf flag)" => Some(0),
        "seal (version, checksum)" => Some(8),
        "next" => Some(item_bytes),
        "next leaf" => Some(128 + 15 * 8),
        _ => index("payload word ")
            .map(|i| 16 + 8 * i)
            .or_else(|| index("keys[").map(|i| 8 + 8 * i))
            .or_else(|| index("items[").map(|i| 128 + 8 * i))
            .or_else(|| index("children[").map(|i| 128 + 8 * i))
            .or_else(|| index("head[").map(|i| 8 * i)),
    }
}

/// The first violation of the native system names the data structure and
/// field of its word, checked against the final image of the same run
/// (`ideal` promises nothing, so every transaction is expected) and the
/// workloads' documented layouts: btree nodes { meta, keys[15], ptrs[16] }
/// and items, hashmap buckets and entries { item | next }, TPC-C rows
/// whose id column is their row number.
#[test]
fn a_violation_names_the_structure_of_its_word() {
    use durasim::workloads::mix64;
    let mut interior = 0;
    let at = |s: &RunSpec, point| {
        let opts = CrashOptions {
            points: PointSel::Single {
                point,
                tear_mask: None,
            },
            ..CrashOptions::default()
        };
        crash::crashtest(s.clone(), &opts, &mut |_, _| {}).unwrap()
    };
    for (w, share) in [
        ("btree", 0.3),
        ("btree", 0.7),
        ("hashmap", 0.3),
        ("hashmap", 0.7),
        ("tpcc", 0.3),
        ("tpcc", 0.7),
    ] {
        let mut s = spec(&durasim::schemes::ideal::INFO, 30, 3);
        s.scheme = "ideal".into();
        s.workload = w.into();
        let arch = durasim::engine::run(s.clone(), &mut |_| {}).unwrap().arch;
        let point = (at(&s, 0).persist_events as f64 * share) as u64;
        let r = at(&s, point);
        let v = r.first_violation.unwrap();
        let (off, place) = violation_place(&v.message);
        let base = v.addr.unwrap() - off;
        let rd = |o: u64| durasim::mem::MemRead::read_u64(&arch, base + o);
        if place.starts_with("region header") {
            continue;
        }
        let (what, start, field) = place_parts(&place);
        assert!(start <= off, "{place}");
        let d = off - start;
        let ctx = format!("{w} at point {point}: {place}");
        if what == format!("{w} root") {
            assert_eq!(start, 0x40, "{ctx}");
            continue;
        }
        interior += 1;
        match w {
            "btree" if what.starts_with("btree item (key ") => {
                let key: u64 = what["btree item (key ".len()..what.len() - 1]
                    .parse()
                    .unwrap();
                assert_eq!(rd(start), key, "{ctx}");
                assert_eq!(field_offset(field, 64), Some(d), "{ctx}");
            }
            "btree" => {
                let meta = rd(start);
                assert!(meta & 0xffff <= 15, "{ctx}: no node at {start:#x}");
                let leaf = meta >> 32 == 1;
                let kind = if leaf {
                    "btree leaf node"
                } else {
                    "btree internal node"
                };
                assert_eq!(what, kind, "{ctx}");
                assert_eq!(field_offset(field, 64), Some(d), "{ctx}");
            }
            "hashmap" if what == "hashmap bucket array" => {
                assert_eq!(start, rd(0x48) - base, "{ctx}: the root's bucket array");
                assert_eq!(field_offset(field, 64), Some(d), "{ctx}");
            }
            "hashmap" => {
                let b: u64 = what
                    .strip_prefix("hashmap entry (bucket ")
                    .and_then(|r| r.split(',').next())
                    .and_then(|b| b.parse().ok())
                    .unwrap_or_else(|| panic!("{ctx}"));
                assert_eq!(
                    mix64(rd(start)) & (rd(0x40) - 1),
                    b,
                    "{ctx}: its key's bucket"
                );
                assert_eq!(field_offset(field, 64), Some(d), "{ctx}");
            }
            _ => {
                // TPC-C: "tpcc DISTRICT row 2" holds d_id 3; an ORDER row
                // its o_id and district; an ORDER-LINE its ol_number.
                if let Some((table, i)) = what
                    .strip_prefix("tpcc ")
                    .and_then(|r| r.split_once(" row "))
                    .and_then(|(t, i)| Some((t, i.parse::<u64>().ok()?)))
                {
                    assert!(
                        ["DISTRICT", "CUSTOMER", "ITEM", "STOCK"].contains(&table),
                        "{ctx}"
                    );
                    assert!(d < 64, "{ctx}");
                    if table != "CUSTOMER" {
                        assert_eq!(rd(start), i + 1, "{ctx}: its id column");
                    }
                } else if let Some(r) = what.strip_prefix("tpcc ORDER-LINE row (district ") {
                    let n: u64 = r
                        .rsplit("ol_number ")
                        .next()
                        .unwrap()
                        .trim_end_matches(')')
                        .parse()
                        .unwrap();
                    assert_eq!(rd(start + 24), n, "{ctx}: its ol_number");
                } else if let Some(r) = what.strip_prefix("tpcc ORDER row (district ") {
                    let (d_id, o) = r.trim_end_matches(')').split_once(", o_id ").unwrap();
                    assert_eq!(
                        (rd(start), rd(start + 8)),
                        (o.parse().unwrap(), d_id.parse().unwrap()),
                        "{ctx}"
                    );
                } else {
                    assert!(what.starts_with("tpcc "), "{ctx}");
                }
            }
        }
    }
    assert!(interior >= 3, "most points name an object inside the heap");
}

#[test]
fn same_seed_same_points_same_verdicts() {
    let opts = CrashOptions {
        points: PointSel::Sampled(150),
        torn: true,
        ..CrashOptions::default()
    };
    for info in [&REDO, &REDO_PACKED, &REDO_HOME_FIRST] {
        let a = run(info, 200, &opts);
        let b = run(info, 200, &opts);
        assert_eq!(a.verdicts, b.verdicts, "{}", info.name);
        assert_eq!(a.first_violation, b.first_violation);
        assert_eq!(a.crash_points_tested, b.crash_points_tested);
        let clean = a.verdicts.iter().filter(|v| v.1.is_none()).count();
        assert_eq!(clean, 150);
    }
    let a = run(&REDO, 200, &opts);
    let c = crash::crashtest_with(&REDO, spec(&REDO, 200, 4), &opts, &mut |_, _| {}).unwrap();
    assert_ne!(
        a.verdicts.iter().map(|v| v.0).collect::<Vec<_>>(),
        c.verdicts.iter().map(|v| v.0).collect::<Vec<_>>()
    );
}

/// Verdicts, violation reports and replay lines are the same with one
/// host thread or two, and with the recovery dedup on or off (it is exact),
/// for correct schemes, mutants and the native system.
#[test]
fn verdicts_do_not_depend_on_host_threads_or_dedup() {
    let base = CrashOptions {
        torn: true,
        recovery_crashes: 2,
        ..CrashOptions::default()
    };
    let mut ideal = spec(&durasim::schemes::ideal::INFO, 60, 3);
    ideal.scheme = "ideal".into();
    let cases: Vec<(&'static SchemeInfo, RunSpec)> = vec![
        (&REDO, spec(&REDO, 120, 3)),
        (&REDO_HOME_FIRST, spec(&REDO_HOME_FIRST, 120, 3)),
        (&REDO_CLEAR_FIRST, spec(&REDO_CLEAR_FIRST, 80, 3)),
        (&durasim::schemes::ideal::INFO, ideal),
    ];
    for (info, s) in cases {
        let go = |host_threads, dedup| {
            let o = CrashOptions {
                host_threads,
                dedup_recoveries: dedup,
                verify_dedup: dedup,
                ..base.clone()
            };
            crash::crashtest_with(info, s.clone(), &o, &mut |_, _| {}).unwrap()
        };
        let one = go(1, true);
        assert_eq!(one.dedup_mismatches, 0, "{}", info.name);
        for other in [go(2, true), go(2, false)] {
            assert_eq!(one.verdicts, other.verdicts, "{}", info.name);
            assert_eq!(one.first_violation, other.first_violation, "{}", info.name);
            assert_eq!(one.violations, other.violations);
            assert_eq!(one.recovery_crashes_tested, other.recovery_crashes_tested);
            assert_eq!(
                one.recovery_crash_violations,
                other.recovery_crash_violations
            );
        }
        if info.name == "redo-test" {
            assert!(one.deduplicated_points > 0, "dedup never applied");
            // Crashes inside the log replay are proven, not re-run
            // (crash/war.rs), and verified against re-runs above.
            assert!(one.recovery_reruns_elided > 0, "no re-run elided");
            assert!(one.recovery_reruns_elided < one.recovery_crashes_tested);
        }
    }
}

/// Invariant checking as shipped (memoised per matched prefix, shown
/// incrementally on btree) gives the verdicts and reports of the full
/// checker run at every point, with one host thread or two, for a correct
/// scheme and a failing one.
#[test]
fn incremental_invariant_checking_is_exact() {
    for info in [&REDO, &REDO_HOME_FIRST] {
        let mut s = spec(info, 150, 3);
        s.workload = "btree".into();
        let go = |host_threads, memo_invariants| {
            let o = CrashOptions {
                torn: true,
                recovery_crashes: 2,
                host_threads,
                memo_invariants,
                ..CrashOptions::default()
            };
            crash::crashtest_with(info, s.clone(), &o, &mut |_, _| {}).unwrap()
        };
        let full = go(1, false);
        assert_eq!(full.violations == 0, info.name == "redo-test");
        for other in [go(1, true), go(2, true)] {
            assert_eq!(full.verdicts, other.verdicts, "{}", info.name);
            assert_eq!(full.first_violation, other.first_violation);
            assert_eq!(full.violations, other.violations);
            assert_eq!(full.recovery_crashes_tested, other.recovery_crashes_tested);
        }
    }
}

/// Parse `--crash-at K [--tear-mask M]` from a replay line.
fn replay_point(line: &str) -> PointSel {
    let w: Vec<&str> = line.split_whitespace().collect();
    let get = |k: &str| w.iter().position(|x| *x == k).map(|i| w[i + 1]);
    PointSel::Single {
        point: get("--crash-at").unwrap().parse().unwrap(),
        tear_mask: get("--tear-mask").map(|m| crash::points::parse_tear_mask(m).unwrap()),
    }
}

#[test]
fn replay_line_reproduces_a_torn_violation() {
    let torn = CrashOptions {
        points: PointSel::Sampled(400),
        torn: true,
        ..exhaustive()
    };
    let r = run(&REDO_PACKED, 200, &torn);
    let v = r.first_violation.unwrap();
    let single = CrashOptions {
        points: replay_point(&v.replay),
        ..exhaustive()
    };
    let again = run(&REDO_PACKED, 200, &single);
    assert_eq!(again.crash_points_tested, 1);
    assert_eq!(again.first_violation.unwrap(), v);
}

#[test]
fn replay_line_reproduces_via_the_cli() {
    let dir = std::env::temp_dir().join(format!("durasim-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let first = dir.join("first.json");
    let args = [
        "durasim",
        "crashtest",
        "--scheme",
        "ideal",
        "--workload",
        "vector",
        "--tx",
        "200",
        "--points",
        "60",
        "--seed",
        "9",
        "--set",
        "workload.initial_items=32",
        "--json",
        first.to_str().unwrap(),
    ];
    let code = main_with(<Cli as clap::Parser>::try_parse_from(args).unwrap()).unwrap();
    assert_eq!(code, 1);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    assert_eq!(doc["crash_points_tested"], 60);
    assert!(doc["violations"].as_u64().unwrap() > 0);
    assert!(doc["points_per_second"].as_f64().unwrap() > 0.0);
    let fv = &doc["first_violation"];
    let replay = fv["replay"].as_str().unwrap();
    assert!(
        replay.contains("--set workload.initial_items=32"),
        "{replay}"
    );
    let second = dir.join("second.json");
    let mut words: Vec<String> = replay.split_whitespace().map(String::from).collect();
    words.push("--json".into());
    words.push(second.to_str().unwrap().into());
    let code = main_with(<Cli as clap::Parser>::try_parse_from(words).unwrap()).unwrap();
    assert_eq!(code, 1);
    let doc2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(doc2["crash_points_tested"], 1);
    assert_eq!(&doc2["first_violation"], fv);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_input_is_exit_code_2() {
    let bad = [
        vec!["--points", "some"],
        vec!["--tear-mask", "3"],
        vec!["--crash-at", "99999999"],
        vec!["--recovery-crashes", "x"],
        vec!["--set", "nope=1"],
    ];
    for extra in bad {
        let mut args = vec![
            "durasim",
            "crashtest",
            "--scheme",
            "ideal",
            "--workload",
            "vector",
            "--tx",
            "20",
        ];
        args.extend(extra.iter().copied());
        let err = main_with(<Cli as clap::Parser>::try_parse_from(&args).unwrap()).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{args:?}: {err}");
    }
    let err = main_with(
        <Cli as clap::Parser>::try_parse_from([
            "durasim",
            "crashtest",
            "--scheme",
            "nosuch",
            "--workload",
            "vector",
        ])
        .unwrap(),
    )
    .unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("ideal"));
}

/// Speed figure (not a timed assertion): `cargo test --release --test
/// crash_oracle crash_speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn crash_speed() {
    for (info, torn, wl) in [
        (&REDO, false, "vector"),
        (&REDO, false, "btree"),
        (&REDO, true, "btree"),
        (&REDO_LAZY, false, "btree"),
    ] {
        let mut s = spec(info, 1000, 1);
        s.workload = wl.into();
        s.params.set_str("workload.initial_items", "1024").unwrap();
        s.params.set_str("run.check_reads", "false").unwrap();
        let opts = CrashOptions {
            torn,
            ..CrashOptions::default()
        };
        let r = crash::crashtest_with(info, s, &opts, &mut |_, _| {}).unwrap();
        assert_eq!(r.violations, 0);
        println!(
            "{} {wl} 1000 tx 2 threads torn={torn}: {} points ({} recovery crashes) in {:.3} s = {:.0} points/s",
            info.name,
            r.crash_points_tested,
            r.recovery_crashes_tested,
            r.check_host_seconds,
            r.points_per_second
        );
    }
}

#[test]
fn crashtest_binary_contract() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_durasim"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let base = [
        "crashtest",
        "--scheme",
        "ideal",
        "--workload",
        "btree",
        "--tx",
        "200",
    ];
    let (code, out, err) = run(&[&base[..], &["--points", "all", "--json", "-"]].concat());
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "crash_points_tested",
        "violations",
        "first_violation",
        "points_per_second",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(
        v["crash_points_tested"].as_u64().unwrap(),
        v["persist_events"].as_u64().unwrap() + 1
    );
    assert!(v["first_violation"]["replay"]
        .as_str()
        .unwrap()
        .starts_with("durasim crashtest --scheme ideal --workload btree"));
    let (code, out, _) = run(&base);
    assert_eq!(code, 1);
    assert!(out.contains("replay: durasim crashtest"), "{out}");
    // The negative control reads as expected, not as an alarming FAIL.
    assert!(
        !out.contains("FAIL") && out.contains("as expected"),
        "{out}"
    );
    for bad in [
        &["--points", "x"][..],
        &["--crash-at", "0", "--tear-mask", "0x100"],
    ] {
        let (code, _, err) = run(&[&base[..], bad].concat());
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(err.contains("--"), "{err}");
    }
}
