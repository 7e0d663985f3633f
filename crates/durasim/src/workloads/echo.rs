//! Echo (MorLog Table IV macro-benchmark, from WHISPER; Bailey et al.,
//! "Exploring storage class memory with key value stores", INFLOW 2013):
//! a versioned key-value store. Client threads batch puts in a volatile
//! local store and commit the batch transactionally into the persistent
//! master store (Echo's kp_kvstore): a hash table whose entries keep
//! every committed version of their value, newest first, each stamped with
//! the global version number (GVN) of the commit that wrote it.
//!
//! A transaction either gets one key (read-only; share 1 -
//! `workload.echo_put_share`) or commits one batch of
//! `workload.echo_batch` puts (WHISPER kv-echo `run.sh` 'large':
//! `merge_every` 8, `put_prob` 0.8). Each put finds the key's entry,
//! allocates a new value version (the whole item at the next per-key
//! version, stamped with GVN + 1, linked before the previous newest) and
//! makes it the entry's head: heap cursor + item_bytes / 8 + 3 stores; a
//! put of a new key (share 1 - `workload.echo_update_share`, kv-echo
//! `update_prob` 0.7) first creates its entry (heap cursor, entry, bucket
//! head, key count). The heap cursor and the key count are thus written
//! once per put of the batch: the repeated stores of the real merge. The
//! commit then publishes GVN + 1 (1 store). Existing keys are chosen by
//! `workload.key_dist` (uniform by default) among the keys loaded at setup
//! (`workload.echo_keys`, `initial_items` when 0) and inserted since; old
//! versions are kept (Echo garbage-collects them off the critical path;
//! not modelled).
//!
//! Values (`workload.values = realistic`): kv-echo's evaluation driver
//! runs with `use_random_values = false`, one lowercase string reused by
//! every put; so does this workload (one string per run, fixed by the
//! seed). Keys are integers (kv-echo's 128-character zero-padded decimal
//! key strings are not laid out: modelling choice).
//!
//! Layout: root = { nbuckets, buckets_ptr, nkeys, gvn }; entry = { key,
//! head, next } (64 B); version = { item (item_bytes) | gvn | older }.

use super::labels::{self, Heap, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, item_version, keys_unique, mix64,
    random_key, rng, with_item_bytes, write_item, Fill, KeyChooser, KeyDist, TxCtx, ValueModel,
    Workload, WorkloadArgs, WorkloadInfo, DEFAULT_ITEM_BYTES, ITEM_SEAL, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "echo",
    description: "versioned key-value store: commit a batch of local puts into a persistent hash table of version lists (MorLog Table IV, WHISPER Echo)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing {
        items_param: Some("workload.echo_keys"),
        ..super::Sizing::GROWING
    },
};

const NBUCKETS: u64 = 0;
const BUCKETS: u64 = 8;
const NKEYS: u64 = 16;
const GVN: u64 = 24;
const E_KEY: u64 = 0;
const E_HEAD: u64 = 8;
const E_NEXT: u64 = 16;
const ENTRY_BYTES: u64 = 24;
const HASH_INSTRS: u32 = 8;

pub(crate) struct Echo {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    keys_dist: KeyChooser,
    root: Addr,
    buckets: Addr,
    mask: u64,
    keys: Vec<u64>,
    vm: ValueModel,
    /// Keys loaded at setup.
    n_keys: u64,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Echo::new(a))
}

fn vgvn(ib: u64) -> u64 {
    ib
}
fn volder(ib: u64) -> u64 {
    ib + 8
}

