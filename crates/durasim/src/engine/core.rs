//! The core timing models: the in-order core (an issue clock and a store
//! buffer) and the event-driven out-of-order core (dispatch, ROB, load
//! queue, L1 MSHRs, in-order retirement), replaying a transaction's ops
//! through the cache hierarchy and the scheme.

use super::dram_cache::Below;
use super::write_set::TxWrites;
use super::Engine;
use crate::cache::hierarchy::HitLevel;
use crate::cache::Hierarchy;
use crate::error::{Error, Result};
use crate::schemes::Store;
use crate::types::{line_of, read_word, word_index, write_word, Addr, CoreId, Cycle};
use crate::workloads::Op;

pub(super) struct Core {
    /// In-order core: the issue clock. Out-of-order core: the dispatch
    /// front (the cycle the next op dispatches in, at the earliest).
    pub(super) time: Cycle,
    pub(super) ops: Vec<Op>,
    pub(super) scratch: Vec<Op>,
    pub(super) pos: usize,
    pub(super) in_tx: bool,
    pub(super) tx_begin_at: Cycle,
    pub(super) done_tx: u64,
    pub(super) target_tx: u64,
    /// Store buffer: completion times, FIFO ring.
    sb: Vec<Cycle>,
    sb_head: usize,
    sb_len: usize,
    sb_last: Cycle,
    flush_done: Cycle,
    /// This transaction's writes in the history (other cores append
    /// theirs while it runs, so the range is fixed at TxBegin).
    pub(super) hist: std::ops::Range<usize>,
    /// Out-of-order core: the latest time it issued a memory request at.
    /// Requests may issue after the dispatch front (a load waiting for the
    /// load its address depends on, a store at retirement); the core is
    /// scheduled by the later of the two, so another core's request is
    /// never booked behind one issued far in this core's future.
    pub(super) req_front: Cycle,
    /// Transactions this core runs before the measured window.
    pub(super) warm_tx: u64,
    /// Out-of-order window (unused by the in-order core).
    ooo: Window,
    /// This transaction's stores to program data (characterisation).
    pub(super) writes: super::write_set::TxWrites,
}

/// Load dependencies are looked up this many loads back (`Op::Load::dep`
/// is a `u8`).
const DEP_RING: usize = 256;

/// The out-of-order core's window, event-driven: every structure is a ring
/// of the times its entries free up, so an op costs O(1) amortised and
/// nothing is visited per cycle.
pub(super) struct Window {
    /// Dispatch slots already used in cycle `Core::time` (0..=width).
    disp_used: u32,
    /// In-order retirement: the cycle the last op retired in, and the
    /// retire slots used in it.
    retire_t: Cycle,
    retire_used: u32,
    /// ROB: per in-flight op, its entries and its retire time (FIFO ring,
    /// at most `rob_entries` ops since each holds at least one entry).
    /// (Both rings have a power-of-two length, at least `rob_entries`, so
    /// an index wraps by `rob_mask` instead of a compare and branch.)
    /// (One ring of (retire time, entries) pairs: a push or pop indexes
    /// one array.)
    rob: Vec<(Cycle, u32)>,
    rob_mask: usize,
    rob_head: usize,
    rob_len: usize,
    rob_occ: u32,
    /// Load queue: retire times of the last `load_queue_entries` loads
    /// (slot `lq_i` holds the load whose entry the next load reuses).
    lq: Vec<Cycle>,
    lq_i: usize,
    /// Data-ready times of the last 256 loads, by load sequence number.
    ld_done: Box<[Cycle; DEP_RING]>,
    ld_seq: u8,
    /// L1 MSHRs: line and fill time of each outstanding (or last) miss.
    mshr_line: Vec<Addr>,
    mshr_done: Vec<Cycle>,
    /// The latest fill time in `mshr_done` (no fill in flight after it).
    mshr_max: Cycle,
    /// OR of [`mshr_bit`] over `mshr_line`: a hit whose line's bit is
    /// clear has no MSHR entry, so its merge scan is skipped (exact: a set
    /// bit only means "scan").
    mshr_sig: u64,
    /// Per L1 slot: the MSHR entries that held the slot's line when it was
    /// installed (bit `j` = entry `j`). While a line stays in the L1 no
    /// entry takes it (only a miss of the line allocates one), so the
    /// entries holding it are a subset of these bits: an L1 hit checks
    /// them instead of scanning every MSHR. Empty with more than 64 MSHRs
    /// (then the scan of [`Window::mshr_merge`]).
    slot_mshrs: Vec<u64>,
    /// Whether `mshr_sig` is kept: only [`Window::mshr_merge`] reads it
    /// (hits through a scheme's access hook, or more than 64 MSHRs).
    use_sig: bool,
    /// The line of this core's previous access and the L1 slot it was
    /// found or installed in: consecutive accesses mostly fall in one line
    /// (a node's words), and the next lookup checks that slot first
    /// ([`Cache::lookup_hinted`], exact).
    last_line: Addr,
    last_slot: usize,
}

