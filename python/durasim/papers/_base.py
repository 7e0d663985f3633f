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
        self.params = set(_core.params())

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

    def __post_init__(self) -> None:
        if set(self.figures) != set(self.experiments):
            raise ValueError(
                f"paper '{self.name}': figures {sorted(self.figures)} do not match "
                f"experiments {sorted(self.experiments)}"
            )

    def scale_settings(self, scale: str) -> dict[str, Any]:
        return settings_of(self.scales, scale)

    def run_experiments(
        self,
        ids: Sequence[str] | None = None,
        scale: str = "small",
        *,
        client: Any = None,
        scheduler: str | None = None,
        progress: bool | None = None,
        preset: str | os.PathLike[str] | None = None,
    ) -> dict[str, pd.DataFrame]:
        """Run the experiments ``ids`` (all by default) as ONE sweep, shared
        runs executed once, and return ``{id: analysed frame}``. Failed runs
        raise ``SweepError`` (unless the paper's sweep keeps them).

        ``preset`` is a TOML parameter file (the CLI's ``--config``); with
        the paper's own system preset, its values become explicit overrides
        of every run (so each spec is self-contained on remote workers and
        visible in the CSVs); what an experiment sets takes precedence, as
        ``--set`` does over ``--config``."""
        # A bad scale or experiment is reported before a bad preset.
        sc = self.scale_settings(scale)
        ids = experiment_ids(ids, self.experiments)
        setup = self.setup(sc, preset)
        av = Avail()
        plans = {i: self.experiments[i].plan(sc, av) for i in ids}
        unique: dict[tuple, dict[str, Any]] = {}
        for p in plans.values():
            p.specs = [setup.merge(s) for s in p.specs]
            for s in p.specs:
                unique.setdefault(_spec_key(self.run_spec(s)), self.run_spec(s))
        specs = list(unique.values())
        raw = (
            sweep(
                specs,
                client=client,
                scheduler=scheduler,
                progress=progress,
                desc=f"{self.name}/{scale}",
                **self.sweep_kw,
            )
            if specs
            else self.no_runs()
        )
        index = {_spec_key(s): n for n, s in enumerate(specs)}
        out = {}
        for eid, p in plans.items():
            e = self.experiments[eid]
            picked = [index[_spec_key(self.run_spec(s))] for s in p.specs]
            if picked:
                part = raw.iloc[picked].reset_index(drop=True)
            else:
                part = self.empty() if self.empty is not None else raw.iloc[0:0]
            if setup.rows is not None:
                part = setup.rows(p, part)
            df = e.analyze(part)
            df.attrs.update(
                {
                    "experiment": e.id,
                    "paper_item": self.cite(e),
                    "title": e.title,
                    "scale": scale,
                    "scale_settings": dict(sc),
                    "runs": len(p.specs),
                    # Distinct runs of the whole sweep (experiments share runs).
                    "sweep_runs": len(specs),
                    "skipped": list(p.skipped),
                    **setup.extra,
                }
            )
            df.attrs.setdefault("notes", [])
            if setup.attrs is not None:
                setup.attrs(p, df)
            out[eid] = df
        return out

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
