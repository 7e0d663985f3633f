//! Parameters. Every parameter is declared once as a [`ParamSpec`] with its
//! default, unit, valid range and source; engine parameters live here, each
//! scheme declares its own (`Scheme::params` in the registry). A [`Params`]
//! set is built from the defaults, then a TOML preset, then `--set`
//! overrides; every step is validated and unknown keys are rejected with the
//! list of valid ones.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;

/// A parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(v) => write!(f, "{v}"),
        }
    }
}

impl Value {
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Int(v) => serde_json::json!(v),
            Value::Float(v) => serde_json::json!(v),
            Value::Bool(v) => serde_json::json!(v),
            Value::Str(v) => serde_json::json!(v),
        }
    }
}

/// Constraint a value must satisfy.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// Any value of the right type.
    Any,
    /// Integer or float in `[min, max]`.
    Range(f64, f64),
    /// Integer, power of two, in `[min, max]`.
    PowerOfTwo(u64, u64),
    /// String from a fixed list.
    OneOf(&'static [&'static str]),
}

/// Declaration of one parameter.
#[derive(Clone, Debug)]
pub struct ParamSpec {
    pub key: &'static str,
    pub default: DefaultValue,
    pub unit: &'static str,
    pub check: Check,
    /// Where the default comes from (paper and table, or "modelling choice").
    pub source: &'static str,
    pub doc: &'static str,
}

/// `const`-friendly default value.
#[derive(Clone, Copy, Debug)]
pub enum DefaultValue {
    Int(u64),
    Float(f64),
    Bool(bool),
    Str(&'static str),
}

impl DefaultValue {
    pub fn value(self) -> Value {
        match self {
            DefaultValue::Int(v) => Value::Int(v),
            DefaultValue::Float(v) => Value::Float(v),
            DefaultValue::Bool(v) => Value::Bool(v),
            DefaultValue::Str(v) => Value::Str(v.to_string()),
        }
    }
    fn type_name(self) -> &'static str {
        match self {
            DefaultValue::Int(_) => "an integer",
            DefaultValue::Float(_) => "a number",
            DefaultValue::Bool(_) => "true or false",
            DefaultValue::Str(_) => "a string",
        }
    }
}

/// Declare a [`ParamSpec`]: key, `int`/`float`/`bool`/`str` and the
/// default, unit (not for `str`), check (the choices for `str`, none for
/// `bool`), source, doc. Engine and scheme parameter lists use it.
macro_rules! p {
    ($key:expr, int $v:expr, $unit:expr, $check:expr, $src:expr, $doc:expr) => {
        $crate::config::ParamSpec {
            key: $key,
            default: $crate::config::DefaultValue::Int($v),
            unit: $unit,
            check: $check,
            source: $src,
            doc: $doc,
        }
    };
    ($key:expr, float $v:expr, $unit:expr, $check:expr, $src:expr, $doc:expr) => {
        $crate::config::ParamSpec {
            key: $key,
            default: $crate::config::DefaultValue::Float($v),
            unit: $unit,
            check: $check,
            source: $src,
            doc: $doc,
        }
    };
    ($key:expr, bool $v:expr, $unit:expr, $src:expr, $doc:expr) => {
        $crate::config::ParamSpec {
            key: $key,
            default: $crate::config::DefaultValue::Bool($v),
            unit: $unit,
            check: $crate::config::Check::Any,
            source: $src,
            doc: $doc,
        }
    };
    ($key:expr, str $v:expr, $choices:expr, $src:expr, $doc:expr) => {
        $crate::config::ParamSpec {
            key: $key,
            default: $crate::config::DefaultValue::Str($v),
            unit: "",
            check: $crate::config::Check::OneOf($choices),
            source: $src,
            doc: $doc,
        }
    };
}
pub(crate) use p;

const T2: &str = "HOOP paper Table II";
/// Source of a default chosen by us (explained in docs/model/, indexed by docs/MODEL.md).
pub(crate) const MC: &str = "modelling choice, see docs/MODEL.md";
/// The HOOP preset's reference core (the paper gives no core sizes).
const SNB: &str = "Intel Sandy Bridge (Intel 64 and IA-32 Optimization Reference Manual, Sandy Bridge section: 168-entry ROB, 64 load / 36 store buffers, 10 L1D fill buffers, 4-wide)";