/// A line's bit in [`Window::mshr_sig`].
#[inline(always)]
fn mshr_bit(line: Addr) -> u64 {
    1 << ((line / crate::types::LINE_BYTES) % 64)
}

impl Window {
    /// A hit at `t` in the functional cache: if the line's fill is still
    /// in flight, its data comes with the fill (returns the latest fill
    /// time of an MSHR entry of `line`, 0 if none). Branch-free scan (10
    /// entries), only when some entry may hold the line.
    #[inline(always)]
    fn mshr_merge(&self, line: Addr, t: Cycle) -> Cycle {
        debug_assert!(self.use_sig, "mshr_sig is kept");
        let mut merge = 0;
        if t < self.mshr_max && self.mshr_sig & mshr_bit(line) != 0 {
            for (&l, &d) in self.mshr_line.iter().zip(self.mshr_done.iter()) {
                merge = merge.max(if l == line { d } else { 0 });
            }
        }
        merge
    }

    /// [`Window::mshr_merge`] for a hit on the line in L1 slot `slot`,
    /// checking only the entries of `slot_mshrs[slot]` (same result: the
    /// others do not hold `line`). The core must install every L1 line
    /// through [`ooo_access_slow`]'s miss path (which sets the bits).
    #[inline(always)]
    fn mshr_merge_slot(&self, slot: usize, line: Addr, t: Cycle) -> Cycle {
        if t >= self.mshr_max {
            return 0;
        }
        let Some(&bits) = self.slot_mshrs.get(slot) else {
            return self.mshr_merge(line, t);
        };
        let (mut merge, mut bits) = (0, bits);
        while bits != 0 {
            let j = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if self.mshr_line[j] == line {
                merge = merge.max(self.mshr_done[j]);
            }
        }
        merge
    }

    /// The MSHR entry a miss or flush takes: the one that frees first (the
    /// lowest index on ties), and when it frees.
    #[inline(always)]
    fn mshr_first_free(&self) -> (usize, Cycle) {
        let (mut free_i, mut free_t) = (0, self.mshr_done[0]);
        for (i, &d) in self.mshr_done.iter().enumerate().skip(1) {
            if d < free_t {
                free_t = d;
                free_i = i;
            }
        }
        (free_i, free_t)
    }

    /// Entry `i` takes the miss of `line` (filled at `done`), which was
    /// installed in L1 slot `slot`.
    #[inline]
    fn mshr_take(&mut self, i: usize, line: Addr, done: Cycle, slot: usize) {
        self.mshr_line[i] = line;
        self.mshr_done[i] = done;
        self.mshr_max = self.mshr_max.max(done);
        if self.use_sig {
            self.mshr_sig = self.mshr_line.iter().fold(0, |s, &l| s | mshr_bit(l));
        }
        if let Some(m) = self.slot_mshrs.get_mut(slot) {
            let mut same = 0u64;
            for (j, &l) in self.mshr_line.iter().enumerate() {
                if l == line {
                    same |= 1 << j;
                }
            }
            *m = same;
        }
    }

    /// `access_hook`: the scheme sees every access (hits then take
    /// [`Window::mshr_merge`]).
    pub(super) fn new(
        rob: usize,
        lq: usize,
        mshrs: usize,
        l1_slots: usize,
        access_hook: bool,
    ) -> Self {
        Window {
            disp_used: 0,
            retire_t: 0,
            retire_used: 0,
            rob: vec![(0, 0); rob.next_power_of_two()],
            rob_mask: rob.next_power_of_two() - 1,
            rob_head: 0,
            rob_len: 0,
            rob_occ: 0,
            lq: vec![0; lq],
            lq_i: 0,
            ld_done: Box::new([0; DEP_RING]),
            ld_seq: 0,
            mshr_line: vec![Addr::MAX; mshrs],
            mshr_done: vec![0; mshrs],
            mshr_max: 0,
            mshr_sig: 0,
            slot_mshrs: if mshrs <= 64 {
                vec![0; l1_slots]
            } else {
                Vec::new()
            },
            use_sig: access_hook || mshrs > 64,
            last_line: Addr::MAX,
            last_slot: 0,
        }
    }
}

