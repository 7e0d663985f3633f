"""The MorLog paper's experiments, figures and report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import durasim
from durasim import _core, lab
from durasim._figcheck import readable
from durasim.papers import PAPERS, hoop, morlog
from durasim.papers._base import Avail
from durasim.papers.morlog import experiments as morlog_exp
from durasim.papers.morlog import figures as morlog_fig
from durasim.plotting import series
from durasim.report import write_report
from durasim.sweep import result_row

#: The catalogue once MorLog is merged (param names as the morlog branch
#: spells them; buffer_param finds them by their shape, not their name).
FULL_CATALOGUE = {
    "fwb-crade": ["fwb.log_buffer_entries", "fwb.period_cycles"],
    "fwb-slde": ["fwb.log_buffer_entries", "fwb.period_cycles"],
    "fwb-unsafe-crade": ["fwb-unsafe.log_buffer_entries"],
    "morlog-crade": [
        "morlog.undo_redo_buffer_entries",
        "morlog.redo_buffer_entries",
        "morlog.log_management",
        "morlog.tx_table_entries",
    ],
    "morlog-slde": [
        "morlog.undo_redo_buffer_entries",
        "morlog.redo_buffer_entries",
        "morlog.log_management",
        "morlog.tx_table_entries",
    ],
    "morlog-dp-slde": [
        "morlog-dp.undo_redo_buffer_entries",
        "morlog-dp.redo_buffer_entries",
        "morlog-dp.log_management",
        "morlog-dp.tx_table_entries",
    ],
}


class FullAvail(Avail):
    """Every design, workload and parameter the paper needs exists."""

    def __init__(self) -> None:
        self.schemes = set(morlog_exp.DESIGNS)
        self.workloads = set(morlog_exp.MICRO + morlog_exp.MACRO)
        self.params = set(_core.params())
        self.scheme_params = FULL_CATALOGUE


def _fake_report(spec: dict) -> dict:
    h = sum(ord(c) for c in repr(sorted(spec.items()))) % 97
    tx = spec.get("tx", 100)
    stats = {"log_entries_created": 10.0 * tx, "log_bits_before_encoding": 400.0 * tx}
    return {
        "metrics": {
            "committed_tx": tx,
            "measured_tx": tx * 3 // 4,
            "sim_cycles": 1_000_000 + h * 1000,
            "throughput_tx_per_mcycle": 100.0 + h,
            "write_bytes_per_tx": 64.0 + h / 10,
            "energy_nj": 1000.0 + h,
        },
        "scheme_stats": stats,
        "nvm_media": {"write_energy_pj_total": 5e5 + h, "log_bits_written": 300.0 * tx + h},
    }


def fake_frames(scale: str = "tiny") -> dict[str, pd.DataFrame]:
    sc = morlog.PAPER.scale_settings(scale)
    out = {}
    for eid, e in morlog_exp.EXPERIMENTS.items():
        plan = e.plan(sc, FullAvail())
        rows = []
        for s in plan.specs:
            row = result_row(morlog_exp.run_spec(s), _fake_report(s))
            for c in morlog_exp.PLAN_COLUMNS:
                if c in s:
                    row[c] = s[c]
            rows.append(row)
        df = e.analyze(pd.DataFrame(rows))
        df.attrs.update(
            {
                "experiment": eid,
                "paper_item": morlog_exp.PAPER_ITEMS[eid],
                "title": e.title,
                "runs": len(rows),
                "skipped": plan.skipped,
                "scheme_order": morlog_exp.DESIGNS,
            }
        )
        out[eid] = df
    return out


def test_registry_and_designs_in_one_place():
    assert PAPERS["morlog"] is morlog.PAPER and PAPERS["hoop"] is hoop.PAPER
    assert morlog_exp.BASELINE == morlog_exp.DESIGNS[0] == "fwb-crade"
    assert len(morlog_exp.DESIGNS) == 6
    # Each design is a named preset of the engine (listed once morlog lands).
    listed = {s["name"] for s in durasim.describe()["schemes"]}
    assert {"fwb-crade", "fwb-unsafe-crade", "fwb-slde"} <= listed


def test_buffer_params_by_shape():
    cat = FULL_CATALOGUE
    assert morlog_exp.buffer_param("fwb-crade", "undo_redo", cat) == "fwb.log_buffer_entries"
    assert morlog_exp.buffer_param("fwb-crade", "redo", cat) is None
    assert (
        morlog_exp.buffer_param("morlog-dp-slde", "undo_redo", cat)
        == "morlog-dp.undo_redo_buffer_entries"
    )
    assert morlog_exp.buffer_param("morlog-slde", "redo", cat) == "morlog.redo_buffer_entries"
    # The real catalogue: FWB's buffer parameter is found there too.
    assert morlog_exp.buffer_param("fwb-slde", "undo_redo") == "fwb.log_buffer_entries"
    with pytest.raises(ValueError, match="undo_redo, redo"):
        morlog_exp.buffer_param("fwb-crade", "both", cat)


def test_plans_cover_the_paper_at_paper_scale():
    sc = morlog.PAPER.scale_settings("paper")
    av = FullAvail()
    micro = morlog_exp.plan_micro(sc, av)
    # 6 micro-benchmarks x 2 datasets x 6 designs, 8 threads, 100K tx (§VI-A).
    assert len(micro.specs) == 6 * 2 * 6 and not micro.skipped
    assert {s["threads"] for s in micro.specs} == {8}
    # At least §VI-A's 100K, more where 100K hold too few force-write-back periods.
    assert {s["tx"] for s in micro.specs} == {
        max(100_000, morlog_exp.STEADY_TX[w]) for w in morlog_exp.MICRO
    }
    assert {s[morlog_exp.P_ITEM] for s in micro.specs} == {64, 4096}
    macro = morlog_exp.plan_macro(sc, av)
    # echo, ycsb x 2 datasets + tpcc (new-order, fixed rows), four threads.
    assert len(macro.specs) == (2 * 2 + 1) * 6
    assert {s["threads"] for s in macro.specs} == {4}
    redo = morlog_exp.plan_redo_buffer(sc, av)
    sizes = sorted({s["redo_entries"] for s in redo.specs if "redo_entries" in s})
    assert sizes == [2, 4, 8, 16, 32, 64]
    assert {s["workload"] for s in redo.specs} == {"echo"}
    # Only MorLog's designs have a redo buffer; FWB-CRADE is the reference.
    swept = {s["scheme"] for s in redo.specs if "redo_entries" in s}
    assert swept == {"morlog-crade", "morlog-slde", "morlog-dp-slde"}
    ur = morlog_exp.plan_undo_redo_buffer(sc, av)
    unsafe = [s for s in ur.specs if s["scheme"] == "fwb-unsafe-crade"]
    assert all(s["fwb-unsafe.log_buffer_entries"] == s["undo_redo_entries"] + 32 for s in unsafe)
    lat = morlog_exp.plan_write_latency(sc, av)
    scales = sorted({s["write_latency_scale"] for s in lat.specs})
    assert scales == [1, 2, 4, 8, 16, 32]
    s32 = next(s for s in lat.specs if s["write_latency_scale"] == 32)
    assert s32["nvm.tlc_write_ns_100"] == pytest.approx(150.0 * 32)
    assert s32["nvm.tlc_write_ns_111"] == pytest.approx(12.1 * 32)


@pytest.fixture(scope="module")
def real():
    """Every experiment at tiny scale, real runs of this build's designs."""
    return morlog.run_experiments(scale="tiny", scheduler="serial", progress=False)


