#!/usr/bin/env python3
"""Host instructions per simulated memory operation, per scheme and per
component: the speed table's ratios without the host's noise.

    cargo build --release -p durasim
    python3 scripts/instr_split.py                 # every benchmarked scheme, as benchmarked
    python3 scripts/instr_split.py --only hoop@hoop --only ideal@hoop
    python3 scripts/instr_split.py --tx 20000 --jobs 2 --keep DIR
    python3 scripts/instr_split.py --from DIR     # the table again from kept files

For every (scheme, preset) of the criterion benchmark's `sim_speed_paper`
group (read from crates/durasim/benches/sim_speed.rs, so the two cannot
disagree), it runs the CLI on the benchmark's workload and threads under
callgrind, counting only `Engine::run` (the benchmark's timed window; op
streams generated inline, `--gen-thread off`, so the generator's work is
counted too, the same for every scheme of a preset). Each instruction is
charged to the source file it came from, inlined code included, and files
are grouped into components: the memory controller, the NVM media model,
the memory image, the caches, the engine, the workload, the scheme
(schemes/), and the rest.

Printed: instructions per memory operation; their ratio to `ideal`'s on
the same preset (a scheme with the same host instructions per cycle as
`ideal` would run at that ratio of its speed); the extra instructions per
operation over `ideal`'s, by component; the ratio if the memory
controller cost nothing at all (its instructions removed from both
rows: the most any controller design, exact or not, could give); and the
ratio if the memory system (controller and media) spent on the scheme's
traffic no more per operation than on `ideal`'s. Instruction counts are deterministic: the
same binary and inputs give the same numbers on any host. They leave out
what instructions do not show (host cache misses, page faults), which the
wall-clock table includes.

Needs valgrind (callgrind, callgrind_annotate). A diagnostic; not run by
the tests (which check its parsing only).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "crates" / "durasim" / "benches" / "sim_speed.rs"

#: Components, in print order: what each source directory is.
COMPONENTS = [
    ("controller", "mem/controller"),
    ("media", "mem/media"),
    ("image", "mem/image"),
    ("mem other", "mem"),
    ("caches", "cache"),
    ("engine", "engine"),
    ("workload", "workloads"),
    ("scheme", "schemes"),
    ("other", ""),
]
MEMORY_SYSTEM = ("controller", "media")


def fail(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def bench_runs(src: str) -> list[dict]:
    """The (preset, workload, threads, schemes) entries of the benchmark's
    PAPERS table; `ideal` runs on every preset, first."""
    block = re.search(r"const PAPERS[^=]*=\s*&\[(.*?)\n\];", src, re.S)
    if not block:
        fail(f"no PAPERS table in {BENCH}")
    body = re.sub(r"//[^\n]*", "", block.group(1))
    runs = []
    entry = re.compile(
        r'\(\s*"([\w-]+)",\s*"([\w-]+)",\s*(\d+),\s*([\d_]+),\s*&\[(.*?)\],?\s*\)', re.S
    )
    for preset, workload, threads, tx, names in entry.findall(body):
        schemes = ["ideal", *re.findall(r'"([\w-]+)"', names)]
        runs += [
            {
                "scheme": s,
                "preset": preset,
                "workload": workload,
                "threads": int(threads),
                "tx": int(tx.replace("_", "")),
            }
            for s in schemes
        ]
    if not runs:
        fail(f"the PAPERS table of {BENCH} lists no run")
    return runs


_TOTAL = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+PROGRAM TOTALS\s*$")
_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?):(.*?)(?:\s+\[[^\]]*\])?\s*$")


def component(file: str, function: str) -> str:
    """The component of one annotated line: by the source file when it is
    the crate's, else (inlined standard-library code, libc) by the function
    it was inlined into."""
    m = re.search(r"crates/durasim/src/(.*)", file)
    if m:
        path = m.group(1)
    else:
        fm = re.search(r"durasim::((?:\w+::)*)", function)
        if not fm:
            return "other"
        path = fm.group(1).replace("::", "/")
    for name, prefix in COMPONENTS:
        if prefix and (
            path == prefix or path.startswith(prefix + "/") or path.startswith(prefix + ".")
        ):
            return name
    return "other"


def split(annotated: str) -> tuple[int, dict[str, int]]:
    """Total instructions and instructions per component from
    `callgrind_annotate` output (self cost per file:function)."""
    total = None
    parts: dict[str, int] = {name: 0 for name, _ in COMPONENTS}
    for line in annotated.splitlines():
        t = _TOTAL.match(line)
        if t:
            total = int(t.group(1).replace(",", ""))
            continue
        m = _LINE.match(line)
        if m:
            parts[component(m.group(2), m.group(3))] += int(m.group(1).replace(",", ""))
    if total is None:
        fail("callgrind_annotate printed no PROGRAM TOTALS line")
    return total, parts


def measure(binary: Path, run: dict, tx: int | None, keep: Path) -> dict:
    out = keep / f"{run['scheme']}@{run['preset']}.callgrind"
    cmd = [
        "valgrind", "--tool=callgrind", "--toggle-collect=*Engine*run*",
        f"--callgrind-out-file={out}", str(binary), "run", "-q",
        "--scheme", run["scheme"], "--workload", run["workload"],
        "--config", str(ROOT / "configs" / f"{run['preset']}.toml"),
        "--threads", str(run["threads"]), "--tx", str(tx or run["tx"]), "--gen-thread", "off",
        "--json", str(keep / f"{run['scheme']}@{run['preset']}.json"),
    ]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{run['scheme']}@{run['preset']}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return kept(run, keep)


def annotate(out: Path) -> dict:
    """Total and per-component instructions of one callgrind file."""
    ann = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--auto=no", str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total, parts = split(ann)
    return {"total": total, "parts": parts}


def kept(run: dict, keep: Path) -> dict:
    """One run's counts from the files its run left in `keep`: the
    callgrind file and the JSON (whose `sim` block has the window's memory
    ops and whose `tx` the transactions)."""
    name = f"{run['scheme']}@{run['preset']}"
    out, js = keep / f"{name}.callgrind", keep / f"{name}.json"
    for f in (out, js):
        if not f.is_file():
            fail(f"{keep}: no {f.name} (keep a run there with --keep)")
    doc = json.loads(js.read_text())
    ops = doc.get("sim", {}).get("sim_mem_ops")
    if not ops:
        fail(f"{keep}: {js.name} has no sim.sim_mem_ops")
    return {**run, "tx": doc.get("tx", run["tx"]), "ops": ops, **annotate(out)}


def table(results: list[dict]) -> str:
    ideal = {r["preset"]: r for r in results if r["scheme"] == "ideal"}
    names = [n for n, _ in COMPONENTS]
    head = ["scheme", "preset", "instr/op", "ratio to `ideal`"]
    head += [f"+{n}" for n in names]
    head += ["ratio, controller free", "ratio, memory system at `ideal`'s"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    for r in results:
        i = ideal.get(r["preset"])
        per_op = r["total"] / r["ops"]
        cells = [f"`{r['scheme']}`", r["preset"], f"{per_op:,.0f}"]
        if i is None:
            lines.append("| " + " | ".join(cells + [""] * (len(head) - 3)) + " |")
            continue
        ideal_op = i["total"] / i["ops"]
        extra = {n: r["parts"][n] / r["ops"] - i["parts"][n] / i["ops"] for n in names}
        mem_extra = sum(extra[n] for n in MEMORY_SYSTEM)
        cells.append(f"{ideal_op / per_op:.2f}")
        cells += [f"{extra[n]:+,.0f}" for n in names]
        ctrl_ideal, ctrl = i["parts"]["controller"] / i["ops"], r["parts"]["controller"] / r["ops"]
        cells.append(f"{(ideal_op - ctrl_ideal) / (per_op - ctrl):.2f}")
        cells.append(f"{ideal_op / (per_op - mem_extra):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--bin", type=Path, default=None, help="durasim binary (default: the release build)"
    )
    ap.add_argument(
        "--tx", type=int, default=None, help="transactions per run (default: the benchmark's)"
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once")
    ap.add_argument(
        "--only", action="append", default=[], metavar="SCHEME@PRESET", help="run only these"
    )
    ap.add_argument("--keep", type=Path, default=None, help="keep callgrind files in DIR")
    ap.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=None,
        metavar="DIR",
        help="print the table from the files a --keep run left in DIR (no runs)",
    )
    a = ap.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = a.bin or target / "release" / "durasim"
    if a.source is not None and not a.source.is_dir():
        fail(f"--from {a.source}: not a directory")
    if a.source is None and not binary.is_file():
        fail(f"no binary at {binary} (run `cargo build --release -p durasim` or pass --bin)")
    if a.tx is not None and a.tx <= 0:
        fail(f"--tx must be positive, got {a.tx}")
    runs = bench_runs(BENCH.read_text())
    if a.only:
        known = {f"{r['scheme']}@{r['preset']}" for r in runs}
        for o in a.only:
            if o not in known:
                close = difflib.get_close_matches(o, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                valid = ", ".join(sorted(known))
                fail(f"--only {o!r}: not a benchmarked scheme@preset{hint} (valid: {valid})")
        runs = [r for r in runs if f"{r['scheme']}@{r['preset']}" in a.only]
    if a.source is not None:
        if not a.only:
            # Only the runs kept there (a --keep run may have had --only).
            runs = [r for r in runs if (a.source / f"{r['scheme']}@{r['preset']}.json").is_file()]
            if not runs:
                fail(f"--from {a.source}: no kept run of the benchmark there")
        results = [kept(r, a.source) for r in runs]
        source = a.source
    else:
        keep = a.keep or Path(tempfile.mkdtemp(prefix="instr_split_"))
        keep.mkdir(parents=True, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            results = list(pool.map(lambda r: measure(binary, r, a.tx, keep), runs))
        source = binary
    txs = sorted({r["tx"] for r in results})
    print("Instructions in `Engine::run` per simulated memory operation,")
    print(f"{'/'.join(map(str, txs))} transactions, {source}:\n")
    print(table(results))


if __name__ == "__main__":
    main()
