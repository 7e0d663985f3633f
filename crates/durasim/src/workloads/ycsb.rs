//! YCSB on a table store (HOOP paper §IV-A: WHISPER's YCSB on an N-store
//! table): each thread owns a table of `workload.ycsb_records` records
//! (`initial_items` when 0) of `item_bytes` each, reached through a
//! persistent hash index. `workload.ycsb_read_share` of the transactions
//! (0.2: HOOP §IV-A, "20:80"; WHISPER nstore 'large' -p0.8) read a
//! record, the rest update it; records are chosen with YCSB's Zipfian
//! generator (constant 0.99), or N-Store's own `simple_skew` with
//! `workload.key_dist = nstore-skew`.
//!
//! A record is an item (key, seal, payload) whose payload is
//! `workload.ycsb_fields` fields (YCSB CoreWorkload `fieldcount` = 10). An
//! update assigns every value field, as WHISPER's N-Store does
//! (`ycsb_benchmark.cpp`: `if (1 || !update_one)`), with
//! `workload.update_scope = item`: item_bytes / 8 stores; with `field` it
//! assigns one field (YCSB's `writeallfields=false`) and the seal. A read
//! loads every field (`readallfields=true`). The record size is
//! `workload.item_bytes`, 1 KB when that is 0 (HOOP §IV-A uses 512 B and
//! 1 KB key-value pairs; 1 KB is also YCSB's default record, 10 fields x
//! 100 B).
//!
//! Values (`workload.values = realistic`): N-Store's text by default
//! (`workload.ycsb_text = nstore`: at load each field is one random
//! alphanumeric character repeated, `get_rand_astring`; every update writes
//! `'x'` over every field, so a record's second and later updates store
//! the values it already holds), or YCSB's random printable bytes
//! (`ycsb`). Keys are `fnvhash64(rank)`; the seal is the structure's.
//!
//! Layout: root = { n_records, n_slots, index_ptr }; index = n_slots
//! slots { key, record_ptr }, linear probing from `mix64(key)`. Record `r` (a Zipf rank) has the
//! key `fnvhash64(r)` as YCSB's CoreWorkload builds keys (hashed, not
//! ordered inserts), and records are laid out in a random order so the
//! hot ranks are not adjacent in memory.

use super::labels::{self, Heap, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, item_version, mix64, rng, update_item,
    with_item_bytes, write_item, Fill, KeyChooser, KeyDist, TxCtx, ValueModel, Workload,
    WorkloadArgs, WorkloadInfo, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "ycsb",
    description: "YCSB table store: 20% reads / 80% updates, Zipfian(0.99) keys (HOOP §IV-A, WHISPER/N-store)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing {
        default_item_bytes: DEFAULT_RECORD_BYTES,
        items_param: Some("workload.ycsb_records"),
        ..super::Sizing::IN_PLACE
    },
};

const N_RECORDS: u64 = 0;
const N_SLOTS: u64 = 8;
const INDEX: u64 = 16;
const SLOT_BYTES: u64 = 16;

/// YCSB's default Zipfian constant (ZipfianGenerator.ZIPFIAN_CONSTANT).
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Record size when `workload.item_bytes` is 0: 1 KB, one of the HOOP
/// paper's two sizes (§IV-A) and YCSB's default record (10 x 100 B).
pub const DEFAULT_RECORD_BYTES: u64 = 1024;
/// Instructions to hash a key and compare a probe.
const HASH_INSTRS: u32 = 8;

/// YCSB's ZipfianGenerator (Gray et al., "Quickly generating
/// billion-record synthetic databases", SIGMOD 1994), over ranks
/// `[0, items)`; rank 0 is the most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

/// zeta(n, theta) = sum_{i=1..n} 1 / i^theta.
pub fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl Zipfian {
    pub fn new(items: u64, theta: f64) -> Self {
        let items = items.max(1);
        Self::with_zetan(items, theta, zeta(items, theta))
    }

    /// With a precomputed zeta(items, theta) (YCSB's constructor of the
    /// same shape; ScrambledZipfianGenerator passes its ZETAN).
    pub fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        let items = items.max(1);
        let zeta2 = zeta(2, theta);
        Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            // Only reached for items > 2 (smaller draws return earlier).
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    /// ZipfianGenerator.nextLong, clamped to the last rank.
    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }
}

/// YCSB's Utils.fnvhash64 (FNV-1 over the 8 bytes, low byte first; the
/// absolute value as a Java long).
pub fn fnvhash64(mut val: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        h ^= val & 0xff;
        val >>= 8;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    (h as i64).unsigned_abs()
}

/// Records per thread: `workload.ycsb_records`, or `initial_items` when 0.
pub(crate) fn records(a: &WorkloadArgs) -> u64 {
    if a.ycsb_records == 0 {
        a.initial_items
    } else {
        a.ycsb_records
    }
}

