"""Experiments, figures and the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import FullAvail, fake_frames

import durasim
from durasim import lab
from durasim._figcheck import readable
from durasim.papers import hoop
from durasim.papers.hoop import experiments as hoop_exp
from durasim.plotting import series
from durasim.report import write_report

SYNTH_LABELS = [f"{w}-64B" for w in hoop_exp.SYNTHETIC]

#: The series each figure must show when every part exists (tiny scale).
EXPECTED_SERIES = {
    "throughput": hoop_exp.SCHEMES,
    "latency": hoop_exp.SCHEMES,
    "traffic": hoop_exp.SCHEMES,
    "energy": hoop_exp.SCHEMES,
    "gc_reduction": SYNTH_LABELS,
    "gc_period": [f"{w}-1KB" for w in hoop_exp.SCALES["tiny"]["period_workloads"]],
    "recovery": ["10 GB/s", "25 GB/s"],
    "ycsb_latency": hoop_exp.SCHEMES,
    "mapping_table": ["hoop"],
    "profiling": ["loads_per_llc_miss", "parallel_read_fraction", "llc_miss_ratio"],
    "workloads": [],
    "claim": ["vs LAD", "vs Opt-Redo"],
}


@pytest.fixture(scope="module")
def frames():
    return fake_frames("tiny")


def test_every_experiment_has_a_figure():
    assert set(hoop.PAPER.figures) == set(hoop_exp.EXPERIMENTS) == set(EXPECTED_SERIES)
    assert [e.item for e in hoop_exp.EXPERIMENTS.values()] == list("abcdefghijkl")


@pytest.mark.parametrize("eid", [e for e in hoop_exp.EXPERIMENTS if e != "workloads"])
def test_figure_has_expected_series(frames, eid):
    df = frames[eid]
    assert len(df) > 0
    fig = hoop.PAPER.figures[eid](df)
    # A series identical to another one is labelled so: "(= ..., drawn in alternating
    # dashes)"; the shaded run-to-run spread band has its own legend entry.
    shown = [x.split(" (= ")[0] for x in series(fig) if not x.startswith("run-to-run spread")]
    assert sorted(shown) == sorted(EXPECTED_SERIES[eid])
    plotted = 0
    for ax in fig.axes:
        # Stacked panels (profiling) share the x label of the bottom one.
        assert ax.get_ylabel() and (ax.get_xlabel() or fig.axes[-1].get_xlabel())
        assert "(" in ax.get_ylabel(), "y label carries a unit"
        plotted += sum(len(line.get_xdata()) for line in ax.get_lines())
        plotted += len(ax.patches)
    assert plotted > 0
    norm = df.attrs["normalization"]
    if norm.startswith("none (") and norm.endswith(")"):
        # Shown as "not normalized: <what is plotted>", never "[none (...)]".
        assert "[none" not in fig.get_suptitle()
        norm = norm[len("none (") : -1]
    # Raw numbers in it are formatted for reading (2097152 -> 2,097,152).
    assert readable(norm) in fig.get_suptitle()


def test_normalizations(frames):
    a = frames["throughput"]
    assert a.attrs["baseline"] == "opt-redo"
    assert (a[a["scheme"] == "opt-redo"]["norm_throughput"] == 1.0).all()
    b = frames["latency"]
    assert (b[b["scheme"] == "ideal"]["norm_latency"] == 1.0).all()
    h = frames["ycsb_latency"]
    assert set(h["varied"]) == {"read", "write"}
    assert (h[h["scheme"] == "opt-redo"]["norm_throughput"] == 1.0).all()
    f = frames["gc_period"]
    default = durasim.params().get(hoop_exp.P_GC_PERIOD, {}).get("default")
    ref = default if default in set(f[hoop_exp.P_GC_PERIOD]) else min(f[hoop_exp.P_GC_PERIOD])
    assert (f[f[hoop_exp.P_GC_PERIOD] == ref]["norm_throughput"] == 1.0).all()
    # Without the GC word counts (these synthetic frames), the window ratio.
    e = frames["gc_reduction"]
    assert e.attrs["stat_keys"]["reduction_ratio"] == "stat.gc_data_reduction_ratio"


def test_plans_cover_the_paper_at_paper_scale():
    sc = hoop.PAPER.scale_settings("paper")
    av = FullAvail()
    grid = hoop_exp.plan_grid(sc, av)
    # 5 synthetic x 2 item sizes + ycsb x 2 + tpcc, times 7 schemes, 8 threads.
    assert len(grid.specs) == (5 * 2 + 2 + 1) * 7 and not grid.skipped
    assert {s["threads"] for s in grid.specs} == {8}
    lat = hoop_exp.plan_ycsb_latency(sc, av)
    reads = sorted({s[hoop_exp.P_READ_NS] for s in lat.specs if s[hoop_exp.P_WRITE_NS] == 150.0})
    assert reads == [50.0, 100.0, 150.0, 200.0, 250.0]
    periods = sorted({s[hoop_exp.P_GC_PERIOD] for s in hoop_exp.plan_gc_period(sc, av).specs})
    assert periods == [2, 4, 6, 8, 10, 12, 14]
    txs = sorted({s["tx"] for s in hoop_exp.plan_gc_reduction(sc, av).specs})
    assert txs == [10, 100, 1000, 10000]


def test_experiments_filter_to_this_build():
    out = hoop.run_experiments(scale="tiny", scheduler="serial", progress=False)
    assert set(out) == set(hoop_exp.EXPERIMENTS)
    have = set(durasim.schemes())
    for eid, df in out.items():
        assert set(df["scheme"]) <= have
        for s in set(hoop_exp.SCHEMES) - have:
            if eid in ("throughput", "latency", "traffic", "energy", "ycsb_latency"):
                assert any(f"'{s}'" in x for x in df.attrs["skipped"]), (eid, s)
        # Empty or not, a figure is produced.
        hoop.PAPER.figures[eid](df)
    # Figure (e) counts every GC pass over the run's data, the final one
    # included (these runs end before the first periodic GC).
    e = out["gc_reduction"]
    assert "gc_words_migrated_end_of_run" in e.attrs["stat_keys"]["reduction_ratio"]
    assert ((e["reduction_ratio"] >= 0) & (e["reduction_ratio"] < 1)).all()
    found = e["stat.gc_words_in_slices"] + e["stat.gc_words_in_slices_end_of_run"]
    moved = e["stat.gc_words_migrated"] + e["stat.gc_words_migrated_end_of_run"]
    assert (found > 0).all() and (moved <= found).all()
    # Figure (j) under the HOOP paper's definitions (per memory operation).
    j = out["profiling"]
    assert j.attrs["panels"] == "per_mem_op"
    assert (j["llc_misses_per_mem_op_j"] <= 1).all() and (j["parallel_reads_per_mem_op"] >= 0).all()
    grid = out["throughput"]
    assert len(grid) == len(have & set(hoop_exp.SCHEMES)) * sum(
        len(hoop_exp._item_sizes(hoop_exp.SCALES["tiny"], w))
        for w in hoop_exp.WORKLOADS
        if w in durasim.workloads()
    )


def test_bad_scale_and_experiment():
    with pytest.raises(ValueError, match="small"):
        hoop.throughput("huge")
    with pytest.raises(ValueError, match="throughput"):
        hoop.run_experiments(["nope"], "tiny")


def _referenced(index: Path) -> list[str]:
    text = index.read_text()
    return [
        r
        for r in re.findall(r'(?:src|href)="([^"]+)"', text)
        if not r.startswith(("http:", "https:", "#"))
    ]


def _check_report(out: Path) -> None:
    index = out / "index.html"
    refs = _referenced(index)
    assert refs
    for r in refs:
        assert (out / r).is_file(), r
    for eid, e in hoop_exp.EXPERIMENTS.items():
        stem = f"{e.item}_{eid}"
        assert f"{stem}.png" in refs and f"{stem}.svg" in refs and f"{stem}.csv" in refs
        assert (out / f"{stem}.png").stat().st_size > 1000
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["durasim_version"] == durasim.version()
    assert "durasim-lab reproduce hoop" in cfg["command"]
    assert cfg["parameter_defaults"]["nvm.array_read_ns"] == 50.0
    assert cfg["command"] in index.read_text()


def test_report_from_full_frames_references_existing_files(frames, tmp_path):
    write_report(hoop.PAPER, frames, tmp_path, scale="tiny", command="durasim-lab reproduce hoop")
    _check_report(tmp_path)
    csv = pd.read_csv(tmp_path / "a_throughput.csv")
    assert set(csv["scheme"]) == set(hoop_exp.SCHEMES)


def test_lab_reproduce_writes_report(tmp_path, capsys):
    out = tmp_path / "rep"
    code = lab.main(
        [
            "reproduce",
            "hoop",
            "--scale",
            "tiny",
            "--scheduler",
            "serial",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    _check_report(out)
    assert "wrote" in capsys.readouterr().out


def test_lab_bad_arguments(capsys):
    with pytest.raises(SystemExit) as e:
        lab.main(["reproduce", "hoop", "--scale", "huge"])
    assert e.value.code == 2
    assert lab.main(["reproduce", "hoop", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
    assert lab.main(["list", "params"]) == 0


def test_preset_applies_to_every_run(tmp_path):
    cfg = tmp_path / "preset.toml"
    cfg.write_text("[nvm]\narray_write_ns = 300.0\n[workload]\nitem_bytes = 128\n")
    out = hoop.run_experiments(
        ["throughput"], "tiny", scheduler="serial", progress=False, preset=cfg
    )
    df = out["throughput"]
    assert (df["nvm.array_write_ns"] == 300.0).all()
    # The experiment's own item size wins over the preset, as --set over --config.
    synth = df[df["workload"].isin(hoop_exp.SYNTHETIC)]
    assert set(synth[hoop_exp.P_ITEM]) == set(hoop_exp.SCALES["tiny"]["grid_items"])
    # Where the experiment sets nothing (TPC-C rows), the preset's value holds.
    assert set(df[df["workload"] == "tpcc"][hoop_exp.P_ITEM]) <= {128}
    r = durasim.run("ideal", "vector", threads=2, tx=100, config=cfg, workload__item_bytes=64)
    row = df[(df["scheme"] == "ideal") & (df["workload"] == "vector")].iloc[0]
    assert row["throughput_tx_per_mcycle"] == r["metrics"]["throughput_tx_per_mcycle"]
    bad = tmp_path / "bad.toml"
    bad.write_text("[nvm]\nno_such_key = 1\n")
    with pytest.raises(ValueError, match=r"nvm\.no_such_key"):
        hoop.run_experiments(["throughput"], "tiny", scheduler="serial", preset=bad)


def test_partial_report_merges_into_existing(frames, tmp_path):
    # A full report, then a partial one (like `--only throughput`) into the
    # same directory: every experiment stays linked and in config.json.
    write_report(hoop.PAPER, frames, tmp_path, scale="small", command="durasim-lab reproduce hoop")
    _check_report(tmp_path)
    before = json.loads((tmp_path / "config.json").read_text())["experiments"]
    only = {"throughput": frames["throughput"]}
    cmd = "durasim-lab reproduce hoop --scale tiny --only throughput"
    write_report(hoop.PAPER, only, tmp_path, scale="tiny", command=cmd)
    index = (tmp_path / "index.html").read_text()
    for eid, e in hoop_exp.EXPERIMENTS.items():
        assert f'<section id="{eid}">' in index, eid
        assert f"{e.item}_{eid}.png" in _referenced(tmp_path / "index.html")
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert list(cfg["experiments"]) == list(hoop_exp.EXPERIMENTS)
    assert cfg["experiments"]["throughput"]["scale"] == "tiny"
    assert cfg["experiments"]["throughput"]["command"] == cmd
    assert cfg["experiments"]["latency"]["scale"] == "small"
    assert cfg["experiments"]["latency"]["notes"] == before["latency"]["notes"]
    assert cfg["scale"] == "mixed: small, tiny"
    assert set(cfg["merged_from_previous_report"]) == set(hoop_exp.EXPERIMENTS) - {"throughput"}
    # The section states which command produced it.
    assert "--only throughput" in index and "Scale: small" in index


def test_lab_only_keeps_existing_report(tmp_path):
    out = tmp_path / "rep"
    base = ["reproduce", "hoop", "--scale", "tiny", "--scheduler", "serial", "--out", str(out)]
    assert lab.main([*base, "--quiet"]) == 0
    assert lab.main([*base, "--quiet", "--only", "throughput"]) == 0
    _check_report(out)
