"""Checks a figure makes on its own data before drawing it.

A figure can mislead without a wrong number: two lines exactly on top of
each other (one is invisible), a series whose every point is the same
value (a flat line that reads as a measured effect of nothing), a change
carried by a single point of a sweep (a line through it draws a trend), a
bar of 0 (drawn as nothing), bars too small to see beside others on a
linear axis, an axis zoomed in on differences smaller than the run-to-run
spread (noise drawn as a shape), a raw float in a label (``7.24736e+06``).

Each check here is a pure function of the values a figure is about to
plot; :mod:`durasim.plotting` applies them and either changes the form
(log axis, value labels, markers without lines, dashed duplicates, a
spread band and an axis no narrower than it) or states the limitation on
the figure. Every finding is a :class:`Flag`, kept on the figure
(``plotting.flags(fig)``) and written to the report's ``config.json``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Two plotted values are "the same" within this relative tolerance (ratios
#: of identical runs differ only by float rounding).
REL_TOL = 1e-6

#: On a linear axis from 0, a bar below this share of the tallest bar is a
#: sliver (about 5 px of a 300 px axis): its value must be labelled.
SMALL_BAR = 0.02

#: Bars spanning more than this factor get a log axis (every bar readable).
LOG_SPAN = 20.0

#: The checks, by name (``Flag.check``).
ALL_EQUAL = "all-equal series"
ONE_POINT_STEP = "step carried by one point"
OVERLAP = "overlapping series"
ZERO_BARS = "zero bars"
SMALL_BARS = "bars too small to see"
BELOW_SPREAD = "differences below the run-to-run spread"
NOT_STEADY = "not steady state"
CHECKS = (ALL_EQUAL, ONE_POINT_STEP, OVERLAP, ZERO_BARS, SMALL_BARS, BELOW_SPREAD, NOT_STEADY)


@dataclass(frozen=True)
class Flag:
    """One finding: which check, where (panel or series), the sentence the
    figure shows, and what the figure did about it (``form``: ``stated``
    when the data itself is the limitation, else the change of form)."""

    check: str
    where: str
    text: str
    form: str = "stated"

    def as_dict(self) -> dict[str, str]:
        return {"check": self.check, "where": self.where, "text": self.text, "form": self.form}


def finite(values: Sequence[Any]) -> list[float]:
    out = []
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x):
            out.append(x)
    return out


def same(a: float, b: float, rel_tol: float = REL_TOL) -> bool:
    """Equal up to ``rel_tol`` (absolute near 0)."""
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=rel_tol * 1e-3)


def all_equal(values: Sequence[Any], rel_tol: float = REL_TOL) -> bool:
    """At least two finite values, every one the same."""
    v = finite(values)
    return len(v) >= 2 and all(same(x, v[0], rel_tol) for x in v)


def one_point_step(values: Sequence[Any], rel_tol: float = REL_TOL) -> int | None:
    """The index of the single point that differs when every other point of
    a series (at least three) is the same value; else None."""
    v = [float(x) for x in values]
    if len(v) < 3 or not all(math.isfinite(x) for x in v) or all_equal(v, rel_tol):
        return None
    for i in range(len(v)):
        rest = v[:i] + v[i + 1 :]
        if all_equal(rest, rel_tol) and not same(v[i], rest[0], rel_tol):
            return i
    return None


def overlaps(
    series: Mapping[Hashable, tuple[Sequence[Any], Sequence[Any]]], rel_tol: float = REL_TOL
) -> dict[Hashable, Hashable]:
    """Series drawn exactly on an earlier one (same x, y within ``rel_tol``):
    ``{hidden label: label it lies under}``, in the mapping's order."""
    out: dict[Hashable, Hashable] = {}
    seen: list[tuple[Hashable, list[float], list[float]]] = []
    for key, (xs, ys) in series.items():
        x, y = [float(a) for a in xs], [float(b) for b in ys]
        for k0, x0, y0 in seen:
            if (
                len(x) == len(x0)
                and len(x) > 0
                and all(same(a, b, rel_tol) for a, b in zip(x, x0))
                and all(
                    (math.isnan(a) and math.isnan(b)) or same(a, b, rel_tol) for a, b in zip(y, y0)
                )
            ):
                out[key] = k0
                break
        else:
            seen.append((key, x, y))
    return out


