//! Memory controller and device timing: read path, a write queue drained
//! FR-FCFS with high/low watermarks, channels/ranks/banks with row buffers
//! and DDR-style timing constraints, per-purpose traffic and energy.
//!
//! The controller is *lazy*: there is no global event queue. Each request
//! arrives with its time `now` (cores are processed in time order), and before
//! serving it the controller issues the queued writes that would have been
//! issued before `now` (idle-time drain) or that a full queue forces out.
//! Functionally a write lands in the media image when it is accepted: a real
//! controller forwards queued write data to later reads, so values are exact.

use super::image::{MemRead, MemWrite, SparseImage};
use super::persist::PersistLog;
use crate::config::Params;
use crate::types::{Addr, Cycle, LineData, Purpose, LINE_BYTES};

/// Timing (cycles) and energy (pJ/bit) of one device kind.
#[derive(Clone, Debug)]
pub struct DeviceTiming {
    pub t_rcd: Cycle,
    pub t_cl: Cycle,
    pub t_bl: Cycle,
    pub t_wr: Cycle,
    pub t_ras: Cycle,
    pub t_rp: Cycle,
    pub t_rc: Cycle,
    pub t_rrd: Cycle,
    pub t_rtp: Cycle,
    pub t_wtr: Cycle,
    pub t_faw: Cycle,
    /// Sensing the array into the row buffer on activation.
    pub array_read: Cycle,
    /// Programming cells; the bank is busy for this long after a write burst.
    pub array_write: Cycle,
    pub row_read_pj_per_bit: f64,
    pub row_write_pj_per_bit: f64,
    pub array_read_pj_per_bit: f64,
    pub array_write_pj_per_bit: f64,
    pub channels: u64,
    pub ranks: u64,
    pub banks: u64,
    pub row_bytes: u64,
    /// Data-comparison write: only flipped bits cost array write energy.
    pub dcw: bool,
}

impl DeviceTiming {
    pub fn nvm(p: &Params) -> Self {
        DeviceTiming {
            t_rcd: p.ns_cycles("nvm.t_rcd_ns"),
            t_cl: p.ns_cycles("nvm.t_cl_ns"),
            t_bl: p.ns_cycles("nvm.t_bl_ns"),
            t_wr: p.ns_cycles("nvm.t_wr_ns"),
            t_ras: p.ns_cycles("nvm.t_ras_ns"),
            t_rp: p.ns_cycles("nvm.t_rp_ns"),
            t_rc: p.ns_cycles("nvm.t_rc_ns"),
            t_rrd: p.ns_cycles("nvm.t_rrd_ns"),
            t_rtp: p.ns_cycles("nvm.t_rtp_ns"),
            t_wtr: p.ns_cycles("nvm.t_wtr_ns"),
            t_faw: p.ns_cycles("nvm.t_faw_ns"),
            array_read: p.ns_cycles("nvm.array_read_ns"),
            array_write: p.ns_cycles("nvm.array_write_ns"),
            row_read_pj_per_bit: p.f64("nvm.row_read_pj_per_bit"),
            row_write_pj_per_bit: p.f64("nvm.row_write_pj_per_bit"),
            array_read_pj_per_bit: p.f64("nvm.array_read_pj_per_bit"),
            array_write_pj_per_bit: p.f64("nvm.array_write_pj_per_bit"),
            channels: p.u64("nvm.channels"),
            ranks: p.u64("nvm.ranks"),
            banks: p.u64("nvm.banks"),
            row_bytes: p.u64("nvm.row_bytes"),
            dcw: p.str("nvm.write_model") == "dcw",
        }
    }

    /// A DDR4 DRAM device for hybrid schemes (DRAM caches, tables).
    pub fn dram(p: &Params) -> Self {
        let f = p.f64("cpu.freq_ghz");
        let c = |ns: f64| crate::config::ns_to_cycles(ns, f);
        DeviceTiming {
            t_rcd: p.ns_cycles("dram.t_rcd_ns"),
            t_cl: p.ns_cycles("dram.t_cl_ns"),
            t_bl: p.ns_cycles("dram.t_bl_ns"),
            t_wr: c(15.0),
            t_ras: c(32.0),
            t_rp: p.ns_cycles("dram.t_rp_ns"),
            t_rc: c(45.75),
            t_rrd: c(5.3),
            t_rtp: c(7.5),
            t_wtr: c(7.5),
            t_faw: c(21.0),
            array_read: 0,
            array_write: 0,
            row_read_pj_per_bit: 0.93,
            row_write_pj_per_bit: 1.02,
            array_read_pj_per_bit: 1.17,
            array_write_pj_per_bit: 0.39,
            channels: 1,
            ranks: 1,
            banks: p.u64("dram.banks"),
            row_bytes: p.u64("dram.row_bytes"),
            dcw: false,
        }
    }
}

