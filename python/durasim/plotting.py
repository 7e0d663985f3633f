"""What every paper's figures share: the figure and its title (the
normalization under the experiment's title), legends beside the data,
below the axes what the figure omits and why, a figure for a frame with no
rows, log-axis ticks, grouped bars per scheme, the legend's series, and
writing PNG + SVG.

Object API only (no pyplot state: safe in workers and tests); axes carry
units."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter


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


def new_figure(
    df: pd.DataFrame, fallback: str, ncols: int = 1, width: float = 8.0, nrows: int = 1
) -> tuple[Figure, list]:
    """A figure titled by the frame's experiment, paper item and normalization."""
    # At most ~9 in (1080 px at 120 dpi): the report page is 1100 px wide,
    # so a figure is never shrunk below legibility there.
    height = 4.6 if nrows == 1 else 2.6 * nrows + 1.2
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel().tolist()
    fig.suptitle(_title(df, fallback), fontsize=10)
    return fig, axes


def legend_outside(ax, **kw) -> None:
    """Legend right of the axes, never over the data."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kw)


def footnote(fig: Figure, df: pd.DataFrame, extra: Sequence[str] = ()) -> None:
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


def log_ticks(ax, axis: str = "y") -> None:
    """A log axis labels 1-2-5 ticks in plain numbers (not just powers of 10)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_formatter(NullFormatter())


def empty_figure(fig: Figure, axes: list, df: pd.DataFrame) -> Figure:
    """The figure of a frame with no rows: says what was not available."""
    skipped = df.attrs.get("skipped", [])
    msg = "no runs: not available in this build"
    if skipped:
        msg += ":\n" + "\n".join(skipped[:8]) + ("\n..." if len(skipped) > 8 else "")
    for ax in axes:
        ax.set_axis_off()
    axes[0].text(0.5, 0.5, msg, ha="center", va="center", fontsize=8, transform=axes[0].transAxes)
    return fig


def ordered_schemes(df: pd.DataFrame, order: Sequence[str] = ()) -> list[str]:
    """The frame's schemes in its design order (``attrs["scheme_order"]``,
    else ``order``), the others after them by name."""
    rank = {s: i for i, s in enumerate(df.attrs.get("scheme_order") or order)}
    return sorted(df["scheme"].unique(), key=lambda s: (rank.get(s, 99), s))


def bars(
    ax,
    df: pd.DataFrame,
    y: str,
    ylabel: str,
    baseline_line: bool = True,
    order: Sequence[str] = (),
) -> None:
    """One group per ``config_label``, one bar per scheme (see :func:`ordered_schemes`)."""
    labels = list(dict.fromkeys(df["config_label"]))
    schemes = ordered_schemes(df, order)
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
    legend_outside(ax)
    ax.grid(axis="y", alpha=0.3)


def _auto_log(ax, values: pd.Series) -> None:
    """Log y axis when bars span more than 20x (e.g. the native system next
    to logging schemes), so that every bar stays readable."""
    v = pd.to_numeric(values, errors="coerce")
    v = v[v > 0]
    if len(v) and v.max() / v.min() > 20:
        ax.set_yscale("log")
        ax.set_ylabel(ax.get_ylabel() + ", log scale")
        log_ticks(ax)


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