def test_every_experiment_runs_end_to_end(real):
    have = set(durasim.schemes())
    assert set(real) == set(morlog_exp.EXPERIMENTS)
    for eid, df in real.items():
        assert len(df) > 0, eid
        assert set(df["scheme"]) <= have
        assert df["error"].isna().all()
        # A design this build lacks is named, never silently left out.
        for d in set(morlog_exp.DESIGNS) - have:
            assert any(f"'{d}'" in x for x in df.attrs["skipped"]), (eid, d)
        # The paper's §VI measurements, and §III-F's option it did not evaluate.
        assert df.attrs["paper_item"].startswith(("MorLog §VI", "MorLog §III-F"))
        # The system of Table III applied to every run (not the design's own settings).
        assert (df["cpu.model"] == "in-order").all()
        if eid != "workloads":  # the native system takes the preset's encoding (none)
            assert "nvm.encoding" not in df.columns or df["nvm.encoding"].isna().all()
    a = real["throughput"]
    assert a.attrs["baseline"] == "fwb-crade"
    assert (a[a["scheme"] == "fwb-crade"]["norm_throughput"] == 1.0).all()
    assert (a["throughput_tx_per_mcycle"] > 0).all()
    # The TLC device's cell energy is read for every run.
    assert (real["energy"]["write_energy_nj_per_tx"] > 0).all()
    m = real["macro"]
    assert set(m["workload"]) == {"echo", "tpcc"} and set(m["threads"]) == {2}
    t = real["threads"]
    assert set(t["threads"]) == {1, 2}
    assert (t[t["scheme"] == "fwb-crade"]["norm_throughput"] == 1.0).all()
    lat = real["write_latency"]
    slow = lat[(lat["write_latency_scale"] == 32) & (lat["scheme"] == "fwb-crade")]
    fast = lat[(lat["write_latency_scale"] == 1) & (lat["scheme"] == "fwb-crade")]
    # 32x slower cells cannot make the same run faster.
    assert slow["throughput_tx_per_mcycle"].iloc[0] <= fast["throughput_tx_per_mcycle"].iloc[0]
    ur = real["undo_redo_buffer"]
    fwb = ur[ur["scheme"] == "fwb-crade"]
    assert sorted(fwb["fwb.log_buffer_entries"]) == sorted(fwb["undo_redo_entries"]) == [4, 16]
    if "morlog-slde" in have:
        ml = ur[ur["scheme"] == "morlog-slde"]
        assert sorted(ml["morlog.undo_redo_buffer_entries"]) == [4, 16]
        g = real["redo_buffer"]
        dp = g[g["scheme"] == "morlog-dp-slde"]
        assert sorted(dp["morlog-dp.redo_buffer_entries"]) == sorted(dp["redo_entries"]) == [2, 32]
        lb = real["log_bits"]
        # Every design's log bits come from the TLC media (FWB included).
        assert lb.attrs["stat_keys"]["log_bits_per_tx"] == morlog_exp.COL_LOG_BITS
        assert (lb["log_bits_per_tx"] > 0).all()
        assert (lb[lb["scheme"] == "fwb-crade"]["norm_log_bits"] == 1.0).all()


