//! `durasim trace replay FILE`: drive the NVM memory controller and device
//! alone from a request trace (src/trace/).

use super::{build_base_params, check_output_path};
use crate::error::{Error, Result};
use crate::trace::replay::{self, replay_controller};
use crate::trace::{self, Format};
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Replay a memory-request trace on the memory controller and device
    /// alone (no cores, caches or scheme) and print its timing.
    Replay(ReplayArgs),
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Trace file (plain, gzip or xz).
    pub file: String,
    /// auto | durasim | dramsim3 | ramulator2 | vans | nvmain
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// TOML preset (e.g. configs/hoop.toml).
    #[arg(long)]
    pub config: Option<String>,
    /// Override one parameter: --set section.key=value (repeatable), e.g.
    /// --set trace.cycle_ns=2 for a DRAMsim3 trace at tCK 2 ns.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the JSON report (to PATH, or stdout when no PATH is given).
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "PATH")]
    pub json: Option<String>,
}

pub fn cmd_trace(c: TraceCommand) -> Result<i32> {
    match c {
        TraceCommand::Replay(a) => cmd_replay(a),
    }
}

fn cmd_replay(a: ReplayArgs) -> Result<i32> {
    let fmt = Format::parse(&a.format, "--format", true)?;
    let p = build_base_params(
        None,
        super::machine_choice(None, a.config.as_deref())?,
        &a.set,
    )?;
    check_output_path("--json", a.json.as_deref())?;
    let mut mc = replay_controller(&p)?;
    let input = trace::open_input(&a.file)?;
    let r = replay::replay(
        input,
        &a.file,
        fmt,
        replay::ReplayConfig::from_params(&p),
        &mut mc,
    )?;
    let json = serde_json::to_string_pretty(&r).unwrap();
    match a.json.as_deref() {
        Some("-") => println!("{json}"),
        Some(path) => {
            print_report(&a.file, &r);
            std::fs::write(path, json).map_err(|source| Error::Io {
                path: path.to_string(),
                source,
            })?;
        }
        None => print_report(&a.file, &r),
    }
    Ok(0)
}

fn print_report(file: &str, r: &replay::ReplayReport) {
    println!("trace {file} ({} format)", r.format);
    println!(
        "  requests completed         {} ({} reads, {} writes; {} dependent reads, {} tx markers)",
        r.requests, r.reads, r.writes, r.dependent_reads, r.tx_markers
    );
    println!(
        "  simulated time             {:.1} ns ({} cycles)",
        r.sim_ns, r.sim_cycles
    );
    println!(
        "  read latency (accept→data) mean {:.1} ns, p50 {:.1} ns, p99 {:.1} ns",
        r.read_latency_mean_ns, r.read_latency_p50_ns, r.read_latency_p99_ns
    );
    println!(
        "  read latency (offer→data)  mean {:.1} ns",
        r.read_latency_from_offer_mean_ns
    );
    println!(
        "  bandwidth                  {:.2} GB/s",
        r.bandwidth_gb_per_s
    );
    println!("  row-hit ratio              {:.4}", r.row_hit_ratio);
    println!("  energy                     {:.1} nJ", r.energy_nj);
    println!(
        "  device writes              {} ({} merged, {} reads forwarded; queue-full stalls: {} read, {} write)",
        r.device_writes,
        r.writes_merged,
        r.forwarded_reads,
        r.read_queue_full_stalls,
        r.write_queue_full_stalls
    );
    println!(
        "  host                       {:.3} s wall, {:.3} s CPU, {:.2} M requests/host s, {:.2} M requests/CPU s, max RSS {:.1} MiB",
        r.host_seconds,
        r.host_cpu_seconds,
        r.requests_per_host_second / 1e6,
        r.requests_per_cpu_second / 1e6,
        r.max_rss_mib
    );
}
