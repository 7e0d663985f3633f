#!/usr/bin/env python3
"""Print the README's speed table from a run of the criterion benchmark.

    make bench        # or: cargo bench -p durasim --bench sim_speed -- sim_speed_paper
    python3 scripts/speed_table.py      # target/criterion or $CARGO_TARGET_DIR/criterion
    python3 scripts/speed_table.py --criterion DIR

One row per scheme of the `sim_speed_paper` group (ids `scheme@preset`):
its paper's preset, simulated memory operations (loads + stores) per host
second in millions (criterion's median time of one run), and the ratio to
`ideal` on the same preset, workload and threads. The header line gives the
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
        runs.append(
            {
                "scheme": scheme,
                "preset": preset,
                "mops": ops / median_ns * 1e3,
                "mtime": est_file.stat().st_mtime,
            }
        )
    if not runs:
        fail(f"'{GROUP}' in {root} holds no finished benchmark")
    return runs


def table(runs: list[dict]) -> str:
    ideal = {r["preset"]: r["mops"] for r in runs if r["scheme"] == "ideal"}
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
        "| scheme | preset | M ops/s | ratio to `ideal` |",
        "| --- | --- | ---: | ---: |",
    ]
    for r in runs:
        base = ideal.get(r["preset"])
        ratio = f"{r['mops'] / base:.2f}" if base else "n/a"
        lines.append(f"| `{r['scheme']}` | {r['preset']} | {r['mops']:.2f} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--criterion", type=Path, default=None, help="criterion's output directory")
    args = ap.parse_args()
    print(table(read_runs(args.criterion or criterion_dir())))


if __name__ == "__main__":
    main()