impl Echo {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let a = with_item_bytes(a, DEFAULT_ITEM_BYTES);
        let n_keys = if a.echo_keys == 0 {
            a.initial_items
        } else {
            a.echo_keys
        };
        Echo {
            rng: rng(a.seed),
            keys_dist: KeyChooser::new(a.key_dist.or(KeyDist::Uniform)),
            root: a.region_base + ROOT_OFFSET,
            buckets: 0,
            mask: n_keys.next_power_of_two().max(16) - 1,
            keys: Vec::with_capacity(n_keys as usize),
            vm: a.vm().with_fill(Fill::EchoText),
            n_keys,
            a,
        }
    }

    fn find(&self, ctx: &mut TxCtx, key: u64) -> (Addr, Addr) {
        ctx.compute(HASH_INSTRS);
        let b = self.buckets + (mix64(key) & self.mask) * 8;
        let mut e = ctx.load(b);
        while e != 0 && ctx.load(e + E_KEY) != key {
            e = ctx.load(e + E_NEXT);
        }
        (b, e)
    }

    /// Put a new version of `key` stamped `gvn`; returns its version.
    pub(crate) fn put(&mut self, ctx: &mut TxCtx, key: u64, gvn: u64) -> u64 {
        let ib = self.a.item_bytes;
        let (b, mut e) = self.find(ctx, key);
        let (older, version) = if e == 0 {
            e = ctx.alloc(ENTRY_BYTES);
            ctx.store(e + E_KEY, key);
            let head = ctx.load(b);
            ctx.store(e + E_NEXT, head);
            ctx.store(b, e);
            let n = ctx.load(self.root + NKEYS);
            ctx.store(self.root + NKEYS, n + 1);
            self.keys.push(key);
            (0, 0)
        } else {
            let h = ctx.load(e + E_HEAD);
            (h, ((ctx.load(h + ITEM_SEAL) >> 32) + 1) & 0xffff_ffff)
        };
        let v = ctx.alloc(ib + 16);
        write_item(ctx, self.vm, v, ib, key, version);
        ctx.store(v + vgvn(ib), gvn);
        ctx.store(v + volder(ib), older);
        ctx.store(e + E_HEAD, v);
        version
    }

    /// An existing key, chosen by `workload.key_dist`.
    fn existing_key(&mut self) -> u64 {
        self.keys[self.keys_dist.index(&mut self.rng, self.keys.len())]
    }

    /// Commit one batch of puts (drawn from the local store).
    pub(crate) fn commit_batch(&mut self, ctx: &mut TxCtx) {
        let gvn = ctx.load(self.root + GVN) + 1;
        for _ in 0..self.a.echo_batch {
            let update = self.a.echo_update_share >= 1.0
                || (!self.keys.is_empty() && self.rng.gen_bool(self.a.echo_update_share));
            let key = if update {
                self.existing_key()
            } else {
                random_key(&mut self.rng, self.a.key_space)
            };
            self.put(ctx, key, gvn);
        }
        ctx.store(self.root + GVN, gvn);
    }

    /// Get one key: its newest version's item (read-only); returns the
    /// version.
    pub(crate) fn get(&mut self, ctx: &mut TxCtx) -> u64 {
        let key = self.existing_key();
        let (_, e) = self.find(ctx, key);
        let h = ctx.load(e + E_HEAD);
        let mut version = 0;
        for i in 0..self.a.item_bytes / 8 {
            let w = ctx.load(h + i * 8);
            if i * 8 == ITEM_SEAL {
                version = w >> 32;
            }
        }
        version
    }
}

impl Workload for Echo {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let nb = self.mask + 1;
        self.buckets = ctx.alloc(nb * 8);
        ctx.store(self.root + NBUCKETS, nb);
        ctx.store(self.root + BUCKETS, self.buckets);
        ctx.store(self.root + NKEYS, 0);
        ctx.store(self.root + GVN, 0);
        for _ in 0..self.n_keys {
            let key = random_key(&mut self.rng, self.a.key_space);
            self.put(ctx, key, 0);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        if self.a.echo_put_share < 1.0
            && !self.keys.is_empty()
            && !self.rng.gen_bool(self.a.echo_put_share)
        {
            self.get(ctx);
        } else {
            self.commit_batch(ctx);
        }
    }
}

