//! Memory-request traces: reading them (five formats, plain, gzip or xz),
//! replaying them on the memory controller alone (`durasim trace replay`),
//! and writing the stream a run sends to memory (`durasim run --trace-out`).
//!
//! Formats (one request per line; shared/peers/README.md §2):
//! * `durasim`: `R|W|C 0xADDR [CYCLE [PURPOSE [HEXDATA]]]` and
//!   `TXB|TXE CORE CYCLE` transaction markers; `C` is a dependent read
//!   (the next request waits for its data); `#` comments.
//! * `dramsim3`: `0xADDR READ|WRITE CYCLE` (memory-clock cycles).
//! * `ramulator2`: `LD|ST ADDR` (LoadStoreTrace; no time field).
//! * `vans`: `0xADDR R|W|C[:GAP]` (next request GAP+2 clocks later).
//! * `nvmain`: header `NVMV0`, then `CYCLE R|W 0xADDR DATA THREAD`.

pub mod formats;
pub mod replay;
pub mod validate;

use crate::error::{Error, Result};
use crate::mem::RequestTap;
use crate::types::{Addr, Cycle, Purpose, LINE_BYTES};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};

/// Trace file formats, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Durasim,
    Dramsim3,
    Ramulator2,
    Vans,
    Nvmain,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Durasim,
        Format::Dramsim3,
        Format::Ramulator2,
        Format::Vans,
        Format::Nvmain,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Durasim => "durasim",
            Format::Dramsim3 => "dramsim3",
            Format::Ramulator2 => "ramulator2",
            Format::Vans => "vans",
            Format::Nvmain => "nvmain",
        }
    }

    /// `None` for `auto`; an exit-2 error naming the choices otherwise.
    pub fn parse(s: &str, flag: &str, allow_auto: bool) -> Result<Option<Format>> {
        if allow_auto && s == "auto" {
            return Ok(None);
        }
        if let Some(f) = Format::ALL.into_iter().find(|f| f.name() == s) {
            return Ok(Some(f));
        }
        let mut valid: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        if allow_auto {
            valid.insert(0, "auto");
        }
        Err(Error::input(format!(
            "invalid value '{s}' for '{flag}'{}; valid formats: {}",
            crate::config::did_you_mean(s, &valid),
            valid.join(", ")
        )))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Op {
    #[default]
    Read,
    Write,
    /// A read the next request depends on (VANS `C`): the trace waits for
    /// its data before offering the next request.
    DepRead,
}

/// One request, reused line after line (no allocation per request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    pub op: Op,
    pub addr: Addr,
    /// Earliest offer time, in the trace's time unit (`trace.cycle_ns`).
    pub cycle: Option<u64>,
    /// VANS idle gap: the next request comes `gap + 2` clocks later.
    pub gap: Option<u64>,
    pub purpose: Option<Purpose>,
    /// Bytes of `data` written at `addr` (0: a whole line of no given value).
    pub len: u8,
    pub data: [u8; LINE_BYTES as usize],
}

impl Default for Req {
    fn default() -> Self {
        Req {
            op: Op::Read,
            addr: 0,
            cycle: None,
            gap: None,
            purpose: None,
            len: 0,
            data: [0; LINE_BYTES as usize],
        }
    }
}

/// What one line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// The request was parsed into the caller's `Req`.
    Req,
    TxBegin {
        core: u64,
        cycle: u64,
    },
    TxEnd {
        core: u64,
        cycle: u64,
    },
    /// Blank line, comment or header.
    Skip,
}

/// Size of the read buffer (large sequential reads; measured 1 MiB vs
/// 64 KiB: no difference beyond noise, kept large for compressed input).
const READ_BUF_BYTES: usize = 1 << 20;

/// Open `path` for reading, decompressing gzip or xz (by magic bytes).
pub fn open_input(path: &str) -> Result<Box<dyn BufRead>> {
    let file = std::fs::File::open(path).map_err(|e| {
        Error::input(format!(
            "invalid trace file '{path}': cannot open it ({e}); expected a readable trace file"
        ))
    })?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Error::input(format!(
            "invalid trace file '{path}': it is a directory; expected a trace file"
        )));
    }
    let mut r = BufReader::with_capacity(READ_BUF_BYTES, file);
    let magic = r.fill_buf().map_err(|e| {
        Error::input(format!(
            "invalid trace file '{path}': cannot read it ({e}); expected a readable trace file"
        ))
    })?;
    Ok(if magic.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::with_capacity(
            READ_BUF_BYTES,
            flate2::bufread::MultiGzDecoder::new(r),
        ))
    } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Box::new(BufReader::with_capacity(
            READ_BUF_BYTES,
            xz2::bufread::XzDecoder::new_multi_decoder(r),
        ))
    } else {
        Box::new(r)
    })
}

