//! Queue (HOOP Table III, after Proteus): a persistent ring buffer of
//! items. Insert enqueues at the tail (dequeuing the head first when the
//! ring is full, so the footprint stays bounded): the whole item, the tail
//! and, when full, the head (item_bytes / 8 + 1 or + 2 stores); update
//! assigns a random live entry whole (item_bytes / 8 stores;
//! `workload.update_scope = field`: one field and the seal, 2 stores).
//!
//! Values: keys are sequence numbers; payload words from the value model
//! (`workload.values`, workloads/values.rs); head, tail and seals are the
//! structure's own.
//!
//! Layout: root = { capacity, slots_ptr, head, tail }; head and tail are
//! monotonically increasing sequence numbers, slot = seq % capacity. The
//! item enqueued with sequence number `s` has key `s + 1`, so the checker
//! can verify FIFO order from the image alone.

use super::labels::{self, Label};
use super::{
    check_item, check_ptr, heap_bounds, item_bytes_or, item_payload_words, item_version, rng,
    update_item, with_item_bytes, write_item, TxCtx, Workload, WorkloadArgs, WorkloadInfo,
    DEFAULT_ITEM_BYTES, ROOT_OFFSET,
};
use crate::mem::MemRead;
use crate::types::Addr;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub static INFO: WorkloadInfo = WorkloadInfo {
    name: "queue",
    description:
        "ring-buffer queue: enqueue or update a random live entry (HOOP Table III, Proteus)",
    build,
    check,
    check_incremental: None,
    describe,
    sizing: super::Sizing::GROWING,
};

const CAP: u64 = 0;
const SLOTS: u64 = 8;
const HEAD: u64 = 16;
const TAIL: u64 = 24;

pub(crate) struct Queue {
    a: WorkloadArgs,
    rng: Xoshiro256PlusPlus,
    root: Addr,
    slots: Addr,
    cap: u64,
}

fn build(a: &WorkloadArgs) -> Box<dyn Workload> {
    Box::new(Queue::new(a))
}

impl Queue {
    pub(crate) fn new(a: &WorkloadArgs) -> Self {
        let a = &with_item_bytes(a, DEFAULT_ITEM_BYTES);
        Queue {
            rng: rng(a.seed),
            root: a.region_base + ROOT_OFFSET,
            slots: 0,
            // Twice the initial population: the queue grows, then runs
            // full and each enqueue also dequeues.
            cap: (2 * a.initial_items).max(16),
            a: a.clone(),
        }
    }

    fn slot(&self, seq: u64) -> Addr {
        self.slots + (seq % self.cap) * self.a.item_bytes
    }

    /// Enqueue a new item; returns its key. Dequeues the head if full.
    pub(crate) fn enqueue(&mut self, ctx: &mut TxCtx) -> u64 {
        let head = ctx.load(self.root + HEAD);
        let tail = ctx.load(self.root + TAIL);
        if tail - head == self.cap {
            ctx.store(self.root + HEAD, head + 1);
        }
        write_item(
            ctx,
            self.a.vm(),
            self.slot(tail),
            self.a.item_bytes,
            tail + 1,
            0,
        );
        ctx.store(self.root + TAIL, tail + 1);
        tail + 1
    }

    /// Rewrite the live entry `i` positions from the head; returns
    /// (key, new version).
    pub(crate) fn update_at(&mut self, ctx: &mut TxCtx, i: u64) -> (u64, u64) {
        let head = ctx.load(self.root + HEAD);
        let addr = self.slot(head + i);
        let ib = self.a.item_bytes;
        let v = update_item(
            ctx,
            self.a.vm(),
            addr,
            ib,
            self.a.update_scope,
            item_payload_words(ib),
        );
        // The entry with sequence number s holds key s + 1.
        (head + i + 1, v)
    }
}

impl Workload for Queue {
    fn setup(&mut self, ctx: &mut TxCtx) {
        ctx.init_region();
        self.slots = ctx.alloc(self.cap * self.a.item_bytes);
        ctx.store(self.root + CAP, self.cap);
        ctx.store(self.root + SLOTS, self.slots);
        ctx.store(self.root + HEAD, 0);
        ctx.store(self.root + TAIL, 0);
        for _ in 0..self.a.initial_items {
            self.enqueue(ctx);
        }
    }

    fn run_tx(&mut self, ctx: &mut TxCtx) {
        if self.rng.gen_bool(self.a.update_ratio) {
            let len = ctx.load(self.root + TAIL) - ctx.load(self.root + HEAD);
            if len > 0 {
                let i = self.rng.gen_range(0..len);
                self.update_at(ctx, i);
                return;
            }
        }
        self.enqueue(ctx);
    }
}

