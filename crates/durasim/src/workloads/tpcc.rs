//! TPC-C New-Order (HOOP paper §IV-A: WHISPER's TPC-C on N-store, "new
//! order transactions, the most write intensive"). One warehouse per
//! thread with its 10 districts, customers, the ITEM table, STOCK,
//! ORDER, NEW-ORDER and ORDER-LINE. Input generation and the transaction
//! profile follow the TPC-C specification v5.11 (§2.4.1, §2.4.2, NURand
//! §2.1.6, initial population §4.3.3.1); fields are trimmed to the ones
//! New-Order reads or writes plus the keys. `workload.item_bytes` and
//! `workload.initial_items` do not apply (record sizes are fixed).
//!
//! Simplifications (docs/model/workloads.md): every order line is supplied by the
//! home warehouse (remote warehouses belong to other threads, and threads
//! own disjoint data); the 1% rollback of an unused item id is not
//! generated; the 3,000 initial orders per district are not loaded (New-
//! Order never reads them), so order ids start at 1; text columns are
//! trimmed to one 8-byte word each (I_NAME: three); o_entry_d is a
//! per-warehouse logical clock.
//!
//! Layout: the root holds table pointers and sizes; records are 64 B
//! (order lines 80 B). The ORDER record and each ORDER-LINE are allocated
//! separately, as N-Store's `do_new_order` does (so the heap cursor is
//! written 1 + o_ol_cnt times per transaction); the bump allocator places
//! them one after the other (lines 128 B apart). Per district, an index
//! array o_id -> order and a NEW-ORDER array.
//!
//! Values: ids, counters, quantities, money in cents (§4.3.3.1) and the
//! clock are the structure's own. Text columns follow `workload.values`:
//! under `realistic` they hold the specification's strings (§4.3.2.2-3,
//! §4.3.3.1), NUL-padded as fixed-width CHAR columns and trimmed to their
//! word: a-strings of random alphanumeric characters with the column's
//! length range (W_/D_NAME 6-10, streets and cities 10-20, I_NAME 14-24,
//! I_DATA/S_DATA 26-50, S_DIST_xx 24), "ORIGINAL" in 10% of I_DATA and
//! S_DATA, C_LAST as its three syllables, C_CREDIT "GC"/"BC"; OL_DIST_INFO
//! copies the district's S_DIST_xx. Under `random` they keep the packed
//! numbers durasim stored before (random words, 0/1 flags, C_LAST's
//! number); under `zero` they are 0. (WHISPER's N-Store fills its strings
//! with one character repeated, `get_rand_astring`; the specification's
//! random characters are used here.) C_DATA is not stored: New-Order never
//! touches it.

