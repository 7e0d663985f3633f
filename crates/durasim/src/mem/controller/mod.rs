//! Memory controller and device timing: a read path with a bounded read
//! queue, a write queue that holds writes until their bank and bus can serve
//! them (FR-FCFS, USIMM high/low watermarks, write combining, back-pressure),
//! channels/ranks/banks with row buffers and DDR-style timing constraints
//! (tRTW, refresh for DRAM), per-purpose traffic and energy.
//!
//! The controller is *lazy*: there is no global event queue. Each request
//! arrives with its time `now` (cores are processed in time order), and before
//! serving it the controller issues the queued writes whose issue time (bank
//! ready, bus slot, arrival) is before `now`. A queued write leaves the queue
//! only when it is issued. Reads have priority over writes except during a
//! watermark drain, when a read waits until the drain reaches the low
//! watermark. Data bursts and activates are reserved in time, so every timing
//! constraint is checkable from the command trace.
//! Functionally a write lands in the media image when it is accepted: a real
//! controller forwards queued write data to later reads, so values are exact.
//!
//! The parts, on DRAMsim3's and Ramulator 2's cut: `timing` (device
//! parameters and the address mapping), `bank` (bank, rank and channel
//! state, the command planner), `reservations` (the time-sorted lists
//! behind rank and channel constraints), `queue` (the write queue, its
//! FR-FCFS pick, the read-queue bound), `stats` (counters); this module
//! is the controller that ties them: the request paths and the issue of
//! queued writes.

mod bank;
mod queue;
mod reservations;
mod stats;
mod timing;

pub use bank::Command;
pub use stats::MemStats;
pub use timing::{DeviceTiming, Mapping};

use super::image::{MemRead, MemWrite, SparseImage};
use super::media::Media;
use super::optane::Dimm;
use super::persist::PersistLog;
use crate::config::Params;
use crate::error::Result;
use crate::types::{Addr, Cycle, LineData, Purpose, LINE_BYTES};
use bank::{DeviceState, Plan, RESERVATION_HORIZON_CYCLES};
use queue::{byte_mask, Cand, PendingWrite, ReadQueue, WriteQueue};
use timing::{AddrMap, Loc};

/// An observer of the requests a controller receives, called as each
/// arrives, before it is served (`run --trace-out` installs one that
/// writes them to a trace). The engine reports transaction boundaries
/// through it too, so a recording interleaves them with the requests in
/// time order.
pub trait RequestTap: Send {
    /// A read of `len` bytes at `addr`, received at `now`.
    fn read(&mut self, addr: Addr, len: usize, purpose: Purpose, now: Cycle);
    /// A write of `data` at `addr`, received at `now`.
    fn write(&mut self, addr: Addr, data: &[u8], purpose: Purpose, now: Cycle);
    /// Core `core` begins a transaction at `now`.
    fn tx_begin(&mut self, core: usize, now: Cycle);
    /// Core `core` ends its transaction at `now`.
    fn tx_end(&mut self, core: usize, now: Cycle);
    /// The run is over: flush what the tap keeps; the requests it saw.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// A memory controller in front of one device (NVM, or DRAM for hybrids).
pub struct MemoryController {
    pub timing: DeviceTiming,
    map: AddrMap,
    media: SparseImage,
    persistent: bool,
    adr: bool,
    pub persist_log: PersistLog,
    dev: DeviceState,
    wq: WriteQueue,
    rq: ReadQueue,
    /// Latest request time seen (reservations far older are pruned).
    latest_now: Cycle,
    /// No request stamped earlier than this can still arrive (the engine's
    /// global time: its earliest core or event). A write stamped later (a
    /// victim written back when its fill arrives, up to a memory latency
    /// ahead of the other cores) must not advance the queue past it, or
    /// queued writes would be issued ahead of reads a real controller
    /// would still see first and serve first (read priority).
    time_bound: Cycle,
    /// The last plan of a queued write: (slot, its seq, its location, the
    /// plan). `advance` plans the FR-FCFS pick at every request and mostly
    /// finds it not yet issuable. A plan depends only on its request, its
    /// bank, its rank's activates and its channel's bursts, and is the
    /// earliest time meeting every constraint, so it stays valid until a
    /// commit changes its bank, adds an activate or burst that conflicts
    /// with it, or prunes reservations it may have avoided
    /// (`MemoryController::commit` drops it then).
    write_plan: Option<(u16, u64, Loc, Plan)>,
    pub stats: MemStats,
    /// Data-aware media (TLC cells, encoders), or `None`: the default
    /// device, whose write path never touches it.
    pub cells: Option<Box<Media>>,
    /// Optane-like DIMM (`dimm.model = optane`, mem/optane.rs), or `None`:
    /// the default device, whose paths never touch it.
    pub dimm: Option<Box<Dimm>>,
    /// Commands issued, when set to `Some` (tests).
    pub trace: Option<Vec<Command>>,
    /// Every read and write request received, when set (`run --trace-out`).
    pub request_tap: Option<Box<dyn RequestTap>>,
}

impl MemoryController {
    /// The NVM controller of the simulated machine.
    pub fn nvm(p: &Params, record_persists: bool) -> Self {
        let (cap, high, low) = Self::queue_params(p);
        let mut mc = Self::new(
            DeviceTiming::nvm(p),
            true,
            p.bool("mc.adr"),
            record_persists,
            cap,
            high,
            low,
        );
        mc.set_read_queue_entries(p.usize("mc.read_queue_entries"));
        mc.cells = Media::from_params(p);
        mc.dimm = Dimm::from_params(p);
        mc
    }