/// Engine parameters (CPU, caches, memory controller, NVM, DRAM, workloads).
pub static ENGINE_PARAMS: &[ParamSpec] = &[
    p!("cpu.freq_ghz", float 2.5, "GHz", Check::Range(0.1, 10.0), T2, "core clock; all latencies are converted to core cycles"),
    p!("cpu.compute_cpi", float 1.0, "cycles/instr", Check::Range(0.1, 100.0), MC, "cycles per non-memory instruction (compute ops)"),
    p!("cpu.store_buffer_entries", int 36, "entries", Check::Range(1.0, 1024.0), "Intel Sandy Bridge store buffer (the HOOP paper's area baseline, §III-H)", "store queue / store buffer: a store holds an entry from dispatch until its write reaches the L1; a full buffer stalls dispatch"),
    p!("cpu.model", str "ooo", &["ooo", "in-order"], "HOOP paper Table II (\"2.5 GHz, out-of-order, x86\")", "ooo: out-of-order core (ROB window, non-blocking loads up to cpu.mshrs misses, in-order retirement); in-order: one op per cycle, blocking loads, compute ops cost cpu.compute_cpi (MorLog's core)"),
    p!("cpu.rob_entries", int 168, "entries", Check::Range(1.0, 4096.0), SNB, "reorder buffer: ops in flight between dispatch and in-order retirement (ooo only)"),
    p!("cpu.issue_width", int 4, "instr/cycle", Check::Range(1.0, 64.0), SNB, "dispatch and retire width (ooo only)"),
    p!("cpu.mshrs", int 10, "misses", Check::Range(1.0, 1024.0), SNB, "L1D miss status holding registers (fill buffers): outstanding L1 misses per core (ooo only)"),
    p!("cpu.load_queue_entries", int 64, "entries", Check::Range(1.0, 4096.0), SNB, "load queue: loads in flight between dispatch and retirement (ooo only)"),
    p!("cache.l1_size_bytes", int 32768, "bytes", Check::PowerOfTwo(1024, 1 << 30), T2, "private L1 data cache size"),
    p!("cache.l1_ways", int 4, "ways", Check::Range(1.0, 64.0), T2, "L1 associativity"),
    p!("cache.l1_latency_cycles", int 4, "cycles", Check::Range(1.0, 1000.0), "Intel Sandy Bridge L1D load-to-use (not given in Table II)", "L1 hit latency"),
    p!("cache.l2_size_bytes", int 262144, "bytes", Check::PowerOfTwo(1024, 1 << 30), T2, "private L2 size"),
    p!("cache.l2_ways", int 8, "ways", Check::Range(1.0, 64.0), T2, "L2 associativity"),
    p!("cache.l2_latency_cycles", int 12, "cycles", Check::Range(1.0, 1000.0), "Intel Sandy Bridge L2 (not given in Table II)", "L2 hit latency"),
    p!("cache.llc_size_bytes", int 2097152, "bytes", Check::PowerOfTwo(1024, 1 << 34), T2, "shared inclusive LLC size"),
    p!("cache.llc_ways", int 16, "ways", Check::Range(1.0, 64.0), T2, "LLC associativity"),
    p!("cache.llc_writeback_buffer_entries", int 8, "entries", Check::Range(1.0, 1024.0), "gem5 classic cache default write_buffers = 8 (src/mem/cache/Cache.py); modelling choice, docs/MODEL.md", "LLC write-back buffer: a fill waits for a dirty victim's acceptance by the memory controller only when every entry is still waiting"),
    p!("cache.llc_latency_cycles", int 30, "cycles", Check::Range(1.0, 1000.0), "Intel Sandy Bridge LLC (not given in Table II)", "LLC hit latency"),
    p!("nvm.capacity_bytes", int 512 << 30, "bytes", Check::Range(1048576.0, 1.2e15), T2, "NVM capacity (sparse: only touched pages cost host memory)"),
    p!("nvm.channels", int 4, "channels", Check::PowerOfTwo(1, 64), "HOOP §III-I (one memory controller), §III-H (area baseline: the Sandy Bridge package with a 20 MB LLC, i.e. Xeon E5, one integrated controller with 4 channels) and §IV (g) (NVM bandwidth about 10-25 GB/s: above one 64 B / 8 ns channel's 8 GB/s; 4 x 8 = 32 GB/s peak covers 25 GB/s sustained)", "memory channels of the one memory controller"),
    p!("nvm.ranks", int 2, "ranks", Check::PowerOfTwo(1, 64), MC, "ranks per channel"),
    p!("nvm.banks", int 8, "banks", Check::PowerOfTwo(1, 256), MC, "banks per rank"),
    p!("nvm.row_bytes", int 2048, "bytes", Check::PowerOfTwo(64, 1 << 20), "Lee et al., ISCA 2009 (PCM row buffer)", "row buffer size per bank"),
    p!("nvm.t_rcd_ns", float 10.0, "ns", Check::Range(0.0, 1e6), T2, "activate to column command"),
    p!("nvm.t_cl_ns", float 10.0, "ns", Check::Range(0.0, 1e6), T2, "column read latency (also used as write latency tCWL)"),
    p!("nvm.t_bl_ns", float 8.0, "ns", Check::Range(0.0, 1e6), T2, "burst length on the data bus (one 64 B line)"),
    p!("nvm.t_wr_ns", float 10.0, "ns", Check::Range(0.0, 1e6), T2, "write recovery"),
    p!("nvm.t_ras_ns", float 24.0, "ns", Check::Range(0.0, 1e6), T2, "activate to precharge"),
    p!("nvm.t_rp_ns", float 10.0, "ns", Check::Range(0.0, 1e6), T2, "precharge"),
    p!("nvm.t_rc_ns", float 34.0, "ns", Check::Range(0.0, 1e6), T2, "activate to activate, same bank"),
    p!("nvm.t_rrd_ns", float 4.0, "ns", Check::Range(0.0, 1e6), T2, "activate to activate, same rank"),
    p!("nvm.t_rtp_ns", float 5.0, "ns", Check::Range(0.0, 1e6), T2, "read to precharge"),
    p!("nvm.t_wtr_ns", float 5.0, "ns", Check::Range(0.0, 1e6), T2, "write to read turnaround"),
    p!("nvm.t_faw_ns", float 20.0, "ns", Check::Range(0.0, 1e6), T2, "four-activate window"),
    p!("nvm.t_rtw_ns", float 2.5, "ns", Check::Range(0.0, 1e6), "USIMM (Chatterjee et al., 2012): T_RTRS = 2 memory cycles at 800 MHz (not in HOOP Table II)", "read-to-write turnaround: idle data-bus time between a read burst and a following write burst"),
    p!("nvm.array_read_ns", float 50.0, "ns", Check::Range(0.0, 1e6), T2, "media array read (row activation senses the array)"),
    p!("nvm.array_write_ns", float 150.0, "ns", Check::Range(0.0, 1e6), T2, "media array write (cell programming)"),
    p!("nvm.row_read_pj_per_bit", float 0.93, "pJ/bit", Check::Range(0.0, 1e6), T2, "row buffer read energy"),
    p!("nvm.row_write_pj_per_bit", float 1.02, "pJ/bit", Check::Range(0.0, 1e6), T2, "row buffer write energy"),
    p!("nvm.array_read_pj_per_bit", float 2.47, "pJ/bit", Check::Range(0.0, 1e6), T2, "array read energy"),
    p!("nvm.array_write_pj_per_bit", float 16.82, "pJ/bit", Check::Range(0.0, 1e6), T2, "array write energy"),
    p!("nvm.address_mapping", str "permutation", &["permutation", "line-interleaved", "row-interleaved"], "permutation-based interleaving (Zhang, Zhu, Zhang, MICRO 2000), generalised to fold all higher bits; docs/MODEL.md", "permutation: line-interleaved with the rank:bank:channel index XORed with all higher address bits folded to its width, so structures at power-of-two strides (thread regions, per-core logs) fall in different banks; line-interleaved: consecutive 64 B lines go to different banks (row:column:rank:bank:channel), so a sequential write stream is not serialised behind one bank's 150 ns programming; row-interleaved: a row fills first (row:rank:bank:column:channel)"),
    p!("nvm.write_model", str "uniform", &["uniform", "dcw", "tlc"], MC, "uniform: every written bit costs array energy; dcw: data-comparison write, only flipped bits; tlc: TLC RRAM cells (3 bits/cell), differential write, latency = slowest programmed cell state, energy = sum over programmed cells (nvm.tlc_write_*; MorLog Table III; docs/guide/configuration-and-presets.md \"Data-aware NVM\")"),
    p!("nvm.encoding", str "none", &["none", "fpc", "crade", "slde"], "modelling choice: off by default (the HOOP system has no encoder); MorLog (Wei et al.) §IV for slde, docs/MODEL.md", "encoder on the DIMM's write path, decoder on its read path: none; fpc (64-bit frequent pattern compression); crade (FPC + incomplete-data-mapping expansion by compression ratio); slde (MorLog: FPC or, for log data, DLDC, whichever is smaller, then CRADE expansion)"),
    p!("nvm.tlc_write_ns_000", float 15.2, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 000 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_ns_001", float 46.8, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 001 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_ns_010", float 98.3, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 010 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_ns_011", float 143.0, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 011 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_ns_100", float 150.0, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 100 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_ns_101", float 101.0, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 101 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_ns_110", float 52.7, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 110 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_ns_111", float 12.1, "ns", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write latency of a cell programmed to state 111 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_000", float 2.0, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 000 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_001", float 6.7, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 001 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_010", float 19.3, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 010 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_011", float 35.1, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 011 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_100", float 35.6, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 100 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_101", float 19.6, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 101 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_110", float 8.5, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 110 (nvm.write_model = tlc)"),
    p!("nvm.tlc_write_pj_111", float 1.5, "pJ/cell", Check::Range(0.0, 1e6), "MorLog (Wei et al.) Table III (TLC RRAM, from its refs [42], [45], [61])", "TLC write energy of a cell programmed to state 111 (nvm.write_model = tlc)"),
    p!("mc.read_queue_entries", int 32, "entries", Check::Range(1.0, 4096.0), "USIMM (Chatterjee et al., 2012) defaults; EHOU paper Table I (32-entry read queue)", "read queue capacity: a read arriving when this many reads are outstanding waits for the earliest to finish"),
    p!("mc.write_queue_entries", int 64, "entries", Check::Range(2.0, 4096.0), "USIMM (Chatterjee et al., 2012) defaults", "write queue capacity (the ADR write-pending queue)"),
    p!("mc.write_drain_high", int 40, "entries", Check::Range(1.0, 4096.0), "USIMM (Chatterjee et al., 2012) defaults", "write queue occupancy that starts a forced drain"),
    p!("mc.write_drain_low", int 20, "entries", Check::Range(0.0, 4096.0), "USIMM (Chatterjee et al., 2012) defaults", "occupancy at which a forced drain stops"),
    p!("mc.adr", bool true, "", "Intel ADR (EHOU paper §II-B)", "write queue is in the persistence domain: a write persists when the controller accepts it"),
    p!("trace.cycle_ns", float 0.0, "ns", Check::Range(0.0, 1e6), "modelling choice: durasim's own traces are stamped in core cycles (0 = one core cycle); set it to a peer's clock period to replay or write its traces in its time (DRAMsim3/Ramulator 2: tCK, NVMain: 1/CPUFreq, VANS: tCK 0.75 ns; shared/peers README §2)", "time unit of a trace's cycle field (trace replay, run --trace-out); 0 = core cycles"),
    p!("trace.offer_interval_ns", float 0.4, "ns", Check::Range(0.0, 1e6), "modelling choice: one request per controller clock, as DRAMsim3 and Ramulator 2 replay traces (shared/peers README §2); durasim's controller runs on the core clock (2.5 GHz = 0.4 ns)", "trace replay: least time between the acceptance of a request and the offer of the next"),
    p!("dram.t_rcd_ns", float 13.75, "ns", Check::Range(0.0, 1e6), "DDR4-2400 (JEDEC 17-17-17)", "DRAM device used by hybrid schemes"),
    p!("dram.t_cl_ns", float 13.75, "ns", Check::Range(0.0, 1e6), "DDR4-2400 (JEDEC 17-17-17)", "DRAM column latency"),
    p!("dram.t_rp_ns", float 13.75, "ns", Check::Range(0.0, 1e6), "DDR4-2400 (JEDEC 17-17-17)", "DRAM precharge"),
    p!("dram.t_bl_ns", float 3.33, "ns", Check::Range(0.0, 1e6), "DDR4-2400, BL8", "DRAM burst"),
    p!("dram.banks", int 16, "banks", Check::PowerOfTwo(1, 256), "DDR4 (16 banks per rank)", "DRAM banks"),
    p!("dram.row_bytes", int 8192, "bytes", Check::PowerOfTwo(64, 1 << 20), "DDR4 x8 page size", "DRAM row size"),
    p!("dram.t_wr_ns", float 15.0, "ns", Check::Range(0.0, 1e6), "DDR4-2400 x8 (JEDEC JESD79-4)", "DRAM write recovery"),
    p!("dram.t_ras_ns", float 32.0, "ns", Check::Range(0.0, 1e6), "DDR4-2400 x8 (JEDEC JESD79-4)", "DRAM activate to precharge"),
    p!("dram.t_rc_ns", float 45.75, "ns", Check::Range(0.0, 1e6), "DDR4-2400 x8 (JEDEC JESD79-4)", "DRAM activate to activate, same bank (tRAS + tRP)"),
    p!("dram.t_rrd_ns", float 4.9, "ns", Check::Range(0.0, 1e6), "DDR4-2400 x8 (JEDEC JESD79-4)", "DRAM activate to activate, same rank (tRRD_L, 1 KiB page)"),
    p!("dram.t_rtp_ns", float 7.5, "ns", Check::Range(0.0, 1e6), "DDR4-2400 x8 (JEDEC JESD79-4)", "DRAM read to precharge"),
    p!("dram.t_wtr_ns", float 7.5, "ns", Check::Range(0.0, 1e6), "DDR4-2400 x8 (JEDEC JESD79-4)", "DRAM write to read turnaround (tWTR_L)"),
    p!("dram.t_faw_ns", float 21.0, "ns", Check::Range(0.0, 1e6), "DDR4-2400 x8 (JEDEC JESD79-4)", "DRAM four-activate window (1 KiB page)"),
    p!("dram.t_rtw_ns", float 1.67, "ns", Check::Range(0.0, 1e6), "DDR4-2400 (JEDEC JESD79-4: read-to-write command spacing RL + BL/2 - WL + 2 tCK, i.e. 2 tCK = 1.67 ns of idle bus)", "DRAM read-to-write bus turnaround"),
    p!("dram.t_refi_ns", float 7800.0, "ns", Check::Range(0.0, 1e9), "DDR4 (JEDEC JESD79-4: tREFI 7.8 us, 0-85 C)", "DRAM refresh interval (0: no refresh)"),
    p!("dram.t_rfc_ns", float 350.0, "ns", Check::Range(0.0, 1e6), "DDR4 8 Gb device (JEDEC JESD79-4: tRFC1 350 ns)", "DRAM all-bank refresh time (rank unavailable, rows closed)"),
    p!("dram.row_read_pj_per_bit", float 0.93, "pJ/bit", Check::Range(0.0, 1e6), "Lee et al., ISCA 2009 (DRAM column of the energy table)", "DRAM row buffer read energy"),
    p!("dram.row_write_pj_per_bit", float 1.02, "pJ/bit", Check::Range(0.0, 1e6), "Lee et al., ISCA 2009 (DRAM column of the energy table)", "DRAM row buffer write energy"),
    p!("dram.array_read_pj_per_bit", float 1.17, "pJ/bit", Check::Range(0.0, 1e6), "Lee et al., ISCA 2009 (DRAM column of the energy table)", "DRAM array read (activation) energy"),
    p!("dram.array_write_pj_per_bit", float 0.39, "pJ/bit", Check::Range(0.0, 1e6), "Lee et al., ISCA 2009 (DRAM column of the energy table)", "DRAM array write energy"),
    p!("workload.item_bytes", int 0, "bytes", Check::Range(0.0, 1048576.0), "HOOP paper §IV-A: 64 B and 1 KB items (synthetic), 512 B and 1 KB key-value pairs (YCSB)", "size of one item (multiple of 8, at least 24); 0 = the workload's default: 64 B for the synthetic workloads, 1 KB for ycsb (tpcc's record sizes are fixed)"),
    p!("workload.update_ratio", float 0.5, "fraction", Check::Range(0.0, 1.0), MC, "share of transactions that update an existing item (the rest insert)"),
    p!("workload.initial_items", int 16384, "items/thread", Check::Range(1.0, 1e9), MC, "items each thread's structure holds before measurement (default: 8 threads x 16384 x 64 B = 8 MiB, 4x the LLC, so data really leaves the caches)"),
    p!("workload.key_space", int 1 << 32, "keys", Check::Range(16.0, 1.8e19), MC, "random keys are drawn from [0, key_space)"),
    p!("workload.tpcc_items", int 100_000, "rows", Check::Range(100.0, 1e7), "TPC-C spec v5.11 §1.2.1 (ITEM cardinality 100,000)", "tpcc: rows of the ITEM table and STOCK rows per warehouse"),
    p!("workload.tpcc_customers_per_district", int 3000, "rows", Check::Range(10.0, 1e6), "TPC-C spec v5.11 §1.2.1 (3,000 customers per district)", "tpcc: CUSTOMER rows per district"),
    // Key distribution and copies, honoured by every keyed workload.
    p!("workload.key_dist", str "default", &["default", "uniform", "zipfian", "nstore-skew"], "YCSB ScrambledZipfianGenerator (Zipfian constant 0.99, 10^10 items hashed onto the key range); EHOU and SSP run B-tree and RB-tree with Zipfian keys; nstore-skew: WHISPER N-Store simple_skew with its default ycsb_skew 0.1 (main.cpp)", "default: each workload's own (uniform for vector/hashmap/rbtree/btree/array/sps/hashtable/echo, Zipfian for ycsb, TATP's NURand for tatp); uniform, zipfian or nstore-skew (10% of draws on the 10 hottest keys, the rest uniform over the others) override it for every keyed workload (queue, sdg and tpcc draw no keys: FIFO order, generated edges, TPC-C's NURand)"),
    p!("workload.values", str "realistic", &["realistic", "random", "zero"], "MorLog (Wei et al., ISCA 2020) Table II and Fig. 5, measured on WHISPER; WHISPER N-Store utils.cpp/ycsb_benchmark.cpp and Echo evaluation.c; YCSB RandomByteIterator", "what data words hold (docs/model/workloads.md): realistic = payload words by a delta model fitted to MorLog Table II / Fig. 5 (70.5% of updated bytes clean, Table II's pattern mix), ycsb and echo values as their benchmark code writes them; random = a 64-bit hash mix per word (durasim's values before the value model); zero = every data word 0"),
    p!("workload.update_scope", str "item", &["item", "field"], "HOOP paper Table III (vector/hashmap: 8 stores per transaction = one 64 B entry, \"insert/update entries\"); WHISPER N-Store ycsb_benchmark.cpp (all value fields written)", "what an update assigns: item = the whole item (key rewritten unchanged, payload, seal: item_bytes / 8 stores), as code that assigns a whole entry; field = one field of the payload and the seal (ycsb: one of workload.ycsb_fields, YCSB's writeallfields=false)"),
    p!("workload.ycsb_text", str "nstore", &["nstore", "random-bytes"], "HOOP §IV-A and MorLog §VI-A run WHISPER's N-Store YCSB: utils.cpp get_rand_astring (one alphanumeric character repeated), ycsb_benchmark.cpp do_update (field of 'x'); YCSB RandomByteIterator", "ycsb value text under workload.values = realistic: nstore = N-Store's (load: one random alphanumeric character repeated over each field; update: 'x' over each field); random-bytes = YCSB's RandomByteIterator bytes (0x20..=0x7F)"),
    p!("workload.ycsb_read_share", float 0.2, "fraction", Check::Range(0.0, 1.0), "HOOP paper §IV-A (\"the ratio of reads to updates is 20:80\"); WHISPER nstore run.py 'large' -p0.8", "ycsb: share of read-only transactions (the rest update a record)"),
    p!("workload.ycsb_fields", int 10, "fields", Check::Range(1.0, 1024.0), "YCSB CoreWorkload fieldcount 10 (1 KB = 10 x 100 B); WHISPER N-Store main.cpp ycsb_num_val_fields 5 for 512 B records", "ycsb: value fields per record (a field update assigns one of them; N-Store text repeats one character per field)"),
    p!("workload.ycsb_records", int 0, "records/thread", Check::Range(0.0, 1e9), "paper silent; 0 keeps durasim's rule (workload.initial_items); WHISPER nstore run.py 'large' -k100000 in total (12,500 per thread at HOOP's 8 threads; MorLog preset: 25,000 at its 4 macro threads)", "ycsb: records in each thread's table (0 = workload.initial_items)"),
    p!("workload.echo_batch", int 8, "puts/tx", Check::Range(1.0, 1024.0), "WHISPER kv-echo run.sh 'large': merge_every 8", "echo: puts committed per transaction (one merge of the local store)"),
    p!("workload.echo_put_share", float 0.8, "fraction", Check::Range(0.0, 1.0), "WHISPER kv-echo run.sh 'large': put_prob 8 (x 0.1)", "echo: share of transactions that commit a batch of puts (the rest get one key, read-only)"),
    p!("workload.echo_update_share", float 0.7, "fraction", Check::Range(0.0, 1.0), "WHISPER kv-echo run.sh 'large': update_prob 7 (x 0.1)", "echo: share of puts that write a new version of an existing key (the rest insert a new key)"),
    p!("workload.echo_keys", int 0, "keys/thread", Check::Range(0.0, 1e9), "paper silent; 0 keeps durasim's rule (workload.initial_items); WHISPER kv-echo evaluation.c PREPOP_NUM 10,000 in total", "echo: keys loaded before measurement per thread (0 = workload.initial_items)"),
    p!("workload.tatp_subscribers", int 0, "subscribers/thread", Check::Range(0.0, 1e9), "TATP Benchmark Description v1.0 (IBM solidDB, 2009): the population is the subscriber count P, from 100,000 (its smallest) upwards; 0 keeps durasim's footprint rule (workload.initial_items)", "tatp: subscribers P per thread (0 = workload.initial_items); each has 1-4 access_info, 1-4 special_facility and 0-3 call_forwarding rows per facility"),
    p!("workload.copies", int 1, "copies/thread", Check::Range(1.0, 64.0), "EHOU §IV: \"all workloads run four copies at the same time\" (that is --threads 4: every thread owns an independent instance)", "independent instances of the workload per thread, each in its own slice of the thread's region with its own seed; the thread's transactions rotate over them (1 = one instance per thread)"),
    // Programs without transactions (pagerank, cc, cd, ann, kdtree, stencil3d, lbm).
    p!("workload.footprint_bytes", int 0, "bytes", Check::Range(0.0, 1.1e12), "dual-page checkpointing paper Table 5 (footprints 576 MB to 1,548 MB per program); 0 keeps tests small", "simulated data per thread: each thread's program (pagerank, cc, cd, ann, kdtree, stencil3d, lbm) builds: graph/vector/grid sizes are derived from it; 0 = workload.initial_items x item size (64 B unless workload.item_bytes is set), e.g. 1 MiB per thread by default; the paper's 0.6-1.5 GB at --threads 4 is 150M-384M per thread"),
    p!("workload.graph_vertices", int 0, "vertices", Check::Range(0.0, 1e9), MC, "pagerank/cc/cd: vertices of the generated R-MAT graph (0 = as many as workload.footprint_bytes holds at workload.graph_edge_factor)"),
    p!("workload.graph_edge_factor", int 16, "edges/vertex", Check::Range(1.0, 1024.0), "Graph500 specification v3 (edgefactor 16)", "pagerank/cc/cd: generated edges per vertex"),
    p!("run.warmup_tx_share", float 0.25, "fraction", Check::Range(0.0, 0.95), MC, "share of each thread's transactions run as warm-up before the measured window (caches, scheme tables and logs fill; excluded from the metrics)"),
    p!("run.warmup_tx_per_thread", int 0, "tx/thread", Check::Range(0.0, 1e12), MC, "if > 0: warm-up transactions per thread instead of run.warmup_tx_share (capped below each thread's total)"),
    p!("run.characterise", bool true, "", MC, "record each transaction's stores for the write-set characterisation metrics (program_stores, written_words/lines, repeated/silent store shares, written-line compression ratios); costs 3-9 % host time, no simulated time; false (speed benches) reports those metrics as 0"),
    p!("run.check_reads", bool false, "", MC, "verify every load against the architectural value (test mode; slower)"),
    // Hybrid memory: a page-granularity DRAM cache between the LLC and NVM.
    p!("run.transactions", bool true, "", "dual-page checkpointing paper §3.1/§5.1.3 (checkpointing runs ordinary programs)", "false: programs without transactions: each workload operation runs as plain code (no TxBegin/TxEnd reach the scheme, no serialisation between operations); headline metrics are execution_time_ns and ipc"),
    p!("hybrid.dram_cache_bytes", int 0, "bytes", Check::Range(0.0, 1.1e12), "dual-page checkpointing paper §5.1.1 (256 MB DDR3 DRAM cache; configs/dpc.toml); 0 here so the default machine is unchanged", "DRAM cache between the LLC and NVM, managed by the memory controller at 4 KiB pages (0 = no DRAM cache); a multiple of hybrid.dram_cache_ways x 4 KiB"),
    p!("hybrid.dram_cache_ways", int 64, "ways", Check::PowerOfTwo(1, 1 << 20), "modelling choice, docs/MODEL.md (the paper gives LRU only; HybridSim-style set-associative page cache)", "DRAM cache associativity in pages (LRU within a set); as large as the cache = fully associative"),
    p!("hybrid.warm_start", bool true, "", "dual-page checkpointing paper §5.1.3 (\"we run a warm-up phase and evaluate 1.5B instructions\")", "true: the DRAM cache starts holding the pages the workload's setup wrote (clean, in page order, as a write-allocating cache holds a program's data after it loads them), so a short run measures the warmed cache a long warm-up reaches; false: it starts empty and every first touch of a page is a fill"),
    p!("hybrid.cpt_lookup_cycles", int 16, "cycles", Check::Range(0.0, 10000.0), "dual-page checkpointing paper §5.1.1 (DPT/CPT lookup 16 cycles)", "cache page table (CPT) lookup on every LLC miss and write-back that reaches the DRAM cache"),
    // Optane-like DIMM (mem/optane.rs): an on-DIMM controller behind the ADR write-pending queue.
    p!("dimm.model", str "none", &["none", "optane"], "modelling choice: off by default so the HOOP machine is unchanged; EHOU paper \u{a7}II-B and Fig. 1 (Optane DIMM: on-DIMM controller, AIT in the media, AIT cache in on-DIMM DRAM)", "none: the controller drives the media directly; optane: every access is translated through the DIMM's AIT (AIT cache in on-DIMM DRAM, AIT entries read from the media on a miss), the media is accessed in dimm.media_block_bytes blocks (a partial block write is a read-modify-write) behind a write-combining buffer of dimm.wcb_blocks blocks"),
    p!("dimm.ait_granularity_bytes", int 256, "bytes", Check::PowerOfTwo(64, 4096), "EHOU paper \u{a7}II-B (\"The address mapping granularity is 256 bytes\"); EHOU itself remaps cache lines (\u{a7}I), docs/MODEL.md", "bytes of physical address space one AIT entry maps (the AIT cache is indexed by this block number)"),
    p!("dimm.ait_cache_sets", int 8192, "sets", Check::PowerOfTwo(1, 1 << 24), "EHOU paper Table I (AIT cache: 8192 sets, 16 ways, 100 cycles, 64 MB)", "AIT cache sets (on-DIMM DRAM, inside the persistence domain)"),
    p!("dimm.ait_cache_ways", int 16, "ways", Check::Range(1.0, 256.0), "EHOU paper Table I (AIT cache: 8192 sets, 16 ways, 100 cycles, 64 MB)", "AIT cache ways (LRU within a set)"),
    p!("dimm.ait_cache_latency_cycles", int 100, "cycles", Check::Range(0.0, 100000.0), "EHOU paper Table I (AIT cache: 100 cycles)", "AIT cache lookup on every access (core cycles); a miss adds a media read of the AIT entry"),
    p!("dimm.media_block_bytes", int 256, "bytes", Check::PowerOfTwo(64, 4096), "Izraelevitz et al. 2019 (arXiv:1903.05714: Optane DIMMs access the media in 256 B units) and Yang et al., FAST 2020 (\u{a7}3: the 256 B XPLine)", "internal access granularity of the media: a write covering part of a block is a read-modify-write of the block"),
    p!("dimm.wcb_blocks", int 64, "blocks", Check::Range(1.0, 65536.0), "Yang et al., FAST 2020 (\u{a7}3: the XPBuffer write-combining buffer, estimated at 16 KB = 64 x 256 B XPLines)", "on-DIMM write-combining buffer in media blocks (LRU): writes to a buffered block combine; an evicted block is programmed, with a read first if it was partly written"),
];

/// A validated set of parameters.
#[derive(Clone, Debug)]
pub struct Params {
    values: BTreeMap<&'static str, Value>,
    specs: BTreeMap<&'static str, &'static ParamSpec>,
}

impl Params {
    /// Defaults of the engine plus every given spec list (schemes).
    pub fn defaults(extra: &[&'static [ParamSpec]]) -> Self {
        let mut values = BTreeMap::new();
        let mut specs = BTreeMap::new();
        for list in std::iter::once(&ENGINE_PARAMS).chain(extra.iter()) {
            for s in list.iter() {
                values.insert(s.key, s.default.value());
                specs.insert(s.key, s);
            }
        }
        Params { values, specs }
    }

    pub fn specs(&self) -> impl Iterator<Item = &'static ParamSpec> + '_ {
        self.specs.values().copied()
    }

    /// Set `key` from a string (as given to `--set key=value`). Sizes take
    /// binary suffixes (`4M`, `4MB`, `4 MiB`, `64B`), times their unit or a
    /// neighbour (`250ns`, `0.25us` for a key in ns). Errors echo `raw`.
    pub fn set_str(&mut self, key: &str, raw: &str) -> Result<()> {
        let spec = self.spec(key)?;
        let v = match spec.default {
            DefaultValue::Int(_) => parse_int(raw, spec.unit).map(Value::Int),
            DefaultValue::Float(_) => parse_float(raw, spec.unit).map(Value::Float),
            DefaultValue::Bool(_) => match raw.trim() {
                "true" | "1" | "yes" | "on" => Some(Value::Bool(true)),
                "false" | "0" | "no" | "off" => Some(Value::Bool(false)),
                _ => None,
            },
            DefaultValue::Str(_) => Some(Value::Str(raw.trim().to_string())),
        };
        let forms = accepted_forms(spec);
        let v = v.ok_or_else(|| {
            Error::input(format!(
                "invalid value '{raw}' for '{key}': expected {} ({}){forms}",
                spec.default.type_name(),
                describe_check(spec)
            ))
        })?;
        let shown = v.to_string();
        self.set(key, v).map_err(|_| {
            let converted = if shown == raw.trim() {
                String::new()
            } else {
                format!(" (= {shown})")
            };
            let hint = match spec.check {
                Check::OneOf(choices) => did_you_mean(raw.trim(), choices),
                _ => String::new(),
            };
            Error::input(format!(
                "invalid value '{raw}'{converted} for '{key}'{hint}: expected {} ({}){forms}",
                spec.default.type_name(),
                describe_check(spec)
            ))
        })
    }

    /// Set `key` to a typed value, validating it.
    pub fn set(&mut self, key: &str, v: Value) -> Result<()> {
        let spec = self.spec(key)?;
        let v = match (spec.default, v) {
            (DefaultValue::Float(_), Value::Int(i)) => Value::Float(i as f64),
            (_, v) => v,
        };
        let ok_type = matches!(
            (spec.default, &v),
            (DefaultValue::Int(_), Value::Int(_))
                | (DefaultValue::Float(_), Value::Float(_))
                | (DefaultValue::Bool(_), Value::Bool(_))
                | (DefaultValue::Str(_), Value::Str(_))
        );
        let ok = ok_type
            && match (spec.check, &v) {
                (Check::Any, _) => true,
                (Check::Range(lo, hi), Value::Int(i)) => (*i as f64) >= lo && (*i as f64) <= hi,
                (Check::Range(lo, hi), Value::Float(x)) => x.is_finite() && *x >= lo && *x <= hi,
                (Check::PowerOfTwo(lo, hi), Value::Int(i)) => {
                    i.is_power_of_two() && *i >= lo && *i <= hi
                }
                (Check::OneOf(choices), Value::Str(s)) => choices.contains(&s.as_str()),
                _ => false,
            };
        if !ok {
            // A misspelt choice gets a suggestion.
            let hint = match (spec.check, &v) {
                (Check::OneOf(choices), Value::Str(s)) => did_you_mean(s, choices),
                _ => String::new(),
            };
            return Err(Error::input(format!(
                "invalid value '{v}' for '{key}'{hint}: expected {} ({})",
                spec.default.type_name(),
                describe_check(spec)
            )));
        }
        self.values.insert(spec.key, v);
        Ok(())
    }

    /// Apply a TOML document: `[section] key = value` maps to `section.key`.
    pub fn apply_toml(&mut self, text: &str, origin: &str) -> Result<()> {
        let table: toml::Table = text
            .parse()
            .map_err(|e| Error::input(format!("cannot parse config {origin}: {e}")))?;
        let mut flat = Vec::new();
        flatten("", &toml::Value::Table(table), &mut flat);
        for (key, tv) in flat {
            let v = match tv {
                toml::Value::Integer(i) if i >= 0 => Value::Int(i as u64),
                toml::Value::Float(f) => Value::Float(f),
                toml::Value::Boolean(b) => Value::Bool(b),
                // A size or time with its unit ("4MB", "300ns") is read
                // exactly as `--set` reads it.
                toml::Value::String(s)
                    if self
                        .spec(&key)
                        .is_ok_and(|sp| !matches!(sp.default, DefaultValue::Str(_))) =>
                {
                    self.set_str(&key, &s)
                        .map_err(|e| Error::input(format!("{origin}: {e}")))?;
                    continue;
                }
                toml::Value::String(s) => Value::Str(s),
                other => {
                    return Err(Error::input(format!(
                        "invalid value {other} for '{key}' in {origin}"
                    )))
                }
            };
            self.set(&key, v)
                .map_err(|e| Error::input(format!("{origin}: {e}")))?;
        }
        Ok(())
    }

    fn spec(&self, key: &str) -> Result<&'static ParamSpec> {
        self.specs.get(key).copied().ok_or_else(|| {
            let section = key.split('.').next().unwrap_or("");
            let mut same: Vec<&str> = self
                .specs
                .keys()
                .filter(|k| k.split('.').next() == Some(section))
                .copied()
                .collect();
            if same.is_empty() {
                same = self.specs.keys().copied().collect();
            }
            let all: Vec<&str> = self.specs.keys().copied().collect();
            Error::input(format!(
                "unknown parameter '{key}'{}; valid keys: {}",
                did_you_mean(key, &all),
                same.join(", ")
            ))
        })
    }

    pub fn get(&self, key: &str) -> &Value {
        self.values
            .get(key)
            .unwrap_or_else(|| panic!("parameter '{key}' is not declared (programming error)"))
    }

    pub fn u64(&self, key: &str) -> u64 {
        match self.get(key) {
            Value::Int(v) => *v,
            other => panic!("parameter '{key}' is {other:?}, not an integer"),
        }
    }

    pub fn usize(&self, key: &str) -> usize {
        self.u64(key) as usize
    }

    pub fn f64(&self, key: &str) -> f64 {
        match self.get(key) {
            Value::Float(v) => *v,
            Value::Int(v) => *v as f64,
            other => panic!("parameter '{key}' is {other:?}, not a number"),
        }
    }

    pub fn bool(&self, key: &str) -> bool {
        match self.get(key) {
            Value::Bool(v) => *v,
            other => panic!("parameter '{key}' is {other:?}, not a bool"),
        }
    }

    pub fn str(&self, key: &str) -> &str {
        match self.get(key) {
            Value::Str(v) => v,
            other => panic!("parameter '{key}' is {other:?}, not a string"),
        }
    }

    /// Convert a nanosecond parameter to core cycles (rounded up).
    pub fn ns_cycles(&self, key: &str) -> u64 {
        ns_to_cycles(self.f64(key), self.f64("cpu.freq_ghz"))
    }

    /// All values as a nested JSON object (`{"cpu": {"freq_ghz": 2.5}, ...}`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut root = serde_json::Map::new();
        for (k, v) in &self.values {
            let (sec, name) = k.split_once('.').unwrap_or(("", k));
            root.entry(sec.to_string())
                .or_insert_with(|| serde_json::Value::Object(Default::default()))
                .as_object_mut()
                .unwrap()
                .insert(name.to_string(), v.to_json());
        }
        serde_json::Value::Object(root)
    }

    /// Keys and values that differ from the defaults.
    pub fn overrides(&self) -> Vec<(&'static str, &Value)> {
        self.values
            .iter()
            .filter(|(k, v)| self.specs[*k].default.value() != **v)
            .map(|(k, v)| (*k, v))
            .collect()
    }
}

