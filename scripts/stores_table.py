#!/usr/bin/env python3
"""What each transactional workload stores per transaction, measured on the
native system (`ideal`), for docs/model/workloads.md ("Stores per
transaction beside HOOP Table III").

    python3 scripts/stores_table.py        # the table, from runs of the release CLI

One thread, the default 16,384 initial items, `update_ratio` 0.5, 5,000
transactions (the 25 % warm-up excluded), with the workload's own item
size and with `workload.item_bytes` set to the other size HOOP §IV-A
uses (1 KB items; 512 B YCSB records). Each run takes well under a
second. `scripts/docs.py check` fails when the page's block differs from
what this prints, so a workload change that moves a store count shows up
as a stale page; `scripts/docs.py gen` rewrites the block. The binary is
`$DURASIM_BIN`, else `$CARGO_TARGET_DIR/release/durasim`, else
`target/release/durasim`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# The CLI the docs check uses (scripts/ is on the path when run).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs import durasim_bin

ROOT = Path(__file__).resolve().parents[1]
TX = 5000

# (workload, its own item size as the table names it, the other size HOOP
# §IV-A uses as (name, `workload.item_bytes`), or None where it does not apply).
ROWS = [
    ("vector", "64 B", ("1 KB", 1024)),
    ("hashmap", "64 B", ("1 KB", 1024)),
    ("queue", "64 B", ("1 KB", 1024)),
    ("rbtree", "64 B", ("1 KB", 1024)),
    ("btree", "64 B", ("1 KB", 1024)),
    ("ycsb", "1 KB", ("512 B", 512)),
    ("tpcc", "TPC-C rows", None),
    ("echo", "64 B", ("1 KB", 1024)),
    ("tatp", "TATP rows", None),
]


def measure(workload: str, item_bytes: int) -> dict[str, float]:
    """Stores and written lines per measured transaction, footprint in MiB."""
    cmd = [
        str(durasim_bin()),
        "run",
        "--scheme",
        "ideal",
        "--workload",
        workload,
        "--threads",
        "1",
        "--tx",
        str(TX),
        "--set",
        f"workload.item_bytes={item_bytes}",
        "--quiet",
        "--json",
        "-",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        raise SystemExit(f"stores_table.py: {' '.join(cmd)} failed:\n{res.stderr}")
    m = json.loads(res.stdout)["metrics"]
    return {
        "stores": m["program_stores_per_tx"],
        "lines": m["written_lines"] / m["measured_tx"],
        "words_per_line": m["words_per_written_line"],
        "repeated": m["repeated_store_share"],
        "silent": m["silent_store_share"],
        "fpc": m["written_line_compression_ratio_fpc"],
        "dldc": m["written_line_compression_ratio_dldc"],
        "footprint_mib": m["footprint_bytes"] / 2**20,
    }


def pct(v: float) -> str:
    return "0" if v == 0 else f"{100 * v:.1f}%"


def block(args: list[str] | None = None) -> str:
    if args:
        raise SystemExit(f"stores_table.py: unknown argument '{args[0]}' (it takes none)")
    jobs = [(w, 0) for w, _, _ in ROWS] + [(w, o[1]) for w, _, o in ROWS if o]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = dict(zip(jobs, pool.map(lambda j: measure(*j), jobs)))
    out = [
        f"Measured: `python3 scripts/stores_table.py` (`ideal`, 1 thread, {TX:,} "
        "transactions, the 25 % warm-up excluded; per measured transaction; the "
        "metrics are defined in [metrics.md](metrics.md#workload-characterisation-window)).",
        "",
        "| workload | items | stores/tx | written lines/tx | words per written line "
        "| repeated-store share | silent-store share | FPC / DLDC ratio of written lines "
        "| footprint (MiB) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for w, own, other in ROWS:
        for size, ib in [(own, 0)] + ([other] if other else []):
            a = got[(w, ib)]
            out.append(
                f"| {w} | {size} | {a['stores']:.1f} | {a['lines']:.1f} "
                f"| {a['words_per_line']:.2f} | {pct(a['repeated'])} | {pct(a['silent'])} "
                f"| {a['fpc']:.2f} / {a['dldc']:.2f} | {a['footprint_mib']:.1f} |"
            )
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        print(block(argv[1:]))
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