/// Visit the live entries head to tail: `f(key, version)`.
pub(crate) fn walk(
    img: &dyn MemRead,
    region_base: Addr,
    item_bytes: u64,
    mut f: impl FnMut(u64, u64),
) -> Result<u64, String> {
    let item_bytes = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let bounds = heap_bounds(img, region_base)?;
    let root = region_base + ROOT_OFFSET;
    let cap = img.read_u64(root + CAP);
    let slots = img.read_u64(root + SLOTS);
    let head = img.read_u64(root + HEAD);
    let tail = img.read_u64(root + TAIL);
    if cap == 0 {
        return Err("queue: capacity is 0".into());
    }
    check_ptr(slots, cap.saturating_mul(item_bytes), bounds, "queue slots")?;
    if head > tail || tail - head > cap {
        return Err(format!(
            "queue: head {head} / tail {tail} inconsistent with capacity {cap}"
        ));
    }
    for seq in head..tail {
        let addr = slots + (seq % cap) * item_bytes;
        let key =
            check_item(img, addr, item_bytes).map_err(|e| format!("queue entry {seq}: {e}"))?;
        if key != seq + 1 {
            return Err(format!(
                "queue entry {seq}: holds key {key}, expected {} (FIFO order broken)",
                seq + 1
            ));
        }
        f(key, item_version(img, addr));
    }
    Ok(tail - head)
}

fn check(img: &dyn MemRead, region_base: Addr, item_bytes: u64) -> Result<u64, String> {
    walk(img, region_base, item_bytes, |_, _| {})
}

/// [`super::labels::DescribeFn`]: the root's words (head and tail), a
/// ring slot's field.
fn describe(img: &dyn MemRead, region_base: Addr, item_bytes: u64, addr: Addr) -> Option<Label> {
    let root = region_base + ROOT_OFFSET;
    if let Some(l) = labels::root_word(
        "queue",
        region_base,
        addr,
        &["capacity", "slot array pointer", "head", "tail"],
    ) {
        return Some(l);
    }
    let ib = item_bytes_or(item_bytes, DEFAULT_ITEM_BYTES);
    let slots = img.read_u64(root + SLOTS);
    let (i, off) = labels::array_slot(addr, slots, ib, img.read_u64(root + CAP))?;
    Some(Label::new(
        format!("queue ring slot {i}"),
        slots + i * ib,
        labels::item_field(off),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::SparseImage;
    use crate::workloads::testutil::*;
    use std::collections::VecDeque;

    #[test]
    fn matches_reference_model() {
        let a = args(64, 20, 400, 0.5);
        let mut img = SparseImage::new();
        let mut q = Queue::new(&a);
        with_ctx(&mut img, false, |ctx| q.setup(ctx));
        let mut model: VecDeque<(u64, u64)> = (1..=20).map(|k| (k, 0)).collect();
        let mut r = rng(5);
        for _ in 0..400 {
            if r.gen_bool(0.4) {
                let i = r.gen_range(0..model.len());
                let (k, v) = with_ctx(&mut img, true, |ctx| q.update_at(ctx, i as u64)).0;
                assert_eq!(model[i].0, k);
                model[i].1 += 1;
                assert_eq!(model[i].1, v);
            } else {
                let k = with_ctx(&mut img, true, |ctx| q.enqueue(ctx)).0;
                if model.len() as u64 == q.cap {
                    model.pop_front();
                }
                model.push_back((k, 0));
            }
        }
        let mut got = VecDeque::new();
        let n = walk(&img, BASE, 64, |k, v| got.push_back((k, v))).unwrap();
        assert_eq!(n, q.cap, "the ring ran full and wrapped");
        assert_eq!(got, model);
    }

    #[test]
    fn checker_passes_and_detects_corruption() {
        for ib in [64, 1024] {
            let a = args(ib, 30, 300, 0.5);
            let (img, _) = run_direct(&INFO, &a, 300);
            assert_eq!(check(&img, BASE, ib).unwrap(), 60);
            let root = BASE + ROOT_OFFSET;
            let slots = img.read_u64(root + SLOTS);
            let head = img.read_u64(root + HEAD);
            let first = slots + (head % 60) * ib;
            assert_detects(&INFO, &img, first + 16, ib);
            assert_detects(&INFO, &img, first, ib);
            assert_detects(&INFO, &img, root + TAIL, ib);
            assert_detects(&INFO, &img, root + SLOTS, ib);
        }
    }

    /// Enqueue: the item, the tail, and the head when the ring is full;
    /// update: one field and the seal.
    #[test]
    fn stores_per_tx_follow_the_code_path() {
        for ib in [64u64, 1024] {
            let t = tx_stores(&INFO, &args(ib, 20, 400, 0.5), 400);
            let w = ib as usize / 8;
            assert!(t.iter().all(|&(s, _)| s == w || s == w + 1 || s == w + 2));
            for want in [w, w + 1, w + 2] {
                assert!(t.iter().any(|&(s, _)| s == want), "{want}");
            }
        }
    }

    #[test]
    fn engine_equivalence() {
        engine_check("queue", 2, 300, &[]);
    }
}
