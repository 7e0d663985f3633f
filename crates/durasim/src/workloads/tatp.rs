//! TATP (Telecom Application Transaction Processing; "TATP Benchmark
//! Description", IBM Solid DB, v1.0, 2009), as EHOU §IV evaluates it: the
//! four tables SUBSCRIBER, ACCESS_INFO, SPECIAL_FACILITY and
//! CALL_FORWARDING plus the SUBSCRIBER sub_nbr index, each a persistent
//! chained hash table, and the standard mix of seven transactions:
//! GET_SUBSCRIBER_DATA 35%, GET_NEW_DESTINATION 10%, GET_ACCESS_DATA 35%
//! (read-only), UPDATE_SUBSCRIBER_DATA 2%, UPDATE_LOCATION 14%,
//! INSERT_CALL_FORWARDING 2%, DELETE_CALL_FORWARDING 2%. Subscriber ids
//! are non-uniform as the description defines them (§ "non-uniform
//! random"): s_id = ((rand(0, A) | rand(1, P)) % P) + 1 with A = 65535
//! for P <= 10^6 subscribers, 1048575 up to 10^7, 2097151 above.
//! `workload.key_dist = uniform | zipfian` replaces that choice.
//!
//! Population follows the description: per subscriber 1-4 ACCESS_INFO and
//! 1-4 SPECIAL_FACILITY rows with distinct types, is_active = 1 for 85%,
//! and 0-3 CALL_FORWARDING rows per facility with distinct start times in
//! {0, 8, 16} and end_time = start_time + rand(1, 8). P is
//! `workload.tatp_subscribers` (0: `workload.initial_items`; the
//! description's smallest population is 100,000). The ten bit / hex /
//! byte2 columns are packed into one to two words. Under
//! `workload.values = realistic` the description's strings are text:
//! sub_nbr and numberx ("15-digit string", zero-padded) hold their last 8
//! digits in ASCII (a column trimmed to its word; the first 7 digits are
//! '0' below 10^8 subscribers), data3 3 and data4 / data_b 5 capital
//! letters A-Z, NUL-padded; under `random` and `zero` sub_nbr and numberx
//! are packed BCD and the letter columns random words (`zero`: 0). The
//! sub_nbr index is keyed by the BCD number in every mode. Every row is an item of one
//! size, `workload.item_bytes` raised to at least [`MIN_RECORD_BYTES`]
//! (the subscriber row's packed columns); index entries are 24 B items.
//! Row bytes beyond the named columns are filled by the value model
//! (`workload.values`; realistic: MorLog's delta model from a zero word);
//! the named columns are as above.
//!
//! Updates assign the named columns and the row's seal (update_words); an
//! insert writes the whole row and links it (heap cursor + row + next +
//! bucket head + count); a delete unlinks it (predecessor link + count).
//! A transaction whose precondition fails (no such facility, row already
//! present / absent) makes no stores, as the rolled-back transaction.

use super::labels::{self, Heap, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, mix64, rng, update_words, write_item_fields,
    KeyChooser, KeyDist, TxCtx, Workload, WorkloadArgs, WorkloadInfo, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "tatp",
    description: "TATP: 4 tables on persistent hash tables, standard 7-transaction mix, non-uniform subscriber ids (EHOU §IV, TATP v1.0)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing {
        items_param: Some("workload.tatp_subscribers"),
        ..super::Sizing::GROWING
    },
};

/// Smallest row: key, seal and the subscriber's seven packed columns.
pub const MIN_RECORD_BYTES: u64 = 72;
const INDEX_BYTES: u64 = 24;

/// The mix in percent (TATP description, "transaction mix").
pub const MIX_PERCENT: [u64; 7] = [35, 10, 35, 2, 14, 2, 2];
pub const TX_NAMES: [&str; 7] = [
    "GET_SUBSCRIBER_DATA",
    "GET_NEW_DESTINATION",
    "GET_ACCESS_DATA",
    "UPDATE_SUBSCRIBER_DATA",
    "UPDATE_LOCATION",
    "INSERT_CALL_FORWARDING",
    "DELETE_CALL_FORWARDING",
];

