//! `durasim compare`: a grid of schemes x workloads, run in parallel across
//! host cores, printed normalized to a baseline scheme.

use super::{spec_for, CommonArgs};
use crate::engine;
use crate::error::{Error, Result};
use crate::stats::Metrics;
use clap::Args;
use indicatif::ProgressBar;
use rayon::prelude::*;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Comma-separated scheme names.
    #[arg(long, value_delimiter = ',')]
    pub schemes: Vec<String>,
    /// Comma-separated workload names.
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Scheme to normalize throughput to (default: the first scheme).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Save the raw grid as CSV.
    #[arg(long)]
    pub csv: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub struct Cell {
    pub scheme: String,
    pub workload: String,
    pub metrics: Metrics,
}

pub fn run_grid(
    schemes: &[String],
    workloads: &[String],
    common: &CommonArgs,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Cell>> {
    let mut specs = Vec::new();
    for w in workloads {
        for s in schemes {
            specs.push((s.clone(), w.clone(), spec_for(s, w, common)?));
        }
    }
    specs
        .into_par_iter()
        .map(|(s, w, spec)| {
            let e = engine::run(spec, &mut |_| {})?;
            if let Some(b) = bar {
                b.inc(1);
            }
            Ok(Cell {
                scheme: s,
                workload: w,
                metrics: e.metrics(),
            })
        })
        .collect()
}

pub fn cmd_compare(a: CompareArgs) -> Result<i32> {
    if a.schemes.is_empty() || a.workloads.is_empty() {
        return Err(Error::input(
            "compare needs --schemes A,B,.. and --workloads X,Y,..",
        ));
    }
    for (flag, names) in [("--schemes", &a.schemes), ("--workloads", &a.workloads)] {
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(Error::input(format!(
                    "invalid value '{}' for '{flag}': '{n}' is listed twice; expected distinct names",
                    names.join(",")
                )));
            }
        }
    }
    super::check_output_path("--csv", a.csv.as_deref())?;
    let baseline = a.baseline.clone().unwrap_or_else(|| a.schemes[0].clone());
    if !a.schemes.contains(&baseline) {
        return Err(Error::input(format!(
            "invalid --baseline '{baseline}': valid choices are the compared schemes: {}",
            a.schemes.join(", ")
        )));
    }
    let bar = super::progress_bar((a.schemes.len() * a.workloads.len()) as u64, "compare");
    let cells = run_grid(&a.schemes, &a.workloads, &a.common, Some(&bar))?;
    bar.finish_and_clear();
    let get = |s: &str, w: &str| {
        cells
            .iter()
            .find(|c| c.scheme == s && c.workload == w)
            .map(|c| &c.metrics)
    };
    let has_ideal = a.schemes.iter().any(|s| s == "ideal");
    let norm_ref = if has_ideal {
        "ideal"
    } else {
        baseline.as_str()
    };
    println!(
        "throughput normalized to {baseline}; critical-path latency and write bytes/tx normalized to {norm_ref}; energy in uJ"
    );
    println!(
        "{:<10} {:<10} {:>12} {:>10} {:>10} {:>10} {:>12} {:>10} {:>10}",
        "workload",
        "scheme",
        "tx/Mcycle",
        "norm_tput",
        "crit_lat",
        "norm_lat",
        "write_B/tx",
        "norm_wr",
        "energy_uJ"
    );
    for w in &a.workloads {
        let base = get(&baseline, w).unwrap();
        let r = get(norm_ref, w).unwrap();
        for s in &a.schemes {
            let m = get(s, w).unwrap();
            println!(
                "{:<10} {:<10} {:>12.2} {:>10} {:>10.1} {:>10} {:>12.1} {:>10} {:>10.3}",
                w,
                s,
                m.throughput_tx_per_mcycle,
                ratio(m.throughput_tx_per_mcycle, base.throughput_tx_per_mcycle),
                m.critical_path_cycles_mean,
                ratio(m.critical_path_cycles_mean, r.critical_path_cycles_mean),
                m.write_bytes_per_tx,
                ratio(m.write_bytes_per_tx, r.write_bytes_per_tx),
                m.energy_nj / 1000.0
            );
        }
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, csv(&cells)).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
    }
    Ok(0)
}

/// Columns of `compare --csv` after the first twelve (which keep their
/// order): the paper-definition and workload-characterisation metrics
/// (docs/model/metrics.md).
const CSV_EXTRA: &str = "llc_misses_per_mem_op,llc_misses_per_write_back,pm_write_overhead_ops,pm_write_overhead_bytes,log_bits_written_no_expansion,footprint_bytes,program_stores_per_tx,words_per_written_line,repeated_store_share,silent_store_share,written_line_compression_ratio_fpc,written_line_compression_ratio_dldc";

/// The grid as CSV, one row per cell.
pub fn csv(cells: &[Cell]) -> String {
    let mut out = format!("workload,scheme,committed_tx,sim_cycles,throughput_tx_per_mcycle,critical_path_cycles_mean,critical_path_cycles_p99,nvm_bytes_written,nvm_bytes_read,write_bytes_per_tx,energy_nj,llc_miss_ratio,{CSV_EXTRA}\n");
    for c in cells {
        let m = &c.metrics;
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            c.workload,
            c.scheme,
            m.committed_tx,
            m.sim_cycles,
            m.throughput_tx_per_mcycle,
            m.critical_path_cycles_mean,
            m.critical_path_cycles_p99,
            m.nvm_bytes_written,
            m.nvm_bytes_read,
            m.write_bytes_per_tx,
            m.energy_nj,
            m.llc_miss_ratio,
            m.llc_misses_per_mem_op,
            m.llc_misses_per_write_back,
            m.pm_write_overhead_ops,
            m.pm_write_overhead_bytes,
            m.log_bits_written_no_expansion,
            m.footprint_bytes,
            m.program_stores_per_tx,
            m.words_per_written_line,
            m.repeated_store_share,
            m.silent_store_share,
            m.written_line_compression_ratio_fpc,
            m.written_line_compression_ratio_dldc,
        ));
    }
    out
}

/// `a / b` with three decimals, or "n/a" when the reference is zero (e.g. a
/// native run whose data never left the caches wrote no bytes).
fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.3}", a / b)
    } else {
        "n/a".to_string()
    }
}
