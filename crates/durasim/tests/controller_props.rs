//! Property tests of the memory controller: the command trace obeys the DDR
//! timing constraints, every request completes, reads return the newest
//! bytes, persist times are ordered sensibly, energy follows the per-bit
//! formula.

use durasim::config::Params;
use durasim::mem::controller::{Command, Mapping};
use durasim::mem::{DeviceTiming, MemRead, MemWrite, MemoryController, SparseImage};
use durasim::types::{Cycle, Purpose};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum Req {
    Read {
        line: u64,
        lines: u64,
    },
    Write {
        line: u64,
        off: u64,
        len: u64,
        seed: u8,
    },
}

#[derive(Clone, Debug)]
struct Step {
    req: Req,
    /// Time advance before the request (cycles).
    dt: u64,
    /// Arrival jitter: the engine's requests are only roughly time-ordered.
    back: u64,
}

fn step() -> impl Strategy<Value = Step> {
    let req = prop_oneof![
        (0u64..96, 1u64..3).prop_map(|(line, lines)| Req::Read { line, lines }),
        (0u64..96, 0u64..64, 1u64..160, any::<u8>()).prop_map(|(line, off, len, seed)| {
            Req::Write {
                line,
                off,
                len,
                seed,
            }
        }),
    ];
    (req, 0u64..300, 0u64..40).prop_map(|(req, dt, back)| Step { req, dt, back })
}

/// A small device so that rows conflict and ranks fill their tFAW window.
#[derive(Clone, Debug)]
struct Dev {
    dram: bool,
    adr: bool,
    dcw: bool,
    channels: u64,
    ranks: u64,
    banks: u64,
    row_bytes: u64,
    wq: usize,
    high: usize,
    low: usize,
}

fn dev() -> impl Strategy<Value = Dev> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0u32..2,
        0u32..2,
        0u32..4,
        0u32..3,
        (2usize..12),
    )
        .prop_flat_map(|(dram, adr, dcw, c, r, b, row, wq)| {
            (2..=wq).prop_flat_map(move |high| {
                (0..high).prop_map(move |low| Dev {
                    dram,
                    adr,
                    dcw,
                    channels: 1 << c,
                    ranks: 1 << r,
                    banks: 1 << b,
                    row_bytes: 128 << row,
                    wq,
                    high,
                    low,
                })
            })
        })
}

fn timing(d: &Dev) -> DeviceTiming {
    let p = Params::defaults(&[]);
    let mut t = if d.dram {
        DeviceTiming::dram(&p)
    } else {
        DeviceTiming::nvm(&p)
    };
    t.channels = d.channels;
    t.ranks = d.ranks;
    t.banks = d.banks;
    t.row_bytes = d.row_bytes;
    t.dcw = d.dcw && !d.dram;
    // Exercise every address mapping.
    t.mapping = match d.wq % 3 {
        0 => Mapping::LineInterleaved,
        1 => Mapping::RowInterleaved,
        _ => Mapping::Permutation,
    };
    // A short refresh period so that runs cross refresh windows.
    if d.dram {
        t.t_refi = 2000;
        t.t_rfc = 300;
    }
    t
}

fn controller(d: &Dev, adr: bool) -> MemoryController {
    let mut mc = MemoryController::new(timing(d), !d.dram, adr, true, d.wq, d.high, d.low);
    mc.trace = Some(Vec::new());
    mc
}

fn write_bytes(line: u64, off: u64, len: u64, seed: u8) -> (u64, Vec<u8>) {
    let addr = line * 64 + off;
    let data = (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8 ^ 0x5a))
        .collect();
    (addr, data)
}

/// Per-request observations the properties use.
#[derive(Default)]
struct Outcome {
    /// (request time, persisted time) of every write, in order.
    persists: Vec<(Cycle, Cycle)>,
    /// Expected write energy in pJ (per-bit formula, flips from the model).
    write_energy_pj: f64,
    /// Device (not forwarded) reads.
    device_reads: u64,
}