    /// A volatile DRAM device (hybrid schemes), behind a controller with the
    /// same queue design as the NVM one.
    pub fn dram(p: &Params) -> Self {
        let (cap, high, low) = Self::queue_params(p);
        let mut mc = Self::new(DeviceTiming::dram(p), false, false, false, cap, high, low);
        mc.set_read_queue_entries(p.usize("mc.read_queue_entries"));
        mc
    }

    fn queue_params(p: &Params) -> (usize, usize, usize) {
        let cap = p.usize("mc.write_queue_entries");
        let high = p.usize("mc.write_drain_high").min(cap);
        let low = p.usize("mc.write_drain_low").min(high.saturating_sub(1));
        (cap, high, low)
    }

    /// Outstanding reads the controller holds; a read beyond them waits for
    /// the earliest to finish.
    pub fn set_read_queue_entries(&mut self, n: usize) {
        self.rq.set_capacity(n);
    }

    /// `channels`, `ranks`, `banks` and `row_bytes` must be powers of two
    /// (the parameter checks guarantee it).
    pub fn new(
        timing: DeviceTiming,
        persistent: bool,
        adr: bool,
        record_persists: bool,
        wq_capacity: usize,
        drain_high: usize,
        drain_low: usize,
    ) -> Self {
        for (name, v) in [
            ("channels", timing.channels),
            ("ranks", timing.ranks),
            ("banks", timing.banks),
            ("row_bytes", timing.row_bytes),
        ] {
            assert!(v.is_power_of_two(), "device {name} must be a power of two");
        }
        let nbanks = (timing.channels * timing.ranks * timing.banks) as usize;
        MemoryController {
            map: AddrMap::new(&timing),
            dev: DeviceState::new(&timing),
            wq: WriteQueue::new(nbanks, wq_capacity, drain_high, drain_low, timing.dcw),
            // Unbounded unless set (`set_read_queue_entries`).
            rq: ReadQueue::unbounded(),
            write_plan: None,
            latest_now: 0,
            time_bound: Cycle::MAX,
            timing,
            media: SparseImage::new(),
            persistent,
            adr,
            persist_log: PersistLog::new(record_persists && persistent),
            stats: MemStats::default(),
            cells: None,
            dimm: None,
            trace: None,
            request_tap: None,
        }
    }

    /// Declare that no request stamped before `t` will arrive any more
    /// (see `time_bound`); `Cycle::MAX` lifts the bound (standalone use,
    /// final drain).
    #[inline]
    pub fn set_time_bound(&mut self, t: Cycle) {
        self.time_bound = t;
    }