# The claim sweep draws MorLog-SLDE's advantage over its rivals, not every
# design (tests/test_claims.py).
@pytest.mark.parametrize(
    "eid", [e for e in morlog_exp.EXPERIMENTS if e not in ("workloads", "claim")]
)
def test_figure_of_every_experiment_shows_every_design(eid):
    df = fake_frames()[eid]
    fig = morlog_fig.figure(df)
    labels = [x.split(" (")[0] for x in series(fig)]
    want = {"morlog-crade", "morlog-slde", "morlog-dp-slde"}
    if eid == "redo_buffer":
        want |= {"fwb-crade"}
    elif eid == "log_management":
        # MorLog's option only; each design's scan run is the 1.0 line.
        want |= {"force-write-back"}
    else:
        want |= {"fwb-crade", "fwb-unsafe-crade", "fwb-slde"}
    assert set(labels) == want, labels
    for ax in fig.axes:
        if ax.axison:
            assert "(" in ax.get_ylabel() and ax.get_xlabel()
    assert readable(df.attrs["normalization"].split(" / ")[0]) in fig.get_suptitle()
    if eid in morlog_fig.BARS:
        # Bars in the paper's design order.
        assert labels == [d for d in morlog_exp.DESIGNS if d in want]


def test_log_bits_come_from_the_media_else_the_schemes_count_is_said():
    df = fake_frames()["log_bits"]
    assert df.attrs["stat_keys"]["log_bits_per_tx"] == morlog_exp.COL_LOG_BITS
    assert df["log_bits_per_tx"].notna().all()
    # Without the media column: the count before encoding, with a note.
    sc = morlog.PAPER.scale_settings("tiny")
    plan = morlog_exp.EXPERIMENTS["log_bits"].plan(sc, FullAvail())
    rows = []
    for spec in plan.specs:
        rep = _fake_report(spec)
        rep["nvm_media"].pop("log_bits_written")
        rows.append(result_row(morlog_exp.run_spec(spec), rep))
    df = morlog_exp.an_log_bits(pd.DataFrame(rows))
    assert df.attrs["stat_keys"]["log_bits_per_tx"] == "stat.log_bits_before_encoding"
    assert any("before encoding" in n for n in df.attrs["notes"])


