//! Replay a trace on the NVM memory controller and device alone (no
//! cores, caches or scheme). Requests are offered in file order, each no
//! earlier than its time stamp, one controller clock
//! (`trace.offer_interval_ns`) after the previous one was accepted, and
//! after the data of a preceding dependent read (`C`). Back-pressure: a
//! read finding `mc.read_queue_entries` reads outstanding is accepted when
//! the earliest returns; a write finding the write queue full is accepted
//! when a queued write issues (the controller's own rule). The run ends
//! when every write is programmed (docs/model/trace-replay.md).

use super::{formats, Format, LineReader, Op, Record, Req, TimeUnit};
use crate::config::Params;
use crate::error::{Error, Result};
use crate::mem::image::PAGE_BYTES;
use crate::mem::MemoryController;
use crate::types::{Cycle, Purpose, LINE_BYTES};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::BufRead;

/// Lines examined to detect a format.
const DETECT_LINES: usize = 16;

/// Read latencies below this many cycles are counted exactly (percentiles
/// without storing every latency); longer ones are kept in a list.
const HIST_CYCLES: usize = 1 << 17;

/// What a replay measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReplayReport {
    pub format: String,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub dependent_reads: u64,
    pub tx_markers: u64,
    pub sim_cycles: u64,
    pub sim_ns: f64,
    /// Read latency from acceptance by the controller to data return
    /// (DRAMsim3's and Ramulator 2's definition).
    pub read_latency_mean_ns: f64,
    pub read_latency_p50_ns: f64,
    pub read_latency_p99_ns: f64,
    /// From the request's offer time (its stamp, or when the in-order
    /// stream reached it) to data return: includes read-queue waits.
    pub read_latency_from_offer_mean_ns: f64,
    /// (reads + writes) x 64 B / simulated time, GB/s.
    pub bandwidth_gb_per_s: f64,
    pub row_hit_ratio: f64,
    pub energy_nj: f64,
    /// Device write bursts (writes merged into a queued write of the same
    /// line add none) and reads forwarded from the write queue.
    pub device_writes: u64,
    pub writes_merged: u64,
    pub forwarded_reads: u64,
    pub read_queue_full_stalls: u64,
    pub write_queue_full_stalls: u64,
    pub host_seconds: f64,
    pub host_cpu_seconds: f64,
    pub requests_per_host_second: f64,
    pub requests_per_cpu_second: f64,
    pub max_rss_mib: f64,
}

/// CPU seconds (user + system) and max RSS (MiB) of this process so far.
pub fn host_usage() -> (f64, f64) {
    #[cfg(unix)]
    {
        // SAFETY: getrusage only writes the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
            let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            // ru_maxrss is in KiB on Linux.
            return (
                secs(ru.ru_utime) + secs(ru.ru_stime),
                ru.ru_maxrss as f64 / 1024.0,
            );
        }
    }
    (0.0, 0.0)
}

/// Latency histogram: exact counts below `HIST_CYCLES`, a list above.
struct LatHist {
    counts: Vec<u32>,
    over: Vec<u64>,
    n: u64,
    sum: u64,
}

impl LatHist {
    fn new() -> Self {
        LatHist {
            counts: vec![0; HIST_CYCLES],
            over: Vec::new(),
            n: 0,
            sum: 0,
        }
    }
    #[inline]
    fn add(&mut self, c: u64) {
        self.n += 1;
        self.sum += c;
        match self.counts.get_mut(c as usize) {
            Some(x) => *x += 1,
            None => self.over.push(c),
        }
    }
    /// The smallest latency with at least `q` of the samples at or below it.
    fn quantile(&mut self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (c, &k) in self.counts.iter().enumerate() {
            seen += u64::from(k);
            if seen >= rank {
                return c as u64;
            }
        }
        self.over.sort_unstable();
        self.over[(rank - seen - 1) as usize]
    }
}

