"""Single runs and the catalogue (schemes, workloads, parameters).

Parameter overrides use the CLI's keys (``--set hoop.gc_period_ms=2``). In
Python the dot is spelled ``__`` when the key is a keyword argument::

    durasim.run("hoop", "btree", hoop__gc_period_ms=2)
    durasim.run("hoop", "btree", **{"hoop.gc_period_ms": 2})   # same run

Both spellings name the same parameter; sweep specs use the same keys.
"""

from __future__ import annotations

import json
import numbers
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from . import _native
from ._progress import Bar, wanted

#: Run arguments that are not parameter overrides.
RUN_FIELDS = ("scheme", "workload", "threads", "tx", "seed", "config")
#: ``None``: the scheme's paper machine, its thread count and run length
#: (``durasim list schemes``).
DEFAULTS: dict[str, Any] = {"threads": None, "tx": None, "seed": 1, "config": None}


def param_key(name: str) -> str:
    """Canonical parameter key: ``hoop__gc_period_ms`` -> ``hoop.gc_period_ms``."""
    return name.replace("__", ".")


def _value_text(key: str, value: Any) -> str:
    # Text exactly as the CLI's --set would receive it; the Rust side parses
    # and validates it against the parameter's declared type and range.
    # numpy scalars (from grids built with numpy) are numbers like any other.
    if isinstance(value, (bool, *_np_bool())):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        default = params().get(key, {}).get("default")
        if isinstance(default, int) and not isinstance(default, bool) and float(value).is_integer():
            # 2.0 for an integer parameter (pandas turns int columns with
            # gaps into floats) is the integer 2, not an error.
            return str(int(value))
        return repr(float(value))
    raise ValueError(f"invalid value {value!r} for '{key}': expected an int, float, bool or str")


def _np_bool() -> tuple[type, ...]:
    np = sys.modules.get("numpy")
    return (np.bool_,) if np is not None else ()


def _count(field: str, value: Any, minimum: int) -> int:
    if isinstance(value, (bool, *_np_bool())) or not isinstance(value, numbers.Integral):
        raise ValueError(f"invalid value {value!r} for '{field}': expected an integer")
    value = int(value)
    if value < minimum:
        raise ValueError(f"invalid value {value!r} for '{field}': expected at least {minimum}")
    if value >= 1 << 64:
        raise ValueError(f"invalid value {value!r} for '{field}': expected below 2**64")
    return value


#: Keyword arguments of run() and crashtest() besides parameter keys.
RUN_ARGS = ("threads", "tx", "seed", "config", "progress")
CRASHTEST_ARGS = (
    "threads",
    "tx",
    "seed",
    "points",
    "crash_at",
    "tear_mask",
    "torn",
    "recovery_crashes",
    "config",
    "progress",
)


def _edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(prev + (ca != cb), row[j - 1] + 1, row[j] + 1)
    return row[len(b)]


