#!/usr/bin/env python3
"""Compare two `durasim compare --csv` grids cell by cell.

    scripts/grid_diff.py BEFORE.csv AFTER.csv [--metric throughput_tx_per_mcycle ...]

Prints, per (workload, scheme), each metric before and after and the ratio,
then each workload's scheme ranking by throughput before and after, so a
model change's effect on the ranking is visible at a glance. Exit code 1 if
the grids differ at all (a golden-grid check), 0 if identical.
"""

import argparse
import csv
import sys

DEFAULT = [
    "throughput_tx_per_mcycle",
    "critical_path_cycles_mean",
    "critical_path_cycles_p99",
    "write_bytes_per_tx",
]


def load(path):
    with open(path, newline="") as f:
        return {(r["workload"], r["scheme"]): r for r in csv.DictReader(f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--metric", action="append", help="metric column(s) to show")
    a = ap.parse_args()
    before, after = load(a.before), load(a.after)
    metrics = a.metric or DEFAULT
    identical = before == after
    print("workload  scheme    " + "".join(f"{m[:22]:>36}" for m in metrics))
    for key in sorted(set(before) | set(after)):
        b, n = before.get(key), after.get(key)
        cells = []
        for m in metrics:
            vb = float(b[m]) if b and b.get(m) not in (None, "") else float("nan")
            va = float(n[m]) if n and n.get(m) not in (None, "") else float("nan")
            ratio = va / vb if vb else float("nan")
            cells.append(f"{vb:>12.1f} ->{va:>12.1f} x{ratio:>6.2f}")
        print(f"{key[0]:<9} {key[1]:<9} " + " ".join(cells))
    print("\nranking by throughput (best first): before | after")

    def rank(g, w):
        rows = [(float(r["throughput_tx_per_mcycle"]), s) for (wl, s), r in g.items() if wl == w]
        return ",".join(s for _, s in sorted(rows, reverse=True))

    for w in sorted({k[0] for k in set(before) | set(after)}):
        print(f"{w:<9} {rank(before, w)} | {rank(after, w)}")
    sys.exit(0 if identical else 1)


if __name__ == "__main__":
    main()