impl Core {
    /// A core that runs `target_tx` transactions, the first `warm_tx` of
    /// them before the measured window.
    pub(super) fn new(target_tx: u64, warm_tx: u64, sb_entries: usize, ooo: Window) -> Self {
        Core {
            time: 0,
            ops: Vec::with_capacity(4096),
            scratch: Vec::with_capacity(4096),
            pos: 0,
            in_tx: false,
            tx_begin_at: 0,
            done_tx: 0,
            target_tx,
            sb: vec![0; sb_entries],
            sb_head: 0,
            sb_len: 0,
            sb_last: 0,
            flush_done: 0,
            hist: 0..0,
            req_front: 0,
            warm_tx,
            ooo,
            writes: Default::default(),
        }
    }

    /// When the core runs next; `Cycle::MAX` once all its work is done.
    #[inline]
    pub(super) fn ready_time(&self) -> Cycle {
        if self.done_tx == self.target_tx && !self.in_tx {
            Cycle::MAX
        } else {
            self.time.max(self.req_front)
        }
    }

    #[inline]
    fn sb_push(&mut self, done: Cycle) {
        let cap = self.sb.len();
        let done = done.max(self.sb_last);
        // Ring index without a division (hot path).
        let mut i = self.sb_head + self.sb_len;
        if i >= cap {
            i -= cap;
        }
        self.sb[i] = done;
        self.sb_len += 1;
        self.sb_last = done;
    }
    #[inline]
    fn sb_wait_slot(&mut self, t: Cycle) -> Cycle {
        let cap = self.sb.len();
        let mut t = t;
        // Retire completed entries; stall on the oldest if still full.
        while self.sb_len > 0 && (self.sb[self.sb_head] <= t || self.sb_len == cap) {
            t = t.max(self.sb[self.sb_head]);
            self.sb_head += 1;
            if self.sb_head == cap {
                self.sb_head = 0;
            }
            self.sb_len -= 1;
        }
        t
    }
    #[inline]
    fn sb_drained(&self) -> Cycle {
        if self.sb_len == 0 {
            0
        } else {
            self.sb_last
        }
    }

    /// When every earlier op has completed: retired, stores drained,
    /// flushes done (Fence and TxEnd are serialising).
    #[inline]
    pub(super) fn quiesce_time(&self) -> Cycle {
        self.time
            .max(self.sb_drained())
            .max(self.flush_done)
            .max(self.ooo.retire_t)
    }

    /// Restart dispatch at `t` with an empty ROB (after a serialising op:
    /// everything older has retired by `t`).
    #[inline]
    pub(super) fn ooo_restart(&mut self, t: Cycle) {
        self.time = t;
        let o = &mut self.ooo;
        o.disp_used = 0;
        o.rob_head = 0;
        o.rob_len = 0;
        o.rob_occ = 0;
    }

    /// Make room for an op of `k` ROB entries: dispatch waits until the
    /// oldest ops retire.
    #[inline]
    fn rob_make_room(&mut self, k: u32, rob: u32) {
        let o = &mut self.ooo;
        while o.rob_occ + k > rob {
            let (r, k_old) = o.rob[o.rob_head];
            o.rob_occ -= k_old;
            o.rob_head = (o.rob_head + 1) & o.rob_mask;
            o.rob_len -= 1;
            if r > self.time {
                self.time = r;
                o.disp_used = 0;
            }
        }
    }

    #[inline]
    fn rob_push(&mut self, k: u32, retire: Cycle) {
        let o = &mut self.ooo;
        let i = (o.rob_head + o.rob_len) & o.rob_mask;
        o.rob[i] = (retire, k);
        o.rob_len += 1;
        o.rob_occ += k;
    }

