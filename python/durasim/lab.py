"""``durasim-lab``: regenerate a paper's report, list what this build has.

    durasim-lab reproduce all|hoop|dpc|morlog|ehou [--scale small|paper|tiny] [--out DIR]
                               [--scheduler tcp://HOST:PORT | --scheduler serial]
                               [--workers N] [--slurm-jobs N] [--threads N]
                               [--tx-factor F] [--set KEY=VALUE ...] [--scale-file F.toml]
    durasim-lab list [schemes|workloads|params]

``reproduce all`` runs the four papers' experiments as one sweep (a run two
papers share executes once; one progress bar and ETA for all of them),
writes each report to ``OUT/<paper>/`` (default ``report/``) and an index
page ``OUT/index.html`` linking them, with each paper's reading.

Exit codes: 0 success, 1 failed runs, 2 bad arguments. (``dpc``: a run that
stops because a table or buffer is too small for its workload is a result,
listed under its figure, and does not fail the report.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from . import _core
from .papers import PAPERS
from .papers._base import _spec_key
from .report import regenerate_command, write_index, write_report
from .sweep import SweepError, sweep


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durasim-lab", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("reproduce", help="run a paper's experiments and write its report")
    r.add_argument(
        "paper",
        choices=["all", *PAPERS],
        help="a paper, or 'all': the four as one sweep, with an index page",
    )
    r.add_argument(
        "--scale",
        default="small",
        choices=["small", "paper", "tiny"],
        help="run sizes (default: small, minutes on 2 cores)",
    )
    r.add_argument(
        "--out",
        default=None,
        help="output directory (default: report/<paper>; with 'all': report/, "
        "one directory per paper and index.html)",
    )
    r.add_argument(
        "--scheduler",
        default=None,
        help="Dask scheduler address tcp://HOST:PORT, or 'serial' to run in this "
        "process (default: a LocalCluster with one worker per core)",
    )
    r.add_argument(
        "--workers",
        type=int,
        default=None,
        help="LocalCluster worker processes (default: number of cores)",
    )
    r.add_argument(
        "--slurm-jobs",
        type=int,
        default=None,
        help="run on SLURM through dask-jobqueue with this many jobs",
    )
    r.add_argument(
        "--config",
        default=None,
        help="TOML parameter preset applied to every run (e.g. configs/hoop.toml)",
    )
    r.add_argument("--only", default=None, help="comma-separated experiment ids (default: all)")
    r.add_argument(
        "--threads",
        type=int,
        default=None,
        help="simulated cores of every grid run (default: the paper's, per the scale)",
    )
    r.add_argument(
        "--tx-factor",
        type=float,
        default=None,
        help="multiply every run's transactions by F (the scale's lengths keep each "
        "mechanism's periods; F < 1 may leave steady state, the report says so)",
    )
    r.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="parameter for every run (repeatable; an experiment's swept values win)",
    )
    r.add_argument(
        "--scale-file",
        default=None,
        help="TOML file updating the scale's settings (keys as in the report's config.json "
        "scale_settings, e.g. threads = 16 or [tx_by_workload] vector = 2000000)",
    )
    r.add_argument(
        "--quiet",
        "--no-progress",
        dest="no_progress",
        action="store_true",
        help="no progress bar (it is shown only when stderr is a terminal anyway)",
    )
    ls = sub.add_parser("list", help="list schemes, workloads or params of this build")
    ls.add_argument(
        "what", nargs="?", default="schemes", choices=["schemes", "workloads", "params"]
    )
    return p


def _value(text: str) -> object:
    """A --set value: bool, int or float where it reads as one, else text
    (sizes and times with units, names) for durasim to parse."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _sets(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:
        key, eq, val = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"invalid --set '{item}': expected KEY=VALUE")
        out[_core.param_key(key.strip())] = _value(val.strip())
    return out


def _client(a: argparse.Namespace) -> tuple[Any, list[Any]]:
    """The Dask client the options ask for (None: the sweep's default), and
    what to close afterwards."""
    if sum(x is not None for x in (a.scheduler, a.workers, a.slurm_jobs)) > 1:
        raise ValueError("use only one of --scheduler, --workers, --slurm-jobs")
    if a.workers is None and a.slurm_jobs is None:
        return None, []
    from dask.distributed import Client

    from . import cluster

    if a.workers is not None:
        if a.workers < 1:
            raise ValueError(f"invalid value {a.workers} for '--workers': expected >= 1")
        c = cluster.local(a.workers)
    else:
        c = cluster.slurm(jobs=a.slurm_jobs)
    client = Client(c)
    return client, [client, c]


def _cost_estimate(spec: dict[str, Any]) -> float:
    """A run's relative host cost, to start the longest first: simulated
    transactions times cores (the sweep then ends with short runs, which
    keeps both cores busy to the end)."""
    return float(spec.get("tx") or 0) * float(spec.get("threads") or 1)


