//! Workload op streams generated ahead on a second host thread.
//!
//! A transaction's op stream is a function of its thread's workload state
//! and that thread's region of the architectural image only: it is executed
//! functionally, before the timing model sees it, and no thread reads
//! another's region. So the streams can be produced ahead of the engine on
//! another host thread while the engine replays earlier ones; every core
//! still receives its own transactions in program order, so the simulated
//! machine and every metric are the same bit for bit (tests/feed.rs).
//!
//! The producer keeps at most [`AHEAD_TX`] transactions and about
//! [`AHEAD_OPS`] ops queued per core (at least one transaction, however
//! large) and sleeps until a queue falls to [`REFILL_TX`] transactions, so
//! it wakes once per batch rather than once per transaction; op buffers
//! circulate between the two threads, so the steady state allocates
//! nothing.

use super::{TxCtx, Workload};
use crate::mem::SparseImage;
use crate::types::Addr;
use crate::workloads::Op;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Transactions queued ahead per core, at most.
pub const AHEAD_TX: usize = 16;
/// The producer, once every queue is full, sleeps until one holds this few.
pub const REFILL_TX: usize = 4;
/// Ops queued ahead per core, at most, beyond its first transaction
/// (bounds host memory when transactions are large: 24 B per op).
pub const AHEAD_OPS: usize = 1 << 16;

/// One generated transaction.
pub struct FedTx {
    pub ops: Vec<Op>,
    /// The heap ran out of space in this transaction (the engine reports
    /// the footprint error when it reaches it, as without the feed).
    pub out_of_memory: bool,
}

/// Why [`Feed::take`] returned nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum FeedEnd {
    /// The producer stopped before generating the transaction (it
    /// panicked: the scope joining it reports the panic).
    ProducerGone,
}

struct State {
    queues: Vec<VecDeque<FedTx>>,
    /// Ops in each core's queue.
    queued_ops: Vec<usize>,
    /// Transactions still to generate, per core.
    remaining: Vec<u64>,
    /// Recycled op buffers.
    free: Vec<Vec<Op>>,
    /// The core the engine waits for (its queue is empty).
    demand: Option<usize>,
    producer_sleeping: bool,
    consumer_sleeping: bool,
    stop: bool,
    producer_gone: bool,
}

/// The queues shared by the engine (consumer) and the producer thread.
pub struct Feed {
    state: Mutex<State>,
    /// Producer -> engine: a transaction was queued (or the producer left).
    queued: Condvar,
    /// Engine -> producer: room or demand (or stop).
    wanted: Condvar,
}