    /// Dispatch a load (address dependency `dep` loads back, 0 = none)
    /// into the ROB and the load queue: when it issues, and its load
    /// sequence number.
    #[inline(always)]
    fn ooo_load_issue(&mut self, dep: u8, w: u32, rob: u32) -> (Cycle, u8) {
        self.rob_make_room(1, rob);
        // The load queue entry of the load `lq.len()` earlier.
        let lq_free = self.ooo.lq[self.ooo.lq_i];
        let (d, _) = self.dispatch(1, w, lq_free);
        let seq = self.ooo.ld_seq;
        let issue = if dep == 0 {
            d
        } else {
            d.max(self.ooo.ld_done[usize::from(seq.wrapping_sub(dep))])
        };
        (issue, seq)
    }

    /// Retire load `seq`, whose data arrived at `done`: its ROB and load
    /// queue entries free at retirement; later loads that depend on it
    /// issue at `done`.
    #[inline(always)]
    fn ooo_load_retire(&mut self, seq: u8, done: Cycle, w: u32) {
        let r = self.retire(done, 1, w);
        self.rob_push(1, r);
        let o = &mut self.ooo;
        o.lq[o.lq_i] = r;
        o.lq_i += 1;
        if o.lq_i == o.lq.len() {
            o.lq_i = 0;
        }
        o.ld_done[usize::from(seq)] = done;
        o.ld_seq = seq.wrapping_add(1);
    }

    /// Dispatch `n` instructions, `w` per cycle, none before `earliest`:
    /// the cycles of the first and the last.
    #[inline]
    fn dispatch(&mut self, n: u32, w: u32, earliest: Cycle) -> (Cycle, Cycle) {
        let o = &mut self.ooo;
        if earliest > self.time {
            self.time = earliest;
            o.disp_used = 0;
        }
        if o.disp_used >= w {
            self.time += 1;
            o.disp_used = 0;
        }
        let first = self.time;
        o.disp_used += n;
        if o.disp_used > w {
            let q = slots_past(o.disp_used, w);
            self.time += Cycle::from(q);
            o.disp_used -= q * w;
        }
        (first, self.time)
    }

    /// Retire `n` instructions in order, `w` per cycle, the first no
    /// earlier than `ready`: the cycle the last one retires in.
    #[inline]
    fn retire(&mut self, ready: Cycle, n: u32, w: u32) -> Cycle {
        let o = &mut self.ooo;
        if ready > o.retire_t {
            o.retire_t = ready;
            o.retire_used = 0;
        }
        o.retire_used += n;
        if o.retire_used > w {
            let q = slots_past(o.retire_used, w);
            o.retire_t += Cycle::from(q);
            o.retire_used -= q * w;
        }
        o.retire_t
    }
}

/// Whole cycles that `used > w` slots of width `w` spill past the current
/// one: `(used - 1) / w`, without the host divide in the common case of at
/// most one spilled cycle (one op of one instruction: `used <= w + 1`).
#[inline(always)]
fn slots_past(used: u32, w: u32) -> u32 {
    if used <= 2 * w {
        1
    } else {
        (used - 1) / w
    }
}