// Tables.
const SUB: usize = 0;
const SUBNBR: usize = 1;
const AI: usize = 2;
const SF: usize = 3;
const CF: usize = 4;
const TABLES: usize = 5;
const TABLE_NAMES: [&str; TABLES] = [
    "subscriber",
    "sub_nbr index",
    "access_info",
    "special_facility",
    "call_forwarding",
];

// Root: P, then per table { nbuckets, buckets_ptr, count }.
const R_P: u64 = 0;
fn table_root(root: Addr, t: usize) -> Addr {
    root + 8 + t as u64 * 24
}
const T_NB: u64 = 0;
const T_BUCKETS: u64 = 8;
const T_COUNT: u64 = 16;

// Columns (item word indices).
const SUB_NBR: u64 = 2;
const SUB_BITS: u64 = 3;
const SUB_VLR: u64 = 8;
const IDX_SID: u64 = 2;
const SF_IS_ACTIVE: u64 = 2;
const SF_DATA_A: u64 = 4;
const CF_END: u64 = 2;
const CF_NUMBERX: u64 = 3;
const HASH_INSTRS: u32 = 8;

/// The description's A for `p` subscribers.
pub fn nurand_a(p: u64) -> u64 {
    if p <= 1_000_000 {
        65_535
    } else if p <= 10_000_000 {
        1_048_575
    } else {
        2_097_151
    }
}

/// Non-uniform subscriber id in [1, p].
pub fn nurand_sid(rng: &mut impl Rng, p: u64) -> u64 {
    ((rng.gen_range(0..=nurand_a(p)) | rng.gen_range(1..=p)) % p) + 1
}

/// Capital letters A-Z, one per byte of `bits` (TATP data3, data4,
/// data_b: "random string of n characters, each A-Z").
fn letters(bits: u64, n: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (j, c) in out.iter_mut().enumerate().take(n) {
        *c = b'A' + ((bits >> (8 * j)) & 0xff) as u8 % 26;
    }
    out
}

/// A 15-digit number column (sub_nbr, numberx: "s_id as a 15-digit
/// string, zero-padded") trimmed to one word: its last 8 digits in ASCII
/// (the first 7 are '0' up to 10^8 subscribers).
pub fn number_text(n: u64) -> u64 {
    let mut d = [0u8; 15];
    super::values::decimal(n, 15, &mut d);
    super::values::text_word(&d[7..])
}

/// sub_nbr: s_id as 15 decimal digits, packed BCD (the index key, and the
/// subscriber column under `workload.values = random`).
pub fn sub_nbr(s_id: u64) -> u64 {
    let (mut x, mut out) = (s_id, 0u64);
    for d in 0..15 {
        out |= (x % 10) << (4 * d);
        x /= 10;
    }
    out
}

fn ai_key(s: u64, ai_type: u64) -> u64 {
    s << 2 | (ai_type - 1)
}
fn sf_key(s: u64, sf_type: u64) -> u64 {
    s << 2 | (sf_type - 1)
}
fn cf_key(s: u64, sf_type: u64, start: u64) -> u64 {
    sf_key(s, sf_type) << 2 | (start / 8)
}

fn record_bytes(item_bytes: u64) -> u64 {
    item_bytes_or(item_bytes, MIN_RECORD_BYTES).max(MIN_RECORD_BYTES)
}

pub(crate) struct Tatp {
    rng: Xoshiro256PlusPlus,
    dist: KeyDist,
    keys_dist: KeyChooser,
    root: Addr,
    p: u64,
    rb: u64,
    buckets: [Addr; TABLES],
    masks: [u64; TABLES],
    vm: super::ValueModel,
    /// Transactions run per type (tests check the mix).
    pub(crate) mix: [u64; 7],
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Tatp::new(a))
}