impl Feed {
    /// A feed for cores that will each run `remaining[c]` more transactions.
    pub fn new(remaining: Vec<u64>) -> Self {
        let cores = remaining.len();
        Feed {
            state: Mutex::new(State {
                queues: (0..cores)
                    .map(|_| VecDeque::with_capacity(AHEAD_TX))
                    .collect(),
                queued_ops: vec![0; cores],
                remaining,
                free: Vec::new(),
                demand: None,
                producer_sleeping: false,
                consumer_sleeping: false,
                stop: false,
                producer_gone: false,
            }),
            queued: Condvar::new(),
            wanted: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking producer cannot leave the state half-updated (it
        // panics in `run_tx`, outside the lock), so a poisoned lock's data
        // is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Core `c`'s next transaction, in program order; `spent` is the
    /// buffer of its previous one, returned for reuse.
    pub fn take(&self, c: usize, mut spent: Vec<Op>) -> Result<FedTx, FeedEnd> {
        spent.clear();
        let mut s = self.lock();
        s.free.push(spent);
        loop {
            if let Some(tx) = s.queues[c].pop_front() {
                s.queued_ops[c] -= tx.ops.len();
                if s.producer_sleeping && s.queues[c].len() <= REFILL_TX {
                    s.producer_sleeping = false;
                    self.wanted.notify_one();
                }
                return Ok(tx);
            }
            if s.producer_gone {
                return Err(FeedEnd::ProducerGone);
            }
            s.demand = Some(c);
            if s.producer_sleeping {
                s.producer_sleeping = false;
                self.wanted.notify_one();
            }
            s.consumer_sleeping = true;
            s = self.queued.wait(s).unwrap_or_else(|e| e.into_inner());
            s.consumer_sleeping = false;
        }
    }

    /// Tell the producer to stop (the run ended early, e.g. on an error).
    pub fn stop(&self) {
        let mut s = self.lock();
        s.stop = true;
        self.wanted.notify_one();
    }

    /// The next core to generate for, or `None` when every transaction is
    /// generated (or the engine stopped). Sleeps while every queue is full.
    fn next_core(&self) -> Option<(usize, Vec<Op>)> {
        let mut s = self.lock();
        loop {
            if s.stop {
                return None;
            }
            let pick = match s.demand.take() {
                Some(d) if s.remaining[d] > 0 => Some(d),
                _ => {
                    if s.remaining.iter().all(|&r| r == 0) {
                        return None;
                    }
                    // Of the cores with room, the one with the fewest
                    // queued (lowest index on ties).
                    let mut best: Option<(usize, usize)> = None;
                    for (c, q) in s.queues.iter().enumerate() {
                        let room =
                            q.is_empty() || (q.len() < AHEAD_TX && s.queued_ops[c] < AHEAD_OPS);
                        if s.remaining[c] > 0 && room && best.is_none_or(|(_, n)| q.len() < n) {
                            best = Some((c, q.len()));
                        }
                    }
                    best.map(|(c, _)| c)
                }
            };
            if let Some(c) = pick {
                s.remaining[c] -= 1;
                let buf = s.free.pop().unwrap_or_default();
                return Some((c, buf));
            }
            s.producer_sleeping = true;
            s = self.wanted.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn push(&self, c: usize, tx: FedTx) {
        let mut s = self.lock();
        if tx.out_of_memory {
            // The engine stops at this transaction: generate no more.
            s.remaining[c] = 0;
        }
        s.queued_ops[c] += tx.ops.len();
        s.queues[c].push_back(tx);
        if s.consumer_sleeping {
            self.queued.notify_one();
        }
    }

    /// The producer thread's body: generate every core's remaining
    /// transactions on `arch` (thread `c`'s region starts at `base(c)`).
    pub fn produce(
        &self,
        arch: &mut SparseImage,
        workloads: &mut [Box<dyn Workload>],
        base: impl Fn(usize) -> Addr,
        region_bytes: u64,
    ) {
        // Marks the producer gone however it leaves (a workload panic
        // included), so a waiting engine wakes instead of hanging.
        struct Gone<'a>(&'a Feed);
        impl Drop for Gone<'_> {
            fn drop(&mut self) {
                let mut s = self.0.lock();
                s.producer_gone = true;
                self.0.queued.notify_one();
            }
        }
        let _gone = Gone(self);
        while let Some((c, mut ops)) = self.next_core() {
            let mut ctx = TxCtx::new(arch, &mut ops, true, base(c), region_bytes);
            workloads[c].run_tx(&mut ctx);
            let out_of_memory = ctx.out_of_memory;
            self.push(c, FedTx { ops, out_of_memory });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload whose transaction `i` is one store of `i` (per thread).
    struct Counter(u64);
    impl Workload for Counter {
        fn setup(&mut self, _: &mut TxCtx) {}
        fn run_tx(&mut self, ctx: &mut TxCtx) {
            let a = ctx.region_base() + 64;
            ctx.store(a, self.0);
            self.0 += 1;
        }
    }

    #[test]
    fn every_core_gets_its_transactions_in_order_whatever_the_take_order() {
        let remaining = vec![40, 3, 0, 25];
        let feed = Feed::new(remaining.clone());
        let mut arch = SparseImage::new();
        let mut wls: Vec<Box<dyn Workload>> = (0..4)
            .map(|_| Box::new(Counter(0)) as Box<dyn Workload>)
            .collect();
        let mut got = vec![Vec::new(); 4];
        std::thread::scope(|s| {
            s.spawn(|| feed.produce(&mut arch, &mut wls, |c| c as u64 * 4096, 4096));
            // An uneven take order: core 0 drains far ahead of core 3.
            let mut spent = Vec::new();
            let order = (0..40)
                .map(|_| 0)
                .chain((0..3).map(|_| 1))
                .chain((0..25).map(|_| 3));
            for c in order {
                let tx = feed.take(c, spent).expect("a transaction");
                assert!(!tx.out_of_memory);
                match tx.ops[..] {
                    [Op::Store { value, .. }] => got[c].push(value),
                    ref other => panic!("unexpected ops {other:?}"),
                }
                spent = tx.ops;
            }
        });
        for (c, &n) in remaining.iter().enumerate() {
            assert_eq!(got[c], (0..n).collect::<Vec<_>>(), "core {c}");
        }
        // The image holds each thread's last value, as if run inline.
        assert_eq!(arch.read_word(64), 39);
        assert_eq!(arch.read_word(3 * 4096 + 64), 24);
    }

    /// A workload whose every transaction is `n` stores.
    struct Big(u64);
    impl Workload for Big {
        fn setup(&mut self, _: &mut TxCtx) {}
        fn run_tx(&mut self, ctx: &mut TxCtx) {
            let a = ctx.region_base() + 64;
            for _ in 0..self.0 {
                ctx.store(a, 1);
            }
        }
    }

    #[test]
    fn large_transactions_are_bounded_by_ops_not_count() {
        let per_tx = AHEAD_OPS as u64 / 4 + 1;
        let feed = Feed::new(vec![100]);
        let mut arch = SparseImage::new();
        let mut wls: Vec<Box<dyn Workload>> = vec![Box::new(Big(per_tx))];
        std::thread::scope(|s| {
            s.spawn(|| feed.produce(&mut arch, &mut wls, |_| 0, 4096));
            let mut spent = feed.take(0, Vec::new()).expect("a transaction").ops;
            // Let the producer fill the queue as far as it may.
            while !feed.lock().producer_sleeping {
                std::thread::yield_now();
            }
            let st = feed.lock();
            assert_eq!(
                st.queues[0].len(),
                4,
                "four transactions reach the ops bound"
            );
            assert!(st.queued_ops[0] >= AHEAD_OPS);
            drop(st);
            for _ in 1..100 {
                spent = feed.take(0, spent).expect("a transaction").ops;
                assert_eq!(spent.len() as u64, per_tx);
            }
        });
    }

    #[test]
    fn stop_releases_a_producer_with_work_left() {
        let feed = Feed::new(vec![1_000_000]);
        let mut arch = SparseImage::new();
        let mut wls: Vec<Box<dyn Workload>> = vec![Box::new(Counter(0))];
        std::thread::scope(|s| {
            s.spawn(|| feed.produce(&mut arch, &mut wls, |_| 0, 4096));
            let tx = feed.take(0, Vec::new()).expect("a transaction");
            assert_eq!(tx.ops.len(), 1);
            feed.stop();
        });
        // The producer stopped with at most a queue's worth generated.
        assert!(feed.lock().remaining[0] >= 1_000_000 - 1 - AHEAD_TX as u64);
    }

    #[test]
    fn a_panicking_producer_is_reported_not_waited_for() {
        struct Panics;
        impl Workload for Panics {
            fn setup(&mut self, _: &mut TxCtx) {}
            fn run_tx(&mut self, _: &mut TxCtx) {
                panic!("workload bug");
            }
        }
        let feed = Feed::new(vec![5]);
        let mut arch = SparseImage::new();
        let mut wls: Vec<Box<dyn Workload>> = vec![Box::new(Panics)];
        let joined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                s.spawn(|| feed.produce(&mut arch, &mut wls, |_| 0, 4096));
                assert_eq!(feed.take(0, Vec::new()).err(), Some(FeedEnd::ProducerGone));
            })
        }));
        assert!(joined.is_err(), "the scope reports the producer's panic");
    }
}