def suggest(word: str, valid: Iterable[str]) -> list[str]:
    """The valid names closest to ``word`` (edit distance within about a
    third of its length, or containing it), best first, at most three."""
    w = word.lower()
    limit = max(1, len(w) // 3)
    scored = []
    for v in valid:
        lv = v.lower()
        d = min(_edit_distance(w, lv), _edit_distance(w.rsplit(".")[-1], lv.rsplit(".")[-1]) + 1)
        contains = len(w) >= 3 and (w in lv or lv in w)
        if d <= limit or contains:
            scored.append((min(d, limit) if contains else d, v))
    return [v for _, v in sorted(scored)[:3]]


def did_you_mean(word: str, valid: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` or ``""``."""
    s = suggest(word, valid)
    return f" (did you mean {' or '.join(repr(x) for x in s)}?)" if s else ""


def _overrides(overrides: Mapping[str, Any], args: Sequence[str]) -> list[tuple[str, str]]:
    """Parameter overrides as (key, text) pairs; an unknown keyword names the
    closest argument or key and lists the function's own arguments first."""
    known = params()
    out = []
    for k, v in overrides.items():
        key = param_key(k)
        if key not in known:
            names = list(known)
            section = key.split(".")[0]
            same = [x for x in known if x.split(".")[0] == section]
            keys = (
                f"valid keys in [{section}]: {', '.join(same)}"
                if same
                else f"valid keys: any of the {len(known)} keys of durasim.params(), "
                f"e.g. {', '.join(list(known)[:3])}, ..."
            )
            raise ValueError(
                f"unknown keyword argument or parameter {k!r}"
                + (f" (key '{key}')" if key != k else "")
                + (did_you_mean(k, args) or did_you_mean(key, names))
                + "; "
                f"arguments: {', '.join(args)}; parameters are written with '__' for '.' "
                f"(e.g. hoop__gc_period_ms=2); {keys}"
            )
        out.append((key, _value_text(key, v)))
    return out


def _names(scheme: Any, workload: Any) -> None:
    if not isinstance(scheme, str):
        raise ValueError(
            f"invalid value {scheme!r} for 'scheme': expected a name, one of "
            + ", ".join(schemes())
        )
    if not isinstance(workload, str):
        raise ValueError(
            f"invalid value {workload!r} for 'workload': expected a name, one of "
            + ", ".join(workloads())
        )
    if isinstance(scheme, str) and scheme not in schemes():
        raise ValueError(
            f"unknown scheme {scheme!r}{did_you_mean(scheme, schemes())}; valid schemes: "
            + ", ".join(schemes())
        )
    if isinstance(workload, str) and workload not in workloads():
        raise ValueError(
            f"unknown workload {workload!r}{did_you_mean(workload, workloads())}; "
            "valid workloads: " + ", ".join(workloads())
        )
    if not isinstance(scheme, str):
        raise ValueError(
            f"invalid value {scheme!r} for 'scheme': expected a name, one of "
            + ", ".join(schemes())
        )
    if not isinstance(workload, str):
        raise ValueError(
            f"invalid value {workload!r} for 'workload': expected a name, one of "
            + ", ".join(workloads())
        )


def run(
    scheme: str,
    workload: str,
    *,
    threads: int | None = None,
    tx: int | None = None,
    seed: int = 1,
    config: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    **overrides: Any,
) -> dict:
    """Run one simulation; return the same document as ``durasim run --json -``.

    ``config`` is a TOML preset path (the CLI's ``--config``); ``None``
    (default) runs on the scheme's paper machine (``durasim list schemes``:
    ``dpc`` on ``configs/dpc.toml``, embedded in the extension) and
    ``"default"`` on the bare default machine. ``threads`` defaults to
    that machine's thread count (8 with a ``config``), ``tx`` to the
    scheme's run length (long enough for its GC, checkpoints or
    force-write-back to run several times). ``overrides``
    are parameter keys (``hoop__gc_period_ms=2`` or ``**{"hoop.gc_period_ms": 2}``).
    Bad input raises ``ValueError`` naming the field and its valid choices.
    The GIL is released while the simulation runs.
    ``progress``: a bar over committed transactions with an ETA, drawn once
    the run has taken a second; ``None`` (default) shows it on a terminal or
    in a notebook, ``False`` never (sweeps draw their own bar instead).
    Warnings (a scheme without the hardware its mechanism needs, a run
    shorter than one period of its mechanism) are printed on stderr, as
    the CLI prints them, and kept in the document's ``warnings`` list.
    """
    doc = _run(scheme, workload, threads, tx, seed, config, progress, overrides)
    for w in doc.get("warnings", []):
        print(f"warning: {w}", file=sys.stderr)
    return doc


def _run(
    scheme: str,
    workload: str,
    threads: int | None,
    tx: int | None,
    seed: int,
    config: str | os.PathLike[str] | None,
    progress: bool | None,
    overrides: Mapping[str, Any],
) -> dict:
    """:func:`run` without printing its warnings (sweeps keep them in the
    frame's ``warnings`` column)."""
    _names(scheme, workload)
    threads = None if threads is None else _count("threads", threads, 1)
    tx = None if tx is None else _count("tx", tx, 1)
    seed = _count("seed", seed, 0)
    cfg = None if config is None else os.fspath(config)
    sets = _overrides(overrides, RUN_ARGS)
    # The bar's total is corrected by the first progress call when the
    # run length is the scheme's default.
    bar = Bar(tx or 1, wanted(progress), f"{scheme}/{workload}", "tx", delay_s=1.0)
    try:
        doc = _native.run(
            scheme,
            workload,
            threads,
            tx,
            seed,
            cfg,
            sets,
            bar.set if bar.bar is not None else None,
        )
    finally:
        bar.close()
    return json.loads(doc)


def crashtest(
    scheme: str,
    workload: str,
    *,
    threads: int = 2,
    tx: int = 1000,
    seed: int = 1,
    points: int | str | None = None,
    crash_at: int | None = None,
    tear_mask: int | str | None = None,
    torn: bool = False,
    recovery_crashes: int | str | None = None,
    config: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    **overrides: Any,
) -> dict:
    """Crash-test one run; return the same document as
    ``durasim crashtest --json -`` (``violations``, ``first_violation`` with
    its ``replay`` line, ``crash_points_tested``, ``points_per_second``, ...).

    ``points`` is ``"all"`` (every crash point; the default) or a number of
    seeded samples; ``crash_at=K`` tests one point (``tear_mask`` optional;
    not with ``points``, as the CLI's ``--crash-at`` excludes ``--points``);
    ``torn`` also tests torn in-flight writes; ``recovery_crashes`` is the
    number of crashes injected into each recovery or ``"all"`` (default:
    the CLI's). Defaults and
    overrides as in the CLI: ``config=None`` is the scheme's paper machine,
    ``"default"`` the bare default machine. The GIL is released while it runs.
    ``progress``: a bar with an ETA over the crash points; ``None`` (default)
    shows it on a terminal or in a notebook, ``False`` never.
    """
    _names(scheme, workload)
    threads = _count("threads", threads, 1)
    tx = _count("tx", tx, 1)
    seed = _count("seed", seed, 0)
    if crash_at is not None and points is not None:
        raise ValueError(
            f"invalid use of points={points!r} with crash_at={crash_at!r}: crash_at tests one "
            "crash point, points chooses many; pass only one of them"
        )
    if tear_mask is not None and crash_at is None:
        raise ValueError(
            "invalid use of 'tear_mask' without 'crash_at': a tear mask applies to one crash point"
        )
    if points is None:
        points = "all"
    if not (
        isinstance(points, str)
        or (isinstance(points, numbers.Integral) and not isinstance(points, bool))
    ):
        raise ValueError(
            f"invalid value {points!r} for 'points': expected 'all' or a positive integer"
        )
    if crash_at is not None:
        crash_at = _count("crash_at", crash_at, 0)
    if tear_mask is not None and (
        isinstance(tear_mask, bool) or not isinstance(tear_mask, (numbers.Integral, str))
    ):
        raise ValueError(f"invalid value {tear_mask!r} for 'tear_mask': expected 0..255 or '0x..'")
    if not isinstance(torn, bool):
        raise ValueError(f"invalid value {torn!r} for 'torn': expected True or False")
    if recovery_crashes is not None and (
        isinstance(recovery_crashes, bool)
        or not isinstance(recovery_crashes, (numbers.Integral, str))
    ):
        raise ValueError(
            f"invalid value {recovery_crashes!r} for 'recovery_crashes': "
            "expected 'all' or an integer"
        )
    cfg = None if config is None else os.fspath(config)
    sets = _overrides(overrides, CRASHTEST_ARGS)
    bar = Bar(0, False, "", "")
    if wanted(progress):
        bar = Bar(1, True, f"crashtest {scheme}/{workload}", "point")
    try:
        doc = _crashtest_native(
            bar,
            scheme,
            workload,
            threads,
            tx,
            seed,
            points,
            crash_at,
            tear_mask,
            torn,
            recovery_crashes,
            cfg,
            sets,
        )
    finally:
        bar.close()
    out = json.loads(doc)
    # As the CLI does: a declared recovery path no crash point reached.
    for name in out.get("uncovered_recovery_paths", []):
        print(
            f"warning: {scheme}'s recovery path '{name}' got no crash point: this run never "
            "took it, or the sampled points missed it, so recovery was not checked on it; "
            "run longer, with smaller structures, or with more points",
            file=sys.stderr,
        )
    return out


def _crashtest_native(
    bar,
    scheme,
    workload,
    threads,
    tx,
    seed,
    points,
    crash_at,
    tear_mask,
    torn,
    recovery_crashes,
    cfg,
    sets,
) -> str:
    return _native.crashtest(
        scheme,
        workload,
        threads,
        tx,
        seed,
        str(points) if isinstance(points, str) else str(int(points)),
        crash_at,
        None
        if tear_mask is None
        else str(tear_mask if isinstance(tear_mask, str) else int(tear_mask)),
        torn,
        None
        if recovery_crashes is None
        else str(recovery_crashes if isinstance(recovery_crashes, str) else int(recovery_crashes)),
        cfg,
        sets,
        bar.set if bar.bar is not None else None,
    )


@lru_cache(maxsize=1)
def _schemes() -> tuple[dict, ...]:
    return tuple(json.loads(_native.schemes_json()))


@lru_cache(maxsize=1)
def _workloads() -> tuple[dict, ...]:
    return tuple(json.loads(_native.workloads_json()))


@lru_cache(maxsize=1)
def _params() -> tuple[dict, ...]:
    return tuple(json.loads(_native.params_json()))


def schemes() -> list[str]:
    """Names of the schemes this build of durasim ships."""
    return [s["name"] for s in _schemes()]


def workloads() -> list[str]:
    """Names of the workloads this build ships."""
    return [w["name"] for w in _workloads()]


def params() -> dict[str, dict]:
    """Every parameter key -> {default, unit, check, source, doc}."""
    return {p["key"]: {k: v for k, v in p.items() if k != "key"} for p in _params()}


def describe() -> dict[str, Any]:
    """The whole catalogue (schemes and workloads with descriptions, params)."""
    return {
        "version": version(),
        "schemes": list(_schemes()),
        "workloads": list(_workloads()),
        "params": params(),
    }


def version() -> str:
    """Version of the durasim core compiled into the extension."""
    return _native.version()


#: Largest preset read (the CLI's bound, config.rs MAX_CONFIG_BYTES).
MAX_CONFIG_BYTES = 1 << 20


def load_preset(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A TOML preset (``[section] key = value``) as ``{"section.key": value}``,
    validated against the parameter list."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            # Bounded like the CLI's --config: /dev/urandom or /dev/zero
            # would otherwise be read without end.
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ValueError(f"cannot read config {p}: {e}") from e
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(
            f"invalid config {p}: larger than {MAX_CONFIG_BYTES} bytes "
            "(a preset is a small TOML file)"
        )
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"invalid config {p}: not UTF-8 text (expected a TOML preset)") from e
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"cannot parse config {p}: {e}") from e
    flat: dict[str, Any] = {}

    def walk(prefix: str, v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else k, x)
        else:
            flat[prefix] = v

    walk("", doc)
    known = params()
    for k in flat:
        if k not in known:
            raise ValueError(f"{p}: unknown parameter '{k}'; see durasim.params() for valid keys")
    return flat


def split_spec(spec: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a run spec into run arguments and canonical parameter overrides."""
    args: dict[str, Any] = {}
    sets: dict[str, Any] = {}
    for k, v in spec.items():
        if k in RUN_FIELDS:
            args[k] = v
        else:
            sets[param_key(k)] = v
    for f in ("scheme", "workload"):
        if f not in args:
            raise ValueError(f"run spec {dict(spec)!r} has no '{f}'")
    return args, sets


def run_spec(spec: Mapping[str, Any]) -> dict:
    """Run a spec dict (``{"scheme":..., "workload":..., "hoop.gc_period_ms": 2}``)."""
    args, sets = split_spec(spec)
    return _run(
        args["scheme"],
        args["workload"],
        args.get("threads"),
        args.get("tx"),
        args.get("seed", 1),
        args.get("config"),
        args.get("progress", False),
        sets,
    )
