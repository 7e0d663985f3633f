//! The five trace line formats: parsing one line (no allocation), writing
//! one record, and detecting the format of a file from its first lines.
//! Each format is taken exactly as its simulator reads it (shared/peers
//! README §2, gen_trace.py); where a peer silently accepts garbage (DRAMsim3
//! reads any unknown op as a read) durasim rejects the line instead.

use super::{Format, Op, Record, Req};
use crate::types::{Purpose, LINE_BYTES};
use std::io::{self, Write};

/// Why a line does not parse (the caller adds the file and line number).
pub type LineError = String;

/// Cores a transaction marker may name: a run has at most 256 threads
/// (engine/build.rs), so a trace durasim wrote never names more.
pub const MAX_CORES: u64 = 256;

/// Up to `N` whitespace-separated tokens of `line` (more: `None` in the count).
struct Tokens<'a> {
    toks: [&'a [u8]; 8],
    n: usize,
}

fn tokenize(line: &[u8]) -> Tokens<'_> {
    let mut toks: [&[u8]; 8] = [&[]; 8];
    let mut n = 0;
    for t in line
        .split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
    {
        if n < toks.len() {
            toks[n] = t;
        }
        n += 1;
    }
    Tokens { toks, n }
}

fn show(t: &[u8]) -> String {
    let s = String::from_utf8_lossy(t);
    if s.len() > 40 {
        format!("{}...", &s[..s.floor_char_boundary_compat(40)])
    } else {
        s.into_owned()
    }
}

/// `str::floor_char_boundary` is unstable; a small stand-in.
trait FloorBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}
impl FloorBoundary for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        while i > 0 && !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// Hex digits (an optional `0x`/`0X` prefix when `prefix_ok`).
pub(crate) fn parse_hex(t: &[u8]) -> Option<u64> {
    let d = t
        .strip_prefix(b"0x")
        .or_else(|| t.strip_prefix(b"0X"))
        .unwrap_or(t);
    if d.is_empty() || d.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in d {
        let x = (c as char).to_digit(16)?;
        v = (v << 4) | u64::from(x);
    }
    Some(v)
}