/// Largest `--config` file read (bytes). Presets are a few KiB; the bound
/// keeps `--config /dev/zero` or `/dev/urandom` from reading without end.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Read a TOML preset with a size bound (exit-2 errors name the file).
pub fn read_config(path: &str) -> Result<String> {
    use std::io::Read;
    let f = std::fs::File::open(path)
        .map_err(|e| Error::input(format!("cannot read --config {path}: {e}")))?;
    let mut buf = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::input(format!("cannot read --config {path}: {e}")))?;
    if buf.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Error::input(format!(
            "invalid --config {path}: larger than {MAX_CONFIG_BYTES} bytes (a preset is a small TOML file)"
        )));
    }
    String::from_utf8(buf).map_err(|_| {
        Error::input(format!(
            "invalid --config {path}: not UTF-8 text (expected a TOML preset)"
        ))
    })
}

/// Ceiling of `--tx` for `run` and `compare` (modelling choice: at the
/// simulator's 0.1-1 M tx per host second this is hours of host time, and
/// each measured transaction keeps a 4-byte latency sample).
pub const MAX_RUN_TX: u64 = 1_000_000_000;
/// Ceiling of `--tx` for `crashtest`: the recorded history (every committed
/// write and every persist event with its bytes) grows with the run, and an
/// exhaustive crash test costs one recovery per persist event.
pub const MAX_CRASHTEST_TX: u64 = 10_000_000;

