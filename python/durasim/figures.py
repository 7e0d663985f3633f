"""One matplotlib figure per HOOP experiment.

Each ``fig_*`` takes the experiment's DataFrame (see
:mod:`durasim.experiments.hoop`) and returns a ``matplotlib.figure.Figure``
(object API only: no pyplot state, safe in workers and tests). Axes carry
units; the title states the normalization. A frame with no rows gives a
figure that says which parts were not available.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from .experiments.hoop import EXPERIMENTS, P_GC_PERIOD, P_REC_BW, P_REC_THREADS, SCHEMES

SCHEME_ORDER = {s: i for i, s in enumerate(SCHEMES)}


def _title(df: pd.DataFrame, fallback: str) -> str:
    item = df.attrs.get("paper_item", "")
    title = df.attrs.get("title", fallback)
    norm = df.attrs.get("normalization")
    head = f"{title} — {item}" if item else title
    if norm and norm.startswith("none (") and norm.endswith(")"):
        norm = "not normalized: " + norm[len("none (") : -1]
    elif norm == "none":
        norm = "not normalized"
    return f"{head}\n[{norm}]" if norm else head


def _new(
    df: pd.DataFrame, fallback: str, ncols: int = 1, width: float = 8.0, nrows: int = 1
) -> tuple[Figure, list]:
    # At most ~9 in (1080 px at 120 dpi): the report page is 1100 px wide,
    # so a figure is never shrunk below legibility there.
    height = 4.6 if nrows == 1 else 2.6 * nrows + 1.2
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel().tolist()
    fig.suptitle(_title(df, fallback), fontsize=10)
    return fig, axes


def _legend_outside(ax, **kw) -> None:
    """Legend right of the axes, never over the data."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kw)


def _footnote(fig: Figure, df: pd.DataFrame, extra: Sequence[str] = ()) -> None:
    """What the figure omits and why, on its face (below the axes)."""
    lines = list(extra)
    bad = df.attrs.get("not_normalizable") or {}
    by_reason: dict[str, list[str]] = {}
    for k, v in bad.items():
        by_reason.setdefault(v, []).append(k)
    for why, groups in by_reason.items():
        lines.append(f"no bars for {', '.join(groups)}: {why}")
    skipped = df.attrs.get("skipped") or []
    if skipped and len(df):
        names = [x.split(" (")[0] for x in skipped]
        lines.append(
            "not in this build, not run: "
            + ", ".join(names[:8])
            + (" ..." if len(names) > 8 else "")
        )
    for n in df.attrs.get("notes") or []:
        lines.append(str(n))
    if lines:
        wrapped = "\n".join(textwrap.fill(x, 150) for x in lines)
        fig.supxlabel(wrapped, fontsize=7, ha="left", x=0.01, color="#444")