use super::labels::{self, Heap, Label};
use super::{
    check_ptr, heap_bounds, mix64, rng, values, TxCtx, Workload, WorkloadArgs, WorkloadInfo,
    ROOT_OFFSET,
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
    describe,
    sizing: super::Sizing {
        // ITEM and STOCK rows, then CUSTOMER rows of ten districts.
        initial: super::InitialSize::Records(&[
            ("workload.tpcc_items", 2 * REC),
            ("workload.tpcc_customers_per_district", DISTRICTS * REC),
        ]),
        default_item_bytes: super::DEFAULT_ITEM_BYTES,
        // An order record and up to 15 lines, each allocated on its own.
        per_tx: super::TxGrowth::Bytes(REC + MAX_OL * OL_STRIDE),
        items_param: None,
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

/// Tables and columns whose text is drawn (`Tpcc::text_bits`).
const T_WAREHOUSE: u64 = 1;
const T_DISTRICT: u64 = 2;
const T_ITEM_NAME: u64 = 3;
const T_ITEM_DATA: u64 = 4;
const T_STOCK_DIST: u64 = 5;
const T_STOCK_DATA: u64 = 6;

/// C_LAST (§4.3.2.3): the syllables of the three digits of `n` (0..=999)
/// concatenated, e.g. 371 = "PRICALLYOUGHT"; returns the length.
pub fn c_last(n: u64, out: &mut [u8; 15]) -> usize {
    const SYL: [&[u8]; 10] = [
        b"BAR", b"OUGHT", b"ABLE", b"PRI", b"PRES", b"ESE", b"ANTI", b"CALLY", b"ATION", b"EING",
    ];
    let mut len = 0;
    for d in [n / 100, n / 10 % 10, n % 10] {
        let s = SYL[d as usize];
        out[len..len + s.len()].copy_from_slice(s);
        len += s.len();
    }
    len
}

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
    /// Text columns (`workload.values`).
    vm: super::ValueModel,
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
            vm: a.vm(),
            t: Tables::default(),
            rng,
        }
    }

    /// Text columns of one row, one word each: column k a random a-string
    /// [x..y] (§4.3.3.1), trimmed to its first 8 characters
    /// ([`values::ValueModel::text_or`]).
    fn words(&mut self, ctx: &mut TxCtx, at: Addr, table: u64, row: u64, cols: &[(usize, usize)]) {
        for (k, &(x, y)) in cols.iter().enumerate() {
            let old = self.rng.gen();
            let mut t = [0u8; 64];
            let n = values::astring(self.text_bits(table, row, k as u64), x, y, &mut t);
            ctx.store(at + k as u64 * 8, self.vm.text_or(&t[..n], old));
        }
    }

    /// The random bits of text column `col` of `row` in `table`: a
    /// function of the load seed, so the text is the same in any order.
    fn text_bits(&self, table: u64, row: u64, col: u64) -> u64 {
        mix64(
            self.load_seed
                ^ table.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ row.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
                ^ col.rotate_left(48),
        )
    }

    /// I_DATA / S_DATA (§4.3.3.1): a-string [26..50]; in 10% of rows
    /// (`original`) "ORIGINAL" at a random position. The column is trimmed
    /// to one word: "ORIGINAL" where it holds that marker, else the
    /// string's first 8 characters.
    fn data_column(&self, table: u64, row: u64, original: bool) -> u64 {
        let old = u64::from(original);
        if original {
            return self.vm.text_or(b"ORIGINAL", old);
        }
        let mut t = [0u8; 64];
        let n = values::astring(self.text_bits(table, row, 0), 26, 50, &mut t);
        self.vm.text_or(&t[..n], old)
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
        // D_YTD 30,000.00 (cents); names and addresses a-strings, one word
        // each (W_NAME, W_STREET_1, W_STREET_2, W_CITY; W_STATE and W_ZIP
        // share the fifth word as one 8-character a-string).
        ctx.store(t.warehouse + W_ID, self.w_id);
        let w_tax = self.rng.gen_range(0..=2000);
        ctx.store(t.warehouse + W_TAX, w_tax);
        ctx.store(t.warehouse + W_YTD, 30_000_000);
        self.words(
            ctx,
            t.warehouse + 24,
            T_WAREHOUSE,
            self.w_id,
            &[(6, 10), (10, 20), (10, 20), (10, 20), (8, 8)],
        );
        for d in 1..=DISTRICTS {
            let a = t.district(d);
            ctx.store(a + D_ID, d);
            ctx.store(a + D_W_ID, self.w_id);
            let d_tax = self.rng.gen_range(0..=2000);
            ctx.store(a + D_TAX, d_tax);
            ctx.store(a + D_YTD, 3_000_000);
            ctx.store(a + D_NEXT_O_ID, 1);
            // D_NAME, D_STREET_1, D_CITY.
            self.words(ctx, a + 40, T_DISTRICT, d, &[(6, 10), (10, 20), (10, 20)]);
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
                let mut name = [0u8; 15];
                let n = c_last(last, &mut name);
                ctx.store(a + C_LAST, self.vm.text_or(&name[..n], last));
                let bc = self.rng.gen_bool(0.1); // 10% "BC", else "GC"
                let credit: &[u8] = if bc { b"BC" } else { b"GC" };
                ctx.store(a + C_CREDIT, self.vm.text_or(credit, u64::from(bc)));
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
            // I_NAME: a-string [14..24], all three words of it.
            let mut name = [0u8; 24];
            let n = values::astring(self.text_bits(T_ITEM_NAME, i, 0), 14, 24, &mut name);
            for k in 0..3 {
                let old = self.rng.gen();
                let w = self.vm.text_or(&name[(8 * k).min(n)..n], old);
                ctx.store(a + I_NAME + 8 * k as u64, w);
            }
            let original = self.rng.gen_bool(0.1);
            ctx.store(a + I_DATA, self.data_column(T_ITEM_DATA, i, original));
            let s = t.stock(i);
            ctx.store(s + S_I_ID, i);
            ctx.store(s + S_W_ID, self.w_id);
            ctx.store(s + S_QUANTITY, initial_quantity(self.load_seed, i));
            // S_DIST_xx: a-string [24..24], trimmed to one word.
            let old = self.rng.gen();
            let mut dist = [0u8; 24];
            let n = values::astring(self.text_bits(T_STOCK_DIST, i, 0), 24, 24, &mut dist);
            ctx.store(s + S_DIST, self.vm.text_or(&dist[..n], old));
            let original = self.rng.gen_bool(0.1);
            ctx.store(s + S_DATA, self.data_column(T_STOCK_DATA, i, original));
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

/// The warehouse's root as the image holds it, bounds-checked.
struct Header {
    bounds: (Addr, Addr),
    w: u64,
    seed: u64,
    n_items: u64,
    n_cust: u64,
    mo: u64,
    clock: u64,
    t: Tables,
}

/// Validate one warehouse from the image; returns the number of orders.
fn check(img: &dyn MemRead, region_base: Addr, _item_bytes: u64) -> Result<u64, String> {
    let h = read_header(img, region_base)?;
    check_fixed_rows(img, &h)?;
    // (district, o_id) of each order, by o_entry_d.
    let mut by_entry: Vec<(u64, u64)> = vec![(0, 0); h.clock as usize];
    let (mut orders, mut d_ytd_sum) = (0u64, 0u64);
    for d in 1..=DISTRICTS {
        let (n, ytd) = check_district(img, &h, d, &mut by_entry)?;
        orders += n;
        d_ytd_sum = d_ytd_sum.wrapping_add(ytd);
    }
    // TPC-C consistency condition 1: W_YTD = sum(D_YTD).
    let w_ytd = img.read_u64(h.t.warehouse + W_YTD);
    if w_ytd != d_ytd_sum {
        return Err(format!("tpcc: w_ytd {w_ytd} != sum of d_ytd {d_ytd_sum}"));
    }
    if orders != h.clock {
        return Err(format!(
            "tpcc: {orders} orders but the clock is {}",
            h.clock
        ));
    }
    check_stock_replay(img, &h, &by_entry)?;
    Ok(orders)
}

/// Root fields, table sizes and table pointers against the heap.
fn read_header(img: &dyn MemRead, region_base: Addr) -> Result<Header, String> {
    let bounds = heap_bounds(img, region_base)?;
    let heap = bounds.1 - bounds.0;
    let root = region_base + ROOT_OFFSET;
    let h = Header {
        bounds,
        w: img.read_u64(root + R_W_ID),
        seed: img.read_u64(root + R_LOAD_SEED),
        n_items: img.read_u64(root + R_N_ITEMS),
        n_cust: img.read_u64(root + R_N_CUST),
        mo: img.read_u64(root + R_MAX_ORDERS),
        clock: img.read_u64(root + R_CLOCK),
        t: Tables::read(img, root),
    };
    let (n_items, n_cust, mo) = (h.n_items, h.n_cust, h.mo);
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
    let t = &h.t;
    for (at, bytes, name) in [
        (t.warehouse, REC, "tpcc WAREHOUSE"),
        (t.districts, DISTRICTS * REC, "tpcc DISTRICT"),
        (t.customers, DISTRICTS * n_cust * REC, "tpcc CUSTOMER"),
        (t.items, n_items * REC, "tpcc ITEM"),
        (t.stock, n_items * REC, "tpcc STOCK"),
        (t.order_index, DISTRICTS * mo * 8, "tpcc order index"),
        (t.new_orders, DISTRICTS * mo * NO_BYTES, "tpcc NEW-ORDER"),
    ] {
        check_ptr(at, bytes, bounds, name)?;
    }
    // Every order occupies a heap block of at least REC + 5 lines.
    if h.clock > DISTRICTS * mo || h.clock > heap / (REC + MIN_OL * OL_STRIDE) {
        return Err(format!(
            "tpcc: clock {} exceeds the order capacity",
            h.clock
        ));
    }
    Ok(h)
}

/// The rows New-Order never inserts: WAREHOUSE, ITEM and CUSTOMER keys.
fn check_fixed_rows(img: &dyn MemRead, h: &Header) -> Result<(), String> {
    let t = &h.t;
    expect(img, "WAREHOUSE", t.warehouse, &[("w_id", W_ID, h.w)])?;
    for i in 1..=h.n_items {
        expect(img, "ITEM", t.item(i), &[("i_id", I_ID, i)])?;
    }
    for d in 1..=DISTRICTS {
        for c in 1..=h.n_cust {
            expect(
                img,
                "CUSTOMER",
                t.customer(h.n_cust, d, c),
                &[
                    ("c_id", C_ID, c),
                    ("c_d_id", C_D_ID, d),
                    ("c_w_id", C_W_ID, h.w),
                ],
            )?;
        }
    }
    Ok(())
}

/// District `d` and its orders 1..d_next_o_id; records each order's entry
/// stamp in `by_entry`. Returns (orders, d_ytd).
fn check_district(
    img: &dyn MemRead,
    h: &Header,
    d: u64,
    by_entry: &mut [(u64, u64)],
) -> Result<(u64, u64), String> {
    let (t, mo) = (&h.t, h.mo);
    let da = t.district(d);
    expect(
        img,
        "DISTRICT",
        da,
        &[("d_id", D_ID, d), ("d_w_id", D_W_ID, h.w)],
    )?;
    let d_ytd = img.read_u64(da + D_YTD);
    let next = img.read_u64(da + D_NEXT_O_ID);
    if next == 0 || next - 1 > mo {
        return Err(format!(
            "tpcc: district {d}: d_next_o_id {next} outside 1..={}",
            mo + 1
        ));
    }
    for o in 1..next {
        let oa = img.read_u64(t.order_slot(mo, d, o));
        let e = check_order(img, h, d, o, oa)?;
        if by_entry[(e - 1) as usize] != (0, 0) {
            return Err(format!(
                "tpcc: order ({d}, {o}) has o_entry_d {e}: not a fresh value in 1..={}",
                h.clock
            ));
        }
        by_entry[(e - 1) as usize] = (d, o);
        check_order_lines(img, h, d, o, oa)?;
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
    Ok((next - 1, d_ytd))
}

/// ORDER row `oa` of order (`d`, `o`) and its NEW-ORDER row; returns its
/// o_entry_d (in 1..=clock).
fn check_order(img: &dyn MemRead, h: &Header, d: u64, o: u64, oa: Addr) -> Result<u64, String> {
    check_ptr(oa, REC, h.bounds, "tpcc ORDER")?;
    let ol_cnt = img.read_u64(oa + O_OL_CNT);
    if !(MIN_OL..=MAX_OL).contains(&ol_cnt) {
        return Err(field_err("ORDER", oa, "o_ol_cnt", ol_cnt, MIN_OL));
    }
    check_ptr(
        oa,
        REC + (ol_cnt - 1) * OL_STRIDE + OL_BYTES,
        h.bounds,
        "tpcc ORDER block",
    )?;
    expect(
        img,
        "ORDER",
        oa,
        &[
            ("o_id", O_ID, o),
            ("o_d_id", O_D_ID, d),
            ("o_w_id", O_W_ID, h.w),
            ("o_carrier_id", O_CARRIER_ID, 0),
            ("o_all_local", O_ALL_LOCAL, 1),
        ],
    )?;
    let c = img.read_u64(oa + O_C_ID);
    if c == 0 || c > h.n_cust {
        return Err(field_err("ORDER", oa, "o_c_id", c, 1));
    }
    let e = img.read_u64(oa + O_ENTRY_D);
    if e == 0 || e > h.clock {
        return Err(format!(
            "tpcc: order ({d}, {o}) has o_entry_d {e}: not a fresh value in 1..={}",
            h.clock
        ));
    }
    expect(
        img,
        "NEW-ORDER",
        h.t.new_order(h.mo, d, o),
        &[("no_o_id", 0, o), ("no_d_id", 8, d), ("no_w_id", 16, h.w)],
    )?;
    Ok(e)
}

/// The ORDER-LINE rows of order (`d`, `o`) at `oa`: keys, quantity, amount
/// = quantity x I_PRICE and the district's S_DIST text.
fn check_order_lines(
    img: &dyn MemRead,
    h: &Header,
    d: u64,
    o: u64,
    oa: Addr,
) -> Result<(), String> {
    let (t, w) = (&h.t, h.w);
    for k in 0..img.read_u64(oa + O_OL_CNT) {
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
        if i == 0 || i > h.n_items {
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
    Ok(())
}

/// Replay the stock rule over every order line in entry order and compare
/// each STOCK row.
fn check_stock_replay(
    img: &dyn MemRead,
    h: &Header,
    by_entry: &[(u64, u64)],
) -> Result<(), String> {
    let t = &h.t;
    let mut stock: Vec<(u64, u64, u64)> = (1..=h.n_items)
        .map(|i| (initial_quantity(h.seed, i), 0, 0))
        .collect();
    for &(d, o) in by_entry {
        let oa = img.read_u64(t.order_slot(h.mo, d, o));
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
                ("s_w_id", S_W_ID, h.w),
                ("s_quantity", S_QUANTITY, q),
                ("s_ytd", S_YTD, ytd),
                ("s_order_cnt", S_ORDER_CNT, cnt),
                ("s_remote_cnt", S_REMOTE_CNT, 0),
            ],
        )?;
    }
    Ok(())
}

/// Column names of each table's 64 B row, word by word (as `setup` and
/// `new_order` fill them).
const WAREHOUSE_COLS: [&str; 8] = [
    "w_id",
    "w_tax",
    "w_ytd",
    "w_name",
    "w_street_1",
    "w_street_2",
    "w_city",
    "w_state, w_zip",
];
const DISTRICT_COLS: [&str; 8] = [
    "d_id",
    "d_w_id",
    "d_tax",
    "d_ytd",
    "d_next_o_id",
    "d_name",
    "d_street_1",
    "d_city",
];
const CUSTOMER_COLS: [&str; 8] = [
    "c_id",
    "c_d_id",
    "c_w_id",
    "c_last",
    "c_credit",
    "c_discount",
    "c_balance",
    "c_ytd_payment",
];
const ITEM_COLS: [&str; 7] = [
    "i_id",
    "i_im_id",
    "i_price",
    "i_name (word 0)",
    "i_name (word 1)",
    "i_name (word 2)",
    "i_data",
];
const STOCK_COLS: [&str; 8] = [
    "s_i_id",
    "s_w_id",
    "s_quantity",
    "s_ytd",
    "s_order_cnt",
    "s_remote_cnt",
    "s_dist_xx",
    "s_data",
];
const ORDER_COLS: [&str; 8] = [
    "o_id",
    "o_d_id",
    "o_w_id",
    "o_c_id",
    "o_entry_d",
    "o_carrier_id",
    "o_ol_cnt",
    "o_all_local",
];
const ORDER_LINE_COLS: [&str; 10] = [
    "ol_o_id",
    "ol_d_id",
    "ol_w_id",
    "ol_number",
    "ol_i_id",
    "ol_supply_w_id",
    "ol_delivery_d",
    "ol_quantity",
    "ol_amount",
    "ol_dist_info",
];
const NEW_ORDER_COLS: [&str; 3] = ["no_o_id", "no_d_id", "no_w_id"];

/// [`super::labels::DescribeFn`]: the root's words, a row of a fixed table
/// and its column, an order-index slot, an ORDER row or one of its
/// ORDER-LINE rows (found through the order index).
fn describe(img: &dyn MemRead, region_base: Addr, _item_bytes: u64, addr: Addr) -> Option<Label> {
    const ROOT_WORDS: [&str; 13] = [
        "w_id",
        "load seed",
        "ITEM rows",
        "customers per district",
        "orders per district",
        "WAREHOUSE pointer",
        "DISTRICT table pointer",
        "CUSTOMER table pointer",
        "ITEM table pointer",
        "STOCK table pointer",
        "order index pointer",
        "NEW-ORDER table pointer",
        "clock (last o_entry_d)",
    ];
    if let Some(l) = labels::root_word("tpcc", region_base, addr, &ROOT_WORDS) {
        return Some(l);
    }
    let root = region_base + ROOT_OFFSET;
    let heap = Heap::of(img, region_base)?;
    let t = Tables::read(img, root);
    let n_items = img.read_u64(root + R_N_ITEMS);
    let n_cust = img.read_u64(root + R_N_CUST);
    let mo = img.read_u64(root + R_MAX_ORDERS);
    let row = |table: &str, base: Addr, n: u64, cols: &[&str]| {
        labels::array_slot(addr, base, REC, n).map(|(i, off)| {
            Label::new(
                format!("tpcc {table} row {i}"),
                base + i * REC,
                labels::word_field(cols, off),
            )
        })
    };
    let fixed = row("WAREHOUSE", t.warehouse, 1, &WAREHOUSE_COLS)
        .or_else(|| row("DISTRICT", t.districts, DISTRICTS, &DISTRICT_COLS))
        .or_else(|| {
            row(
                "CUSTOMER",
                t.customers,
                DISTRICTS.saturating_mul(n_cust),
                &CUSTOMER_COLS,
            )
        })
        .or_else(|| row("ITEM", t.items, n_items, &ITEM_COLS))
        .or_else(|| row("STOCK", t.stock, n_items, &STOCK_COLS));
    if fixed.is_some() {
        return fixed;
    }
    let slots = DISTRICTS.saturating_mul(mo);
    if let Some((i, _)) = labels::array_slot(addr, t.order_index, 8, slots) {
        let (d, o) = (i / mo + 1, i % mo + 1);
        return Some(Label::new(
            "tpcc order index",
            t.order_index,
            format!("district {d}, o_id {o} (ORDER pointer)"),
        ));
    }
    if let Some((i, off)) = labels::array_slot(addr, t.new_orders, NO_BYTES, slots) {
        let (d, o) = (i / mo + 1, i % mo + 1);
        return Some(Label::new(
            format!("tpcc NEW-ORDER row (district {d}, o_id {o})"),
            t.new_orders + i * NO_BYTES,
            labels::word_field(&NEW_ORDER_COLS, off),
        ));
    }
    if !heap.holds(t.order_index, slots.saturating_mul(8)) {
        return None;
    }
    (0..slots).find_map(|i| {
        let oa = img.read_u64(t.order_index + i * 8);
        let ol_cnt = img.read_u64(oa + O_OL_CNT).min(MAX_OL);
        let block = REC + ol_cnt.saturating_sub(1) * OL_STRIDE + OL_BYTES;
        if oa == 0 || !heap.holds(oa, block) || !labels::within(addr, oa, block) {
            return None;
        }
        let (d, o) = (i / mo + 1, i % mo + 1);
        if addr < oa + REC {
            return Some(Label::new(
                format!("tpcc ORDER row (district {d}, o_id {o})"),
                oa,
                labels::word_field(&ORDER_COLS, addr - oa),
            ));
        }
        let k = (addr - oa - REC) / OL_STRIDE;
        let ol = oa + REC + k * OL_STRIDE;
        Some(if addr - ol < OL_BYTES {
            Label::new(
                format!(
                    "tpcc ORDER-LINE row (district {d}, o_id {o}, ol_number {})",
                    k + 1
                ),
                ol,
                labels::word_field(&ORDER_LINE_COLS, addr - ol),
            )
        } else {
            Label::new(
                format!("tpcc ORDER block (district {d}, o_id {o})"),
                oa,
                "allocator padding between ORDER-LINE rows",
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::SparseImage;
    use crate::workloads::testutil::*;
    use crate::workloads::ValueMode;

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

    /// Text columns as TPC-C §4.3.3.1 defines them (realistic values):
    /// C_LAST syllables, C_CREDIT "GC"/"BC", alphanumeric a-strings of
    /// their lengths, "ORIGINAL" in about 10% of I_DATA and S_DATA; random
    /// values keep the packed numbers.
    #[test]
    fn text_columns_follow_the_spec() {
        let text = |w: u64| w.to_le_bytes();
        let mut a = args(64, 0, 10, 0.0);
        a.tpcc_items = 2000;
        a.tpcc_customers = 1000;
        let (img, _) = run_direct(&INFO, &a, 0);
        let t = Tables::read(&img, BASE + ROOT_OFFSET);
        let mut name = [0u8; 15];
        let n = c_last(371, &mut name);
        assert_eq!(&name[..n], b"PRICALLYOUGHT");
        // The first 1,000 customers' C_LAST is the syllables of c - 1.
        let c = img.read_u64(t.customer(a.tpcc_customers, 1, 372) + C_LAST);
        assert_eq!(&text(c), b"PRICALLY");
        let credit = img.read_u64(t.customer(a.tpcc_customers, 2, 5) + C_CREDIT);
        assert!([*b"GC\0\0\0\0\0\0", *b"BC\0\0\0\0\0\0"].contains(&text(credit)));
        let mut original = 0;
        for i in 1..=a.tpcc_items {
            let dist = text(img.read_u64(t.stock(i) + S_DIST));
            assert!(dist.iter().all(u8::is_ascii_alphanumeric), "{dist:?}");
            let nm: Vec<u8> = (0..3)
                .flat_map(|k| text(img.read_u64(t.item(i) + I_NAME + 8 * k)))
                .take_while(|&c| c != 0)
                .collect();
            assert!((14..=24).contains(&nm.len()), "I_NAME {nm:?}");
            assert!(nm.iter().all(u8::is_ascii_alphanumeric));
            for w in [t.item(i) + I_DATA, t.stock(i) + S_DATA] {
                let d = text(img.read_u64(w));
                original += usize::from(&d == b"ORIGINAL");
                assert!(d.iter().all(u8::is_ascii_alphanumeric), "{d:?}");
            }
        }
        let share = original as f64 / (2 * a.tpcc_items) as f64;
        assert!((0.08..0.12).contains(&share), "ORIGINAL in {share:.3}");
        // Random values: the packed numbers durasim stored before.
        a.values = ValueMode::Random;
        let (img, _) = run_direct(&INFO, &a, 0);
        let c = img.read_u64(t.customer(a.tpcc_customers, 1, 372) + C_LAST);
        assert_eq!(c, 371);
        assert!(img.read_u64(t.item(7) + I_DATA) <= 1);
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
