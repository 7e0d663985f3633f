"""What a paper's scale keeps and what it shortens, as data.

A reduced scale may run fewer epochs, transactions or instructions; it
must not change the ratios a mechanism depends on (an epoch against a
page, a DRAM cache against the footprint, a run against the mechanism's
period). Each paper describes each of its scales as a :class:`ScaleDoc`:

- ``keeps``: :class:`Ratio` values computed from the scale's settings, each
  with the bound it must hold (at least / at most / equal to the paper's);
  the scale test (python/tests/test_scales.py) asserts every one for every
  paper and scale, and the report prints them as a table;
- ``shortens``: what the scale reduces (run length, sweep points, item
  sizes), in words;
- ``steady``: :class:`Steady` checks made on the runs themselves (periods
  of a mechanism inside the measured window), evaluated by the report on
  its frames and by the scale test on a short probe run.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Ratio:
    """One ratio a mechanism depends on, at one scale."""

    name: str
    mechanism: str
    value: float
    #: The same ratio at the paper's scale (None: the paper states none).
    paper: float | None = None
    at_least: float | None = None
    at_most: float | None = None
    #: |value / paper - 1| <= rel_tol (the scale keeps the paper's ratio).
    rel_tol: float | None = None
    unit: str = ""

    def ok(self) -> bool:
        v = self.value
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return False
        if self.at_least is not None and v < self.at_least:
            return False
        if self.at_most is not None and v > self.at_most:
            return False
        if self.rel_tol is not None:
            if self.paper is None or self.paper == 0:
                return False
            if abs(v / self.paper - 1.0) > self.rel_tol:
                return False
        return True

    def bound(self) -> str:
        parts = []
        if self.rel_tol is not None:
            parts.append("the paper's" if self.rel_tol == 0 else f"the paper's ±{self.rel_tol:.0%}")
        if self.at_least is not None:
            parts.append(f"≥ {fmt(self.at_least)}")
        if self.at_most is not None:
            parts.append(f"≤ {fmt(self.at_most)}")
        return ", ".join(parts) or "—"


@dataclass(frozen=True)
class Steady:
    """A mechanism that must run several times inside the measured window.

    ``count(row)`` gives the number of its periods (or passes) in one run's
    window; every run of ``experiments`` whose scheme is in ``schemes``
    (all if empty) must reach ``at_least``."""

    mechanism: str
    what: str
    count: Callable[[pd.Series], float]
    at_least: float
    experiments: tuple[str, ...]
    schemes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScaleDoc:
    scale: str
    purpose: str
    keeps: list[Ratio] = field(default_factory=list)
    shortens: list[str] = field(default_factory=list)
    steady: list[Steady] = field(default_factory=list)
    #: What the scale costs on the reference host (runs, CPU time), measured.
    cost: str = ""

    def broken(self) -> list[Ratio]:
        return [r for r in self.keeps if not r.ok()]


def fmt(v: Any) -> str:
    """A number for reading: 3 significant digits, thousands separated, no
    exponent for ordinary magnitudes."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return "—"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    a = abs(x)
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 1:
        return f"{x:.3g}"
    if a >= 0.001:
        return f"{x:.3f}".rstrip("0").rstrip(".")
    return f"{x:.1g}"


