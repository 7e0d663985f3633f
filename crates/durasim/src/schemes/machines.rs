//! The papers' machines, and what a scheme runs on when the user names none.
//!
//! Each scheme's registry entry names the machine of the paper that
//! defines it ([`RunDefaults::machine`]): `durasim run --scheme dpc` runs on
//! `configs/dpc.toml` (its DRAM cache, its PCM) without `--config`. The
//! presets are embedded in the binary so this works from any directory;
//! `--config default` (Python: `config="default"`) is the bare default
//! machine (the parameters' documented defaults, which are HOOP's Table II).

use crate::config::Params;

/// One paper's machine: the TOML preset its evaluation defines.
pub struct Machine {
    /// The paper, as `durasim-lab reproduce` names it.
    pub paper: &'static str,
    /// Where the preset lives in a checkout (what warnings and reports cite).
    pub path: &'static str,
    /// The preset's text, embedded at build time.
    pub toml: &'static str,
    /// Threads the paper runs its workloads with (its core count).
    pub threads: usize,
    /// Settings applied over the preset for this use of it (what the
    /// paper changes for some of its schemes), and how they are named.
    pub set: &'static [(&'static str, &'static str)],
    pub variant: &'static str,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.path)
    }
}

/// One paper's machine as its preset states it: `configs/<paper>.toml`,
/// embedded, with the paper's thread count and nothing changed over it.
macro_rules! paper_machine {
    ($(#[$doc:meta])* $name:ident, $paper:literal, $threads:literal) => {
        $(#[$doc])*
        pub static $name: Machine = Machine {
            paper: $paper,
            path: concat!("configs/", $paper, ".toml"),
            toml: include_str!(concat!("../../../../configs/", $paper, ".toml")),
            threads: $threads,
            set: &[],
            variant: "",
        };
    };
}

paper_machine!(
    /// HOOP (ISCA 2020) Table II: every value equals a default, so this is
    /// also the bare machine; 8 threads (§IV-A).
    HOOP, "hoop", 8
);
paper_machine!(
    /// Dual-page checkpointing §5.1: quad core, 256 MB DRAM cache before PCM.
    DPC, "dpc", 4
);
paper_machine!(
    /// MorLog (ISCA 2020) Table III: 8 in-order cores, TLC RRAM; 8 threads
    /// for the micro-benchmarks (§VI-A).
    MORLOG, "morlog", 8
);
paper_machine!(
    /// EHOU Table I: 4 cores on an Optane-like DIMM; 4 threads (§IV-A).
    EHOU, "ehou", 4
);

/// Dual-page checkpointing §5.1.2: the software schemes (NVML, DudeTM)
/// need DRAM and NVM both directly addressable, so they run on the same
/// machine without the DRAM cache (with it, their flushes would stop in
/// the volatile DRAM cache and they would not be crash-consistent).
pub static DPC_DIRECT: Machine = Machine {
    set: &[("hybrid.dram_cache_bytes", "0")],
    variant: " without its DRAM cache",
    ..DPC
};

/// Every paper preset file.
pub static MACHINES: &[&Machine] = &[&HOOP, &DPC, &MORLOG, &EHOU];

/// What a scheme's run starts from when the command line names no
/// machine (`--config`) and no length (`--tx`).
#[derive(Clone, Copy)]
pub struct RunDefaults {
    /// The machine of the paper that defines the scheme (`None`: the bare
    /// default machine).
    pub machine: Option<&'static Machine>,
    /// Transactions in a run without `--tx`: long enough that the scheme's
    /// background mechanism (GC, checkpoints, epochs, force-write-back,
    /// group commit) runs several times.
    pub tx: u64,
    /// What that length reaches, as measured on btree on the machine
    /// (`durasim list schemes` prints it).
    pub reaches: &'static str,
    /// The hardware the scheme's mechanism needs: a warning when `Params`
    /// lack it (the scheme still runs, but measures nothing of its design).
    pub needs: Option<fn(&Params) -> Option<String>>,
}

impl RunDefaults {
    /// Test-only and example entries: the bare machine, the old length.
    pub const BARE: RunDefaults = RunDefaults {
        machine: None,
        tx: 10_000,
        reaches: "no background mechanism",
        needs: None,
    };
}

/// The DRAM cache of the checkpointing schemes' hybrid memory.
pub fn needs_dram_cache(p: &Params) -> Option<String> {
    (p.u64("hybrid.dram_cache_bytes") == 0).then(|| {
        "checkpoints the pages of a DRAM cache in front of NVM, and this machine has none \
         (hybrid.dram_cache_bytes = 0): nothing is checkpointed and the run measures no \
         checkpointing; use its paper's machine (no --config, or --config configs/dpc.toml)"
            .to_string()
    })
}

/// Software logging flushes lines to the persistence domain; a volatile
/// DRAM cache between the LLC and NVM would keep them.
pub fn needs_no_dram_cache(p: &Params) -> Option<String> {
    (p.u64("hybrid.dram_cache_bytes") > 0).then(|| {
        "flushes its log and data towards NVM, and this machine has a volatile DRAM cache in \
         front of NVM (hybrid.dram_cache_bytes > 0): the flushed lines stop there, so the run is \
         not crash-consistent; its paper runs it without the DRAM cache (no --config, or \
         --set hybrid.dram_cache_bytes=0)"
            .to_string()
    })
}

/// EHOU's remapping lives in the Optane-like DIMM's AIT cache.
pub fn needs_optane_dimm(p: &Params) -> Option<String> {
    (p.str("dimm.model") != "optane").then(|| {
        "remaps lines in the AIT cache of an Optane-like DIMM, and this machine has none \
         (dimm.model = none): the AIT-cache overflow, its log and the DIMM's timing are not \
         modelled; use its paper's machine (no --config, or --config configs/ehou.toml)"
            .to_string()
    })
}
