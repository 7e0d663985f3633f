//! What a crash test checks ([`CrashOptions`]) and the command line that
//! replays one crash image.

use super::points::PointSel;
use crate::engine::RunSpec;

/// Default number of crashes injected into each recovery.
pub const DEFAULT_RECOVERY_CRASHES: u64 = 4;

/// What to test.
#[derive(Clone, Debug)]
pub struct CrashOptions {
    pub points: PointSel,
    /// Also crash with the event in flight torn (seeded word subset).
    pub torn: bool,
    /// Crashes injected into each recovery (at seeded points of its own
    /// writes); `u64::MAX` = every one.
    pub recovery_crashes: u64,
    /// Run the invariant checker once per distinct recovered state (thread,
    /// matched prefix) instead of at every point. Exact: a region equal to
    /// a prefix image gives the same checker result.
    pub memo_invariants: bool,
    /// Reuse a passing point's recoveries at later points whose recovery
    /// inputs are provably identical ([`super::memo`]). Exact; off only to check
    /// that it is (differential tests).
    pub dedup_recoveries: bool,
    /// Host threads verifying points (0 = rayon's default: every core).
    /// Verdicts, reports and replay lines do not depend on it.
    pub host_threads: usize,
    /// Differential check of the dedup (tests): at every reused point also
    /// recover from scratch and count images that differ
    /// (`CrashReport::dedup_mismatches`, must stay 0).
    pub verify_dedup: bool,
    /// Resume the previous point's recovery scan for schemes whose
    /// recovery is resumable ([`crate::recovery::scan`]). Exact; needs `dedup_recoveries`
    /// (crashes inside the replayed records are proven, not re-run).
    pub resume_scans: bool,
    /// Differential check of [`super::resume`] (tests, CI): every resumed point
    /// is also recovered and checked from scratch; any difference in the
    /// image, the write count or digest, or the verdict and report counts
    /// `CrashReport::resume_mismatches` (must stay 0).
    pub verify_resume: bool,
}

impl Default for CrashOptions {
    fn default() -> Self {
        CrashOptions {
            points: PointSel::All,
            torn: false,
            recovery_crashes: DEFAULT_RECOVERY_CRASHES,
            memo_invariants: true,
            dedup_recoveries: true,
            host_threads: 0,
            verify_dedup: false,
            resume_scans: true,
            verify_resume: false,
        }
    }
}

/// The replay command line for one crash image.
pub(super) fn replay_line(
    spec: &RunSpec,
    opts: &CrashOptions,
    point: u64,
    mask: Option<u8>,
) -> String {
    // `--config default`: the overrides below are relative to the bare
    // machine, not to the scheme's paper machine the CLI would otherwise use.
    let mut s = format!(
        "durasim crashtest --scheme {} --workload {} --tx {} --threads {} --seed {} --config default --crash-at {point}",
        spec.scheme, spec.workload, spec.tx, spec.threads, spec.seed
    );
    if let Some(m) = mask {
        s.push_str(&format!(" --tear-mask {m:#04x}"));
    }
    if opts.recovery_crashes != DEFAULT_RECOVERY_CRASHES {
        if opts.recovery_crashes == u64::MAX {
            s.push_str(" --recovery-crashes all");
        } else {
            s.push_str(&format!(" --recovery-crashes {}", opts.recovery_crashes));
        }
    }
    // Every parameter that differs from its default (covers --config too).
    for (k, v) in spec.params.overrides() {
        let kv = format!("{k}={v}");
        if kv
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-=+:/,".contains(c))
        {
            s.push_str(&format!(" --set {kv}"));
        } else {
            s.push_str(&format!(" --set '{}'", kv.replace('\'', "'\\''")));
        }
    }
    s
}
