"""scripts/instr_split.py: the benchmark's runs read from its source, and
callgrind's per-file counts charged to the simulator's components."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scripts_dir import load_script

ROOT = Path(__file__).resolve().parents[2]


def load():
    return load_script("instr_split")


def test_runs_are_the_benchmarks():
    m = load()
    runs = m.bench_runs(m.BENCH.read_text())
    by_preset: dict[str, list[str]] = {}
    for r in runs:
        by_preset.setdefault(r["preset"], []).append(r["scheme"])
    assert list(by_preset) == ["hoop", "morlog", "dpc", "ehou"]
    # `ideal` first on every preset, then that paper's schemes.
    assert all(s[0] == "ideal" for s in by_preset.values())
    assert "hoop" in by_preset["hoop"] and "morlog-dp-slde" in by_preset["morlog"]
    assert {r["threads"] for r in runs if r["preset"] == "ehou"} == {4}
    assert {r["workload"] for r in runs if r["preset"] == "dpc"} == {"tatp"}
    assert {r["tx"] for r in runs} == {100_000}


ANNOTATED = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
400 (40.00%)  crates/durasim/src/engine/core.rs:durasim::engine::Engine::run
200 (20.00%)  crates/durasim/src/mem/controller/queue.rs:durasim::mem::controller::Mc::write [/x/d]
150 (15.00%)  /rustc/abc/library/core/src/slice/index.rs:durasim::mem::media::Media::cost_bits
100 (10.00%)  crates/durasim/src/mem/media/dldc.rs:durasim::engine::Engine::run
 90 ( 9.00%)  crates/durasim/src/schemes/hoop/mod.rs:<durasim::schemes::hoop::Hoop as Scheme>::store
 60 ( 6.00%)  ./string/memmove-vec-unaligned-erms.S:__memcpy_avx_unaligned_erms [/lib/libc.so.6]
"""


def test_split_charges_each_line_to_its_component():
    m = load()
    total, parts = m.split(ANNOTATED)
    assert total == 1000
    assert sum(parts.values()) == total
    assert parts["engine"] == 400
    assert parts["controller"] == 200
    # Inlined library code: the function it was inlined into; crate code
    # inlined elsewhere: its own file.
    assert parts["media"] == 150 + 100
    # A trait impl's symbol names the scheme's module.
    assert (
        m.component(
            "/rustc/x/core/src/ptr.rs",
            "<durasim::schemes::logging::fwb::Fwb as durasim::schemes::Scheme>::store",
        )
        == "scheme"
    )
    assert parts["scheme"] == 90
    assert parts["other"] == 60


def test_table_ratios_and_extra_work():
    m = load()
    names = [n for n, _ in m.COMPONENTS]
    zero = {n: 0 for n in names}
    ideal = {
        "scheme": "ideal",
        "preset": "p",
        "ops": 100,
        "total": 50_000,
        "parts": {**zero, "engine": 40_000, "controller": 10_000},
    }
    # 200 more instructions per op in the controller, 50 in the scheme.
    s = {
        "scheme": "s",
        "preset": "p",
        "ops": 100,
        "total": 75_000,
        "parts": {**zero, "engine": 40_000, "controller": 30_000, "scheme": 5_000},
    }
    rows = m.table([ideal, s]).splitlines()
    row = rows[3].split(" | ")
    assert row[2] == "750"
    assert row[3] == "0.67"  # 500 / 750
    assert row[4 + names.index("controller")] == "+200"
    assert row[4 + names.index("scheme")] == "+50"
    # With no controller at all: (500 - 100) / (750 - 300).
    assert row[-2] == "0.89"
    # With the controller at ideal's 100 per op: 500 / 550.
    assert row[-1].rstrip(" |") == "0.91"


def test_kept_runs_read_ops_from_the_json(tmp_path, monkeypatch):
    m = load()
    run = {"scheme": "hoop", "preset": "hoop", "workload": "ycsb", "threads": 4, "tx": 100_000}
    (tmp_path / "hoop@hoop.callgrind").write_text("")
    (tmp_path / "hoop@hoop.json").write_text(
        json.dumps({"tx": 20_000, "sim": {"sim_mem_ops": 1234}})
    )
    monkeypatch.setattr(m, "annotate", lambda out: {"total": 99, "parts": {}})
    r = m.kept(run, tmp_path)
    assert (r["ops"], r["tx"], r["total"]) == (1234, 20_000, 99)


def test_from_a_directory_without_runs_is_a_clear_error(tmp_path):
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "instr_split.py"), "--from", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2
    assert "no kept run" in p.stderr
