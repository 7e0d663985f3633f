//! Data-aware NVM media: the cells behind the memory controller, the
//! encoders on the DIMM's write path and the decoders on its read path.
//!
//! Enabled by `nvm.write_model = "tlc"` (TLC RRAM, MorLog Table III) or
//! `nvm.encoding != "none"`; otherwise the controller never builds it and
//! its write path is unchanged. A 64 B line is stored in 171 data cells of
//! 3 bits (513 bits) plus tag cells (6 bits: line type, expansion mode,
//! log-metadata bit; 3 cells at 2 bits each). A write encodes the whole line, compares the new cell
//! states with the stored ones (differential write, DCW: Zhou et al., ISCA
//! 2009) and programs only the changed cells: the write latency is the
//! slowest programmed state, the energy the sum over programmed cells.
//! Data cells past the end of a compressed stream are not part of the code
//! and keep their old state (no programming).

pub mod bits;
pub mod dldc;
pub mod fpc;
pub mod idm;
pub mod packed;
#[cfg(test)]
mod reference;
mod store;

use crate::config::Params;
use crate::types::{Addr, Cycle, LineData, Purpose};
use bits::{BitReader, BitWriter};
use packed::Packed;
use store::LineStore;

/// Data cells of a line (513 bits at 3 bits per cell).
pub const DATA_CELLS: usize = 171;
/// Tag cells of a line: 6 tag bits at 2 bits per cell in the four
/// cheapest states (the IDM rule applied to the tags, so a tag change never
/// programs a slow state).
pub const TAG_CELLS: usize = 3;
pub const CELLS: usize = DATA_CELLS + TAG_CELLS;
pub type Cells = [u8; CELLS];

/// Line types (2 tag bits).
const RAW: u64 = 0;
const FPC: u64 = 1;
const DLDC: u64 = 2;

/// Encoder on the write path (`nvm.encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    None,
    Fpc,
    Crade,
    Slde,
}

impl Encoding {
    pub fn parse(s: &str) -> Self {
        match s {
            "fpc" => Encoding::Fpc,
            "crade" => Encoding::Crade,
            "slde" => Encoding::Slde,
            _ => Encoding::None,
        }
    }
}

/// MorLog Table III, TLC RRAM write latency (ns) per target state 000..111.
pub const TABLE3_WRITE_NS: [f64; 8] = [15.2, 46.8, 98.3, 143.0, 150.0, 101.0, 52.7, 12.1];
/// MorLog Table III, TLC RRAM write energy (pJ per cell) per target state.
pub const TABLE3_WRITE_PJ: [f64; 8] = [2.0, 6.7, 19.3, 35.1, 35.6, 19.6, 8.5, 1.5];

/// Counters of the data-aware media (all zero when it is off).
#[derive(Clone, Debug, Default)]
pub struct MediaStats {
    /// Line writes programmed, by purpose.
    pub line_writes: [u64; Purpose::COUNT],
    /// Stored bits that changed, and cells programmed, by purpose.
    pub bits_programmed: [u64; Purpose::COUNT],
    pub cells_programmed: [u64; Purpose::COUNT],
    /// Programmed cells by target state 000..111.
    pub cells_by_state: [u64; 8],
    /// Cell programming energy (pJ) and write latency (ns, the slowest
    /// programmed cell of each line write, summed) by purpose.
    pub write_energy_pj: [f64; Purpose::COUNT],
    pub write_latency_ns: [f64; Purpose::COUNT],
    /// Line writes that programmed no cell (all cells unchanged).
    pub silent_writes: u64,
    /// Log line writes that programmed no cell.
    pub silent_log_writes: u64,
    /// Log words whose DLDC dirty flags were all clean (SLDE, log lines
    /// stored with DLDC).
    pub clean_log_words: u64,
    /// Lines stored raw, FPC-compressed, DLDC-compressed.
    pub lines_by_type: [u64; 3],
    /// Lines by expansion mode (3 bits/cell, 5 bits/2 cells, 2 bits/cell,
    /// 1 bit/cell); raw lines not counted.
    pub expansion_modes: [u64; 4],
    /// Input and output bits of each compressor when it was chosen:
    /// [fpc, dldc].
    pub compress_in_bits: [u64; 2],
    pub compress_out_bits: [u64; 2],
    /// Writes of lines in a scheme's log region ([`Media::set_log_region`]).
    pub log_line_writes: u64,
    /// Log bits as MorLog counts them (§VI-C: "log bits written with
    /// expansion coding disabled"): the code-word bits of every log line
    /// write, tags + the design's compressed stream (FPC for CRADE, DLDC
    /// or FPC for SLDE; the raw 512 bits without an encoder), one stored
    /// bit per code bit (no expansion).
    pub log_bits_written: u64,
    /// Of those, the bits that differ from the code word stored before
    /// (what a DCW device programs without expansion, Fig. 4).
    pub log_bits_programmed: u64,
}

