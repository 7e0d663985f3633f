"""What every paper of :mod:`durasim.papers` is made of, and the one driver
that runs any of them.

A paper is a :class:`Paper`: its experiment table (:class:`Experiment`:
the plan of runs an experiment needs and the analysis that makes its
frame), its scales, the :class:`Setup` of its runs for a scale and preset
(what every spec starts from, and optional hooks on each experiment's rows
and frame), its figures and the wording of its report.
:meth:`Paper.run_experiments` plans the selected experiments against this
build (what it lacks is skipped and said), runs their distinct specs once
as ONE sweep (serial, local threads or processes, or Dask) and returns each
experiment's analysed frame with the ``attrs`` the report reads;
:meth:`Paper.one` makes the per-experiment functions ``f(scale="small", *,
client=None, scheduler=None, progress=None, preset=None)``."""

from __future__ import annotations

import copy
import difflib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import _core
from ..sweep import sweep

#: The presets of the source tree (a paper's system preset is read from
#: here: the experiments run from a durasim checkout).
CONFIGS = Path(__file__).resolve().parents[3] / "configs"


#: The switch of the write-set characterisation metrics (absent in builds
#: that always compute them).
P_CHARACTERISE = "run.characterise"


@dataclass
class Plan:
    specs: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


class Avail:
    """What this build provides; records what an experiment had to skip."""

    def __init__(self) -> None:
        self.schemes = set(_core.schemes())
        self.workloads = set(_core.workloads())
        cat = _core.params()
        self.params = set(cat)
        self.defaults = {k: v.get("default") for k, v in cat.items()}

    def filter(
        self,
        plan: Plan,
        schemes: Sequence[str],
        workloads: Sequence[str],
        params: Sequence[str] = (),
    ) -> tuple[list[str], list[str], bool]:
        s = [x for x in schemes if x in self.schemes]
        w = [x for x in workloads if x in self.workloads]
        for x in schemes:
            if x not in self.schemes:
                plan.skipped.append(f"scheme '{x}' (not in durasim.schemes())")
        for x in workloads:
            if x not in self.workloads:
                plan.skipped.append(f"workload '{x}' (not in durasim.workloads())")
        ok = True
        for p in params:
            if p not in self.params:
                plan.skipped.append(f"parameter '{p}' (not in durasim.params())")
                ok = False
        return s, w, ok


@dataclass(frozen=True)
class Experiment:
    """One measurement of a paper: ``plan(scale_settings, avail)`` lists its
    runs, ``analyze(rows)`` makes its frame; ``section`` is where the paper
    describes it (dpc)."""

    id: str
    item: str
    title: str
    plan: Callable[[dict[str, Any], Avail], Plan]
    analyze: Callable[[pd.DataFrame], pd.DataFrame]
    section: str = ""
    #: A table the report shows under the figure (and writes as
    #: ``<stem>_table.csv``), made from the analysed frame.
    table: Callable[[pd.DataFrame], pd.DataFrame] | None = None


def missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _spec_key(spec: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in spec.items()))


def settings_of(scales: dict[str, dict[str, Any]], scale: str) -> dict[str, Any]:
    """``scales[scale]``, or a clear error naming the valid scales."""
    if scale not in scales:
        raise ValueError(
            f"invalid value {scale!r} for 'scale': valid choices: " + ", ".join(scales)
        )
    return scales[scale]


def experiment_ids(ids: Sequence[str] | None, experiments: dict[str, Any]) -> list[str]:
    """The selected experiment ids (all by default), each checked."""
    ids = list(ids) if ids is not None else list(experiments)
    for i in ids:
        if i not in experiments:
            raise ValueError(f"unknown experiment '{i}'; valid choices: {', '.join(experiments)}")
    return ids


def _identity(spec: dict[str, Any]) -> dict[str, Any]:
    return spec