/// Cross-field checks of a run's parameters, before any work starts: the
/// `--tx` ceiling, cache geometry and NVM alignment (the workload's
/// footprint is checked against them by engine/footprint.rs).
pub fn validate_run(p: &Params, tx: u64, history: bool) -> Result<()> {
    let (ceiling, what) = if history {
        (MAX_CRASHTEST_TX, "crashtest")
    } else {
        (MAX_RUN_TX, "run and compare")
    };
    if tx > ceiling {
        return Err(Error::input(format!(
            "invalid value '{tx}' for 'tx': expected at most {ceiling} for {what} (the documented ceiling, docs/guide/configuration-and-presets.md 'Input limits')"
        )));
    }
    let line = crate::types::LINE_BYTES;
    let mut prev: Option<(&str, u64)> = None;
    for level in ["l1", "l2", "llc"] {
        let size = p.u64(&format!("cache.{level}_size_bytes"));
        let ways = p.u64(&format!("cache.{level}_ways"));
        let lines = size / line;
        if ways > lines {
            return Err(Error::input(format!(
                "invalid value '{ways}' for 'cache.{level}_ways': cache.{level}_size_bytes={size} holds only {lines} lines; expected between 1 and {lines}"
            )));
        }
        if let Some((upper, upper_size)) = prev {
            if size < upper_size {
                return Err(Error::input(format!(
                    "invalid value '{size}' for 'cache.{level}_size_bytes': the hierarchy is inclusive, so it must be at least cache.{upper}_size_bytes ({upper_size}); expected a power of two >= {upper_size}"
                )));
            }
        }
        prev = Some((level, size));
    }
    let cap = p.u64("nvm.capacity_bytes");
    if !cap.is_multiple_of(line) {
        return Err(Error::input(format!(
            "invalid value '{cap}' for 'nvm.capacity_bytes': expected a multiple of the 64 B line (e.g. {})",
            cap / line * line
        )));
    }
    Ok(())
}