/// Visit every key: `f(key, newest version, versions kept)`. Validates
/// the buckets, entries and version lists.
pub(crate) fn walk(
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
    mut f: impl FnMut(u64, u64, u64),
) -> Result<u64, String> {
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let nb = img.read_u64(root + NBUCKETS);
    let buckets = img.read_u64(root + BUCKETS);
    let nkeys = img.read_u64(root + NKEYS);
    let gvn = img.read_u64(root + GVN);
    if !nb.is_power_of_two() {
        return Err(format!("echo: bucket count {nb} is not a power of two"));
    }
    check_ptr(buckets, nb.saturating_mul(8), bounds, "echo buckets")?;
    let max_objects = (bounds.1 - bounds.0) / 64;
    if nkeys > max_objects {
        return Err(format!("echo: key count {nkeys} exceeds heap capacity"));
    }
    let (mut seen, mut objects) = (0u64, 0u64);
    let mut keys = Vec::with_capacity(nkeys.min(1 << 16) as usize);
    for b in 0..nb {
        let mut e = img.read_u64(buckets + b * 8);
        while e != 0 {
            seen += 1;
            if seen > nkeys {
                return Err(format!("echo: more entries than the key count {nkeys}"));
            }
            check_ptr(e, ENTRY_BYTES, bounds, "echo entry")?;
            let key = img.read_u64(e + E_KEY);
            if mix64(key) & (nb - 1) != b {
                return Err(format!(
                    "echo: key {key} found in bucket {b}, hashes elsewhere"
                ));
            }
            // Version list: per-key versions count down to 0, GVNs do not
            // increase (a batch may put a key twice) and none is newer
            // than the published GVN.
            let mut v = img.read_u64(e + E_HEAD);
            let (mut want, mut last_gvn, mut n) = (None::<u64>, gvn, 0u64);
            let mut newest = 0;
            while v != 0 {
                objects += 1;
                if objects > max_objects {
                    return Err("echo: version lists exceed the heap (cycle)".into());
                }
                check_ptr(v, ib + 16, bounds, "echo version")?;
                let k = check_item(img, v, ib).map_err(|e| format!("echo key {key}: {e}"))?;
                if k != key {
                    return Err(format!("echo: entry {key} holds a version of key {k}"));
                }
                let ver = item_version(img, v);
                if want.is_some_and(|w| w != ver) {
                    return Err(format!(
                        "echo key {key}: version {ver} follows version {}",
                        want.unwrap() + 1
                    ));
                }
                if n == 0 {
                    newest = ver;
                }
                let g = img.read_u64(v + vgvn(ib));
                if g > last_gvn {
                    return Err(format!(
                        "echo key {key}: version {ver} has GVN {g}, above {last_gvn} (published GVN {gvn})"
                    ));
                }
                last_gvn = g;
                n += 1;
                want = ver.checked_sub(1);
                v = img.read_u64(v + volder(ib));
                if want.is_none() && v != 0 {
                    return Err(format!("echo key {key}: versions below 0"));
                }
            }
            if n == 0 || want.is_some() {
                return Err(format!(
                    "echo key {key}: version list does not end at version 0"
                ));
            }
            keys.push(key);
            f(key, newest, n);
            e = img.read_u64(e + E_NEXT);
        }
    }
    if seen != nkeys {
        return Err(format!("echo: key count {nkeys}, {seen} entries reachable"));
    }
    keys_unique("echo", &mut keys)?;
    Ok(nkeys)
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    walk(img, region_base, item_bytes, |_, _, _| {})
}

