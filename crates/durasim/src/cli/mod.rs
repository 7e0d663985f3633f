//! The `durasim` command line: `run`, `compare`, `list`.

pub mod compare;
pub mod crashtest;
pub mod device;
pub mod trace;

use crate::config::Params;
use crate::engine::{self, RunSpec};
use crate::error::{Error, Result};
use crate::{schemes, workloads};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "durasim",
    version,
    about = "Crash-verified simulator of persistent-memory crash-consistency schemes"
)]
pub struct Cli {
    /// No progress bars (they are drawn only when stderr is a terminal).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Set by `--quiet`: no progress bars anywhere.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A progress bar with counts and ETA on stderr; hidden under `--quiet` and
/// when stderr is not a terminal (indicatif's stderr target checks that).
pub fn progress_bar(total: u64, label: &str) -> ProgressBar {
    if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total);
    b.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({elapsed}, ETA {eta})")
            .unwrap()
            .progress_chars("=> "),
    );
    b.set_message(label.to_string());
    b
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one scheme on one workload and print its metrics.
    Run(RunArgs),
    /// Run a grid of schemes x workloads (in parallel) and print a table.
    Compare(compare::CompareArgs),
    /// Crash a run at its persist points, recover, and check the
    /// atomic-durability oracle (exit 1 on any violation).
    Crashtest(crashtest::CrashtestArgs),
    /// Memory-request traces: `trace replay FILE` (src/trace/).
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// The NVM device alone: `device validate` against published
    /// measurements (src/trace/validate.rs).
    #[command(subcommand)]
    Device(device::DeviceCommand),
    /// List schemes, workloads or parameters.
    List {
        /// schemes | workloads | params
        what: String,
    },
}

/// Options shared by every command that runs simulations.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// TOML preset (e.g. configs/dpc.toml). Without it a run is on its
    /// scheme's paper machine (`durasim list schemes`, embedded in the
    /// binary); `--config default` is the bare default machine (every
    /// parameter at its documented default).
    #[arg(long)]
    pub config: Option<String>,
    /// Override one parameter: --set section.key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Simulated cores = workload threads [default: the paper machine's
    /// thread count; 8 with --config]
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// Total transactions, split evenly over threads [default: the
    /// scheme's run length, long enough for its background mechanism to
    /// run several times (`durasim list schemes`)]
    #[arg(long, allow_negative_numbers = true)]
    pub tx: Option<u64>,
    /// RNG seed.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
}

/// Threads when neither `--threads` nor a paper machine gives them.
pub const DEFAULT_THREADS: usize = 8;

/// The `--config` value that names the bare default machine.
pub const BARE_CONFIG: &str = "default";

/// Where a run's machine comes from.
#[derive(Clone, Copy, Debug)]
pub enum MachineChoice<'a> {
    /// `--config default`: every parameter at its documented default.
    Bare,
    /// `--config PATH`.
    File(&'a str),
    /// No `--config`: the embedded preset of a paper's machine.
    Paper(&'static schemes::Machine),
}

impl MachineChoice<'_> {
    /// The machine's thread count (the paper's), or [`DEFAULT_THREADS`].
    pub fn threads(&self) -> usize {
        match self {
            MachineChoice::Paper(m) => m.threads,
            _ => DEFAULT_THREADS,
        }
    }
    /// How the machine is named in messages.
    pub fn describe(&self) -> String {
        match self {
            MachineChoice::Bare => "the bare default machine (--config default)".to_string(),
            MachineChoice::File(p) => p.to_string(),
            MachineChoice::Paper(m) => {
                format!("{}{} (the {} paper's machine)", m.path, m.variant, m.paper)
            }
        }
    }
}

/// The machine `scheme` runs on under `--config` (`None`: its paper's).
pub fn machine_choice<'a>(
    scheme: Option<&str>,
    config: Option<&'a str>,
) -> Result<MachineChoice<'a>> {
    Ok(match config {
        Some(BARE_CONFIG) => MachineChoice::Bare,
        Some(path) => MachineChoice::File(path),
        None => match scheme {
            Some(s) => schemes::find(s)?
                .defaults
                .machine
                .map_or(MachineChoice::Bare, MachineChoice::Paper),
            None => MachineChoice::Bare,
        },
    })
}

