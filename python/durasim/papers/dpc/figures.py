"""One matplotlib figure per dual-page checkpointing experiment
(:mod:`durasim.papers.dpc`), with the conventions of
:mod:`durasim.plotting`: object API only, units on the axes, the
normalization in the title, legends beside the data, and below the axes
what the figure omits and why."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ...plotting import (
    auto_log,
    bar_labels,
    empty_figure,
    footnote,
    legend_outside,
    lines,
    new_figure,
)
from .. import _characterise, _claims
from .experiments import DIRECT, HW_SCHEMES, LABELS, SOFTWARE, WORKLOADS

ORDER = {s: i for i, s in enumerate([*HW_SCHEMES, *SOFTWARE, DIRECT])}
#: One colour per system in every figure (a panel without the Baseline
#: keeps DPC orange).
COLORS = {s: f"C{i}" for s, i in ORDER.items()}


def _new(df: pd.DataFrame, fallback: str, **kw):
    fig, axes = new_figure(df, fallback, **kw)
    t = fig.get_suptitle()
    fig.suptitle("\n".join(textwrap.fill(x, 120) for x in t.split("\n")), fontsize=10)
    return fig, axes


W_ORDER = {w: i for i, w in enumerate(WORKLOADS)}


def _schemes(df: pd.DataFrame) -> list[str]:
    return sorted(df["scheme"].unique(), key=lambda s: (ORDER.get(s, 99), s))


def _workloads(df: pd.DataFrame) -> list[str]:
    return sorted(df["workload"].unique(), key=lambda w: (W_ORDER.get(w, 99), w))


def _grouped(
    ax, df: pd.DataFrame, y: str, ylabel: str, schemes=None, ref_line=None, key="scheme"
) -> None:
    """Bars: one group per workload, one bar per system (``key`` column)."""
    labels = _workloads(df)
    schemes = schemes or sorted(df[key].unique(), key=lambda s: (ORDER.get(s, 99), s))
    width = 0.8 / max(len(schemes), 1)
    x = np.arange(len(labels))
    drawn: list[tuple[float, float, str]] = []
    for i, s in enumerate(schemes):
        part = df[df[key] == s].set_index("workload")[y]
        vals = [float(part.get(w, np.nan)) for w in labels]
        xs = x + (i - (len(schemes) - 1) / 2) * width
        ax.bar(xs, vals, width, label=LABELS.get(s, s), color=COLORS.get(s))
        drawn += [(float(a), v, f"{LABELS.get(s, s)} on {w}") for a, v, w in zip(xs, vals, labels)]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_ylabel(ylabel, fontsize=8)
    # TATP's bars beside TPC-C's (bytes per tx, checkpoints) span > 20x.
    auto_log(ax, [v for _, v, _ in drawn])
    bar_labels(ax, drawn)
    if ref_line is not None:
        ax.axhline(ref_line, color="grey", lw=0.8, ls="--")
    ax.grid(axis="y", alpha=0.3)
    legend_outside(ax)


def fig_overall(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Overall", nrows=3, width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    ck = [s for s in _schemes(df) if s != "ideal"]
    _grouped(axes[0], df, "time_vs_dpc", "execution time (× DPC)", ref_line=1.0)
    _grouped(axes[1], df, "writes_vs_dpc", "NVM bytes written (× DPC)", schemes=ck, ref_line=1.0)
    _grouped(axes[2], df, "overhead_vs_baseline_pct", "overhead over Baseline (% time)", ck)
    axes[-1].set_xlabel("workload")
    footnote(fig, df)
    return fig


def fig_checkpoints(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Checkpoints", nrows=2, width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    _grouped(axes[0], df, "checkpoints", "checkpoints in the window (count)")
    _grouped(axes[1], df, "checkpoint_time_pct", "time checkpointing (% of window)")
    axes[-1].set_xlabel("workload")
    footnote(fig, df)
    return fig


def fig_software(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Software systems", ncols=2, width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    _grouped(axes[0], df, "throughput_vs_dpc", "throughput (× DPC)", ref_line=1.0, key="series")
    _grouped(
        axes[1], df, "nvm_bytes_per_tx_incl_drain", "NVM bytes written per tx (B)", key="series"
    )
    axes[1].set_title("whole run incl. final drain / committed tx", fontsize=8)
    axes[0].get_legend().remove()
    for ax in axes:
        ax.set_xlabel("workload (4 threads, transactions)")
    footnote(fig, df)
    return fig


def _lines(ax, df: pd.DataFrame, x: str, y: str, series: str, label=str) -> None:
    """Checked curves (see :func:`durasim.plotting.lines`), one per ``series``."""
    curves = []
    for key in sorted(df[series].unique(), key=lambda v: (ORDER.get(v, W_ORDER.get(v, 99)), v)):
        p = df[df[series] == key].sort_values(x)
        kw = {"color": COLORS[key]} if key in COLORS else {}
        curves.append((label(key), list(p[x]), [float(v) for v in p[y]], kw))
    lines(ax, curves, yfmt=lambda v: f"{v:.3g}")


def fig_pool_size(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Pool size", ncols=2, width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    _lines(axes[0], df, "paper_pool_mb", "time_vs_baseline", "workload")
    _lines(axes[1], df, "paper_pool_mb", "nvm_write_mb", "workload")
    div = int(df.attrs.get("divisor", 1) or 1)
    xl = "derivative pool (MB at paper scale" + (f"; runs use / {div})" if div > 1 else ")")
    axes[0].set_ylabel("execution time (× Baseline)")
    axes[1].set_ylabel("NVM written in the window (MB)")
    for ax, col in zip(axes, ("time_vs_baseline", "nvm_write_mb")):
        v = pd.to_numeric(df[col], errors="coerce").dropna()
        if len(v) and v.max() <= 1.05 * v.min():
            # Flat within 5 %: show it flat, not as magnified noise.
            ax.set_ylim(0.9 * v.min(), 1.1 * v.max() + 1e-9)
    for ax in axes:
        ax.set_xlabel(xl)
    legend_outside(axes[1])
    footnote(fig, df)
    return fig


def fig_metadata(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Metadata placement", width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    ax = axes[0]
    labels = _workloads(df)
    places = list(dict.fromkeys(df["placement"]))
    width = 0.8 / max(len(places), 1)
    x = np.arange(len(labels))
    for i, p in enumerate(places):
        part = df[df["placement"] == p].set_index("workload")["time_vs_controller"]
        ax.bar(
            x + (i - (len(places) - 1) / 2) * width,
            [float(part.get(w, np.nan)) for w in labels],
            width,
            label=p,
        )
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_xlabel("workload (DPC)")
    ax.set_ylabel("execution time (× all in controller)")
    lo = pd.to_numeric(df["time_vs_controller"], errors="coerce").min()
    if lo > 0.5:
        ax.set_ylim(bottom=min(0.95, lo - 0.02))  # differences are small: zoom in
    ax.grid(axis="y", alpha=0.3)
    legend_outside(ax)
    footnote(fig, df)
    return fig


def fig_interval(df: pd.DataFrame) -> Figure:
    ws = _workloads(df) if len(df) else ["-"]
    fig, axes = _new(df, "Checkpoint interval", ncols=len(ws), nrows=2, width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    div = int(df.attrs.get("time_divisor", df.attrs.get("divisor", 1)) or 1)
    xl = "interval (M cycles at paper scale" + (f"; runs / {div})" if div > 1 else ")")
    for j, w in enumerate(ws):
        d = df[df["workload"] == w]
        top, bottom = axes[j], axes[len(ws) + j]
        _lines(top, d, "paper_interval_mcycles", "time_vs_baseline", "scheme", LABELS.get)
        _lines(bottom, d, "paper_interval_mcycles", "nvm_write_mb", "scheme", LABELS.get)
        top.set_title(w, fontsize=9)
        top.set_ylabel("execution time (× Baseline)", fontsize=8)
        bottom.set_ylabel("NVM written (MB)", fontsize=8)
        bottom.set_xlabel(xl, fontsize=8)
        top.set_xlabel(xl, fontsize=8)
    h, lbl = axes[0].get_legend_handles_labels()
    fig.legend(h, lbl, fontsize=7, loc="outside right upper")
    footnote(fig, df)
    return fig


def fig_metadata_space(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Metadata space", width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    ax = axes[0]
    d = df.reset_index(drop=True)
    names = [f"{r.system}: {r.structure}" for r in d.itertuples()]
    y = np.arange(len(d))
    b = pd.to_numeric(d["bytes"], errors="coerce").fillna(0.0)
    ax.barh(y, b.clip(lower=1), 0.6, label="bytes")
    for yi, r in zip(y, d.itertuples()):
        ents = "n/a" if pd.isna(r.entries) else f"{r.entries:,.0f}"
        ax.text(
            max(float(r.bytes) if not pd.isna(r.bytes) else 1, 1),
            yi,
            f" {r.bits_per_unit:g} bits / {r.unit} × {ents}",
            va="center",
            fontsize=7,
        )
    ax.set_yticks(y, names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("metadata (bytes, log scale; at this scale's table sizes or peaks)")
    ax.set_ylabel("structure (system)")
    # Room right of the longest bar for its annotation (log axis).
    ax.set_xlim(right=float(b.max()) * 300 if b.max() > 0 else 10)
    ax.grid(axis="x", alpha=0.3)
    footnote(fig, df)
    return fig


FIGURES = {
    "overall": fig_overall,
    "checkpoints": fig_checkpoints,
    "software": fig_software,
    "pool_size": fig_pool_size,
    "metadata": fig_metadata,
    "interval": fig_interval,
    "metadata_space": fig_metadata_space,
    "workloads": _characterise.figure,
    "claim": _claims.figure,
}