impl MediaStats {
    pub fn to_json(&self) -> serde_json::Value {
        let by_purpose = |v: &[u64; Purpose::COUNT]| {
            let m: serde_json::Map<String, serde_json::Value> = Purpose::ALL
                .iter()
                .map(|p| (p.name().to_string(), serde_json::json!(v[p.index()])))
                .collect();
            serde_json::Value::Object(m)
        };
        let by_purpose_f = |v: &[f64; Purpose::COUNT]| {
            let m: serde_json::Map<String, serde_json::Value> = Purpose::ALL
                .iter()
                .map(|p| (p.name().to_string(), serde_json::json!(v[p.index()])))
                .collect();
            serde_json::Value::Object(m)
        };
        let ratio = |i: usize| {
            if self.compress_out_bits[i] == 0 {
                0.0
            } else {
                self.compress_in_bits[i] as f64 / self.compress_out_bits[i] as f64
            }
        };
        serde_json::json!({
            "line_writes": by_purpose(&self.line_writes),
            "bits_programmed": by_purpose(&self.bits_programmed),
            "bits_programmed_total": self.bits_programmed.iter().sum::<u64>(),
            "cells_programmed": by_purpose(&self.cells_programmed),
            "cells_programmed_total": self.cells_programmed.iter().sum::<u64>(),
            "cells_by_state": (0..8).map(|s| (format!("{s:03b}"), serde_json::json!(self.cells_by_state[s])))
                .collect::<serde_json::Map<_, _>>(),
            "write_energy_pj": by_purpose_f(&self.write_energy_pj),
            "write_energy_pj_total": self.write_energy_pj.iter().sum::<f64>(),
            "write_latency_ns": by_purpose_f(&self.write_latency_ns),
            "write_latency_ns_mean": by_purpose_f(&std::array::from_fn(|i| {
                self.write_latency_ns[i] / self.line_writes[i].max(1) as f64
            })),
            "silent_writes": self.silent_writes,
            "silent_log_writes": self.silent_log_writes,
            "clean_log_words": self.clean_log_words,
            "lines_raw": self.lines_by_type[0],
            "lines_fpc": self.lines_by_type[1],
            "lines_dldc": self.lines_by_type[2],
            "expansion_modes": {
                "3bit_per_cell": self.expansion_modes[0],
                "5bit_per_2cells": self.expansion_modes[1],
                "2bit_per_cell": self.expansion_modes[2],
                "1bit_per_cell": self.expansion_modes[3],
            },
            "compression_ratio_fpc": ratio(0),
            "compression_ratio_dldc": ratio(1),
            "log_line_writes": self.log_line_writes,
            "log_bits_written": self.log_bits_written,
            "log_bits_programmed": self.log_bits_programmed,
        })
    }
}

/// One encoded line: the stream and its tag fields.
struct Encoded {
    stream: BitWriter,
    kind: u64,
    mode: usize,
    log_meta: bool,
    /// Compressor used (0 fpc, 1 dldc) and its input/output bits.
    comp: Option<(usize, u64)>,
    clean_words: u64,
}

impl Encoded {
    /// No stream yet, raw, no compressor: what each encoder starts from.
    fn raw_empty() -> Self {
        Encoded {
            stream: BitWriter::default(),
            kind: RAW,
            mode: 0,
            log_meta: false,
            comp: None,
            clean_words: 0,
        }
    }
}

