"""One matplotlib figure per MorLog experiment (:mod:`durasim.papers.morlog`).

Same conventions as :mod:`durasim.plotting` (object API only; units on the
axes; the normalization in the title; legends beside the data; below the
axes what the figure omits and why).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter

from ... import _figcheck as fc
from ...plotting import bars, empty_figure, footnote, legend_outside, lines, new_figure
from .. import _characterise, _claims
from .experiments import DESIGNS, EXPERIMENTS

ORDER = {d: i for i, d in enumerate(DESIGNS)}

#: Bar experiments: the column plotted and its axis label.
BARS = {
    "throughput": ("norm_throughput", "normalized throughput"),
    "macro": ("norm_throughput", "normalized throughput"),
    "traffic": ("norm_write_traffic", "NVM write bytes per tx"),
    "energy": ("norm_write_energy", "NVM cell write energy per tx"),
    "log_bits": ("norm_log_bits", "log bits written per tx"),
}
#: Line experiments: the x axis label (with unit) and whether it is log2.
LINES = {
    "undo_redo_buffer": ("undo+redo buffer size (entries, log2 scale)", True),
    "redo_buffer": ("redo buffer size (entries, log2 scale)", True),
    "threads": ("threads (count, log2 scale)", True),
    "write_latency": ("TLC write latency (× Table III, log2 scale)", True),
    "log_management": ("transaction-table entries (count, log2 scale)", True),
}


def fig_bars(eid: str, df: pd.DataFrame) -> Figure:
    col, what = BARS[eid]
    fig, axes = new_figure(df, EXPERIMENTS[eid].title, width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    base = df.attrs.get("baseline") or "baseline"
    if df.attrs.get("plot"):
        # An analysis that could not normalize plots absolute values.
        col, ylabel = df.attrs["plot"]
        bars(axes[0], df.copy(), col, ylabel, baseline_line=False)
    else:
        bars(axes[0], df.copy(), col, f"{what} (× {base})")
    # One colour per design in every figure, whichever designs ran.
    for container in axes[0].containers:
        for patch in container:
            patch.set_color(f"C{ORDER.get(container.get_label(), 9)}")
    legend_outside(axes[0])
    footnote(fig, df)
    return fig


def fig_lines(eid: str, df: pd.DataFrame) -> Figure:
    xlabel, log2 = LINES[eid]
    x = df.attrs.get("x") or eid
    labels = list(dict.fromkeys(df["config_label"])) if len(df) else []
    n = max(len(labels), 1)
    ncols = min(n, 3)
    nrows = (n + ncols - 1) // ncols
    fig, axes = new_figure(df, EXPERIMENTS[eid].title, ncols=ncols, nrows=nrows, width=9.0)
    if not len(df):
        return empty_figure(fig, axes, df)
    base = df.attrs.get("baseline") or "baseline"
    for ax, lbl in zip(axes, labels):
        part = df[df["config_label"] == lbl]
        curves = []
        for d in sorted(part["scheme"].unique(), key=lambda s: (ORDER.get(s, 99), s)):
            p = part[(part["scheme"] == d) & part[x].notna()].sort_values(x)
            if len(p):
                ys = [float(v) for v in p["norm_throughput"]]
                curves.append((d, list(p[x]), ys, {"color": f"C{ORDER.get(d, 9)}"}))
            elif eid == "redo_buffer":
                # The reference design (no redo buffer): one level, drawn as a line.
                ref = part[part["scheme"] == d]["norm_throughput"]
                if len(ref):
                    ax.axhline(
                        float(ref.iloc[0]), color="grey", ls="--", lw=1, label=f"{d} (defaults)"
                    )
        # A ratio's few-percent differences are drawn as few-percent.
        lines(ax, curves, yfmt=lambda v: f"{v:.3f}", ref=1.0, min_halfspan=0.05)
        if eid == "log_management" and part[x].isna().any():
            # Each design's force-write-back run is its own 1.0.
            ax.axhline(1.0, color="grey", ls="--", lw=1, label="force-write-back (each design)")
        xs = sorted(set(pd.to_numeric(part[x]).dropna()))
        if log2 and xs and min(xs) > 0:
            ax.set_xscale("log", base=2)
        if xs:
            ax.xaxis.set_major_locator(FixedLocator(xs))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fc.number(v)))
        ax.set_title(lbl, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(f"normalized throughput (× {base})", fontsize=8)
        if not any(len(line.get_xdata()) > 2 for line in ax.get_lines()) and not any(
            part[x].notna()
        ):
            ax.text(
                0.5,
                0.5,
                f"no design of this build has a {xlabel.split(' (')[0]}",
                ha="center",
                va="center",
                fontsize=8,
                color="#a00",
                transform=ax.transAxes,
            )
    for ax in axes[len(labels) :]:
        ax.set_axis_off()
    if len(labels) == 1:
        legend_outside(axes[0])
    else:
        seen: dict[str, object] = {}
        for ax in axes:
            for h, lbl in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lbl, h)
        fig.legend(list(seen.values()), list(seen), fontsize=7, loc="outside right upper")
    footnote(fig, df)
    return fig


def figure(df: pd.DataFrame) -> Figure:
    """The figure of a MorLog experiment frame (``df.attrs['experiment']``)."""
    eid = df.attrs.get("experiment")
    if eid in BARS:
        return fig_bars(eid, df)
    if eid in LINES:
        return fig_lines(eid, df)
    raise ValueError(
        f"invalid experiment {eid!r} in the frame's attrs: valid choices: {', '.join(EXPERIMENTS)}"
    )


FIGURES = {eid: figure for eid in EXPERIMENTS if eid != "workloads"}
FIGURES["workloads"] = _characterise.figure
FIGURES["claim"] = _claims.figure
