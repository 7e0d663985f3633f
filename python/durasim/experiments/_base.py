"""What every paper module of :mod:`durasim.experiments` shares: the plan of
runs an experiment needs (filtered to what this build provides), the one
sweep (serial, local processes or Dask) that runs every selected
experiment's plan with shared runs executed once, the frames' ``attrs`` the
report reads, and the per-experiment functions ``f(scale="small", *,
client=None, scheduler=None, progress=None, preset=None)``. A paper module
keeps only what is its own: its :class:`Paper` (name, experiment table,
scales, citation), plans, analyses, figures, titles and preset handling."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .. import _core
from ..sweep import sweep


@dataclass
class Plan:
    specs: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


class _Avail:
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
    runs, ``analyze(rows)`` makes its frame. ``figure`` is what draws it (a
    function, or its name in :mod:`durasim.figures`; morlog: the chart
    kind); ``section`` is where the paper describes it (dpc)."""

    id: str
    item: str
    title: str
    plan: Callable[[dict[str, Any], _Avail], Plan]
    analyze: Callable[[pd.DataFrame], pd.DataFrame]
    figure: Any = None
    section: str = ""


def _missing(v: Any) -> bool:
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


@dataclass(frozen=True)
class Paper:
    """How one paper's experiments run: its experiment table and scales,
    how a frame cites the paper, and what its sweep needs."""

    #: Prefix of the sweep's progress label (``hoop`` -> ``hoop/small``).
    name: str
    experiments: dict[str, Any]
    scales: dict[str, dict[str, Any]]
    #: An experiment's citation, e.g. ``HOOP §IV (a)`` (``attrs["paper_item"]``).
    paper_item: Callable[[Any], str]
    #: The rows of an experiment with no runs (default: none of the sweep's).
    empty: Callable[[], pd.DataFrame] | None = None
    #: The sweep's frame when no experiment has a run.
    no_runs: Callable[[], pd.DataFrame] = pd.DataFrame
    #: What the sweep runs of a plan's spec (drops bookkeeping columns).
    run_spec: Callable[[dict[str, Any]], dict[str, Any]] = _identity
    #: Extra arguments of :func:`durasim.sweep.sweep` (e.g. ``errors``).
    sweep_kw: dict[str, Any] = field(default_factory=dict)

    def run(
        self,
        ids: Sequence[str] | None,
        scale: str,
        client: Any,
        scheduler: str | None,
        progress: bool | None,
        *,
        merge: Callable[[dict[str, Any]], dict[str, Any]],
        extra: dict[str, Any] | None = None,
        rows: Callable[[Plan, pd.DataFrame], pd.DataFrame] | None = None,
        attrs: Callable[[Plan, pd.DataFrame], None] | None = None,
    ) -> dict[str, pd.DataFrame]:
        """Run the experiments ``ids`` (all by default) as ONE sweep, shared
        runs executed once, and return ``{id: analysed frame}``.

        Each plan is made against this build (what it lacks is skipped and
        said), each spec completed by ``merge`` (the paper's preset under
        what the experiment sets). Each frame's ``attrs`` carry what the
        report reads, plus ``extra``; ``rows(plan, rows)`` may rework an
        experiment's rows before its analysis, ``attrs(plan, frame)`` add
        to its frame's ``attrs``."""
        sc = settings_of(self.scales, scale)
        ids = experiment_ids(ids, self.experiments)
        av = _Avail()
        plans = {i: self.experiments[i].plan(sc, av) for i in ids}
        unique: dict[tuple, dict[str, Any]] = {}
        for p in plans.values():
            p.specs = [merge(s) for s in p.specs]
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
            if rows is not None:
                part = rows(p, part)
            df = e.analyze(part)
            df.attrs.update(
                {
                    "experiment": e.id,
                    "paper_item": self.paper_item(e),
                    "title": e.title,
                    "scale": scale,
                    "scale_settings": dict(sc),
                    "runs": len(p.specs),
                    # Distinct runs of the whole sweep (experiments share runs).
                    "sweep_runs": len(specs),
                    "skipped": list(p.skipped),
                    **(extra or {}),
                }
            )
            df.attrs.setdefault("notes", [])
            if attrs is not None:
                attrs(p, df)
            out[eid] = df
        return out

    def one(
        self, run_experiments: Callable[..., dict[str, pd.DataFrame]], eid: str
    ) -> Callable[..., pd.DataFrame]:
        """``run_experiments([eid], ...)[eid]`` as a function named ``eid``."""

        def f(
            scale: str = "small",
            *,
            client: Any = None,
            scheduler: str | None = None,
            progress: bool | None = None,
            preset: str | os.PathLike[str] | None = None,
        ) -> pd.DataFrame:
            return run_experiments(
                [eid], scale, client=client, scheduler=scheduler, progress=progress, preset=preset
            )[eid]

        e = self.experiments[eid]
        f.__name__ = eid
        f.__doc__ = f"{self.paper_item(e)}: {e.title}. Returns a DataFrame (see module doc)."
        return f