/// The warning for a scheme run without the hardware its mechanism needs
/// (a DRAM cache, an Optane-like DIMM), if any.
pub fn hardware_warning(scheme: &str, p: &Params) -> Option<String> {
    let info = schemes::find(scheme).ok()?;
    let msg = info.defaults.needs.and_then(|f| f(p))?;
    Some(format!("warning: {scheme} {msg}"))
}

/// Warnings about a finished run too short for its scheme's mechanism: a
/// checkpointing scheme that took no checkpoint, or a measured window
/// shorter than one period of a periodic mechanism (the scheme's
/// `*period_ms`, `*period_us`, `*period_cycles` parameters, and
/// `checkpoint.epoch_cycles` for whole-system checkpointing). The results
/// of such a run measure none of that mechanism; the advice names the
/// scheme's default run length (`durasim list schemes`).
pub fn run_length_warnings(scheme: &str, e: &engine::Engine) -> Vec<String> {
    let Ok(info) = schemes::find(scheme) else {
        return Vec::new();
    };
    let p = &e.params;
    let window = e.metrics().sim_cycles;
    let d = &info.defaults;
    let advice = format!(
        "run longer (its default, --tx {}, reaches: {})",
        d.tx, d.reaches
    );
    let checkpointing = info.durability == crate::recovery::Durability::Checkpoint;
    let mut out = Vec::new();
    if checkpointing {
        let taken = e
            .scheme
            .stats()
            .into_iter()
            .find(|(k, _)| *k == "checkpoints")
            .map(|(_, v)| v);
        if taken == Some(0.0) {
            out.push(format!(
                "warning: {scheme} took no checkpoint in this run (measured window {window} cycles, checkpoint.epoch_cycles = {}): the results measure no checkpointing; {advice}, or lower checkpoint.epoch_cycles",
                p.u64("checkpoint.epoch_cycles")
            ));
            return out;
        }
    }
    let freq = p.f64("cpu.freq_ghz");
    let mut keys: Vec<&str> = info.params.iter().map(|s| s.key).collect();
    if checkpointing && !keys.contains(&"checkpoint.epoch_cycles") {
        keys.push("checkpoint.epoch_cycles");
    }
    for key in keys {
        let cycles = if key.ends_with("period_cycles") || key.ends_with("epoch_cycles") {
            p.u64(key)
        } else if key.ends_with("period_ms") {
            crate::config::ns_to_cycles(p.f64(key) * 1e6, freq)
        } else if key.ends_with("period_us") {
            crate::config::ns_to_cycles(p.f64(key) * 1e3, freq)
        } else {
            continue;
        };
        // 0 turns a periodic mechanism off: nothing to reach.
        if cycles > 0 && window < cycles {
            out.push(format!(
                "warning: {scheme}'s measured window ({window} cycles) is shorter than one period of {key} ({cycles} cycles): the results may include none of that mechanism; {advice}, or lower {key}"
            ));
        }
    }
    out
}