def _referenced(index: Path) -> list[str]:
    return [
        r
        for r in re.findall(r'(?:src|href)="([^"]+)"', index.read_text())
        if not r.startswith(("http:", "https:", "#"))
    ]


def _check_report(out: Path, command: str) -> None:
    index = out / "index.html"
    refs = _referenced(index)
    for r in refs:
        assert (out / r).is_file(), r
    for eid, e in morlog_exp.EXPERIMENTS.items():
        stem = f"{e.item}_{eid}"
        assert {f"{stem}.png", f"{stem}.svg", f"{stem}.csv"} <= set(refs)
        assert (out / f"{stem}.png").stat().st_size > 1000
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["command"] == command and command in index.read_text()
    assert cfg["scale_settings"] == morlog_exp.SCALES["tiny"]
    assert cfg["preset"]["path"].endswith("morlog.toml")
    text = index.read_text()
    assert "MorLog paper reproduction" in text and "HOOP" not in text


def test_report_from_real_runs(real, tmp_path):
    cmd = "durasim-lab reproduce morlog --scale tiny"
    write_report(morlog.PAPER, real, tmp_path, scale="tiny", command=cmd)
    _check_report(tmp_path, cmd)
    text = (tmp_path / "index.html").read_text()
    for d in set(morlog_exp.DESIGNS) - set(durasim.schemes()):
        assert d in text  # listed under "not available in this build"


def test_lab_reproduce_morlog(tmp_path, capsys):
    out = tmp_path / "rep"
    argv = ["reproduce", "morlog", "--scale", "tiny", "--scheduler", "serial", "--out", str(out)]
    assert lab.main([*argv, "--quiet", "--only", "throughput,redo_buffer"]) == 0
    assert "wrote" in capsys.readouterr().out
    index = (out / "index.html").read_text()
    assert '<section id="throughput">' in index and '<section id="redo_buffer">' in index
    assert "--only throughput,redo_buffer" in index


def test_bad_arguments(capsys):
    with pytest.raises(ValueError, match="small"):
        morlog.throughput("huge")
    with pytest.raises(ValueError, match="log_bits"):
        morlog.run_experiments(["nope"], "tiny")
    with pytest.raises(SystemExit) as e:
        lab.main(["reproduce", "morlg"])
    assert e.value.code == 2
    assert "morlog" in capsys.readouterr().err


def test_log_management_plan_and_normalization():
    sc = morlog.PAPER.scale_settings("tiny")
    plan = morlog_exp.EXPERIMENTS["log_management"].plan(sc, FullAvail())
    designs = {s["scheme"] for s in plan.specs}
    assert designs == {"morlog-crade", "morlog-slde", "morlog-dp-slde"}
    dp = [s for s in plan.specs if s["scheme"] == "morlog-dp-slde"]
    assert [s["morlog-dp.log_management"] for s in dp] == ["force-write-back"] + ["tx-table"] * len(
        sc["tx_table_entries"]
    )
    assert [s.get("morlog-dp.tx_table_entries") for s in dp] == [None, *sc["tx_table_entries"]]
    df = fake_frames()["log_management"]
    scan = df[df["tx_table_entries"].isna()]
    assert (scan["norm_throughput"] == 1.0).all()
    assert df["norm_throughput"].notna().all()
    assert "force-write-back" in df.attrs["normalization"]