/// Run `steps` against `mc` and a reference image; checks read data and
/// queue bounds on the way.
fn run(mc: &mut MemoryController, d: &Dev, steps: &[Step]) -> Result<Outcome, TestCaseError> {
    let t = mc.timing;
    let mut model = SparseImage::new();
    let mut out = Outcome::default();
    let mut now: Cycle = 1000;
    for s in steps {
        now += s.dt;
        let at = now - s.back;
        match &s.req {
            Req::Read { line, lines } => {
                let mut buf = vec![0u8; (*lines * 64) as usize];
                let fwd_before = mc.stats.forwarded_reads;
                let draining = mc.is_draining();
                let trace_len = mc.trace.as_ref().map_or(0, |t| t.len());
                let done = mc.read(line * 64, &mut buf, Purpose::Demand, at);
                // Read priority: outside a drain, the read waits behind no
                // write that was still queued when it arrived.
                if !draining {
                    for c in &mc.trace.as_ref().unwrap()[trace_len..] {
                        if let Command::Write { at: w, .. } = *c {
                            prop_assert!(
                                w < at,
                                "write issued at {w} ahead of a read arriving at {at}"
                            );
                        }
                    }
                }
                prop_assert!(!mc.is_draining(), "a read waits until the drain ends");
                let bound = if draining { d.low } else { d.wq };
                prop_assert!(mc.queued_writes() <= bound, "queue after a read");
                let mut want = vec![0u8; buf.len()];
                model.read_bytes(line * 64, &mut want);
                prop_assert_eq!(&buf, &want, "read after write returns the newest bytes");
                let fwd = mc.stats.forwarded_reads - fwd_before;
                out.device_reads += lines - fwd;
                let min = if fwd == *lines {
                    t.t_bl
                } else {
                    t.t_cl + t.t_bl
                };
                prop_assert!(done >= at + min, "read done {done} before {at} + {min}");
            }
            Req::Write {
                line,
                off,
                len,
                seed,
            } => {
                let (addr, data) = write_bytes(*line, *off, *len, *seed);
                // Expected energy, burst by burst (bursts never cross a line).
                let mut a = addr;
                for chunk_len in bursts(addr, data.len() as u64) {
                    let i = (a - addr) as usize;
                    let chunk = &data[i..i + chunk_len as usize];
                    let mut old = vec![0u8; chunk.len()];
                    model.read_bytes(a, &mut old);
                    let bits = (chunk.len() * 8) as f64;
                    let array_bits = if t.dcw {
                        old.iter()
                            .zip(chunk)
                            .map(|(x, y)| (x ^ y).count_ones())
                            .sum::<u32>() as f64
                    } else {
                        bits
                    };
                    out.write_energy_pj +=
                        bits * t.row_write_pj_per_bit + array_bits * t.array_write_pj_per_bit;
                    a += chunk_len;
                }
                let p = mc.write(addr, &data, Purpose::Log, at);
                model.write_bytes(addr, &data);
                out.persists.push((at, p));
                prop_assert!(p >= at);
            }
        }
        prop_assert!(mc.queued_writes() <= d.wq, "queue over capacity");
    }
    let end = mc.drain(now);
    prop_assert!(end >= now);
    prop_assert_eq!(mc.queued_writes(), 0, "drain empties the queue");
    // Every write reached the media: it equals the reference image.
    for page in model.page_numbers() {
        let mut got = vec![0u8; 4096];
        mc.peek(page * 4096, &mut got);
        prop_assert_eq!(
            &got[..],
            &model.page(page).unwrap()[..],
            "media page {}",
            page
        );
    }
    if mc.persist_log.enabled() {
        // Replaying the persist log over the empty base gives the model.
        let mut img = SparseImage::new();
        for e in mc.persist_log.events() {
            img.write_bytes(e.addr, mc.persist_log.data(e));
        }
        for page in model.page_numbers() {
            prop_assert_eq!(
                &img.page(page).unwrap()[..],
                &model.page(page).unwrap()[..],
                "persist log replay, page {}",
                page
            );
        }
    }
    Ok(out)
}

fn bursts(addr: u64, len: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut done = 0;
    while done < len {
        let a = addr + done;
        let n = (64 - a % 64).min(len - done);
        v.push(n);
        done += n;
    }
    v
}