impl Tatp {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let p = if a.tatp_subscribers == 0 {
            a.initial_items
        } else {
            a.tatp_subscribers
        }
        .max(1);
        let pow = p.next_power_of_two().max(16);
        let dist = a.key_dist.or(KeyDist::Default);
        Tatp {
            rng: rng(a.seed),
            dist,
            keys_dist: KeyChooser::new(dist),
            root: a.region_base + ROOT_OFFSET,
            p,
            rb: record_bytes(a.item_bytes),
            buckets: [0; TABLES],
            // ~1, 1, 2.5, 2.5, 3.75 rows per subscriber.
            masks: [pow - 1, pow - 1, 4 * pow - 1, 4 * pow - 1, 4 * pow - 1],
            mix: [0; 7],
            vm: a.vm(),
        }
    }

    fn rbytes(&self, t: usize) -> u64 {
        if t == SUBNBR {
            INDEX_BYTES
        } else {
            self.rb
        }
    }

    /// Find `key` in table `t`: (the link that points to it, the row), row
    /// 0 when absent.
    fn find(&self, ctx: &mut TxCtx, t: usize, key: u64) -> (Addr, Addr) {
        ctx.compute(HASH_INSTRS);
        let mut link = self.buckets[t] + (mix64(key) & self.masks[t]) * 8;
        let mut n = ctx.load(link);
        while n != 0 {
            if ctx.load(n) == key {
                return (link, n);
            }
            link = n + self.rbytes(t);
            n = ctx.load(link);
        }
        (link, 0)
    }

    fn insert(&self, ctx: &mut TxCtx, t: usize, key: u64, fields: &[u64]) {
        let rb = self.rbytes(t);
        let n = ctx.alloc(rb + 8);
        write_item_fields(ctx, self.vm, n, rb, key, 0, fields);
        let b = self.buckets[t] + (mix64(key) & self.masks[t]) * 8;
        let head = ctx.load(b);
        ctx.store(n + rb, head);
        ctx.store(b, n);
        let c = table_root(self.root, t) + T_COUNT;
        let v = ctx.load(c);
        ctx.store(c, v + 1);
    }

    fn delete(&self, ctx: &mut TxCtx, t: usize, link: Addr, n: Addr) {
        let next = ctx.load(n + self.rbytes(t));
        ctx.store(link, next);
        let c = table_root(self.root, t) + T_COUNT;
        let v = ctx.load(c);
        ctx.store(c, v - 1);
    }

    fn s_id(&mut self) -> u64 {
        match self.dist {
            KeyDist::Uniform => self.rng.gen_range(1..=self.p),
            KeyDist::Zipfian | KeyDist::NStoreSkew => {
                1 + self.keys_dist.index(&mut self.rng, self.p as usize) as u64
            }
            KeyDist::Default => nurand_sid(&mut self.rng, self.p),
        }
    }

    /// The transaction type of the next transaction (index into the mix).
    fn pick_type(&mut self) -> usize {
        let mut r = self.rng.gen_range(0..100);
        for (i, &p) in MIX_PERCENT.iter().enumerate() {
            if r < p {
                return i;
            }
            r -= p;
        }
        unreachable!("the mix sums to 100")
    }

    fn read_row(&self, ctx: &mut TxCtx, n: Addr, words: u64) {
        for i in 0..words {
            ctx.load(n + i * 8);
        }
    }

    /// s_id through the sub_nbr index (the transactions keyed by sub_nbr).
    fn sid_by_nbr(&self, ctx: &mut TxCtx, s: u64) -> u64 {
        let (_, n) = self.find(ctx, SUBNBR, sub_nbr(s));
        assert_ne!(n, 0, "every subscriber is indexed");
        ctx.load(n + IDX_SID * 8)
    }

    pub(crate) fn run_type(&mut self, ctx: &mut TxCtx, ty: usize) {
        self.mix[ty] += 1;
        let s = self.s_id();
        match ty {
            0 => {
                // GET_SUBSCRIBER_DATA: the whole subscriber row.
                let (_, n) = self.find(ctx, SUB, s);
                self.read_row(ctx, n, 9);
            }
            1 => {
                // GET_NEW_DESTINATION.
                let sf_type = self.rng.gen_range(1..=4);
                let start = 8 * self.rng.gen_range(0..3u64);
                let end = self.rng.gen_range(1..=24u64);
                let (_, f) = self.find(ctx, SF, sf_key(s, sf_type));
                if f != 0 && ctx.load(f + SF_IS_ACTIVE * 8) == 1 {
                    for st in (0..=start).step_by(8) {
                        let (_, c) = self.find(ctx, CF, cf_key(s, sf_type, st));
                        if c != 0 && ctx.load(c + CF_END * 8) > end {
                            ctx.load(c + CF_NUMBERX * 8);
                        }
                    }
                }
            }
            2 => {
                // GET_ACCESS_DATA: data1..data4.
                let ai_type = self.rng.gen_range(1..=4);
                let (_, n) = self.find(ctx, AI, ai_key(s, ai_type));
                if n != 0 {
                    self.read_row(ctx, n, 6);
                }
            }
            3 => {
                // UPDATE_SUBSCRIBER_DATA: bit_1 and the facility's data_a
                // (both or, without that facility, neither).
                let sf_type = self.rng.gen_range(1..=4);
                let bit_1 = self.rng.gen_range(0..2u64);
                let data_a = self.rng.gen_range(0..256u64);
                let (_, f) = self.find(ctx, SF, sf_key(s, sf_type));
                if f != 0 {
                    let (_, n) = self.find(ctx, SUB, s);
                    let bits = ctx.load(n + SUB_BITS * 8);
                    update_words(ctx, n, &[(SUB_BITS, (bits & !1) | bit_1)]);
                    update_words(ctx, f, &[(SF_DATA_A, data_a)]);
                }
            }
            4 => {
                // UPDATE_LOCATION: vlr_location by sub_nbr.
                let vlr = self.rng.gen_range(1..=u32::MAX as u64);
                let sid = self.sid_by_nbr(ctx, s);
                let (_, n) = self.find(ctx, SUB, sid);
                update_words(ctx, n, &[(SUB_VLR, vlr)]);
            }
            5 => {
                // INSERT_CALL_FORWARDING.
                let sf_type = self.rng.gen_range(1..=4);
                let start = 8 * self.rng.gen_range(0..3u64);
                let end = start + self.rng.gen_range(1..=8u64);
                let x = self.rng.gen_range(1..=999_999_999_999_999u64);
                let numberx = if self.vm.mode == super::ValueMode::Realistic {
                    number_text(x)
                } else {
                    sub_nbr(x)
                };
                let sid = self.sid_by_nbr(ctx, s);
                let mut has = false;
                for t in 1..=4 {
                    let (_, f) = self.find(ctx, SF, sf_key(sid, t));
                    has |= t == sf_type && f != 0;
                }
                let key = cf_key(sid, sf_type, start);
                if has && self.find(ctx, CF, key).1 == 0 {
                    self.insert(ctx, CF, key, &[end, numberx]);
                }
            }
            _ => {
                // DELETE_CALL_FORWARDING.
                let sf_type = self.rng.gen_range(1..=4);
                let start = 8 * self.rng.gen_range(0..3u64);
                let sid = self.sid_by_nbr(ctx, s);
                let (link, c) = self.find(ctx, CF, cf_key(sid, sf_type, start));
                if c != 0 {
                    self.delete(ctx, CF, link, c);
                }
            }
        }
    }

    /// The types 1..=4 shuffled: its first k are a random k-subset.
    fn shuffled_types(&mut self) -> [u64; 4] {
        let mut t = [1, 2, 3, 4];
        for i in (1..4).rev() {
            t.swap(i, self.rng.gen_range(0..=i));
        }
        t
    }
}

