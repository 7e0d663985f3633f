//! Property tests of the caches: inclusion, LRU order, no lost dirty data,
//! back-invalidation merging the newest bytes.

use durasim::cache::hierarchy::Writeback;
use durasim::cache::{Cache, Hierarchy, LineExt, MemSide};
use durasim::config::Params;
use durasim::mem::{MemRead, MemWrite, SparseImage};
use durasim::types::{read_word, write_word, Addr, CoreId, Cycle, LineData, LINE_BYTES};
use proptest::prelude::*;

/// Memory below the LLC: a plain image. Checks that every write-back
/// carries exactly the architectural bytes of its line (the newest data).
struct Backing {
    image: SparseImage,
    arch: SparseImage,
    writebacks: u64,
    l1_evictions: u64,
    bad_writeback: Option<String>,
}

impl MemSide for Backing {
    fn read_miss(
        &mut self,
        _core: CoreId,
        line_addr: Addr,
        now: Cycle,
        out: &mut LineData,
        _ext: &mut LineExt,
    ) -> (Cycle, bool) {
        self.image.read_bytes(line_addr, out);
        (now + 100, false)
    }
    fn writeback(&mut self, ev: Writeback<'_>) -> Cycle {
        let Writeback {
            line_addr,
            data,
            now,
            ..
        } = ev;
        let want = self.arch.read_line(line_addr);
        if &want != data && self.bad_writeback.is_none() {
            self.bad_writeback = Some(format!("write-back of {line_addr:#x} is stale"));
        }
        self.image.write_bytes(line_addr, data);
        self.writebacks += 1;
        now + 10
    }
    fn l1_evict(&mut self, _: CoreId, _: Addr, _: &LineData, _: &mut LineExt, _: Cycle) {
        self.l1_evictions += 1;
    }
}

fn small_hierarchy(cores: usize, llc_bytes: u64) -> Hierarchy {
    let mut p = Params::defaults(&[]);
    p.set_str("cache.l1_size_bytes", "1024").unwrap(); // 16 lines
    p.set_str("cache.l1_ways", "2").unwrap();
    p.set_str("cache.l2_size_bytes", "2048").unwrap(); // 32 lines
    p.set_str("cache.l2_ways", "4").unwrap();
    p.set_str("cache.llc_size_bytes", &llc_bytes.to_string())
        .unwrap();
    p.set_str("cache.llc_ways", "4").unwrap();
    Hierarchy::new(&p, cores)
}

#[derive(Clone, Debug)]
enum CacheOp {
    Load {
        core: usize,
        line: u64,
        word: usize,
    },
    Store {
        core: usize,
        line: u64,
        word: usize,
        value: u64,
    },
    Flush {
        core: usize,
        line: u64,
    },
}

fn cache_op(cores: usize) -> impl Strategy<Value = CacheOp> {
    // Lines 0..160 per core: several times the private capacity, more than
    // the LLC across cores, so every level evicts.
    prop_oneof![
        4 => (0..cores, 0u64..160, 0usize..8).prop_map(|(core, line, word)| CacheOp::Load { core, line, word }),
        4 => (0..cores, 0u64..160, 0usize..8, any::<u64>()).prop_map(|(core, line, word, value)| CacheOp::Store { core, line, word, value }),
        1 => (0..cores, 0u64..160).prop_map(|(core, line)| CacheOp::Flush { core, line }),
    ]
}

/// Threads own disjoint data: core c's lines live in its own 1 MiB region.
fn line_addr(core: usize, line: u64) -> Addr {
    ((core as u64) << 20) + line * LINE_BYTES
}

fn set_of(c: &Cache, addr: Addr) -> usize {
    ((addr / LINE_BYTES) as usize) & (c.sets() - 1)
}