#[derive(Clone, Copy, Default, Debug)]
struct Bank {
    open_row: Option<u64>,
    /// Earliest next activate (tRC from last activate, tRP after precharge).
    next_act: Cycle,
    /// Earliest precharge (tRAS, tRTP, write recovery / programming).
    next_pre: Cycle,
    /// Earliest next column command.
    next_col: Cycle,
}

#[derive(Clone, Copy, Default, Debug)]
struct Rank {
    last_act: Option<Cycle>,
    /// Times of the last four activates (tFAW window), ring buffer.
    faw: [Cycle; 4],
    faw_pos: usize,
    faw_n: usize,
}

#[derive(Clone, Copy, Default, Debug)]
struct Channel {
    bus_free: Cycle,
    last_write_end: Cycle,
}

#[derive(Clone, Copy, Debug)]
struct PendingWrite {
    addr: Addr,
    arrival: Cycle,
    data: LineData,
    len: u8,
}

/// One issued device command, recorded in test mode to check the timing
/// constraints from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Activate {
        channel: u64,
        rank: u64,
        bank: u64,
        row: u64,
        at: Cycle,
    },
    Precharge {
        channel: u64,
        rank: u64,
        bank: u64,
        at: Cycle,
    },
    Read {
        channel: u64,
        rank: u64,
        bank: u64,
        at: Cycle,
        data_end: Cycle,
    },
    Write {
        channel: u64,
        rank: u64,
        bank: u64,
        at: Cycle,
        data_end: Cycle,
    },
}

/// Traffic, latency and energy counters.
#[derive(Clone, Debug, Default)]
pub struct MemStats {
    pub bytes_read: [u64; Purpose::COUNT],
    pub bytes_written: [u64; Purpose::COUNT],
    pub reads: u64,
    pub writes: u64,
    pub row_hits: u64,
    pub row_misses: u64,
    pub read_latency_cycles: u64,
    pub read_energy_pj: f64,
    pub write_energy_pj: f64,
    pub write_queue_full_stalls: u64,
    pub forced_drains: u64,
    pub persist_events: u64,
}

impl MemStats {
    pub fn total_read(&self) -> u64 {
        self.bytes_read.iter().sum()
    }
    pub fn total_written(&self) -> u64 {
        self.bytes_written.iter().sum()
    }
    pub fn energy_nj(&self) -> f64 {
        (self.read_energy_pj + self.write_energy_pj) / 1000.0
    }
}

/// A memory controller in front of one device (NVM, or DRAM for hybrids).
pub struct MemoryController {
    pub timing: DeviceTiming,
    media: SparseImage,
    persistent: bool,
    adr: bool,
    pub persist_log: PersistLog,
    banks: Vec<Bank>,
    ranks: Vec<Rank>,
    channels: Vec<Channel>,
    wq: Vec<PendingWrite>,
    wq_capacity: usize,
    drain_high: usize,
    drain_low: usize,
    draining: bool,
    pub stats: MemStats,
    /// Commands issued, when `trace_commands` is on (tests).
    pub trace: Option<Vec<Command>>,
    lines_per_row: u64,
}

impl MemoryController {
    /// The NVM controller of the simulated machine.
    pub fn nvm(p: &Params, record_persists: bool) -> Self {
        let wq_capacity = p.usize("mc.write_queue_entries");
        Self::new(
            DeviceTiming::nvm(p),
            true,
            p.bool("mc.adr"),
            record_persists,
            wq_capacity,
            p.usize("mc.write_drain_high").min(wq_capacity),
            p.usize("mc.write_drain_low")
                .min(wq_capacity.saturating_sub(1)),
        )
    }

