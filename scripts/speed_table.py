#!/usr/bin/env python3
"""Print the README's speed table from a run of the criterion benchmark.

    make bench        # or: cargo bench -p durasim --bench sim_speed -- sim_speed_paper
    python3 scripts/speed_table.py      # target/criterion or $CARGO_TARGET_DIR/criterion
    python3 scripts/speed_table.py --criterion DIR
    python3 scripts/speed_table.py --readme    # one row per preset
    make bench-free   # the same benchmark built with the free-memory feature, then:
    python3 scripts/speed_table.py --free target/free-memory/criterion

One row per scheme of the `sim_speed_paper` group (ids `scheme@preset`):
its paper's preset, simulated memory operations (loads + stores) per host
second in millions (criterion's median time of one run), and the ratio to
`ideal` on the same preset, workload and threads, then the simulated work
per operation: memory writes (NVM write requests plus DRAM line writes)
per memory operation of the measured window (the benchmark's `work.json`)
and that as a multiple of `ideal`'s. With `--free DIR` (a run of the
`free-memory` diagnostic build, whose memory system costs nothing) a last
column gives each scheme's ratio to `ideal` in that build: the scheme's own
host cost, without what the memory controller and media spend on its
traffic.
The header line gives the
date of the newest measurement, this machine (CPU model, CPU count, kernel)
and the load average now; run it right after the benchmark, on the machine
that ran it.
"""

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path

GROUP = "sim_speed_paper"
#: Preset order in the table (the benchmark's order); unknown ones follow.
PRESETS = ["hoop", "morlog", "dpc", "ehou"]


def criterion_dir() -> Path:
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        return Path(target) / "criterion"
    return Path(__file__).resolve().parent.parent / "target" / "criterion"


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"


def fail(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def read_runs(root: Path) -> list[dict]:
    group = root / GROUP
    if not group.is_dir():
        fail(f"no '{GROUP}' results in {root} (run `make bench` first, or pass --criterion DIR)")
    runs = []
    for bench in sorted(group.iterdir()):
        meta_file, est_file = bench / "new" / "benchmark.json", bench / "new" / "estimates.json"
        if not (meta_file.is_file() and est_file.is_file()):
            continue
        meta = json.loads(meta_file.read_text())
        est = json.loads(est_file.read_text())
        scheme, _, preset = meta["function_id"].partition("@")
        ops = (meta.get("throughput") or {}).get("Elements")
        if not preset or not ops:
            continue
        median_ns = est["median"]["point_estimate"]
        work_file = bench / "work.json"
        work = json.loads(work_file.read_text()) if work_file.is_file() else {}
        mem_ops = work.get("mem_ops") or 0
        runs.append(
            {
                "free_memory": bool(work.get("free_memory")),
                "scheme": scheme,
                "preset": preset,
                "mops": ops / median_ns * 1e3,
                "mtime": est_file.stat().st_mtime,
                # Memory writes per simulated memory operation: NVM write
                # requests plus DRAM line writes (a hybrid preset's cache);
                # None from a benchmark run before the work was recorded.
                "wpo": (
                    (work.get("nvm_write_requests", 0) + work.get("dram_bytes_written", 0) / 64)
                    / mem_ops
                    if mem_ops
                    else None
                ),
            }
        )
    if not runs:
        fail(f"'{GROUP}' in {root} holds no finished benchmark")
    return runs


def ratios(runs: list[dict]) -> dict[tuple[str, str], float]:
    """Each (scheme, preset)'s speed as a multiple of `ideal`'s on its preset."""
    ideal = {r["preset"]: r["mops"] for r in runs if r["scheme"] == "ideal"}
    return {
        (r["scheme"], r["preset"]): r["mops"] / ideal[r["preset"]]
        for r in runs
        if r["preset"] in ideal
    }


def table(runs: list[dict], free: list[dict] | None = None) -> str:
    if any(r["free_memory"] for r in runs):
        fail("the main results come from a free-memory build; pass that directory as --free")
    if free is not None and not all(r["free_memory"] for r in free):
        fail("--free needs a run of the free-memory build (`make bench-free`)")
    ratio_of = ratios(runs)
    free_ratio = ratios(free) if free is not None else {}
    order = {p: i for i, p in enumerate(PRESETS)}
    runs = sorted(
        runs,
        key=lambda r: (order.get(r["preset"], len(PRESETS)), r["preset"], r["scheme"] != "ideal"),
    )
    when = datetime.datetime.fromtimestamp(max(r["mtime"] for r in runs), datetime.timezone.utc)
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"Measured {when:%Y-%m-%d %H:%M} UTC on {machine()} (load average now {load}).",
        "",
        "| scheme | preset | M ops/s | ratio to `ideal` | memory writes per op | × `ideal`'s |"
        + (" ratio, memory system free |" if free is not None else ""),
        "| --- | --- | ---: | ---: | ---: | ---: |" + (" ---: |" if free is not None else ""),
    ]
    ideal_wpo = {r["preset"]: r["wpo"] for r in runs if r["scheme"] == "ideal"}
    for r in runs:
        rt = ratio_of.get((r["scheme"], r["preset"]))
        ratio = f"{rt:.2f}" if rt is not None else "n/a"
        wpo, wbase = r["wpo"], ideal_wpo.get(r["preset"])
        per_op = f"{wpo:.3f}" if wpo is not None else "n/a"
        times = f"{wpo / wbase:.1f}" if wpo is not None and wbase else "n/a"
        row = (
            f"| `{r['scheme']}` | {r['preset']} | {r['mops']:.2f} | {ratio} | {per_op} | {times} |"
        )
        if free is not None:
            fr = free_ratio.get((r["scheme"], r["preset"]))
            row += f" {fr:.2f} |" if fr is not None else " n/a |"
        lines.append(row)
    return "\n".join(lines)