/// Check every DDR constraint on the trace.
fn check_trace(t: &DeviceTiming, trace: &[Command]) -> Result<(), TestCaseError> {
    type Key = (u64, u64, u64);
    #[derive(Default)]
    struct B {
        open: Option<u64>,
        last_act: Option<Cycle>,
        last_pre: Option<Cycle>,
        last_col: Option<Cycle>,
        last_read_at: Option<Cycle>,
        last_write_end: Option<Cycle>,
    }
    let mut banks: BTreeMap<Key, B> = BTreeMap::new();
    let mut rank_acts: BTreeMap<(u64, u64), Vec<Cycle>> = BTreeMap::new();
    // (data start, data end, is_write, command time) per channel.
    let mut bursts: BTreeMap<u64, Vec<(Cycle, Cycle, bool, Cycle)>> = BTreeMap::new();
    for c in trace {
        // No command issues while its rank refreshes.
        let at = match *c {
            Command::Activate { at, .. }
            | Command::Precharge { at, .. }
            | Command::Read { at, .. }
            | Command::Write { at, .. } => Some(at),
            Command::Refresh { .. } => None,
        };
        if let (Some(at), true) = (at, t.t_refi > 0) {
            prop_assert!(
                at % t.t_refi >= t.t_rfc,
                "command during a refresh window: {c:?}"
            );
        }
        match *c {
            Command::Refresh {
                channel,
                rank,
                bank,
                at,
            } => {
                prop_assert!(
                    t.t_refi > 0 && at.is_multiple_of(t.t_refi),
                    "refresh off its period: {c:?}"
                );
                let b = banks.entry((channel, rank, bank)).or_default();
                prop_assert!(b.open.is_some(), "refresh closes an open bank: {c:?}");
                if let Some(l) = b.last_col.max(b.last_act) {
                    prop_assert!(l < at, "refresh before the bank's last command: {c:?}");
                }
                b.open = None;
                // The next activate follows the refresh (tRFC) like a precharge (tRP).
                b.last_pre = Some(at + t.t_rfc - t.t_rp);
            }
            Command::Activate {
                channel,
                rank,
                bank,
                row,
                at,
            } => {
                let b = banks.entry((channel, rank, bank)).or_default();
                prop_assert!(b.open.is_none(), "activate on an open bank: {c:?}");
                if let Some(a) = b.last_act {
                    prop_assert!(at >= a + t.t_rc, "tRC violated: {c:?} after act at {a}");
                }
                if let Some(p) = b.last_pre {
                    prop_assert!(at >= p + t.t_rp, "tRP violated: {c:?} after pre at {p}");
                }
                b.open = Some(row);
                b.last_act = Some(at);
                rank_acts.entry((channel, rank)).or_default().push(at);
            }
            Command::Precharge {
                channel,
                rank,
                bank,
                at,
            } => {
                let b = banks.entry((channel, rank, bank)).or_default();
                prop_assert!(b.open.is_some(), "precharge of a closed bank: {c:?}");
                let a = b.last_act.unwrap();
                prop_assert!(at >= a + t.t_ras, "tRAS violated: {c:?} after act at {a}");
                if let Some(r) = b.last_read_at {
                    prop_assert!(at >= r + t.t_rtp, "tRTP violated: {c:?} after read at {r}");
                }
                if let Some(w) = b.last_write_end {
                    prop_assert!(
                        at >= w + t.t_wr.max(t.array_write),
                        "write recovery/programming violated: {c:?} after write data end {w}"
                    );
                }
                b.open = None;
                b.last_pre = Some(at);
            }
            Command::Read {
                channel,
                rank,
                bank,
                at,
                data_end,
            }
            | Command::Write {
                channel,
                rank,
                bank,
                at,
                data_end,
            } => {
                let is_write = matches!(c, Command::Write { .. });
                let b = banks.entry((channel, rank, bank)).or_default();
                prop_assert!(b.open.is_some(), "column command to a closed bank: {c:?}");
                let a = b.last_act.unwrap();
                prop_assert!(
                    at >= a + t.t_rcd.max(t.array_read),
                    "activate-to-column (tRCD/array read) violated: {c:?} after act at {a}"
                );
                if let Some(w) = b.last_write_end {
                    prop_assert!(
                        at >= w + t.t_wr.max(t.array_write),
                        "column command during cell programming: {c:?} after write end {w}"
                    );
                }
                if let Some(p) = b.last_col {
                    prop_assert!(at >= p + t.t_bl, "column spacing violated: {c:?}");
                }
                prop_assert_eq!(data_end, at + t.t_cl + t.t_bl, "burst timing of {:?}", c);
                b.last_col = Some(at);
                if is_write {
                    b.last_write_end = Some(data_end);
                } else {
                    b.last_read_at = Some(at);
                }
                bursts.entry(channel).or_default().push((
                    data_end - t.t_bl,
                    data_end,
                    is_write,
                    at,
                ));
            }
        }
    }
    for ((ch, rk), acts) in &mut rank_acts {
        // Activates may be placed into earlier gaps: check them in time order.
        acts.sort_unstable();
        for w in acts.windows(2) {
            prop_assert!(
                w[1] >= w[0] + t.t_rrd,
                "tRRD violated in channel {ch} rank {rk}: {} then {}",
                w[0],
                w[1]
            );
        }
        for w in acts.windows(5) {
            prop_assert!(
                w[4] >= w[0] + t.t_faw,
                "tFAW violated in channel {ch} rank {rk}: five activates in {:?}",
                w
            );
        }
    }
    for (ch, v) in &mut bursts {
        v.sort_unstable();
        let mut last_write_end: Option<Cycle> = None;
        for w in v.windows(2) {
            prop_assert!(
                w[1].0 >= w[0].1,
                "data bus overlap on channel {ch}: {:?} and {:?}",
                w[0],
                w[1]
            );
        }
        for w in v.windows(2) {
            if !w[0].2 && w[1].2 {
                prop_assert!(
                    w[1].0 >= w[0].1 + t.t_rtw,
                    "tRTW violated on channel {ch}: write data at {} after read data end {}",
                    w[1].0,
                    w[0].1
                );
            }
        }
        for &(_, end, is_write, at) in v.iter() {
            if is_write {
                last_write_end = Some(end);
            } else if let Some(we) = last_write_end {
                prop_assert!(
                    at >= we + t.t_wtr,
                    "tWTR violated on channel {ch}: read at {at} after write data end {we}"
                );
            }
        }
    }
    Ok(())
}