/// Key of the record with Zipf rank `r` (0 is reserved for empty slots).
fn record_key(r: u64) -> u64 {
    fnvhash64(r).max(1)
}

pub(crate) struct Ycsb {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    zipf: Zipfian,
    /// `workload.key_dist = uniform`: ranks uniform instead of Zipfian.
    uniform: bool,
    /// `workload.key_dist = nstore-skew`: N-Store's `simple_skew` ranks.
    nstore_skew: Option<KeyChooser>,
    /// Records per thread.
    n: u64,
    vm: ValueModel,
    index: Addr,
    mask: u64,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Ycsb::new(a))
}

impl Ycsb {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let a = &with_item_bytes(a, DEFAULT_RECORD_BYTES);
        let n = records(a);
        let fill = if a.ycsb_nstore_text {
            Fill::NStoreText {
                fields: a.ycsb_fields,
            }
        } else {
            Fill::YcsbText
        };
        let dist = a.key_dist.or(KeyDist::Zipfian);
        Ycsb {
            rng: rng(a.seed),
            zipf: Zipfian::new(n, ZIPFIAN_CONSTANT),
            uniform: dist == KeyDist::Uniform,
            nstore_skew: (dist == KeyDist::NStoreSkew).then(|| KeyChooser::new(dist)),
            n,
            vm: a.vm().with_fill(fill),
            index: 0,
            // Load factor at most 1/2.
            mask: (2 * n).next_power_of_two().max(16) - 1,
            a: a.clone(),
        }
    }

    /// Look up record `rank` through the index; returns the record.
    fn lookup(&self, ctx: &mut TxCtx, rank: u64) -> Addr {
        let key = record_key(rank);
        ctx.compute(HASH_INSTRS);
        let mut s = mix64(key) & self.mask;
        loop {
            let slot = self.index + s * SLOT_BYTES;
            let k = ctx.load(slot);
            assert_ne!(k, 0, "record {rank} is in the table");
            if k == key {
                return ctx.load(slot + 8);
            }
            s = (s + 1) & self.mask;
        }
    }

    /// Read transaction: every field of the record; returns its version.
    pub(crate) fn read(&self, ctx: &mut TxCtx, rank: u64) -> u64 {
        let rec = self.lookup(ctx, rank);
        let mut version = 0;
        for i in 0..self.a.item_bytes / 8 {
            let w = ctx.load(rec + i * 8);
            if i == 1 {
                version = w >> 32;
            }
        }
        version
    }

    /// Update transaction: assign the record's value fields
    /// (`workload.update_scope`); returns its version.
    pub(crate) fn update(&self, ctx: &mut TxCtx, rank: u64) -> u64 {
        let rec = self.lookup(ctx, rank);
        update_item(
            ctx,
            self.vm,
            rec,
            self.a.item_bytes,
            self.a.update_scope,
            self.a.ycsb_fields,
        )
    }
}

impl Workload for Ycsb {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let n = self.n;
        let nslots = self.mask + 1;
        let root = ctx.region_base() + ROOT_OFFSET;
        self.index = ctx.alloc(nslots * SLOT_BYTES);
        ctx.store(root + N_RECORDS, n);
        ctx.store(root + N_SLOTS, nslots);
        ctx.store(root + INDEX, self.index);
        // Load the records in a random order (Fisher-Yates).
        let mut order: Vec<u64> = (0..n).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, self.rng.gen_range(0..=i));
        }
        for r in order {
            let key = record_key(r);
            let rec = ctx.alloc(self.a.item_bytes);
            write_item(ctx, self.vm, rec, self.a.item_bytes, key, 0);
            let mut s = mix64(key) & self.mask;
            while ctx.load(self.index + s * SLOT_BYTES) != 0 {
                s = (s + 1) & self.mask;
            }
            ctx.store(self.index + s * SLOT_BYTES, key);
            ctx.store(self.index + s * SLOT_BYTES + 8, rec);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let rank = if self.uniform {
            self.rng.gen_range(0..self.n)
        } else if let Some(c) = &self.nstore_skew {
            c.index(&mut self.rng, self.n as usize) as u64
        } else {
            self.zipf.next(&mut self.rng)
        };
        if self.rng.gen_bool(self.a.ycsb_read_share) {
            self.read(ctx, rank);
        } else {
            self.update(ctx, rank);
        }
    }
}

