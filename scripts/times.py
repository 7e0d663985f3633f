#!/usr/bin/env python3
"""The README's times: each step measured with `/usr/bin/time`, kept in
docs/results/times.json, printed as the README's table.

    python3 scripts/times.py measure STEP      # run STEP's command, record wall and CPU time
    python3 scripts/times.py table             # the README's table (what `make docs` checks)
    python3 scripts/times.py steps             # the steps and their commands

A measurement records the date, the machine (cores, CPU model) and the
1-minute load average before it started: a wall time measured beside other
jobs is longer than on an idle machine, and the table says so. `make docs`
fails when the README's table differs from what `table` prints.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

# The machine as the speed table names it (scripts/ is on the path when run).
sys.path.insert(0, str(Path(__file__).resolve().parent))
import speed_table

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "docs" / "results" / "times.json"

#: step -> (what the README calls it, the command measured). Commands run
#: from the repository root; the builds are measured after `make clean`
#: of what they build.
STEPS: dict[str, tuple[str, str]] = {
    "venv": ("`.venv` and the Python dependencies", "make .venv/.deps"),
    "extension": ("the Python extension (release, fat LTO)", "make python"),
    "cli": ("the CLI (release, after the extension)", "make build"),
    "report-tiny": ("the four papers' reports, tiny scale", "make report SCALE=tiny"),
    "report": ("the four papers' reports, small scale", "make report"),
    "docs": ("the documentation check", "make docs"),
    "test": ("every test, builds already made", "make test"),
}


def load() -> dict:
    return json.loads(TIMES.read_text()) if TIMES.exists() else {}


def measure(step: str) -> dict:
    if step not in STEPS:
        import difflib

        near = difflib.get_close_matches(step, list(STEPS), n=1)
        hint = f"; did you mean '{near[0]}'?" if near else ""
        raise SystemExit(f"times.py: unknown step '{step}' (valid: {', '.join(STEPS)}){hint}")
    cmd = STEPS[step][1]
    load1 = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    rc = subprocess.run(cmd, shell=True, cwd=ROOT).returncode
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        raise SystemExit(f"times.py: '{cmd}' failed (exit {rc}); nothing recorded")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rec = {
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "load": f"{load1:.1f}",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "machine": speed_table.machine(),
    }
    data = load()
    data[step] = rec
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    TIMES.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return rec


def duration(s: float) -> str:
    s = round(s)
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s} s"
    h, m = divmod(m, 60)
    return f"{h} h {m} min"


def cpu(r: dict) -> str:
    return "not recorded" if r.get("cpu_s") is None else duration(r["cpu_s"])


def table(data: dict | None = None) -> str:
    data = load() if data is None else data
    rows = [
        "| step | command | wall | CPU | load | measured |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    machines: dict[str, list[str]] = {}
    notes: list[str] = []
    for step, (label, cmd) in STEPS.items():
        r = data.get(step)
        if r is None:
            rows.append(f"| {label} | `{cmd}` | not measured | | | |")
            continue
        machines.setdefault(r["machine"], []).append(f"`{cmd}`")
        if "estimate" in r:
            # A step too long to time on a shared host yet: the estimate
            # and what it rests on, until `measure` replaces it.
            rows.append(
                f"| {label} | `{cmd}` | {r['estimate']} | {r['cpu_estimate']} | | {r['date']} |"
            )
            notes.append(f"{label[0].upper()}{label[1:]}: {r['note']}.")
            continue
        rows.append(
            f"| {label} | `{cmd}` | {duration(r['wall_s'])} | {cpu(r)} "
            f"| {r['load']} | {r['date']} |"
        )
    if len(machines) == 1:
        where = next(iter(machines))
    else:
        # Several machines: which steps each measured.
        where = "; ".join(f"{m} ({', '.join(c)})" for m, c in sorted(machines.items()))
    note = (
        "Measured with `python3 scripts/times.py measure STEP` on "
        + where
        + ". With a load average above the core count the wall time is"
        " longer than on an idle machine; CPU time is not."
    )
    import textwrap

    return "\n\n".join(["\n".join(rows), *(textwrap.fill(n, width=74) for n in [note, *notes])])


def main(argv: list[str]) -> int:
    args = argv[1:]
    try:
        if not args or args[0] in ("-h", "--help"):
            print(__doc__)
            return 0 if args else 2
        if args[0] == "measure" and len(args) == 2:
            print(json.dumps(measure(args[1])))
        elif args[0] == "table" and len(args) == 1:
            print(table())
        elif args[0] == "steps" and len(args) == 1:
            for step, (label, cmd) in STEPS.items():
                print(f"{step:<12} {cmd:<26} {label}")
        else:
            raise SystemExit(
                "times.py: usage: times.py measure STEP | table | steps (see times.py --help)"
            )
        return 0
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv))
