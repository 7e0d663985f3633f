"""Scale test: every scale of every paper keeps the ratios it states
(computed from the scale's definition), and the default scale's runs reach
the steady state of each mechanism it measures (predicted from short
probe runs of this build: rates, not tuned constants, decide)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import durasim
from durasim import _core
from durasim.papers import PAPERS, _base, _scale
from durasim.papers.dpc import experiments as dpc_exp
from durasim.papers.ehou import experiments as ehou_exp
from durasim.papers.hoop import experiments as hoop_exp
from durasim.papers.morlog import experiments as morlog_exp

CASES = [(p, s) for p in PAPERS for s in PAPERS[p].scales]


@pytest.mark.parametrize("paper,scale", CASES)
def test_every_stated_ratio_holds(paper, scale):
    doc = PAPERS[paper].scale_doc(scale)
    assert doc.scale == scale and doc.purpose
    for r in doc.keeps:
        assert r.value is not None and not math.isnan(float(r.value)), r.name
        assert r.ok(), f"{paper}/{scale}: {r.name} = {r.value} breaks {r.bound()}"
    # Every scale states which mechanism must reach steady state.
    assert doc.steady, f"{paper}/{scale}: no steady-state check"
    for st in doc.steady:
        assert set(st.experiments) <= set(PAPERS[paper].experiments)


@pytest.mark.parametrize("paper", list(PAPERS))
def test_default_scale_keeps_the_mechanisms_ratios(paper):
    """The default (small) scale states a period ratio (periods, checkpoints
    or AIT turnover in the window) and what it shortens."""
    doc = PAPERS[paper].scale_doc("small")
    bounded = [r for r in doc.keeps if r.at_least is not None]
    assert bounded, "no lower bound on a mechanism's periods"
    assert all(r.at_least >= 2 for r in bounded)
    assert doc.shortens
    # No machine or workload parameter is changed by the scale itself
    # (dpc: the space divisor is stated as ratios instead).
    changed = [r for r in doc.keeps if r.name.startswith("machine or workload parameters")]
    assert all(r.value == 0 for r in changed)


def test_dpc_small_keeps_epoch_per_page_and_cache_per_footprint():
    sc = dpc_exp.SCALES["small"]
    assert sc["epoch_cycles"] == dpc_exp.PAPER_EPOCH
    assert sc["intervals"] == sc["paper_intervals"]
    for w, mb in dpc_exp.PAPER_FOOTPRINT_MB.items():
        fp = dpc_exp.footprint_mb(sc, w)
        paper = dpc_exp.PAPER_DRAM / dpc_exp.MB / mb
        assert abs(sc["dram_cache_bytes"] / dpc_exp.MB / fp / paper - 1) < 0.01, w
    assert sc["pool_bytes"] >= sc["dram_cache_bytes"]


def test_tiny_is_marked_as_not_steady():
    for p in PAPERS.values():
        doc = p.scale_doc("tiny")
        assert "smoke test" in doc.purpose and not doc.keeps


def _one(spec):
    df = durasim.sweep([spec], progress=False, scheduler="serial")
    return df.iloc[0]


def test_hoop_default_runs_hold_two_gc_periods():
    """The default scale's run with the fewest GC periods predicted (its
    workload per STEADY_TX_PER_MCYCLE), run in full (HOOP's GC slows the
    rate, so a short probe cannot stand for it): at least MIN_GC_PERIODS
    periods elapse in its window and as many periodic GC passes ran."""
    sc = hoop_exp.SCALES["small"]
    est = {w: hoop_exp.run_tx(sc, w) / r for w, r in hoop_exp.STEADY_TX_PER_MCYCLE.items()}
    w = min(est, key=est.get)
    item = hoop_exp._item_sizes(sc, w)[0]
    r = _one(hoop_exp._grid_spec(sc, "hoop", w, item))
    assert hoop_exp._gc_periods_in_window(r) >= hoop_exp.MIN_GC_PERIODS
    assert r["stat.gc_runs_periodic"] >= hoop_exp.MIN_GC_PERIODS


def test_morlog_default_runs_hold_three_force_write_back_periods():
    sc = morlog_exp.SCALES["small"]
    merge = morlog_exp.setup(sc, None).merge
    for w in [*sc["micro"], *sc["macro"]]:
        threads = sc["micro_threads"] if w in sc["micro"] else sc["macro_threads"]
        spec = merge({"scheme": "fwb-crade", "workload": w, "threads": threads})
        spec.update({"tx": 500 * threads, "seed": 1})
        if w not in morlog_exp.FIXED_ITEM:
            spec[morlog_exp.P_ITEM] = sc["items"][0]
        rate = _one(spec)["throughput_tx_per_mcycle"]
        periods = morlog_exp.run_tx(sc, w) / rate * 1e6 * 0.75 / morlog_exp.FWB_PERIOD_CYCLES
        assert periods >= morlog_exp.MIN_FWB_PERIODS, (w, rate, periods)


def test_ehou_default_runs_turn_the_ait_cache_over():
    sc = ehou_exp.SCALES["small"]
    preset = _core.load_preset(ehou_exp.DEFAULT_PRESET)
    table = {w[0]: w for w in ehou_exp.WORKLOADS}
    for label in sc["workloads"]:
        w = table[label]
        spec = {**preset, **ehou_exp._spec(sc, "ehou", w, 1), "tx": 4000}
        r = _one(spec)
        per_tx = (r["stat.ait_cache_hits"] + r["stat.ait_cache_misses"]) / 4000
        turnover = sc["tx_by_workload"][label] * per_tx / (max(sc["ait_sets"]) * 16)
        assert turnover >= ehou_exp.MIN_AIT_TURNOVER, (label, per_tx, turnover)


def test_dpc_default_runs_hold_three_checkpoints():
    """Probe on the default scale's machine (200 operations per thread of
    the native system): the window's cycles per operation predict at
    least MIN_CHECKPOINTS epochs in the default runs' windows."""
    sc = dpc_exp.SCALES["small"]
    preset = dpc_exp._preset()
    for w in ["kdtree", "tatp", "ycsb"]:
        spec = {**preset, **dpc_exp._spec(sc, "ideal", w), "tx": 200 * sc["threads"]}
        r = _one(spec)
        per_op = r["window_cycles"] / (r["measured_tx"] / sc["threads"])
        ckpts = sc["ops"][w] * per_op * 0.75 / sc["epoch_cycles"]
        assert ckpts >= dpc_exp.MIN_CHECKPOINTS, (w, per_op, ckpts)


