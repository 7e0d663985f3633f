//! `durasim device validate`: drive the NVM controller and device alone
//! (the trace-replay path, no cores or caches) with generated
//! pointer-chasing and streaming patterns and set the model's idle read
//! latency and bandwidth beside published measurements of a real
//! first-generation Optane DIMM (`configs/optane.toml`;
//! docs/model/optane.md).
//!
//! Patterns (durasim trace text generated in memory, replayed by
//! [`super::replay::replay`] on a fresh controller each):
//! - `chase-{seq,rand}-64`: dependent 64 B reads (`C`), each offered when
//!   the previous returned: the idle read latency (LATTester's
//!   load + fence loop, Yang et al. FAST 2020 Fig. 2).
//! - `{read,write}-{seq,rand}-SIZE`, SIZE = 64 B .. 4 KiB: independent
//!   accesses of SIZE bytes (SIZE/64 consecutive lines at a SIZE-aligned
//!   address) offered back to back, limited by the controller's queues: the
//!   bandwidth (Yang et al. Fig. 5 for random, their sweep data for
//!   sequential). Writes carry no data (the bandwidth does not depend on
//!   values without a data-aware device).
//!
//! Random addresses are drawn over `REGION_BYTES` (a seeded RNG: same seed,
//! same numbers).

use super::replay::{self, ReplayConfig, ReplayReport};
use super::Format;
use crate::config::Params;
use crate::error::Result;
use crate::mem::optane::DimmStats;
use crate::mem::MemoryController;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt::Write as _;

/// Random patterns spread over 1 GiB (clamped to the capacity): far beyond
/// the 16 MiB the Optane preset's AIT cache covers, as a benchmark's
/// buffer on a 256 GB DIMM.
pub const REGION_BYTES: u64 = 1 << 30;

/// Access sizes of the streaming patterns (Yang et al. Fig. 5's range).
pub const SIZES: [u64; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

/// Published measurements of ONE first-generation Optane DIMM
/// (non-interleaved, "Optane-NI").
const SRC_LAT: &str =
    "Yang et al. FAST 2020 Fig. 2 (NVSL/OptaneStudy graphs/02-best_case_latency.csv)";
const SRC_RAND: &str =
    "Yang et al. FAST 2020 Fig. 5, Optane-NI (graphs/05-bandwidth_accesssize_optane_ni.csv)";
const SRC_SEQ: &str = "Yang et al. FAST 2020 sweep data, Optane-NI (data/bandwidth.csv: StrideBW, stride = size, median at the best thread count, /1024 as their graphs)";
/// Fig. 2: LATTester idle load latency, 64 B, sequential and random (ns).
const LAT_SEQ_NS: f64 = 169.4;
const LAT_RAND_NS: f64 = 305.0;
/// Bandwidth (GB/s as plotted) per size in `SIZES`; writes are ntstore.
const BW_RAND_READ: [f64; 7] = [1.675, 3.344, 6.505, 6.530, 6.519, 6.499, 6.559];
const BW_RAND_WRITE: [f64; 7] = [0.555, 1.098, 2.207, 2.209, 2.223, 2.227, 2.231];
const BW_SEQ_READ: [f64; 7] = [6.500, 6.494, 6.513, 6.519, 6.494, 6.487, 6.438];
const BW_SEQ_WRITE: [f64; 7] = [2.237, 2.237, 2.237, 2.244, 2.231, 2.225, 2.225];

/// One measured pattern beside its published value.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ValidationRow {
    pub pattern: String,
    /// `idle_read_latency_ns` or `bandwidth_gb_per_s`.
    pub metric: &'static str,
    pub op: &'static str,
    pub order: &'static str,
    pub access_bytes: u64,
    pub model: f64,
    pub published: f64,
    /// model / published.
    pub ratio: f64,
    pub source: &'static str,
    pub requests: u64,
    pub row_hit_ratio: f64,
    pub ait_cache_misses: u64,
    pub wcb_hits: u64,
    pub media_block_writes: u64,
    pub media_rmw: u64,
}

/// The whole validation.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Validation {
    pub lines_per_pattern: u64,
    pub region_bytes: u64,
    pub seed: u64,
    pub dimm_model: String,
    pub rows: Vec<ValidationRow>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Chase,
    Read,
    Write,
}

/// The trace text of one pattern: `lines` 64 B requests in total.
fn pattern_text(kind: Kind, random: bool, size: u64, lines: u64, region: u64, seed: u64) -> String {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let op = match kind {
        Kind::Chase => 'C',
        Kind::Read => 'R',
        Kind::Write => 'W',
    };
    let per = size / 64;
    let accesses = lines.div_ceil(per);
    let slots = (region / size).max(1);
    let mut s = String::with_capacity((lines * 22) as usize);
    for i in 0..accesses {
        let base = if random {
            rng.gen_range(0..slots) * size
        } else {
            (i % slots) * size
        };
        for l in 0..per {
            let _ = writeln!(s, "{op} 0x{:x}", base + l * 64);
        }
    }
    s
}

