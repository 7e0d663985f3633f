"""What every paper's figures share: the figure and its title (the
normalization under the experiment's title), legends beside the data,
below the axes what the figure omits and why, a figure for a frame with no
rows, log-axis ticks, grouped bars per scheme, lines of a sweep, the
legend's series, and writing PNG + SVG.

Bars and lines are checked before they are drawn (:mod:`durasim._figcheck`):
the figure changes its form or states the limitation on its face, and
keeps the findings (:func:`flags`).

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

from . import _figcheck as fc
from ._figcheck import Flag


def _title(df: pd.DataFrame, fallback: str) -> str:
    item = df.attrs.get("paper_item", "")
    title = df.attrs.get("title", fallback)
    norm = df.attrs.get("normalization")
    head = f"{title} — {item}" if item else title
    if norm and norm.startswith("none (") and norm.endswith(")"):
        norm = "not normalized: " + norm[len("none (") : -1]
    elif norm == "none":
        norm = "not normalized"
    return fc.readable(f"{head}\n[{norm}]" if norm else head)


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


def flag(fig: Figure, f: Flag) -> None:
    """Keep a finding of :mod:`durasim._figcheck` on the figure (once);
    :func:`footnote` prints it."""
    kept = fig.__dict__.setdefault("durasim_flags", [])
    if f not in kept:
        kept.append(f)


def flags(fig: Figure) -> list[Flag]:
    """The findings of the checks a figure made on its data."""
    return list(fig.__dict__.get("durasim_flags", []))


def _not_steady(fig: Figure, df: pd.DataFrame) -> None:
    """A figure of runs known to miss a mechanism's steady state says so
    across every panel (behind the data), not only in the footnote."""
    why = df.attrs.get("not_steady") or []
    if not why:
        return
    for ax in fig.axes:
        if not ax.axison:
            continue
        # Above the panel (bars cannot hide it) and behind the data.
        ax.set_title(
            "NOT STEADY STATE (see below)",
            loc="left",
            fontsize=7.5,
            color="#c00",
            fontweight="bold",
        )
        ax.text(
            0.5,
            0.5,
            "NOT STEADY STATE",
            transform=ax.transAxes,
            ha="center",
            va="center",
            rotation=20,
            fontsize=22,
            color="#c00",
            alpha=0.15,
            zorder=0,
            fontweight="bold",
        )
    flag(
        fig,
        Flag(
            fc.NOT_STEADY,
            "all panels",
            "NOT STEADY STATE at this scale (rankings may differ at steady state): " + why[0],
            "stamped on every panel",
        ),
    )


def footnote(fig: Figure, df: pd.DataFrame, extra: Sequence[str] = ()) -> None:
    """What the figure omits and why, on its face (below the axes): the
    checks' findings first, then the frame's notes, numbers formatted for
    reading."""
    _not_steady(fig, df)
    found = flags(fig)
    lines = [f"! {f.text}" for f in found if f.text]
    shown = {f.text for f in found}
    lines += list(extra)
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
        # The steady-state line is already the stamp's flag.
        if not any(str(n) in t for t in shown):
            lines.append(str(n))
    if lines:
        wrapped = "\n".join(textwrap.fill(fc.readable(x), 150) for x in lines)
        fig.supxlabel(wrapped, fontsize=7, ha="left", x=0.01, color="#444")


def log_ticks(ax, axis: str = "y") -> None:
    """A log axis labels 1-2-5 ticks in plain numbers (not just powers of 10)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: fc.number(v)))
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
    drawn: list[tuple[float, float, str]] = []
    for i, s in enumerate(schemes):
        part = df[df["scheme"] == s].set_index("config_label")[y]
        vals = [float(part.get(lbl, np.nan)) for lbl in labels]
        xs = x + (i - (len(schemes) - 1) / 2) * width
        ax.bar(xs, vals, width, label=s)
        drawn += [(float(a), v, f"{s} on {lbl}") for a, v, lbl in zip(xs, vals, labels)]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(labels) - 0.5)  # groups without bars keep their place
    ax.set_xlabel("workload (item size)")
    ax.set_ylabel(ylabel)
    if baseline_line:
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    auto_log(ax, df[y])
    bar_labels(ax, drawn)
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