    pub fn is_adr(&self) -> bool {
        self.adr
    }

    /// A watermark drain is in progress (reads wait for it).
    pub fn is_draining(&self) -> bool {
        self.wq.is_draining()
    }

    /// The functional content of the device (includes queued writes).
    pub fn media(&self) -> &SparseImage {
        &self.media
    }

    /// The functional content, writable outside of simulated time (trace
    /// replay releases pages that hold only zeros).
    pub fn media_mut(&mut self) -> &mut SparseImage {
        &mut self.media
    }

    /// Initialise content outside of simulated time (workload setup): no
    /// traffic, no persist events; this is part of the crash base image.
    pub fn preload(&mut self, addr: Addr, data: &[u8]) {
        self.media.write_bytes(addr, data);
    }

    /// [`Self::preload`] of page `page_no` with the bytes of page `page_no`
    /// of `src`, shared copy-on-write (no copy is stored until either side
    /// writes the page).
    pub fn preload_shared(&mut self, page_no: u64, src: &SparseImage) {
        self.media.share_page(page_no, src, page_no);
    }

    /// [`Self::preload`] of page `page_no` with the bytes of page `page_no`
    /// of `src`, stored as a page depending on `src`'s (no line is stored
    /// twice until either side writes it; `SparseImage::link_page`).
    ///
    /// # Safety
    /// As `SparseImage::link_page`: `src` and this controller's media are
    /// used from one thread at a time while linked.
    pub unsafe fn preload_linked(&mut self, page_no: u64, src: &mut SparseImage) {
        // SAFETY: the caller's promise.
        unsafe { self.media.link_page(page_no, src) };
    }

    /// Functional read without timing or traffic (checks, debugging).
    pub fn peek(&self, addr: Addr, buf: &mut [u8]) {
        self.media.read_bytes(addr, buf);
    }

    /// (channel, rank within channel, bank within rank, row) of `addr`.
    pub fn location(&self, addr: Addr) -> (u64, u64, u64, u64) {
        let l = self.map.decode(addr);
        let (c, r, b) = self.map.ids(l);
        (c, r, b, l.row)
    }

    /// The commands of one 64 B access no earlier than `earliest`, without
    /// changing any state.
    #[inline]
    fn plan(&self, l: Loc, is_write: bool, earliest: Cycle) -> Plan {
        self.dev.plan(&self.timing, l, is_write, earliest)
    }

    /// Carry out a planned access; returns its data burst end.
    /// `busy`: a write's bank time after its burst.
    fn commit(&mut self, l: Loc, is_write: bool, p: &Plan, busy: Cycle) -> Cycle {
        self.wq.bank_changed(l.bank as usize);
        // Does the cached write plan survive this commit (see `write_plan`)?
        let survives = self
            .write_plan
            .is_none_or(|(_, _, w, wp)| wp.survives(&self.timing, w, l, is_write, p));
        let horizon = self.latest_now.saturating_sub(RESERVATION_HORIZON_CYCLES);
        let c = self.dev.commit(&self.timing, l, is_write, p, busy, horizon);
        // Pruned reservations may include ones the cached plan avoided.
        let pruned_under = self.write_plan.is_some_and(|(_, _, w, _)| {
            (c.acts_pruned && w.rank == l.rank) || (c.bursts_pruned && w.ch == l.ch)
        });
        if !survives || pruned_under {
            self.write_plan = None;
        }
        if let Some(out) = self.trace.as_mut() {
            p.push_commands(self.map.ids(l), l, is_write, c.data_end, out);
        }
        if p.hit {
            self.stats.row_hits += 1;
        } else {
            self.stats.row_misses += 1;
        }
        c.data_end
    }

    /// The FR-FCFS pick of the write queue.
    #[inline]
    fn pick(&mut self) -> Option<Cand> {
        self.wq.pick(&self.dev.banks, &self.timing)
    }