impl Workload for Tatp {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        ctx.store(self.root + R_P, self.p);
        for t in 0..TABLES {
            let nb = self.masks[t] + 1;
            self.buckets[t] = ctx.alloc(nb * 8);
            let tr = table_root(self.root, t);
            ctx.store(tr + T_NB, nb);
            ctx.store(tr + T_BUCKETS, self.buckets[t]);
            ctx.store(tr + T_COUNT, 0);
        }
        let vm = self.vm;
        let text = |t: [u8; 8], old: u64| vm.text_or(&t, old);
        // Numbers stay numbers under `zero` (the checker reads sub_nbr).
        let number = |n: u64, old: u64| {
            if vm.mode == super::ValueMode::Realistic {
                number_text(n)
            } else {
                old
            }
        };
        for s in 1..=self.p {
            let r = &mut self.rng;
            let bits = r.gen_range(0..1024u64);
            let hex = r.gen_range(0..1u64 << 40);
            let b2lo: u64 = r.gen();
            let b2hi = r.gen_range(0..1u64 << 16);
            let msc = r.gen_range(1..=u32::MAX as u64);
            let vlr = r.gen_range(1..=u32::MAX as u64);
            let nbr = number(s, sub_nbr(s));
            self.insert(ctx, SUB, s, &[nbr, bits, hex, b2lo, b2hi, msc, vlr]);
            self.insert(ctx, SUBNBR, sub_nbr(s), &[s]);
            let n_ai = self.rng.gen_range(1..=4usize);
            for &t in &self.shuffled_types()[..n_ai] {
                let r = &mut self.rng;
                let (d1, d2, d3, d4) = (
                    r.gen_range(0..256u64),
                    r.gen_range(0..256),
                    r.gen(),
                    r.gen(),
                );
                // data3: 3 letters, data4: 5 letters.
                let d = [d1, d2, text(letters(d3, 3), d3), text(letters(d4, 5), d4)];
                self.insert(ctx, AI, ai_key(s, t), &d);
            }
            let n_sf = self.rng.gen_range(1..=4usize);
            for &t in &self.shuffled_types()[..n_sf] {
                let r = &mut self.rng;
                let active = u64::from(r.gen_bool(0.85));
                let (err, data_a, data_b) = (r.gen_range(0..256u64), r.gen_range(0..256), r.gen());
                // data_b: 5 letters.
                let d = [active, err, data_a, text(letters(data_b, 5), data_b)];
                self.insert(ctx, SF, sf_key(s, t), &d);
                let n_cf = self.rng.gen_range(0..=3usize);
                let mut starts = [0u64, 8, 16];
                for i in (1..3).rev() {
                    starts.swap(i, self.rng.gen_range(0..=i));
                }
                for &st in &starts[..n_cf] {
                    let end = st + self.rng.gen_range(1..=8u64);
                    let x = self.rng.gen_range(1..=999_999_999_999_999u64);
                    let nx = number(x, sub_nbr(x));
                    self.insert(ctx, CF, cf_key(s, t, st), &[end, nx]);
                }
            }
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        let ty = self.pick_type();
        self.run_type(ctx, ty);
    }
}

