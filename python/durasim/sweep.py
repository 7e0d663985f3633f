"""Sweeps: many runs, spread over Dask workers, gathered into one DataFrame.

A sweep is a list of run specs (dicts with the keys of :func:`durasim.run`:
``scheme``, ``workload``, ``threads``, ``tx``, ``seed``, ``config`` plus
parameter keys such as ``"hoop.gc_period_ms"``) or a grid: a dict of lists
whose cartesian product is the list of specs.

Where the runs execute:

* default: this process, one thread per core (a simulation releases the
  GIL). Works unchanged in a script, a notebook and at the prompt: nothing
  is spawned, so no ``if __name__ == "__main__":`` guard is needed;
* ``scheduler="processes"``: a ``dask.distributed.LocalCluster`` of worker
  processes (one per core), closed afterwards. Worker processes re-import
  the main module, so a script must call the sweep under
  ``if __name__ == "__main__":``;
* ``client=``: an existing ``dask.distributed.Client`` (e.g. on a
  :func:`durasim.cluster.slurm` cluster);
* ``scheduler="tcp://host:port"``: connect to a running scheduler;
* ``scheduler="serial"``: in this process, one run after the other.

Each run is a pure function of its spec (seeded RNGs only), so the frame is
the same wherever it ran, except the ``sim.*`` columns (host speed).
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
import traceback
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ._core import DEFAULTS, RUN_FIELDS, param_key, run_spec, version
from ._progress import Bar, wanted

#: Columns that depend on the host, not on the simulation.
HOST_COLUMNS_PREFIX = "sim."


class SweepError(RuntimeError):
    """Some runs of a sweep failed. ``failures`` lists ``(spec, message)``;
    ``frame`` holds every run, with the failed ones' ``error`` column set."""

    def __init__(self, failures: list[tuple[dict, str]], frame: pd.DataFrame):
        self.failures = failures
        self.frame = frame
        lines = [f"{len(failures)} of {len(frame)} runs failed:"]
        for spec, msg in failures[:20]:
            lines.append(f"  {spec}: {msg}")
        if len(failures) > 20:
            lines.append(f"  ... and {len(failures) - 20} more (see .failures)")
        super().__init__("\n".join(lines))