    /// A volatile DRAM device (hybrid schemes).
    pub fn dram(p: &Params) -> Self {
        Self::new(DeviceTiming::dram(p), false, false, false, 64, 40, 20)
    }

    pub fn new(
        timing: DeviceTiming,
        persistent: bool,
        adr: bool,
        record_persists: bool,
        wq_capacity: usize,
        drain_high: usize,
        drain_low: usize,
    ) -> Self {
        let nbanks = (timing.channels * timing.ranks * timing.banks) as usize;
        let nranks = (timing.channels * timing.ranks) as usize;
        MemoryController {
            lines_per_row: (timing.row_bytes / LINE_BYTES).max(1),
            banks: vec![Bank::default(); nbanks],
            ranks: vec![Rank::default(); nranks],
            channels: vec![Channel::default(); timing.channels as usize],
            timing,
            media: SparseImage::new(),
            persistent,
            adr,
            persist_log: PersistLog::new(record_persists && persistent),
            wq: Vec::with_capacity(wq_capacity),
            wq_capacity: wq_capacity.max(1),
            drain_high: drain_high.max(1),
            drain_low,
            draining: false,
            stats: MemStats::default(),
            trace: None,
        }
    }

    pub fn is_adr(&self) -> bool {
        self.adr
    }

    /// The functional content of the device (includes queued writes).
    pub fn media(&self) -> &SparseImage {
        &self.media
    }

    /// Initialise content outside of simulated time (workload setup): no
    /// traffic, no persist events; this is part of the crash base image.
    pub fn preload(&mut self, addr: Addr, data: &[u8]) {
        self.media.write_bytes(addr, data);
    }

    /// Functional read without timing or traffic (checks, debugging).
    pub fn peek(&self, addr: Addr, buf: &mut [u8]) {
        self.media.read_bytes(addr, buf);
    }

    #[inline]
    fn decode(&self, addr: Addr) -> (usize, usize, usize, u64) {
        let t = &self.timing;
        let line = addr / LINE_BYTES;
        let ch = line % t.channels;
        let rest = line / t.channels / self.lines_per_row;
        let bank = rest % t.banks;
        let rest = rest / t.banks;
        let rank = rest % t.ranks;
        let row = rest / t.ranks;
        let rank_idx = (ch * t.ranks + rank) as usize;
        let bank_idx = rank_idx * t.banks as usize + bank as usize;
        (ch as usize, rank_idx, bank_idx, row)
    }

    fn ids(&self, ch: usize, rank_idx: usize, bank_idx: usize) -> (u64, u64, u64) {
        let t = &self.timing;
        (
            ch as u64,
            rank_idx as u64 % t.ranks,
            bank_idx as u64 % t.banks,
        )
    }