/// Walk table `t`: `f(key, row)` per row; returns the row count.
fn walk_table(
    img: &dyn MemRead,
    root: Addr,
    t: usize,
    rb: u64,
    bounds: (Addr, Addr),
    mut f: impl FnMut(u64, Addr) -> Result<(), String>,
) -> Result<u64, String> {
    let name = TABLE_NAMES[t];
    let tr = table_root(root, t);
    let nb = img.read_u64(tr + T_NB);
    let buckets = img.read_u64(tr + T_BUCKETS);
    let count = img.read_u64(tr + T_COUNT);
    if !nb.is_power_of_two() {
        return Err(format!(
            "tatp {name}: bucket count {nb} is not a power of two"
        ));
    }
    check_ptr(buckets, nb.saturating_mul(8), bounds, name)?;
    if count > (bounds.1 - bounds.0) / (rb + 8) {
        return Err(format!("tatp {name}: count {count} exceeds heap capacity"));
    }
    let mut seen = 0u64;
    for b in 0..nb {
        let mut n = img.read_u64(buckets + b * 8);
        while n != 0 {
            seen += 1;
            if seen > count {
                return Err(format!("tatp {name}: more rows than count {count}"));
            }
            check_ptr(n, rb + 8, bounds, name)?;
            let key = check_item(img, n, rb).map_err(|e| format!("tatp {name}: {e}"))?;
            if mix64(key) & (nb - 1) != b {
                return Err(format!(
                    "tatp {name}: key {key} in bucket {b}, hashes elsewhere"
                ));
            }
            f(key, n)?;
            n = img.read_u64(n + rb);
        }
    }
    if seen != count {
        return Err(format!("tatp {name}: count {count}, {seen} rows reachable"));
    }
    Ok(count)
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    let rb = record_bytes(item_bytes);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let p = img.read_u64(root + R_P);
    if p == 0 || p > (bounds.1 - bounds.0) / (rb + 8) {
        return Err(format!("tatp: subscriber count {p} is not plausible"));
    }
    let p_us = p as usize;
    // Subscribers: exactly 1..=P, each with its own sub_nbr.
    let mut sub_seen = vec![false; p_us + 1];
    walk_table(img, root, SUB, rb, bounds, |k, n| {
        if k == 0 || k > p || std::mem::replace(&mut sub_seen[k as usize], true) {
            return Err(format!(
                "tatp subscriber: s_id {k} out of 1..={p} or duplicated"
            ));
        }
        let nbr = img.read_u64(n + SUB_NBR * 8);
        // Packed (random values) or text (realistic), both s_id's number.
        if nbr != sub_nbr(k) && nbr != number_text(k) {
            return Err(format!("tatp subscriber {k}: wrong sub_nbr"));
        }
        Ok(())
    })?;
    if sub_seen[1..].iter().any(|&x| !x) {
        return Err("tatp subscriber: a subscriber is missing".into());
    }
    let mut idx_seen = vec![false; p_us + 1];
    walk_table(img, root, SUBNBR, INDEX_BYTES, bounds, |k, n| {
        let s = img.read_u64(n + IDX_SID * 8);
        if s == 0 || s > p || sub_nbr(s) != k || std::mem::replace(&mut idx_seen[s as usize], true)
        {
            return Err(format!(
                "tatp sub_nbr index: entry {k:#x} -> s_id {s} is wrong"
            ));
        }
        Ok(())
    })?;
    if idx_seen[1..].iter().any(|&x| !x) {
        return Err("tatp sub_nbr index: a subscriber is not indexed".into());
    }
    // ACCESS_INFO and SPECIAL_FACILITY: 1-4 rows per subscriber (never
    // changed by the transactions); facility bitmasks for the foreign key.
    let mut has_ai = vec![false; p_us + 1];
    let mut sf_mask = vec![0u8; p_us + 1];
    let mut rows = walk_table(img, root, AI, rb, bounds, |k, _| {
        let s = k >> 2;
        if s == 0 || s > p {
            return Err(format!("tatp access_info: s_id {s} out of range"));
        }
        has_ai[s as usize] = true;
        Ok(())
    })?;
    rows += walk_table(img, root, SF, rb, bounds, |k, n| {
        let s = k >> 2;
        if s == 0 || s > p || img.read_u64(n + SF_IS_ACTIVE * 8) > 1 {
            return Err(format!("tatp special_facility: row {k} is invalid"));
        }
        sf_mask[s as usize] |= 1 << (k & 3);
        Ok(())
    })?;
    if let Some(s) = (1..=p_us).find(|&s| !has_ai[s] || sf_mask[s] == 0) {
        return Err(format!(
            "tatp: subscriber {s} lacks access_info or special_facility rows"
        ));
    }
    rows += walk_table(img, root, CF, rb, bounds, |k, n| {
        let (sfk, start) = (k >> 2, 8 * (k & 3));
        let s = sfk >> 2;
        let end = img.read_u64(n + CF_END * 8);
        if start > 16 || s == 0 || s > p || sf_mask[s as usize] & (1 << (sfk & 3)) == 0 {
            return Err(format!(
                "tatp call_forwarding: row {k} has no special_facility"
            ));
        }
        if end <= start || end > start + 8 {
            return Err(format!(
                "tatp call_forwarding: row {k}: end_time {end}, start {start}"
            ));
        }
        Ok(())
    })?;
    Ok(p + rows)
}