/// Read energy from the trace: a read preceded by its activate was a miss.
fn expected_read_energy(t: &DeviceTiming, trace: &[Command]) -> f64 {
    let mut e = 0.0;
    for (i, c) in trace.iter().enumerate() {
        if let Command::Read { .. } = c {
            let miss = i > 0 && matches!(trace[i - 1], Command::Activate { .. });
            e += 512.0 * (t.row_read_pj_per_bit + if miss { t.array_read_pj_per_bit } else { 0.0 });
        }
    }
    e
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Timing constraints, completion, read-after-write and energy.
    #[test]
    fn controller_obeys_timing_and_completes(d in dev(), steps in prop::collection::vec(step(), 1..120)) {
        let mut mc = controller(&d, d.adr);
        let out = run(&mut mc, &d, &steps)?;
        let trace = mc.trace.take().unwrap();
        check_trace(&mc.timing, &trace)?;
        // Energy follows the per-bit formula; a merged write programs the
        // union once, so merging only saves energy (uniform model).
        if mc.stats.writes_merged == 0 {
            prop_assert!(close(mc.stats.write_energy_pj, out.write_energy_pj),
                "write energy {} != {}", mc.stats.write_energy_pj, out.write_energy_pj);
        } else if !mc.timing.dcw {
            prop_assert!(mc.stats.write_energy_pj <= out.write_energy_pj * (1.0 + 1e-9));
        }
        let re = expected_read_energy(&mc.timing, &trace);
        prop_assert!(close(mc.stats.read_energy_pj, re), "read energy {} != {}", mc.stats.read_energy_pj, re);
        let reads = trace.iter().filter(|c| matches!(c, Command::Read { .. })).count() as u64;
        prop_assert_eq!(reads, out.device_reads);
        // Every write burst was issued to the device exactly once.
        let writes = trace.iter().filter(|c| matches!(c, Command::Write { .. })).count() as u64;
        prop_assert_eq!(writes, mc.stats.writes);
        if !d.dram {
            // Every accepted burst is a persist event (ADR: merged ones too).
            prop_assert_eq!(mc.stats.persist_events, mc.stats.writes + mc.stats.writes_merged);
        }
    }

    /// With ADR a write persists when accepted (at once unless the queue is
    /// full); without ADR only once programmed, never earlier than with ADR.
    #[test]
    fn adr_persists_no_later_than_media(d in dev(), steps in prop::collection::vec(step(), 1..80)) {
        prop_assume!(!d.dram);
        let mut adr = controller(&d, true);
        let mut media = controller(&d, false);
        let a = run(&mut adr, &d, &steps)?;
        let m = run(&mut media, &d, &steps)?;
        let t = adr.timing;
        let min_program = t.t_cl + t.t_bl + t.array_write.max(t.t_wr);
        let adr_never_full = adr.stats.write_queue_full_stalls == 0;
        for (i, (&(at, pa), &(_, pm))) in a.persists.iter().zip(&m.persists).enumerate() {
            prop_assert!(pm >= at + min_program, "write {i}: programmed at {pm}, requested {at}");
            if adr_never_full {
                prop_assert_eq!(pa, at, "ADR write {} not persisted on acceptance", i);
                prop_assert!(pa < pm);
            }
        }
        // Persist events: ADR in call order at acceptance; without ADR at
        // programming time, each no earlier than its request.
        let ev_a = adr.persist_log.events();
        let ev_m = media.persist_log.events();
        prop_assert_eq!(ev_a.len(), ev_m.len());
    }
}

