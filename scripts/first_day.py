#!/usr/bin/env python3
"""A researcher's first day, replayed: the README's quick start (its shell
commands and its Python snippet) and each paper's tiny report, run as a new
user would, every output checked for degeneracy.

    scripts/first_day.py [--bin target/release/durasim] [--tx N]
                         [--papers hoop,dpc,morlog,ehou | --papers none] [--out DIR]

What counts as degenerate:

- ``durasim compare``: a ratio column (throughput, latency, writes) that is
  1.000 in every row; a scheme other than ``ideal`` that writes 0 B/tx
  (traffic is what the comparison is about);
- ``durasim run``: no scheme statistics (the README points at
  ``gc_runs_periodic``), zero throughput;
- ``durasim crashtest``: no crash point tested, or a violation;
- the Python snippet: it fails, a sweep row writes 0 B/tx, or no crash
  point was tested;
- a paper's tiny report: a figure whose own checks
  (:mod:`durasim._figcheck`) state a limitation of its data (an all-equal
  sweep or bars, a step carried by one point, differences inside the
  run-to-run spread), unless :data:`KNOWN_TINY` lists it with the reason the
  tiny scale shows it. Findings the figure fixed by its form (log axis,
  labels, dashes) and the "not steady state" stamp are reported, not failed.

Exit 0 when nothing is degenerate, 1 otherwise (each finding printed), 2 on
bad arguments. ``--tx`` shortens the quick start's runs (the pytest in
python/tests/test_first_day.py uses it to stay within a few minutes)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.M | re.S)
PY_TX = re.compile(r"(\btx=|\"tx\":\s*)\d[\d_]*")

#: Findings a tiny report is expected to state: (paper, experiment, check)
#: -> why the tiny scale shows it. Anything else stated fails.
KNOWN_TINY = {
    ("hoop", "gc_reduction", "all-equal series"): (
        "10-100 transactions per run: no GC coalescing yet"
    ),
    ("hoop", "gc_period", "all-equal series"): (
        "runs of 0.1 ms against GC periods of 2-14 ms: only the final GC runs"
    ),
    ("hoop", "mapping_table", "all-equal series"): "the mapping table never fills in 100 tx",
    ("ehou", "ait_cache", "all-equal series"): "40 transactions touch few AIT-cache sets",
    ("dpc", "pool_size", "all-equal series"): (
        "the tiny runs end before the derivative pool fills at any swept size"
    ),
}
#: The stamp of a figure drawn off steady state (the scale says so; not a failure).
STAMP = "not steady state"


def quick_start() -> tuple[list[str], str]:
    """The README quick start's shell commands (continuations joined,
    ``export`` dropped) and its Python snippet."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## Quick start")
    end = text.index("\n## ", start + 1)
    cmds, py = [], ""
    for m in FENCE.finditer(text[start:end]):
        lang, body = m[1].strip(), m[2]
        if lang == "python":
            py += body
        elif lang == "sh":
            for line in body.replace("\\\n", " ").splitlines():
                line = line.split(" #")[0].strip()
                if line and not line.startswith(("#", "export ")):
                    cmds.append(line)
    return cmds, py


def _ratio_columns(out: str) -> list[str]:
    problems = []
    lines = [ln.split() for ln in out.splitlines() if ln.strip()]
    head = next((i for i, ln in enumerate(lines) if "norm_tput" in ln), None)
    if head is None:
        return ["compare printed no table (no 'norm_tput' header)"]
    cols = lines[head]
    rows = [r for r in lines[head + 1 :] if len(r) == len(cols)]
    if not rows:
        return ["compare printed no rows"]
    for c in ("norm_tput", "norm_lat", "norm_wr"):
        vals = {r[cols.index(c)] for r in rows}
        if vals == {"1.000"}:
            problems.append(f"compare: every row's {c} is 1.000")
    for r in rows:
        if r[cols.index("scheme")] != "ideal" and float(r[cols.index("write_B/tx")]) == 0:
            problems.append(f"compare: {r[1]} on {r[0]} writes 0 B/tx")
    return problems


