//! Unit tests: recovery against the reference recovery, the buffers' rules,
//! the ordering rule.

use super::recovery::MorScan;
use super::*;
use crate::mem::MemWrite;
use crate::recovery::{ResumableScan, ScanIo};
use crate::schemes::kit::hw_log::{
    decode, encode, head_to_end, scan_head, ENTRY_BYTES, HEADER_BYTES, TYPE_REDO,
};
use crate::schemes::RecoveryReport;

#[derive(Default)]
struct TxLog {
    commit_at: Option<usize>,
    counter: u64,
    redo_entries: u64,
    recs: Vec<usize>,
}

/// The recovery before it became a resumable scan (the reference of the
/// differential test); `check_counter` = morlog-dp without the
/// ignore-counter mutant.
fn reference_recover(
    img: &mut dyn MemWrite,
    p: &Params,
    ring: Ring,
    check_counter: bool,
) -> RecoveryReport {
    let (head, newest) = scan_head(&*img, &ring);
    let mut recs = Vec::new();
    let mut seq = head;
    let mut buf = [0u8; ENTRY_BYTES as usize];
    while seq < head + ring.slots {
        img.read_bytes(ring.slot_addr(seq), &mut buf);
        match decode(&ring, seq, &buf) {
            Some(r) => recs.push(r),
            None => break,
        }
        seq += 1;
    }
    let mut txs: FxHashMap<(u64, u32), TxLog> = FxHashMap::default();
    let mut commits = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let t = txs.entry((r.core, r.txid)).or_default();
        match r.kind {
            TYPE_COMMIT => {
                if t.commit_at.is_none() {
                    t.commit_at = Some(i);
                    t.counter = r.redo;
                    commits.push((r.core, r.txid));
                }
            }
            TYPE_REDO => {
                // The counter covers the redo entries after the record.
                if t.commit_at.is_some() {
                    t.redo_entries += 1;
                }
                t.recs.push(i);
            }
            _ => t.recs.push(i),
        }
    }
    // Persisted transactions, in commit order (the commit records' order).
    let mut persisted = rustc_hash::FxHashSet::default();
    let mut mismatches = 0u64;
    for key in &commits {
        let t = &txs[key];
        if check_counter && t.counter != t.redo_entries {
            // This one and every later one are not persisted.
            mismatches += 1;
            break;
        }
        persisted.insert(*key);
    }
    let (mut redone, mut undone) = (0u64, 0u64);
    for key in &commits {
        if !persisted.contains(key) {
            continue;
        }
        for &i in &txs[key].recs {
            img.write_u64(recs[i].addr, recs[i].redo);
            redone += 1;
        }
    }
    for r in recs.iter().rev().filter(|r| r.kind == TYPE_DATA) {
        if !persisted.contains(&(r.core, r.txid)) {
            img.write_u64(r.addr, r.undo);
            undone += 1;
        }
    }
    head_to_end(&ring, newest, head, seq, &mut |a, d| img.write_bytes(a, d));
    let lines_read = 2 + (seq - head + 1).div_ceil(2);
    let lines_written = redone + undone + u64::from(seq > head);
    RecoveryReport {
        bytes_read: lines_read * 64,
        bytes_written: lines_written * 8,
        modeled_ns: crate::schemes::kit::log::recovery_ns(p, lines_read, lines_written),
        details: vec![
            ("log_records_scanned", (seq - head) as f64),
            ("words_redone", redone as f64),
            ("words_undone", undone as f64),
            ("committed_tx", commits.len() as f64),
            ("persisted_tx", persisted.len() as f64),
            ("ulog_counter_mismatches", mismatches as f64),
        ],
    }
}

/// A write-through image that logs every write in order.
struct Logged {
    img: crate::mem::SparseImage,
    writes: Vec<(Addr, Vec<u8>)>,
}

impl crate::mem::MemRead for Logged {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.img.read_bytes(addr, buf)
    }
    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        self.img.zeros_until(addr, end)
    }
}

