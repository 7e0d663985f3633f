use super::layout::{parse_record, record, tag, SLOT_BYTES};
use super::recovery::audit;
use super::*;
use crate::cache::hierarchy::WritebackCause;
use crate::mem::{MemRead, MemWrite, MemoryController, Overlay};
use crate::schemes::kit::log::recovery_ns;
use crate::schemes::RecoveryReport;

/// One core, a 1-set x 2-way AIT cache, a small NVM.
fn setup() -> (Ehou, MemCtx, Params) {
    let mut p = Params::defaults(&[PARAMS]);
    for (k, v) in [
        ("nvm.capacity_bytes", "64MiB"),
        ("dimm.ait_cache_sets", "1"),
        ("dimm.ait_cache_ways", "2"),
        ("ehou.pool_lines", "64"),
        ("ehou.log_entries_per_core", "64"),
    ] {
        p.set_str(k, v).unwrap();
    }
    let layout = Layout::new(p.u64("nvm.capacity_bytes"), reserved_bytes(&p), 1).unwrap();
    let ctx = MemCtx {
        nvm: MemoryController::nvm(&p, true),
        dram: MemoryController::dram(&p),
        layout: layout.clone(),
        cores: 1,
        freq_ghz: 2.5,
        pending_error: None,
        write_back_request: Vec::new(),
    };
    (new_ehou(&p, &layout).unwrap(), ctx, p)
}

/// Store `v` into word 0 of `line` in the running transaction and
/// write the line back (it reaches the controller before commit).
fn store_and_write_back(e: &mut Ehou, ctx: &mut MemCtx, line: Addr, v: u64) {
    let mut ext = LineExt::default();
    let ev = Store {
        core: 0,
        addr: line,
        old: 0,
        new: v,
        in_tx: true,
        now: 0,
    };
    e.store(ctx, ev, &mut ext);
    let mut data = [0u8; 64];
    data[..8].copy_from_slice(&v.to_le_bytes());
    let ev = Writeback {
        core: 0,
        line_addr: line,
        data: &data,
        ext: &ext,
        cause: WritebackCause::Eviction,
        now: 0,
    };
    e.writeback(ctx, ev);
}

/// Recover a copy of the durable image; returns (word 0 of each line,
/// recovery details).
fn crash(ctx: &MemCtx, p: &Params, lines: &[Addr]) -> (Vec<u64>, Vec<(&'static str, f64)>) {
    let mut ov = Overlay::new(ctx.nvm.media());
    let r = recover(&mut ov, p, &ctx.layout).unwrap();
    (lines.iter().map(|&l| ov.read_u64(l)).collect(), r.details)
}

fn detail(d: &[(&'static str, f64)], k: &str) -> f64 {
    d.iter().find(|x| x.0 == k).unwrap().1
}

/// A write-through image that logs every write in order.
struct Logged<'a> {
    ov: Overlay<'a, crate::mem::SparseImage>,
    writes: Vec<(Addr, Vec<u8>)>,
}

impl MemRead for Logged<'_> {
    fn read_bytes(&self, addr: Addr, buf: &mut [u8]) {
        self.ov.read_bytes(addr, buf)
    }
    fn zeros_until(&self, addr: Addr, end: Addr) -> Addr {
        self.ov.zeros_until(addr, end)
    }
}

impl MemWrite for Logged<'_> {
    fn write_bytes(&mut self, addr: Addr, data: &[u8]) {
        self.writes.push((addr, data.to_vec()));
        self.ov.write_bytes(addr, data)
    }
}