/// Replay settings from the parameters.
#[derive(Clone, Copy, Debug)]
pub struct ReplayConfig {
    pub unit: TimeUnit,
    pub offer_interval: Cycle,
    pub freq_ghz: f64,
    pub read_queue_entries: usize,
    /// `nvm.capacity_bytes`: a request beyond it is refused.
    pub capacity_bytes: u64,
}

impl ReplayConfig {
    pub fn from_params(p: &Params) -> Self {
        let freq_ghz = p.f64("cpu.freq_ghz");
        ReplayConfig {
            unit: TimeUnit::new(p.f64("trace.cycle_ns"), freq_ghz),
            offer_interval: p.ns_cycles("trace.offer_interval_ns"),
            freq_ghz,
            read_queue_entries: p.usize("mc.read_queue_entries"),
            capacity_bytes: p.u64("nvm.capacity_bytes"),
        }
    }
}

/// The controller a replay drives: the run's NVM controller, from the
/// same parameters (same checks as a run's watermarks).
pub fn replay_controller(p: &Params) -> Result<MemoryController> {
    let low = p.u64("mc.write_drain_low");
    let high = p.u64("mc.write_drain_high");
    let cap = p.u64("mc.write_queue_entries");
    if low >= high || high > cap {
        return Err(Error::input(format!(
            "invalid write-drain watermarks: need mc.write_drain_low ({low}) < mc.write_drain_high ({high}) <= mc.write_queue_entries ({cap})"
        )));
    }
    Ok(MemoryController::nvm(p, false))
}

/// Replay the trace `r` (named `path` in errors) in `fmt`, or the format
/// detected from its first lines, on `mc`.
pub fn replay<R: BufRead>(
    r: R,
    path: &str,
    fmt: Option<Format>,
    cfg: ReplayConfig,
    mc: &mut MemoryController,
) -> Result<ReplayReport> {
    let start = std::time::Instant::now();
    let (cpu0, _) = host_usage();
    let mut lines = LineReader::new(r, path);
    // Detection reads ahead: keep those lines to replay them.
    let mut head: Vec<(usize, Vec<u8>)> = Vec::new();
    let fmt = match fmt {
        Some(f) => f,
        None => {
            while head.len() < DETECT_LINES {
                match lines.next_line()? {
                    None => break,
                    Some((no, l)) => {
                        let t = l.iter().position(|b| !b.is_ascii_whitespace());
                        if t.is_some_and(|i| l[i] != b'#') || no == 1 {
                            head.push((no, l.to_vec()));
                        }
                    }
                }
            }
            let view: Vec<(usize, &[u8])> = head
                .iter()
                .filter(|(_, l)| l.iter().any(|b| !b.is_ascii_whitespace()))
                .map(|(n, l)| (*n, &l[..]))
                .collect();
            formats::detect(&view)
                .map_err(|e| Error::input(format!("invalid trace file '{path}': {e}")))?
        }
    };
    let mut st = State::new(cfg, fmt);
    let mut req = Req::default();
    let cap = cfg.capacity_bytes;
    for (no, l) in &head {
        let rec = formats::parse_line(fmt, l, *no == 1, &mut req)
            .and_then(|rec| check_in_capacity(rec, &req, cap).map(|()| rec))
            .map_err(|e| super::line_error(path, *no, &e))?;
        if *no == 1 {
            warn_headerless_nvmain(fmt, rec, path);
        }
        st.step(rec, &req, mc);
    }
    while let Some((no, l)) = lines.next_line()? {
        match formats::parse_line(fmt, l, no == 1, &mut req)
            .and_then(|rec| check_in_capacity(rec, &req, cap).map(|()| rec))
        {
            Ok(rec) => {
                if no == 1 {
                    warn_headerless_nvmain(fmt, rec, path);
                }
                st.step(rec, &req, mc)
            }
            Err(e) => return Err(super::line_error(path, no, &e)),
        }
    }
    let end = mc.drain(st.last_accept).max(st.last_data);
    let (cpu1, rss) = host_usage();
    Ok(st.report(mc, end, start.elapsed().as_secs_f64(), cpu1 - cpu0, rss))
}

