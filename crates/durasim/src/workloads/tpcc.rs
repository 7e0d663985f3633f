//! TPC-C New-Order (HOOP paper §IV-A: WHISPER's TPC-C on N-store, "new
//! order transactions, the most write intensive"). One warehouse per
//! thread with its 10 districts, customers, the ITEM table, STOCK,
//! ORDER, NEW-ORDER and ORDER-LINE. Input generation and the transaction
//! profile follow the TPC-C specification v5.11 (§2.4.1, §2.4.2, NURand
//! §2.1.6, initial population §4.3.3.1); fields are trimmed to the ones
//! New-Order reads or writes plus the keys. `workload.item_bytes` and
//! `workload.initial_items` do not apply (record sizes are fixed).
//!
//! Simplifications (docs/MODEL.md): every order line is supplied by the
//! home warehouse (remote warehouses belong to other threads, and threads
//! own disjoint data); the 1% rollback of an unused item id is not
//! generated; the 3,000 initial orders per district are not loaded (New-
//! Order never reads them), so order ids start at 1; S_DIST_01..10 is
//! trimmed to one 8-byte word; o_entry_d is a per-warehouse logical clock.
//!
//! Layout: the root holds table pointers and sizes; records are 64 B
//! (order lines 80 B). The ORDER record and each ORDER-LINE are allocated
//! separately, as N-Store's `do_new_order` does (so the heap cursor is
//! written 1 + o_ol_cnt times per transaction); the bump allocator places
//! them one after the other (lines 128 B apart). Per district, an index
//! array o_id -> order and a NEW-ORDER array.
//!
//! Values: every column is the structure's own (ids, counters, quantities,
//! money in cents per §4.3.3.1, the clock); text columns are trimmed to one
//! word and hold what setup's generator put there (not yet spec text).

use super::{
    check_ptr, heap_bounds, mix64, rng, TxCtx, Workload, WorkloadArgs, WorkloadInfo, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "tpcc",
    description:
        "TPC-C New-Order, one warehouse per thread, NURand keys (HOOP §IV-A, WHISPER/N-store)",
    build,
    check,
    check_incremental: None,
    sizing: super::Sizing {
        // ITEM and STOCK rows, then CUSTOMER rows of ten districts.
        initial: super::InitialSize::Records(&[
            ("workload.tpcc_items", 2 * REC),
            ("workload.tpcc_customers_per_district", DISTRICTS * REC),
        ]),
        default_item_bytes: super::DEFAULT_ITEM_BYTES,
        // An order record and up to 15 lines, each allocated on its own.
        per_tx: super::TxGrowth::Bytes(REC + MAX_OL * OL_STRIDE),
    },
};

pub const DISTRICTS: u64 = 10;
const REC: u64 = 64;
const OL_BYTES: u64 = 80;
/// Heap distance of consecutive order lines: each is its own 64 B-aligned
/// allocation of OL_BYTES, made right after the previous one.
const OL_STRIDE: u64 = 128;
const NO_BYTES: u64 = 32;
const MIN_OL: u64 = 5;
const MAX_OL: u64 = 15;

// Root fields.
const R_W_ID: u64 = 0;
const R_LOAD_SEED: u64 = 8;
const R_N_ITEMS: u64 = 16;
const R_N_CUST: u64 = 24;
const R_MAX_ORDERS: u64 = 32;
const R_WAREHOUSE: u64 = 40;
const R_DISTRICTS: u64 = 48;
const R_CUSTOMERS: u64 = 56;
const R_ITEMS: u64 = 64;
const R_STOCK: u64 = 72;
const R_ORDER_INDEX: u64 = 80;
const R_NEW_ORDERS: u64 = 88;
const R_CLOCK: u64 = 96;

