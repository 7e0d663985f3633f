"""The dual-page checkpointing experiments (durasim.papers.dpc), their
figures and report: real runs at tiny scale."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import durasim
from durasim import lab
from durasim._figcheck import readable
from durasim.papers import PAPERS, dpc
from durasim.papers.dpc import experiments as dpc_exp
from durasim.papers.dpc import spec as dpc_spec
from durasim.plotting import series
from durasim.report import write_report

MB = 1024 * 1024


@pytest.fixture(scope="module")
def frames():
    return dpc.run_experiments(scale="tiny", progress=False)


def test_registry_and_figures():
    assert PAPERS["dpc"] is dpc.PAPER
    assert set(dpc.PAPER.figures) == set(dpc_exp.EXPERIMENTS)
    assert [e.item for e in dpc_exp.EXPERIMENTS.values()] == list("abcdefghi")


def test_plans_at_paper_scale():
    from conftest import FullAvail

    sc = dpc.PAPER.scale_settings("paper")
    av = FullAvail()
    av.schemes |= set(dpc_exp.HW_SCHEMES + dpc_exp.SOFTWARE)
    av.workloads |= set(dpc_exp.WORKLOADS)
    grid = dpc_exp.plan_grid(sc, av)
    assert len(grid.specs) == len(dpc_exp.WORKLOADS) * len(dpc_exp.HW_SCHEMES)
    for s in grid.specs:
        assert s["threads"] == 4 and s[dpc_exp.P_EPOCH] == 30_000_000
        assert s[dpc_exp.P_POOL] == 300 * MB and s[dpc_exp.P_DRAM] == 256 * MB
        # Table 5's programs run without transactions, the OLTP ones with.
        assert (s.get(dpc_spec.P_TX) is False) == (s["workload"] in dpc_exp.PROGRAMS)
    pools = sorted(
        {s[dpc_exp.P_POOL] for s in dpc_exp.plan_pool(sc, av).specs if s["scheme"] == "dpc"}
    )
    assert pools == [n * 100 * MB for n in range(1, 6)]
    meta = dpc_exp.plan_metadata(sc, av).specs
    assert {s[dpc_exp.P_META] for s in meta} == {"controller", "optimized", "cached", "dram"}
    assert sorted({s[dpc_exp.P_CACHED] for s in meta if dpc_exp.P_CACHED in s}) == [
        10240,
        20480,
        40960,
    ]
    iv = dpc_exp.plan_interval(sc, av).specs
    assert min(s.get(dpc_exp.P_EPOCH, 0) for s in iv if s["scheme"] != "ideal") == 10_000_000
    assert {s["scheme"] for s in iv} == set(dpc_exp.HW_SCHEMES)
    sw = dpc_exp.plan_software(sc, av).specs
    assert {s["workload"] for s in sw} == {"tatp", "tpcc"}
    assert {s["scheme"] for s in sw} >= {"dudetm", "pmdk-undo", "dpc"}
    assert all(s[dpc_spec.P_GROUP] == 16.0 for s in sw)
    # Small scale divides every size tied to the machine by the same factor
    # and keeps the paper's epoch (an epoch against a 4 KB page).
    small = dpc.PAPER.scale_settings("small")
    d = small["divisor"]
    assert small["epoch_cycles"] == 30_000_000
    assert small["dram_cache_bytes"] * d == 256 * MB
    assert abs(small["pool_bytes"] * d - 300 * MB) < 4096 * d


def test_tiny_runs_end_to_end(frames):
    assert set(frames) == set(dpc_exp.EXPERIMENTS)
    have = set(durasim.schemes())
    for eid, df in frames.items():
        assert len(df) > 0, eid
        fig = dpc.PAPER.figures[eid](df)
        if eid == "workloads":  # a table, beside Table 5's columns
            assert fig.axes[0].tables and "paper: footprint (MB)" in df.columns
            continue
        assert series(fig), eid
        for ax in fig.axes:
            assert "(" in ax.get_ylabel() or not ax.get_ylabel(), (eid, ax.get_ylabel())
        norm = df.attrs["normalization"]
        if norm.startswith("none (") and norm.endswith(")"):
            norm = norm[len("none (") : -1]
        # The title is wrapped to the figure's width.
        assert " ".join(readable(norm).split()) in " ".join(fig.get_suptitle().split()), eid
    a = frames["overall"]
    assert set(a["scheme"]) == set(dpc_exp.HW_SCHEMES) & have
    assert set(a["workload"]) == set(dpc_exp.WORKLOADS)
    assert (a[a["scheme"] == "dpc"]["time_vs_dpc"] == 1.0).all()
    assert (a[a["scheme"] == "ideal"]["overhead_vs_baseline_pct"] == 0.0).all()
    # Checkpoints really happen in every checkpointing run of the window.
    b = frames["checkpoints"]
    assert (b["checkpoints"] > 0).all(), b[["scheme", "workload", "checkpoints"]]
    assert b["checkpoint_time_pct"].between(0, 100).all()
    c = frames["software"]
    assert set(c["series"]) == {"ideal", dpc_exp.DIRECT, "dpc", "dudetm", "pmdk-undo"}
    assert (c[c["scheme"].isin(dpc_exp.SOFTWARE)][dpc_exp.P_DRAM] == 0).all()
    assert (c[c["series"] == "ideal"][dpc_exp.P_DRAM] > 0).all()
    assert (c["nvm_bytes_per_tx_incl_drain"] > 0).all()
    d = frames["pool_size"]
    assert sorted(set(d["paper_pool_mb"])) == [100, 200, 300, 400, 500]
    e = frames["metadata"]
    assert len(set(e["placement"])) == 6
    assert (e[e[dpc_exp.P_META] == "controller"]["time_vs_controller"] == 1.0).all()
    f = frames["interval"]
    assert set(f["scheme"]) == set(dpc_exp.CHECKPOINTING)
    # Longer epochs, fewer checkpoints, for every system.
    for (_, _), g in f.groupby(["scheme", "workload"]):
        g = g.sort_values("interval_mcycles")
        assert g["checkpoints"].iloc[0] >= g["checkpoints"].iloc[-1]
    t = frames["metadata_space"]
    assert set(t["scheme"]) == set(dpc_exp.CHECKPOINTING)
    assert (t["bits_per_unit"] > 0).all()
    row = t[(t["scheme"] == "dpc") & (t["where"] == "controller")].iloc[0]
    assert row["bits_per_unit"] == 37  # BPI + valid, as the DPT entry is laid out
    assert row["entries"] == dpc.PAPER.scale_settings("tiny")["pool_bytes"] // 4096


def _referenced(index: Path) -> list[str]:
    return [
        r
        for r in re.findall(r'(?:src|href)="([^"]+)"', index.read_text())
        if not r.startswith(("http:", "https:", "#"))
    ]


def test_report_from_tiny_frames(frames, tmp_path):
    cmd = "durasim-lab reproduce dpc --scale tiny"
    write_report(dpc.PAPER, frames, tmp_path, scale="tiny", command=cmd)
    index = tmp_path / "index.html"
    refs = _referenced(index)
    for r in refs:
        assert (tmp_path / r).is_file(), r
    for eid, e in dpc_exp.EXPERIMENTS.items():
        stem = f"{e.item}_{eid}"
        assert {f"{stem}.png", f"{stem}.svg", f"{stem}.csv"} <= set(refs)
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000
    text = index.read_text()
    assert "Dual-page checkpointing" in text and cmd in text and "HOOP" not in text
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["scale_settings"]["divisor"] == dpc.PAPER.scale_settings("tiny")["divisor"]
    assert list(cfg["experiments"]) == list(dpc_exp.EXPERIMENTS)


def test_lab_reproduce_dpc_only(tmp_path, capsys):
    out = tmp_path / "rep"
    args = ["reproduce", "dpc", "--scale", "tiny", "--out", str(out), "--quiet"]
    assert lab.main([*args, "--only", "metadata"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert (out / "e_metadata.png").is_file() and (out / "e_metadata.csv").is_file()
    cfg = json.loads((out / "config.json").read_text())
    assert "durasim-lab reproduce dpc" in cfg["experiments"]["metadata"]["command"]


def test_bad_arguments(capsys):
    with pytest.raises(ValueError, match="small"):
        dpc.overall("huge")
    with pytest.raises(ValueError, match="overall"):
        dpc.run_experiments(["nope"], "tiny")
    assert lab.main(["reproduce", "dpc", "--only", "nope", "--scale", "tiny"]) == 2
    assert "valid choices" in capsys.readouterr().err