def zero_bars(values: Mapping[Hashable, Any]) -> list[Hashable]:
    """Bars whose value is exactly 0 (drawn as nothing)."""
    return [k for k, v in values.items() if finite([v]) == [0.0]]


def small_bars(values: Mapping[Hashable, Any], log_axis: bool = False) -> list[Hashable]:
    """Bars of a linear axis from 0 too small to see beside the tallest
    (positive, below :data:`SMALL_BAR` of it); none on a log axis, nor for
    a signed quantity (a bar near 0 among negative ones reads as "about
    0", which it is)."""
    v = {k: x for k, x in values.items() if finite([x])}
    top = max((abs(float(x)) for x in v.values()), default=0.0)
    if log_axis or top == 0 or any(float(x) < 0 for x in v.values()):
        return []
    return [k for k, x in v.items() if 0 < abs(float(x)) < SMALL_BAR * top]


def span(values: Sequence[Any]) -> float:
    """Largest over smallest positive value (1 when fewer than two)."""
    v = [x for x in finite(values) if x > 0]
    return max(v) / min(v) if len(v) >= 2 else 1.0


def wants_log(values: Sequence[Any]) -> bool:
    """Values spanning more than :data:`LOG_SPAN`, none negative (a log
    axis would drop them)."""
    v = finite(values)
    return not any(x < 0 for x in v) and span(v) > LOG_SPAN


def below_spread(values: Sequence[Any], spread_rel: float | None, ref: float | None = None) -> bool:
    """Every value within ``ref`` ± ``spread_rel`` (relative; ``ref``
    defaults to the values' midpoint) while not all equal: an axis fitted
    to the data would draw run-to-run noise as a shape."""
    v = finite(values)
    if spread_rel is None or not spread_rel > 0 or len(v) < 2 or all_equal(v):
        return False
    centre = ref if ref is not None else (max(v) + min(v)) / 2
    if centre == 0:
        return False
    return all(abs(x - centre) <= spread_rel * abs(centre) for x in v)


def seed_spread(groups: Mapping[Hashable, Sequence[Any]]) -> float | None:
    """The run-to-run spread measured by seed replicates: the largest
    half-range over mean of any group with two or more runs (None: no
    replicates)."""
    best = None
    for vals in groups.values():
        v = finite(vals)
        if len(v) < 2:
            continue
        m = sum(v) / len(v)
        if m == 0:
            continue
        s = (max(v) - min(v)) / 2 / abs(m)
        best = s if best is None else max(best, s)
    return best


def number(v: Any) -> str:
    """A number for reading: 3 significant digits, thousands separated,
    no exponent between 1e-4 and 1e15."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    a = abs(x)
    if a >= 1e15 or (0 < a < 1e-4):
        return f"{x:.3g}"
    if x == int(x):
        return f"{int(x):,}"
    if a >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


# A number standing alone in text (not part of a name like 64B, ms2, v1.2).
_NUM = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.]|\.\d)")


def _raw(tok: str) -> bool:
    """A token a reader should not have to decode: exponent notation, more
    than 3 significant decimals, or 5+ digits without separators."""
    t = tok.lstrip("+-")
    if "e" in t.lower():
        return True
    if "." in t:
        whole, frac = t.split(".")
        digits = (whole.lstrip("0") + frac).lstrip("0")
        return len(digits) > 4
    return len(t) >= 5


def readable(text: str) -> str:
    """``text`` with its raw numbers (see :func:`_raw`) formatted for
    reading (:func:`number`); other numbers (years, 1024, 0.63) unchanged."""
    return _NUM.sub(lambda m: number(float(m.group())) if _raw(m.group()) else m.group(), text)


def describe_step(
    xs: Sequence[Any],
    ys: Sequence[Any],
    i: int,
    xfmt: Callable[[Any], str] = number,
    yfmt: Callable[[Any], str] = number,
) -> str:
    """'0.63 at 256; 1 at every other point (512–8,192)'."""
    rest_x = [x for j, x in enumerate(xs) if j != i]
    rest_y = ys[1] if i == 0 else ys[0]
    return (
        f"{yfmt(ys[i])} at {xfmt(xs[i])}; {yfmt(rest_y)} at every other point "
        f"({xfmt(min(rest_x))}–{xfmt(max(rest_x))})"
    )
