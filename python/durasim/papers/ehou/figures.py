"""One matplotlib figure per EHOU experiment (:mod:`durasim.papers.ehou`),
with the conventions of :mod:`durasim.plotting`: bars are the mean over
seeds with min–max whiskers."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ... import _figcheck as fc
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
from .experiments import SCHEMES


def _bar_fig(df: pd.DataFrame, y: str, ylabel: str, series_col: str, order: Sequence[str]):
    fig, axes = new_figure(df, df.attrs.get("title", ""), width=9.0)
    ax = axes[0]
    if not len(df) or df[y].isna().all():
        return empty_figure(fig, axes, df)
    labels = list(dict.fromkeys(df["config_label"]))
    present = [s for s in order if s in set(df[series_col])]
    width = 0.8 / max(len(present), 1)
    seeds = df["seed"].nunique() if "seed" in df.columns else 1
    drawn: list[tuple[float, float, str]] = []
    for j, s in enumerate(present):
        # Mean over seeds; the bar's whisker spans the seeds' min..max.
        g = df[df[series_col] == s].groupby("config_label")[y]
        mean, lo, hi = g.mean(), g.min(), g.max()
        xs = [i + (j - (len(present) - 1) / 2) * width for i in range(len(labels))]
        m = [mean.get(lab, float("nan")) for lab in labels]
        err = [
            [v - lo.get(lab, v) for v, lab in zip(m, labels)],
            [hi.get(lab, v) - v for v, lab in zip(m, labels)],
        ]
        ax.bar(xs, m, width, label=s, yerr=err if seeds > 1 else None, capsize=2)
        drawn += [(x, float(v), f"{s} on {lab}") for x, v, lab in zip(xs, m, labels)]
    ax.axhline(1.0, color="#444", lw=0.8, ls="--")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_xlabel(
        f"workload (four threads, configs/ehou.toml; mean of {seeds} seed"
        + ("s, whiskers min–max)" if seeds > 1 else ")")
    )
    ax.set_ylabel(ylabel)
    auto_log(ax, [v for _, v, _ in drawn])
    bar_labels(ax, drawn)
    legend_outside(ax)
    footnote(fig, df)
    return fig


def fig_overhead(df: pd.DataFrame):
    return _bar_fig(
        df[df["scheme"].isin(["osp", "ehou"])] if len(df) else df,
        "norm_overhead",
        "overhead operations / SSP (×)",
        "scheme",
        ["osp", "ehou"],
    )


def fig_throughput(df: pd.DataFrame):
    return _bar_fig(df, "norm_throughput", "throughput / REDU (ratio)", "scheme", SCHEMES)


def fig_persist(df: pd.DataFrame):
    return _bar_fig(
        df, "norm_throughput", "throughput / lazy (ratio)", "variant", ["ehou-lazy", "ehou-eager"]
    )


def fig_ait(df: pd.DataFrame):
    fig, axes = new_figure(df, df.attrs.get("title", ""), width=9.0)
    ax = axes[0]
    if not len(df):
        return empty_figure(fig, axes, df)
    curves, replicates = [], {}
    for lab in dict.fromkeys(df["config_label"]):
        g = df[df["config_label"] == lab].groupby("ait_cache_entries")["norm_throughput"]
        mean = g.mean()
        curves.append((lab, list(mean.index), [float(v) for v in mean.values], {}))
        for n, vals in g:
            replicates[(lab, n)] = list(vals)
    spread = fc.seed_spread(replicates)
    lines(
        ax,
        curves,
        xfmt=lambda v: f"{v:,.0f} entries",
        yfmt=lambda v: f"{v:.3f}",
        ref=1.0,
        min_halfspan=0.05,
        spread=spread,
        spread_source="half-range over this sweep's seeds" if spread else "",
    )
    for lab in dict.fromkeys(df["config_label"]):
        g = df[df["config_label"] == lab].groupby("ait_cache_entries")["norm_throughput"]
        mean = g.mean()
        ax.errorbar(
            mean.index,
            mean.values,
            yerr=[mean - g.min(), g.max() - mean],
            fmt="none",
            ecolor="#444",
            capsize=2,
        )
    ax.set_xscale("log", base=2)
    seeds = df["seed"].nunique() if "seed" in df.columns else 1
    ax.set_xlabel(f"AIT-cache entries (sets x 16 ways; mean of {seeds} seed(s), whiskers min–max)")
    ax.set_ylabel("throughput / Table I AIT cache (ratio)")
    ax.axhline(1.0, color="#444", lw=0.8, ls="--")
    legend_outside(ax)
    footnote(fig, df)
    return fig


FIGURES = {
    "overhead": fig_overhead,
    "throughput": fig_throughput,
    "persist": fig_persist,
    "ait_cache": fig_ait,
    "workloads": _characterise.figure,
    "claim": _claims.figure,
}