    /// Schedule one 64 B access; returns (data burst end, row hit).
    fn access(&mut self, addr: Addr, is_write: bool, earliest: Cycle) -> (Cycle, bool) {
        let (ch, rk, bk, row) = self.decode(addr);
        let t = self.timing.clone();
        let mut bank = self.banks[bk];
        let (cid, rid, bid) = self.ids(ch, rk, bk);
        let hit = bank.open_row == Some(row);
        let mut col = earliest.max(bank.next_col);
        if !hit {
            let mut act_ready = earliest;
            if bank.open_row.is_some() {
                let pre = earliest.max(bank.next_pre);
                if let Some(tr) = self.trace.as_mut() {
                    tr.push(Command::Precharge {
                        channel: cid,
                        rank: rid,
                        bank: bid,
                        at: pre,
                    });
                }
                act_ready = pre + t.t_rp;
            }
            let rank = &mut self.ranks[rk];
            let mut act = act_ready.max(bank.next_act);
            if let Some(last) = rank.last_act {
                act = act.max(last + t.t_rrd);
            }
            if rank.faw_n == 4 {
                act = act.max(rank.faw[rank.faw_pos] + t.t_faw);
            }
            rank.last_act = Some(act);
            rank.faw[rank.faw_pos] = act;
            rank.faw_pos = (rank.faw_pos + 1) % 4;
            rank.faw_n = (rank.faw_n + 1).min(4);
            if let Some(tr) = self.trace.as_mut() {
                tr.push(Command::Activate {
                    channel: cid,
                    rank: rid,
                    bank: bid,
                    row,
                    at: act,
                });
            }
            bank.open_row = Some(row);
            bank.next_act = act + t.t_rc;
            bank.next_pre = act + t.t_ras;
            // Activation senses the NVM array into the row buffer.
            col = act + t.t_rcd.max(t.array_read);
        }
        let chan = &mut self.channels[ch];
        let data_end;
        if is_write {
            let data_start = (col + t.t_cl).max(chan.bus_free);
            data_end = data_start + t.t_bl;
            let issued = data_start - t.t_cl;
            chan.bus_free = data_end;
            chan.last_write_end = data_end;
            // Cells are programmed after the burst; the bank is busy meanwhile.
            let done = data_end + t.t_wr.max(t.array_write);
            bank.next_col = done;
            bank.next_pre = bank.next_pre.max(done);
            if let Some(tr) = self.trace.as_mut() {
                tr.push(Command::Write {
                    channel: cid,
                    rank: rid,
                    bank: bid,
                    at: issued,
                    data_end,
                });
            }
        } else {
            col = col.max(chan.last_write_end + t.t_wtr);
            let data_start = (col + t.t_cl).max(chan.bus_free);
            data_end = data_start + t.t_bl;
            let issued = data_start - t.t_cl;
            chan.bus_free = data_end;
            bank.next_col = issued + t.t_bl;
            bank.next_pre = bank.next_pre.max(issued + t.t_rtp);
            if let Some(tr) = self.trace.as_mut() {
                tr.push(Command::Read {
                    channel: cid,
                    rank: rid,
                    bank: bid,
                    at: issued,
                    data_end,
                });
            }
        }
        self.banks[bk] = bank;
        if hit {
            self.stats.row_hits += 1;
        } else {
            self.stats.row_misses += 1;
        }
        (data_end, hit)
    }

    /// Earliest time the bank serving `addr` could start a column command.
    fn bank_ready(&self, addr: Addr) -> (Cycle, bool) {
        let (ch, _, bk, row) = self.decode(addr);
        let b = &self.banks[bk];
        let hit = b.open_row == Some(row);
        let ready = if hit {
            b.next_col
        } else {
            b.next_pre.max(b.next_act)
        };
        (ready.max(self.channels[ch].bus_free), hit)
    }

    /// FR-FCFS pick: the oldest row-hit write, else the oldest write.
    fn pick_write(&self) -> usize {
        for (i, w) in self.wq.iter().enumerate() {
            if self.bank_ready(w.addr).1 {
                return i;
            }
        }
        0
    }

    fn issue_write(&mut self, i: usize) -> Cycle {
        let w = self.wq.remove(i);
        let (end, _) = self.access(w.addr, true, w.arrival);
        if !self.adr && self.persistent {
            let len = w.len as usize;
            let off = (w.addr % LINE_BYTES) as usize;
            let _ = off;
            self.persist_log
                .record(w.addr, &w.data[..len], end + self.timing.array_write);
            self.stats.persist_events += 1;
        }
        end
    }

    /// Issue the queued writes that would have gone out before `now`.
    fn advance(&mut self, now: Cycle) {
        while !self.wq.is_empty() {
            if self.wq.len() >= self.drain_high {
                self.draining = true;
            }
            if self.draining && self.wq.len() <= self.drain_low {
                self.draining = false;
            }
            let i = self.pick_write();
            let (ready, _) = self.bank_ready(self.wq[i].addr);
            let start = ready.max(self.wq[i].arrival);
            if self.draining || start < now {
                if self.draining {
                    self.stats.forced_drains += 1;
                }
                self.issue_write(i);
            } else {
                break;
            }
        }
    }