pub(crate) fn parse_dec(t: &[u8]) -> Option<u64> {
    if t.is_empty() || t.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in t {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Decimal, or hex with a `0x` prefix (Ramulator 2, canon).
fn parse_addr_any(t: &[u8]) -> Option<u64> {
    if t.starts_with(b"0x") || t.starts_with(b"0X") {
        parse_hex(t)
    } else {
        parse_dec(t)
    }
}

fn bad_addr(t: &[u8], how: &str) -> LineError {
    format!("invalid address '{}': expected {how}", show(t))
}

/// Largest cycle or gap accepted: simulated times stay far from overflow
/// (10^15 cycles = 4.6 simulated days at 2.5 GHz).
pub const MAX_TIME: u64 = 1_000_000_000_000_000;

fn parse_time(t: &[u8]) -> Option<u64> {
    parse_dec(t).filter(|&v| v <= MAX_TIME)
}

fn bad_cycle(t: &[u8]) -> LineError {
    format!(
        "invalid cycle '{}': expected a decimal cycle number up to 10^15",
        show(t)
    )
}

/// Hex data of up to one line into `out`; returns its byte count.
fn parse_data(t: &[u8], out: &mut [u8; 64]) -> Option<usize> {
    if !t.len().is_multiple_of(2) || t.len() > 128 || t.is_empty() {
        return None;
    }
    for (i, pair) in t.chunks(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(t.len() / 2)
}

fn purpose_of(t: &[u8]) -> Option<Purpose> {
    Purpose::ALL.into_iter().find(|p| p.name().as_bytes() == t)
}

fn purpose_names() -> String {
    Purpose::ALL
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parse one line of `fmt` into `req` (reused: no allocation). `first`:
/// this is line 1 (NVMain's header). Comments and blank lines give
/// `Record::Skip`.
pub fn parse_line(
    fmt: Format,
    line: &[u8],
    first: bool,
    req: &mut Req,
) -> Result<Record, LineError> {
    let tk = tokenize(line);
    if tk.n == 0 {
        return Ok(Record::Skip);
    }
    let t = &tk.toks;
    // '#' comments: durasim and VANS define them; harmless for the others.
    if t[0].first() == Some(&b'#') {
        return Ok(Record::Skip);
    }
    req.cycle = None;
    req.gap = None;
    req.purpose = None;
    req.len = 0;
    match fmt {
        Format::Durasim => parse_durasim(&tk, req),
        Format::Dramsim3 => parse_dramsim3(&tk, req),
        Format::Ramulator2 => parse_ramulator2(&tk, req),
        Format::Vans => parse_vans(&tk, req),
        Format::Nvmain => parse_nvmain(&tk, first, req),
    }
}

/// A DRAMsim3 line: `0xADDR READ|WRITE CYCLE` (its op aliases accepted,
/// any other op refused).
fn parse_dramsim3(tk: &Tokens<'_>, req: &mut Req) -> Result<Record, LineError> {
    let t = &tk.toks;
    if tk.n != 3 {
        return Err(format!(
            "expected 3 fields '0xADDR READ|WRITE CYCLE' (DRAMsim3), found {}",
            tk.n
        ));
    }
    req.addr = parse_hex(t[0]).ok_or_else(|| bad_addr(t[0], "hex (0x optional)"))?;
    req.op = match t[1] {
        b"READ" | b"read" | b"P_MEM_RD" | b"P_FETCH" => Op::Read,
        b"WRITE" | b"write" | b"P_MEM_WR" | b"BOFF" => Op::Write,
        o => {
            return Err(format!(
                "invalid operation '{}': expected READ or WRITE (also read, write, P_MEM_RD, P_FETCH, P_MEM_WR, BOFF)",
                show(o)
            ))
        }
    };
    req.cycle = Some(parse_time(t[2]).ok_or_else(|| bad_cycle(t[2]))?);
    Ok(Record::Req)
}

/// A Ramulator 2 LoadStoreTrace line: `LD|ST ADDR` (decimal or `0x` hex).
fn parse_ramulator2(tk: &Tokens<'_>, req: &mut Req) -> Result<Record, LineError> {
    let t = &tk.toks;
    if tk.n != 2 {
        return Err(format!(
            "expected 2 fields 'LD|ST ADDR' (Ramulator 2 LoadStoreTrace), found {}",
            tk.n
        ));
    }
    req.op = match t[0] {
        b"LD" => Op::Read,
        b"ST" => Op::Write,
        o => {
            return Err(format!(
                "invalid operation '{}': expected LD or ST",
                show(o)
            ))
        }
    };
    req.addr = parse_addr_any(t[1]).ok_or_else(|| bad_addr(t[1], "decimal or 0x-prefixed hex"))?;
    Ok(Record::Req)
}

/// A VANS line: `0xADDR R|W|C[:GAP]` (`C` a dependent read, `GAP` idle
/// clocks before it).
fn parse_vans(tk: &Tokens<'_>, req: &mut Req) -> Result<Record, LineError> {
    let t = &tk.toks;
    if tk.n != 2 {
        return Err(format!(
            "expected 2 fields '0xADDR R|W|C[:GAP]' (VANS), found {}",
            tk.n
        ));
    }
    req.addr = parse_hex(t[0]).ok_or_else(|| bad_addr(t[0], "hex (0x optional)"))?;
    let (op, rest) = t[1].split_at(1);
    req.op = match op {
        b"R" => Op::Read,
        b"W" => Op::Write,
        b"C" => Op::DepRead,
        _ => {
            return Err(format!(
            "invalid operation '{}': expected R, W or C (dependent read), optionally with ':GAP'",
            show(t[1])
        ))
        }
    };
    if !rest.is_empty() {
        let g = rest
            .strip_prefix(b":")
            .and_then(parse_time)
            .ok_or_else(|| {
                format!(
                    "invalid idle gap '{}': expected ':' and a decimal clock count, e.g. R:998",
                    show(rest)
                )
            })?;
        req.gap = Some(g);
    }
    Ok(Record::Req)
}

/// An NVMain line: `CYCLE R|W 0xADDR DATA THREAD` (v0) or with the old data
/// before `THREAD` (v1); the version header on line 1 is skipped. A
/// full-line write keeps its data.
fn parse_nvmain(tk: &Tokens<'_>, first: bool, req: &mut Req) -> Result<Record, LineError> {
    let t = &tk.toks;
    if first && (t[0] == b"NVMV0" || t[0] == b"NVMV1") && tk.n == 1 {
        return Ok(Record::Skip);
    }
    if tk.n != 5 && tk.n != 6 {
        return Err(format!(
            "expected 5 fields 'CYCLE R|W 0xADDR DATA THREAD' (NVMain v0) or 6 (v1, with old data), found {}",
            tk.n
        ));
    }
    req.cycle = Some(parse_time(t[0]).ok_or_else(|| bad_cycle(t[0]))?);
    req.op = match t[1] {
        b"R" => Op::Read,
        b"W" => Op::Write,
        o => return Err(format!("invalid operation '{}': expected R or W", show(o))),
    };
    req.addr = parse_hex(t[2]).ok_or_else(|| bad_addr(t[2], "0x-prefixed hex"))?;
    let n = parse_data(t[3], &mut req.data).ok_or_else(|| {
        format!(
            "invalid data '{}': expected up to 128 hex digits (one 64 B line)",
            show(t[3])
        )
    })?;
    if tk.n == 6 {
        let mut old = [0u8; 64];
        parse_data(t[4], &mut old).ok_or_else(|| {
            format!(
                "invalid old data '{}': expected up to 128 hex digits",
                show(t[4])
            )
        })?;
    }
    parse_dec(t[tk.n - 1]).ok_or_else(|| {
        format!(
            "invalid thread id '{}': expected a decimal number",
            show(t[tk.n - 1])
        )
    })?;
    // NVMain's data field is the whole line: keep it for writes.
    req.len = if req.op == Op::Write && n == 64 {
        64
    } else {
        0
    };
    if req.len > 0 {
        req.addr -= req.addr % LINE_BYTES;
    }
    Ok(Record::Req)
}

/// A durasim line: `R|W|C ADDR [CYCLE [PURPOSE [HEXDATA]]]` (data on writes
/// only, within one 64 B line), or a transaction mark `TXB|TXE CORE CYCLE`.
fn parse_durasim(tk: &Tokens<'_>, req: &mut Req) -> Result<Record, LineError> {
    let t = &tk.toks;
    if t[0] == b"TXB" || t[0] == b"TXE" {
        if tk.n != 3 {
            return Err(format!(
                "expected 3 fields '{} CORE CYCLE', found {}",
                show(t[0]),
                tk.n
            ));
        }
        let core = parse_dec(t[1]).filter(|&c| c < MAX_CORES).ok_or_else(|| {
            format!(
                "invalid core '{}': expected a decimal core number below {MAX_CORES}",
                show(t[1])
            )
        })?;
        let cycle = parse_time(t[2]).ok_or_else(|| bad_cycle(t[2]))?;
        return Ok(if t[0] == b"TXB" {
            Record::TxBegin { core, cycle }
        } else {
            Record::TxEnd { core, cycle }
        });
    }
    if tk.n < 2 || tk.n > 5 {
        return Err(format!(
            "expected 'R|W|C 0xADDR [CYCLE [PURPOSE [HEXDATA]]]' or 'TXB|TXE CORE CYCLE' (durasim), found {} fields",
            tk.n
        ));
    }
    req.op = match t[0] {
        b"R" => Op::Read,
        b"W" => Op::Write,
        b"C" => Op::DepRead,
        o => {
            return Err(format!(
                "invalid operation '{}': expected R, W, C (dependent read), TXB or TXE",
                show(o)
            ))
        }
    };
    req.addr = parse_addr_any(t[1]).ok_or_else(|| bad_addr(t[1], "0x-prefixed hex or decimal"))?;
    if tk.n >= 3 {
        req.cycle = Some(parse_time(t[2]).ok_or_else(|| bad_cycle(t[2]))?);
    }
    if tk.n >= 4 {
        req.purpose = Some(purpose_of(t[3]).ok_or_else(|| {
            let names: Vec<&str> = Purpose::ALL.iter().map(|p| p.name()).collect();
            format!(
                "invalid purpose '{}'{}; valid purposes: {}",
                show(t[3]),
                crate::config::did_you_mean(&String::from_utf8_lossy(t[3]), &names),
                purpose_names()
            )
        })?);
    }
    if tk.n == 5 {
        if req.op != Op::Write {
            return Err("data is allowed on writes (W) only".into());
        }
        let n = parse_data(t[4], &mut req.data).ok_or_else(|| {
            format!(
                "invalid data '{}': expected an even number of hex digits, at most 128",
                show(t[4])
            )
        })?;
        if req.addr % LINE_BYTES + n as u64 > LINE_BYTES {
            return Err(format!(
                "{n} data bytes at offset {} cross the 64 B line",
                req.addr % LINE_BYTES
            ));
        }
        req.len = n as u8;
    }
    Ok(Record::Req)
}

/// A format detected from the first data lines of a file, or an error
/// naming every format's objection (none fits) or the candidates (ambiguous).
pub fn detect(lines: &[(usize, &[u8])]) -> Result<Format, String> {
    if lines.is_empty() {
        return Err(
            "cannot detect the trace format: the file has no request lines; name it with --format"
                .into(),
        );
    }
    let mut fits = Vec::new();
    let mut why = Vec::new();
    let mut any_record = false;
    for fmt in Format::ALL {
        let mut req = Req::default();
        let mut ok = true;
        let mut records = 0;
        for &(no, l) in lines {
            match parse_line(fmt, l, no == 1, &mut req) {
                Ok(Record::Skip) => {}
                Ok(_) => records += 1,
                Err(e) => {
                    why.push(format!("{} (line {no}: {e})", fmt.name()));
                    ok = false;
                    break;
                }
            }
        }
        any_record |= ok && records > 0;
        if ok && records > 0 {
            fits.push(fmt);
        }
    }
    if fits.is_empty() && !any_record && why.len() < Format::ALL.len() {
        return Err(
            "cannot detect the trace format: the file has no request lines; name it with --format"
                .into(),
        );
    }
    match fits.as_slice() {
        [f] => Ok(*f),
        [] => Err(format!(
            "cannot detect the trace format: no format fits the first lines: {}; name it with --format",
            why.join("; ")
        )),
        many => Err(format!(
            "ambiguous trace format: the first lines fit {}; choose one with --format",
            many.iter().map(|f| f.name()).collect::<Vec<_>>().join(" and ")
        )),
    }
}

fn write_hex(w: &mut impl Write, data: &[u8]) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 128];
    for (i, &b) in data.iter().enumerate() {
        buf[2 * i] = HEX[(b >> 4) as usize];
        buf[2 * i + 1] = HEX[(b & 15) as usize];
    }
    w.write_all(&buf[..2 * data.len()])
}

/// Write one request in `fmt`. `cycle`: in the trace's time unit; `gap`:
/// the VANS idle clocks after it (`None`: back to back).
pub fn write_req(
    w: &mut impl Write,
    fmt: Format,
    req: &Req,
    cycle: u64,
    gap: Option<u64>,
) -> io::Result<()> {
    let line = req.addr - req.addr % LINE_BYTES;
    let write = req.op == Op::Write;
    match fmt {
        Format::Durasim => {
            let op = match req.op {
                Op::Read => "R",
                Op::Write => "W",
                Op::DepRead => "C",
            };
            let purpose = req.purpose.unwrap_or(if write {
                Purpose::WriteBack
            } else {
                Purpose::Demand
            });
            write!(w, "{op} {:#x} {cycle} {}", req.addr, purpose.name())?;
            if write && req.len > 0 {
                w.write_all(b" ")?;
                write_hex(w, &req.data[..req.len as usize])?;
            }
            w.write_all(b"\n")
        }
        Format::Dramsim3 => writeln!(
            w,
            "{line:#x} {} {cycle}",
            if write { "WRITE" } else { "READ" }
        ),
        Format::Ramulator2 => writeln!(w, "{} {line:#x}", if write { "ST" } else { "LD" }),
        Format::Vans => {
            let op = match req.op {
                Op::Read => "R",
                Op::Write => "W",
                Op::DepRead => "C",
            };
            match gap {
                Some(g) => writeln!(w, "{line:#x} {op}:{g}"),
                None => writeln!(w, "{line:#x} {op}"),
            }
        }
        Format::Nvmain => {
            write!(w, "{cycle} {} {line:#x} ", if write { "W" } else { "R" })?;
            let mut data = [0u8; 64];
            if write && req.len > 0 {
                let off = (req.addr % LINE_BYTES) as usize;
                data[off..off + req.len as usize].copy_from_slice(&req.data[..req.len as usize]);
            }
            write_hex(w, &data)?;
            w.write_all(b" 0\n")
        }
    }
}

/// A transaction marker (durasim format only; the others drop it).
pub fn write_marker(
    w: &mut impl Write,
    fmt: Format,
    begin: bool,
    core: u64,
    cycle: u64,
) -> io::Result<()> {
    if fmt != Format::Durasim {
        return Ok(());
    }
    writeln!(w, "{} {core} {cycle}", if begin { "TXB" } else { "TXE" })
}

/// A format's first line: NVMain consumes line 1 as a header; durasim
/// names itself (comments are skipped by its reader).
pub fn write_header(w: &mut impl Write, fmt: Format) -> io::Result<()> {
    match fmt {
        Format::Nvmain => w.write_all(b"NVMV0\n"),
        Format::Durasim => w.write_all(
            b"# durasim trace v1: R|W|C 0xADDR CYCLE PURPOSE [HEXDATA] | TXB|TXE CORE CYCLE\n",
        ),
        _ => Ok(()),
    }
}
