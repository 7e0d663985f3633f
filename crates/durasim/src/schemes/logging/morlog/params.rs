//! The parameters of `morlog` and `morlog-dp` (one list per variant,
//! every key under its scheme's prefix) and the log region they reserve.

use crate::config::{p, Check, ParamSpec, Params};
use crate::schemes::kit::hw_log::HEADER_BYTES;
use crate::types::Cycle;

const UR_SOURCE: &str = "MorLog §III-D, Table I: a 16-entry undo+redo buffer";
const REDO_SOURCE: &str = "MorLog §III-D, Table I: a 32-entry redo buffer";
const PERIOD_SOURCE: &str = "MorLog §III-F / §VI-A: force-write-back every three million cycles (FWB, Ogleari et al. HPCA 2018)";
const MGMT_SOURCE: &str = "MorLog §III-F \"Log management\": two options, force-write-back [43] (evaluated, §VI-A) or a variation of the transaction table [22]";
const TABLE_SOURCE: &str = "modelling choice, docs/MODEL.md \"MorLog transaction table\" (MorLog §III-F gives no size; 64 = 8 per thread of the paper's eight)";
const LOG_SOURCE: &str = "modelling choice, docs/MODEL.md \"MorLog\" (MorLog §III-A: a large-enough log region prevents overflow); as fwb.log_bytes";

/// The parameter list of one variant, every key under its scheme's prefix.
macro_rules! params {
    ($name:ident, $p:literal, $mutants:expr, $mutdoc:literal) => {
        pub static $name: &[ParamSpec] = &[
            p!(concat!($p, ".undo_redo_buffer_entries"), int 16, "entries", Check::Range(1.0, 4096.0),
                UR_SOURCE,
                "volatile undo+redo FIFO; an entry is written to the log N = L1+L2+LLC latency - 1 cycles after its creation, or earlier when the FIFO is full"),
            p!(concat!($p, ".redo_buffer_entries"), int 32, "entries", Check::Range(1.0, 4096.0),
                REDO_SOURCE,
                "volatile redo FIFO, written lazily (when full, or at commit for morlog)"),
            p!(concat!($p, ".period_cycles"), int 3_000_000, "cycles", Check::Range(1000.0, 1e12),
                PERIOD_SOURCE,
                "period of the force-write-back scan that bounds the log (truncation after two passes)"),
            p!(concat!($p, ".log_management"), str "force-write-back", &["force-write-back", "tx-table"],
                MGMT_SOURCE,
                "how log space is reclaimed (MorLog §III-F): force-write-back = the periodic cache scan, the head moves past transactions committed before the last two passes; tx-table = a transaction table whose per-transaction counter of cache lines holding its data releases the log when it reaches 0"),
            p!(concat!($p, ".tx_table_entries"), int 64, "entries", Check::Range(1.0, 65536.0),
                TABLE_SOURCE,
                "transaction-table entries (log_management = tx-table); at least the thread count. When full, a beginning transaction waits while the lines of the oldest committed entry are written back"),
            p!(concat!($p, ".log_bytes"), int 128 << 20, "bytes", Check::PowerOfTwo(1 << 12, 1 << 36),
                LOG_SOURCE,
                "centralized circular log in NVM (32 B per entry or commit record)"),
            p!(concat!($p, ".mutant"), str "none", $mutants,
                crate::schemes::MUTANT_SOURCE,
                $mutdoc),
        ];
    };
}

params!(
    PARAMS,
    "morlog",
    &["none", "discard-on-writeback", "no-order", "release-early", "release-on-l1-evict", "anchor-newest-writer", "scan-skips-head-entry", "head-before-writebacks"],
    "test-only planted bug (tests/morlog.rs, tests/mutants.rs; refused by the CLI): discard-on-writeback = the paper's literal rule, a buffered redo entry is dropped when its line is written back; no-order = a data write-back does not wait for its line's buffered undo+redo entries; release-early = tx-table: a line's write-back releases its transaction before the data are persisted; release-on-l1-evict = tx-table: a line is released when it leaves the L1 (a counter of L1 lines only, where the paper's TID/TxID extension lives) though it is still dirty below; anchor-newest-writer = tx-table: a line's anchor moves to its newest writer, releasing an older writer's log while its data are not home; scan-skips-head-entry = recovery's log scan starts one entry after the persisted head; head-before-writebacks = the head is persisted without waiting for the write-backs that took the retired transactions' data home"
);
params!(
    DP_PARAMS,
    "morlog-dp",
    &["none", "ignore-counter", "no-order", "release-early", "release-on-l1-evict"],
    "test-only planted bug (tests/morlog.rs; refused by the CLI): ignore-counter = recovery treats every committed transaction as persisted; no-order, release-early, release-on-l1-evict = as morlog.mutant"
);

/// The parameter keys of one of the two variants.
pub(super) struct Keys {
    pub(super) ur: &'static str,
    pub(super) redo: &'static str,
    pub(super) period: &'static str,
    pub(super) mgmt: &'static str,
    pub(super) table: &'static str,
    pub(super) log_bytes: &'static str,
    pub(super) mutant: &'static str,
    pub(super) specs: &'static [ParamSpec],
}

pub(super) const K: Keys = Keys {
    ur: "morlog.undo_redo_buffer_entries",
    redo: "morlog.redo_buffer_entries",
    period: "morlog.period_cycles",
    mgmt: "morlog.log_management",
    table: "morlog.tx_table_entries",
    log_bytes: "morlog.log_bytes",
    mutant: "morlog.mutant",
    specs: PARAMS,
};
pub(super) const DP: Keys = Keys {
    ur: "morlog-dp.undo_redo_buffer_entries",
    redo: "morlog-dp.redo_buffer_entries",
    period: "morlog-dp.period_cycles",
    mgmt: "morlog-dp.log_management",
    table: "morlog-dp.tx_table_entries",
    log_bytes: "morlog-dp.log_bytes",
    mutant: "morlog-dp.mutant",
    specs: DP_PARAMS,
};

pub(super) fn reserved_bytes(p: &Params) -> u64 {
    p.u64(K.log_bytes) + HEADER_BYTES
}
pub(super) fn reserved_bytes_dp(p: &Params) -> u64 {
    p.u64(DP.log_bytes) + HEADER_BYTES
}

/// N = the minimum traversal of the hierarchy (L1 + L2 + LLC hit
/// latencies) minus one: the largest delay that keeps every undo ahead of
/// its data (MorLog §II-B, §III-B).
pub fn ur_delay_cycles(p: &Params) -> Cycle {
    (p.u64("cache.l1_latency_cycles")
        + p.u64("cache.l2_latency_cycles")
        + p.u64("cache.llc_latency_cycles"))
    .saturating_sub(1)
    .max(1)
}