/// The data-aware media: stored cells of every written line and the cost
/// model.
pub struct Media {
    pub encoding: Encoding,
    tlc: bool,
    write_ns: [f64; 8],
    write_pj: [f64; 8],
    /// Non-TLC devices (one bit per stored bit, DCW): energy per changed
    /// bit and the fixed programming time.
    slc_pj_per_bit: f64,
    slc_write_ns: f64,
    freq_ghz: f64,
    /// Stored cells of every written line, packed, and the unexpanded
    /// code word last stored in each log line (`log_bits_programmed`
    /// compares against it).
    store: LineStore,
    /// The log region `[lo, hi)` a logging scheme declared (empty: none).
    log_lo: Addr,
    log_hi: Addr,
    /// The last stored cells whose code word a first log write derived,
    /// and that code word: a log region's lines hold the same setup
    /// content (zeros) when first written, so the derivation is usually
    /// the one before.
    first_flat: Option<(Packed, Flat)>,
    /// The last setup content a first store encoded and its cells: a log
    /// region's lines all hold the same content (zeros) before their
    /// first write, so the encoding is usually the one before.
    first_cells: Option<(LineData, Packed)>,
}

/// A code word laid out one stored bit per code bit: 6 tag bits, then the
/// stream (at most 513 bits; longer lines are stored raw, 512).
type Flat = [u64; 9];

impl Media {
    /// The media of `p`, or `None` when the device is not data-aware (the
    /// controller's default path).
    pub fn from_params(p: &Params) -> Option<Box<Media>> {
        let tlc = p.str("nvm.write_model") == "tlc";
        let encoding = Encoding::parse(p.str("nvm.encoding"));
        if !tlc && encoding == Encoding::None {
            return None;
        }
        let states = ["000", "001", "010", "011", "100", "101", "110", "111"];
        Some(Box::new(Media {
            encoding,
            tlc,
            write_ns: std::array::from_fn(|s| p.f64(TLC_NS_KEYS[s])),
            write_pj: std::array::from_fn(|s| {
                debug_assert!(TLC_PJ_KEYS[s].ends_with(states[s]));
                p.f64(TLC_PJ_KEYS[s])
            }),
            slc_pj_per_bit: p.f64("nvm.array_write_pj_per_bit"),
            slc_write_ns: p.f64("nvm.array_write_ns"),
            freq_ghz: p.f64("cpu.freq_ghz"),
            store: LineStore::new(),
            log_lo: 0,
            log_hi: 0,
            first_flat: None,
            first_cells: None,
        }))
    }

    /// A media with explicit costs (tests).
    pub fn new(encoding: Encoding, tlc: bool, freq_ghz: f64) -> Self {
        Media {
            encoding,
            tlc,
            write_ns: TABLE3_WRITE_NS,
            write_pj: TABLE3_WRITE_PJ,
            slc_pj_per_bit: 16.82,
            slc_write_ns: 150.0,
            freq_ghz,
            store: LineStore::new(),
            log_lo: 0,
            log_hi: 0,
            first_flat: None,
            first_cells: None,
        }
    }

    /// A logging scheme's log region (`bytes` from `base`): its line
    /// writes are counted as log bits.
    pub fn set_log_region(&mut self, base: Addr, bytes: u64) {
        self.log_lo = base;
        self.log_hi = base + bytes;
    }

    /// Make sure `line` has stored cells: a line never programmed holds
    /// `current` (its setup content) encoded as data.
    pub fn ensure(&mut self, line: Addr, current: &LineData) {
        self.ensure_with(line, || *current);
    }

    /// [`Self::ensure`] with the setup content read only when the line has
    /// no stored cells yet.
    #[inline]
    pub fn ensure_with(&mut self, line: Addr, current: impl FnOnce() -> LineData) {
        self.slot_of(line, current);
    }

    /// The slot of `line`'s stored cells, first storing `current()` encoded
    /// as data if it has none.
    #[inline]
    fn slot_of(&mut self, line: Addr, current: impl FnOnce() -> LineData) -> u32 {
        let encoding = self.encoding;
        let last = &mut self.first_cells;
        self.store.slot_or_insert(line, || {
            let data = current();
            if let Some((d, c)) = last {
                if *d == data {
                    return *c;
                }
            }
            let mut c = [0u64; packed::WORDS];
            place(&encode(encoding, &data, Purpose::WriteBack), &mut c);
            *last = Some((data, c));
            c
        })
    }

