"""The workload characteristics table every paper's report carries: what
the workloads of its runs look like (footprint, stores per transaction,
words per written line, repeated and silent stores, value compressibility
under FPC and DLDC, LLC misses per memory operation, memory reads per
write-back), measured on runs of the native system (``ideal``: no scheme
adds its own stores; docs/model/metrics.md "Workload characterisation"),
beside the paper's own characterisation where it gives one."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Container
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ..plotting import footnote, new_figure
from ._base import P_CHARACTERISE, Avail, Experiment
from ._scale import Ratio, fmt

#: (metric column, table heading). Every one is a window metric of a run.
MEASURED: list[tuple[str, str]] = [
    ("footprint_mib", "footprint (MiB)"),
    ("program_stores_per_tx", "stores/tx"),
    ("words_per_written_line", "words per written line"),
    ("repeated_store_share", "repeated-store share"),
    ("silent_store_share", "silent-store share"),
    ("written_line_compression_ratio_fpc", "FPC ratio"),
    ("written_line_compression_ratio_dldc", "DLDC ratio"),
    ("llc_misses_per_mem_op", "LLC misses per mem op"),
    ("llc_misses_per_write_back", "reads per write-back"),
    ("read_write_ratio", "loads per store"),
]
MIB = 1024 * 1024


def analyze(
    raw: pd.DataFrame,
    label: Callable[[pd.Series], str],
    paper: dict[str, dict[str, Any]],
    source: str,
    extra: list[tuple[str, str]] = (),
) -> pd.DataFrame:
    """One row per workload configuration: the measured characteristics
    and, as ``paper: <name>`` columns, the paper's values for it."""
    rows = []
    paper_cols = list(dict.fromkeys(k for v in paper.values() for k in v))
    for _, r in raw.iterrows():
        lbl = label(r)
        row: dict[str, Any] = {"workload": lbl, "scheme": r.get("scheme")}
        for k in ("threads", "tx", "measured_tx"):
            row[k] = r.get(k)
        fp = r.get("footprint_bytes")
        row["footprint_mib"] = float(fp) / MIB if fp is not None and fp == fp else float("nan")
        for col, _ in [*MEASURED[1:], *extra]:
            row[col] = r.get(col, float("nan"))
        if r.get("llc_write_backs") == 0:
            # No write-back in the window: the ratio is undefined, not 0.
            row["llc_misses_per_write_back"] = float("nan")
        for c in paper_cols:
            row[f"paper: {c}"] = paper.get(lbl, paper.get(str(r.get("workload")), {})).get(c)
        # The run's parameters and error column, for the CSV's provenance.
        for c in raw.columns:
            if c == "error" or ("." in c and not c.startswith(("stat.", "sim.", "nvm_media."))):
                row.setdefault(c, r[c])
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["normalization"] = "none (window metrics of the native system's runs)"
    df.attrs["extra_columns"] = list(extra)
    missing = [c for c, _ in MEASURED[1:] if c not in raw.columns]
    notes = []
    if missing and len(raw):
        notes.append("not reported by this build: " + ", ".join(missing))
    if paper_cols:
        notes.append(f"paper columns: {source}")
    else:
        notes.append(source)
    df.attrs["notes"] = notes
    return df


def table(df: pd.DataFrame) -> pd.DataFrame:
    """The report's table: workload, run size, measured and paper columns."""
    if not len(df):
        return pd.DataFrame({"workload": []})
    extra = [tuple(x) for x in df.attrs.get("extra_columns") or []]
    heads = dict([*MEASURED, *extra])
    cols = (
        ["workload", "threads", "tx"]
        + [c for c, _ in [*MEASURED, *extra]]
        + [c for c in df.columns if str(c).startswith("paper: ")]
    )
    t = df[[c for c in cols if c in df.columns]].copy()
    return t.rename(columns=heads)


def figure(df: pd.DataFrame) -> Figure:
    """The table drawn as a figure (every report section has one)."""
    t = table(df)
    fig, axes = new_figure(df, "Workload characteristics", width=max(10.5, 0.66 * len(t.columns)))
    fig.set_figheight(1.9 + 0.28 * max(len(t), 1))
    ax = axes[0]
    ax.set_axis_off()
    if not len(t):
        ax.text(0.5, 0.5, "no runs", ha="center", va="center", transform=ax.transAxes)
        return fig
    cells = [[fmt(v) if not isinstance(v, str) else v for v in row] for row in t.values]
    heads = [textwrap.fill(str(c), 11) for c in t.columns]
    tab = ax.table(cellText=cells, colLabels=heads, loc="upper center", cellLoc="right")
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    tab.auto_set_column_width([0])
    tab.scale(1.0, 1.5)
    for (r, _), cell in tab.get_celld().items():
        if r == 0:
            cell.set_height(cell.get_height() * 2.4)
            cell.set_facecolor("#eee")
    footnote(fig, df)
    return fig


def set_by_scale(
    experiments: dict[str, Experiment],
    sc: dict[str, Any],
    swept: Container[str] = (),
    keep: Callable[[str, Any], bool] | None = None,
    av: Avail | None = None,
) -> list[str]:
    """The machine and workload parameters (dotted keys) the plans of every
    experiment at the scale ``sc`` set, other than what an experiment sweeps
    (``swept``, or ``keep(key, value)`` false) and the characterisation
    switch: a scale that sets one changes what the paper ran."""
    av = av if av is not None else Avail()
    return sorted(
        {
            k
            for e in experiments.values()
            for spec in e.plan(sc, av).specs
            for k, v in spec.items()
            if "." in k and k != P_CHARACTERISE and k not in swept and (keep is None or keep(k, v))
        }
    )


def unchanged_ratio(changed: list[str], what: str) -> Ratio:
    """The scale doc's ratio "no machine or workload parameter changed"
    (``changed``: :func:`set_by_scale`); ``what`` names the paper's machine
    and workload tables."""
    return Ratio(
        "machine or workload parameters the scale changes"
        + (f" ({', '.join(changed)})" if changed else ""),
        f"every mechanism ({what})",
        len(changed),
        0,
        at_most=0,
    )