pub fn ns_to_cycles(ns: f64, freq_ghz: f64) -> u64 {
    (ns * freq_ghz - 1e-9).ceil().max(0.0) as u64
}

/// Split `4 MiB` / `250ns` / `0x10` into the number and its (lower-case,
/// trimmed) suffix.
fn split_suffix(raw: &str) -> (String, String) {
    let s = raw.trim().replace('_', "");
    if s.starts_with("0x") || s.starts_with("0X") {
        return (s, String::new());
    }
    let cut = s
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(cut);
    (num.trim().to_string(), suffix.trim().to_ascii_lowercase())
}

/// Multiplier of a size suffix (binary: 1 K = 1024), `None` if unknown.
fn size_multiplier(suffix: &str) -> Option<u64> {
    Some(match suffix {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    })
}

/// Nanoseconds per unit of a time suffix.
fn time_ns(suffix: &str) -> Option<f64> {
    Some(match suffix {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    })
}

fn parse_int(raw: &str, unit: &str) -> Option<u64> {
    let (num, suffix) = split_suffix(raw);
    let mult = if unit == "bytes" {
        size_multiplier(&suffix)?
    } else if suffix.is_empty() || suffix == unit {
        1
    } else {
        return None;
    };
    let n = match num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => num.parse::<u64>().ok()?,
    };
    n.checked_mul(mult)
}