    /// Program `data` into `line`'s cells. Returns the bank's programming
    /// time (cycles) and the energy (pJ); updates `st`.
    pub fn program(
        &mut self,
        line: Addr,
        data: &LineData,
        purpose: Purpose,
        st: &mut MediaStats,
    ) -> (Cycle, f64) {
        if self.encoding == Encoding::None {
            return self.program_raw(line, data, purpose, st);
        }
        let e = self.encode(data, purpose);
        // Never ensured (direct use): the line held zeros.
        let i = self.slot_of(line, || [0u8; 64]);
        let old = self.store.lines.get(i).cells;
        if line >= self.log_lo && line < self.log_hi {
            self.count_log_bits(i, &old, &e, st);
        }
        let cells = &mut self.store.lines.get_mut(i).cells;
        place(&e, cells);
        let new = *cells;
        let (ns, pj) = self.cost(&old, &new, purpose, st);
        if e.kind != RAW {
            st.expansion_modes[e.mode] += 1;
        }
        if let Some((i, out)) = e.comp {
            st.compress_in_bits[i] += 512;
            st.compress_out_bits[i] += out;
        }
        st.clean_log_words += e.clean_words;
        (self.line_written(ns, e.kind, purpose, st), pj)
    }

    /// The counters every programmed line adds (its write, its type, a
    /// silent write) and its programming time in cycles.
    #[inline]
    fn line_written(&self, ns: f64, kind: u64, purpose: Purpose, st: &mut MediaStats) -> Cycle {
        st.line_writes[purpose.index()] += 1;
        st.lines_by_type[kind as usize] += 1;
        if ns == 0.0 {
            st.silent_writes += 1;
            if purpose == Purpose::Log {
                st.silent_log_writes += 1;
            }
        }
        (ns * self.freq_ghz).ceil() as Cycle
    }

    /// [`Self::program`] without an encoder: every line is stored raw
    /// (tag 0, the 512 data bits in the first 512 cell bits, cell bit 512
    /// zero), so the line is placed by copying its words, and its code
    /// word (tag 0, then the data) changes in exactly the bits its cells
    /// change: the log bits programmed are the cell bits programmed, and
    /// no code word needs to be kept.
    fn program_raw(
        &mut self,
        line: Addr,
        data: &LineData,
        purpose: Purpose,
        st: &mut MediaStats,
    ) -> (Cycle, f64) {
        let i = self.slot_of(line, || [0u8; 64]);
        let cells = &mut self.store.lines.get_mut(i).cells;
        let old = *cells;
        packed::place_raw(std::array::from_fn(|w| word(data, w)), RAW, cells);
        let new = *cells;
        let (ns, pj, bits) = self.cost_bits(&old, &new, purpose, st);
        if line >= self.log_lo && line < self.log_hi {
            st.log_line_writes += 1;
            st.log_bits_programmed += bits;
            st.log_bits_written += 6 + 512;
        }
        (self.line_written(ns, RAW, purpose, st), pj)
    }

    /// Log bits of a log line write: the new code word against the one
    /// stored (the first time, the one the old cells decode to, as stored
    /// by a data write).
    fn count_log_bits(&mut self, slot: u32, old: &Packed, e: &Encoded, st: &mut MediaStats) {
        let new_len = 6 + e.stream.len;
        let prev = match self.store.flat(slot) {
            Some(f) => *f,
            // (Without an encoder `program_raw` counts the log bits.)
            None => match self.first_flat {
                Some((cells, f)) if cells == *old => f,
                _ => {
                    let f = flat(&self.encode(&decode(old), Purpose::WriteBack));
                    self.first_flat = Some((*old, f));
                    f
                }
            },
        };
        let mut cur = flat(e);
        // Bits past the new code word keep their old state (as the cells).
        let (w, b) = (new_len / 64, new_len % 64);
        if w < cur.len() {
            let keep = !((1u64 << b) - 1);
            cur[w] = (cur[w] & !keep) | (prev[w] & keep);
            cur[w + 1..].copy_from_slice(&prev[w + 1..]);
        }
        let flipped = packed::ones(&std::array::from_fn(|i| prev[i] ^ cur[i]));
        st.log_line_writes += 1;
        st.log_bits_programmed += flipped;
        st.log_bits_written += new_len as u64;
        self.store.set_flat(slot, cur);
    }

    /// Cost of changing `old` into `new`: (latency ns, energy pJ). The
    /// energy adds the programmed cells' terms in cell order, so the sum
    /// rounds exactly as a cell-by-cell loop does.
    pub fn cost(
        &self,
        old: &Packed,
        new: &Packed,
        purpose: Purpose,
        st: &mut MediaStats,
    ) -> (f64, f64) {
        let (ns, pj, _) = self.cost_bits(old, new, purpose, st);
        (ns, pj)
    }