impl MemWrite for Logged {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        self.writes.push((addr, data.to_vec()));
        self.img.write_bytes(addr, data)
    }
}

/// Differential: on seeded logs of random records over a few words —
/// transactions interleaved, entries after their commit record (also to
/// words a later-committed transaction wrote), duplicate commit records,
/// morlog-dp counters short, met and exceeded, a head past 0, torn ends —
/// every prefix of the log recovers with the scan to the reference's
/// image, with the same writes as a multiset (so the same count and
/// digest) and the same report; and resuming the scan record by record
/// (restarting it where it asks) ends in the same state as scanning the
/// whole prefix at once.
#[test]
fn scan_recovery_equals_the_reference_on_seeded_logs() {
    use crate::mem::MemRead;
    use rand::{Rng, SeedableRng};
    let p = Params::defaults(&crate::schemes::all_params());
    let ring = Ring {
        base: 1 << 20,
        slots: 64,
    };
    let (mut restarts, mut compared) = (0u64, 0u64);
    let (mut withdrawals, mut spilled_runs) = (0u64, 0u64);
    for seed in 0..1000u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let check_counter = seed % 3 != 0;
        let head = if seed % 4 == 0 { 5 } else { 0 };
        let mut base = crate::mem::SparseImage::new();
        if head > 0 {
            base.write_bytes(
                ring.header_addr(1),
                &crate::schemes::kit::hw_log::header_bytes(head),
            );
        }
        for w in 0..6u64 {
            base.write_u64(0x1000 + 8 * w, 100 + w);
        }
        let n = rng.gen_range(1..40u64);
        for seq in head..head + n {
            let core = rng.gen_range(0..2u64);
            let txid = rng.gen_range(1..5u32);
            let kind = match rng.gen_range(0..10) {
                0..=2 => TYPE_COMMIT,
                3..=5 => TYPE_REDO,
                _ => TYPE_DATA,
            };
            let r = Record {
                kind,
                core,
                txid,
                addr: 0x1000 + 8 * rng.gen_range(0..6u64),
                undo: rng.gen_range(0..1000),
                redo: if kind == TYPE_COMMIT {
                    rng.gen_range(0..3)
                } else {
                    rng.gen_range(0..1000)
                },
            };
            base.write_bytes(ring.slot_addr(seq), &encode(&ring, seq, &r));
        }
        // Every prefix: the log cut after `m` records.
        for m in 0..=n {
            let mut img = base.clone();
            for seq in head + m..head + n {
                img.write_bytes(ring.slot_addr(seq), &[0u8; ENTRY_BYTES as usize]);
            }
            let mut a = Logged {
                img: img.clone(),
                writes: Vec::new(),
            };
            let mut b = Logged {
                img: img.clone(),
                writes: Vec::new(),
            };
            let scan = Box::new(MorScan::fresh(ring, check_counter));
            let ra = crate::recovery::recover_by_scan(scan, &mut a, &p).unwrap();
            let rb = reference_recover(&mut b, &p, ring, check_counter);
            let what = format!("seed {seed} prefix {m}");
            assert_eq!(
                (ra.bytes_read, ra.bytes_written, &ra.details),
                (rb.bytes_read, rb.bytes_written, &rb.details),
                "{what}"
            );
            let mut wa = a.writes.clone();
            let mut wb = b.writes.clone();
            wa.sort();
            wb.sort();
            assert_eq!(wa, wb, "{what}");
            for (addr, _) in &wb {
                assert_eq!(
                    a.img.read_u64(*addr),
                    b.img.read_u64(*addr),
                    "{what} {addr:#x}"
                );
            }
            compared += 1;
        }
        // Resumed record by record over the growing log (a restart that
        // the io refuses ends the run: the driver would start afresh).
        let mut scan = MorScan::fresh(ring, check_counter);
        let mut img = base.clone();
        for seq in head..head + n {
            img.write_bytes(ring.slot_addr(seq), &[0u8; ENTRY_BYTES as usize]);
        }
        let mut homes = crate::recovery::writes::Writes::default();
        // The driver's view of the home writes: per resume, its home
        // writes, then its replacements (a withdrawal shows the crash
        // image again).
        let mut view: FxHashMap<Addr, u64> = FxHashMap::default();
        for m in 0..=n {
            if m > 0 {
                let seq = head + m - 1;
                let b = base.clone();
                let mut buf = [0u8; ENTRY_BYTES as usize];
                b.read_bytes(ring.slot_addr(seq), &mut buf);
                img.write_bytes(ring.slot_addr(seq), &buf);
            }
            let mut io = TestIo::new(&img, &mut homes);
            scan.resume(0, &mut io).unwrap();
            restarts += u64::from(io.restarted);
            withdrawals += io.withdrawals;
            spilled_runs += u64::from(scan.spilled > 0);
            io.apply_to(&mut view);
            // Same state as the whole prefix scanned at once.
            let mut whole = MorScan::fresh(ring, check_counter);
            let mut homes2 = crate::recovery::writes::Writes::default();
            let mut io2 = TestIo::new(&img, &mut homes2);
            whole.resume(0, &mut io2).unwrap();
            let fin = |s: &MorScan| {
                let mut v = Vec::new();
                s.finish(&mut |a, d| v.push((a, d.to_vec())));
                v
            };
            let what = format!("seed {seed} resumed to {m}");
            assert_eq!(fin(&scan), fin(&whole), "{what}");
            assert_eq!(scan.report(&p).details, whole.report(&p).details, "{what}");
            let pieces = |w: &crate::recovery::writes::Writes| {
                w.pieces(w.len())
                    .map(|(a, d)| (a, d.to_vec()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(pieces(&homes), pieces(&homes2), "{what}");
            let ctx = (&p, ring, check_counter);
            assert_view_recovers(&scan, &homes, &view, &img, ctx, &what);
        }
    }
    assert!(
        compared > 12_000 && restarts > 25 && withdrawals > 100 && spilled_runs > 2_000,
        "{compared} {restarts} {withdrawals} {spilled_runs}"
    );
}

/// The driver's recovered image of a resumed scan (the crash image,
/// the home writes as the driver's view keeps them, then the finish)
/// is the reference recovery's, and the writes (`homes` kept as the
/// from-scratch recovery keeps them, then the finish) are its multiset.
fn assert_view_recovers(
    scan: &MorScan,
    homes: &crate::recovery::writes::Writes,
    view: &FxHashMap<Addr, u64>,
    img: &crate::mem::SparseImage,
    (p, ring, check_counter): (&Params, Ring, bool),
    what: &str,
) {
    use crate::mem::MemRead;
    let mut fast = img.clone();
    for (&a, &v) in view {
        fast.write_u64(a, v);
    }
    let mut ours: Vec<(Addr, Vec<u8>)> = homes
        .pieces(homes.len())
        .map(|(a, d)| (a, d.to_vec()))
        .collect();
    scan.finish(&mut |a, d| {
        fast.write_bytes(a, d);
        ours.push((a, d.to_vec()));
    });
    let mut r = Logged {
        img: img.clone(),
        writes: Vec::new(),
    };
    reference_recover(&mut r, p, ring, check_counter);
    for a in r.writes.iter().map(|w| w.0).chain(view.keys().copied()) {
        assert_eq!(fast.read_u64(a), r.img.read_u64(a), "{what} {a:#x}");
    }
    ours.sort();
    r.writes.sort();
    assert_eq!(ours, r.writes, "{what}");
}

/// On a real morlog-dp log (btree, 2 threads: commits stay unpersisted
/// behind one whose ULog line stays in an L1), the scan resumed after
/// every persist event (from scratch after a header write, as the
/// driver does) spills and withdraws undo words, and at every 16th
/// event the driver's recovered image is the reference recovery's.
#[test]
fn spilled_undo_on_a_real_morlog_dp_log() {
    let mut s = crate::engine::RunSpec::new("morlog-dp", "btree").unwrap();
    s.threads = 2;
    s.tx = 300;
    s.record_history = true;
    let mut e = crate::engine::Engine::new(s).unwrap();
    e.run(&mut |_| {}).unwrap();
    e.finish();
    let ring = Ring::new(&e.ctx.layout, e.params.u64("morlog-dp.log_bytes"));
    let log = &e.ctx.nvm.persist_log;
    let mut img = crate::mem::SparseImage::new();
    let mut scan = MorScan::fresh(ring, true);
    let mut homes = crate::recovery::writes::Writes::default();
    let mut view = FxHashMap::default();
    let (mut spilled_max, mut withdrawals, mut checked) = (0, 0, 0);
    for (k, ev) in log.events().iter().enumerate() {
        img.write_bytes(ev.addr, log.data(ev));
        if ev.addr < ring.base + crate::schemes::kit::hw_log::HEADER_BYTES
            && ev.addr + ev.len as u64 > ring.base
        {
            scan = MorScan::fresh(ring, true);
            homes.clear();
            view.clear();
        }
        let mut io = TestIo::new(&img, &mut homes);
        scan.resume(0, &mut io).unwrap();
        assert!(!io.restarted, "event {k}");
        withdrawals += io.withdrawals;
        io.apply_to(&mut view);
        spilled_max = spilled_max.max(scan.spilled);
        if k % 16 == 0 {
            let what = format!("event {k}");
            assert_view_recovers(&scan, &homes, &view, &img, (&e.params, ring, true), &what);
            checked += 1;
        }
    }
    assert!(
        spilled_max > 100 && withdrawals > 100 && checked > 100,
        "{spilled_max} {withdrawals} {checked}"
    );
}

/// A [`ScanIo`] that keeps marked home writes as the from-scratch
/// recovery does (a mark appends the new home writes, then applies the
/// replacements), records the marked ones of this resume for the
/// driver's view, and always allows a restart.
struct TestIo<'a> {
    img: &'a crate::mem::SparseImage,
    pending: Vec<(Addr, Vec<u8>)>,
    pending_rehomes: Vec<(Addr, Vec<u8>, Option<Vec<u8>>)>,
    homes: &'a mut crate::recovery::writes::Writes,
    resume_homes: Vec<(Addr, Vec<u8>)>,
    resume_rehomes: Vec<(Addr, Option<Vec<u8>>)>,
    withdrawals: u64,
    restarted: bool,
}

impl<'a> TestIo<'a> {
    fn new(
        img: &'a crate::mem::SparseImage,
        homes: &'a mut crate::recovery::writes::Writes,
    ) -> Self {
        TestIo {
            img,
            pending: Vec::new(),
            pending_rehomes: Vec::new(),
            homes,
            resume_homes: Vec::new(),
            resume_rehomes: Vec::new(),
            withdrawals: 0,
            restarted: false,
        }
    }
}

impl TestIo<'_> {
    /// This resume's marked writes onto the driver's view: its home
    /// writes, then its replacements (a withdrawal shows the crash
    /// image again); a restart starts the view afresh.
    fn apply_to(&self, view: &mut FxHashMap<Addr, u64>) {
        if self.restarted {
            view.clear();
        }
        let word = |d: &[u8]| u64::from_le_bytes(d.try_into().unwrap());
        for (a, d) in &self.resume_homes {
            view.insert(*a, word(d));
        }
        for (a, d) in &self.resume_rehomes {
            match d {
                Some(d) => view.insert(*a, word(d)),
                None => view.remove(a),
            };
        }
    }
}