fn parse_float(raw: &str, unit: &str) -> Option<f64> {
    let (num, suffix) = split_suffix(raw);
    let x = num.parse::<f64>().ok()?;
    if suffix.is_empty() || suffix == unit.to_ascii_lowercase() {
        return Some(x);
    }
    // A time given in another unit than the key's (0.25us for a key in ns).
    Some(x * time_ns(&suffix)? / time_ns(unit)?)
}

/// The spellings a parameter accepts, for error messages.
fn accepted_forms(spec: &ParamSpec) -> String {
    match (spec.default, spec.unit) {
        (DefaultValue::Int(_), "bytes") => {
            "; sizes are written 4194304, 4096K, 4M, 4MB, 4MiB or 4 MB (binary units)".into()
        }
        (DefaultValue::Float(_), u) if time_ns(u).is_some() => {
            format!("; times are written 250 or 250{u} (ns, us, ms and s are converted to {u})")
        }
        _ => String::new(),
    }
}

/// Edit distance between two names (insertions, deletions, substitutions).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The valid names closest to `word`: within an edit distance of about a
/// third of its length, or containing it / contained in it; best first.
pub fn suggestions<'a>(word: &str, valid: &[&'a str]) -> Vec<&'a str> {
    let w = word.to_ascii_lowercase();
    let last = |s: &str| s.rsplit('.').next().unwrap_or("").to_string();
    let limit = (w.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, &str)> = valid
        .iter()
        .filter_map(|&v| {
            let lv = v.to_ascii_lowercase();
            let d = edit_distance(&w, &lv).min(edit_distance(&last(&w), &last(&lv)) + 1);
            let contains = w.len() >= 3 && (lv.contains(&w) || w.contains(&lv));
            (d <= limit || contains).then_some((if contains { d.min(limit) } else { d }, v))
        })
        .collect();
    scored.sort_by_key(|&(d, v)| (d, v));
    scored.into_iter().take(3).map(|(_, v)| v).collect()
}