    /// [`Self::cost`], and the bits programmed.
    #[inline]
    fn cost_bits(
        &self,
        old: &Packed,
        new: &Packed,
        purpose: Purpose,
        st: &mut MediaStats,
    ) -> (f64, f64, u64) {
        let pi = purpose.index();
        let mut pj = 0.0f64;
        let ch = if self.tlc {
            let w = &self.write_pj;
            packed::diff(old, new, |s, _| pj += w[s])
        } else {
            let per_bit = self.slc_pj_per_bit;
            packed::diff(old, new, |_, flipped| pj += f64::from(flipped) * per_bit)
        };
        let mut ns = 0.0f64;
        if ch.cells > 0 {
            if self.tlc {
                for (s, &n) in ch.by_state.iter().enumerate() {
                    if n > 0 {
                        ns = ns.max(self.write_ns[s]);
                    }
                }
            } else {
                ns = self.slc_write_ns;
            }
        }
        st.bits_programmed[pi] += ch.bits;
        st.cells_programmed[pi] += ch.cells;
        for (t, n) in st.cells_by_state.iter_mut().zip(ch.by_state) {
            *t += n;
        }
        st.write_energy_pj[pi] += pj;
        st.write_latency_ns[pi] += ns;
        (ns, pj, ch.bits)
    }

    /// Lines with stored cells, sorted.
    pub fn lines(&self) -> Vec<Addr> {
        self.store.lines_sorted()
    }

    /// The stored cells of `line` (`None`: never written).
    pub fn cells_of(&self, line: Addr) -> Option<&Packed> {
        self.store
            .slot(line)
            .map(|i| &self.store.lines.get(i).cells)
    }

    /// The data stored in `line`'s cells, decoded (`None`: never written).
    pub fn stored(&self, line: Addr) -> Option<LineData> {
        self.cells_of(line).map(decode)
    }

    /// `data` as the read path returns it after the write path stored it:
    /// encode, place in blank cells, decode. Every encoder and mapping is
    /// lossless (the media tests check it for every encoding and purpose),
    /// so this is `data`: the controller records a persist event's bytes
    /// as written, and debug builds check them with this.
    pub fn roundtrip_decoded(&self, data: &LineData, purpose: Purpose) -> LineData {
        let e = self.encode(data, purpose);
        let mut c = [0u64; packed::WORDS];
        place(&e, &mut c);
        decode(&c)
    }

    fn encode(&self, data: &LineData, purpose: Purpose) -> Encoded {
        encode(self.encoding, data, purpose)
    }
}

/// `data` encoded by `encoding` for a write of `purpose`.
fn encode(encoding: Encoding, data: &LineData, purpose: Purpose) -> Encoded {
    let mut e = Encoded::raw_empty();
    let raw = |e: &mut Encoded| {
        e.stream.clear();
        for i in 0..8 {
            e.stream.words[i] = word(data, i);
        }
        e.stream.len = 512;
        e.kind = RAW;
    };
    match encoding {
        Encoding::None => raw(&mut e),
        Encoding::Fpc | Encoding::Crade | Encoding::Slde => {
            let log = encoding == Encoding::Slde && purpose == Purpose::Log;
            e.log_meta = encoding == Encoding::Slde && purpose == Purpose::Metadata;
            // Words classified once: sized now, written only if FPC wins.
            let plan = fpc::plan(data);
            let f = plan.bits;
            // A log line is DLDC-encoded at once: the stream's length is
            // its size (one pass over the words instead of a sizing pass
            // and an encoding pass); it is dropped if FPC or raw wins.
            let (d, clean) = if log {
                let clean = dldc_line_encode(data, &mut e.stream);
                (e.stream.len, clean)
            } else {
                (usize::MAX, 0)
            };
            let n = f.min(d);
            if n > idm::CAPACITY_BITS[0] {
                raw(&mut e);
            } else {
                if d < f {
                    e.clean_words = clean;
                    e.kind = DLDC;
                    e.comp = Some((1, d as u64));
                } else {
                    if log {
                        e.stream.clear();
                    }
                    plan.write(&mut e.stream);
                    e.kind = FPC;
                    e.comp = Some((0, f as u64));
                }
                e.mode = if encoding == Encoding::Fpc {
                    0
                } else {
                    idm::sparsest_mode(n)
                };
            }
        }
    }
    e
}