/// A request must lie inside the simulated NVM (`nvm.capacity_bytes`):
/// beyond it the device's address mapping has no bank for it.
fn check_in_capacity(rec: Record, req: &Req, cap: u64) -> std::result::Result<(), String> {
    if rec != Record::Req {
        return Ok(());
    }
    let line = req.addr - req.addr % LINE_BYTES;
    let end = match req.len {
        0 => line.checked_add(LINE_BYTES),
        n => req.addr.checked_add(u64::from(n)),
    };
    match end {
        Some(end) if end <= cap => Ok(()),
        _ => Err(format!(
            "invalid address {:#x}: the request ends beyond nvm.capacity_bytes={cap} (last line starts at {:#x}); raise nvm.capacity_bytes (--set nvm.capacity_bytes=...) or check the trace's address field",
            req.addr,
            cap.saturating_sub(LINE_BYTES)
        )),
    }
}

/// NVMain always consumes line 1 as a header (shared/peers README §2): a
/// file without `NVMV0`/`NVMV1` loses its first request there but not here,
/// so say so rather than differ silently.
#[cold]
fn warn_headerless_nvmain(fmt: Format, rec: Record, path: &str) {
    if fmt == Format::Nvmain && rec == Record::Req {
        eprintln!(
            "warning: line 1 of '{path}' is a request, not an NVMain header (NVMV0 or NVMV1): durasim replays it, NVMain itself would drop it"
        );
    }
}

/// The replay's in-order offer state.
struct State {
    cfg: ReplayConfig,
    fmt: Format,
    /// Earliest offer of the next request.
    next_offer: Cycle,
    last_accept: Cycle,
    last_data: Cycle,
    /// Completion times of outstanding reads (mirrors the controller's read
    /// queue, so the acceptance time is known).
    reads_out: BinaryHeap<Reverse<Cycle>>,
    lat: LatHist,
    lat_offer_sum: u64,
    buf: [u8; LINE_BYTES as usize],
    zeros: [u8; LINE_BYTES as usize],
    reads: u64,
    writes: u64,
    dep_reads: u64,
    markers: u64,
    rq_stalls: u64,
    /// A write with values was replayed: the image may hold non-zero bytes.
    values_seen: bool,
}

impl State {
    fn new(cfg: ReplayConfig, fmt: Format) -> Self {
        State {
            cfg,
            fmt,
            next_offer: 0,
            last_accept: 0,
            last_data: 0,
            reads_out: BinaryHeap::with_capacity(cfg.read_queue_entries + 1),
            lat: LatHist::new(),
            lat_offer_sum: 0,
            buf: [0; LINE_BYTES as usize],
            zeros: [0; LINE_BYTES as usize],
            reads: 0,
            writes: 0,
            dep_reads: 0,
            markers: 0,
            rq_stalls: 0,
            values_seen: false,
        }
    }

    #[inline]
    fn step(&mut self, rec: Record, req: &Req, mc: &mut MemoryController) {
        match rec {
            Record::Req => self.request(req, mc),
            Record::TxBegin { .. } | Record::TxEnd { .. } => self.markers += 1,
            Record::Skip => {}
        }
    }