/// Visit every record in index order: `f(key, version)`. Validates the
/// index and the records.
pub(crate) fn walk(
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
    mut f: impl FnMut(u64, u64),
) -> Result<u64, String> {
    let item_bytes = item_bytes_or(item_bytes, DEFAULT_RECORD_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let n = img.read_u64(root + N_RECORDS);
    let nslots = img.read_u64(root + N_SLOTS);
    let index = img.read_u64(root + INDEX);
    if !nslots.is_power_of_two() || n >= nslots {
        return Err(format!("ycsb: {n} records in {nslots} index slots"));
    }
    check_ptr(
        index,
        nslots.saturating_mul(SLOT_BYTES),
        bounds,
        "ycsb index",
    )?;
    let mask = nslots - 1;
    let mut keys = Vec::with_capacity(n.min(1 << 16) as usize);
    for s in 0..nslots {
        let slot = index + s * SLOT_BYTES;
        let key = img.read_u64(slot);
        if key == 0 {
            continue;
        }
        if keys.len() as u64 == n {
            return Err(format!("ycsb: more than {n} index slots in use"));
        }
        // Linear probing: no empty slot between the key's home and here.
        let mut h = mix64(key) & mask;
        while h != s {
            if img.read_u64(index + h * SLOT_BYTES) == 0 {
                return Err(format!(
                    "ycsb: key {key} in slot {s} is unreachable (empty slot {h} on its probe path)"
                ));
            }
            h = (h + 1) & mask;
        }
        let rec = img.read_u64(slot + 8);
        check_ptr(rec, item_bytes, bounds, "ycsb record")?;
        let rk = check_item(img, rec, item_bytes).map_err(|e| format!("ycsb record: {e}"))?;
        if rk != key {
            return Err(format!(
                "ycsb: index key {key} points to record with key {rk}"
            ));
        }
        keys.push(key);
        f(key, item_version(img, rec));
    }
    if keys.len() as u64 != n {
        return Err(format!(
            "ycsb: {} index slots in use, expected {n}",
            keys.len()
        ));
    }
    keys.sort_unstable();
    let mut want: Vec<u64> = (0..n).map(record_key).collect();
    want.sort_unstable();
    if keys != want {
        return Err(format!(
            "ycsb: the index holds {} keys, not exactly the {n} table keys",
            keys.len()
        ));
    }
    Ok(n)
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    walk(img, region_base, item_bytes, |_, _| {})
}

/// [`super::labels::DescribeFn`]: the root's words, an index slot's key
/// or record pointer, a record's field (found through the index).
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word(
        "ycsb",
        region_base,
        addr,
        &["record count", "index slot count", "index pointer"],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_RECORD_BYTES);
    let heap = Heap::of(img, region_base)?;
    let nslots = img.read_u64(root + N_SLOTS);
    let index = img.read_u64(root + INDEX);
    if !heap.holds(index, nslots.saturating_mul(SLOT_BYTES)) {
        return None;
    }
    if let Some((s, off)) = labels::array_slot(addr, index, SLOT_BYTES, nslots) {
        let field = labels::word_field(&["key", "record pointer"], off);
        return Some(Label::new(
            format!("ycsb index slot {s}"),
            index + s * SLOT_BYTES,
            field,
        ));
    }
    (0..nslots).find_map(|s| {
        let rec = img.read_u64(index + s * SLOT_BYTES + 8);
        (heap.holds(rec, ib) && labels::within(addr, rec, ib)).then(|| {
            let key = img.read_u64(rec);
            Label::new(
                format!("ycsb record (key {key}, index slot {s})"),
                rec,
                labels::item_field(addr - rec),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::SparseImage;
    use crate::workloads::testutil::*;
    use std::collections::BTreeMap;

    #[test]
    fn fnvhash_matches_ycsb() {
        // Utils.fnvhash64(0) in YCSB: FNV-1 over eight zero bytes.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnvhash64(0), (h as i64).unsigned_abs());
        assert_ne!(fnvhash64(1), fnvhash64(256));
    }

    #[test]
    fn zipfian_matches_analytic_distribution() {
        let n = 1000u64;
        let z = Zipfian::new(n, ZIPFIAN_CONSTANT);
        let samples = 400_000u64;
        let mut counts = vec![0u64; n as usize];
        let mut r = rng(1);
        for _ in 0..samples {
            counts[z.next(&mut r) as usize] += 1;
        }
        let zetan = zeta(n, ZIPFIAN_CONSTANT);
        let p = |i: u64| 1.0 / ((i + 1) as f64).powf(ZIPFIAN_CONSTANT) / zetan;
        // Ranks 0 and 1 are exact in Gray's method: frequency within 5
        // standard deviations of the Zipf probability.
        for i in 0..2 {
            let want = p(i);
            let got = counts[i as usize] as f64 / samples as f64;
            let sd = (want * (1.0 - want) / samples as f64).sqrt();
            assert!((got - want).abs() < 5.0 * sd, "rank {i}: {got} vs {want}");
        }
        // Kolmogorov-Smirnov distance between the empirical and analytic
        // CDFs. Sampling noise alone is ~1.36/sqrt(samples) = 0.002 at
        // 95%; Gray's method is exact for ranks 0 and 1 and approximate
        // beyond (measured bias ~0.016 at n = 1000, theta = 0.99).
        let (mut emp, mut ana, mut ks) = (0.0f64, 0.0f64, 0.0f64);
        for i in 0..n {
            emp += counts[i as usize] as f64 / samples as f64;
            ana += p(i);
            ks = ks.max((emp - ana).abs());
        }
        assert!(ks < 0.025, "KS distance {ks}");
        // Popularity decreases with rank (in buckets, to smooth noise).
        let bucket = |a: usize, b: usize| counts[a..b].iter().sum::<u64>();
        assert!(bucket(0, 10) > bucket(10, 100) / 2);
        assert!(bucket(10, 20) > bucket(500, 510) * 10);
        assert!(counts[(n - 1) as usize] > 0, "the tail is reachable");
    }

    #[test]
    fn matches_reference_model() {
        let a = args(512, 200, 500, 0.0);
        let mut img = SparseImage::new();
        let mut y = Ycsb::new(&a);
        with_ctx(&mut img, false, |ctx| y.setup(ctx));
        let mut model: BTreeMap<u64, u64> = (0..200).map(|r| (record_key(r), 0)).collect();
        let mut r = rng(3);
        for _ in 0..500 {
            let rank = y.zipf.next(&mut r);
            let key = record_key(rank);
            if r.gen_bool(a.ycsb_read_share) {
                let (v, ops) = with_ctx(&mut img, true, |ctx| y.read(ctx, rank));
                assert_eq!(v, model[&key]);
                assert!(ops
                    .iter()
                    .all(|o| !matches!(o, crate::workloads::Op::Store { .. })));
            } else {
                let v = with_ctx(&mut img, true, |ctx| y.update(ctx, rank)).0;
                *model.get_mut(&key).unwrap() += 1;
                assert_eq!(v, model[&key]);
            }
        }
        let mut got = BTreeMap::new();
        walk(&img, BASE, 512, |k, v| {
            got.insert(k, v);
        })
        .unwrap();
        assert_eq!(got, model);
        assert!(
            model[&record_key(0)] > model[&record_key(150)],
            "rank 0 is hot"
        );
    }

    /// `workload.ycsb_read_share` of the transactions store nothing; an
    /// update stores the whole record once.
    #[test]
    fn read_share_and_update_shape() {
        let a = args(512, 200, 10_000, 0.0);
        let t = tx_stores(&INFO, &a, 10_000);
        let reads = t.iter().filter(|x| x.0 == 0).count() as f64 / t.len() as f64;
        assert!((reads - 0.2).abs() < 0.01, "{reads}");
        assert!(t.iter().all(|&(w, l)| w == 0 || (w == 64 && l == 8)));
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [512, 1024] {
            let a = args(ib, 100, 300, 0.0);
            let (img, stores) = run_direct(&INFO, &a, 300);
            assert_eq!(check(&img, BASE, ib).unwrap(), 100);
            // 80% updates of the whole record (N-Store writes every field).
            let per_update = (ib / 8) as f64;
            assert!(
                stores > 0.7 * per_update && stores < 0.9 * per_update,
                "{stores}"
            );
            let root = BASE + ROOT_OFFSET;
            let index = img.read_u64(root + INDEX);
            let s = (0..)
                .find(|&s| img.read_u64(index + s * SLOT_BYTES) != 0)
                .unwrap();
            let rec = img.read_u64(index + s * SLOT_BYTES + 8);
            assert_detects(&INFO, &img, rec + 64, ib); // torn record
            assert_detects(&INFO, &img, index + s * SLOT_BYTES, ib); // index key
            assert_detects(&INFO, &img, index + s * SLOT_BYTES + 8, ib); // record pointer
            assert_detects(&INFO, &img, root + N_RECORDS, ib);
        }
    }

    /// Read: no store; update: the whole record (N-Store writes every
    /// field); with `workload.update_scope = field`, one of ten fields and
    /// the seal.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [512u64, 1024] {
            let mut a = args(ib, 1000, 600, 0.0);
            let t = tx_stores(&INFO, &a, 600);
            assert!(t.iter().all(|&(s, _)| s == 0 || s as u64 == ib / 8));
            a.update_scope = crate::workloads::UpdateScope::Field;
            let t = tx_stores(&INFO, &a, 600);
            let p = ib as usize / 8 - 2;
            let (lo, hi) = (p / 10 + 1, p.div_ceil(10) + 1);
            assert!(t.iter().all(|&(s, _)| s == 0 || (lo..=hi).contains(&s)));
            let reads = t.iter().filter(|x| x.0 == 0).count();
            assert!(reads > 80 && reads < 160, "20% reads: {reads}");
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("ycsb", 2, 300, &[("workload.item_bytes", "512")]);
    }
}