impl crate::mem::MemRead for TestIo<'_> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.img.read_bytes(addr, buf)
    }
    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        self.img.zeros_until(addr, end)
    }
}

impl ScanIo for TestIo<'_> {
    fn home(&mut self, addr: Addr, data: &[u8]) {
        self.pending.push((addr, data.to_vec()));
    }
    fn mark(&mut self) {
        for (a, d) in self.pending.drain(..) {
            self.homes.push(a, &d);
            self.resume_homes.push((a, d));
        }
        for (a, old, new) in self.pending_rehomes.drain(..) {
            assert!(self.homes.replace(a, &old, new.as_deref()), "{a:#x}");
            self.withdrawals += u64::from(new.is_none());
            self.resume_rehomes.push((a, new));
        }
    }
    fn restart(&mut self) -> bool {
        self.pending.clear();
        self.pending_rehomes.clear();
        self.homes.clear();
        self.resume_homes.clear();
        self.resume_rehomes.clear();
        self.restarted = true;
        true
    }
    fn rehome(&mut self, addr: Addr, old: &[u8], new: Option<&[u8]>) {
        self.pending_rehomes
            .push((addr, old.to_vec(), new.map(<[u8]>::to_vec)));
    }
}

#[test]
fn n_is_below_the_traversal() {
    let p = Params::defaults(&[PARAMS]);
    let n = ur_delay_cycles(&p);
    let trav = p.u64("cache.l1_latency_cycles")
        + p.u64("cache.l2_latency_cycles")
        + p.u64("cache.llc_latency_cycles");
    assert_eq!(n + 1, trav);
}