/// Each table's named words of a row (key and seal first; later words
/// are the value model's filler).
const TABLE_COLS: [&[&str]; TABLES] = [
    &[
        "key (s_id)",
        "seal (version, checksum)",
        "sub_nbr",
        "bit_1..bit_10",
        "hex_1..hex_10",
        "byte2_1..byte2_8",
        "byte2_9..byte2_10",
        "msc_location",
        "vlr_location",
    ],
    &["key (sub_nbr)", "seal (version, checksum)", "s_id"],
    &[
        "key (s_id, ai_type)",
        "seal (version, checksum)",
        "data1",
        "data2",
        "data3",
        "data4",
    ],
    &[
        "key (s_id, sf_type)",
        "seal (version, checksum)",
        "is_active",
        "error_cntrl",
        "data_a",
        "data_b",
    ],
    &[
        "key (s_id, sf_type, start_time)",
        "seal (version, checksum)",
        "end_time",
        "numberx",
    ],
];

/// [`super::labels::DescribeFn`]: the root's words (P, each table's bucket
/// count, bucket array and row count), a bucket head, a row's column or
/// next link (found along its bucket's chain).
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if addr == root + R_P {
        return Some(Label::new("tatp root", root, "P (subscribers)"));
    }
    if let Some((t, off)) = labels::array_slot(addr, table_root(root, 0), 24, TABLES as u64) {
        let field = labels::word_field(&["bucket count", "bucket array pointer", "row count"], off);
        return Some(Label::new(
            "tatp root",
            root,
            format!("{} table's {field}", TABLE_NAMES[t as usize]),
        ));
    }
    let heap = Heap::of(img, region_base)?;
    let rb = record_bytes(item_bytes);
    for (t, name) in TABLE_NAMES.iter().enumerate() {
        let tr = table_root(root, t);
        let nb = img.read_u64(tr + T_NB);
        let buckets = img.read_u64(tr + T_BUCKETS);
        if !heap.holds(buckets, nb.saturating_mul(8)) {
            continue;
        }
        if let Some(l) = labels::word_array(
            &format!("tatp {name} bucket array"),
            buckets,
            nb,
            addr,
            "head",
        ) {
            return Some(l);
        }
    }
    for (t, name) in TABLE_NAMES.iter().enumerate() {
        let tr = table_root(root, t);
        let nb = img.read_u64(tr + T_NB);
        let buckets = img.read_u64(tr + T_BUCKETS);
        if !heap.holds(buckets, nb.saturating_mul(8)) {
            continue;
        }
        let row = if t == SUBNBR { INDEX_BYTES } else { rb };
        for b in 0..nb {
            let first = img.read_u64(buckets + b * 8);
            if let Some((n, _)) = labels::find_in_list(img, heap, first, row + 8, row, addr) {
                let off = addr - n;
                let field = match off {
                    o if o == row => "next".into(),
                    o if (o / 8) as usize >= TABLE_COLS[t].len() => labels::item_field(o),
                    o => labels::word_field(TABLE_COLS[t], o),
                };
                let key = img.read_u64(n);
                return Some(Label::new(
                    format!("tatp {name} row (key {key:#x})"),
                    n,
                    field,
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::SparseImage;
    use crate::workloads::testutil::*;

    fn tatp_args(p: u64) -> WorkloadArgs {
        args(0, p, 1000, 0.5)
    }

    /// The seven transactions run in the standard mix: each type's share
    /// within 5 standard deviations of its percentage.
    #[test]
    fn mix_matches_the_specification() {
        let mut t = Tatp::new(&tatp_args(100));
        let n = 200_000u64;
        let mut counts = [0u64; 7];
        for _ in 0..n {
            counts[t.pick_type()] += 1;
        }
        for (i, &c) in counts.iter().enumerate() {
            let p = MIX_PERCENT[i] as f64 / 100.0;
            let sd = (p * (1.0 - p) * n as f64).sqrt();
            assert!(
                (c as f64 - p * n as f64).abs() < 5.0 * sd,
                "{}: {c} of {n}, want {p}",
                TX_NAMES[i]
            );
        }
    }

    /// Subscriber ids follow the description's non-uniform distribution:
    /// the empirical CDF is within sampling noise of the exact one
    /// (enumerated over all (x, y) pairs), and far from uniform.
    #[test]
    fn subscriber_ids_follow_nurand() {
        let p = 1000u64;
        let a = nurand_a(p);
        let mut exact = vec![0f64; p as usize + 1];
        let w = 1.0 / ((a + 1) * p) as f64;
        for y in 1..=p {
            for x in 0..=a {
                exact[(((x | y) % p) + 1) as usize] += w;
            }
        }
        let n = 300_000u64;
        let mut got = vec![0u64; p as usize + 1];
        let mut r = rng(4);
        for _ in 0..n {
            got[nurand_sid(&mut r, p) as usize] += 1;
        }
        let (mut ce, mut cg, mut cu, mut ks, mut ks_uniform) = (0.0, 0.0, 0.0, 0.0f64, 0.0f64);
        for s in 1..=p as usize {
            ce += exact[s];
            cg += got[s] as f64 / n as f64;
            cu += 1.0 / p as f64;
            ks = ks.max((ce - cg).abs());
            ks_uniform = ks_uniform.max((ce - cu).abs());
        }
        // 1.63 / sqrt(n) is the KS critical value at 1%.
        assert!(ks < 1.63 / (n as f64).sqrt(), "KS {ks}");
        assert!(ks_uniform > 0.02, "NURand is not uniform: {ks_uniform}");
        let max = exact.iter().cloned().fold(0.0, f64::max);
        assert!(max > 3.0 / p as f64, "hot subscribers: {max}");
    }

    /// `workload.tatp_subscribers` sets P (else `initial_items`); under
    /// realistic values sub_nbr is digits and data3/data4/data_b letters.
    #[test]
    fn population_knob_and_text_columns() {
        let mut a = tatp_args(50);
        assert_eq!(Tatp::new(&a).p, 50);
        a.tatp_subscribers = 120;
        let mut img = SparseImage::new();
        let mut t = Tatp::new(&a);
        with_ctx(&mut img, false, |ctx| t.setup(ctx));
        assert!(check(&img, BASE, 0).unwrap() > 120);
        assert_eq!(img.read_u64(t.root + R_P), 120);
        assert_eq!(&number_text(12345).to_le_bytes(), b"00012345");
        let mut ctx_img = img.clone();
        let (_, n) = with_ctx(&mut ctx_img, false, |ctx| t.find(ctx, SUB, 77)).0;
        assert_eq!(img.read_u64(n + SUB_NBR * 8), number_text(77));
        let mut letters_seen = 0;
        for s in 1..=120 {
            for ty in 1..=4 {
                let (_, r) = with_ctx(&mut ctx_img, false, |ctx| t.find(ctx, AI, ai_key(s, ty))).0;
                if r != 0 {
                    let d3 = img.read_u64(r + 4 * 8).to_le_bytes();
                    let d4 = img.read_u64(r + 5 * 8).to_le_bytes();
                    assert!(d3[..3].iter().all(u8::is_ascii_uppercase) && d3[3] == 0);
                    assert!(d4[..5].iter().all(u8::is_ascii_uppercase) && d4[5] == 0);
                    letters_seen += 1;
                }
            }
        }
        assert!(letters_seen >= 120);
    }

    #[test]
    fn every_transaction_type_keeps_the_invariants() {
        let mut img = SparseImage::new();
        let mut t = Tatp::new(&tatp_args(200));
        with_ctx(&mut img, false, |ctx| t.setup(ctx));
        let rows0 = check(&img, BASE, 0).unwrap();
        let cf0 = img.read_u64(table_root(BASE + ROOT_OFFSET, CF) + T_COUNT);
        let mut stores = [0usize; 7];
        for k in 0..1400 {
            let ty = k % 7;
            let (_, ops) = with_ctx(&mut img, true, |ctx| t.run_type(ctx, ty));
            stores[ty] += ops
                .iter()
                .filter(|o| matches!(o, crate::workloads::Op::Store { .. }))
                .count();
        }
        assert_eq!(&stores[..3], &[0, 0, 0], "read-only transactions");
        // UPDATE_SUBSCRIBER_DATA: 2 x (column + seal) when the facility
        // exists; UPDATE_LOCATION always column + seal.
        assert!(stores[3] > 0 && stores[3] % 4 == 0 && stores[3] <= 200 * 4);
        assert_eq!(stores[4], 200 * 2);
        assert!(stores[5] > 0 && stores[6] > 0);
        let rows = check(&img, BASE, 0).unwrap();
        let cf = img.read_u64(table_root(BASE + ROOT_OFFSET, CF) + T_COUNT);
        assert_eq!(rows as i64 - rows0 as i64, cf as i64 - cf0 as i64);
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [0, 1024] {
            let a = args(ib, 100, 500, 0.5);
            let (img, _) = run_direct(&INFO, &a, 500);
            check(&img, BASE, ib).unwrap();
            let root = BASE + ROOT_OFFSET;
            let first = |t: usize| {
                let b = img.read_u64(table_root(root, t) + T_BUCKETS);
                let i = (0..).find(|&i| img.read_u64(b + i * 8) != 0).unwrap();
                (b + i * 8, img.read_u64(b + i * 8))
            };
            for t in 0..TABLES {
                let (link, n) = first(t);
                assert_detects(&INFO, &img, n + 16, ib); // a column
                assert_detects(&INFO, &img, n, ib); // the key
                assert_detects(&INFO, &img, link, ib); // the chain
                assert_detects(&INFO, &img, table_root(root, t) + T_COUNT, ib);
            }
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("tatp", 2, 300, &[]);
    }
}