/// Compression suffixes a trace could be asked for by name but that
/// durasim does not write (it writes .gz and .xz).
const UNWRITTEN_COMPRESSIONS: &[&str] = &[
    ".bz2", ".zst", ".lz4", ".lzma", ".zip", ".7z", ".Z", ".lz", ".br",
];

/// A trace output named for a compression durasim does not write would
/// silently hold plain text: refused, naming the ones it writes.
pub fn check_trace_out_name(path: &str) -> Result<()> {
    match UNWRITTEN_COMPRESSIONS.iter().find(|s| path.ends_with(*s)) {
        Some(s) => Err(Error::input(format!(
            "invalid value '{path}' for '--trace-out': durasim does not write {s} compression; expected a plain file name or one ending in .gz or .xz"
        ))),
        None => Ok(()),
    }
}

/// Longest trace line accepted (with its end of line). A request with a
/// 64 B value in hex and every optional field is under 300 bytes.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// Lines of a trace with their numbers, into one reused buffer.
pub struct LineReader<R> {
    r: R,
    buf: Vec<u8>,
    pub line_no: usize,
    path: String,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(r: R, path: &str) -> Self {
        LineReader {
            r,
            buf: Vec::with_capacity(256),
            line_no: 0,
            path: path.to_string(),
        }
    }

    /// The next line (its number, its bytes without the end of line), or
    /// `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<(usize, &[u8])>> {
        self.buf.clear();
        // Bounded: a huge line without a newline (a binary or corrupt
        // file) must not be read whole into memory before it is refused.
        let n = (&mut self.r)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| self.io_error(e))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(line_error(
                &self.path,
                self.line_no,
                &format!("longer than {MAX_LINE_BYTES} bytes; expected one request per line (is this a trace file?)"),
            ));
        }
        let mut l = &self.buf[..];
        while let [rest @ .., b'\n' | b'\r'] = l {
            l = rest;
        }
        Ok(Some((self.line_no, l)))
    }

    fn io_error(&self, e: io::Error) -> Error {
        // A corrupt compressed stream is bad input, not an internal failure.
        Error::input(format!(
            "invalid trace file '{}' after line {}: cannot read it ({e})",
            self.path, self.line_no
        ))
    }

    pub fn path(&self) -> &str {
        &self.path
    }
}

/// A malformed line: exit 2, naming the line.
pub fn line_error(path: &str, line_no: usize, msg: &str) -> Error {
    Error::input(format!("invalid trace line {line_no} of '{path}': {msg}"))
}

/// Conversion between core cycles and a trace's time unit
/// (`trace.cycle_ns`; 0 = core cycles).
#[derive(Clone, Copy, Debug)]
pub struct TimeUnit {
    /// Core cycles per trace cycle (`None`: 1, exact).
    per: Option<f64>,
}

impl TimeUnit {
    pub fn new(cycle_ns: f64, freq_ghz: f64) -> Self {
        TimeUnit {
            per: (cycle_ns > 0.0).then_some(cycle_ns * freq_ghz),
        }
    }
    /// Trace time `c` in core cycles, at most 2^60 (far from overflow in
    /// the controller's sums; `as` saturates a huge product).
    #[inline]
    pub fn to_core(self, c: u64) -> Cycle {
        let v = match self.per {
            None => c,
            Some(f) => (c as f64 * f).round() as Cycle,
        };
        v.min(1 << 60)
    }
    #[inline]
    pub fn from_core(self, c: Cycle) -> u64 {
        match self.per {
            None => c,
            Some(f) => (c as f64 / f).round() as u64,
        }
    }
}

/// Writes records in one format, buffered; VANS lines are held back one
/// request (a line's idle gap depends on the next request's time).
pub struct TraceWriter {
    fmt: Format,
    out: BufWriter<Box<dyn Write + Send>>,
    unit: TimeUnit,
    /// VANS: the previous request and its trace time.
    held: Option<(Req, u64)>,
    pub requests: u64,
    pub markers: u64,
    error: Option<io::Error>,
    path: String,
}