/// The buffers' rules on hand-made transactions (tiny 2-way L1 of 8
/// sets: lines 512 B apart conflict).
#[test]
fn buffers_coalesce_keep_in_l1_and_discard() {
    use crate::workloads::Op;
    let run = |scheme: &str, ops: &dyn Fn(u64) -> Vec<Op>| {
        let mut s = crate::engine::RunSpec::new(scheme, "vector").unwrap();
        s.threads = 1;
        for (k, v) in [("cache.l1_size_bytes", "1KB"), ("cache.l1_ways", "2")] {
            s.params.set_str(k, v).unwrap();
        }
        let mut e = crate::engine::Engine::new(s).unwrap();
        let base = e.ctx.layout.thread_base(0) + (32 << 20);
        e.run_ops(0, &ops(base)).unwrap();
        let st = e.scheme.stats();
        move |k: &str| st.iter().find(|x| x.0 == k).unwrap().1
    };
    let st = |a: u64, v: u64| Op::Store { addr: a, value: v };
    let wait = Op::Compute { n: 5000 };
    let load = |a: u64| Op::Load {
        addr: a,
        value: 0,
        dep: 0,
    };
    // Two stores within N cycles: one entry, coalesced.
    let s = run("morlog", &|b| vec![st(b, 1), st(b, 2)]);
    assert_eq!(
        (
            s("undo_redo_entries_created"),
            s("undo_redo_buffer_coalesced")
        ),
        (1.0, 1.0)
    );
    // The second store after the entry persisted: redo kept in the L1,
    // logged as a redo entry at commit.
    let s = run("morlog", &|b| vec![st(b, 1), wait, st(b, 2)]);
    assert_eq!(s("undo_redo_entries_created"), 1.0);
    assert_eq!(s("redo_kept_in_l1"), 1.0);
    assert_eq!(s("redo_entries_at_commit"), 1.0);
    // The line leaves the L1 (two conflicting lines): a redo entry; the
    // transaction updates the line again: the entry is discarded and the
    // word is ULog again (no new undo+redo entry).
    let s = run("morlog", &|b| {
        vec![
            st(b, 1),
            wait,
            st(b, 2),
            load(b + 512),
            load(b + 1024),
            wait,
            st(b + 8, 3),
            wait,
            st(b, 4),
        ]
    });
    assert_eq!(s("redo_entries_on_l1_evict"), 1.0);
    assert_eq!(s("redo_buffer_discarded"), 1.0);
    assert_eq!(s("undo_redo_entries_created"), 2.0, "b and b+8 only");
    assert_eq!(
        s("redo_entries_at_commit"),
        1.0,
        "b's newest redo at commit"
    );
    // A silent store logs nothing.
    let s = run("morlog", &|b| vec![st(b, 0)]);
    assert_eq!(s("silent_log_writes_dropped"), 1.0);
    assert_eq!(s("log_entries_created"), 0.0);
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The ordering rule over random store sequences: a word's value
    /// reaches its home only after the undo+redo entry of the
    /// transaction that stored it is in the log (tiny caches and a
    /// short scan period force steals and force write-backs).
    #[test]
    fn no_home_write_before_its_undo_is_persisted(
        txs in prop::collection::vec(prop::collection::vec(0u64..96, 1..16), 1..30),
        dp in any::<bool>(),
    ) {
        let scheme = if dp { "morlog-dp" } else { "morlog" };
        let mut s = crate::engine::RunSpec::new(scheme, "vector").unwrap();
        s.threads = 1;
        s.record_history = true;
        for (k, v) in [
            ("cache.l1_size_bytes", "1KB"),
            ("cache.l1_ways", "2"),
            ("cache.l2_size_bytes", "2KB"),
            ("cache.l2_ways", "2"),
            ("cache.llc_size_bytes", "4KB"),
            ("cache.llc_ways", "2"),
        ] {
            s.params.set_str(k, v).unwrap();
        }
        s.params.set_str(&format!("{scheme}.period_cycles"), "1000").unwrap();
        let mut e = crate::engine::Engine::new(s).unwrap();
        // 12 lines one L1-set stride apart (conflicts), 8 words each.
        let base = e.ctx.layout.thread_base(0) + (32 << 20);
        let word = |w: u64| base + (w / 8) * 512 + (w % 8) * 8;
        let mut origin = FxHashMap::default();
        let mut v = 1u64 << 40;
        for (t, words) in txs.iter().enumerate() {
            let ops: Vec<crate::workloads::Op> = words
                .iter()
                .map(|&w| {
                    v += 1;
                    origin.insert(v, t as u32 + 1);
                    crate::workloads::Op::Store { addr: word(w), value: v }
                })
                .collect();
            e.run_ops(0, &ops).unwrap();
        }
        // Drain the caches: every stored word reaches home (through the
        // scheme's write-back path), so the check is never vacuous even
        // when a short run sees no eviction or force-write-back pass.
        e.finish();
        let layout = e.ctx.layout.clone();
        let log_bytes = e.spec.params.u64(&format!("{scheme}.log_bytes"));
        let ring = Ring::new(&layout, log_bytes);
        let log = &e.ctx.nvm.persist_log;
        let mut undo_persisted = rustc_hash::FxHashSet::default();
        let mut home_writes = 0;
        for ev in log.events() {
            let data = log.data(ev);
            let slots = ring.base + HEADER_BYTES;
            if ev.addr >= slots && ev.addr < slots + ring.slots * ENTRY_BYTES {
                let seq = (ev.addr - slots) / ENTRY_BYTES;
                if let Some(r) = decode(&ring, seq, data.try_into().unwrap()) {
                    if r.kind == TYPE_DATA {
                        undo_persisted.insert((r.addr, r.txid));
                    }
                }
            } else if ev.addr < layout.home_limit {
                for (i, b) in data.chunks_exact(8).enumerate() {
                    let val = u64::from_le_bytes(b.try_into().unwrap());
                    if let Some(&tx) = origin.get(&val) {
                        home_writes += 1;
                        let a = ev.addr + 8 * i as u64;
                        prop_assert!(
                            undo_persisted.contains(&(a, tx)),
                            "{scheme}: {a:#x} = {val:#x} of tx {tx} home before its undo"
                        );
                    }
                }
            }
        }
        prop_assert!(home_writes > 0, "no stored word reached home");
    }
}