/// The slot-by-slot, B-tree recovery this module shipped before the
/// page-at-a-time scan (the reference of the differential test).
fn recover_reference(
    img: &mut dyn MemWrite,
    p: &Params,
    layout: &Layout,
) -> Result<RecoveryReport> {
    let g = Geometry::new(p, layout);
    let (mut read, mut written) = (0u64, 0u64);
    let commits: Vec<u64> = (0..layout.threads)
        .map(|c| img.read_u64(g.commit_addr(c)))
        .collect();
    read += layout.threads as u64;
    let committed = |tag: u64| {
        let (c, s) = ((tag >> TXSEQ_BITS) as usize, tag & ((1 << TXSEQ_BITS) - 1));
        c < commits.len() && s != 0 && s <= commits[c]
    };
    // 1. The AIT in the media (non-zero entries).
    // The directory names the AIT pages to read.
    let mut media: std::collections::BTreeMap<Addr, u64> = std::collections::BTreeMap::new();
    let ait_pages = (g.ait_addr(g.home_limit) - g.ait_base).div_ceil(4096);
    let dir_end = g.dir_base + ait_pages.div_ceil(64) * 8;
    let mut a = g.dir_base;
    let mut buf = vec![0u8; 4096];
    while a < dir_end {
        a = img.zeros_until(a, dir_end);
        if a >= dir_end {
            break;
        }
        a -= (a - g.dir_base) % 8;
        let w = img.read_u64(a);
        read += 1;
        let mut bits = w;
        while bits != 0 {
            let page = (a - g.dir_base) / 8 * 64 + bits.trailing_zeros() as u64;
            bits &= bits - 1;
            let pa = g.ait_base + page * 4096;
            img.read_bytes(pa, &mut buf);
            read += 64;
            for (i, e) in buf.chunks_exact(8).enumerate() {
                let v = u64::from_le_bytes(e.try_into().unwrap());
                let line = (page * 512 + i as u64) * 64;
                if v != 0 && line < g.home_limit {
                    media.insert(line, v);
                }
            }
        }
        a += 8;
    }
    let mut map = media.clone();
    // 2. The overflow log of each core's last committed transaction.
    let mut replayed = 0u64;
    for (c, &cs) in commits.iter().enumerate() {
        if cs == 0 {
            continue;
        }
        for i in 0..g.log_entries {
            let mut b = [0u8; 32];
            img.read_bytes(g.log_addr(c, i), &mut b);
            read += 1;
            match parse_record(&b) {
                Some((line, enc, t)) if t == tag(c, cs) && line < g.home_limit => {
                    map.insert(line, enc);
                    replayed += 1;
                }
                _ => break,
            }
        }
    }
    // 3. The AIT cache's committed entries (supercapacitor flush); the
    // speculative ones are dropped.
    let (mut applied, mut dropped) = (0u64, 0u64);
    let slot_end = g.slot_addr(g.slots as usize);
    let mut a = g.slot_base;
    let mut found: Vec<(u64, Addr, u64)> = Vec::new();
    while a < slot_end {
        a = img.zeros_until(a, slot_end);
        if a >= slot_end {
            break;
        }
        let a0 = a - (a - g.slot_base) % SLOT_BYTES;
        let mut b = [0u8; 32];
        img.read_bytes(a0, &mut b);
        read += 1;
        if let Some((line, enc, t)) = parse_record(&b) {
            if committed(t) && line < g.home_limit {
                found.push((t, line, enc));
            } else {
                dropped += 1;
            }
        }
        a = a0 + SLOT_BYTES;
    }
    found.sort_unstable();
    for (_, line, enc) in found {
        map.insert(line, enc);
        applied += 1;
    }
    map.retain(|_, e| *e != 0);
    // 4. Audit (shared: the reference differs in how it finds mappings).
    let reclaimed = audit(
        img,
        &g,
        &commits,
        map.iter().map(|(&l, &e)| (l, e)),
        &mut read,
    )?;
    // 5. Materialise: copy every remapped line home, reset its AIT entry
    // (idempotent: a crash here re-runs the same copies).
    let mut buf = [0u8; 64];
    for (&line, &enc) in &map {
        img.read_bytes(g.dev_addr(line, enc), &mut buf);
        img.write_bytes(line, &buf);
        written += 1;
        read += 1;
    }
    for (&line, _) in media.iter() {
        img.write_u64(g.ait_addr(line), 0);
        written += 1;
    }
    Ok(RecoveryReport {
        bytes_read: read * 64,
        bytes_written: written * 64,
        modeled_ns: recovery_ns(p, read, written),
        details: vec![
            ("remapped_lines", map.len() as f64),
            ("overflow_log_replayed", replayed as f64),
            ("committed_cache_entries", applied as f64),
            ("speculative_cache_entries_dropped", dropped as f64),
            ("reclaimed_lines", reclaimed as f64),
        ],
    })
}

