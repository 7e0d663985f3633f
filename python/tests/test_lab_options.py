"""``durasim-lab reproduce`` steered by the user: --threads, --tx-factor,
--set KEY=VALUE and --scale-file, recorded in the report."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from durasim import lab
from durasim.papers import PAPERS


def test_set_values_parse_like_the_cli():
    assert lab._sets(["nvm.array_write_ns=300", "run.check_reads=true", "a__b=4MB"]) == {
        "nvm.array_write_ns": 300,
        "run.check_reads": True,
        "a.b": "4MB",
    }
    with pytest.raises(ValueError, match="KEY=VALUE"):
        lab._sets(["nvm.array_write_ns"])


def test_bad_options_exit_2(tmp_path, capsys):
    out = str(tmp_path / "r")
    assert lab.main(["reproduce", "ehou", "--scale", "tiny", "--out", out, "--set", "x=1"]) == 2
    assert "unknown parameter 'x'" in capsys.readouterr().err
    bad = tmp_path / "s.toml"
    bad.write_text("thread = 3\n")
    args = ["reproduce", "ehou", "--scale", "tiny", "--out", out, "--scale-file", str(bad)]
    assert lab.main(args) == 2
    assert "did you mean 'threads'" in capsys.readouterr().err
    args = ["reproduce", "ehou", "--scale", "tiny", "--out", out, "--tx-factor", "0"]
    assert lab.main(args) == 2


def test_scale_file_and_threads_update_the_settings(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("seed = 7\n[tx_by_workload]\nvector = 123\n")
    sc = PAPERS["hoop"].resolve_scale("small", scale_file=f, threads=16)
    assert sc["seed"] == 7 and sc["threads"] == 16
    assert sc["tx_by_workload"]["vector"] == 123
    assert (
        sc["tx_by_workload"]["btree"] == PAPERS["hoop"].scales["small"]["tx_by_workload"]["btree"]
    )
    # The paper's own scale table is untouched.
    assert PAPERS["hoop"].scales["small"]["threads"] == 8
    m = PAPERS["morlog"].resolve_scale("tiny", threads=3)
    assert m["micro_threads"] == m["macro_threads"] == 3


def test_reproduce_with_options_records_them(tmp_path):
    out = tmp_path / "r"
    args = ["reproduce", "ehou", "--scale", "tiny", "--out", str(out), "--quiet"]
    args += ["--only", "throughput", "--threads", "2", "--tx-factor", "2"]
    args += ["--set", "nvm.array_write_ns=300"]
    assert lab.main(args) == 0
    df = pd.read_csv(out / "b_throughput.csv")
    assert (df["threads"] == 2).all()
    assert (df["tx"] == 80).all()  # tiny's 40 x 2
    assert (df["nvm.array_write_ns"] == 300).all()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["run_options"]["set"] == {"nvm.array_write_ns": 300}
    assert cfg["run_options"]["tx_factor"] == 2
    assert "--tx-factor 2" in cfg["command"] and "--threads 2" in cfg["command"]
    page = (out / "index.html").read_text()
    assert "--set</th><td>nvm.array_write_ns = 300" in page
    assert "distinct simulation runs" in page
    assert "<pre>" not in page  # the scale is a paragraph and tables, not a JSON dump
    assert "Scale <code>tiny</code>" in page


def _one_experiment(paper, eid):
    import dataclasses

    return dataclasses.replace(
        paper,
        experiments={eid: paper.experiments[eid]},
        figures={eid: paper.figures[eid]},
    )


def test_reproduce_all_runs_shared_specs_once_and_writes_an_index(tmp_path, monkeypatch, capsys):
    """``reproduce all``: the papers' specs form one sweep in which a spec
    two papers share runs once; each paper gets its report and the index
    links them. Two registry entries holding the same experiment share
    every run."""
    one = _one_experiment(PAPERS["ehou"], "throughput")
    monkeypatch.setattr(lab, "PAPERS", {"ehou": one, "ehou2": one})
    swept = []
    real = lab.sweep

    def spy(specs, **kw):
        swept.append(list(specs))
        return real(specs, **kw)

    monkeypatch.setattr(lab, "sweep", spy)
    out = tmp_path / "all"
    argv = ["reproduce", "all", "--scale", "tiny", "--scheduler", "serial", "--quiet"]
    assert lab.main([*argv, "--out", str(out)]) == 0
    own = len(one.prepare(None, "tiny").specs)
    assert len(swept) == 1 and len(swept[0]) == own > 0
    # Longest runs first: transactions x cores never rise along the sweep.
    costs = [lab._cost_estimate(s) for s in swept[0]]
    assert costs == sorted(costs, reverse=True)
    index = (out / "index.html").read_text()
    for name in ("ehou", "ehou2"):
        cfg = json.loads((out / name / "config.json").read_text())
        assert "throughput" in cfg["experiments"]
        assert cfg["command"].startswith("durasim-lab reproduce all --scale tiny")
        assert f"href='{name}/index.html'" in index
    assert f"{own} simulation runs, {own} shared by two papers and run once" in index
    # The tiny scale is a smoke run: no reading is drawn from it.
    assert "No reading at the tiny scale" in index
    assert f"{own} shared by two papers" in capsys.readouterr().out


def test_reproduce_all_refuses_per_paper_options(tmp_path, capsys):
    for flag, value in (("--config", "configs/hoop.toml"), ("--only", "a"), ("--scale-file", "x")):
        args = ["reproduce", "all", "--scale", "tiny", "--out", str(tmp_path), flag, value]
        assert lab.main(args) == 2
        err = capsys.readouterr().err
        assert f"'{flag}' applies to one paper's experiments" in err
        assert f"durasim-lab reproduce PAPER {flag}" in err


def test_index_reading_comes_from_the_report_data(tmp_path):
    """The index's paragraph is the README bullet computed from the report
    written (here: the ehou snapshot under docs/results, a report
    directory with the same columns)."""
    from pathlib import Path

    from durasim.report import paper_reading

    snap = Path(__file__).resolve().parents[2] / "docs" / "results" / "ehou"
    html = paper_reading("ehou", snap, "small")
    assert html.startswith("<p><b>EHOU</b>:") and "SSP" in html
    broken = tmp_path / "empty"
    broken.mkdir()
    assert "No reading computed from this report" in paper_reading("ehou", broken, "small")