/// ` (did you mean 'x'?)` (or `'x' or 'y'`), empty when nothing is close.
pub fn did_you_mean(word: &str, valid: &[&str]) -> String {
    let s = suggestions(word, valid);
    if s.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = s.iter().map(|v| format!("'{v}'")).collect();
    format!(" (did you mean {}?)", quoted.join(" or "))
}

fn describe_check(spec: &ParamSpec) -> String {
    match spec.check {
        Check::Any => "any".into(),
        Check::Range(lo, hi) => format!("between {lo} and {hi}"),
        Check::PowerOfTwo(lo, hi) => format!("a power of two between {lo} and {hi}"),
        Check::OneOf(c) => format!("one of: {}", c.join(", ")),
    }
}

fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_names_valid_keys() {
        let mut p = Params::defaults(&[]);
        let e = p
            .set_str("cache.l9_size_bytes", "4")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cache.l9_size_bytes") && e.contains("cache.l1_size_bytes"),
            "{e}"
        );
    }

    #[test]
    fn power_of_two_and_types_are_checked() {
        let mut p = Params::defaults(&[]);
        assert!(p.set_str("cache.llc_size_bytes", "3000000").is_err());
        assert!(p.set_str("cache.llc_size_bytes", "4MB").is_ok());
        assert_eq!(p.u64("cache.llc_size_bytes"), 4 << 20);
        assert!(p.set_str("mc.adr", "maybe").is_err());
        assert!(p
            .set_str("nvm.write_model", "magic")
            .unwrap_err()
            .to_string()
            .contains("dcw"));
        assert!(p.set_str("nvm.array_read_ns", "250").is_ok());
        assert_eq!(p.ns_cycles("nvm.array_read_ns"), 625);
    }

    #[test]
    fn toml_presets_take_units_as_set_does() {
        let mut p = Params::defaults(&[]);
        p.apply_toml(
            "[cache]\nllc_size_bytes = \"4MB\"\n[nvm]\narray_write_ns = \"300ns\"\nwrite_model = \"tlc\"\n",
            "t.toml",
        )
        .unwrap();
        let mut q = Params::defaults(&[]);
        q.set_str("cache.llc_size_bytes", "4MB").unwrap();
        q.set_str("nvm.array_write_ns", "300ns").unwrap();
        q.set_str("nvm.write_model", "tlc").unwrap();
        for k in [
            "cache.llc_size_bytes",
            "nvm.array_write_ns",
            "nvm.write_model",
        ] {
            assert_eq!(p.get(k), q.get(k), "{k}");
        }
        assert_eq!(p.u64("cache.llc_size_bytes"), 4 << 20);
        // A bad unit names the file and the field, as --set's error does.
        let e = Params::defaults(&[])
            .apply_toml("[cache]\nllc_size_bytes = \"4 furlongs\"\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.toml") && e.contains("cache.llc_size_bytes") && e.contains("4 furlongs"),
            "{e}"
        );
    }

    #[test]
    fn size_and_time_spellings() {
        let mut p = Params::defaults(&[]);
        for raw in [
            "4M",
            "4 MB",
            "4MiB",
            "4MB",
            "4mb",
            "4096K",
            "4194304",
            "4_194_304",
        ] {
            p.set_str("cache.llc_size_bytes", raw).unwrap();
            assert_eq!(p.u64("cache.llc_size_bytes"), 4 << 20, "{raw}");
        }
        let e = p
            .set_str("cache.llc_size_bytes", "3MB")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'3MB' (= 3145728)") && e.contains("power of two"),
            "{e}"
        );
        let e = p
            .set_str("cache.llc_size_bytes", "4 furlongs")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'4 furlongs'") && e.contains("4MiB"), "{e}");
        for (raw, ns) in [
            ("250ns", 250.0),
            ("250 ns", 250.0),
            ("0.25us", 250.0),
            ("250", 250.0),
        ] {
            p.set_str("nvm.array_read_ns", raw).unwrap();
            assert_eq!(p.f64("nvm.array_read_ns"), ns, "{raw}");
        }
        let e = p
            .set_str("nvm.array_read_ns", "250 parsecs")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'250 parsecs'") && e.contains("250ns"), "{e}");
    }

    #[test]
    fn did_you_mean_suggests_close_names() {
        let mut p = Params::defaults(&[]);
        let e = p.set_str("cache.llc_size", "4M").unwrap_err().to_string();
        assert!(e.contains("did you mean 'cache.llc_size_bytes'"), "{e}");
        let e = p.set_str("nvm.array_raed_ns", "4").unwrap_err().to_string();
        assert!(e.contains("did you mean 'nvm.array_read_ns'"), "{e}");
        assert_eq!(suggestions("hop", &["hoop", "lad", "ideal"]), vec!["hoop"]);
        assert_eq!(
            suggestions("redo", &["opt-redo", "opt-undo"])[0],
            "opt-redo"
        );
        assert_eq!(did_you_mean("zzzzzz", &["hoop", "lad"]), "");
    }

    #[test]
    fn toml_sections_flatten() {
        let mut p = Params::defaults(&[]);
        p.apply_toml(
            "[cache]\nl1_ways = 8\n[nvm]\narray_write_ns = 300\n",
            "test",
        )
        .unwrap();
        assert_eq!(p.u64("cache.l1_ways"), 8);
        assert_eq!(p.f64("nvm.array_write_ns"), 300.0);
        assert!(p.apply_toml("[cache]\nbogus = 1\n", "test").is_err());
    }
}
