//! `durasim compare`: a grid of schemes x workloads, run in parallel across
//! host cores, printed normalized to a baseline scheme.

use super::{machine_choice, spec_on, CommonArgs, MachineChoice};
use crate::engine;
use crate::error::{Error, Result};
use crate::schemes;
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
    /// The run's JSON report (what `run --json` writes), for the CSV's
    /// full set of columns.
    pub report: serde_json::Value,
}

/// The one machine and run length of a grid: `--config` and `--tx` when
/// given; otherwise the machine of the schemes' paper (the baseline's when
/// they come from several papers, with a warning naming the others) and
/// the longest of their default run lengths.
pub struct GridSetup<'a> {
    pub machine: MachineChoice<'a>,
    pub tx: u64,
    /// Why the machine was chosen, when the command line did not name it.
    pub note: Option<String>,
    /// Printed on stderr before the runs.
    pub warnings: Vec<String>,
}

pub fn grid_setup<'a>(
    schemes_: &[String],
    baseline: &str,
    common: &'a CommonArgs,
) -> Result<GridSetup<'a>> {
    let mut infos = Vec::new();
    for s in schemes_ {
        infos.push((s.as_str(), schemes::find(s)?));
    }
    let tx = common.tx.unwrap_or_else(|| {
        infos
            .iter()
            .map(|(_, i)| i.defaults.tx)
            .max()
            .unwrap_or(10_000)
    });
    let mut warnings = Vec::new();
    let (machine, note) = if common.config.is_some() {
        (machine_choice(None, common.config.as_deref())?, None)
    } else {
        // Paper machines in the order the schemes are listed.
        let mut papers: Vec<(&'static schemes::Machine, Vec<&str>)> = Vec::new();
        for (name, info) in &infos {
            if let Some(m) = info.defaults.machine {
                match papers.iter_mut().find(|(pm, _)| std::ptr::eq(*pm, m)) {
                    Some((_, v)) => v.push(name),
                    None => papers.push((m, vec![name])),
                }
            }
        }
        let pick = papers
            .iter()
            .find(|(_, v)| v.contains(&baseline))
            .or(papers.first())
            .map(|(m, _)| *m);
        if papers.len() > 1 {
            let m = pick.expect("several papers");
            let groups: Vec<String> = papers
                .iter()
                .map(|(pm, v)| {
                    format!("{} ({}{}): {}", pm.paper, pm.path, pm.variant, v.join(", "))
                })
                .collect();
            let whose = if papers
                .iter()
                .any(|(pm, v)| std::ptr::eq(*pm, m) && v.contains(&baseline))
            {
                format!("the baseline's, {baseline}'s")
            } else {
                "the first listed scheme's; the baseline has none".to_string()
            };
            warnings.push(format!(
                "warning: these schemes are defined on different machines ({}); every run uses {}{}, the {} paper's machine ({whose}); pass --config to choose another",
                groups.join("; "),
                m.path,
                m.variant,
                m.paper,
            ));
        }
        let machine = pick.map_or(MachineChoice::Bare, MachineChoice::Paper);
        let note = format!(
            "machine: {}; {} threads, {} tx{}",
            machine.describe(),
            common.threads.unwrap_or(machine.threads()),
            tx,
            if common.tx.is_none() {
                " (the longest default run length of these schemes)"
            } else {
                ""
            }
        );
        (machine, Some(note))
    };
    Ok(GridSetup {
        machine,
        tx,
        note,
        warnings,
    })
}