/// [`super::labels::DescribeFn`]: the root's words, a bucket head, an
/// entry's field, a value version's item, GVN or older link (found along
/// the bucket chains and version lists).
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word(
        "echo",
        region_base,
        addr,
        &[
            "bucket count",
            "bucket array pointer",
            "key count",
            "GVN (published global version)",
        ],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let heap = Heap::of(img, region_base)?;
    let (buckets, nb) = heap.bucket_array(img, root + NBUCKETS, root + BUCKETS)?;
    if let Some(l) = labels::word_array("echo bucket array", buckets, nb, addr, "head") {
        return Some(l);
    }
    let mut budget = heap.max_objects(ENTRY_BYTES);
    for b in 0..nb {
        let mut e = img.read_u64(buckets + b * 8);
        while e != 0 && budget > 0 && heap.holds(e, ENTRY_BYTES) {
            budget -= 1;
            let key = img.read_u64(e + E_KEY);
            if labels::within(addr, e, ENTRY_BYTES) {
                let field = labels::word_field(&["key", "head (newest version)", "next"], addr - e);
                return Some(Label::new(
                    format!("echo entry (key {key}, bucket {b})"),
                    e,
                    field,
                ));
            }
            let mut v = img.read_u64(e + E_HEAD);
            let mut age = 0;
            while v != 0 && budget > 0 && heap.holds(v, ib + 16) {
                budget -= 1;
                if labels::within(addr, v, ib + 16) {
                    let off = addr - v;
                    let field = match off.checked_sub(ib) {
                        None => labels::item_field(off),
                        Some(0) => "gvn".into(),
                        Some(_) => "older".into(),
                    };
                    let what = format!("echo value version (key {key}, {age} newer versions)");
                    return Some(Label::new(what, v, field));
                }
                v = img.read_u64(v + volder(ib));
                age += 1;
            }
            e = img.read_u64(e + E_NEXT);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::SparseImage;
    use crate::workloads::testutil::*;

    /// Every committed put is a new version; the GVN counts the batches.
    #[test]
    fn versions_count_the_puts() {
        let a = args(64, 40, 200, 0.5);
        let mut img = SparseImage::new();
        let mut e = Echo::new(&a);
        with_ctx(&mut img, false, |ctx| e.setup(ctx));
        for _ in 0..200 {
            with_ctx(&mut img, true, |ctx| e.run_tx(ctx));
        }
        let mut versions = 0;
        let n = walk(&img, BASE, 64, |_, newest, kept| {
            assert_eq!(newest + 1, kept);
            versions += kept;
        })
        .unwrap();
        assert_eq!(n, e.keys.len() as u64);
        let batches = img.read_u64(BASE + ROOT_OFFSET + GVN);
        assert_eq!(versions, 40 + batches * a.echo_batch);
        // 20% gets (kv-echo put_prob 0.8), 30% of puts new keys.
        assert!((140..=180).contains(&batches), "{batches} batches");
        let inserted = n - 40;
        let puts = (batches * a.echo_batch) as f64;
        assert!((0.2..0.4).contains(&(inserted as f64 / puts)), "{inserted}");
    }

    /// A get stores nothing; a batch of 8 puts stores, per put, the heap
    /// cursor, the version (item, GVN, older link) and the entry's head,
    /// plus, for a new key, the heap cursor again, the entry (key, next),
    /// the bucket head and the key count; then the GVN.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 4096] {
            let a = args(ib, 50, 100, 0.5);
            let t = tx_stores(&INFO, &a, 100);
            let base = a.echo_batch * (ib / 8 + 4) + 1;
            assert!(t.iter().any(|&(w, _)| w == 0), "gets");
            assert!(
                t.iter().all(|&(w, _)| w == 0
                    || (w as u64 >= base
                        && (w as u64 - base).is_multiple_of(5)
                        && (w as u64 - base) / 5 <= a.echo_batch)),
                "{base}"
            );
            assert!(t.iter().any(|&(w, _)| w as u64 > base), "inserts");
        }
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let (img, _) = run_direct(&INFO, &args(ib, 50, 100, 0.5), 100);
            assert!(check(&img, BASE, ib).unwrap() > 40);
            let root = BASE + ROOT_OFFSET;
            let buckets = img.read_u64(root + BUCKETS);
            let b = (0..).find(|&b| img.read_u64(buckets + b * 8) != 0).unwrap();
            let e = img.read_u64(buckets + b * 8);
            let v = img.read_u64(e + E_HEAD);
            assert_detects(&INFO, &img, v + 16, ib); // torn value
            assert_detects(&INFO, &img, e + E_KEY, ib); // entry key
            assert_detects(&INFO, &img, e + E_HEAD, ib); // head pointer
            assert_detects(&INFO, &img, root + NKEYS, ib);
            // Versions newer than the published GVN (batches whose GVN
            // publication was lost).
            let mut bad = img.clone();
            crate::mem::MemWrite::write_u64(&mut bad, root + GVN, 0);
            assert!(check(&bad, BASE, ib).is_err());
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("echo", 2, 200, &[]);
    }
}