def steady_results(doc: ScaleDoc, frames: dict[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Each steady-state check on the report's frames: the fewest periods
    any checked run had, how many runs were checked, and whether it holds."""
    out = []
    for st in doc.steady:
        counts: list[float] = []
        seen: set = set()
        for eid in st.experiments:
            df = frames.get(eid)
            if df is None or not len(df) or "scheme" not in df.columns:
                continue
            for _, row in df.iterrows():
                if st.schemes and row["scheme"] not in st.schemes:
                    continue
                key = tuple(sorted((str(k), repr(v)) for k, v in row.items() if _spec_col(k)))
                if key in seen:
                    continue
                seen.add(key)
                c = st.count(row)
                if c is not None and not (isinstance(c, float) and math.isnan(c)):
                    counts.append(float(c))
        lo = min(counts) if counts else float("nan")
        out.append(
            {
                "mechanism": st.mechanism,
                "what": st.what,
                "required": st.at_least,
                "min": lo,
                "max": max(counts) if counts else float("nan"),
                "runs": len(counts),
                "ok": bool(counts) and lo >= st.at_least,
            }
        )
    return out


def _spec_col(k: Any) -> bool:
    k = str(k)
    return k in ("scheme", "workload", "threads", "tx", "seed") or (
        "." in k and not k.startswith(("stat.", "sim.", "nvm_media.", "core."))
    )


def steady_text(results: Sequence[dict[str, Any]]) -> list[str]:
    """One line per steady-state check, for a figure's footnote or a log."""
    lines = []
    for r in results:
        if not r["runs"]:
            continue
        mark = "" if r["ok"] else " — BELOW the required count: not steady state"
        lines.append(
            f"{r['mechanism']}: {fmt(r['min'])}–{fmt(r['max'])} {r['what']} in the measured "
            f"window over {r['runs']} runs (required ≥ {fmt(r['required'])}){mark}"
        )
    return lines


def to_html(doc: ScaleDoc, results: Sequence[dict[str, Any]] | None = None) -> str:
    """The scale as a short paragraph and two small tables (ratios kept;
    steady-state checks measured on this report's runs)."""
    esc = html.escape
    parts = [f"<p><b>Scale <code>{esc(doc.scale)}</code>.</b> {esc(doc.purpose)}</p>"]
    if doc.cost:
        parts.append(f"<p>Cost: {esc(doc.cost)}</p>")
    if doc.shortens:
        parts.append(
            "<p>What this scale shortens against the paper: "
            + "; ".join(esc(s) for s in doc.shortens)
            + ".</p>"
        )
    if doc.keeps:
        rows = "".join(
            "<tr>"
            f"<td>{esc(r.mechanism)}</td><td>{esc(r.name)}</td>"
            f"<td style='text-align:right'>{esc(fmt(r.value) + (' ' + r.unit if r.unit else ''))}"
            "</td>"
            f"<td style='text-align:right'>{esc(fmt(r.paper))}</td>"
            f"<td>{esc(r.bound())}</td><td>{'yes' if r.ok() else '<b>NO</b>'}</td>"
            "</tr>"
            for r in doc.keeps
        )
        parts.append(
            "<table class='scale'><tr><th>mechanism</th><th>ratio</th><th>this scale</th>"
            "<th>paper</th><th>must be</th><th>holds</th></tr>" + rows + "</table>"
        )
    if results:
        rows = "".join(
            "<tr>"
            f"<td>{esc(r['mechanism'])}</td><td>{esc(r['what'])}</td>"
            f"<td style='text-align:right'>{esc(fmt(r['min']))}–{esc(fmt(r['max']))}</td>"
            f"<td style='text-align:right'>≥ {esc(fmt(r['required']))}</td>"
            f"<td style='text-align:right'>{r['runs']}</td>"
            f"<td>{'yes' if r['ok'] else ('<b>NO</b>' if r['runs'] else 'no runs')}</td>"
            "</tr>"
            for r in results
        )
        parts.append(
            "<p>Steady state, measured on this report's runs (periods of each mechanism "
            "inside the measured window):</p><table class='scale'><tr><th>mechanism</th>"
            "<th>count</th><th>fewest–most</th><th>required</th><th>runs</th><th>holds</th>"
            "</tr>" + rows + "</table>"
        )
    return "\n".join(parts)


def freq_ghz(row: pd.Series, default: float) -> float:
    v = row.get("cpu.freq_ghz")
    return float(v) if v is not None and not _nan(v) else default


def param(row: pd.Series, key: str, default: float) -> float:
    v = row.get(key)
    return float(v) if v is not None and not _nan(v) else default


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)