def auto_log(ax, values: Sequence[float] | pd.Series) -> bool:
    """Log y axis when bars span more than 20x (e.g. the native system next
    to logging schemes, TATP's bytes beside TPC-C's), so that every bar
    stays readable. True when the axis is (now) log."""
    if ax.get_yscale() == "log":
        return True
    v = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna().tolist()
    if not fc.wants_log(v):
        return False
    ax.set_yscale("log")
    ax.set_ylabel(ax.get_ylabel() + ", log scale")
    log_ticks(ax)
    _flag_ax(ax, Flag(fc.SMALL_BARS, _where(ax), "", f"log axis (bars span {fc.span(v):.0f}×)"))
    return True


def _where(ax) -> str:
    return ax.get_title() or ax.get_ylabel() or "axes"


def _flag_ax(ax, f: Flag) -> None:
    if ax.figure is not None:
        flag(ax.figure, f)


def _panel(ax) -> str:
    """'panel "<title or y label>": ' when the figure has several panels."""
    fig = ax.figure
    if fig is None or sum(a.axison for a in fig.axes) < 2:
        return ""
    return f'panel "{_where(ax)}": '


def bar_labels(ax, drawn: Sequence[tuple[float, float, str]], label: bool = True) -> None:
    """Label the bars a reader could not see: a bar of 0 (drawn as
    nothing) says "0"; on a linear axis a bar under 2 % of the tallest
    carries its value (``label=False``: the figure labels every bar
    itself, only the checks run). Bars all of one value are stated."""
    by_key = {(x, who): v for x, v, who in drawn}
    vals = list(by_key.values())
    if len(fc.finite(vals)) > 2 and fc.all_equal(vals):
        _flag_ax(
            ax,
            Flag(
                fc.ALL_EQUAL,
                _where(ax),
                f"{_panel(ax)}every bar is {fc.number(fc.finite(vals)[0])}: "
                "the bars compare nothing in these runs",
            ),
        )
    if not label:
        return
    zeros = fc.zero_bars(by_key)
    log = ax.get_yscale() == "log"
    small = fc.small_bars(by_key, log_axis=log)
    for x, _who in zeros:
        ax.text(
            x,
            0.01,
            "0",
            ha="center",
            va="bottom",
            fontsize=7,
            color="#333",
            transform=ax.get_xaxis_transform(),
        )
    for x, who in small:
        v = by_key[(x, who)]
        ax.annotate(
            fc.number(v),
            (x, v),
            ha="center",
            va="bottom",
            fontsize=6.5,
            rotation=90,
            xytext=(0, 2),
            textcoords="offset points",
            color="#333",
        )
    if zeros:
        names = sorted({who for _, who in zeros})
        _flag_ax(
            ax,
            Flag(
                fc.ZERO_BARS,
                _where(ax),
                f"bars of exactly 0, labelled '0': {_list(names)}",
                "labelled",
            ),
        )
    if small:
        names = sorted({who for _, who in small})
        _flag_ax(
            ax,
            Flag(
                fc.SMALL_BARS,
                _where(ax),
                f"bars under 2 % of the tallest, values labelled: {_list(names)}",
                "labelled",
            ),
        )