    /// Issue queued write `s` at its planned time: it leaves the queue now.
    /// Returns (command time, programmed time).
    fn issue(&mut self, s: u16, p: &Plan) -> (Cycle, Cycle) {
        if self.wq.is_draining() {
            self.stats.forced_drains += 1;
        }
        let w = self.wq.dequeue(s);
        let busy = self.program_time(&w);
        let end = self.commit(w.loc, true, p, busy);
        self.stats.writes += 1;
        let done = end + busy;
        if self.persistent && !self.adr {
            self.persist_programmed(&w, done);
        }
        (p.issued, done)
    }

    /// The bank's busy time after the burst of write `w`: write recovery or
    /// programming, as the data-aware media and the DIMM decide.
    #[inline]
    fn program_time(&mut self, w: &PendingWrite) -> Cycle {
        let busy = match self.cells.as_mut() {
            None => self.timing.write_busy(),
            Some(m) => {
                // The DIMM encodes the line and programs the changed cells.
                let data = self.media.read_line(w.line);
                let purpose = Purpose::ALL[w.purpose as usize];
                let (cycles, pj) = m.program(w.line, &data, purpose, &mut self.stats.media);
                self.stats.write_energy_pj += pj;
                self.timing.t_wr.max(cycles)
            }
        };
        match self.dimm.as_mut() {
            None => busy,
            Some(d) => {
                // The on-DIMM controller translates the address (a miss
                // reads the AIT entry from the media first), then the
                // write-combining buffer decides what is programmed.
                let t = &self.timing;
                let media_read = t.act_to_col() + t.t_cl + t.t_bl;
                let mut extra = 0;
                if d.translates() {
                    extra += d.ait_cycles;
                    if d.lookup(w.line, &mut self.stats.dimm).is_some() {
                        extra += media_read;
                    }
                }
                let o = d.wcb_write(w.line, &mut self.stats.dimm);
                extra
                    + match o.programmed {
                        None => t.t_wr,
                        Some(false) => busy,
                        Some(true) => busy + media_read,
                    }
            }
        }
    }

    /// Without ADR the bytes of write `w` are durable once programmed, at
    /// `done`. The media holds this write's bytes: every later write to
    /// the line merged into it while it was queued.
    fn persist_programmed(&mut self, w: &PendingWrite, done: Cycle) {
        let first = w.mask.trailing_zeros() as usize;
        let last = 63 - w.mask.leading_zeros() as usize;
        let mut buf = [0u8; LINE_BYTES as usize];
        let a = w.line + first as u64;
        match self.cells.as_ref() {
            // The durable bytes are the programmed cells, decoded.
            Some(m) => {
                let stored = m.stored(w.line).expect("line just programmed");
                buf[..=last - first].copy_from_slice(&stored[first..=last]);
            }
            None => self.media.read_bytes(a, &mut buf[..=last - first]),
        }
        // Programmed in the controller's order, whichever core's handling
        // issued it.
        let stream = self.persist_log.set_stream(super::MEDIA_STREAM);
        self.persist_log.record(a, &buf[..=last - first], done);
        self.persist_log.set_stream(stream);
        self.stats.persist_events += 1;
    }

    /// Issue the FR-FCFS pick whatever the time (a drain, a full queue);
    /// returns (command time, programmed time).
    fn issue_next(&mut self) -> (Cycle, Cycle) {
        let c = self.pick().expect("a queued write");
        self.issue_slot(c.slot)
    }

    fn issue_slot(&mut self, s: u16) -> (Cycle, Cycle) {
        let p = self.plan_queued(s);
        self.issue(s, &p)
    }

    /// The plan of queued write `s` at its arrival (cached, see
    /// `write_plan`).
    #[inline]
    fn plan_queued(&mut self, s: u16) -> Plan {
        // Only the write's sequence number is read on a cache hit (the
        // usual case: most requests find the pick not yet issuable).
        let w = self.wq.get(s);
        let seq = w.seq;
        if let Some((cs, cseq, _, p)) = &self.write_plan {
            if *cs == s && *cseq == seq {
                return *p;
            }
        }
        let (loc, arrival) = (w.loc, w.arrival);
        let p = self.plan(loc, true, arrival);
        self.write_plan = Some((s, seq, loc, p));
        p
    }