def readme_table(runs: list[dict]) -> str:
    """The README's short form: one row per preset, `ideal`'s speed and
    every other scheme's ratio to it (write requests per op as a multiple
    of `ideal`'s in parentheses)."""
    ideal = {r["preset"]: r for r in runs if r["scheme"] == "ideal"}
    order = {p: i for i, p in enumerate(PRESETS)}
    presets = sorted(ideal, key=lambda p: (order.get(p, len(PRESETS)), p))
    when = datetime.datetime.fromtimestamp(max(r["mtime"] for r in runs), datetime.timezone.utc)
    lines = [
        f"Measured {when:%Y-%m-%d} on {machine()}.",
        "",
        "| preset | `ideal`, M ops/s | ratio to `ideal` (memory writes per op, × `ideal`'s) |",
        "| --- | ---: | --- |",
    ]
    for p in presets:
        base = ideal[p]
        cells = []
        for r in sorted(
            (r for r in runs if r["preset"] == p and r["scheme"] != "ideal"),
            key=lambda r: r["scheme"],
        ):
            work = ""
            if r["wpo"] is not None and base["wpo"]:
                work = f" ({r['wpo'] / base['wpo']:.1f}×)"
            cells.append(f"`{r['scheme']}` {r['mops'] / base['mops']:.2f}{work}")
        lines.append(f"| {p} | {base['mops']:.2f} | {', '.join(cells)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--criterion", type=Path, default=None, help="criterion's output directory")
    ap.add_argument("--readme", action="store_true", help="the README's one-row-per-preset form")
    ap.add_argument(
        "--free",
        type=Path,
        default=None,
        help="criterion's directory of a free-memory build's run (`make bench-free`): "
        "adds each scheme's ratio without the memory system's cost",
    )
    args = ap.parse_args()
    if args.readme and args.free:
        fail("--free adds a column to the full table, not to --readme")
    runs = read_runs(args.criterion or criterion_dir())
    free = read_runs(args.free) if args.free else None
    print(readme_table(runs) if args.readme else table(runs, free))


if __name__ == "__main__":
    main()