// Record fields (word offsets in bytes).
const W_ID: u64 = 0;
const W_TAX: u64 = 8;
const W_YTD: u64 = 16;
const D_ID: u64 = 0;
const D_W_ID: u64 = 8;
const D_TAX: u64 = 16;
const D_YTD: u64 = 24;
const D_NEXT_O_ID: u64 = 32;
const C_ID: u64 = 0;
const C_D_ID: u64 = 8;
const C_W_ID: u64 = 16;
const C_LAST: u64 = 24;
const C_CREDIT: u64 = 32;
const C_DISCOUNT: u64 = 40;
const I_ID: u64 = 0;
const I_PRICE: u64 = 16;
const I_NAME: u64 = 24;
const I_DATA: u64 = 48;
const S_I_ID: u64 = 0;
const S_W_ID: u64 = 8;
const S_QUANTITY: u64 = 16;
const S_YTD: u64 = 24;
const S_ORDER_CNT: u64 = 32;
const S_REMOTE_CNT: u64 = 40;
const S_DIST: u64 = 48;
const S_DATA: u64 = 56;
const O_ID: u64 = 0;
const O_D_ID: u64 = 8;
const O_W_ID: u64 = 16;
const O_C_ID: u64 = 24;
const O_ENTRY_D: u64 = 32;
const O_CARRIER_ID: u64 = 40;
const O_OL_CNT: u64 = 48;
const O_ALL_LOCAL: u64 = 56;
const OL_O_ID: u64 = 0;
const OL_D_ID: u64 = 8;
const OL_W_ID: u64 = 16;
const OL_NUMBER: u64 = 24;
const OL_I_ID: u64 = 32;
const OL_SUPPLY_W_ID: u64 = 40;
const OL_DELIVERY_D: u64 = 48;
const OL_QUANTITY: u64 = 56;
const OL_AMOUNT: u64 = 64;
const OL_DIST_INFO: u64 = 72;

