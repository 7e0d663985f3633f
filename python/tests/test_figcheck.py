"""The checks a figure makes on its own data (durasim._figcheck): each fires
on a constructed case and stays silent on a clean one; the figures of the
papers change their form accordingly (the known misleading cases)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from durasim import _figcheck as fc
from durasim.plotting import flags

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)


# --- all-equal series -------------------------------------------------------


def test_all_equal_fires_on_a_flat_series_and_not_on_a_varying_one():
    assert fc.all_equal([1.0, 1.0, 1.0 + 1e-12, 1.0])
    assert fc.all_equal([0.0, 0.0])
    assert not fc.all_equal([1.0, 1.0, 0.63])
    assert not fc.all_equal([1.0])  # one point is not a series
    assert not fc.all_equal([float("nan"), 1.0])


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(2, 12))
def test_all_equal_holds_for_any_repeated_value(v, n):
    assert fc.all_equal([v] * n)


@given(st.lists(finite, min_size=2, max_size=10, unique=True))
def test_all_equal_never_fires_on_distinct_values(vs):
    if max(vs) - min(vs) > 1e-3 * max(1.0, max(abs(x) for x in vs)):
        assert not fc.all_equal(vs)


# --- a step carried by one point --------------------------------------------


def test_one_point_step_finds_the_single_differing_point():
    # HOOP (i): 0.63 at 256 KB, exactly 1.000 from 512 KB to 8 MB.
    assert fc.one_point_step([0.63, 1.0, 1.0, 1.0, 1.0, 1.0]) == 0
    assert fc.one_point_step([1.0, 1.0, 1.0, 1.2]) == 3
    assert fc.one_point_step([1.0, 1.4, 1.0]) == 1


def test_one_point_step_is_silent_on_trends_flat_lines_and_short_series():
    assert fc.one_point_step([0.6, 0.8, 0.9, 1.0]) is None
    assert fc.one_point_step([1.0, 1.0, 1.0]) is None
    assert fc.one_point_step([0.5, 1.0]) is None


@given(st.integers(3, 10), st.data())
def test_one_point_step_property(n, data):
    base = data.draw(st.floats(min_value=0.1, max_value=10))
    odd = data.draw(st.floats(min_value=0.1, max_value=10).filter(lambda v: abs(v - base) > 1e-3))
    i = data.draw(st.integers(0, n - 1))
    ys = [base] * n
    ys[i] = odd
    assert fc.one_point_step(ys) == i


def test_describe_step_names_the_point_and_the_rest():
    text = fc.describe_step([256, 512, 1024, 8192], [0.63, 1.0, 1.0, 1.0], 0)
    assert text == "0.63 at 256; 1 at every other point (512–8,192)"


# --- overlapping series -----------------------------------------------------


def test_overlaps_names_the_hidden_curve_and_the_one_it_lies_under():
    xs = [10, 100, 1000]
    got = fc.overlaps(
        {
            "vector": (xs, [0.2, 0.4, 0.5]),
            "btree": (xs, [0.2, 0.4, 0.5]),
            "hashmap": (xs, [0.2, 0.3, 0.5]),
        }
    )
    assert got == {"btree": "vector"}


def test_overlaps_is_silent_on_distinct_curves_and_other_x():
    assert fc.overlaps({"a": ([1, 2], [1.0, 2.0]), "b": ([1, 2], [1.0, 2.1])}) == {}
    assert fc.overlaps({"a": ([1, 2], [1.0, 2.0]), "b": ([1, 3], [1.0, 2.0])}) == {}


@given(st.lists(finite, min_size=1, max_size=6), st.integers(2, 5))
def test_every_copy_of_a_curve_is_found(ys, copies):
    xs = list(range(len(ys)))
    got = fc.overlaps({f"s{i}": (xs, ys) for i in range(copies)})
    assert got == {f"s{i}": "s0" for i in range(1, copies)}


# --- zero bars, bars too small to see, spans for a log axis -------------------


def test_zero_bars_fire_on_exact_zeros_only():
    # EHOU (a): EHOU's overhead of 0 on array and tatp.
    vals = {("array", "ehou"): 0.0, ("array", "osp"): 1.0, ("btree", "ehou"): 0.05}
    assert fc.zero_bars(vals) == [("array", "ehou")]
    assert fc.zero_bars({"a": 1.0, "b": float("nan")}) == []


def test_small_bars_fire_beside_a_tall_bar_on_a_linear_axis_only():
    vals = {"tatp": 25.0, "tpcc": 5600.0, "x": 0.0}
    assert fc.small_bars(vals) == ["tatp"]
    assert fc.small_bars(vals, log_axis=True) == []
    assert fc.small_bars({"a": 1.0, "b": 0.5}) == []
    # A signed quantity (overhead %): near-zero bars among negatives are fine.
    assert fc.small_bars({"a": 100.0, "b": 0.5, "c": -3.0}) == []


def test_wants_log_on_a_wide_positive_span_only():
    # DPC (c): TATP's bytes per tx beside TPC-C's.
    assert fc.wants_log([25, 90, 1600, 5600])
    assert not fc.wants_log([1.0, 1.3, 2.0])
    assert not fc.wants_log([-5.0, 1.0, 1000.0])  # a log axis would drop the negative


@given(st.lists(positive, min_size=2, max_size=8))
def test_span_is_max_over_min(vs):
    assert math.isclose(fc.span(vs), max(vs) / min(vs))


# --- axes zoomed below the run-to-run spread ----------------------------------


def test_below_spread_fires_on_noise_around_the_normalization_point():
    # HOOP (f): ±2 % around 1.0 drawn as a V on a zoomed axis.
    assert fc.below_spread([1.013, 1.0, 0.987, 1.009], 0.02, ref=1.0)
    assert not fc.below_spread([1.0, 0.9, 0.8], 0.02, ref=1.0)
    assert not fc.below_spread([1.0, 1.0, 1.0], 0.02, ref=1.0)  # flat is another check
    assert not fc.below_spread([1.01, 0.99], None, ref=1.0)  # spread unknown


@given(st.lists(st.floats(min_value=-0.019, max_value=0.019), min_size=2, max_size=8))
def test_anything_inside_the_band_is_below_the_spread(devs):
    ys = [1.0 + d for d in devs]
    assert fc.below_spread(ys, 0.02, ref=1.0) == (not fc.all_equal(ys))


def test_seed_spread_is_the_largest_half_range_over_the_mean():
    got = fc.seed_spread({"a": [0.98, 1.02], "b": [5.0], "c": [2.0, 2.0, 2.0]})
    assert math.isclose(got, 0.02)
    assert fc.seed_spread({"a": [1.0], "b": [2.0]}) is None


# --- numbers for reading -------------------------------------------------------


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("gc_bytes_migrated 4.66867e+07–6.03468e+07", "gc_bytes_migrated 46,686,700–60,346,800"),
        ("7.24736e+06 B", "7,247,360 B"),
        ("mapping_peak_occupancy 0.00830078–0.0166016", "mapping_peak_occupancy 0.0083–0.0166"),
        ("hoop.mapping_table_bytes=2097152", "hoop.mapping_table_bytes=2,097,152"),
        ("redu 85.3–1.06e+03", "redu 85.3–1,060"),
    ],
)
def test_readable_formats_raw_numbers(raw, shown):
    assert fc.readable(raw) == shown


@pytest.mark.parametrize(
    "text",
    ["ISCA 2020", "vector-64B, 1KB items", "0.63 at 256 KB", "1024 entries", "v1.2.3", "±2 %"],
)
def test_readable_leaves_ordinary_numbers_and_names_alone(text):
    assert fc.readable(text) == text


@given(st.floats(min_value=-1e14, max_value=1e14, allow_nan=False))
def test_number_never_prints_an_exponent_for_ordinary_magnitudes(v):
    s = fc.number(v)
    if v == 0 or abs(v) >= 1e-4:
        assert "e" not in s


# --- the papers' figures change form on the known cases ------------------------


def _checks(fig) -> dict[str, list[fc.Flag]]:
    out: dict[str, list[fc.Flag]] = {}
    for f in flags(fig):
        out.setdefault(f.check, []).append(f)
    return out


def _frame(rows, **attrs) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df.attrs.update({"title": "t", "paper_item": "p", "normalization": "n", **attrs})
    return df


def test_hoop_mapping_table_step_is_drawn_as_labelled_points():
    from durasim.papers.hoop.figures import fig_mapping_table

    kb = [256, 512, 1024, 2048, 4096, 8192]
    ys = [0.63, 1.0, 1.0, 1.0, 1.0, 1.0]
    df = _frame(
        [{"scheme": "hoop", "mapping_table_kb": k, "norm_throughput": y} for k, y in zip(kb, ys)]
    )
    fig = fig_mapping_table(df)
    got = _checks(fig)
    assert fc.ONE_POINT_STEP in got
    assert "0.630 at 256 KB" in got[fc.ONE_POINT_STEP][0].text
    line = fig.axes[0].get_lines()[0]
    assert line.get_linestyle() == "None"
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"0.630", "1.000"} <= labels


def test_noise_inside_a_measured_spread_gets_the_band_and_a_statement():
    from matplotlib.figure import Figure

    from durasim.plotting import lines

    fig = Figure()
    ax = fig.subplots()
    ys = [1.013, 0.991, 1.0, 1.008]
    lines(ax, [("vector-1KB", [2, 6, 10, 14], ys, {})], ref=1.0, spread=0.02)
    got = _checks(fig)
    assert fc.BELOW_SPREAD in got
    assert "±1.3 %" in got[fc.BELOW_SPREAD][0].text
    lo, hi = ax.get_ylim()
    assert lo <= 0.94 and hi >= 1.06  # never zoomed in below ±3x the spread


def test_hoop_gc_period_axis_draws_percent_differences_as_percent():
    from durasim.papers.hoop.experiments import P_GC_PERIOD
    from durasim.papers.hoop.figures import fig_gc_period

    ys = [1.013, 0.991, 1.0, 1.008]
    df = _frame(
        [
            {"config_label": "vector-1KB", P_GC_PERIOD: ms, "norm_throughput": y}
            for ms, y in zip([2, 6, 10, 14], ys)
        ]
    )
    fig = fig_gc_period(df)
    lo, hi = fig.axes[0].get_ylim()
    assert lo <= 0.95 and hi >= 1.05
    assert any(lbl.startswith("run-to-run spread") for lbl in flags_labels(fig))


def flags_labels(fig) -> list[str]:
    return fig.axes[0].get_legend_handles_labels()[1]


def test_hoop_gc_period_real_effect_is_not_flagged():
    from durasim.papers.hoop.experiments import P_GC_PERIOD
    from durasim.papers.hoop.figures import fig_gc_period

    df = _frame(
        [
            {"config_label": "vector-1KB", P_GC_PERIOD: ms, "norm_throughput": y}
            for ms, y in zip([2, 6, 10, 14], [0.8, 0.9, 1.0, 1.1])
        ]
    )
    assert _checks(fig_gc_period(df)) == {}


def test_hoop_gc_reduction_identical_curves_are_all_visible():
    from durasim.papers.hoop.figures import fig_gc_reduction

    rows = []
    for w in ("btree-64B", "vector-64B", "hashmap-64B"):
        rr = [0.1, 0.3, 0.5] if w != "hashmap-64B" else [0.1, 0.2, 0.4]
        rows += [
            {"config_label": w, "tx": t, "reduction_ratio": r} for t, r in zip([10, 100, 1000], rr)
        ]
    fig = fig_gc_reduction(_frame(rows))
    got = _checks(fig)
    assert [f.text for f in got[fc.OVERLAP]] == [
        "identical curves, drawn in alternating dashes of their colours: vector-64B = btree-64B"
    ]
    dashes = {ln.get_label(): ln._unscaled_dash_pattern for ln in fig.axes[0].get_lines()}
    # Both draw alternate segments of one dash cycle: both colours show.
    a, b = dashes["btree-64B"], dashes["vector-64B (= btree-64B, drawn in alternating dashes)"]
    assert a[1] and b[1] and a[0] != b[0]
    assert dashes["hashmap-64B"][1] is None  # a distinct curve stays solid


def test_ehou_zero_bars_are_labelled():
    from durasim.papers.ehou.figures import fig_overhead

    rows = []
    for w, e in (("array", 0.0), ("hashtable", 0.3), ("tatp", 0.0)):
        rows += [
            {"config_label": w, "scheme": "osp", "norm_overhead": 1.0, "seed": 1},
            {"config_label": w, "scheme": "ehou", "norm_overhead": e, "seed": 1},
        ]
    fig = fig_overhead(_frame(rows))
    got = _checks(fig)
    assert "ehou on array" in got[fc.ZERO_BARS][0].text
    assert sum(t.get_text() == "0" for t in fig.axes[0].texts) == 2


def test_dpc_tatp_bytes_beside_tpcc_get_a_log_axis():
    from durasim.papers.dpc.figures import fig_software

    rows = []
    for w, b in (("tatp", 25.0), ("tpcc", 5600.0)):
        for s in ("dpc", "dudetm"):
            rows.append(
                {
                    "workload": w,
                    "series": s,
                    "scheme": s,
                    "throughput_vs_dpc": 1.0 if s == "dpc" else 2.0,
                    "nvm_bytes_per_tx_incl_drain": b * (1.5 if s == "dudetm" else 1.0),
                }
            )
    fig = fig_software(_frame(rows))
    assert fig.axes[1].get_yscale() == "log"
    assert fig.axes[0].get_yscale() == "linear"


def test_clean_bars_are_not_flagged():
    from durasim.papers.ehou.figures import fig_overhead

    rows = []
    for w, e in (("array", 0.4), ("hashtable", 0.3)):
        rows += [
            {"config_label": w, "scheme": "osp", "norm_overhead": 1.0, "seed": 1},
            {"config_label": w, "scheme": "ehou", "norm_overhead": e, "seed": 1},
        ]
    assert _checks(fig_overhead(_frame(rows))) == {}


def test_not_steady_state_is_stamped_on_the_figure():
    from durasim.papers.ehou.figures import fig_overhead

    rows = [
        {"config_label": "array", "scheme": s, "norm_overhead": v, "seed": 1}
        for s, v in (("osp", 1.0), ("ehou", 0.4))
    ]
    fig = fig_overhead(_frame(rows, not_steady=["AIT cache: 0.5 passes (required ≥ 2)"]))
    assert fc.NOT_STEADY in _checks(fig)
    assert any(t.get_text() == "NOT STEADY STATE" for t in fig.axes[0].texts)


@given(st.floats(min_value=1e-4, max_value=1e14, allow_nan=False))
def test_readable_leaves_no_exponent_and_is_idempotent(v):
    text = f"gc_bytes_migrated {v:g}–{v * 3:g} B"
    once = fc.readable(text)
    assert "e+" not in once and "e-" not in once
    assert fc.readable(once) == once