def _list(names: Sequence[str], n: int = 6) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def lines(
    ax,
    curves: Sequence[tuple[str, Sequence[float], Sequence[float], dict]],
    *,
    xfmt=fc.number,
    yfmt=fc.number,
    ref: float | None = None,
    spread: float | None = None,
    spread_source: str = "",
    flat_why: str = "",
    min_halfspan: float | None = None,
) -> None:
    """Draw a sweep's curves ``(label, xs, ys, plot kwargs)`` after checking
    them:

    - a curve exactly on an earlier one is drawn dashed with hollow markers
      over it, its legend entry naming the one it matches;
    - a curve whose change is carried by one point is drawn as markers
      without a line, every point's value labelled;
    - when every curve is flat, the values are labelled and the figure
      says the swept parameter changed nothing (``flat_why``: why);
    - with ``ref`` and ``spread`` (relative run-to-run spread), the band
      ``ref`` ± spread is shaded and the axis never zooms in below it;
      when every point lies inside it, the figure says no effect is
      resolved;
    - with ``ref`` and ``min_halfspan`` (relative), the axis shows at least
      ``ref`` ± that much: a ratio's few-percent differences are drawn as
      few-percent, not stretched over the whole axis."""
    where = _where(ax)
    hidden = fc.overlaps({c[0]: (c[1], c[2]) for c in curves})
    # Each group of identical curves shares one dash cycle: every member
    # draws its own segment of it, so every colour shows along the line.
    group: dict[str, list[str]] = {}
    for h, under in hidden.items():
        group.setdefault(under, [under]).append(h)
    member = {m: (j, len(g)) for g in group.values() for j, m in enumerate(g)}
    flat = [c[0] for c in curves if fc.all_equal(c[2])]
    all_y: list[float] = []
    for label, xs, ys, kw in curves:
        xs, ys = list(xs), list(ys)
        all_y += ys
        kw = {"marker": "o", **kw}
        shown = label
        if label in member:
            j, k = member[label]
            seg = 4.0
            kw.update(ls=(j * seg, (seg, (k - 1) * seg)), lw=2.0, zorder=2 + j * 0.01)
            if j:
                kw.update(mfc="none", ms=min(6 + 2.5 * j, 14), mew=1.5)
                shown = f"{label} (= {hidden[label]}, drawn in alternating dashes)"
        step = fc.one_point_step(ys)
        if step is not None and label not in hidden:
            kw.update(ls="none", ms=7)
            flag(
                ax.figure,
                Flag(
                    fc.ONE_POINT_STEP,
                    where,
                    f"{_panel(ax)}{label}: one point carries the whole change: "
                    + fc.describe_step(xs, ys, step, xfmt, yfmt)
                    + "; drawn as points (no line: nothing was measured between them)",
                    "markers without a line, values labelled",
                ),
            )
        ax.plot(xs, ys, label=shown, **kw)
        if step is not None and label not in hidden:
            _point_labels(ax, xs, ys, yfmt)
    if hidden:
        pairs = [f"{a} = {b}" for a, b in hidden.items()]
        flag(
            ax.figure,
            Flag(
                fc.OVERLAP,
                where,
                "identical curves, drawn in alternating dashes of their colours: " + _list(pairs),
                "alternating dashes, nested hollow markers",
            ),
        )
    if curves and len(flat) == len(curves):
        vals = sorted({yfmt(c[2][0]) for c in curves if len(c[2])})
        for label, xs, ys, _ in curves:
            if label not in hidden and len(xs):
                ax.annotate(
                    yfmt(ys[-1]),
                    (list(xs)[-1], list(ys)[-1]),
                    fontsize=7,
                    xytext=(4, 4),
                    textcoords="offset points",
                )
        flag(
            ax.figure,
            Flag(
                fc.ALL_EQUAL,
                where,
                f"{_panel(ax)}every point of every curve is {' or '.join(vals)}: "
                "the swept value changed nothing in these runs"
                + (f" ({flat_why})" if flat_why else ""),
                "stated, values labelled",
            ),
        )
    if ref is not None and min_halfspan:
        lo, hi = ax.get_ylim()
        half = min_halfspan * abs(ref)
        ax.set_ylim(min(lo, ref - half), max(hi, ref + half))
    if ref is not None and spread:
        band = spread * abs(ref)
        ax.axhspan(
            ref - band,
            ref + band,
            color="#999",
            alpha=0.15,
            lw=0,
            label=f"run-to-run spread ±{_pct(spread)}",
        )
        lo, hi = ax.get_ylim()
        ax.set_ylim(min(lo, ref - 3 * band), max(hi, ref + 3 * band))
        if fc.below_spread(all_y, spread, ref):
            src = f", {spread_source}" if spread_source else ""
            dev = max(abs(v - ref) for v in all_y if v == v) / abs(ref)
            flag(
                ax.figure,
                Flag(
                    fc.BELOW_SPREAD,
                    where,
                    f"{_panel(ax)}every point within ±{_pct(dev)} of {yfmt(ref)}, "
                    f"inside the run-to-run spread (±{_pct(spread)}{src}): "
                    "no effect is resolved; the axis is kept at ±3× the spread",
                    "spread band, axis no narrower than it",
                ),
            )
    ax.grid(alpha=0.3)


def _pct(rel: float) -> str:
    """A relative spread as a percentage with two significant digits."""
    return f"{rel * 100:.2g} %"


def _point_labels(ax, xs, ys, yfmt) -> None:
    for x, y in zip(xs, ys):
        ax.annotate(
            yfmt(y),
            (x, y),
            ha="center",
            va="bottom",
            fontsize=7,
            xytext=(0, 5),
            textcoords="offset points",
        )
    ax.margins(y=0.12)  # room above the top point for its label


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
