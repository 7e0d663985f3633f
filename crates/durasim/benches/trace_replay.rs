//! `trace replay` speed: requests per host second replaying 200 000 random
//! 64 B requests (reads:writes 2:1 over 1 GiB, all ready at cycle 0, like
//! shared/peers/gen_trace.py's random trace) from an in-memory DRAMsim3-format
//! trace, parsing included. Run: `cargo bench -p durasim --bench trace_replay`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use durasim::mem::MemoryController;
use durasim::trace::{replay, Format};
use durasim::{schemes, Params};
use std::fmt::Write;

const REQUESTS: usize = 200_000;

fn trace_text() -> Vec<u8> {
    let mut s = String::with_capacity(REQUESTS * 20);
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for _ in 0..REQUESTS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let addr = (x >> 8) % (1 << 24) * 64;
        let op = if x.is_multiple_of(3) { "WRITE" } else { "READ" };
        writeln!(s, "{addr:#x} {op} 0").unwrap();
    }
    s.into_bytes()
}

fn bench(c: &mut Criterion) {
    let text = trace_text();
    let mut p = Params::defaults(&schemes::all_params());
    for (k, v) in [
        ("nvm.channels", "1"),
        ("nvm.address_mapping", "line-interleaved"),
        ("trace.cycle_ns", "2"),
        ("trace.offer_interval_ns", "2"),
    ] {
        p.set_str(k, v).unwrap();
    }
    let cfg = replay::ReplayConfig::from_params(&p);
    let mut g = c.benchmark_group("trace_replay");
    g.sample_size(10);
    g.throughput(Throughput::Elements(REQUESTS as u64));
    g.bench_function("random_200k_dramsim3", |b| {
        b.iter_batched(
            || MemoryController::nvm(&p, false),
            |mut mc| {
                let r = std::io::Cursor::new(&text[..]);
                replay::replay(r, "mem", Some(Format::Dramsim3), cfg, &mut mc).unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
