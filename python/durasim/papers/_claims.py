"""Where a paper's headline claim holds: one sweep per paper of the
comparison its abstract states (the claimed scheme against its rivals)
over the inputs or parameters that drive it, drawn so a reader sees the
crossover.

A :class:`Claim` names the claim (quoted, with its source), the claimed
scheme, its rivals, the metrics the claim is about and its :class:`Axis`
list; each axis is a list of :class:`Point` (the parameters set there).
:func:`experiment` makes it one :class:`~durasim.papers._base.Experiment`
of the paper (plan, analysis, table), :func:`figure` draws it. The frame
is long: one row per axis, point, rival and metric, with ``advantage`` =
the claimed scheme's value over the rival's (higher-is-better metrics) or
the rival's over the claimed scheme's (lower-is-better), so
``advantage > 1`` always means "the claim holds here" and the crossover is
where a line crosses 1.

Every spec of the sweep sets every parameter any axis sweeps (at the
paper's value where the point does not vary it), so a run is matched to
its points by those parameters alone, and the point at the paper's values
shares its runs with the paper's other experiments where they coincide."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter

from .. import _core
from ..plotting import empty_figure, footnote, legend_outside, log_ticks, new_figure
from ._base import Avail, Experiment, Plan, _same, missing
from ._scale import fmt


@dataclass(frozen=True)
class Point:
    """One point of an axis: its tick label, the parameters it sets (for
    every scheme; ``by_scheme`` adds a scheme's own), its nominal position
    on a numeric axis and its run length relative to the sweep's."""

    label: str
    params: dict[str, Any] = field(default_factory=dict)
    x: float | None = None
    tx_scale: float = 1.0
    by_scheme: dict[str, dict[str, Any]] = field(default_factory=dict)

    def for_scheme(self, scheme: str) -> dict[str, Any]:
        return {**self.params, **self.by_scheme.get(scheme, {})}


@dataclass(frozen=True)
class Axis:
    """An input the claim depends on. ``points(sc)`` gives its points at the
    scale settings ``sc``; ``x_metric`` (a run metric) places each point at
    its measured value instead of its nominal ``x``; without either the
    axis is categorical. ``show`` are metrics of the claimed scheme's runs
    the table lists per point (what the input changed)."""

    key: str
    label: str
    points: Callable[[dict[str, Any]], list[Point]]
    x_metric: str | None = None
    log_x: bool = False
    show: tuple[str, ...] = ()


@dataclass(frozen=True)
class Metric:
    col: str
    label: str
    higher_is_better: bool


@dataclass(frozen=True)
class Claim:
    """``base(sc, scheme)`` is a run's spec before the point's parameters
    (scheme, workload, threads, tx, seed and what the paper fixes);
    ``fixed`` the paper's value of a swept parameter where it is not the
    catalogue default (the base spec's value, if it sets one, comes first);
    ``notes(runs)`` extra notes from the runs."""

    claim: str
    scheme: str
    rivals: tuple[str, ...]
    metrics: tuple[Metric, ...]
    axes: tuple[Axis, ...]
    base: Callable[[dict[str, Any], str], dict[str, Any]]
    what: str
    fixed: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    notes: Callable[[pd.DataFrame], list[str]] | None = None
    #: Adds derived metric columns to the runs before the analysis.
    derive: Callable[[pd.DataFrame], pd.DataFrame] | None = None

    @property
    def schemes(self) -> list[str]:
        return [self.scheme, *self.rivals]

    def swept_keys(self, sc: dict[str, Any] | None = None) -> set[str]:
        """Every parameter some axis sets (at ``sc``; without it, at every
        scale the points do not depend on)."""
        keys: set[str] = set()
        for a in self.axes:
            for p in a.points(sc or {}):
                keys |= set(p.params)
                for extra in p.by_scheme.values():
                    keys |= set(extra)
        return keys

    def name(self, scheme: str) -> str:
        return self.labels.get(scheme, scheme)


def _tx(spec: dict[str, Any], scale: float) -> int:
    threads = int(spec.get("threads") or 1)
    return max(threads, round(spec["tx"] * scale / threads) * threads)


def plan(claim: Claim) -> Callable[[dict[str, Any], Avail], Plan]:
    def f(sc: dict[str, Any], av: Avail) -> Plan:
        p = Plan()
        schemes, _, _ = av.filter(p, claim.schemes, [])
        keys = sorted(claim.swept_keys(sc))
        missing_keys = [k for k in keys if "." in k and k not in av.params]
        if missing_keys:
            p.skipped += [f"parameter '{k}' (not in durasim.params())" for k in missing_keys]
            return p
        seen = set()
        base = claim.base(sc, claim.scheme)
        defaults = getattr(av, "defaults", None) or {
            k: v.get("default") for k, v in _core.params().items()
        }
        ref = {k: base.get(k, claim.fixed.get(k, defaults.get(k))) for k in keys}
        points = {a.key: a.points(sc) for a in claim.axes}
        for a in claim.axes:
            for pt in points[a.key]:
                for s in schemes:
                    spec = claim.base(sc, s)
                    for k in keys:
                        if k not in spec:
                            spec[k] = ref[k]
                    spec.update(pt.for_scheme(s))
                    spec["tx"] = _tx(spec, pt.tx_scale)
                    key = tuple(sorted((k, repr(v)) for k, v in spec.items()))
                    if key not in seen:
                        seen.add(key)
                        p.specs.append(spec)
        p.meta.update(claim_keys=keys, claim_ref=ref, claim_points=points)
        return p

    return f


def _matches(row: pd.Series, params: dict[str, Any], keys: list[str], ref: dict) -> bool:
    for k in keys:
        want = params.get(k, ref.get(k))
        have = row.get(k)
        if missing(want) and missing(have):
            continue
        if not _same(have, want):
            return False
    return True


def analyze(claim: Claim) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def f(raw: pd.DataFrame) -> pd.DataFrame:
        meta = raw.attrs.get("plan_meta") or {}
        rows: list[dict[str, Any]] = []
        keys = list(meta.get("claim_keys") or [])
        ref = dict(meta.get("claim_ref") or {})
        points = meta.get("claim_points") or {}
        ran = raw[raw["scheme"].isin(claim.schemes)] if len(raw) else raw
        if claim.derive is not None and len(ran):
            ran = claim.derive(ran.copy())
        for a in claim.axes:
            for order, pt in enumerate(points.get(a.key, [])):
                at: dict[str, pd.Series] = {}
                for s in claim.schemes:
                    part = ran[ran["scheme"] == s] if len(ran) else ran
                    hit = [
                        r for _, r in part.iterrows() if _matches(r, pt.for_scheme(s), keys, ref)
                    ]
                    if hit:
                        at[s] = hit[0]
                me = at.get(claim.scheme)
                x = pt.x
                if a.x_metric and me is not None and not missing(me.get(a.x_metric)):
                    x = float(me[a.x_metric])
                shown = {c: (me.get(c) if me is not None else float("nan")) for c in a.show}
                # The claimed scheme's run parameters (the CSV's provenance)
                # and any run of the point that stopped.
                given = {}
                if me is not None:
                    given = {
                        c: me[c]
                        for c in me.index
                        if "." in str(c) and not str(c).startswith(("stat.", "sim.", "nvm_media."))
                    }
                errors = [
                    str(r.get("error"))
                    for r in at.values()
                    if "error" in r.index and not missing(r.get("error"))
                ]
                for rival in claim.rivals:
                    other = at.get(rival)
                    for m in claim.metrics:
                        mine = _num(me, m.col)
                        theirs = _num(other, m.col)
                        if m.higher_is_better:
                            adv = mine / theirs if theirs else float("nan")
                        else:
                            adv = theirs / mine if mine else float("nan")
                        rows.append(
                            {
                                "axis": a.key,
                                "axis_label": a.label,
                                "point": pt.label,
                                "point_order": order,
                                "x": x,
                                "scheme": claim.scheme,
                                "rival": rival,
                                "metric": m.col,
                                "metric_label": m.label,
                                "value": mine,
                                "rival_value": theirs,
                                "advantage": adv,
                                **{f"{claim.scheme} {c}": v for c, v in shown.items()},
                                "workload": me.get("workload") if me is not None else None,
                                "threads": me.get("threads") if me is not None else None,
                                "tx": me.get("tx") if me is not None else None,
                                **given,
                                "error": "; ".join(errors) if errors else None,
                                **{k: pt.for_scheme(claim.scheme).get(k, ref.get(k)) for k in keys},
                            }
                        )
        df = pd.DataFrame(rows)
        if not len(df):
            df = pd.DataFrame(columns=["axis", "point", "x", "rival", "metric", "advantage"])
        df.attrs["normalization"] = (
            f"{claim.name(claim.scheme)}'s advantage over each rival at the same point; "
            "> 1: the claim holds there"
        )
        notes = [
            f"claim tested: {claim.claim}",
            f"sweep: {claim.what}",
            _definition(claim),
        ]
        if claim.notes is not None and len(ran):
            notes += claim.notes(ran)
        df.attrs["face_notes"] = len(notes)
        notes += readings(claim, df)
        if len(raw) and "error" in raw.columns and raw["error"].notna().any():
            notes.append(f"{int(raw['error'].notna().sum())} run(s) stopped with an error")
        df.attrs["notes"] = notes
        df.attrs["claim"] = claim.claim
        df.attrs["labels"] = dict(claim.labels)
        return df

    return f


def _definition(claim: Claim) -> str:
    me = claim.name(claim.scheme)
    up = ", ".join(m.label for m in claim.metrics if m.higher_is_better)
    down = ", ".join(m.label for m in claim.metrics if not m.higher_is_better)
    parts = ([f"{me}'s value / the rival's for {up}"] if up else []) + (
        [f"the rival's value / {me}'s for {down}"] if down else []
    )
    return "advantage = " + "; ".join(parts)


def _num(row: pd.Series | None, col: str) -> float:
    if row is None:
        return float("nan")
    v = row.get(col)
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def readings(claim: Claim, df: pd.DataFrame) -> list[str]:
    """One sentence per axis, rival and metric: where the claim holds."""
    out = []
    if not len(df):
        return out
    for (_, rival, _), part in df.groupby(["axis", "rival", "metric"], sort=False):
        part = part.sort_values("point_order")
        ok = [f"{p} ({fmt(v)}×)" for p, v in zip(part["point"], part["advantage"]) if v == v]
        if not ok:
            continue
        holds = [p for p, v in zip(part["point"], part["advantage"]) if v == v and v > 1]
        fails = [p for p, v in zip(part["point"], part["advantage"]) if v == v and v <= 1]
        verdict = (
            "holds at every point"
            if not fails
            else "holds nowhere"
            if not holds
            else f"holds at {', '.join(holds)}; not at {', '.join(fails)}"
        )
        label = part["metric_label"].iloc[0]
        out.append(
            f"{part['axis_label'].iloc[0]}, {label}, {claim.name(claim.scheme)} vs "
            f"{claim.name(rival)}: {', '.join(ok)} — {verdict}"
        )
    return out


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Per axis and point: the advantage over each rival in each metric,
    and what the input changed in the claimed scheme's runs."""
    if not len(df) or "rival" not in df.columns:
        return pd.DataFrame({"input": []})
    labels = df.attrs.get("labels") or {}
    scheme = df["scheme"].iloc[0]
    shown = [c for c in df.columns if str(c).startswith(f"{scheme} ")]
    rows = []
    for (_, _, _), part in df.groupby(["axis", "point_order", "point"], sort=False):
        first = part.iloc[0]
        row = {"input": first["axis_label"], "point": first["point"], "x": first["x"]}
        for _, r in part.iterrows():
            row[f"{r['metric_label']} vs {labels.get(r['rival'], r['rival'])}"] = r["advantage"]
        for c in shown:
            row[c] = first[c]
        rows.append(row)
    return pd.DataFrame(rows)


def figure(df: pd.DataFrame) -> Figure:
    """One column per axis, one row per metric: the claimed scheme's
    advantage over each rival, with parity (1×) marked."""
    axes_keys = list(dict.fromkeys(df["axis"])) if len(df) else []
    metrics = list(dict.fromkeys(df["metric"])) if len(df) else []
    fig, axs = new_figure(
        df,
        "Where the claim holds",
        ncols=max(1, len(axes_keys)),
        nrows=max(1, len(metrics)),
        width=9.0,
    )
    fig.set_figheight(2.9 * max(1, len(metrics)) + 2.4)
    if not len(df) or df["advantage"].isna().all():
        return empty_figure(fig, axs, df)
    labels = df.attrs.get("labels") or {}
    ncols = max(1, len(axes_keys))
    for i, m in enumerate(metrics):
        for j, a in enumerate(axes_keys):
            ax = axs[i * ncols + j]
            part = df[(df["metric"] == m) & (df["axis"] == a)].sort_values("point_order")
            pts = list(dict.fromkeys(part["point"]))
            numeric = part["x"].notna().all() and part["x"].nunique() == len(pts)
            xs_all = part.drop_duplicates("point")["x"].astype(float)
            ticks = list(pts)
            if numeric and not _spread(xs_all):
                # Measured values too close to read apart: evenly spaced,
                # each tick labelled with its value.
                numeric = False
                ticks = [f"{fmt(v)}\n{p}" for v, p in zip(xs_all, pts)]
            for rival in dict.fromkeys(part["rival"]):
                r = part[part["rival"] == rival]
                xs = r["x"].astype(float) if numeric else r["point_order"]
                ax.plot(xs, r["advantage"], marker="o", label=f"vs {labels.get(rival, rival)}")
            who = labels.get(df["scheme"].iloc[0], df["scheme"].iloc[0])
            ax.axhline(1.0, color="#888", lw=1, ls="--", zorder=0)
            if numeric:
                xs = part.drop_duplicates("point")["x"].astype(float)
                if xs.min() > 0 and xs.max() / xs.min() > 8:
                    ax.set_xscale("log")
                names = dict(zip(xs, part.drop_duplicates("point")["point"]))
                ax.xaxis.set_major_locator(FixedLocator(list(xs)))
                ax.xaxis.set_major_formatter(
                    FuncFormatter(lambda v, _, n=names: f"{fmt(v)}\n{_wrap(n.get(v, ''))}")
                )
                ax.xaxis.set_minor_locator(FixedLocator([]))
                ax.tick_params(axis="x", labelsize=7)
            else:
                ax.set_xticks(range(len(pts)), [_wrap(p) for p in ticks], fontsize=7)
                ax.set_xlim(-0.4, len(pts) - 0.6)
            lo, hi = np.nanmin(part["advantage"]), np.nanmax(part["advantage"])
            if not (math.isnan(lo) or math.isnan(hi)):
                lo, hi = min(lo, 1.0), max(hi, 1.0)
                if lo > 0 and hi / lo > 20:
                    # Advantages from below 1 to tens: parity stays readable.
                    ax.set_yscale("log")
                    log_ticks(ax, "y")
                    ax.set_ylim(lo / 1.3, hi * 1.3)
                else:
                    ax.set_ylim(lo * 0.9, hi * 1.1)
            ax.grid(alpha=0.3)
            # Every panel names its input (the top row's in small print).
            ax.set_xlabel(
                textwrap.fill(part["axis_label"].iloc[0], 48),
                fontsize=8 if i == len(metrics) - 1 else 6.5,
            )
            # Every panel says what it plots (its row's metric).
            ax.set_ylabel(f"{who} advantage (×)\n{part['metric_label'].iloc[0]}", fontsize=8)
            if j == ncols - 1:
                legend_outside(ax)
    # The readings (one sentence per line of the figure) are in the
    # report's notes; the face keeps the claim, the sweep and its caveats.
    face = df.copy()
    face.attrs["notes"] = list(df.attrs.get("notes") or [])[: df.attrs.get("face_notes")]
    footnote(fig, face)
    return fig


def _wrap(text: str, width: int = 16) -> str:
    return "\n".join(textwrap.fill(line, width) for line in str(text).split("\n"))


def _spread(xs: pd.Series) -> bool:
    """Whether ``xs`` lie far enough apart to be read on a numeric axis
    (log-spaced when they span more than 8x)."""
    v = sorted(float(x) for x in xs)
    if len(v) < 2:
        return True
    if v[0] > 0 and v[-1] / v[0] > 8:
        v = [math.log(x) for x in v]
    span = v[-1] - v[0]
    return span > 0 and min(b - a for a, b in zip(v, v[1:])) >= 0.2 * span


def experiment(claim: Claim, id: str, item: str, title: str, section: str = "") -> Experiment:
    """The claim as one experiment of its paper (register it in the
    paper's experiment table and its figure in the figure table)."""
    return Experiment(id, item, title, plan(claim), analyze(claim), section=section, table=table)
