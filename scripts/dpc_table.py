#!/usr/bin/env python3
"""README "Checkpointing family" tables from a `durasim-lab reproduce dpc`
report: execution time and NVM writes normalized to dpc per workload, each
system's overhead over the Baseline, checkpoints and checkpoint time share.

    python3 scripts/dpc_table.py report/dpc
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

SYSTEMS = ["ckpt-logging", "ckpt-cow", "thynvm", "page-overlay"]
NAMES = {
    "ideal": "Baseline",
    "dpc": "DPC",
    "ckpt-logging": "Logging",
    "ckpt-cow": "CoW",
    "thynvm": "ThyNVM",
    "page-overlay": "PageOverlay",
}


def _fmt(v: float, pct: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "stopped"
    return f"{v:+.0f}%" if pct else f"{v:.2f}"


def _geo(vals: list[float]) -> float:
    v = [x for x in vals if x and not math.isnan(x) and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def main(report: Path) -> None:
    a = pd.read_csv(report / "a_overall.csv")
    b = pd.read_csv(report / "b_checkpoints.csv")
    workloads = list(dict.fromkeys(a["workload"]))

    def val(df, s, w, col):
        r = df[(df["scheme"] == s) & (df["workload"] == w)]
        return float(r[col].iloc[0]) if len(r) else float("nan")

    head = ["workload", "DPC over Baseline"] + [f"{NAMES[s]} time" for s in SYSTEMS]
    head += [f"{NAMES[s]} writes" for s in SYSTEMS]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    cols: dict[str, list[float]] = {h: [] for h in head[1:]}
    for w in workloads:
        cells = [val(a, "dpc", w, "overhead_vs_baseline_pct")]
        cells += [val(a, s, w, "time_vs_dpc") for s in SYSTEMS]
        cells += [val(a, s, w, "writes_vs_dpc") for s in SYSTEMS]
        for h, c in zip(head[1:], cells):
            cols[h].append(c)
        txt = [_fmt(cells[0], pct=True)] + [_fmt(c) for c in cells[1:]]
        print(f"| {w} | " + " | ".join(txt) + " |")
    geo = [_fmt(_geo([1 + x / 100 for x in cols[head[1]]]) * 100 - 100, pct=True)]
    geo += [_fmt(_geo(cols[h])) for h in head[2:]]
    print("| **geomean** | " + " | ".join(geo) + " |")
    print()
    head = ["workload"] + [f"{NAMES[s]} ckpts / % time" for s in ["dpc", *SYSTEMS]]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for w in workloads:
        cells = []
        for s in ["dpc", *SYSTEMS]:
            n, p = val(b, s, w, "checkpoints"), val(b, s, w, "checkpoint_time_pct")
            cells.append("stopped" if math.isnan(n) else f"{n:.0f} / {p:.0f}%")
        print(f"| {w} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "report/dpc"))