def _log_ticks(ax, axis: str = "y") -> None:
    """A log axis labels 1-2-5 ticks in plain numbers (not just powers of 10)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_formatter(NullFormatter())


def _empty(fig: Figure, axes: list, df: pd.DataFrame) -> Figure:
    skipped = df.attrs.get("skipped", [])
    msg = "no runs: not available in this build"
    if skipped:
        msg += ":\n" + "\n".join(skipped[:8]) + ("\n..." if len(skipped) > 8 else "")
    for ax in axes:
        ax.set_axis_off()
    axes[0].text(0.5, 0.5, msg, ha="center", va="center", fontsize=8, transform=axes[0].transAxes)
    return fig


def _ordered_schemes(df: pd.DataFrame) -> list[str]:
    # A paper's frames may give their own design order (attrs["scheme_order"]).
    order = {s: i for i, s in enumerate(df.attrs.get("scheme_order") or [])} or SCHEME_ORDER
    return sorted(df["scheme"].unique(), key=lambda s: (order.get(s, 99), s))


def _bars(ax, df: pd.DataFrame, y: str, ylabel: str, baseline_line: bool = True) -> None:
    labels = list(dict.fromkeys(df["config_label"]))
    schemes = _ordered_schemes(df)
    width = 0.8 / max(len(schemes), 1)
    x = np.arange(len(labels))
    for i, s in enumerate(schemes):
        part = df[df["scheme"] == s].set_index("config_label")[y]
        vals = [float(part.get(lbl, np.nan)) for lbl in labels]
        ax.bar(x + (i - (len(schemes) - 1) / 2) * width, vals, width, label=s)
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(labels) - 0.5)  # groups without bars keep their place
    ax.set_xlabel("workload (item size)")
    ax.set_ylabel(ylabel)
    if baseline_line:
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    _auto_log(ax, df[y])
    # A group with no bar at all says why, where the bars would be.
    bad = df.attrs.get("not_normalizable") or {}
    for xi, lbl in zip(x, labels):
        if lbl in bad:
            ax.text(
                xi,
                0.02,
                f"n/a: {bad[lbl]}",
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=6.5,
                color="#a00",
                transform=ax.get_xaxis_transform(),
            )
    _legend_outside(ax)
    ax.grid(axis="y", alpha=0.3)


def _auto_log(ax, values: pd.Series) -> None:
    """Log y axis when bars span more than 20x (e.g. the native system next
    to logging schemes), so that every bar stays readable."""
    v = pd.to_numeric(values, errors="coerce")
    v = v[v > 0]
    if len(v) and v.max() / v.min() > 20:
        ax.set_yscale("log")
        ax.set_ylabel(ax.get_ylabel() + ", log scale")
        _log_ticks(ax)


def _grid_fig(df: pd.DataFrame, y: str, what: str, fallback: str) -> Figure:
    fig, axes = _new(df, fallback)
    if not len(df):
        return _empty(fig, axes, df)
    base = df.attrs.get("baseline") or "baseline"
    _bars(axes[0], df, y, f"{what} (× {base})")
    _footnote(fig, df)
    return fig


def fig_throughput(df: pd.DataFrame) -> Figure:
    return _grid_fig(df, "norm_throughput", "normalized throughput", "Throughput")


def fig_latency(df: pd.DataFrame) -> Figure:
    return _grid_fig(df, "norm_latency", "normalized critical-path latency", "Latency")


def fig_traffic(df: pd.DataFrame) -> Figure:
    return _grid_fig(df, "norm_write_traffic", "NVM write bytes per tx", "Write traffic")


def fig_energy(df: pd.DataFrame) -> Figure:
    return _grid_fig(df, "norm_energy", "normalized NVM energy per tx", "Energy")


def _lines(ax, df: pd.DataFrame, x: str, y: str, series: str, fmt=str) -> None:
    drawn: dict[tuple, str] = {}
    for key in sorted(df[series].dropna().unique(), key=lambda v: (str(type(v)), v)):
        part = df[df[series] == key].sort_values(x)
        label = fmt(key)
        sig = (tuple(part[x]), tuple(round(float(v), 9) for v in part[y]))
        if sig in drawn:
            # Identical curves hide each other: the legend says so.
            label += f" (same as {drawn[sig]}, hidden under it)"
        else:
            drawn[sig] = label
        ax.plot(part[x], part[y], marker="o", label=label)
    ax.grid(alpha=0.3)
    _legend_outside(ax)


def fig_gc_reduction(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "GC data reduction")
    if not len(df):
        return _empty(fig, axes, df)
    ax = axes[0]
    d = df.assign(reduction_pct=df["reduction_ratio"].astype(float) * 100.0)
    _lines(ax, d, "tx", "reduction_pct", "config_label")
    ax.set_xscale("log")
    _log_ticks(ax, "x")
    ax.set_xlabel("transactions (count, log scale)")
    ax.set_ylabel("data reduction ratio (% of bytes written by tx)")
    _footnote(fig, df)
    return fig


def fig_gc_period(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "GC period")
    if not len(df):
        return _empty(fig, axes, df)
    ax = axes[0]
    _lines(ax, df, P_GC_PERIOD, "norm_throughput", "config_label")
    ax.set_xlabel("GC period (ms)")
    ax.set_ylabel("normalized throughput (×)")
    _footnote(fig, df)
    return fig


def fig_recovery(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Recovery time")
    if not len(df):
        return _empty(fig, axes, df)
    ax = axes[0]
    _lines(ax, df, P_REC_THREADS, "recovery_ms", P_REC_BW, fmt=lambda v: f"{v:g} GB/s")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(df[P_REC_THREADS]))))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("recovery threads (count, log2 scale)")
    ax.set_ylabel("recovery time (ms)")
    _footnote(fig, df)
    return fig


def fig_ycsb_latency(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "YCSB vs NVM latency", ncols=2, width=9.0)
    if not len(df):
        return _empty(fig, axes, df)
    base = df.attrs.get("baseline") or "baseline"
    for ax, varied, fixed in ((axes[0], "read", "write 150 ns"), (axes[1], "write", "read 50 ns")):
        part = df[df["varied"] == varied]
        for s in _ordered_schemes(part):
            p = part[part["scheme"] == s].sort_values("latency_ns")
            ax.plot(p["latency_ns"], p["norm_throughput"], marker="o", label=s)
        ax.set_xlabel(f"NVM {varied} latency (ns; {fixed})")
        ax.set_ylabel(f"normalized throughput (× {base})")
        ax.grid(alpha=0.3)
    axes[0].invert_xaxis()  # the paper sweeps read latency from 250 ns down to 50 ns
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="outside right upper")
    _footnote(fig, df)
    return fig


def fig_mapping_table(df: pd.DataFrame) -> Figure:
    fig, axes = _new(df, "Mapping-table size")
    if not len(df):
        return _empty(fig, axes, df)
    ax = axes[0]
    _lines(ax, df, "mapping_table_kb", "norm_throughput", "scheme")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(df["mapping_table_kb"]))))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("mapping table size (KB, log2 scale)")
    ax.set_ylabel("normalized throughput (×)")
    _footnote(fig, df)
    return fig


def fig_profiling(df: pd.DataFrame) -> Figure:
    # Three panels stacked: legible at the report page's width.
    fig, axes = _new(df, "Profiling", nrows=3)
    if not len(df):
        return _empty(fig, axes, df)
    cols = [
        ("loads_per_llc_miss", 1.0, "loads per LLC miss (memory loads)"),
        ("parallel_read_fraction", 100.0, "misses needing home+OOP reads (%)"),
        ("llc_miss_ratio", 100.0, "LLC miss ratio (%)"),
    ]
    labels = list(dict.fromkeys(df["config_label"]))
    x = np.arange(len(labels))
    for ax, (col, mult, ylabel) in zip(axes, cols):
        vals = [
            float(v) * mult if v is not None and not _isnan(v) else np.nan
            for v in df.set_index("config_label")[col].reindex(labels)
        ]
        ax.bar(x, vals, 0.6, label=col)
        for xi, v in zip(x, vals):
            if np.isnan(v):
                ax.text(
                    xi,
                    0.02,
                    "n/a: not reported",
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=6.5,
                    color="#a00",
                    transform=ax.get_xaxis_transform(),
                )
            else:
                ax.annotate(
                    f"{v:.3g}",
                    (xi, v),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    xytext=(0, 1),
                    textcoords="offset points",
                )
        ax.set_xticks(
            x, labels if ax is axes[-1] else [""] * len(labels), rotation=30, ha="right", fontsize=8
        )
        ax.set_ylabel(ylabel, fontsize=8)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xlabel("workload (item size); HOOP only")
    _footnote(fig, df)
    return fig


def _isnan(v) -> bool:
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


FIGURES = {eid: globals()[e.figure] for eid, e in EXPERIMENTS.items()}


def series(fig: Figure) -> list[str]:
    """Legend labels of every axes of a figure (what a reader sees as series)."""
    out: list[str] = []
    for ax in fig.axes:
        _, labels = ax.get_legend_handles_labels()
        out.extend(lbl for lbl in labels if lbl not in out)
    return out


def save(fig: Figure, stem: Path | str, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg``; return the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        p = stem.with_suffix(f".{fmt}")
        # Fixed metadata keeps the SVG/PNG bytes independent of the date.
        meta = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(p, dpi=120, metadata=meta)
        paths.append(p)
    return paths