/// NURand A constants (TPC-C §2.1.6): customer ids and item ids.
pub const A_C_ID: u64 = 1023;
pub const A_OL_I_ID: u64 = 8191;
/// Instructions per order line (price x quantity, stock rule, brand
/// check) and per order (total with discount and taxes).
const LINE_INSTRS: u32 = 12;
const ORDER_INSTRS: u32 = 24;

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x
/// (TPC-C §2.1.6).
pub fn nurand(rng: &mut impl Rng, a: u64, c: u64, x: u64, y: u64) -> u64 {
    (((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1)) + x
}

/// Initial S_QUANTITY of item `i`: uniform in [10, 100] (§4.3.3.1), a
/// function of the load seed so the checker can replay stock exactly.
fn initial_quantity(seed: u64, i: u64) -> u64 {
    10 + mix64(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % 91
}

/// The New-Order stock rule (§2.4.2.2): decrease by the quantity if at
/// least 10 remain, otherwise restock by 91.
#[inline]
pub fn next_quantity(q: u64, ol_quantity: u64) -> u64 {
    if q >= ol_quantity + 10 {
        q - ol_quantity
    } else {
        q + 91 - ol_quantity
    }
}

pub(crate) struct Tpcc {
    rng: Xoshiro256PlusPlus,
    root: Addr,
    w_id: u64,
    load_seed: u64,
    n_items: u64,
    n_cust: u64,
    max_orders: u64,
    /// NURand run-time constants C (§2.1.6), chosen once per run
    /// (C_LAST at load time, C_ID and OL_I_ID for New-Order inputs).
    c_c_id: u64,
    c_ol_i_id: u64,
    c_last_load: u64,
    t: Tables,
}

#[derive(Clone, Copy, Default)]
struct Tables {
    warehouse: Addr,
    districts: Addr,
    customers: Addr,
    items: Addr,
    stock: Addr,
    order_index: Addr,
    new_orders: Addr,
}

impl Tables {
    fn read(img: &dyn MemRead, root: Addr) -> Self {
        Tables {
            warehouse: img.read_u64(root + R_WAREHOUSE),
            districts: img.read_u64(root + R_DISTRICTS),
            customers: img.read_u64(root + R_CUSTOMERS),
            items: img.read_u64(root + R_ITEMS),
            stock: img.read_u64(root + R_STOCK),
            order_index: img.read_u64(root + R_ORDER_INDEX),
            new_orders: img.read_u64(root + R_NEW_ORDERS),
        }
    }
    fn district(&self, d: u64) -> Addr {
        self.districts + (d - 1) * REC
    }
    fn customer(&self, n_cust: u64, d: u64, c: u64) -> Addr {
        self.customers + ((d - 1) * n_cust + (c - 1)) * REC
    }
    fn item(&self, i: u64) -> Addr {
        self.items + (i - 1) * REC
    }
    fn stock(&self, i: u64) -> Addr {
        self.stock + (i - 1) * REC
    }
    fn order_slot(&self, max_orders: u64, d: u64, o: u64) -> Addr {
        self.order_index + ((d - 1) * max_orders + (o - 1)) * 8
    }
    fn new_order(&self, max_orders: u64, d: u64, o: u64) -> Addr {
        self.new_orders + ((d - 1) * max_orders + (o - 1)) * NO_BYTES
    }
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Tpcc::new(a))
}

impl Tpcc {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let mut rng = rng(a.seed);
        let c_c_id = rng.gen_range(0..=A_C_ID);
        let c_ol_i_id = rng.gen_range(0..=A_OL_I_ID);
        Tpcc {
            root: a.region_base + ROOT_OFFSET,
            // One warehouse per thread: W_ID = thread number + 1.
            w_id: a.region_base / a.region_bytes.max(1) + 1,
            load_seed: rng.gen(),
            n_items: a.tpcc_items,
            n_cust: a.tpcc_customers,
            max_orders: a.max_tx.max(1),
            c_c_id,
            c_ol_i_id,
            c_last_load: rng.gen_range(0..=255),
            t: Tables::default(),
            rng,
        }
    }

    fn words(&mut self, ctx: &mut TxCtx, at: Addr, n: u64) {
        for i in 0..n {
            let w = self.rng.gen();
            ctx.store(at + i * 8, w);
        }
    }

    /// Execute New-Order for district `d`, customer `c` and `lines` of
    /// (item id, quantity); returns the new order id.
    pub(crate) fn new_order(
        &mut self,
        ctx: &mut TxCtx,
        d: u64,
        c: u64,
        lines: &[(u64, u64)],
    ) -> u64 {
        let t = self.t;
        let w_tax = ctx.load(t.warehouse + W_TAX);
        let dist = t.district(d);
        let d_tax = ctx.load(dist + D_TAX);
        let o_id = ctx.load(dist + D_NEXT_O_ID);
        ctx.store(dist + D_NEXT_O_ID, o_id + 1);
        let cust = t.customer(self.n_cust, d, c);
        let c_discount = ctx.load(cust + C_DISCOUNT);
        ctx.load(cust + C_LAST);
        ctx.load(cust + C_CREDIT);
        let entry_d = ctx.load(self.root + R_CLOCK) + 1;
        ctx.store(self.root + R_CLOCK, entry_d);

        let n = lines.len() as u64;
        // N-Store's do_new_order allocates each record separately (the
        // ORDER here; each ORDER-LINE below): the heap cursor is written
        // once per allocation.
        let o = ctx.alloc(REC);
        for (f, v) in [
            (O_ID, o_id),
            (O_D_ID, d),
            (O_W_ID, self.w_id),
            (O_C_ID, c),
            (O_ENTRY_D, entry_d),
            (O_CARRIER_ID, 0),
            (O_OL_CNT, n),
            (O_ALL_LOCAL, 1),
        ] {
            ctx.store(o + f, v);
        }
        ctx.store(t.order_slot(self.max_orders, d, o_id), o);
        let no = t.new_order(self.max_orders, d, o_id);
        ctx.store(no, o_id);
        ctx.store(no + 8, d);
        ctx.store(no + 16, self.w_id);

        let mut total_cents = 0u64;
        for (k, &(i, qty)) in lines.iter().enumerate() {
            let item = t.item(i);
            let price = ctx.load(item + I_PRICE);
            ctx.load(item + I_NAME);
            ctx.load(item + I_DATA);
            let s = t.stock(i);
            let q = ctx.load(s + S_QUANTITY);
            let ytd = ctx.load(s + S_YTD);
            let cnt = ctx.load(s + S_ORDER_CNT);
            let dist_info = ctx.load(s + S_DIST);
            ctx.load(s + S_DATA);
            ctx.compute(LINE_INSTRS);
            ctx.store(s + S_QUANTITY, next_quantity(q, qty));
            ctx.store(s + S_YTD, ytd + qty);
            ctx.store(s + S_ORDER_CNT, cnt + 1);
            let amount = qty * price;
            total_cents += amount;
            let ol = ctx.alloc(OL_BYTES);
            debug_assert_eq!(ol, o + REC + k as u64 * OL_STRIDE);
            for (f, v) in [
                (OL_O_ID, o_id),
                (OL_D_ID, d),
                (OL_W_ID, self.w_id),
                (OL_NUMBER, k as u64 + 1),
                (OL_I_ID, i),
                (OL_SUPPLY_W_ID, self.w_id),
                (OL_DELIVERY_D, 0),
                (OL_QUANTITY, qty),
                (OL_AMOUNT, amount),
                (OL_DIST_INFO, dist_info),
            ] {
                ctx.store(ol + f, v);
            }
        }
        // The total goes back to the terminal, not to the database.
        ctx.compute(ORDER_INSTRS);
        let _total = total_cents as f64
            * (1.0 - c_discount as f64 / 1e4)
            * (1.0 + (w_tax + d_tax) as f64 / 1e4);
        o_id
    }
}