pub fn run_grid(
    schemes: &[String],
    workloads: &[String],
    common: &CommonArgs,
    setup: &GridSetup<'_>,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Cell>> {
    let mut specs = Vec::new();
    for w in workloads {
        for s in schemes {
            specs.push((
                s.clone(),
                w.clone(),
                spec_on(s, w, common, setup.machine, setup.tx)?,
            ));
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
                report: e.report_json(),
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
    let setup = grid_setup(&a.schemes, &baseline, &a.common)?;
    for w in &setup.warnings {
        eprintln!("{w}");
    }
    if let Some(w) = a.workloads.first() {
        for s in &a.schemes {
            let spec = spec_on(s, w, &a.common, setup.machine, setup.tx)?;
            if let Some(msg) = super::hardware_warning(s, &spec.params) {
                eprintln!("{msg}");
            }
        }
    }
    let bar = super::progress_bar((a.schemes.len() * a.workloads.len()) as u64, "compare");
    let cells = run_grid(&a.schemes, &a.workloads, &a.common, &setup, Some(&bar))?;
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
    if let Some(note) = &setup.note {
        println!("{note}");
    }
    println!(
        "throughput normalized to {baseline}; critical-path latency and write bytes/tx normalized to {norm_ref}; energy in uJ"
    );
    // Columns as wide as the longest name (and at least the old 10).
    let ww = a
        .workloads
        .iter()
        .map(|w| w.len())
        .max()
        .unwrap_or(0)
        .max(10);
    let sw = a.schemes.iter().map(|s| s.len()).max().unwrap_or(0).max(10);
    println!(
        "{:<ww$} {:<sw$} {:>12} {:>10} {:>10} {:>10} {:>12} {:>10} {:>10}",
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
                "{:<ww$} {:<sw$} {:>12.2} {:>10} {:>10.1} {:>10} {:>12.1} {:>10} {:>10.3}",
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

/// Flatten a JSON object as the Python sweep does (nested keys joined by
/// dots, under `prefix`).
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        x => out.push((prefix.to_string(), x.clone())),
    }
}

/// The columns a cell adds after the fixed ones, named as the Python
/// sweep's DataFrame names them: the run (`threads`, `tx`, `seed`), every
/// other metric, `stat.<name>` for the scheme's statistics, the device
/// blocks (`nvm_media.*`, `nvm_dimm.*`), `force_write_back.*`, `core.*`,
/// and every parameter whose value differs from its documented default
/// (the machine and the `--set`s, by key).
fn extra_columns(c: &Cell, defaults: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let r = &c.report;
    let mut out = Vec::new();
    for k in ["threads", "tx", "seed"] {
        out.push((k.to_string(), r[k].clone()));
    }
    flatten("", &r["metrics"], &mut out);
    if let Some(m) = r["scheme_stats"].as_object() {
        for (k, v) in m {
            out.push((format!("stat.{k}"), v.clone()));
        }
    }
    for block in ["nvm_media", "nvm_dimm", "force_write_back", "core"] {
        if !r[block].is_null() {
            flatten(block, &r[block], &mut out);
        }
    }
    let mut cfg = Vec::new();
    flatten("", &r["config"], &mut cfg);
    let mut def = Vec::new();
    flatten("", defaults, &mut def);
    for (k, v) in cfg {
        if def.iter().find(|(dk, _)| *dk == k).map(|(_, dv)| dv) != Some(&v) {
            out.push((k, v));
        }
    }
    out
}

fn csv_field(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) if s.contains([',', '"', '\n']) => {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    }
}

/// The grid as CSV, one row per cell: the 24 fixed columns first (their
/// order is stable for scripts), then every other column the Python
/// sweep's DataFrame has ([`extra_columns`]; empty where a cell has no
/// such value).
pub fn csv(cells: &[Cell]) -> String {
    let fixed = format!("workload,scheme,committed_tx,sim_cycles,throughput_tx_per_mcycle,critical_path_cycles_mean,critical_path_cycles_p99,nvm_bytes_written,nvm_bytes_read,write_bytes_per_tx,energy_nj,llc_miss_ratio,{CSV_EXTRA}");
    let fixed_names: Vec<&str> = fixed.split(',').collect();
    let defaults = crate::config::Params::defaults(&schemes::all_params()).to_json();
    let extras: Vec<Vec<(String, serde_json::Value)>> =
        cells.iter().map(|c| extra_columns(c, &defaults)).collect();
    let mut names: Vec<String> = Vec::new();
    for e in &extras {
        for (k, _) in e {
            if !fixed_names.contains(&k.as_str()) && !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    let mut out = fixed.clone();
    for n in &names {
        out.push(',');
        out.push_str(n);
    }
    out.push('\n');
    for (c, e) in cells.iter().zip(&extras) {
        let m = &c.metrics;
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
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
        for n in &names {
            out.push(',');
            out.push_str(&csv_field(e.iter().find(|(k, _)| k == n).map(|(_, v)| v)));
        }
        out.push('\n');
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