/// Put `warnings` (as printed on stderr) into a run's JSON report as its
/// `warnings` list, each without the `warning: ` prefix; an empty list
/// when the run drew none.
pub fn add_warnings(report: &mut serde_json::Value, warnings: &[String]) {
    if let Some(o) = report.as_object_mut() {
        let list: Vec<&str> = warnings
            .iter()
            .map(|w| w.strip_prefix("warning: ").unwrap_or(w))
            .collect();
        o.insert("warnings".into(), serde_json::json!(list));
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[arg(long)]
    pub scheme: String,
    #[arg(long)]
    pub workload: String,
    #[command(flatten)]
    pub common: CommonArgs,
    /// Write the JSON report to PATH ('-' for stdout).
    #[arg(long)]
    pub json: Option<String>,
    /// Write the request stream the run sends to the NVM controller to
    /// FILE (`.gz`/`.xz`: compressed), for `trace replay` or the peers.
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<String>,
    /// Format of --trace-out: durasim (purposes, values, TxBegin/TxEnd;
    /// the default), dramsim3, ramulator2, vans, nvmain.
    #[arg(long, value_name = "FORMAT")]
    pub trace_format: Option<String>,
    /// Generate the workload's op streams on a second host thread: auto
    /// (when a host CPU is spare for it), on, off. Host speed only: every
    /// simulated result is the same bit for bit.
    #[arg(long, value_enum, default_value_t = engine::GenThread::Auto)]
    pub gen_thread: engine::GenThread,
}

/// Build the parameter set for a scheme from defaults, preset, overrides.
pub fn build_params(scheme: &str, common: &CommonArgs) -> Result<Params> {
    schemes::find(scheme)?;
    let machine = machine_choice(Some(scheme), common.config.as_deref())?;
    build_base_params(Some(scheme), machine, &common.set)
}

/// Parameters from defaults, a machine (a preset) and `--set` overrides,
/// for any scheme (`trace replay` has none).
pub fn build_base_params(
    scheme: Option<&str>,
    machine: MachineChoice<'_>,
    set: &[String],
) -> Result<Params> {
    let mut p = Params::defaults(&schemes::all_params());
    match machine {
        MachineChoice::Bare => {}
        MachineChoice::File(path) => {
            let text = crate::config::read_config(path)?;
            p.apply_toml(&text, path)?;
        }
        MachineChoice::Paper(m) => {
            p.apply_toml(m.toml, m.path)?;
            for (k, v) in m.set {
                p.set_str(k, v)?;
            }
        }
    }
    // A preset's settings win over --config (a paper preset may name the
    // encoding another way); a contradicting --set is an error.
    if let Some(scheme) = scheme {
        schemes::apply_preset(scheme, &mut p)?;
    }
    for kv in set {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            Error::input(format!(
                "invalid --set '{kv}': expected KEY=VALUE, e.g. --set hoop.gc_period_ms=2"
            ))
        })?;
        if let Some(scheme) = scheme {
            schemes::check_preset_override(scheme, k.trim(), v, &p)?;
        }
        p.set_str(k.trim(), v)?;
    }
    // Planted bugs are for the mutant suite only (tests/mutants.rs).
    if let Some((k, v)) = p
        .overrides()
        .into_iter()
        .find(|(k, _)| k.ends_with(".mutant"))
    {
        return Err(Error::input(format!(
            "invalid value '{v}' for '{k}': a test-only mutant (the oracle's mutant suite, tests/mutants.rs); the command line accepts only 'none'"
        )));
    }
    Ok(p)
}

/// Check before any work that an output file (`--json`, `--csv`) can be
/// written: a bad path is an exit-2 input error, not a failure after the
/// whole run. `-` (stdout) is always fine. A file this check creates is
/// removed again (the run writes it at the end).
pub fn check_output_path(flag: &str, path: Option<&str>) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    if path == "-" {
        return Ok(());
    }
    let p = std::path::Path::new(path);
    if p.is_dir() {
        return Err(Error::input(format!(
            "invalid value '{path}' for '{flag}': is a directory; expected a file path (or '-' for stdout)"
        )));
    }
    if let Some(why) = unwritable_special(p) {
        return Err(Error::input(format!(
            "invalid value '{path}' for '{flag}': {why}; expected a regular file path (or '-' for stdout)"
        )));
    }
    let existed = p.exists();
    match std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
    {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(p);
            }
            Ok(())
        }
        Err(e) => Err(Error::input(format!(
            "invalid value '{path}' for '{flag}': cannot write it ({e}); expected a writable file path (or '-' for stdout)"
        ))),
    }
}