/// Watermarks: a burst of posted writes beyond the high watermark is drained
/// down to the low one before the next request is served.
#[test]
fn watermark_drain_stops_at_low() {
    let d = Dev {
        dram: false,
        adr: true,
        dcw: false,
        channels: 1,
        ranks: 1,
        banks: 2,
        row_bytes: 256,
        wq: 16,
        high: 8,
        low: 3,
    };
    let mut mc = controller(&d, true);
    for i in 0..8u64 {
        mc.write(i * 4096, &[1u8; 64], Purpose::WriteBack, 100);
    }
    assert_eq!(mc.queued_writes(), 8);
    let mut buf = [0u8; 64];
    mc.read(1 << 20, &mut buf, Purpose::Demand, 100);
    assert_eq!(
        mc.queued_writes(),
        3,
        "forced drain stops at the low watermark"
    );
    assert_eq!(mc.stats.forced_drains, 5);
    // Below the watermark, writes wait while reads keep arriving early.
    mc.read(2 << 20, &mut buf, Purpose::Demand, 101);
    assert_eq!(mc.queued_writes(), 3);
    // Much later the idle bank has written them all.
    mc.read(3 << 20, &mut buf, Purpose::Demand, 1_000_000);
    assert_eq!(mc.queued_writes(), 0);
}

/// FR-FCFS: a queued write to the open row goes before an older one that
/// needs an activation.
#[test]
fn fr_fcfs_prefers_row_hits() {
    let p = Params::defaults(&[]);
    let mut t = DeviceTiming::nvm(&p);
    t.channels = 1;
    t.ranks = 1;
    t.banks = 1;
    let mut mc = MemoryController::new(t, true, true, false, 8, 4, 0);
    mc.trace = Some(Vec::new());
    let mut buf = [0u8; 64];
    mc.read(0, &mut buf, Purpose::Demand, 0); // opens row 0
    mc.write(1 << 20, &[2u8; 64], Purpose::WriteBack, 10); // other row, older
    mc.write(64, &[3u8; 64], Purpose::WriteBack, 11); // open row
    mc.drain(12);
    let writes: Vec<_> = mc
        .trace
        .unwrap()
        .into_iter()
        .filter_map(|c| match c {
            Command::Write { at, .. } => Some(at),
            _ => None,
        })
        .collect();
    assert_eq!(writes.len(), 2);
    // The row hit (issued first) needs no activation in between.
    assert!(writes[0] < writes[1]);
    assert_eq!(mc.stats.row_hits, 1);
}

/// Forwarding: a read of a line fully held in the write queue does not
/// touch the device.
#[test]
fn reads_forward_from_the_write_queue() {
    let p = Params::defaults(&[]);
    let mut mc = MemoryController::nvm(&p, false);
    mc.write(4096, &[9u8; 64], Purpose::WriteBack, 100);
    let mut buf = [0u8; 64];
    let done = mc.read(4096, &mut buf, Purpose::Demand, 100);
    assert_eq!(buf, [9u8; 64]);
    assert_eq!(mc.stats.forwarded_reads, 1);
    assert_eq!(done, 100 + mc.timing.t_bl);
    assert_eq!(mc.stats.read_energy_pj, 0.0);
}