def _canonical(spec: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise ValueError(f"invalid run spec {spec!r}: expected a dict")
    out = {k if k in RUN_FIELDS else param_key(k): v for k, v in spec.items()}
    for f in ("scheme", "workload"):
        if f not in out:
            raise ValueError(f"run spec {dict(spec)!r} has no '{f}' (required: scheme, workload)")
    return out


def expand(runs: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Turn a grid (dict of lists; scalars are one-element lists) or a list
    of specs into a list of canonical specs. The grid's last key varies
    fastest, like nested for-loops in key order."""
    if isinstance(runs, Mapping):
        keys = list(runs)
        axes = []
        for k in keys:
            v = runs[k]
            # Any iterable (list, tuple, range, numpy array) is an axis;
            # strings, dicts and scalars are one value.
            if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Iterable):
                v = [v]
            axes.append(list(v))
        return [_canonical(dict(zip(keys, combo))) for combo in itertools.product(*axes)]
    if isinstance(runs, (str, bytes)):
        raise ValueError("invalid runs: expected a list of spec dicts or a dict of lists")
    return [_canonical(s) for s in runs]


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def result_row(
    spec: Mapping[str, Any], report: Mapping[str, Any] | None, error: str | None = None
) -> dict[str, Any]:
    """One DataFrame row: the spec (with defaults filled in), then the
    metrics (nested dicts flattened with dots), ``stat.<name>`` for the
    scheme's statistics, ``sim.*`` for host speed, ``warnings`` (the
    run's warnings, joined with "; "; empty without any) and ``error``."""
    row: dict[str, Any] = {"scheme": spec["scheme"], "workload": spec["workload"]}
    for f in ("threads", "tx", "seed", "config"):
        # Without a value in the spec a run takes its scheme's machine and
        # length: the report says which.
        v = spec.get(f, DEFAULTS[f] if f == "config" else (report or {}).get(f, DEFAULTS[f]))
        row[f] = None if v is None else (os.fspath(v) if f == "config" else v)
    for k, v in spec.items():
        if k not in RUN_FIELDS:
            row[k] = v
    if report is not None:
        _flatten("", report.get("metrics", {}), row)
        for k, v in report.get("scheme_stats", {}).items():
            row[f"stat.{k}"] = v
        # The data-aware device's block (README "Data-aware NVM"), when built.
        if "nvm_media" in report:
            _flatten("nvm_media", report["nvm_media"], row)
        _flatten("sim", report.get("sim", {}), row)
        # What `durasim.run` would print on stderr, one run's per cell.
        row["warnings"] = "; ".join(report.get("warnings", [])) or None
    row["error"] = error
    return row


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def deterministic(df: pd.DataFrame) -> pd.DataFrame:
    """The frame without host-dependent columns (``sim.*``)."""
    return df[[c for c in df.columns if not c.startswith(HOST_COLUMNS_PREFIX)]]


def _execute(spec: dict[str, Any]) -> tuple[dict | None, str | None]:
    """Worker side: run one spec; never raises (errors travel back as text)."""
    try:
        return run_spec(spec), None
    except ValueError as e:
        return None, f"ValueError: {e}"
    except Exception as e:
        return None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"


def sweep(
    runs: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    *,
    client: Any = None,
    scheduler: str | None = None,
    progress: bool | None = None,
    errors: str = "raise",
    desc: str = "durasim",
) -> pd.DataFrame:
    """Run every spec and return one row per spec, in spec order.

    ``errors="raise"`` (default) raises :class:`SweepError` listing each
    failed spec and its message after all runs finished (``.frame`` holds
    the full frame); ``errors="include"`` returns the frame with the
    ``error`` column set on failed rows. Failed runs are never dropped.

    ``progress``: a bar with counts and ETA; ``None`` (default) shows it on
    a terminal or in a notebook and stays quiet when stderr is piped,
    ``False`` never shows it.
    """
    if errors not in ("raise", "include"):
        raise ValueError(f"invalid value {errors!r} for 'errors': expected 'raise' or 'include'")
    if client is not None and scheduler is not None:
        raise ValueError("pass either client= or scheduler=, not both")
    _check_executor(client, scheduler)
    specs = expand(runs)
    results: list[tuple[dict | None, str | None]] = [(None, None)] * len(specs)
    bar = Bar(len(specs), wanted(progress), desc, "run")
    try:
        if scheduler == "serial":
            for i, spec in enumerate(specs):
                results[i] = _execute(spec)
                bar.update()
        elif scheduler is None and client is None and specs:
            _run_threads(specs, results, bar)
        elif specs:
            _run_dask(specs, results, bar, client, scheduler)
    finally:
        bar.close()
    here = version()
    other = sorted({str(rep.get("sim", {}).get("version")) for rep, _ in results if rep} - {here})
    if other:
        # Remote workers with another build would make the frame a mixture.
        warnings.warn(
            f"some runs were executed by durasim {', '.join(other)}, this process has {here}; "
            "install the same version on every worker",
            stacklevel=2,
        )
    rows = [result_row(s, rep, err) for s, (rep, err) in zip(specs, results)]
    frame = to_frame(rows)
    failures = [(s, err) for s, (_, err) in zip(specs, results) if err is not None]
    if failures and errors == "raise":
        raise SweepError(failures, frame)
    return frame


#: Schedulers named by a word; anything else must be an address.
_SCHEDULER_WORDS = ("serial", "processes")


def _check_executor(client: Any, scheduler: Any) -> None:
    """Refuse a ``client`` that cannot take runs and a ``scheduler`` that is
    neither a known word nor a ``[proto://]host:port`` address, before any
    run starts (Dask's own errors would name neither argument)."""
    if client is not None and not callable(getattr(client, "submit", None)):
        raise ValueError(
            f"invalid value for 'client': a {type(client).__name__} has no submit(); "
            "expected a dask.distributed.Client (e.g. Client(durasim.cluster.local()))"
        )
    if scheduler is None or scheduler in _SCHEDULER_WORDS:
        return
    if not isinstance(scheduler, str) or not re.fullmatch(
        r"([a-z][a-z0-9+.-]*://)?[^\s:/]+:\d+/?", scheduler
    ):
        close = difflib.get_close_matches(str(scheduler), _SCHEDULER_WORDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"invalid value {scheduler!r} for 'scheduler'{hint}: expected 'serial', "
            "'processes' or a scheduler address such as 'tcp://10.0.0.5:8786'"
        )


def _run_threads(specs, results, bar, workers: int | None = None) -> None:
    """One thread per core in this process: the native simulation releases
    the GIL, so threads run in parallel without spawning anything."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    n = max(1, min(workers or os.cpu_count() or 1, len(specs)))
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="durasim") as pool:
        futures = {pool.submit(_execute, spec): i for i, spec in enumerate(specs)}
        try:
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                bar.update()
        except BaseException:
            # Ctrl-C: drop the queued runs instead of finishing the sweep.
            for f in futures:
                f.cancel()
            raise


def _run_dask(specs, results, bar, client, scheduler) -> None:
    from dask.distributed import Client, as_completed

    owned = []
    try:
        if client is None:
            if scheduler is not None and scheduler != "processes":
                client = Client(scheduler)
                owned.append(client)
            else:
                from .cluster import local

                cluster = local()
                owned.append(cluster)
                client = Client(cluster)
                owned.insert(0, client)
        futures = [
            client.submit(_execute, spec, pure=False, key=f"durasim-run-{i}-{os.urandom(4).hex()}")
            for i, spec in enumerate(specs)
        ]
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures):
            i = index[fut.key]
            try:
                results[i] = fut.result()
            except Exception as e:  # worker lost, deserialization, ...
                results[i] = (None, f"{type(e).__name__}: {e}")
            bar.update()
    finally:
        for obj in owned:
            obj.close()