impl Workload for Tpcc {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        let root = self.root;
        let mo = self.max_orders;
        let t = Tables {
            warehouse: ctx.alloc(REC),
            districts: ctx.alloc(DISTRICTS * REC),
            customers: ctx.alloc(DISTRICTS * self.n_cust * REC),
            items: ctx.alloc(self.n_items * REC),
            stock: ctx.alloc(self.n_items * REC),
            order_index: ctx.alloc(DISTRICTS * mo * 8),
            new_orders: ctx.alloc(DISTRICTS * mo * NO_BYTES),
        };
        self.t = t;
        for (f, v) in [
            (R_W_ID, self.w_id),
            (R_LOAD_SEED, self.load_seed),
            (R_N_ITEMS, self.n_items),
            (R_N_CUST, self.n_cust),
            (R_MAX_ORDERS, mo),
            (R_WAREHOUSE, t.warehouse),
            (R_DISTRICTS, t.districts),
            (R_CUSTOMERS, t.customers),
            (R_ITEMS, t.items),
            (R_STOCK, t.stock),
            (R_ORDER_INDEX, t.order_index),
            (R_NEW_ORDERS, t.new_orders),
            (R_CLOCK, 0),
        ] {
            ctx.store(root + f, v);
        }
        // §4.3.3.1: W_TAX, D_TAX uniform [0, 0.2]; W_YTD 300,000.00,
        // D_YTD 30,000.00 (cents); names/addresses are random words.
        ctx.store(t.warehouse + W_ID, self.w_id);
        let w_tax = self.rng.gen_range(0..=2000);
        ctx.store(t.warehouse + W_TAX, w_tax);
        ctx.store(t.warehouse + W_YTD, 30_000_000);
        self.words(ctx, t.warehouse + 24, 5);
        for d in 1..=DISTRICTS {
            let a = t.district(d);
            ctx.store(a + D_ID, d);
            ctx.store(a + D_W_ID, self.w_id);
            let d_tax = self.rng.gen_range(0..=2000);
            ctx.store(a + D_TAX, d_tax);
            ctx.store(a + D_YTD, 3_000_000);
            ctx.store(a + D_NEXT_O_ID, 1);
            self.words(ctx, a + 40, 3);
            for c in 1..=self.n_cust {
                let a = t.customer(self.n_cust, d, c);
                ctx.store(a + C_ID, c);
                ctx.store(a + C_D_ID, d);
                ctx.store(a + C_W_ID, self.w_id);
                // C_LAST: syllable number c-1 for the first 1,000, then
                // NURand(255, 0, 999) (§4.3.2.3, §4.3.3.1).
                let last = if c <= 1000 {
                    c - 1
                } else {
                    nurand(&mut self.rng, 255, self.c_last_load, 0, 999)
                };
                ctx.store(a + C_LAST, last);
                ctx.store(a + C_CREDIT, u64::from(self.rng.gen_bool(0.1))); // 10% "BC"
                let disc = self.rng.gen_range(0..=5000);
                ctx.store(a + C_DISCOUNT, disc);
                ctx.store(a + 48, (-1000i64) as u64); // C_BALANCE -10.00
                ctx.store(a + 56, 1000); // C_YTD_PAYMENT 10.00
            }
        }
        for i in 1..=self.n_items {
            let a = t.item(i);
            ctx.store(a + I_ID, i);
            let im = self.rng.gen_range(1..=10_000);
            ctx.store(a + 8, im); // I_IM_ID
            let price = self.rng.gen_range(100..=10_000);
            ctx.store(a + I_PRICE, price);
            self.words(ctx, a + I_NAME, 3);
            ctx.store(a + I_DATA, u64::from(self.rng.gen_bool(0.1))); // "ORIGINAL"
            let s = t.stock(i);
            ctx.store(s + S_I_ID, i);
            ctx.store(s + S_W_ID, self.w_id);
            ctx.store(s + S_QUANTITY, initial_quantity(self.load_seed, i));
            let dist = self.rng.gen();
            ctx.store(s + S_DIST, dist);
            ctx.store(s + S_DATA, u64::from(self.rng.gen_bool(0.1)));
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        // §2.4.1: inputs of one New-Order.
        let d = self.rng.gen_range(1..=DISTRICTS);
        let c = nurand(&mut self.rng, A_C_ID, self.c_c_id, 1, self.n_cust);
        let n = self.rng.gen_range(MIN_OL..=MAX_OL) as usize;
        let mut lines = [(0u64, 0u64); MAX_OL as usize];
        for l in lines.iter_mut().take(n) {
            *l = (
                nurand(&mut self.rng, A_OL_I_ID, self.c_ol_i_id, 1, self.n_items),
                self.rng.gen_range(1..=10),
            );
        }
        self.new_order(ctx, d, c, &lines[..n]);
    }
}