impl Engine {
    /// Replay core `c`'s remaining ops until its time passes `until`
    /// (returns true) or its op stream is exhausted (false). Borrows the
    /// core once and the machine parts by field, so the per-op path does
    /// not re-index `self.cores`.
    #[inline]
    pub(super) fn replay(&mut self, c: usize, until: Cycle) -> Result<bool> {
        let core = &mut self.cores[c];
        let hier = &mut self.hier;
        // Stores below this address are recorded for the write-set
        // characterisation (program data; none when it is off).
        let record_below = if self.characterise {
            self.ctx.layout.home_limit
        } else {
            0
        };
        let below = &mut Below::new(
            &mut *self.scheme,
            &mut self.ctx,
            &mut self.dram_cache,
            &mut self.llc_write_backs,
        );
        let access_hook = self.access_hook;
        while let Some(&op) = core.ops.get(core.pos) {
            core.pos += 1;
            match op {
                Op::Load { addr, value, .. } => {
                    self.loads += 1;
                    let (done, slot, _) =
                        mem_access(hier, below, access_hook, c, addr, false, core.time);
                    if self.check_reads {
                        check_read(hier, c, slot, addr, value, &self.spec.scheme)?;
                    }
                    core.time = done;
                }
                Op::Store { addr, value } => {
                    self.stores += 1;
                    let t = core.sb_wait_slot(core.time);
                    core.time = t;
                    let (done, slot, _) = mem_access(hier, below, access_hook, c, addr, true, t);
                    let rec = (addr < record_below).then_some(&mut core.writes);
                    let done = write_l1(hier, below, c, slot, addr, value, core.in_tx, done, rec);
                    core.sb_push(done);
                    core.time = t + 1;
                }
                Op::Compute { n } => {
                    self.compute_instrs += u64::from(n);
                    core.time += match self.compute_cpi_whole {
                        Some(cpi) => Cycle::from(n) * cpi,
                        None => (n as f64 * self.compute_cpi).ceil() as Cycle,
                    };
                }
                Op::Flush { addr } => {
                    // clwb leaves after the older stores (TSO order) and
                    // walks L1 and L2 before the LLC writes the line back;
                    // the core goes on (it waits only at a fence).
                    let t = core.time.max(core.sb_drained()) + self.flush_path_cycles;
                    let done = hier.flush(c, line_of(addr), t, below);
                    core.flush_done = core.flush_done.max(done);
                    self.persist_ops.flushes += 1;
                    core.time += 1;
                }
                Op::Fence => {
                    // sfence: every older store has left the store buffer
                    // and every older clwb was accepted by the controller.
                    let t = core.time.max(core.sb_drained()).max(core.flush_done);
                    self.persist_ops.fences += 1;
                    self.persist_ops.fence_stall_cycles += t - core.time;
                    core.time = t;
                }
            }
            if core.time > until {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The out-of-order core: replay core `c`'s ops until its dispatch
    /// front passes `until` (true) or the op stream is exhausted (false).
    /// Ops are processed in program order, each given its dispatch, issue,
    /// completion and retire times at once (no per-cycle work): dispatch
    /// `issue_width` per cycle into a ROB of `rob_entries`; a load issues
    /// at dispatch, or when the load its address depends on has its data,
    /// or when an L1 MSHR is free; retirement is in order, `issue_width`
    /// per cycle; a store writes the L1 after it retires (TSO). Memory
    /// requests may thus be issued after the dispatch front, by at most
    /// the ROB's worth of latency (docs/model/processor.md).
    pub(super) fn replay_ooo(&mut self, c: usize, until: Cycle) -> Result<bool> {
        let core = &mut self.cores[c];
        let hier = &mut self.hier;
        // Stores below this address are recorded for the write-set
        // characterisation (program data; none when it is off).
        let record_below = if self.characterise {
            self.ctx.layout.home_limit
        } else {
            0
        };
        let below = &mut Below::new(
            &mut *self.scheme,
            &mut self.ctx,
            &mut self.dram_cache,
            &mut self.llc_write_backs,
        );
        let access_hook = self.access_hook;
        let (w, rob) = (self.issue_width, self.rob_entries);
        // The op stream is moved out of the core and its cursor kept in a
        // local for the loop (restored on every exit), so an op's fetch
        // does not reload the vector and store the cursor around the
        // loop's calls.
        let ops = std::mem::take(&mut core.ops);
        let mut pos = core.pos;
        let result = 'ops: {
            while let Some(&op) = ops.get(pos) {
                pos += 1;
                match op {
                    Op::Load { addr, value, dep } => {
                        self.loads += 1;
                        let (issue, seq) = core.ooo_load_issue(dep, w, rob);
                        let (done, slot) =
                            ooo_access(core, hier, below, access_hook, c, addr, false, issue);
                        if self.check_reads {
                            if let Err(e) =
                                check_read(hier, c, slot, addr, value, &self.spec.scheme)
                            {
                                break 'ops Err(e);
                            }
                        }
                        core.ooo_load_retire(seq, done, w);
                    }
                    Op::Store { addr, value } => {
                        self.stores += 1;
                        core.rob_make_room(1, rob);
                        // The store buffer is the store queue: an entry from
                        // dispatch until the write reaches the L1.
                        let sb_free = core.sb_wait_slot(core.time);
                        let (d, _) = core.dispatch(1, w, sb_free);
                        let r = core.retire(d + 1, 1, w);
                        // The write leaves the store queue for the L1 at retirement (TSO).
                        let (done, slot) =
                            ooo_access(core, hier, below, access_hook, c, addr, true, r);
                        let rec = (addr < record_below).then_some(&mut core.writes);
                        let done =
                            write_l1(hier, below, c, slot, addr, value, core.in_tx, done, rec);
                        core.sb_push(done);
                        core.rob_push(1, r);
                    }
                    Op::Compute { n } => {
                        // n independent one-cycle instructions, n ROB entries
                        // (a block larger than the ROB is capped: it streams).
                        let n = n.max(1);
                        self.compute_instrs += u64::from(n);
                        let k = n.min(rob);
                        core.rob_make_room(k, rob);
                        let (first, _) = core.dispatch(n, w, 0);
                        let r = core.retire(first + 1, n, w);
                        core.rob_push(k, r);
                    }
                    Op::Flush { addr } => {
                        core.rob_make_room(1, rob);
                        let (d, _) = core.dispatch(1, w, 0);
                        // clwb is ordered after the older stores, and holds an
                        // L1 fill buffer (MSHR) from issue until the controller
                        // accepts its write-back: with every MSHR busy it waits
                        // for the oldest (docs/model/processor.md "Flush and fence").
                        let (free_i, free_t) = core.ooo.mshr_first_free();
                        let t = d.max(core.sb_drained()).max(free_t);
                        core.req_front = core.req_front.max(t);
                        let done = hier.flush(c, line_of(addr), t + self.flush_path_cycles, below);
                        let o = &mut core.ooo;
                        // No line tag: a later load of the (still cached) line
                        // does not wait for the write-back.
                        o.mshr_line[free_i] = Addr::MAX;
                        o.mshr_done[free_i] = done;
                        core.flush_done = core.flush_done.max(done);
                        self.persist_ops.flushes += 1;
                        let r = core.retire(d + 1, 1, w);
                        core.rob_push(1, r);
                    }
                    Op::Fence => {
                        let t = core.quiesce_time();
                        self.persist_ops.fences += 1;
                        self.persist_ops.fence_stall_cycles += t.saturating_sub(core.time);
                        core.ooo_restart(t);
                    }
                }
                if core.time.max(core.req_front) > until {
                    break 'ops Ok(true);
                }
            }
            Ok(false)
        };
        core.ops = ops;
        core.pos = pos;
        result
    }
}

/// `run.check_reads`: the word a load found in core `c`'s L1 slot `slot`
/// must be the architectural value.
#[inline]
fn check_read(
    hier: &Hierarchy,
    c: CoreId,
    slot: usize,
    addr: Addr,
    value: u64,
    scheme: &str,
) -> Result<()> {
    let got = read_word(hier.l1_data(c, slot), word_index(addr));
    if got != value {
        return Err(Error::Internal(format!(
            "read-path check failed: core {c} load {addr:#x} returned {got:#x}, architectural value {value:#x} (scheme {scheme})"
        )));
    }
    Ok(())
}

/// One load or store through the scheme's access hook (if it has one) and
/// the cache hierarchy: (completion time, L1 slot of the line).
#[inline]
fn mem_access(
    hier: &mut Hierarchy,
    below: &mut Below,
    access_hook: bool,
    c: CoreId,
    addr: Addr,
    is_write: bool,
    t: Cycle,
) -> (Cycle, usize, HitLevel) {
    let mut t = t;
    if access_hook {
        t = below.scheme.access(below.ctx, c, addr, is_write, t);
    }
    hier.access(c, line_of(addr), t, below)
}

/// A store's write of `value` at `addr` into core `c`'s L1 slot `slot`
/// (the line is there since `done`), seen by the scheme: when the store
/// completes. A store to program data is recorded in `rec` (the
/// transaction's write set, for its characterisation).
#[inline(always)]
// Hot path (inlined per store): the `Store` event is built here, once the old word is read.
#[allow(clippy::too_many_arguments)]
fn write_l1(
    hier: &mut Hierarchy,
    below: &mut Below,
    c: CoreId,
    slot: usize,
    addr: Addr,
    value: u64,
    in_tx: bool,
    done: Cycle,
    rec: Option<&mut TxWrites>,
) -> Cycle {
    let (data, ext) = hier.l1_write(c, slot);
    let w = word_index(addr);
    let old = read_word(data, w);
    write_word(data, w, value);
    if let Some(r) = rec {
        r.record(addr, old, value, data);
    }
    let ev = Store {
        core: c,
        addr,
        old,
        new: value,
        in_tx,
        now: done,
    };
    below.scheme.store(below.ctx, ev, ext)
}

/// An access of the out-of-order core, issued at `t`, through its L1
/// MSHRs: an access to a line whose miss is still outstanding merges with
/// it (its data arrives with the fill, although the functional cache
/// already holds the line); a new L1 miss needs a free MSHR and waits for
/// the oldest fill when all are busy. (completion time, L1 slot)
/// The L1 hit path is inlined into the replay loop; a miss is
/// [`ooo_access_slow`].
#[inline(always)]
// Hot path: the replay loop's split borrows (core, caches, below) and one access.
#[allow(clippy::too_many_arguments)]
fn ooo_access(
    core: &mut Core,
    hier: &mut Hierarchy,
    below: &mut Below,
    access_hook: bool,
    c: CoreId,
    addr: Addr,
    is_write: bool,
    t: Cycle,
) -> (Cycle, usize) {
    // An L1 hit is `Hierarchy::access`'s first step: one lookup (which
    // also marks the line most recent).
    let line = line_of(addr);
    let l1 = &mut hier.l1[c];
    let o = &mut core.ooo;
    let found = if line == o.last_line {
        l1.lookup_hinted(line, o.last_slot)
    } else {
        l1.lookup(line)
    };
    if let Some(slot) = found {
        // A scheme's access hook sees the hit first and may delay it (a
        // TLB miss); it cannot reach the caches, so the lookup stands.
        let start = if access_hook {
            below.scheme.access(below.ctx, c, addr, is_write, t)
        } else {
            t
        };
        l1.hits += 1;
        let done = start + l1.latency;
        core.req_front = core.req_front.max(t);
        o.last_line = line;
        o.last_slot = slot;
        return (done.max(o.mshr_merge_slot(slot, line, t)), slot);
    }
    let (done, slot) = ooo_access_slow(core, hier, below, access_hook, c, addr, is_write, t);
    let o = &mut core.ooo;
    o.last_line = line;
    o.last_slot = slot;
    (done, slot)
}

/// [`ooo_access`] of a line its L1 lookup missed: an L1 miss takes the
/// MSHR that frees first (waiting if all are busy).
#[inline(never)]
// Hot path: the replay loop's split borrows (core, caches, below) and one access.
#[allow(clippy::too_many_arguments)]
fn ooo_access_slow(
    core: &mut Core,
    hier: &mut Hierarchy,
    below: &mut Below,
    access_hook: bool,
    c: CoreId,
    addr: Addr,
    is_write: bool,
    t: Cycle,
) -> (Cycle, usize) {
    let line = line_of(addr);
    let o = &mut core.ooo;
    let (free_i, free_t) = o.mshr_first_free();
    let t = t.max(free_t);
    core.req_front = core.req_front.max(t);
    let start = if access_hook {
        below.scheme.access(below.ctx, c, addr, is_write, t)
    } else {
        t
    };
    let (done, slot, level) = hier.access_l1_miss(c, line, start, below);
    debug_assert_ne!(level, HitLevel::L1, "the L1 missed");
    o.mshr_take(free_i, line, done, slot);
    (done, slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The MSHR entry a miss or flush takes.
    fn first_free(o: &Window) -> usize {
        o.mshr_first_free().0
    }

    proptest! {
        /// The divide-free spill count equals the division it replaces.
        #[test]
        fn slots_past_equals_division(w in 1u32..65, extra in 1u32..100_000) {
            let used = w + extra;
            prop_assert_eq!(slots_past(used, w), (used - 1) / w);
        }

        /// An L1 hit's merge from the slot's MSHR bits equals the scan of
        /// every MSHR, for random misses (lines installed in a
        /// direct-mapped L1 of 8 slots), flushes, back-invalidations and
        /// hits at random times.
        #[test]
        fn mshr_merge_slot_equals_scan(
            mshrs in 1usize..13,
            ops in proptest::collection::vec((0u8..4, 0u64..24, 0u64..2000, 0u64..2000), 1..400),
        ) {
            let slots = 8;
            let mut o = Window::new(16, 8, mshrs, slots, true);
            let mut resident: Vec<Option<Addr>> = vec![None; slots];
            for (kind, li, t, done) in ops {
                let line = li * crate::types::LINE_BYTES;
                let slot = (li as usize) % slots;
                match kind {
                    0 => {
                        let i = first_free(&o);
                        o.mshr_line[i] = Addr::MAX;
                        o.mshr_done[i] = done;
                    }
                    1 => resident[slot] = None,
                    _ => {
                        if resident[slot] == Some(line) {
                            prop_assert_eq!(o.mshr_merge_slot(slot, line, t), o.mshr_merge(line, t));
                        } else {
                            let i = first_free(&o);
                            o.mshr_take(i, line, done, slot);
                            resident[slot] = Some(line);
                        }
                    }
                }
            }
        }
    }
}