/// Why an existing special file cannot take a report, found before the
/// run (opening such files for writing succeeds; the writes fail, after
/// the work): a device other than /dev/null or a terminal (/dev/full,
/// /dev/zero, a disk), or a file of a kernel pseudo-filesystem (/proc,
/// /sys). Pipes and /dev/stdout stay allowed.
fn unwritable_special(p: &std::path::Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::io::IsTerminal;
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let m = std::fs::metadata(p).ok()?;
        let t = m.file_type();
        if t.is_block_device() {
            return Some("is a block device".into());
        }
        // /dev/null is character device 1:3.
        let dev_null = m.rdev() == libc::makedev(1, 3);
        if t.is_char_device() && !dev_null {
            let tty = std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .is_ok_and(|f| f.is_terminal());
            if !tty {
                return Some("is a device that does not store files".into());
            }
        }
        if t.is_file() {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok()?;
            // SAFETY: statfs only writes the struct it is given.
            let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statfs(c.as_ptr(), &mut fs) } == 0 {
                const PROC_SUPER_MAGIC: i64 = 0x9fa0;
                const SYSFS_MAGIC: i64 = 0x6265_6572;
                #[allow(clippy::unnecessary_cast)]
                let kind = fs.f_type as i64;
                if kind == PROC_SUPER_MAGIC || kind == SYSFS_MAGIC {
                    return Some(
                        "is a kernel file (/proc or /sys), not a file to write a report to".into(),
                    );
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = p;
    None
}

/// An unknown scheme or workload name: the error names the valid choices
/// and the closest ones ("did you mean").
pub fn check_names(scheme: &str, workload: &str) -> Result<()> {
    for (field, name, valid) in [
        ("scheme", scheme, schemes::names()),
        ("workload", workload, workloads::names()),
    ] {
        if !valid.contains(&name) {
            return Err(Error::input(format!(
                "unknown {field} '{name}'{}; valid {field}s: {}",
                crate::config::did_you_mean(name, &valid),
                valid.join(", ")
            )));
        }
    }
    Ok(())
}

pub fn spec_for(scheme: &str, workload: &str, common: &CommonArgs) -> Result<RunSpec> {
    check_names(scheme, workload)?;
    let machine = machine_choice(Some(scheme), common.config.as_deref())?;
    let tx = common.tx.unwrap_or(schemes::find(scheme)?.defaults.tx);
    spec_on(scheme, workload, common, machine, tx)
}

/// The run of `scheme` on `workload` on `machine` with `tx` transactions
/// (`compare` puts every scheme of its grid on one machine and length).
pub fn spec_on(
    scheme: &str,
    workload: &str,
    common: &CommonArgs,
    machine: MachineChoice<'_>,
    tx: u64,
) -> Result<RunSpec> {
    check_names(scheme, workload)?;
    let mut spec = RunSpec::new(scheme, workload)?;
    spec.params = build_base_params(Some(scheme), machine, &common.set)?;
    spec.threads = common.threads.unwrap_or(machine.threads());
    spec.tx = tx;
    spec.seed = common.seed;
    Ok(spec)
}

/// A progress bar that appears only once a run has taken over a second.
pub struct LazyProgress {
    start: Instant,
    total: u64,
    bar: Option<ProgressBar>,
    label: String,
}

impl LazyProgress {
    pub fn new(total: u64, label: impl Into<String>) -> Self {
        LazyProgress {
            start: Instant::now(),
            total,
            bar: None,
            label: label.into(),
        }
    }
    pub fn set_total(&mut self, total: u64) {
        self.total = total;
        if let Some(b) = &self.bar {
            b.set_length(total);
        }
    }

    pub fn update(&mut self, done: u64) {
        if self.bar.is_none() && self.start.elapsed() > Duration::from_secs(1) {
            self.bar = Some(progress_bar(self.total, &self.label));
        }
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

pub fn main_with(cli: Cli) -> Result<i32> {
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Compare(a) => compare::cmd_compare(a),
        Command::Crashtest(a) => crashtest::cmd_crashtest(a),
        Command::Trace(c) => trace::cmd_trace(c),
        Command::Device(c) => device::cmd_device(c),
        Command::List { what } => cmd_list(&what),
    }
}

fn cmd_run(a: RunArgs) -> Result<i32> {
    let mut spec = spec_for(&a.scheme, &a.workload, &a.common)?;
    let mut warnings: Vec<String> = hardware_warning(&a.scheme, &spec.params)
        .into_iter()
        .collect();
    for w in &warnings {
        eprintln!("{w}");
    }
    spec.gen_thread = a.gen_thread;
    check_output_path("--json", a.json.as_deref())?;
    if a.trace_out.is_none() {
        if let Some(f) = &a.trace_format {
            return Err(Error::input(format!(
                "invalid use of '--trace-format {f}': it sets the format of --trace-out, which is not given; add --trace-out FILE"
            )));
        }
    }
    let trace_format = a.trace_format.as_deref().unwrap_or("durasim");
    if let Some(path) = a.trace_out.as_deref() {
        crate::trace::check_trace_out_name(path)?;
        check_output_path("--trace-out", Some(path))?;
    }
    let tap: Option<Box<dyn crate::mem::RequestTap>> = match a.trace_out.as_deref() {
        None => None,
        Some(path) => {
            let fmt = crate::trace::Format::parse(trace_format, "--trace-format", false)?
                .expect("no auto");
            let unit = crate::trace::TimeUnit::new(
                spec.params.f64("trace.cycle_ns"),
                spec.params.f64("cpu.freq_ghz"),
            );
            let w = crate::trace::TraceWriter::create(path, fmt, unit)?;
            Some(Box::new(crate::trace::Recorder::new(w)))
        }
    };
    let mut bar = LazyProgress::new(spec.tx, format!("{}/{}", a.scheme, a.workload));
    let mut e = engine::run_tapped(spec, tap, &mut |d| bar.update(d))?;
    bar.finish();
    for w in run_length_warnings(&a.scheme, &e) {
        eprintln!("{w}");
        warnings.push(w);
    }
    if let (Some(path), Some(tap)) = (a.trace_out.as_deref(), e.ctx.nvm.request_tap.take()) {
        let n = tap.finish()?;
        eprintln!("trace: {n} requests written to {path} ({trace_format})");
    }
    let mut report = e.report_json();
    add_warnings(&mut report, &warnings);
    match a.json.as_deref() {
        Some("-") => println!("{}", serde_json::to_string_pretty(&report).unwrap()),
        Some(path) => {
            // The summary first: a report that cannot be written (the path
            // was checked before the run) does not lose the run's results.
            print_summary(&e);
            std::fs::write(path, serde_json::to_string_pretty(&report).unwrap()).map_err(
                |source| Error::Io {
                    path: path.to_string(),
                    source,
                },
            )?;
        }
        None => print_summary(&e),
    }
    Ok(0)
}

fn print_summary(e: &engine::Engine) {
    let m = e.metrics();
    let s = e.sim_info();
    println!(
        "scheme {} on {} ({} threads, seed {})",
        e.spec.scheme, e.spec.workload, e.spec.threads, e.spec.seed
    );
    println!("  committed transactions     {}", m.committed_tx);
    println!("  simulated cycles           {}", m.sim_cycles);
    println!(
        "  throughput                 {:.2} tx/Mcycle ({:.0} tx/s)",
        m.throughput_tx_per_mcycle, m.throughput_tx_per_sec
    );
    println!(
        "  critical path (cycles)     mean {:.1}, p50 {}, p99 {}",
        m.critical_path_cycles_mean, m.critical_path_cycles_p50, m.critical_path_cycles_p99
    );
    println!(
        "  NVM written                {} B ({:.1} B/tx)",
        m.nvm_bytes_written, m.write_bytes_per_tx
    );
    for (p, b) in &m.nvm_bytes_written_by_purpose {
        if *b > 0 {
            println!("    {p:<24} {b} B");
        }
    }
    println!("  NVM read                   {} B", m.nvm_bytes_read);
    println!("  NVM energy                 {:.1} nJ", m.energy_nj);
    println!("  LLC miss ratio             {:.4}", m.llc_miss_ratio);
    // Workload characteristics (docs/guide/workloads.md "Programs without transactions").
    println!(
        "  footprint                  {:.1} MiB",
        m.footprint_bytes as f64 / (1u64 << 20) as f64
    );
    println!(
        "  read/write ratio           {:.2} (loads per store)",
        m.read_write_ratio
    );
    if m.dram_cache_page_fills > 0 || m.dram_cache_hit_ratio > 0.0 {
        println!(
            "  DRAM cache miss rate       {:.4} ({:.2} reads per write-back)",
            m.dram_cache_miss_ratio, m.memory_read_write_ratio
        );
    }
    if e.fwb.passes_total > 0 {
        println!(
            "  force write-back           {} passes, {} lines written back, {} flagged",
            e.fwb.passes, e.fwb.lines_written, e.fwb.lines_flagged
        );
    }
    let ss = e.scheme.stats();
    if !ss.is_empty() {
        println!("  scheme statistics:");
        for (k, v) in ss {
            println!("    {k:<36} {v}");
        }
    }
    println!(
        "  sim: {:.2} host s, {} memory ops, {:.2} M ops/host s, peak RSS {:.0} MiB{}",
        s.host_seconds,
        s.sim_mem_ops,
        s.mem_ops_per_host_second / 1e6,
        s.peak_rss_mib,
        if s.gen_thread {
            " (op streams generated on a second host thread)"
        } else {
            ""
        }
    );
}

fn cmd_list(what: &str) -> Result<i32> {
    match what {
        "schemes" => {
            // One line per scheme (scripts take the first word): what it
            // is, then the machine and run length it has by default.
            let w = schemes::names()
                .iter()
                .map(|n| n.len())
                .max()
                .unwrap_or(12)
                .max(12);
            for s in schemes::REGISTRY {
                let d = &s.defaults;
                let machine = d.machine.map_or_else(
                    || format!("bare default machine, {DEFAULT_THREADS} threads"),
                    |m| {
                        format!(
                            "{}{} ({} paper), {} threads",
                            m.path, m.variant, m.paper, m.threads
                        )
                    },
                );
                println!(
                    "{:<w$} {} [default: {machine}; --tx {}: {}]",
                    s.name, s.description, d.tx, d.reaches
                );
            }
            for p in schemes::presets() {
                let set: Vec<String> = p.set.iter().map(|(k, v)| format!("{k}={v}")).collect();
                println!(
                    "{:<w$} preset: {} + {} — {}",
                    p.name,
                    p.scheme,
                    set.join(", "),
                    p.description
                );
            }
        }
        "workloads" => {
            for w in workloads::REGISTRY {
                println!("{:<12} {}", w.name, w.description);
            }
            // Where the programs' characteristics are measured.
            println!(
                "\nprograms without transactions ({}): sized per thread by workload.footprint_bytes; \
                 `durasim run --workload W --scheme ideal --config configs/dpc.toml --threads 4 --set run.transactions=false` \
                 prints their footprint, read/write ratio and DRAM-cache miss rate (docs/guide/workloads.md \"Programs without transactions\": measured values beside the paper's Table 5)",
                workloads::PROGRAMS.join(", ")
            );
        }
        "params" => {
            let p = Params::defaults(&schemes::all_params());
            println!(
                "{:<34} {:>14} {:<12} source / description",
                "key", "default", "unit"
            );
            for s in p.specs().filter(|s| schemes::is_public_param(s.key)) {
                println!(
                    "{:<34} {:>14} {:<12} {} — {}",
                    s.key,
                    s.default.value().to_string(),
                    s.unit,
                    s.source,
                    s.doc
                );
            }
        }
        other => {
            let valid = ["schemes", "workloads", "params"];
            return Err(Error::input(format!(
                "unknown list '{other}'{}; valid choices: schemes, workloads, params",
                crate::config::did_you_mean(other, &valid)
            )));
        }
    }
    Ok(0)
}