/// A write waiting for a bank that is busy programming must not hold the
/// data bus: a later read to an idle bank goes into the earlier idle gap.
#[test]
fn busy_bank_writes_do_not_block_other_banks() {
    let p = Params::defaults(&[]);
    let mut t = DeviceTiming::nvm(&p);
    // Row-interleaved: the five writes below share one bank.
    t.mapping = Mapping::RowInterleaved;
    t.channels = 1;
    let row_bytes = t.row_bytes;
    let mut mc = MemoryController::new(t, true, true, false, 64, 40, 0);
    // Five writes to one row of bank 0, issued at once (an explicit drain)
    // and serialised on the bank (150 ns programming each).
    for i in 0..5 {
        mc.write(i * 64, &[1u8; 64], Purpose::WriteBack, 0);
    }
    mc.drain(0);
    let mut buf = [0u8; 64];
    // Bank 1 (next row-sized chunk) is idle: its read needs only an
    // activation and a burst, however far bank 0's writes were scheduled.
    let done = mc.read(row_bytes, &mut buf, Purpose::Demand, 1);
    let idle_read = t.t_rcd.max(t.array_read) + t.t_cl + t.t_bl;
    assert!(
        done <= 1 + idle_read + 4 * t.t_bl,
        "read to an idle bank finished at {done}, idle latency is {idle_read}"
    );
}