def _reproduce_all(a: argparse.Namespace) -> int:
    for flag, v in (("--config", a.config), ("--only", a.only), ("--scale-file", a.scale_file)):
        if v is not None:
            raise ValueError(
                f"'{flag}' applies to one paper's experiments; with 'all' each paper runs on "
                f"its own machine and scale: use 'durasim-lab reproduce PAPER {flag} ...'"
            )
    root = Path(a.out or "report")
    overrides = _sets(a.sets)
    options = {"threads": a.threads, "tx_factor": a.tx_factor, "set": overrides, "scale_file": None}
    preps = {
        name: paper.prepare(
            None,
            a.scale,
            settings=paper.resolve_scale(a.scale, threads=a.threads),
            overrides=overrides,
            tx_factor=a.tx_factor,
        )
        for name, paper in PAPERS.items()
    }
    union: dict[tuple, dict[str, Any]] = {}
    for prep in preps.values():
        for s in prep.specs:
            union.setdefault(_spec_key(s), s)
    specs = sorted(union.values(), key=_cost_estimate, reverse=True)
    client, owned = _client(a)
    t0 = time.time()
    try:
        raw = sweep(
            specs,
            client=client,
            scheduler=a.scheduler,
            progress=False if a.no_progress else None,
            errors="include",
            desc=f"4 papers/{a.scale}",
        )
    finally:
        for o in owned:
            o.close()
    wall_s = time.time() - t0
    pos = {_spec_key(s): i for i, s in enumerate(specs)}
    entries, rc = [], 0
    for name, prep in preps.items():
        paper = PAPERS[name]
        rows = raw.iloc[[pos[_spec_key(s)] for s in prep.specs]].reset_index(drop=True)
        failed = rows[rows["error"].notna()] if "error" in rows else rows.iloc[0:0]
        if len(failed) and paper.sweep_kw.get("errors") != "include":
            failures = [(dict(prep.specs[i]), rows["error"][i]) for i in failed.index]
            print(f"error: {name}: {SweepError(failures, rows)}", file=sys.stderr)
            rc = 1
            continue
        frames = paper.analyse(prep, rows if prep.specs else paper.no_runs())
        host_s = float(rows["sim.host_seconds"].sum()) if "sim.host_seconds" in rows else None
        out = root / name
        write_report(
            paper,
            frames,
            out,
            scale=a.scale,
            command=regenerate_command("all", a.scale, str(root), a.scheduler, options=options),
            options=options,
            cost={"runs": len(prep.specs), "host_s": host_s},
        )
        entries.append(
            {
                "paper": name,
                "title": paper.title,
                "dir": out,
                "runs": len(prep.specs),
                "host_s": host_s,
            }
        )
    shared = sum(len(p.specs) for p in preps.values()) - len(specs)
    pages_s = time.time() - t0 - wall_s
    index = write_index(
        root,
        entries,
        scale=a.scale,
        command=regenerate_command("all", a.scale, str(root), a.scheduler, options=options),
        cost={"runs": len(specs), "shared": shared, "wall_s": wall_s, "pages_s": pages_s},
    )
    print(
        f"wrote {index} ({len(entries)} reports, {len(specs)} simulation runs"
        + (f", {shared} shared by two papers" if shared else "")
        + f"; runs {wall_s:.0f} s, figures and pages {pages_s:.0f} s)"
    )
    return rc


def _reproduce(a: argparse.Namespace) -> int:
    if a.paper == "all":
        return _reproduce_all(a)
    paper = PAPERS[a.paper]
    out = a.out or f"report/{a.paper}"
    only = a.only.split(",") if a.only else None
    settings = paper.resolve_scale(a.scale, scale_file=a.scale_file, threads=a.threads)
    overrides = _sets(a.sets)
    options = {
        "threads": a.threads,
        "tx_factor": a.tx_factor,
        "set": overrides,
        "scale_file": a.scale_file,
    }
    client, owned = _client(a)
    t0 = time.time()
    try:
        frames = paper.run_experiments(
            only,
            a.scale,
            client=client,
            scheduler=a.scheduler,
            progress=False if a.no_progress else None,
            preset=a.config,
            settings=settings,
            overrides=overrides,
            tx_factor=a.tx_factor,
        )
    finally:
        for o in owned:
            o.close()
    distinct = max((df.attrs.get("sweep_runs", 0) for df in frames.values()), default=0)
    index = write_report(
        paper,
        frames,
        out,
        scale=a.scale,
        command=regenerate_command(
            a.paper, a.scale, out, a.scheduler, a.config, only, options=options
        ),
        options=options,
        cost={"runs": distinct, "wall_s": time.time() - t0},
    )
    # Papers whose runs may stop on a too-small table (dpc) list them in the
    # report instead of failing it; say how many here too.
    stopped = {
        n
        for df in frames.values()
        for n in df.attrs.get("notes", [])
        if n.startswith("run stopped")
    }
    print(
        f"wrote {index} ({len(frames)} experiments, {distinct} simulation runs, "
        + (f"{len(stopped)} stopped (listed in the report), " if stopped else "")
        + f"{time.time() - t0:.0f} s)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        if a.command == "reproduce":
            return _reproduce(a)
        if a.what == "schemes":
            for s in _core.describe()["schemes"]:
                print(f"{s['name']:<12} {s['description']}")
        elif a.what == "workloads":
            for w in _core.describe()["workloads"]:
                print(f"{w['name']:<12} {w['description']}")
        else:
            for k, v in _core.params().items():
                print(f"{k:<36} {v['default']!s:>14} {v['unit']:<12} {v['source']}")
        return 0
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SweepError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