/// Differential: on seeded crash images of every workload (lazy with
/// a small AIT cache and small CPU caches, so entries overflow to the
/// log; eager; the Fig. 5 mutant, whose images fail the audit), the
/// page-at-a-time recovery makes exactly the writes of the reference
/// scan, in the same order, with the same report or the same error.
#[test]
fn fast_recovery_equals_the_reference_scan_on_seeded_crash_images() {
    use crate::engine::{Engine, RunSpec};
    let mut compared = (0u64, 0u64);
    for w in crate::workloads::REGISTRY {
        for (persist, small, mutant) in [
            ("lazy", true, "none"),
            ("eager", false, "none"),
            ("lazy", false, "evict-speculative-to-ait"),
        ] {
            let mut s = RunSpec::new("ehou", w.name).unwrap();
            s.params = Params::defaults(&crate::schemes::all_params());
            let mut sets = vec![
                ("ehou.persist", persist),
                ("ehou.mutant", mutant),
                ("ehou.pool_lines", "4096"),
                ("workload.initial_items", "64"),
                ("workload.tpcc_items", "2000"),
                ("workload.tpcc_customers_per_district", "300"),
            ];
            if small {
                sets.extend([
                    ("dimm.ait_cache_sets", "4"),
                    ("dimm.ait_cache_ways", "2"),
                    ("cache.l1_size_bytes", "1KB"),
                    ("cache.l1_ways", "2"),
                    ("cache.l2_size_bytes", "2KB"),
                    ("cache.l2_ways", "2"),
                    ("cache.llc_size_bytes", "4KB"),
                    ("cache.llc_ways", "2"),
                ]);
            }
            for (k, v) in sets {
                s.params.set_str(k, v).unwrap();
            }
            s.threads = 2;
            s.tx = if w.name == "tpcc" { 12 } else { 60 };
            s.seed = 5;
            s.record_history = true;
            let mut e = Engine::new(s).unwrap();
            e.run(&mut |_| {}).unwrap();
            e.finish();
            let base = e.history.as_ref().unwrap().initial_media.clone();
            let log = &e.ctx.nvm.persist_log;
            let events = log.events();
            let n = events.len() as u64;
            // Seeded points, plus the first and the last.
            let mut pts: Vec<u64> = (0..48u64)
                .map(|i| {
                    let h = (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n;
                    (h ^ (h >> 29)) % (n + 1)
                })
                .chain([0, n])
                .collect();
            pts.sort_unstable();
            pts.dedup();
            let mut img = base;
            let mut applied = 0u64;
            for k in pts {
                while applied < k {
                    let ev = &events[applied as usize];
                    img.write_bytes(ev.addr, log.data(ev));
                    applied += 1;
                }
                let mut fast = Logged {
                    ov: Overlay::new(&img),
                    writes: Vec::new(),
                };
                let mut slow = Logged {
                    ov: Overlay::new(&img),
                    writes: Vec::new(),
                };
                let what = format!("{} {persist} {mutant} point {k}", w.name);
                match (
                    recover(&mut fast, &e.params, &e.ctx.layout),
                    recover_reference(&mut slow, &e.params, &e.ctx.layout),
                ) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(
                            (a.bytes_read, a.bytes_written, &a.details),
                            (b.bytes_read, b.bytes_written, &b.details),
                            "{what}"
                        );
                        assert_eq!(a.modeled_ns, b.modeled_ns, "{what}");
                        compared.0 += 1;
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!(a.to_string(), b.to_string(), "{what}");
                        compared.1 += 1;
                    }
                    (a, b) => panic!("{what}: {:?} vs {:?}", a.is_ok(), b.is_ok()),
                }
                assert_eq!(fast.writes, slow.writes, "{what}");
            }
        }
    }
    assert!(compared.0 > 500, "{compared:?}");
}