fn check_inclusion(h: &Hierarchy) -> Result<(), TestCaseError> {
    for (core, (l1, l2)) in h.l1.iter().zip(&h.l2).enumerate() {
        for s in l1.valid_slots() {
            let a = l1.line_addr(s);
            prop_assert!(
                l2.find(a).is_some(),
                "core {core}: L1 line {a:#x} not in L2"
            );
        }
        for s in l2.valid_slots() {
            let a = l2.line_addr(s);
            let s3 = h.llc.find(a);
            prop_assert!(s3.is_some(), "core {core}: L2 line {a:#x} not in LLC");
            prop_assert_eq!(
                h.llc.owner(s3.unwrap()) as usize,
                core,
                "LLC owner of {:#x}",
                a
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    /// Random loads, stores and flushes on several cores: inclusion holds
    /// after every access, loads return the newest value, every write-back
    /// carries the newest bytes, the accessed line is MRU in its L1 set, and
    /// after a drain the backing image equals the reference model of all
    /// stores (no dirty data lost).
    #[test]
    fn hierarchy_keeps_inclusion_and_data(
        cores in 1usize..4,
        llc_big in any::<bool>(),
        ops in prop::collection::vec(cache_op(3), 1..400),
    ) {
        let mut h = small_hierarchy(cores, if llc_big { 8192 } else { 4096 });
        let mut mem = Backing {
            image: SparseImage::new(),
            arch: SparseImage::new(),
            writebacks: 0,
            l1_evictions: 0,
            bad_writeback: None,
        };
        let mut now: Cycle = 0;
        for op in ops {
            now += 7;
            match op {
                CacheOp::Load { core, line, word } => {
                    let core = core % cores;
                    let a = line_addr(core, line);
                    let (done, slot, _) = h.access(core, a, now, &mut mem);
                    prop_assert!(done > now);
                    let got = read_word(h.l1_data(core, slot), word);
                    let want = mem.arch.read_u64(a + word as u64 * 8);
                    prop_assert_eq!(got, want, "load {:#x} word {}", a, word);
                    let l1 = &h.l1[core];
                    prop_assert_eq!(l1.lru_order(set_of(l1, a))[0], a, "accessed line is MRU");
                }
                CacheOp::Store { core, line, word, value } => {
                    let core = core % cores;
                    let a = line_addr(core, line);
                    let (_, slot, _) = h.access(core, a, now, &mut mem);
                    write_word(h.l1_write(core, slot).0, word, value);
                    mem.arch.write_u64(a + word as u64 * 8, value);
                }
                CacheOp::Flush { core, line } => {
                    let core = core % cores;
                    let a = line_addr(core, line);
                    h.flush(core, a, now, &mut mem);
                    prop_assert_eq!(mem.image.read_line(a), mem.arch.read_line(a), "flushed line {:#x}", a);
                    for c in [&h.l1[core], &h.l2[core], &h.llc] {
                        if let Some(s) = c.find(a) {
                            prop_assert!(!c.is_dirty(s), "flushed line {:#x} still dirty", a);
                        }
                    }
                }
            }
            check_inclusion(&h)?;
            if let Some(e) = mem.bad_writeback.take() {
                return Err(TestCaseError::fail(e));
            }
        }
        h.drain(now, &mut mem);
        if let Some(e) = mem.bad_writeback.take() {
            return Err(TestCaseError::fail(e));
        }
        for page in mem.arch.page_numbers() {
            let want = mem.arch.page(page).unwrap();
            let mut got = vec![0u8; 4096];
            mem.image.read_bytes(page * 4096, &mut got);
            prop_assert_eq!(&got[..], &want[..], "backing page {} after drain", page);
        }
        // Drained lines stay cached, clean.
        for c in h.l1.iter().chain(&h.l2).chain(std::iter::once(&h.llc)) {
            for s in c.valid_slots() {
                prop_assert!(!c.is_dirty(s));
            }
        }
    }

    /// One cache level against a reference LRU model: the set order after
    /// every access, and the victim chosen on a miss, are true LRU.
    #[test]
    fn cache_is_true_lru(ways in 1usize..20, sets_log in 0u32..3, lines in prop::collection::vec(0u64..40, 1..300)) {
        let sets = 1usize << sets_log;
        let mut c = Cache::new((sets * ways) as u64 * LINE_BYTES, ways, 1);
        prop_assert_eq!(c.sets(), sets);
        // Reference: per set, most recent first.
        let mut model: Vec<Vec<Addr>> = vec![Vec::new(); sets];
        for l in lines {
            let a = l * LINE_BYTES;
            let set = set_of(&c, a);
            let m = &mut model[set];
            if let Some(s) = c.find(a) {
                c.touch(s);
                let pos = m.iter().position(|&x| x == a);
                prop_assert!(pos.is_some(), "cache hit on a line the model evicted");
                m.remove(pos.unwrap());
            } else {
                prop_assert!(!m.contains(&a), "cache miss on a line the model holds");
                let slot = c.victim_slot(a);
                let victim = c.take(slot).map(|v| v.addr);
                if m.len() == ways {
                    prop_assert_eq!(victim, m.pop(), "victim is the LRU line");
                } else {
                    prop_assert_eq!(victim, None, "a free way is used before evicting");
                }
                c.install(slot, a, &[0u8; 64], LineExt::default(), false, 0);
            }
            m.insert(0, a);
            prop_assert_eq!(c.lru_order(set), m.clone());
        }
    }
}

/// An LLC eviction of a line whose newest bytes sit dirty in the owner's L1
/// writes back the L1 bytes (back-invalidation merges the newest data) and
/// removes every private copy.
#[test]
fn back_invalidation_merges_l1_data() {
    let mut h = small_hierarchy(1, 4096); // LLC: 16 sets x 4 ways
    let mut mem = Backing {
        image: SparseImage::new(),
        arch: SparseImage::new(),
        writebacks: 0,
        l1_evictions: 0,
        bad_writeback: None,
    };
    let x = line_addr(0, 0);
    let (_, slot, _) = h.access(0, x, 0, &mut mem);
    write_word(h.l1_write(0, slot).0, 3, 0xfeed);
    mem.arch.write_u64(x + 24, 0xfeed);
    // x is dirty only in L1 (its LLC slot holds the one copy of the bytes).
    let s3 = h.llc.find(x).unwrap();
    assert!(!h.llc.is_dirty(s3));
    assert!(h.l1[0].is_dirty(h.l1[0].find(x).unwrap()));
    // Four more lines in x's LLC set (stride = 16 sets) evict x from the
    // LLC; re-touching x hits in L1 only, so x stays the LLC's LRU line
    // while its newest bytes are in L1.
    let stride = 16 * LINE_BYTES;
    for i in 1..=4u64 {
        h.access(0, x, i * 10, &mut mem);
        h.access(0, x + i * stride, i * 10 + 1, &mut mem);
    }
    assert!(h.llc.find(x).is_none(), "x was evicted from the LLC");
    assert!(h.l1[0].find(x).is_none() && h.l2[0].find(x).is_none());
    assert_eq!(mem.image.read_u64(x + 24), 0xfeed, "L1 data was merged");
    assert!(mem.writebacks >= 1 && mem.l1_evictions >= 1);
    assert!(mem.bad_writeback.is_none());
}