def test_steady_results_flag_short_runs():
    doc = hoop_exp.scale_doc("small")
    frame = pd.DataFrame(
        {
            "scheme": ["hoop", "hoop", "ideal"],
            "workload": ["vector", "btree", "vector"],
            "tx": [1, 2, 3],
            "window_cycles": [3 * 25e6, 0.5 * 25e6, 1.0],
        }
    )
    res = _scale.steady_results(doc, {"throughput": frame})
    assert res[0]["runs"] == 2  # ideal has no periodic mechanism: not checked
    assert res[0]["min"] == pytest.approx(0.5) and not res[0]["ok"]
    assert "BELOW" in _scale.steady_text(res)[0]


def test_default_parameters_share_runs_and_come_back_as_columns():
    """A sweep point at a parameter's default is the grid's own run."""
    defaults = {"hoop.mapping_table_bytes": 2 * 1024 * 1024}
    a = {"scheme": "hoop", "workload": "ycsb", "hoop.mapping_table_bytes": 2 * 1024 * 1024}
    b = {"scheme": "hoop", "workload": "ycsb"}
    assert _base._lean(a, defaults) == _base._lean(b, defaults)
    part = pd.DataFrame({"scheme": ["hoop"], "workload": ["ycsb"]})
    out = _base._restore(part, [a])
    assert out["hoop.mapping_table_bytes"].tolist() == [2 * 1024 * 1024]


def test_characterise_switch_only_when_the_build_has_it(monkeypatch):
    paper = PAPERS["hoop"]
    av = _base.Avail()
    spec = {"scheme": "ideal", "workload": "vector"}
    monkeypatch.setattr(av, "params", av.params - {_base.P_CHARACTERISE})
    assert _base.P_CHARACTERISE not in paper._characterise(spec, av)
    monkeypatch.setattr(av, "params", av.params | {_base.P_CHARACTERISE})
    assert paper._characterise(spec, av)[_base.P_CHARACTERISE] is True
    assert _base.P_CHARACTERISE not in paper._characterise({**spec, "scheme": "hoop"}, av)


def test_fmt_reads_like_a_number():
    assert _scale.fmt(7247360.0) == "7,247,360"
    assert _scale.fmt(0.01234) == "0.012"
    assert _scale.fmt(2.4034) == "2.4"
    assert _scale.fmt(float("nan")) == "—"
    assert _scale.fmt(0.00043) == "0.0004"