    /// Issue the queued writes whose issue time (bank ready, bus slot,
    /// arrival) is before `now`, in FR-FCFS order: a real controller would
    /// have issued them already (while no read waited, or in a drain).
    fn advance(&mut self, now: Cycle) {
        self.latest_now = self.latest_now.max(now);
        while self.wq.len() > 0 {
            let c = self.pick().expect("a queued write");
            if c.est >= now {
                break;
            }
            let p = self.plan_queued(c.slot);
            if p.issued >= now {
                break;
            }
            self.issue(c.slot, &p);
        }
    }

    /// Read `buf.len()` bytes (whole 64 B bursts are transferred); returns the
    /// time the last byte arrives. Reads go before queued writes unless a
    /// watermark drain is in progress; a line wholly covered by a queued
    /// write is forwarded from the queue.
    pub fn read(&mut self, addr: Addr, buf: &mut [u8], purpose: Purpose, now: Cycle) -> Cycle {
        if cfg!(feature = "free-memory") {
            self.media.read_bytes(addr, buf);
            self.stats.reads += buf.len().div_ceil(LINE_BYTES as usize) as u64;
            return now + FREE_READ_CYCLES;
        }
        if let Some(tap) = self.request_tap.as_mut() {
            tap.read(addr, buf.len(), purpose, now);
        }
        // A read is stamped at its own issue; bounding its advance as well
        // changed every metric by under 0.5% (tpcc, 5k tx).
        self.advance(now);
        let mut earliest = now;
        // During a drain the read waits until it reaches the low watermark.
        while self.wq.is_draining() && self.wq.len() > 0 {
            earliest = earliest.max(self.issue_next().0);
        }
        self.wq.end_drain();
        self.media.read_bytes(addr, buf);
        let first = addr - addr % LINE_BYTES;
        let last = (addr + buf.len().max(1) as u64 - 1) / LINE_BYTES * LINE_BYTES;
        let mut done = now;
        // Counted, not compared against `last`: the top line of the
        // address space would wrap the cursor to 0 and loop forever.
        for i in 0..=(last - first) / LINE_BYTES {
            let line = first + i * LINE_BYTES;
            self.stats.bytes_read[purpose.index()] += LINE_BYTES;
            self.stats.reads += 1;
            done = done.max(self.read_burst(line, earliest));
        }
        self.stats.read_latency_cycles += done - now;
        done
    }

    /// One 64 B read of `line`, no earlier than `earliest`; returns the time
    /// its data arrive.
    #[inline]
    fn read_burst(&mut self, line: Addr, earliest: Cycle) -> Cycle {
        let l = self.map.decode(line);
        let (mut start, stalled) = self.rq.slot(earliest);
        if stalled {
            self.stats.read_queue_full_stalls += 1;
        }
        if let Some(d) = self.dimm.as_mut().filter(|d| d.translates()) {
            // On-DIMM translation: the AIT cache, and on a miss a read of
            // the AIT entry from the media before the data.
            let lat = d.ait_cycles;
            if let Some(ait) = d.lookup(line, &mut self.stats.dimm) {
                let al = self.map.decode(ait - ait % LINE_BYTES);
                let p = self.plan(al, false, start);
                start = self.commit(al, false, &p, 0);
            }
            start += lat;
        }
        let end = if self
            .wq
            .find(line, l.bank)
            .is_some_and(|s| self.wq.get(s).mask == u64::MAX)
        {
            // Served from the controller's queue: one burst time.
            self.stats.forwarded_reads += 1;
            start + self.timing.t_bl
        } else {
            let p = self.plan(l, false, start);
            let end = self.commit(l, false, &p, 0);
            let t = &self.timing;
            let bits = (LINE_BYTES * 8) as f64;
            self.stats.read_energy_pj +=
                bits * (t.row_read_pj_per_bit + if p.hit { 0.0 } else { t.array_read_pj_per_bit });
            end
        };
        self.rq.push(end);
        end
    }