    /// Read `buf.len()` bytes (whole 64 B bursts are transferred); returns the
    /// time the last byte arrives. Reads are served before queued writes.
    pub fn read(&mut self, addr: Addr, buf: &mut [u8], purpose: Purpose, now: Cycle) -> Cycle {
        self.advance(now);
        self.media.read_bytes(addr, buf);
        let first = addr - addr % LINE_BYTES;
        let last = (addr + buf.len().max(1) as u64 - 1) / LINE_BYTES * LINE_BYTES;
        let mut done = now;
        let mut line = first;
        while line <= last {
            let (end, hit) = self.access(line, false, now);
            done = done.max(end);
            let bits = (LINE_BYTES * 8) as f64;
            let t = &self.timing;
            self.stats.read_energy_pj +=
                bits * (t.row_read_pj_per_bit + if hit { 0.0 } else { t.array_read_pj_per_bit });
            self.stats.bytes_read[purpose.index()] += LINE_BYTES;
            self.stats.reads += 1;
            line += LINE_BYTES;
        }
        self.stats.read_latency_cycles += done - now;
        done
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
    /// whole write is *persisted*: accepted into the write queue with ADR, or
    /// programmed into the media without ADR (the queue is then drained up to
    /// this write). Every burst is one persist event.
    pub fn write(&mut self, addr: Addr, data: &[u8], purpose: Purpose, now: Cycle) -> Cycle {
        self.advance(now);
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

    fn write_burst(&mut self, addr: Addr, data: &[u8], purpose: Purpose, now: Cycle) -> Cycle {
        // Energy: data-comparison write needs the old content.
        let t = &self.timing;
        let bits = (LINE_BYTES * 8) as f64;
        let array_bits = if t.dcw {
            let mut old = [0u8; LINE_BYTES as usize];
            self.media.read_bytes(addr, &mut old[..data.len()]);
            old[..data.len()]
                .iter()
                .zip(data)
                .map(|(a, b)| (a ^ b).count_ones() as f64)
                .sum::<f64>()
        } else {
            bits
        };
        self.stats.write_energy_pj +=
            bits * t.row_write_pj_per_bit + array_bits * t.array_write_pj_per_bit;
        self.stats.bytes_written[purpose.index()] += LINE_BYTES;
        self.stats.writes += 1;
        self.media.write_bytes(addr, data);

        let mut accept = now;
        if self.wq.len() >= self.wq_capacity {
            self.stats.write_queue_full_stalls += 1;
            let i = self.pick_write();
            accept = accept.max(self.issue_write(i));
        }
        let mut pw = PendingWrite {
            addr,
            arrival: accept,
            data: [0u8; LINE_BYTES as usize],
            len: data.len() as u8,
        };
        pw.data[..data.len()].copy_from_slice(data);
        self.wq.push(pw);
        if !self.persistent {
            return accept;
        }
        if self.adr {
            self.persist_log.record(addr, data, accept);
            self.stats.persist_events += 1;
            accept
        } else {
            self.persist_until_drained(addr)
        }
    }

    /// Without ADR: issue queued writes (oldest first) until the write to
    /// `addr` most recently queued has reached the media; returns that time.
    fn persist_until_drained(&mut self, addr: Addr) -> Cycle {
        let mut t = 0;
        while let Some(pos) = self.wq.iter().rposition(|w| w.addr == addr) {
            let _ = pos;
            let end = self.issue_write(0);
            t = end + self.timing.array_write;
            if !self.wq.iter().any(|w| w.addr == addr) {
                break;
            }
        }
        t
    }

    /// A scheme's ADR-protected structure (e.g. an AIT cache or staging
    /// buffer) becomes durable without NVM traffic: record the bytes as a
    /// persist event at a reserved address of the persistent image.
    pub fn persist_adr_structure(&mut self, addr: Addr, data: &[u8], now: Cycle) {
        debug_assert!(self.persistent);
        self.media.write_bytes(addr, data);
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((LINE_BYTES - a % LINE_BYTES) as usize).min(data.len() - done);
            self.persist_log.record(a, &data[done..done + n], now);
            self.stats.persist_events += 1;
            done += n;
        }
    }

    /// Drain every queued write (end of run, or a persist barrier without
    /// ADR). Returns the time the last write reaches the media.
    pub fn drain(&mut self, now: Cycle) -> Cycle {
        let mut t = now;
        while !self.wq.is_empty() {
            let i = self.pick_write();
            let end = self.issue_write(i);
            t = t.max(end + self.timing.array_write);
        }
        t
    }

    pub fn queued_writes(&self) -> usize {
        self.wq.len()
    }

    pub fn reset_stats(&mut self) {
        self.stats = MemStats::default();
    }
}
