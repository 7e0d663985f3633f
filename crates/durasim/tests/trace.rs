//! Memory-request traces (src/trace/): every format round-trips through
//! export and import, random valid lines parse, every malformed-line class
//! is an exit-2 error naming its line, replay is deterministic and the same
//! stream gives the same timing in every format, and a run's exported
//! stream replays to the run's own memory-side timing within the effect of
//! the missing cores.

use durasim::trace::{formats, replay, Format, Op, Record, Req, TimeUnit, TraceWriter};
use durasim::types::Purpose;
use proptest::prelude::*;
use std::io::Write;
use std::process::Command;

fn durasim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_durasim"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("durasim-trace-tests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// A shared in-memory sink for a TraceWriter.
#[derive(Clone, Default)]
struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Write `reqs` (each with its core-cycle stamp) in `fmt`; the text.
fn export(fmt: Format, reqs: &[(Req, u64)]) -> String {
    let sink = Sink::default();
    let mut w =
        TraceWriter::new(Box::new(sink.clone()), fmt, TimeUnit::new(0.0, 2.5), "mem").unwrap();
    for (r, t) in reqs {
        w.request(r, *t);
    }
    w.finish().unwrap();
    let v = sink.0.lock().unwrap().clone();
    String::from_utf8(v).unwrap()
}

/// Parse every line of `text` in `fmt`: the requests.
fn import(fmt: Format, text: &str) -> Vec<Req> {
    let mut out = Vec::new();
    let mut req = Req::default();
    for (i, l) in text.lines().enumerate() {
        match formats::parse_line(fmt, l.as_bytes(), i == 0, &mut req) {
            Ok(Record::Req) => out.push(req),
            Ok(_) => {}
            Err(e) => panic!("{} line {}: {e}: {l}", fmt.name(), i + 1),
        }
    }
    out
}

fn arb_req() -> impl Strategy<Value = (Req, u64)> {
    (
        0u8..3,
        0u64..(1 << 40),
        0u64..1_000_000,
        0usize..Purpose::COUNT,
        proptest::collection::vec(any::<u8>(), 0..=64),
    )
        .prop_map(|(op, addr, cycle, p, data)| {
            let op = [Op::Read, Op::Write, Op::DepRead][op as usize];
            let mut r = Req {
                op,
                addr,
                purpose: Some(Purpose::ALL[p]),
                ..Req::default()
            };
            if op == Op::Write && !data.is_empty() {
                // Data stays within the line.
                let off = (addr % 64) as usize;
                let n = data.len().min(64 - off);
                r.data[..n].copy_from_slice(&data[..n]);
                r.len = n as u8;
            }
            (r, cycle)
        })
}

/// What `fmt` carries of a request exported at `cycle`.
fn projected(fmt: Format, r: &Req, cycle: u64) -> (Op, u64, Option<u64>, Option<Purpose>, Vec<u8>) {
    let line = r.addr - r.addr % 64;
    let read_op = |op| if op == Op::Write { Op::Write } else { Op::Read };
    match fmt {
        Format::Durasim => (
            r.op,
            r.addr,
            Some(cycle),
            r.purpose,
            r.data[..r.len as usize].to_vec(),
        ),
        Format::Dramsim3 => (read_op(r.op), line, Some(cycle), None, vec![]),
        Format::Ramulator2 => (read_op(r.op), line, None, None, vec![]),
        Format::Vans => (r.op, line, None, None, vec![]),
        Format::Nvmain => {
            // NVMain carries the whole line's data (zeros around a write).
            let data = if r.op == Op::Write {
                let mut d = vec![0u8; 64];
                let off = (r.addr % 64) as usize;
                d[off..off + r.len as usize].copy_from_slice(&r.data[..r.len as usize]);
                d
            } else {
                vec![]
            };
            (read_op(r.op), line, Some(cycle), None, data)
        }
    }
}