    pub fn read_line(
        &mut self,
        line_addr: Addr,
        purpose: Purpose,
        now: Cycle,
    ) -> (LineData, Cycle) {
        let mut l = [0u8; LINE_BYTES as usize];
        let done = self.read(line_addr, &mut l, purpose, now);
        (l, done)
    }

    /// Write `data` at `addr` (split into 64 B bursts). Returns the time the
    /// whole write is *persisted*: accepted into the write queue with ADR
    /// (later than `now` when the queue is full), or programmed into the
    /// media without ADR (the write is then issued at once). Every burst is
    /// one persist event. For a volatile device: the time it was accepted.
    pub fn write(&mut self, addr: Addr, data: &[u8], purpose: Purpose, now: Cycle) -> Cycle {
        if cfg!(feature = "free-memory") {
            self.stats.write_requests[purpose.index()] += 1;
            self.stats.write_request_bytes[purpose.index()] += data.len() as u64;
            self.media.write_bytes(addr, data);
            return now + FREE_WRITE_CYCLES;
        }
        if let Some(tap) = self.request_tap.as_mut() {
            tap.write(addr, data, purpose, now);
        }
        self.advance(now.min(self.time_bound));
        self.stats.write_requests[purpose.index()] += 1;
        self.stats.write_request_bytes[purpose.index()] += data.len() as u64;
        let mut persisted = now;
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((LINE_BYTES - a % LINE_BYTES) as usize).min(data.len() - done);
            persisted = persisted.max(self.write_burst(a, &data[done..done + n], purpose, now));
            done += n;
        }
        persisted
    }

    /// One write within a line: combined into the queued write of the line
    /// or queued; returns when it is persisted (see [`Self::write`]).
    fn write_burst(&mut self, addr: Addr, data: &[u8], purpose: Purpose, now: Cycle) -> Cycle {
        let line = addr - addr % LINE_BYTES;
        let off = (addr - line) as usize;
        let mask = byte_mask(off, data.len());
        let loc = self.map.decode(line);
        let queued = self.wq.find(line, loc.bank);
        self.stats.write_energy_pj += self.write_energy_pj(addr, data, mask, queued);

        let mut accept = now;
        let slot = match queued {
            Some(s) => {
                // Write combining: no new slot, no new burst.
                self.wq.merge(s, mask);
                self.stats.writes_merged += 1;
                s
            }
            None => {
                if self.wq.is_full() {
                    // Full queue: accepted when the next write leaves it.
                    let (issued, _) = self.issue_next();
                    accept = accept.max(issued);
                    self.stats.write_queue_full_stalls += 1;
                    self.stats.write_queue_full_stall_cycles += accept - now;
                }
                self.stats.bytes_written[purpose.index()] += LINE_BYTES;
                let s = self
                    .wq
                    .enqueue(line, loc, mask, purpose.index() as u8, accept);
                if let Some(m) = self.cells.as_mut() {
                    // A line first written now holds its setup content.
                    let media = &self.media;
                    m.ensure_with(line, || media.read_line(line));
                }
                if self.timing.dcw {
                    let mut orig = [0u8; LINE_BYTES as usize];
                    self.media.read_bytes(line, &mut orig);
                    self.wq.set_orig(s, orig);
                }
                s
            }
        };
        self.media.write_bytes(addr, data);
        if !self.persistent {
            return accept;
        }
        if self.adr {
            // A merged write is still a persist event, at its own acceptance.
            // With data-aware media the ADR flush programs the line through
            // the encoder: the durable bytes are what the read path decodes
            // from it, which every encoder makes the bytes written
            // (`Media::roundtrip_decoded`; debug builds check it).
            #[cfg(debug_assertions)]
            if let Some(m) = self.cells.as_ref() {
                let rt = m.roundtrip_decoded(&self.media.read_line(line), purpose);
                debug_assert_eq!(&rt[off..off + data.len()], data);
            }
            self.persist_log.record_queued(addr, data, now, accept);
            self.stats.persist_events += 1;
            accept
        } else {
            self.issue_slot(slot).1
        }
    }