    #[inline]
    fn request(&mut self, req: &Req, mc: &mut MemoryController) {
        let stamp = req.cycle.map_or(0, |c| self.cfg.unit.to_core(c));
        let offer = stamp.max(self.next_offer);
        let accept = match req.op {
            Op::Read | Op::DepRead => {
                // The controller's read-queue rule, mirrored: a read finding
                // every entry taken waits for the earliest to return.
                let q = &mut self.reads_out;
                while q.peek().is_some_and(|r| r.0 <= offer) {
                    q.pop();
                }
                let accept = if q.len() >= self.cfg.read_queue_entries {
                    self.rq_stalls += 1;
                    offer.max(q.pop().map_or(offer, |r| r.0))
                } else {
                    offer
                };
                let line = req.addr - req.addr % LINE_BYTES;
                let purpose = req.purpose.unwrap_or(Purpose::Demand);
                let done = mc.read(line, &mut self.buf, purpose, accept);
                self.reads_out.push(Reverse(done));
                self.lat.add(done - accept);
                self.lat_offer_sum += done - offer;
                self.last_data = self.last_data.max(done);
                self.reads += 1;
                if req.op == Op::DepRead {
                    self.dep_reads += 1;
                    self.next_offer = done;
                }
                accept
            }
            Op::Write => {
                let purpose = req.purpose.unwrap_or(Purpose::WriteBack);
                let accept = if req.len > 0 {
                    self.values_seen = true;
                    mc.write(req.addr, &req.data[..req.len as usize], purpose, offer)
                } else {
                    let line = req.addr - req.addr % LINE_BYTES;
                    let a = mc.write(line, &self.zeros, purpose, offer);
                    if !self.values_seen {
                        // Only zeros were written so far: the page the
                        // write allocated holds zeros, like an absent one.
                        // Releasing it keeps a 1 GiB random trace from
                        // touching 1 GiB of host memory (720 MiB RSS and
                        // 1.2 s of page faults per million requests).
                        let page = line - line % PAGE_BYTES;
                        mc.media_mut().zero_range(page, PAGE_BYTES);
                    }
                    a
                };
                self.writes += 1;
                accept
            }
        };
        self.last_accept = self.last_accept.max(accept);
        let mut next = accept + self.cfg.offer_interval;
        if let Some(g) = req.gap {
            next = next.max(accept + self.cfg.unit.to_core(g.saturating_add(2)));
        }
        self.next_offer = self.next_offer.max(next);
    }

    fn report(
        mut self,
        mc: &MemoryController,
        end: Cycle,
        host_s: f64,
        cpu_s: f64,
        rss: f64,
    ) -> ReplayReport {
        let f = self.cfg.freq_ghz;
        let ns = |c: f64| c / f;
        let s = &mc.stats;
        let n = self.reads + self.writes;
        let sim_ns = ns(end as f64);
        let p50 = self.lat.quantile(0.5);
        let p99 = self.lat.quantile(0.99);
        let reads = self.reads.max(1) as f64;
        ReplayReport {
            format: self.fmt.name().to_string(),
            requests: n,
            reads: self.reads,
            writes: self.writes,
            dependent_reads: self.dep_reads,
            tx_markers: self.markers,
            sim_cycles: end,
            sim_ns,
            read_latency_mean_ns: ns(self.lat.sum as f64 / reads),
            read_latency_p50_ns: ns(p50 as f64),
            read_latency_p99_ns: ns(p99 as f64),
            read_latency_from_offer_mean_ns: ns(self.lat_offer_sum as f64 / reads),
            bandwidth_gb_per_s: if sim_ns > 0.0 {
                (n * LINE_BYTES) as f64 / sim_ns
            } else {
                0.0
            },
            row_hit_ratio: s.row_hits as f64 / (s.row_hits + s.row_misses).max(1) as f64,
            energy_nj: s.energy_nj(),
            device_writes: s.writes,
            writes_merged: s.writes_merged,
            forwarded_reads: s.forwarded_reads,
            read_queue_full_stalls: self.rq_stalls,
            write_queue_full_stalls: s.write_queue_full_stalls,
            host_seconds: host_s,
            host_cpu_seconds: cpu_s,
            requests_per_host_second: n as f64 / host_s.max(1e-9),
            requests_per_cpu_second: if cpu_s > 0.0 { n as f64 / cpu_s } else { 0.0 },
            max_rss_mib: rss,
        }
    }
}