/// Per-state cost parameters (config keys, Table III order 000..111).
pub const TLC_NS_KEYS: [&str; 8] = [
    "nvm.tlc_write_ns_000",
    "nvm.tlc_write_ns_001",
    "nvm.tlc_write_ns_010",
    "nvm.tlc_write_ns_011",
    "nvm.tlc_write_ns_100",
    "nvm.tlc_write_ns_101",
    "nvm.tlc_write_ns_110",
    "nvm.tlc_write_ns_111",
];
pub const TLC_PJ_KEYS: [&str; 8] = [
    "nvm.tlc_write_pj_000",
    "nvm.tlc_write_pj_001",
    "nvm.tlc_write_pj_010",
    "nvm.tlc_write_pj_011",
    "nvm.tlc_write_pj_100",
    "nvm.tlc_write_pj_101",
    "nvm.tlc_write_pj_110",
    "nvm.tlc_write_pj_111",
];

#[inline]
fn word(data: &LineData, i: usize) -> u64 {
    u64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().unwrap())
}

/// DLDC on a log line: each 8-byte word is log data whose dirty bytes are
/// taken against the previous word of the line (the first against zero), so
/// an undo/redo pair stored side by side keeps only the redo's dirty bytes
/// (MorLog §V, Fig. 11) and the line decodes on its own. Modelling choice
/// (the DIMM sees lines, not log entries), docs/model/nvm-media.md.
/// Appends to `out`; returns the words stored all clean.
fn dldc_line_encode(data: &LineData, out: &mut BitWriter) -> u64 {
    dldc_line_encode_with(data, out, dldc::encode)
}

/// [`dldc_line_encode`] with `encode_word` (data, dirty flags, out) for
/// each word: the test definition passes the field-at-a-time encoder.
#[inline(always)]
fn dldc_line_encode_with(
    data: &LineData,
    out: &mut BitWriter,
    encode_word: impl Fn(u64, u8, &mut BitWriter),
) -> u64 {
    let mut prev = 0;
    let mut clean = 0;
    for i in 0..8 {
        let w = word(data, i);
        let f = dldc::dirty_flags(prev, w);
        clean += u64::from(f == 0);
        encode_word(w, f, out);
        prev = w;
    }
    clean
}

/// An encoded line's code word, one bit per code bit: the 6 tag bits,
/// then the stream (a raw line: its 512 bits).
fn flat(e: &Encoded) -> Flat {
    debug_assert!(e.stream.len <= 9 * 64 - 6);
    flat_words(tag_of(e), &e.stream.words[..9])
}

/// The code word of tag `tag` and stream words `w` (bits past the stream
/// are zero, as a stream leaves them).
#[inline]
fn flat_words(tag: u64, w: &[u64]) -> Flat {
    // Stream bit j lands at code bit 6 + j.
    std::array::from_fn(|i| {
        let lo = if i == 0 { tag } else { w[i - 1] >> 58 };
        lo | w.get(i).map_or(0, |x| x << 6)
    })
}

/// An encoded line's tag field (6 bits).
#[inline]
fn tag_of(e: &Encoded) -> u64 {
    e.kind | (e.mode as u64) << 2 | u64::from(e.log_meta) << 4
}

/// Write an encoded line's stream and tags into cells; data cells past the
/// stream keep their state.
fn place(e: &Encoded, cells: &mut Packed) {
    packed::set_tag(cells, tag_of(e));
    let mode = if e.kind == RAW { 0 } else { e.mode };
    packed::expand(&e.stream, e.stream.len, mode, cells);
}

/// Decode a line from its cells (the DIMM's read path).
pub fn decode(cells: &Packed) -> LineData {
    decode_stream(packed::tag(cells), |mode| packed::contract(cells, mode))
}

/// Decode a line from its tag and its data cells contracted with the
/// tag's mode.
fn decode_stream(tag: u64, contract: impl FnOnce(usize) -> BitWriter) -> LineData {
    let kind = tag & 3;
    let mode = ((tag >> 2) & 3) as usize;
    let stream = contract(if kind == RAW { 0 } else { mode });
    let mut r = BitReader::new(&stream);
    match kind {
        FPC => fpc::decode(&mut r),
        DLDC => {
            let mut line = [0u8; 64];
            let mut prev = 0;
            for i in 0..8 {
                let w = dldc::decode(&mut r, prev);
                line[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
                prev = w;
            }
            line
        }
        _ => {
            let mut line = [0u8; 64];
            for i in 0..8 {
                line[i * 8..i * 8 + 8].copy_from_slice(&r.take(64).to_le_bytes());
            }
            line
        }
    }
}

#[cfg(test)]
mod tests;