def run_cli(cmds: list[str], exe: str, tx: int | None, cwd: Path) -> list[str]:
    problems = []
    for cmd in cmds:
        argv = shlex.split(cmd)
        if argv[0] != "durasim":
            continue
        argv[0] = exe
        if tx is not None and "--tx" in argv:
            i = argv.index("--tx")
            argv[i + 1] = str(min(int(argv[i + 1]), tx))
        t0 = time.time()
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=1800)
        print(f"  {shlex.join(['durasim', *argv[1:]])}  ({time.time() - t0:.0f} s)", flush=True)
        if p.returncode != 0:
            problems.append(f"`{cmd}` exited {p.returncode}: {p.stderr.strip()[:300]}")
            continue
        sub = argv[1]
        if sub == "compare":
            problems += _ratio_columns(p.stdout)
        elif sub == "run":
            if "--scheme hoop" in cmd and "gc_runs_periodic" not in p.stdout:
                problems.append("run: no gc_runs_periodic among the scheme statistics")
            m = re.search(r"throughput\s+([\d.]+)", p.stdout)
            if m and float(m[1]) == 0:
                problems.append("run: throughput 0")
        elif sub == "crashtest":
            m = re.search(r"crash points tested\s+(\d+)", p.stdout)
            if not m or int(m[1]) == 0:
                problems.append("crashtest: no crash point tested")
            if "violations                 0" not in p.stdout and "PASS" not in p.stdout:
                problems.append("crashtest: violations")
        elif sub == "list" and not p.stdout.strip():
            problems.append(f"`{cmd}` printed nothing")
    return problems


def run_snippet(code: str, tx: int | None, cwd: Path) -> list[str]:
    if tx is not None:
        code = PY_TX.sub(lambda m: f"{m[1]}{tx}", code)
    ns: dict = {}
    old = os.getcwd()
    os.chdir(cwd)
    t0 = time.time()
    try:
        exec(compile(code, "README.md (Quick start)", "exec"), ns)
    except Exception as e:
        return [f"README Python snippet failed: {type(e).__name__}: {e}"]
    finally:
        os.chdir(old)
    print(f"  README Python snippet ({time.time() - t0:.0f} s)", flush=True)
    problems = []
    df = ns.get("df")
    if df is not None and "write_bytes_per_tx" in df and (df["write_bytes_per_tx"] <= 0).any():
        zero = df[df["write_bytes_per_tx"] <= 0][["scheme", "workload"]].values.tolist()
        problems.append(f"snippet sweep: runs writing 0 B/tx: {zero}")
    c = ns.get("c")
    if isinstance(c, dict) and not c.get("crash_points_tested"):
        problems.append("snippet crashtest: no crash point tested")
    r = ns.get("r")
    if isinstance(r, dict) and not r.get("metrics", {}).get("throughput_tx_per_mcycle"):
        problems.append("snippet run: zero throughput")
    return problems


def run_report(paper: str, out: Path) -> list[str]:
    """``durasim-lab reproduce PAPER --scale tiny`` as typed, then its figures' checks."""
    argv = [sys.executable, "-m", "durasim.lab", "reproduce", paper, "--scale", "tiny"]
    argv += ["--scheduler", "serial", "--out", str(out)]
    t0 = time.time()
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    print(f"  durasim-lab reproduce {paper} --scale tiny  ({time.time() - t0:.0f} s)", flush=True)
    if p.returncode != 0:
        return [f"{paper}: reproduce exited {p.returncode}: {p.stderr.strip()[-300:]}"]
    cfg = json.loads((out / "config.json").read_text())
    problems = []
    for eid, e in cfg["experiments"].items():
        if "figure_checks" not in e:
            problems.append(f"{paper} ({eid}): the report recorded no figure checks")
        for f in e.get("figure_checks", []):
            if f["check"] == STAMP or not f["form"].startswith("stated"):
                continue
            if (paper, eid, f["check"]) in KNOWN_TINY:
                continue
            problems.append(f"{paper} ({eid}): {f['check']}: {f['text']}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "durasim"))
    ap.add_argument("--tx", type=int, default=None, help="cap the quick start's run lengths")
    ap.add_argument("--papers", default="hoop,dpc,morlog,ehou", help="'none' skips the reports")
    ap.add_argument("--out", default=None, help="where the reports go (default: a temp dir)")
    a = ap.parse_args(argv)
    if not Path(a.bin).exists():
        print(f"error: no durasim binary at {a.bin} (build it: make build)", file=sys.stderr)
        return 2
    from durasim.papers import PAPERS

    papers = [] if a.papers == "none" else a.papers.split(",")
    for p in papers:
        if p not in PAPERS:
            print(
                f"error: unknown paper '{p}'; valid choices: {', '.join(PAPERS)}", file=sys.stderr
            )
            return 2
    cmds, py = quick_start()
    problems: list[str] = []
    print("README quick start:", flush=True)
    problems += run_cli(cmds, a.bin, a.tx, ROOT)
    problems += run_snippet(py, a.tx, ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(a.out or tmp)
        if papers:
            print("tiny reports:", flush=True)
        for p in papers:
            problems += run_report(p, base / p)
    if problems:
        print(f"\n{len(problems)} degenerate outputs:")
        for x in problems:
            print(f"  - {x}")
        return 1
    print("\nnothing degenerate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