/// Writes stamped in the future (a victim written back when its fill
/// arrives) must not push queued writes onto a bank ahead of a read that
/// is stamped earlier but reaches the controller later in host order: the
/// engine's time bound says such reads can still come, and a real
/// controller would have served them first (read priority).
#[test]
fn future_stamped_writes_do_not_issue_ahead_of_earlier_reads() {
    let p = Params::defaults(&[]);
    let mut t = DeviceTiming::nvm(&p);
    t.channels = 1;
    t.ranks = 1;
    t.banks = 1;
    let row_bytes = t.row_bytes;
    let read_at = |bound: Cycle| {
        let mut mc = MemoryController::new(t, true, true, false, 64, 40, 0);
        mc.set_time_bound(bound);
        // Two victims written back 2,000 and 5,000 cycles ahead of the
        // engine's time; the second arrival would issue the first.
        mc.write(0, &[1u8; 64], Purpose::WriteBack, 2000);
        mc.write(row_bytes, &[2u8; 64], Purpose::WriteBack, 5000);
        let mut buf = [0u8; 64];
        // A demand read stamped 1,500 to the same bank, another row.
        mc.read(2 * row_bytes, &mut buf, Purpose::Demand, 1500) - 1500
    };
    let idle = {
        let mut mc = MemoryController::new(t, true, true, false, 64, 40, 0);
        let mut buf = [0u8; 64];
        mc.read(2 * row_bytes, &mut buf, Purpose::Demand, 1500) - 1500
    };
    // Bounded at the engine's time (1,000): the read finds the bank idle.
    assert_eq!(read_at(1000), idle);
    // Unbounded (standalone use): the first write was issued at 2,000 by
    // the second one's arrival, and the bank is busy programming it.
    assert!(read_at(Cycle::MAX) > idle + t.t_bl);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// Back-pressure: with the queue full of writes that cannot issue yet,
    /// the next write is accepted only when one leaves (accept > now), and
    /// the stall is counted.
    #[test]
    fn full_write_queue_stalls_the_writer(d in dev()) {
        prop_assume!(!d.dram);
        let mut mc = controller(&d, true);
        let now = 5000;
        for i in 0..d.wq as u64 {
            let p = mc.write(i * 64, &[1u8; 64], Purpose::Log, now);
            prop_assert_eq!(p, now, "a write with a free slot is accepted at once");
        }
        prop_assert_eq!(mc.queued_writes(), d.wq);
        let p = mc.write(d.wq as u64 * 64, &[2u8; 64], Purpose::Log, now);
        prop_assert!(p > now, "full queue: accepted at {p}, arrived at {now}");
        prop_assert_eq!(mc.stats.write_queue_full_stalls, 1);
        prop_assert_eq!(mc.stats.write_queue_full_stall_cycles, p - now);
        prop_assert!(mc.queued_writes() <= d.wq);
        // The slot was freed by a write issued exactly when the newcomer was accepted.
        let issued: Vec<Cycle> = mc.trace.as_ref().unwrap().iter().filter_map(|c| match *c {
            Command::Write { at, .. } => Some(at),
            _ => None,
        }).collect();
        prop_assert!(issued.contains(&p), "accept {p} is the issue time of the leaving write: {issued:?}");
        mc.drain(now);
        check_trace(&mc.timing, mc.trace.as_ref().unwrap())?;
    }

    /// Write combining: writes to a line with a queued write merge into it
    /// (no slot, no burst); the media and the persist log hold the newest
    /// bytes of every byte, and one device burst programs the union.
    #[test]
    fn merged_writes_persist_the_newest_bytes(
        writes in prop::collection::vec((0u64..64, 1u64..=64, any::<u8>()), 2..12),
    ) {
        let p = Params::defaults(&[]);
        let mut mc = MemoryController::nvm(&p, true);
        mc.trace = Some(Vec::new());
        let mut model = [0u8; 64];
        let line = 7 * 4096;
        for (i, &(off, len, seed)) in writes.iter().enumerate() {
            let len = len.min(64 - off);
            let (_, data) = write_bytes(0, off, len, seed);
            mc.write(line + off, &data, Purpose::Log, 100 + i as u64);
            model[off as usize..(off + len) as usize].copy_from_slice(&data);
        }
        prop_assert_eq!(mc.stats.writes_merged, writes.len() as u64 - 1);
        prop_assert_eq!(mc.queued_writes(), 1);
        prop_assert_eq!(mc.stats.total_written(), 64, "one burst for the merged line");
        let mut buf = [0u8; 64];
        mc.peek(line, &mut buf);
        prop_assert_eq!(buf, model);
        mc.drain(200);
        let bursts = mc.trace.as_ref().unwrap().iter().filter(|c| matches!(c, Command::Write { .. })).count();
        prop_assert_eq!(bursts, 1);
        // Replaying the persist log (in order) gives the newest bytes.
        let mut img = SparseImage::new();
        for e in mc.persist_log.events() {
            img.write_bytes(e.addr, mc.persist_log.data(e));
        }
        let mut got = [0u8; 64];
        img.read_bytes(line, &mut got);
        let mask_bytes: Vec<bool> = (0..64).map(|b| writes.iter().any(|&(o, l, _)| b >= o && b < o + l.min(64 - o))).collect();
        for b in 0..64 {
            if mask_bytes[b] {
                prop_assert_eq!(got[b], model[b], "byte {}", b);
            }
        }
    }

    /// The permutation mapping is a bijection on lines: distinct lines never
    /// share (channel, rank, bank, row, column).
    #[test]
    fn permutation_decode_is_a_bijection(
        base in 0u64..(1 << 34),
        ch_log in 0u32..3, rank_log in 0u32..3, bank_log in 0u32..4, row_log in 0u32..4,
    ) {
        let p = Params::defaults(&[]);
        let mut t = DeviceTiming::nvm(&p);
        t.mapping = Mapping::Permutation;
        t.channels = 1 << ch_log;
        t.ranks = 1 << rank_log;
        t.banks = 1 << bank_log;
        t.row_bytes = 128 << row_log;
        let mc = MemoryController::new(t, false, false, false, 8, 6, 2);
        let lines_per_row = t.row_bytes / 64;
        let mut seen = std::collections::HashSet::new();
        // A window of consecutive lines and lines at power-of-two strides.
        let mut addrs: Vec<u64> = (0..512).map(|i| (base + i) * 64).collect();
        addrs.extend((0..40).map(|k| (base ^ (1 << k)) * 64));
        addrs.sort_unstable();
        addrs.dedup();
        for a in addrs {
            let (c, r, b, row) = mc.location(a);
            // The column is the line's bits between the index and the row.
            let col = (a / 64 / (t.channels * t.ranks * t.banks)) % lines_per_row;
            prop_assert!(seen.insert((c, r, b, row, col)), "line {a:#x} collides");
        }
    }

    /// The same offset in each of 8 regions at a power-of-two stride lands
    /// in 8 different banks (thread regions, per-core logs).
    #[test]
    fn power_of_two_strides_spread_over_banks(k in 6u32..36, off in 0u64..(1 << 36)) {
        let p = Params::defaults(&[]);
        let mc = MemoryController::nvm(&p, false);
        let stride = 1u64 << k;
        let off = off % stride;
        let mut seen = std::collections::HashSet::new();
        for i in 0..8 {
            let (c, r, b, _) = mc.location(i * stride + off);
            prop_assert!(seen.insert((c, r, b)), "region {i} at stride {stride} collides");
        }
    }
}