    /// Energy of writing `data` (bytes `mask` of its line) at `addr`, with
    /// `queued` the queued write of the line if any. The queued write
    /// programs the union of its bytes once, so a merged write pays only
    /// for bytes new to the union (uniform), or for the change in flipped
    /// bits against the content before the first queued write (dcw).
    #[inline]
    fn write_energy_pj(&self, addr: Addr, data: &[u8], mask: u64, queued: Option<u16>) -> f64 {
        let off = (addr % LINE_BYTES) as usize;
        let old_mask = queued.map_or(0, |s| self.wq.get(s).mask);
        let t = &self.timing;
        let new_bits = ((mask & !old_mask).count_ones() * 8) as f64;
        let array_bits = if self.cells.is_some() {
            // Charged per programmed cell when the write is issued.
            0.0
        } else if t.dcw {
            let mut cur = [0u8; LINE_BYTES as usize];
            self.media.read_bytes(addr, &mut cur[..data.len()]);
            let mut flips: i64 = 0;
            for (i, (&c, &d)) in cur.iter().zip(data).enumerate() {
                if old_mask >> (off + i) & 1 == 1 {
                    let o = self.wq.orig(queued.unwrap())[off + i];
                    flips += (o ^ d).count_ones() as i64 - (o ^ c).count_ones() as i64;
                } else {
                    flips += (c ^ d).count_ones() as i64;
                }
            }
            flips as f64
        } else {
            new_bits
        };
        new_bits * t.row_write_pj_per_bit + array_bits * t.array_write_pj_per_bit
    }

    /// A scheme's ADR-protected structure (e.g. an AIT cache or staging
    /// buffer) becomes durable without NVM traffic: record the bytes as a
    /// persist event at a reserved address of the persistent image.
    pub fn persist_adr_structure(&mut self, addr: Addr, data: &[u8], now: Cycle) {
        self.persist_adr_inner(addr, data, Cycle::MAX, now);
    }

    /// [`Self::persist_adr_structure`] for a request that travels the
    /// write path behind the data writes (a commit message the controller
    /// handles in arrival order, e.g. EHOU's S/C flip): recorded as
    /// arriving at `now`, so the crash order puts it after every queued
    /// write that arrived before it, whenever the queue accepted those.
    pub fn persist_adr_in_queue_order(&mut self, addr: Addr, data: &[u8], now: Cycle) {
        self.persist_adr_inner(addr, data, now, now);
    }

    fn persist_adr_inner(&mut self, addr: Addr, data: &[u8], arrived: Cycle, now: Cycle) {
        debug_assert!(self.persistent);
        self.media.write_bytes(addr, data);
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((LINE_BYTES - a % LINE_BYTES) as usize).min(data.len() - done);
            self.persist_log
                .record_queued(a, &data[done..done + n], arrived, now);
            self.stats.persist_events += 1;
            done += n;
        }
    }

    /// Drain every queued write (end of run, or a persist barrier without
    /// ADR). Returns the time the last write is programmed into the media.
    pub fn drain(&mut self, now: Cycle) -> Cycle {
        if cfg!(feature = "free-memory") {
            return now;
        }
        self.latest_now = self.latest_now.max(now);
        let mut t = now;
        while self.wq.len() > 0 {
            t = t.max(self.issue_next().1);
        }
        self.wq.end_drain();
        t
    }

    pub fn queued_writes(&self) -> usize {
        self.wq.len()
    }

    pub fn reset_stats(&mut self) {
        self.stats = MemStats::default();
    }

    /// A logging scheme's log region: the data-aware media counts the
    /// bits of its line writes (`MediaStats::log_bits_written`); nothing
    /// otherwise.
    pub fn mark_log_region(&mut self, base: Addr, bytes: u64) {
        if let Some(m) = self.cells.as_mut() {
            m.set_log_region(base, bytes);
        }
    }
}

/// The `free-memory` diagnostic build's read and write times (arbitrary:
/// an unloaded device's order of magnitude).
const FREE_READ_CYCLES: Cycle = 200;
const FREE_WRITE_CYCLES: Cycle = 20;