/// Replay one generated pattern on a fresh controller.
fn run_pattern(p: &Params, text: &str) -> Result<(ReplayReport, DimmStats)> {
    let mut mc: MemoryController = replay::replay_controller(p)?;
    let r = replay::replay(
        text.as_bytes(),
        "<generated pattern>",
        Some(Format::Durasim),
        ReplayConfig::from_params(p),
        &mut mc,
    )?;
    Ok((r, mc.stats.dimm.clone()))
}

/// Run every pattern with `lines` 64 B requests each (pointer chases use a
/// quarter: they are serial).
pub fn validate(p: &Params, lines: u64, seed: u64) -> Result<Validation> {
    let region = REGION_BYTES.min(p.u64("nvm.capacity_bytes"));
    let mut rows = Vec::new();
    let mut k = 0u64;
    let mut push = |rows: &mut Vec<ValidationRow>,
                    kind: Kind,
                    random: bool,
                    size: u64,
                    published: f64,
                    source: &'static str|
     -> Result<()> {
        k += 1;
        let n = if kind == Kind::Chase {
            (lines / 4).max(1)
        } else {
            lines
        };
        let text = pattern_text(kind, random, size, n, region, seed.wrapping_add(k));
        let (r, d) = run_pattern(p, &text)?;
        let order = if random { "rand" } else { "seq" };
        let (op, metric, model) = match kind {
            Kind::Chase => ("read", "idle_read_latency_ns", r.read_latency_mean_ns),
            Kind::Read => ("read", "bandwidth_gb_per_s", r.bandwidth_gb_per_s),
            Kind::Write => ("write", "bandwidth_gb_per_s", r.bandwidth_gb_per_s),
        };
        let name = match kind {
            Kind::Chase => format!("chase-{order}-{size}"),
            _ => format!("{op}-{order}-{size}"),
        };
        rows.push(ValidationRow {
            pattern: name,
            metric,
            op,
            order,
            access_bytes: size,
            model,
            published,
            ratio: model / published,
            source,
            requests: r.requests,
            row_hit_ratio: r.row_hit_ratio,
            ait_cache_misses: d.ait_misses,
            wcb_hits: d.wcb_hits,
            media_block_writes: d.media_block_writes,
            media_rmw: d.media_rmw,
        });
        Ok(())
    };
    push(&mut rows, Kind::Chase, false, 64, LAT_SEQ_NS, SRC_LAT)?;
    push(&mut rows, Kind::Chase, true, 64, LAT_RAND_NS, SRC_LAT)?;
    for (kind, random, table, src) in [
        (Kind::Read, false, &BW_SEQ_READ, SRC_SEQ),
        (Kind::Read, true, &BW_RAND_READ, SRC_RAND),
        (Kind::Write, false, &BW_SEQ_WRITE, SRC_SEQ),
        (Kind::Write, true, &BW_RAND_WRITE, SRC_RAND),
    ] {
        for (i, &size) in SIZES.iter().enumerate() {
            push(&mut rows, kind, random, size, table[i], src)?;
        }
    }
    Ok(Validation {
        lines_per_pattern: lines,
        region_bytes: region,
        seed,
        dimm_model: p.str("dimm.model").to_string(),
        rows,
    })
}

/// The table `device validate` prints.
pub fn render(v: &Validation) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "device validation: dimm.model = {}, {} requests per streaming pattern, random over {} MiB, seed {}",
        v.dimm_model,
        v.lines_per_pattern,
        v.region_bytes >> 20,
        v.seed
    );
    let _ = writeln!(
        s,
        "{:<16} {:>22} {:>10} {:>10} {:>7} {:>9} {:>7}",
        "pattern", "metric", "model", "published", "ratio", "row hits", "RMWs"
    );
    for r in &v.rows {
        let _ = writeln!(
            s,
            "{:<16} {:>22} {:>10.2} {:>10.2} {:>7.2} {:>9.3} {:>7}",
            r.pattern, r.metric, r.model, r.published, r.ratio, r.row_hit_ratio, r.media_rmw
        );
    }
    let _ = writeln!(s, "published values:");
    let mut seen: Vec<&str> = Vec::new();
    for r in &v.rows {
        if !seen.contains(&r.source) {
            seen.push(r.source);
            let _ = writeln!(s, "  {}", r.source);
        }
    }
    let _ = writeln!(
        s,
        "model latency is controller acceptance to data (no core, caches or on-chip path; the same figure puts DRAM at 81.4 / 101.5 ns)"
    );
    s
}
