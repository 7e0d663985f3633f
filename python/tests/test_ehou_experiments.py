"""The EHOU paper's experiments end to end at tiny scale, and its report."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from durasim import lab
from durasim._figcheck import readable
from durasim.papers import PAPERS, ehou
from durasim.papers.ehou import experiments as ehou_exp
from durasim.plotting import series


@pytest.fixture(scope="module")
def frames():
    t0 = time.time()
    f = ehou.run_experiments(None, "tiny", scheduler="serial", progress=False)
    f["_seconds"] = time.time() - t0
    return f


def test_registry_has_ehou():
    assert PAPERS["ehou"] is ehou.PAPER
    assert set(ehou.PAPER.figures) == set(ehou_exp.EXPERIMENTS)


def test_tiny_scale_runs_every_experiment_quickly(frames):
    assert frames["_seconds"] < 60, frames["_seconds"]
    sc = ehou_exp.SCALES["tiny"]
    n_w = len(sc["workloads"])
    assert len(frames["overhead"]) == len(ehou_exp.SCHEMES) * n_w
    assert len(frames["throughput"]) == len(ehou_exp.SCHEMES) * n_w
    assert len(frames["persist"]) == 2 * n_w
    assert len(frames["ait_cache"]) == len(sc["ait_sets"]) * len(sc["ait_workloads"])
    for eid in ehou_exp.EXPERIMENTS:
        assert not frames[eid].attrs["skipped"], frames[eid].attrs["skipped"]
        # Every run used the EHOU preset (Table I): 4 cores at 2 GHz, the DIMM.
        df = frames[eid]
        assert (df["cpu.freq_ghz"] == 2.0).all() and (df["dimm.model"] == "optane").all()


def test_normalizations_and_statistics(frames):
    t = frames["throughput"]
    assert (t[t["scheme"] == "redu"]["norm_throughput"] == 1.0).all()
    assert t["norm_throughput"].notna().all()
    o = frames["overhead"]
    assert (o[o["scheme"] == "osp"]["norm_overhead"] == 1.0).all()
    assert (o[o["scheme"] == "osp"]["norm_overhead_total"] == 1.0).all()
    # Every scheme writes some PM overhead (SSP journals, REDU logs, EHOU
    # flushes AIT entries or logs overflow) in a transactional workload.
    assert (o["overhead_bytes_per_tx"] > 0).all(), o[["scheme", "config_label"]]
    # Every scheme reports the end-of-run share of its overhead; it is part
    # of it, and figure (a)'s ratio is of the steady-state parts.
    assert (o["steady_overhead_bytes_per_tx"] >= 0).all()
    assert (o["steady_overhead_bytes_per_tx"] <= o["overhead_bytes_per_tx"]).all()
    # Figure (a) counts operations, as EHOU §IV-B does; bytes are beside it.
    # (SSP and REDU write some in every window; EHOU's tiny runs may not.)
    assert (o[o["scheme"] != "ehou"]["steady_overhead_ops_per_tx"] > 0).all()
    for _, r in o.iterrows():
        ssp = o[(o["scheme"] == "osp") & (o["config_label"] == r["config_label"])].iloc[0]
        want = r["steady_overhead_ops_per_tx"] / ssp["steady_overhead_ops_per_tx"]
        assert r["norm_overhead"] == pytest.approx(want)
        want = r["steady_overhead_bytes_per_tx"] / ssp["steady_overhead_bytes_per_tx"]
        assert r["norm_overhead_bytes"] == pytest.approx(want)
    # An AIT entry is 8 B and SSP's writes are lines: EHOU's bytes per
    # operation are below SSP's, so its ratio in bytes is below its ratio
    # in operations.
    e = o[(o["scheme"] == "ehou") & (o["steady_overhead_ops_per_tx"] > 0)]
    assert len(e) and (e["norm_overhead_bytes"] < e["norm_overhead"]).all()
    labels = set(o["config_label"])
    assert "btree-zipf" in labels and "array" in labels
    p = frames["persist"]
    assert set(p["variant"]) == {"ehou-lazy", "ehou-eager"}
    lazy = p[p["variant"] == "ehou-lazy"]
    eager = p[p["variant"] == "ehou-eager"]
    assert (lazy["norm_throughput"] == 1.0).all()
    # Eager persisting writes committed entries to the AIT at commit; lazy never does.
    assert (eager["ait_flushes_eager_per_tx"] > 0).all()
    assert (lazy["ait_flushes_eager_per_tx"] == 0).all()
    # Lazy leaves committed-dirty AIT-cache entries to the end of the run.
    assert (lazy["steady_overhead_bytes_per_tx"] < lazy["pm_write_overhead_bytes_per_tx"]).all()
    a = frames["ait_cache"]
    big = a[a["dimm.ait_cache_sets"] == a["dimm.ait_cache_sets"].max()]
    assert (big["norm_throughput"] == 1.0).all()


@pytest.mark.parametrize("eid", [e for e in ehou_exp.EXPERIMENTS if e != "workloads"])
def test_figures_have_series_and_units(frames, eid):
    fig = ehou.PAPER.figures[eid](frames[eid])
    assert series(fig)
    ax = fig.axes[0]
    assert "(" in ax.get_ylabel() and ax.get_xlabel()
    assert readable(frames[eid].attrs["normalization"]) in fig.get_suptitle()


def test_lab_reproduce_ehou_writes_report(tmp_path, capsys):
    out = tmp_path / "rep"
    code = lab.main(
        [
            "reproduce",
            "ehou",
            "--scale",
            "tiny",
            "--scheduler",
            "serial",
            "--out",
            str(out),
            "--no-progress",
            "--only",
            "throughput,persist",
        ]
    )
    assert code == 0
    page = (out / "index.html").read_text()
    assert "EHOU paper reproduction" in page
    cfg = json.loads((out / "config.json").read_text())
    assert list(cfg["experiments"]) == ["throughput", "persist"]
    for eid, stem in [("throughput", "b_throughput"), ("persist", "c_persist")]:
        assert (out / f"{stem}.png").exists() and (out / f"{stem}.svg").exists()
        csv = pd.read_csv(out / f"{stem}.csv")
        assert len(csv) > 0
        assert "durasim-lab reproduce ehou" in cfg["experiments"][eid]["command"]
        assert f"{stem}.png" in page
    assert "wrote" in capsys.readouterr().out