def _adjust(
    spec: dict[str, Any],
    planned: dict[str, Any],
    overrides: dict[str, Any],
    tx_factor: float | None,
) -> dict[str, Any]:
    """``--set`` values on a merged spec (under what the experiment set) and
    the run length times ``tx_factor``."""
    spec = {**spec, **{k: v for k, v in overrides.items() if k not in planned}}
    if tx_factor is not None and "tx" in spec:
        threads = int(spec.get("threads") or 1)
        spec["tx"] = max(threads, round(spec["tx"] * tx_factor / threads) * threads)
    return spec


def read_scale_file(path: str | os.PathLike[str], base: dict[str, Any]) -> dict[str, Any]:
    """A scale file (TOML) as a dict, its keys checked against ``base``."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise ValueError(f"cannot read scale file {path}: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"cannot parse scale file {path}: {e}") from e
    return doc


def merge_settings(base: dict[str, Any], new: dict[str, Any], where: str) -> dict[str, Any]:
    out = dict(base)
    for k, v in new.items():
        if k not in base:
            near = difflib.get_close_matches(k, list(base), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise ValueError(
                f"{where}: unknown scale key '{k}'{hint}; valid keys: {', '.join(base)}"
            )
        if isinstance(base[k], dict) and isinstance(v, dict):
            out[k] = {**base[k], **v}
        else:
            out[k] = v
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def _lean(spec: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The spec without parameters set to their default: the same run, so
    an experiment that names a default explicitly (a sweep point) shares
    the run of one that leaves it unset."""
    return {k: v for k, v in spec.items() if not (k in defaults and _same(v, defaults[k]))}


def _restore(part: pd.DataFrame, specs: list[dict[str, Any]]) -> pd.DataFrame:
    """Every key of the experiment's own specs as a column of its rows
    (a parameter left out of the run because it was at its default)."""
    part = part.copy()
    keys = dict.fromkeys(k for s in specs for k in s)
    for k in keys:
        vals = [s.get(k) for s in specs]
        if k in part.columns:
            old = list(part[k])
            vals = [o if v is None else v for o, v in zip(old, vals)]
        part[k] = vals
    return part


@dataclass
class Setup:
    """How a paper's runs are made at one scale with one preset: ``merge``
    completes each plan's spec (the paper's preset under what the
    experiment sets); ``extra`` joins every frame's ``attrs``;
    ``rows(plan, rows)`` may rework an experiment's rows before its
    analysis, ``attrs(plan, frame)`` add to its frame's ``attrs``."""

    merge: Callable[[dict[str, Any]], dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)
    rows: Callable[[Plan, pd.DataFrame], pd.DataFrame] | None = None
    attrs: Callable[[Plan, pd.DataFrame], None] | None = None


@dataclass
class Prepared:
    """A paper's experiments planned for one sweep (:meth:`Paper.prepare`)."""

    scale: str
    settings: dict[str, Any]
    setup: Setup
    avail: Avail
    plans: dict[str, Plan]
    #: The distinct specs, each once, in first-use order.
    specs: list[dict[str, Any]]
    overrides: dict[str, Any]
    tx_factor: float | None