#[test]
fn entries_go_speculative_then_committed_and_a_crash_reclaims_speculative_lines() {
    let (mut e, mut ctx, p) = setup();
    let (a, b) = (0x1000, 0x2040);
    e.tx_begin(&mut ctx, 0, 0);
    store_and_write_back(&mut e, &mut ctx, a, 11);
    store_and_write_back(&mut e, &mut ctx, b, 22);
    for l in [a, b] {
        let s = e.cache.find(l / 64).unwrap();
        assert_eq!(e.cache.entry(s).state, EntryState::Speculative);
        assert_ne!(e.cache.entry(s).dev, 0, "out of place: a pool line");
    }
    // Crash before commit: nothing of the transaction, both lines reclaimed.
    let (v, d) = crash(&ctx, &p, &[a, b]);
    assert_eq!(v, vec![0, 0]);
    assert_eq!(detail(&d, "reclaimed_lines"), 2.0);
    assert_eq!(detail(&d, "speculative_cache_entries_dropped"), 2.0);
    e.tx_end(&mut ctx, 0, 10);
    for l in [a, b] {
        let s = e.cache.find(l / 64).unwrap();
        assert_eq!(e.cache.entry(s).state, EntryState::Committed, "lazy: dirty");
    }
    // After commit: both, from the AIT-cache images (supercapacitor).
    let (v, d) = crash(&ctx, &p, &[a, b]);
    assert_eq!(v, vec![11, 22]);
    assert_eq!(detail(&d, "committed_cache_entries"), 2.0);
    assert_eq!(detail(&d, "reclaimed_lines"), 0.0);
    // The next transaction overwrites a: its committed entry goes to
    // the AIT first and the line goes back home.
    e.tx_begin(&mut ctx, 0, 20);
    store_and_write_back(&mut e, &mut ctx, a, 33);
    assert_eq!(e.s.flush_overwrite, 1);
    let s = e.cache.find(a / 64).unwrap();
    assert_eq!(e.cache.entry(s).dev, 0, "back home");
    let (v, _) = crash(&ctx, &p, &[a, b]);
    assert_eq!(v, vec![11, 22]);
    e.tx_end(&mut ctx, 0, 30);
    assert_eq!(crash(&ctx, &p, &[a, b]).0, vec![33, 22]);
    assert_eq!(e.s.released, 1, "a's pool line is free again");
}

#[test]
fn overflowed_speculative_entries_are_logged_and_replayed_after_commit() {
    let (mut e, mut ctx, p) = setup();
    let lines = [0x1000, 0x2040, 0x3080];
    e.tx_begin(&mut ctx, 0, 0);
    for (i, &l) in lines.iter().enumerate() {
        store_and_write_back(&mut e, &mut ctx, l, 100 + i as u64);
    }
    // Three speculative entries in two ways: one overflowed.
    assert_eq!(e.s.log_entries, 1);
    assert!(e.cores[0].bloom.may_contain(lines[0]));
    e.tx_end(&mut ctx, 0, 10);
    assert_eq!(e.s.log_applied, 1);
    // A crash after the commit word but before the log reached the
    // AIT: the committed log is replayed from its bytes.
    let mut img = ctx.nvm.media().clone();
    img.write_u64(e.g.ait_addr(lines[0]), 0);
    let mut ov = Overlay::new(&img);
    let r = recover(&mut ov, &p, &ctx.layout).unwrap();
    assert_eq!(detail(&r.details, "overflow_log_replayed"), 1.0);
    let v: Vec<u64> = lines.iter().map(|&l| ov.read_u64(l)).collect();
    assert_eq!(v, vec![100, 101, 102]);
}

#[test]
fn bloom_filter_has_no_false_negatives() {
    let mut b = Bloom::new(256, 3);
    let keys: Vec<u64> = (0..200u64)
        .map(|i| i.wrapping_mul(0x1234_5677) * 64)
        .collect();
    assert!(!b.may_contain(keys[0]));
    for &k in &keys {
        b.insert(k);
    }
    assert!(keys.iter().all(|&k| b.may_contain(k)));
    b.clear();
    assert!(keys.iter().all(|&k| !b.may_contain(k)));
}

#[test]
fn records_round_trip_and_reject_tears() {
    let r = record(0x4000, 7, tag(3, 9));
    assert_eq!(parse_record(&r), Some((0x4000, 7, tag(3, 9))));
    let mut t = r;
    t[8] ^= 1;
    assert_eq!(parse_record(&t), None);
    assert_eq!(parse_record(&[0u8; 32]), None);
}