fn got(fmt: Format, r: &Req) -> (Op, u64, Option<u64>, Option<Purpose>, Vec<u8>) {
    let cycle = if matches!(fmt, Format::Vans | Format::Ramulator2) {
        None
    } else {
        r.cycle
    };
    (
        r.op,
        r.addr,
        cycle,
        r.purpose,
        r.data[..r.len as usize].to_vec(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Export then import gives back every field the format carries, in
    /// every format; VANS gaps reproduce the time between requests.
    #[test]
    fn every_format_round_trips(mut reqs in proptest::collection::vec(arb_req(), 1..40)) {
        // Stamps in order (a VANS gap is the time to the next request).
        let mut t = 0;
        for r in reqs.iter_mut() {
            t += r.1 % 1000;
            r.1 = t;
        }
        for fmt in Format::ALL {
            let text = export(fmt, &reqs);
            let back = import(fmt, &text);
            prop_assert_eq!(back.len(), reqs.len(), "{}", fmt.name());
            for (i, ((r, c), b)) in reqs.iter().zip(&back).enumerate() {
                let mut want = projected(fmt, r, *c);
                if fmt == Format::Nvmain && b.len == 0 && want.0 == Op::Write {
                    want.4.clear();
                }
                prop_assert_eq!(got(fmt, b), want, "{} request {}", fmt.name(), i);
                if fmt == Format::Vans {
                    let next = reqs.get(i + 1).map(|n| n.1);
                    let gap = next.and_then(|n| (n - c >= 2).then(|| n - c - 2));
                    prop_assert_eq!(b.gap, gap);
                }
            }
            // Detection finds the format from the exported text.
            let lines: Vec<(usize, &[u8])> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
                .take(16)
                .map(|(i, l)| (i + 1, l.as_bytes()))
                .collect();
            prop_assert_eq!(formats::detect(&lines), Ok(fmt));
        }
    }

    /// Hand-written valid lines in the peers' accepted spellings parse
    /// (case of ops, optional 0x, extra blanks, decimal addresses).
    #[test]
    fn random_valid_lines_parse(
        addr in 0u64..(1 << 48),
        cycle in 0u64..=formats::MAX_TIME,
        w in any::<bool>(),
        pad in "[ \t]{0,3}",
        gap in proptest::option::of(0u64..100_000),
    ) {
        let mut r = Req::default();
        let want = if w { Op::Write } else { Op::Read };
        let cases: Vec<(Format, String)> = vec![
            (Format::Dramsim3, format!("{pad}{addr:#x} {} {cycle}{pad}", if w { "WRITE" } else { "READ" })),
            (Format::Dramsim3, format!("{addr:x}\t{}  {cycle}", if w { "write" } else { "read" })),
            (Format::Ramulator2, format!("{} {addr}", if w { "ST" } else { "LD" })),
            (Format::Ramulator2, format!("{} {addr:#X}", if w { "ST" } else { "LD" })),
            (Format::Vans, format!("{addr:#x} {}{}", if w { "W" } else { "R" }, gap.map_or(String::new(), |g| format!(":{g}")))),
            (Format::Nvmain, format!("{cycle} {} {addr:#x} {} 7", if w { "W" } else { "R" }, "ab".repeat(64))),
            (Format::Durasim, format!("{pad}{} {addr:#x} {cycle}", if w { "W" } else { "R" })),
            (Format::Durasim, format!("{} {addr}", if w { "W" } else { "R" })),
        ];
        for (fmt, line) in cases {
            let rec = formats::parse_line(fmt, line.as_bytes(), false, &mut r);
            prop_assert_eq!(rec, Ok(Record::Req), "{} {:?}", fmt.name(), line);
            prop_assert_eq!(r.op, want);
            if fmt == Format::Nvmain && w {
                prop_assert_eq!(r.addr, addr - addr % 64);
            } else {
                prop_assert_eq!(r.addr, addr);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary bytes are a parse result or an error in every format and
    /// in detection, never a panic.
    #[test]
    fn arbitrary_lines_never_panic(line in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut r = Req::default();
        for fmt in Format::ALL {
            let _ = formats::parse_line(fmt, &line, true, &mut r);
        }
        let _ = formats::detect(&[(1, &line[..])]);
    }
}

/// Each malformed-line class, per format: (format, file content, the line
/// the error names, a phrase of the message).
const MALFORMED: &[(&str, &str, usize, &str)] = &[
    (
        "dramsim3",
        "0x40 READ 0\n0x80 FETCHX 1\n",
        2,
        "invalid operation 'FETCHX'",
    ),
    (
        "dramsim3",
        "0x40 READ 0\n0xZZ READ 1\n",
        2,
        "invalid address '0xZZ'",
    ),
    (
        "dramsim3",
        "0x40 READ 0\n0x80 READ -5\n",
        2,
        "invalid cycle '-5'",
    ),
    (
        "dramsim3",
        "0x40 READ 0\n\n0x80 READ\n",
        3,
        "expected 3 fields",
    ),
    ("ramulator2", "LD 0x40\nLOAD 0x80\n", 2, "expected LD or ST"),
    (
        "ramulator2",
        "LD 0x40\nST 12ab\n",
        2,
        "invalid address '12ab'",
    ),
    ("ramulator2", "LD 0x40\nST 0x80 5\n", 2, "expected 2 fields"),
    ("vans", "0x40 R\n0x80 Q\n", 2, "expected R, W or C"),
    ("vans", "0x40 R\n0x80 R:x9\n", 2, "invalid idle gap"),
    ("vans", "0x40 R\n0xg0 W\n", 2, "invalid address"),
    (
        "nvmain",
        "NVMV0\n0 R 0x40 00 0\n5 X 0x80 00 0\n",
        3,
        "expected R or W",
    ),
    (
        "nvmain",
        "NVMV0\n0 R 0x40 00 0\n5 W 0x80 0g 0\n",
        3,
        "invalid data",
    ),
    (
        "nvmain",
        "NVMV0\n0 R 0x40 00 0\n5 W 0x80 00\n",
        3,
        "expected 5 fields",
    ),
    ("nvmain", "NVMV0\nx R 0x40 00 0\n", 2, "invalid cycle"),
    (
        "durasim",
        "R 0x40 0 demand\nW 0x80 1 writebak\n",
        2,
        "did you mean 'writeback'",
    ),
    (
        "durasim",
        "R 0x40 0\nW 0x7f 1 log 0011\n",
        2,
        "cross the 64 B line",
    ),
    (
        "durasim",
        "R 0x40 0\nR 0x80 1 demand 00\n",
        2,
        "writes (W) only",
    ),
    (
        "durasim",
        "R 0x40 0\nTXB 1\n",
        2,
        "expected 3 fields 'TXB CORE CYCLE'",
    ),
    ("durasim", "R 0x40 0\nX 0x80\n", 2, "invalid operation 'X'"),
    // The remaining field classes of each format (every error parse_line
    // can give has a row).
    (
        "dramsim3",
        "0x40 READ 0\n0x80 READ 1000000000000000001\n",
        2,
        "up to 10^15",
    ),
    ("vans", "0x40 R\n0x80 R W\n", 2, "expected 2 fields"),
    ("vans", "0x40 R\n0x80 R:\n", 2, "invalid idle gap"),
    (
        "nvmain",
        "NVMV0\n0 R 0x40 00 0\n5 W 0xq0 00 0\n",
        3,
        "invalid address '0xq0'",
    ),
    (
        "nvmain",
        "NVMV1\n0 R 0x40 00 00 0\n5 W 0x80 00 0g 1\n",
        3,
        "invalid old data '0g'",
    ),
    (
        "nvmain",
        "NVMV0\n0 R 0x40 00 0\n5 W 0x80 00 x\n",
        3,
        "invalid thread id 'x'",
    ),
    (
        "durasim",
        "R 0x40 0\nW 0x8g 1\n",
        2,
        "invalid address '0x8g'",
    ),
    ("durasim", "R 0x40 0\nW 0x80 1x\n", 2, "invalid cycle '1x'"),
    ("durasim", "R 0x40 0\nTXB c0 5\n", 2, "invalid core 'c0'"),
    ("durasim", "R 0x40 0\nTXE 0 -1\n", 2, "invalid cycle '-1'"),
    (
        "durasim",
        "R 0x40 0\nW 0x80 1 log 0g\n",
        2,
        "invalid data '0g'",
    ),
    (
        "durasim",
        "R 0x40 0\nW 0x80 1 log 00 extra\n",
        2,
        "found 6 fields",
    ),
];

#[test]
fn malformed_lines_exit_2_with_their_line_number() {
    for (i, (fmt, text, line, phrase)) in MALFORMED.iter().enumerate() {
        let p = tmp(&format!("bad{i}.trace"));
        std::fs::write(&p, text).unwrap();
        let (code, out, err) = durasim(&["trace", "replay", p.to_str().unwrap(), "--format", fmt]);
        assert_eq!(code, 2, "{fmt} {text:?}: {out}{err}");
        assert!(
            err.contains(&format!("invalid trace line {line} of")) && err.contains(phrase),
            "{fmt} {text:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn bad_files_and_choices_exit_2() {
    let p = tmp("undetectable.trace");
    std::fs::write(&p, "hello world\n").unwrap();
    let f = p.to_str().unwrap();
    let (code, _, err) = durasim(&["trace", "replay", f]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot detect the trace format") && err.contains("--format"),
        "{err}"
    );
    let e = tmp("empty.trace");
    std::fs::write(&e, "# only a comment\n\n").unwrap();
    let (code, _, err) = durasim(&["trace", "replay", e.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("no request lines"), "{err}");
    let (code, _, err) = durasim(&["trace", "replay", f, "--format", "dramsim"]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean 'dramsim3'"), "{err}");
    let (code, _, err) = durasim(&["trace", "replay", "/nonexistent/x.trace"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot open"), "{err}");
    // A truncated gzip stream is bad input, not a crash.
    let g = tmp("trunc.trace.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all("R 0x40 0\n".repeat(2000).as_bytes()).unwrap();
    let bytes = enc.finish().unwrap();
    std::fs::write(&g, &bytes[..bytes.len() / 2]).unwrap();
    let (code, _, err) = durasim(&["trace", "replay", g.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// An address at the top of the address space once looped forever in the
/// controller (its line cursor wrapped at 2^64); any address past
/// `nvm.capacity_bytes` is refused naming the line and the parameter.
#[test]
fn addresses_beyond_capacity_are_refused_naming_the_line() {
    let p = tmp("top.trace");
    std::fs::write(&p, "R 0x40 0\nR 0xffffffffffffffc0 10\n").unwrap();
    let (code, _, err) = durasim(&["trace", "replay", p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("line 2")
            && err.contains("0xffffffffffffffc0")
            && err.contains("nvm.capacity_bytes"),
        "{err}"
    );
    // The last line inside a 1 MiB device replays; the next one is refused.
    let cap = ["--set", "nvm.capacity_bytes=1048576"];
    std::fs::write(&p, "W 0xfffc0 0\n").unwrap();
    let (code, _, err) = durasim(&[&["trace", "replay", p.to_str().unwrap()][..], &cap].concat());
    assert_eq!(code, 0, "{err}");
    std::fs::write(&p, "W 0x100000 0\n").unwrap();
    let (code, _, err) = durasim(&[&["trace", "replay", p.to_str().unwrap()][..], &cap].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 1") && err.contains("0x100000"), "{err}");
}

/// A line without an end (a binary file, a corrupt stream) is refused at
/// the line cap, not read whole into memory; a directory is refused before
/// any work.
#[test]
fn overlong_lines_and_directories_exit_2() {
    let p = tmp("long.trace");
    let mut body = b"R 0x40 0\n".to_vec();
    body.extend(std::iter::repeat_n(
        b'7',
        durasim::trace::MAX_LINE_BYTES + 10,
    ));
    std::fs::write(&p, body).unwrap();
    let (code, _, err) = durasim(&[
        "trace",
        "replay",
        p.to_str().unwrap(),
        "--format",
        "durasim",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("line 2") && err.contains("longer than"),
        "{err}"
    );
    // A transaction marker names a core a run can have (at most 256).
    std::fs::write(&p, "R 0x40 0\nTXB 99999 0\n").unwrap();
    let (code, _, err) = durasim(&["trace", "replay", p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 2") && err.contains("99999"), "{err}");
    let d = std::env::temp_dir();
    let (code, _, err) = durasim(&["trace", "replay", d.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("directory"), "{err}");
}

/// NVMain drops line 1 whatever it holds; durasim replays a headerless
/// file's first request and says that NVMain would not.
#[test]
fn headerless_nvmain_file_is_replayed_with_a_warning() {
    let data = "00".repeat(64);
    let body = format!("0 R 0x40 {data} 0\n5 W 0x80 {data} 0\n");
    let p = tmp("headerless.nvt");
    std::fs::write(&p, &body).unwrap();
    let (code, out, err) = durasim(&["trace", "replay", p.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("line 1 of") && err.contains("NVMain itself would drop it"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["requests"], 2);
    assert_eq!(v["format"], "nvmain");
    // With the header: no warning.
    std::fs::write(&p, format!("NVMV0\n{body}")).unwrap();
    let (code, _, err) = durasim(&["trace", "replay", p.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// A seeded stream like gen_trace.py's: random lines over 1 GiB, 2:1 R:W.
fn stream(n: usize, seed: u64) -> Vec<(Req, u64)> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let r = Req {
                op: if x.is_multiple_of(3) {
                    Op::Write
                } else {
                    Op::Read
                },
                addr: (x >> 8) % (1 << 24) * 64,
                ..Req::default()
            };
            (r, 0)
        })
        .collect()
}

fn replay_json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = durasim(args);
    assert_eq!(code, 0, "{err}");
    let mut v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "host_seconds",
        "host_cpu_seconds",
        "requests_per_host_second",
        "requests_per_cpu_second",
        "max_rss_mib",
        "format",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

#[test]
fn replay_is_deterministic_and_equal_across_formats_and_compression() {
    let s = stream(5000, 7);
    let mut first = None;
    for fmt in Format::ALL {
        let p = tmp(&format!("same.{}", fmt.name()));
        std::fs::write(&p, export(fmt, &s)).unwrap();
        let v = replay_json(&["trace", "replay", p.to_str().unwrap(), "--json"]);
        assert_eq!(v["requests"], 5000);
        assert!(v["read_latency_mean_ns"].as_f64().unwrap() > 0.0);
        match &first {
            None => first = Some(v.clone()),
            Some(f) => assert_eq!(&v, f, "{} differs from durasim", fmt.name()),
        }
        // Twice: bit-identical.
        let again = replay_json(&["trace", "replay", p.to_str().unwrap(), "--json"]);
        assert_eq!(again, v);
    }
    // gzip and xz input replay the same stream to the same result.
    let text = export(Format::Dramsim3, &s);
    let gz = tmp("same.trace.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let xz = tmp("same.trace.xz");
    let mut enc = xz2::write::XzEncoder::new(Vec::new(), 1);
    enc.write_all(text.as_bytes()).unwrap();
    std::fs::write(&xz, enc.finish().unwrap()).unwrap();
    for p in [gz, xz] {
        let v = replay_json(&["trace", "replay", p.to_str().unwrap(), "--json"]);
        assert_eq!(Some(&v), first.as_ref(), "{}", p.display());
    }
}

/// Idle random reads (one per 2 us) see the device's closed-bank latency:
/// tRCD→max(tRCD, 50 ns array) + tCL 10 + tBL 8 = 68 ns, or +tRP 10 ns on
/// a row conflict (HOOP Table II timing, docs/model/memory.md).
#[test]
fn idle_reads_see_the_device_latency() {
    let mut s = stream(400, 3);
    for (i, (r, t)) in s.iter_mut().enumerate() {
        r.op = Op::Read;
        *t = i as u64 * 5000; // 2 us at 2.5 GHz
    }
    let p = tmp("idle.trace");
    std::fs::write(&p, export(Format::Durasim, &s)).unwrap();
    let v = replay_json(&["trace", "replay", p.to_str().unwrap(), "--json"]);
    let mean = v["read_latency_mean_ns"].as_f64().unwrap();
    assert!((68.0..=78.0).contains(&mean), "{mean}");
    assert_eq!(v["read_latency_p99_ns"].as_f64().unwrap(), 78.0);
    // Dependent reads back to back: the same latency, serialised.
    let chase: String = s
        .iter()
        .map(|(r, _)| format!("{:#x} C\n", r.addr))
        .collect();
    std::fs::write(&p, chase).unwrap();
    let v = replay_json(&["trace", "replay", p.to_str().unwrap(), "--json"]);
    assert_eq!(v["dependent_reads"], 400);
    let m2 = v["read_latency_mean_ns"].as_f64().unwrap();
    assert!((m2 - mean).abs() < 1.0, "{m2} vs {mean}");
    let per_req = v["sim_ns"].as_f64().unwrap() / 400.0;
    assert!(per_req >= m2 && per_req < m2 + 2.0, "{per_req}");
}

/// A run's exported stream replayed alone: the same requests, and the
/// memory-side timing of the run within the effect of the missing cores
/// (replay offers requests in file order, so a request the run's other
/// cores would have sent while one core waited on a full queue waits too;
/// docs/model/trace-replay.md).
#[test]
fn exported_run_replays_to_its_own_memory_timing() {
    let out = tmp("run.trace");
    let json = tmp("run.json");
    let (code, _, err) = durasim(&[
        "run",
        "--scheme",
        "hoop",
        "--workload",
        "hashmap",
        "--threads",
        "4",
        "--tx",
        "2000",
        "--set",
        "run.warmup_tx_share=0",
        "--trace-out",
        out.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("requests written"), "{err}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let m = &run["metrics"];
    let run_cycles = m["sim_cycles"].as_u64().unwrap();
    // The stream goes on through the run's final drain (HOOP's last GC);
    // the metrics end at the last commit: compare the stream up to it.
    let text = std::fs::read_to_string(&out).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| {
            l.starts_with('#')
                || l.split_whitespace()
                    .nth(2)
                    .and_then(|c| c.parse::<u64>().ok())
                    .is_some_and(|c| c <= run_cycles)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(text.contains(" log ") && text.contains(" demand") && text.contains("TXB 3 "));
    let cut = tmp("run_cut.trace");
    std::fs::write(&cut, kept).unwrap();
    let v = replay_json(&["trace", "replay", cut.to_str().unwrap(), "--json"]);
    let run_read = m["nvm_bytes_read"].as_u64().unwrap() / 64;
    assert_eq!(v["reads"].as_u64().unwrap(), run_read);
    assert_eq!(v["tx_markers"], 4000);
    let run_ns = run_cycles as f64 / 2.5;
    let sim_ns = v["sim_ns"].as_f64().unwrap();
    let run_lat = m["nvm_read_latency_cycles_mean"].as_f64().unwrap() / 2.5;
    let lat = v["read_latency_from_offer_mean_ns"].as_f64().unwrap();
    eprintln!(
        "run: {run_ns:.0} ns, {run_read} line reads, NVM read latency {run_lat:.1} ns; replay: {sim_ns:.0} ns, read latency offer->data {lat:.1} ns"
    );
    // Request stamps carry the cores' compute and cache time, so the
    // replay spans the run (its last writes drain a little after it).
    assert!(
        sim_ns >= 0.95 * run_ns && sim_ns <= 1.1 * run_ns,
        "replay {sim_ns} ns vs run {run_ns} ns"
    );
    assert!(
        (lat / run_lat - 1.0).abs() < 0.08,
        "replay {lat} ns vs run {run_lat} ns"
    );
}

#[test]
fn replay_library_api_reports_requests() {
    let s = stream(300, 11);
    let text = export(Format::Vans, &s);
    let p = durasim::Params::defaults(&durasim::schemes::all_params());
    let mut mc = durasim::mem::MemoryController::nvm(&p, false);
    let r = replay::replay(
        std::io::Cursor::new(text.into_bytes()),
        "mem",
        None,
        replay::ReplayConfig::from_params(&p),
        &mut mc,
    )
    .unwrap();
    assert_eq!(r.format, "vans");
    assert_eq!(r.requests, 300);
    assert_eq!(r.reads + r.writes, 300);
    assert!(r.read_latency_p50_ns <= r.read_latency_p99_ns);
}