@dataclass(frozen=True)
class Paper:
    """One paper: what it runs, what it draws and how its report reads."""

    #: Its key in :data:`durasim.papers.PAPERS` and prefix of the sweep's
    #: progress label (``hoop`` -> ``hoop/small``).
    name: str
    experiments: dict[str, Experiment]
    scales: dict[str, dict[str, Any]]
    #: ``setup(scale_settings, preset)``: what every run starts from (the
    #: preset is a TOML parameter file, the CLI's ``--config``, or None).
    setup: Callable[[dict[str, Any], str | os.PathLike[str] | None], Setup]
    #: Experiment id -> the function that draws its frame.
    figures: dict[str, Callable[[pd.DataFrame], Any]]
    #: An experiment's citation, e.g. ``HOOP §IV (a)`` (``attrs["paper_item"]``).
    cite: Callable[[Experiment], str]
    #: The report's title and the paragraph under it.
    title: str
    intro: str
    #: The rows of an experiment with no runs (default: none of the sweep's).
    empty: Callable[[], pd.DataFrame] | None = None
    #: The sweep's frame when no experiment has a run.
    no_runs: Callable[[], pd.DataFrame] = pd.DataFrame
    #: What the sweep runs of a plan's spec (drops bookkeeping columns).
    run_spec: Callable[[dict[str, Any]], dict[str, Any]] = _identity
    #: Extra arguments of :func:`durasim.sweep.sweep` (e.g. ``errors``).
    sweep_kw: dict[str, Any] = field(default_factory=dict)
    #: ``scale_doc(scale)``: what the scale keeps and shortens
    #: (:class:`durasim.papers._scale.ScaleDoc`), shown atop the report.
    scale_doc: Callable[[str], Any] | None = None
    #: The scheme whose runs characterise the workloads: with
    #: ``run.characterise`` in this build, its runs switch the write-set
    #: metrics on (every run of it, so experiments still share its runs).
    characterise_scheme: str = "ideal"
    #: The scale keys ``--threads`` sets (the grids' thread counts).
    thread_keys: tuple[str, ...] = ("threads",)

    def __post_init__(self) -> None:
        if set(self.figures) != set(self.experiments):
            raise ValueError(
                f"paper '{self.name}': figures {sorted(self.figures)} do not match "
                f"experiments {sorted(self.experiments)}"
            )

    def scale_settings(self, scale: str) -> dict[str, Any]:
        return settings_of(self.scales, scale)

    def resolve_scale(
        self,
        scale: str,
        *,
        scale_file: str | os.PathLike[str] | None = None,
        threads: int | None = None,
    ) -> dict[str, Any]:
        """The settings of ``scale``, updated by a scale file (TOML: the
        paper's scale keys at top level, e.g. ``threads = 16`` or a
        ``[tx_by_workload]`` table; nested tables update the scale's) and a
        thread count for every run of the paper's grids."""
        sc = copy.deepcopy(self.scale_settings(scale))
        if scale_file is not None:
            sc = merge_settings(sc, read_scale_file(scale_file, sc), str(scale_file))
        if threads is not None:
            if threads < 1:
                raise ValueError(f"invalid value {threads} for 'threads': expected >= 1")
            for k in self.thread_keys:
                sc[k] = threads
        return sc

    def run_experiments(
        self,
        ids: Sequence[str] | None = None,
        scale: str = "small",
        *,
        client: Any = None,
        scheduler: str | None = None,
        progress: bool | None = None,
        preset: str | os.PathLike[str] | None = None,
        settings: dict[str, Any] | None = None,
        overrides: dict[str, Any] | None = None,
        tx_factor: float | None = None,
    ) -> dict[str, pd.DataFrame]:
        """Run the experiments ``ids`` (all by default) as ONE sweep, shared
        runs executed once, and return ``{id: analysed frame}``. Failed runs
        raise ``SweepError`` (unless the paper's sweep keeps them).

        ``preset`` is a TOML parameter file (the CLI's ``--config``); with
        the paper's own system preset, its values become explicit overrides
        of every run (so each spec is self-contained on remote workers and
        visible in the CSVs); what an experiment sets takes precedence, as
        ``--set`` does over ``--config``.

        ``settings`` replaces the scale's settings (see :meth:`resolve_scale`);
        ``overrides`` are parameters set on every run over the preset (an
        experiment's own sweep values still win); ``tx_factor`` multiplies
        every run's transactions (rounded to whole transactions per thread)."""
        prep = self.prepare(
            ids, scale, preset=preset, settings=settings, overrides=overrides, tx_factor=tx_factor
        )
        raw = (
            sweep(
                prep.specs,
                client=client,
                scheduler=scheduler,
                progress=progress,
                desc=f"{self.name}/{scale}",
                **self.sweep_kw,
            )
            if prep.specs
            else self.no_runs()
        )
        return self.analyse(prep, raw)

    def prepare(
        self,
        ids: Sequence[str] | None = None,
        scale: str = "small",
        *,
        preset: str | os.PathLike[str] | None = None,
        settings: dict[str, Any] | None = None,
        overrides: dict[str, Any] | None = None,
        tx_factor: float | None = None,
    ) -> Prepared:
        """The first half of :meth:`run_experiments`: every experiment's plan
        and the distinct specs of their one sweep (a caller may run several
        papers' specs as one sweep and hand each paper its rows)."""
        # A bad scale or experiment is reported before a bad preset.
        sc = self.scale_settings(scale) if settings is None else settings
        overrides = dict(overrides or {})
        if tx_factor is not None and not tx_factor > 0:
            raise ValueError(f"invalid value {tx_factor} for 'tx_factor': expected > 0")
        ids = experiment_ids(ids, self.experiments)
        setup = self.setup(sc, preset)
        av = Avail()
        plans = {i: self.experiments[i].plan(sc, av) for i in ids}
        unique: dict[tuple, dict[str, Any]] = {}
        for k in overrides:
            if k not in av.params:
                raise ValueError(f"unknown parameter '{k}' in --set; see durasim.params()")
        for p in plans.values():
            p.specs = [
                self._characterise(_adjust(setup.merge(s), s, overrides, tx_factor), av)
                for s in p.specs
            ]
            for s in p.specs:
                r = _lean(self.run_spec(s), av.defaults)
                unique.setdefault(_spec_key(r), r)
        return Prepared(
            scale=scale,
            settings=sc,
            setup=setup,
            avail=av,
            plans=plans,
            specs=list(unique.values()),
            overrides=overrides,
            tx_factor=tx_factor,
        )

    def analyse(self, prep: Prepared, raw: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """The second half of :meth:`run_experiments`: ``raw`` holds one row
        per spec of ``prep.specs``, in that order; returns ``{id: frame}``."""
        specs, av, setup, sc = prep.specs, prep.avail, prep.setup, prep.settings
        index = {_spec_key(s): n for n, s in enumerate(specs)}
        out = {}
        for eid, p in prep.plans.items():
            e = self.experiments[eid]
            picked = [index[_spec_key(_lean(self.run_spec(s), av.defaults))] for s in p.specs]
            if picked:
                part = raw.iloc[picked].reset_index(drop=True)
                part = _restore(part, [self.run_spec(s) for s in p.specs])
            else:
                part = self.empty() if self.empty is not None else raw.iloc[0:0]
            if setup.rows is not None:
                part = setup.rows(p, part)
            part.attrs["plan_meta"] = dict(p.meta)
            df = e.analyze(part)
            df.attrs.pop("plan_meta", None)
            df.attrs.update(
                {
                    "experiment": e.id,
                    "paper_item": self.cite(e),
                    "title": e.title,
                    "scale": prep.scale,
                    "scale_settings": dict(sc),
                    "runs": len(p.specs),
                    # Distinct runs of the whole sweep (experiments share runs).
                    "sweep_runs": len(specs),
                    "run_options": {
                        "set": prep.overrides,
                        "tx_factor": prep.tx_factor,
                    },
                    "skipped": list(p.skipped),
                    **setup.extra,
                }
            )
            df.attrs.setdefault("notes", [])
            if setup.attrs is not None:
                setup.attrs(p, df)
            out[eid] = df
        return out

    def _characterise(self, spec: dict[str, Any], av: Avail) -> dict[str, Any]:
        if spec.get("scheme") == self.characterise_scheme and P_CHARACTERISE in av.params:
            spec = {**spec}
            spec.setdefault(P_CHARACTERISE, True)
        return spec

    def one(self, eid: str) -> Callable[..., pd.DataFrame]:
        """``run_experiments([eid], ...)[eid]`` as a function named ``eid``."""

        def f(
            scale: str = "small",
            *,
            client: Any = None,
            scheduler: str | None = None,
            progress: bool | None = None,
            preset: str | os.PathLike[str] | None = None,
        ) -> pd.DataFrame:
            return self.run_experiments(
                [eid], scale, client=client, scheduler=scheduler, progress=progress, preset=preset
            )[eid]

        e = self.experiments[eid]
        f.__name__ = eid
        f.__doc__ = f"{self.cite(e)}: {e.title}. Returns a DataFrame (see the paper's package doc)."
        return f
