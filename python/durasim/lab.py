"""``durasim-lab``: regenerate a paper's report, list what this build has.

    durasim-lab reproduce hoop|dpc|morlog|ehou [--scale small|paper|tiny] [--out DIR]
                               [--scheduler tcp://HOST:PORT | --scheduler serial]
                               [--workers N] [--slurm-jobs N] [--threads N]
                               [--tx-factor F] [--set KEY=VALUE ...] [--scale-file F.toml]
    durasim-lab list [schemes|workloads|params]

Exit codes: 0 success, 1 failed runs, 2 bad arguments. (``dpc``: a run that
stops because a table or buffer is too small for its workload is a result,
listed under its figure, and does not fail the report.)
"""

from __future__ import annotations

import argparse
import sys
import time

from . import _core
from .papers import PAPERS
from .report import regenerate_command, write_report
from .sweep import SweepError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durasim-lab", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("reproduce", help="run a paper's experiments and write its report")
    r.add_argument("paper", choices=list(PAPERS))
    r.add_argument(
        "--scale",
        default="small",
        choices=["small", "paper", "tiny"],
        help="run sizes (default: small, minutes on 2 cores)",
    )
    r.add_argument("--out", default=None, help="output directory (default: report/<paper>)")
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


def _reproduce(a: argparse.Namespace) -> int:
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
    if sum(x is not None for x in (a.scheduler, a.workers, a.slurm_jobs)) > 1:
        raise ValueError("use only one of --scheduler, --workers, --slurm-jobs")
    client, owned = None, []
    if a.workers is not None or a.slurm_jobs is not None:
        from dask.distributed import Client

        from . import cluster

        if a.workers is not None:
            if a.workers < 1:
                raise ValueError(f"invalid value {a.workers} for '--workers': expected >= 1")
            c = cluster.local(a.workers)
        else:
            c = cluster.slurm(jobs=a.slurm_jobs)
        client = Client(c)
        owned = [client, c]
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
