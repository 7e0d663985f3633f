//! `durasim device validate`: the NVM device alone against published
//! measurements (src/trace/validate.rs).

use super::{build_base_params, check_output_path};
use crate::error::{Error, Result};
use crate::trace::validate;
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum DeviceCommand {
    /// Drive the NVM controller and device alone with pointer-chasing and
    /// streaming patterns (sequential/random, read/write, 64 B - 4 KiB) and
    /// print idle read latency and bandwidth beside published measurements
    /// of a first-generation Optane DIMM (use --config configs/optane.toml).
    Validate(ValidateArgs),
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// TOML preset (e.g. configs/optane.toml).
    #[arg(long)]
    pub config: Option<String>,
    /// Override one parameter: --set section.key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// 64 B requests per streaming pattern (pointer chases: a quarter).
    #[arg(long, default_value_t = 16384, allow_negative_numbers = true)]
    pub lines: u64,
    /// RNG seed of the random patterns.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Print the JSON report (to PATH, or stdout when no PATH is given).
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "PATH")]
    pub json: Option<String>,
}

/// Most 64 B requests a pattern may have (the trace text is built in memory).
const MAX_LINES: u64 = 1 << 24;

pub fn cmd_device(c: DeviceCommand) -> Result<i32> {
    match c {
        DeviceCommand::Validate(a) => cmd_validate(a),
    }
}

fn cmd_validate(a: ValidateArgs) -> Result<i32> {
    if !(64..=MAX_LINES).contains(&a.lines) {
        return Err(Error::input(format!(
            "invalid value '{}' for '--lines': expected 64 to {MAX_LINES} requests per pattern",
            a.lines
        )));
    }
    let p = build_base_params(
        None,
        super::machine_choice(None, a.config.as_deref())?,
        &a.set,
    )?;
    check_output_path("--json", a.json.as_deref())?;
    let v = validate::validate(&p, a.lines, a.seed)?;
    let json = serde_json::to_string_pretty(&v).unwrap();
    match a.json.as_deref() {
        Some("-") => println!("{json}"),
        Some(path) => {
            print!("{}", validate::render(&v));
            std::fs::write(path, json).map_err(|source| Error::Io {
                path: path.to_string(),
                source,
            })?;
        }
        None => print!("{}", validate::render(&v)),
    }
    Ok(0)
}