impl TraceWriter {
    /// Create `path` (`.gz` / `.xz`: compressed).
    pub fn create(path: &str, fmt: Format, unit: TimeUnit) -> Result<Self> {
        check_trace_out_name(path)?;
        let file = std::fs::File::create(path).map_err(|e| {
            Error::input(format!(
                "invalid value '{path}' for '--trace-out': cannot create it ({e}); expected a writable file path"
            ))
        })?;
        let w: Box<dyn Write + Send> = if path.ends_with(".gz") {
            Box::new(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::fast(),
            ))
        } else if path.ends_with(".xz") {
            Box::new(xz2::write::XzEncoder::new(file, 1))
        } else {
            Box::new(file)
        };
        Self::new(w, fmt, unit, path)
    }

    pub fn new(w: Box<dyn Write + Send>, fmt: Format, unit: TimeUnit, path: &str) -> Result<Self> {
        let mut tw = TraceWriter {
            fmt,
            out: BufWriter::with_capacity(1 << 16, w),
            unit,
            held: None,
            requests: 0,
            markers: 0,
            error: None,
            path: path.to_string(),
        };
        let r = formats::write_header(&mut tw.out, fmt);
        tw.note(r);
        Ok(tw)
    }

    #[inline]
    fn note(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// One request stamped `now` (core cycles).
    pub fn request(&mut self, req: &Req, now: Cycle) {
        self.requests += 1;
        let c = self.unit.from_core(now);
        if self.fmt == Format::Vans {
            if let Some((prev, pc)) = self.held.take() {
                self.emit_vans(&prev, pc, Some(c));
            }
            self.held = Some((*req, c));
            return;
        }
        let r = formats::write_req(&mut self.out, self.fmt, req, c, None);
        self.note(r);
    }

    fn emit_vans(&mut self, prev: &Req, pc: u64, next: Option<u64>) {
        // VANS issues the next line gap + 2 clocks after one marked
        // ":gap"; unmarked lines go back to back.
        let gap = next
            .and_then(|n| n.checked_sub(pc))
            .filter(|&d| d >= 2)
            .map(|d| d - 2);
        let r = formats::write_req(&mut self.out, Format::Vans, prev, pc, gap);
        self.note(r);
    }

    pub fn marker(&mut self, begin: bool, core: u64, now: Cycle) {
        if self.fmt != Format::Durasim {
            return;
        }
        self.markers += 1;
        let c = self.unit.from_core(now);
        let r = formats::write_marker(&mut self.out, self.fmt, begin, core, c);
        self.note(r);
    }

    /// Flush everything (and finish compression); the first write error.
    pub fn finish(mut self) -> Result<u64> {
        if let Some((prev, pc)) = self.held.take() {
            self.emit_vans(&prev, pc, None);
        }
        let r = self.out.flush();
        self.note(r);
        let path = self.path.clone();
        if self.error.is_none() {
            match self.out.into_inner() {
                Ok(w) => drop(w), // encoders finish on drop
                Err(e) => self.error = Some(e.into_error()),
            }
        }
        match self.error {
            Some(source) => Err(Error::Io { path, source }),
            None => Ok(self.requests),
        }
    }
}

/// The controller's request tap (`run --trace-out`): every read and write
/// the NVM controller receives, split into 64 B bursts, with its purpose
/// (and in the durasim format its bytes), and the transaction markers.
pub struct Recorder {
    w: TraceWriter,
    req: Req,
}

impl Recorder {
    pub fn new(w: TraceWriter) -> Self {
        Recorder {
            w,
            req: Req::default(),
        }
    }
}

impl RequestTap for Recorder {
    fn read(&mut self, addr: Addr, len: usize, purpose: Purpose, now: Cycle) {
        let first = addr - addr % LINE_BYTES;
        let last = (addr + len.max(1) as u64 - 1) / LINE_BYTES * LINE_BYTES;
        let mut line = first;
        while line <= last {
            self.req.op = Op::Read;
            self.req.addr = line;
            self.req.purpose = Some(purpose);
            self.req.len = 0;
            self.w.request(&self.req, now);
            line += LINE_BYTES;
        }
    }

    fn write(&mut self, addr: Addr, data: &[u8], purpose: Purpose, now: Cycle) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let n = ((LINE_BYTES - a % LINE_BYTES) as usize).min(data.len() - done);
            self.req.op = Op::Write;
            self.req.addr = a;
            self.req.purpose = Some(purpose);
            self.req.len = n as u8;
            self.req.data[..n].copy_from_slice(&data[done..done + n]);
            self.w.request(&self.req, now);
            done += n;
        }
    }

    fn tx_begin(&mut self, core: usize, now: Cycle) {
        self.w.marker(true, core as u64, now);
    }

    fn tx_end(&mut self, core: usize, now: Cycle) {
        self.w.marker(false, core as u64, now);
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        self.w.finish()
    }
}