fn field_err(what: &str, at: Addr, field: &str, got: u64, want: u64) -> String {
    format!("tpcc: {what} at {at:#x}: {field} is {got}, expected {want}")
}

fn expect(
    img: &dyn MemRead,
    what: &str,
    at: Addr,
    fields: &[(&str, u64, u64)],
) -> Result<(), String> {
    for &(name, off, want) in fields {
        let got = img.read_u64(at + off);
        if got != want {
            return Err(field_err(what, at, name, got, want));
        }
    }
    Ok(())
}

/// Validate one warehouse from the image; returns the number of orders.
fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    let bounds = heap_bounds(img, region_base)?;
    let heap = bounds.1 - bounds.0;
    let root = region_base + ROOT_OFFSET;
    let w = img.read_u64(root + R_W_ID);
    let seed = img.read_u64(root + R_LOAD_SEED);
    let n_items = img.read_u64(root + R_N_ITEMS);
    let n_cust = img.read_u64(root + R_N_CUST);
    let mo = img.read_u64(root + R_MAX_ORDERS);
    let clock = img.read_u64(root + R_CLOCK);
    if n_items == 0
        || n_cust == 0
        || mo == 0
        || n_items > heap / REC
        || n_cust > heap / REC
        || mo > heap / 8
    {
        return Err(format!(
            "tpcc: table sizes items={n_items} customers={n_cust} max_orders={mo} do not fit the heap"
        ));
    }
    let t = Tables::read(img, root);
    check_ptr(t.warehouse, REC, bounds, "tpcc WAREHOUSE")?;
    check_ptr(t.districts, DISTRICTS * REC, bounds, "tpcc DISTRICT")?;
    check_ptr(
        t.customers,
        DISTRICTS * n_cust * REC,
        bounds,
        "tpcc CUSTOMER",
    )?;
    check_ptr(t.items, n_items * REC, bounds, "tpcc ITEM")?;
    check_ptr(t.stock, n_items * REC, bounds, "tpcc STOCK")?;
    check_ptr(
        t.order_index,
        DISTRICTS * mo * 8,
        bounds,
        "tpcc order index",
    )?;
    check_ptr(
        t.new_orders,
        DISTRICTS * mo * NO_BYTES,
        bounds,
        "tpcc NEW-ORDER",
    )?;
    // Every order occupies a heap block of at least REC + 5 lines.
    if clock > DISTRICTS * mo || clock > heap / (REC + MIN_OL * OL_STRIDE) {
        return Err(format!("tpcc: clock {clock} exceeds the order capacity"));
    }

    expect(img, "WAREHOUSE", t.warehouse, &[("w_id", W_ID, w)])?;
    let mut d_ytd_sum = 0u64;
    for i in 1..=n_items {
        expect(img, "ITEM", t.item(i), &[("i_id", I_ID, i)])?;
    }
    for d in 1..=DISTRICTS {
        for c in 1..=n_cust {
            expect(
                img,
                "CUSTOMER",
                t.customer(n_cust, d, c),
                &[
                    ("c_id", C_ID, c),
                    ("c_d_id", C_D_ID, d),
                    ("c_w_id", C_W_ID, w),
                ],
            )?;
        }
    }
    // (district, o_id) of each order, by o_entry_d.
    let mut by_entry: Vec<(u64, u64)> = vec![(0, 0); clock as usize];
    let mut orders = 0u64;
    for d in 1..=DISTRICTS {
        let da = t.district(d);
        expect(
            img,
            "DISTRICT",
            da,
            &[("d_id", D_ID, d), ("d_w_id", D_W_ID, w)],
        )?;
        d_ytd_sum = d_ytd_sum.wrapping_add(img.read_u64(da + D_YTD));
        let next = img.read_u64(da + D_NEXT_O_ID);
        if next == 0 || next - 1 > mo {
            return Err(format!(
                "tpcc: district {d}: d_next_o_id {next} outside 1..={}",
                mo + 1
            ));
        }
        for o in 1..next {
            let oa = img.read_u64(t.order_slot(mo, d, o));
            check_ptr(oa, REC, bounds, "tpcc ORDER")?;
            let ol_cnt = img.read_u64(oa + O_OL_CNT);
            if !(MIN_OL..=MAX_OL).contains(&ol_cnt) {
                return Err(field_err("ORDER", oa, "o_ol_cnt", ol_cnt, MIN_OL));
            }
            check_ptr(
                oa,
                REC + (ol_cnt - 1) * OL_STRIDE + OL_BYTES,
                bounds,
                "tpcc ORDER block",
            )?;
            expect(
                img,
                "ORDER",
                oa,
                &[
                    ("o_id", O_ID, o),
                    ("o_d_id", O_D_ID, d),
                    ("o_w_id", O_W_ID, w),
                    ("o_carrier_id", O_CARRIER_ID, 0),
                    ("o_all_local", O_ALL_LOCAL, 1),
                ],
            )?;
            let c = img.read_u64(oa + O_C_ID);
            if c == 0 || c > n_cust {
                return Err(field_err("ORDER", oa, "o_c_id", c, 1));
            }
            let e = img.read_u64(oa + O_ENTRY_D);
            if e == 0 || e > clock || by_entry[(e - 1) as usize] != (0, 0) {
                return Err(format!(
                    "tpcc: order ({d}, {o}) has o_entry_d {e}: not a fresh value in 1..={clock}"
                ));
            }
            by_entry[(e - 1) as usize] = (d, o);
            let no = t.new_order(mo, d, o);
            expect(
                img,
                "NEW-ORDER",
                no,
                &[("no_o_id", 0, o), ("no_d_id", 8, d), ("no_w_id", 16, w)],
            )?;
            for k in 0..ol_cnt {
                let ol = oa + REC + k * OL_STRIDE;
                expect(
                    img,
                    "ORDER-LINE",
                    ol,
                    &[
                        ("ol_o_id", OL_O_ID, o),
                        ("ol_d_id", OL_D_ID, d),
                        ("ol_w_id", OL_W_ID, w),
                        ("ol_number", OL_NUMBER, k + 1),
                        ("ol_supply_w_id", OL_SUPPLY_W_ID, w),
                        ("ol_delivery_d", OL_DELIVERY_D, 0),
                    ],
                )?;
                let i = img.read_u64(ol + OL_I_ID);
                if i == 0 || i > n_items {
                    return Err(field_err("ORDER-LINE", ol, "ol_i_id", i, 1));
                }
                let qty = img.read_u64(ol + OL_QUANTITY);
                if !(1..=10).contains(&qty) {
                    return Err(field_err("ORDER-LINE", ol, "ol_quantity", qty, 1));
                }
                let price = img.read_u64(t.item(i) + I_PRICE);
                expect(
                    img,
                    "ORDER-LINE",
                    ol,
                    &[
                        ("ol_amount", OL_AMOUNT, qty.wrapping_mul(price)),
                        (
                            "ol_dist_info",
                            OL_DIST_INFO,
                            img.read_u64(t.stock(i) + S_DIST),
                        ),
                    ],
                )?;
            }
            orders += 1;
        }
        // Nothing past the last order (a half-made order would show here).
        if next <= mo {
            let slot = img.read_u64(t.order_slot(mo, d, next));
            let no = img.read_u64(t.new_order(mo, d, next));
            if slot != 0 || no != 0 {
                return Err(format!(
                    "tpcc: district {d}: order {next} exists past d_next_o_id"
                ));
            }
        }
    }
    // TPC-C consistency condition 1: W_YTD = sum(D_YTD).
    let w_ytd = img.read_u64(t.warehouse + W_YTD);
    if w_ytd != d_ytd_sum {
        return Err(format!("tpcc: w_ytd {w_ytd} != sum of d_ytd {d_ytd_sum}"));
    }
    if orders != clock {
        return Err(format!("tpcc: {orders} orders but the clock is {clock}"));
    }
    // Replay the stock rule over every order line in entry order.
    let mut stock: Vec<(u64, u64, u64)> = (1..=n_items)
        .map(|i| (initial_quantity(seed, i), 0, 0))
        .collect();
    for &(d, o) in &by_entry {
        let oa = img.read_u64(t.order_slot(mo, d, o));
        for k in 0..img.read_u64(oa + O_OL_CNT) {
            let ol = oa + REC + k * OL_STRIDE;
            let i = img.read_u64(ol + OL_I_ID);
            let qty = img.read_u64(ol + OL_QUANTITY);
            let s = &mut stock[(i - 1) as usize];
            *s = (next_quantity(s.0, qty), s.1 + qty, s.2 + 1);
        }
    }
    for (i, &(q, ytd, cnt)) in (1..).zip(&stock) {
        expect(
            img,
            "STOCK",
            t.stock(i),
            &[
                ("s_i_id", S_I_ID, i),
                ("s_w_id", S_W_ID, w),
                ("s_quantity", S_QUANTITY, q),
                ("s_ytd", S_YTD, ytd),
                ("s_order_cnt", S_ORDER_CNT, cnt),
                ("s_remote_cnt", S_REMOTE_CNT, 0),
            ],
        )?;
    }
    Ok(orders)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::SparseImage;
    use crate::workloads::testutil::*;

    #[test]
    fn nurand_in_range_and_skewed() {
        let mut r = rng(2);
        let (a, c, x, y) = (A_OL_I_ID, 4321, 1, 100_000);
        let mut counts = vec![0u32; (y + 1) as usize];
        for _ in 0..200_000 {
            let v = nurand(&mut r, a, c, x, y);
            assert!((x..=y).contains(&v));
            counts[v as usize] += 1;
        }
        // Non-uniform: the most frequent id is far above the mean (2).
        assert!(*counts.iter().max().unwrap() > 10);
        assert_eq!(next_quantity(50, 10), 40);
        assert_eq!(next_quantity(19, 10), 100);
        assert_eq!(next_quantity(20, 10), 10);
    }

    #[test]
    fn matches_reference_model() {
        let a = args(64, 0, 300, 0.0);
        let mut img = SparseImage::new();
        let mut t = Tpcc::new(&a);
        with_ctx(&mut img, false, |ctx| t.setup(ctx));
        check(&img, BASE, 64).unwrap();
        let mut next = [1u64; DISTRICTS as usize];
        let mut qty: Vec<u64> = (1..=t.n_items)
            .map(|i| img.read_u64(t.t.stock(i) + S_QUANTITY))
            .collect();
        let mut r = rng(8);
        for _ in 0..300 {
            let d = r.gen_range(1..=DISTRICTS);
            let c = r.gen_range(1..=t.n_cust);
            let n = r.gen_range(5..=15);
            // A few hot items so the restock rule triggers.
            let lines: Vec<(u64, u64)> = (0..n)
                .map(|_| (r.gen_range(1..=20), r.gen_range(1..=10)))
                .collect();
            let o = with_ctx(&mut img, true, |ctx| t.new_order(ctx, d, c, &lines)).0;
            assert_eq!(o, next[(d - 1) as usize]);
            next[(d - 1) as usize] += 1;
            for &(i, q) in &lines {
                qty[(i - 1) as usize] = next_quantity(qty[(i - 1) as usize], q);
            }
        }
        assert_eq!(check(&img, BASE, 64).unwrap(), 300);
        for d in 1..=DISTRICTS {
            assert_eq!(
                img.read_u64(t.t.district(d) + D_NEXT_O_ID),
                next[(d - 1) as usize]
            );
        }
        for i in 1..=t.n_items {
            assert_eq!(
                img.read_u64(t.t.stock(i) + S_QUANTITY),
                qty[(i - 1) as usize],
                "item {i}"
            );
        }
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        let a = args(64, 0, 200, 0.0);
        let (img, stores) = run_direct(&INFO, &a, 200);
        assert_eq!(check(&img, BASE, 64).unwrap(), 200);
        // ~10 lines x 13 stores + ~15 per order.
        assert!(stores > 100.0 && stores < 200.0, "{stores}");
        let root = BASE + ROOT_OFFSET;
        let t = Tables::read(&img, root);
        let mo = img.read_u64(root + R_MAX_ORDERS);
        let d = (1..=DISTRICTS)
            .find(|&d| img.read_u64(t.district(d) + D_NEXT_O_ID) > 2)
            .unwrap();
        let oa = img.read_u64(t.order_slot(mo, d, 1));
        let ol = oa + REC;
        let i = img.read_u64(ol + OL_I_ID);
        assert_detects(&INFO, &img, t.district(d) + D_NEXT_O_ID, 64);
        assert_detects(&INFO, &img, t.order_slot(mo, d, 2), 64);
        assert_detects(&INFO, &img, oa + O_OL_CNT, 64);
        assert_detects(&INFO, &img, ol + OL_QUANTITY, 64);
        assert_detects(&INFO, &img, ol + OL_I_ID, 64);
        assert_detects(&INFO, &img, t.stock(i) + S_QUANTITY, 64);
        assert_detects(&INFO, &img, t.stock(i) + S_ORDER_CNT, 64);
        assert_detects(&INFO, &img, t.new_order(mo, d, 1), 64);
        assert_detects(&INFO, &img, root + R_CLOCK, 64);
        assert_detects(&INFO, &img, t.warehouse + W_YTD, 64);
    }

    /// New-Order with n lines: d_next_o_id, the clock, the heap cursor, the
    /// ORDER row (8 words), its index slot, the NEW-ORDER row (3), and per
    /// line 3 STOCK words, the heap cursor again (each ORDER-LINE is its own
    /// allocation) and the ORDER-LINE row (10): 15 + 14 n words, 3 + 2 n
    /// records.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        let t = tx_stores(&INFO, &args(64, 0, 300, 0.0), 300);
        for &(s, _) in &t {
            assert!(
                (15 + 14 * 5..=15 + 14 * 15).contains(&s) && (s - 15) % 14 == 0,
                "{s}"
            );
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check(
            "tpcc",
            2,
            200,
            &[
                ("workload.tpcc_items", "1000"),
                ("workload.tpcc_customers_per_district", "100"),
            ],
        );
    }
}
