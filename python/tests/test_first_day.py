"""The first-day replay (scripts/first_day.py): the README quick start, its
Python snippet and each paper's tiny report, nothing degenerate. About 2-3
minutes on two idle cores (the quick start's runs capped at 2,000
transactions); needs the release CLI (`make build`), else skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from scripts_dir import load_script

ROOT = Path(__file__).resolve().parents[2]


def _script():
    return load_script("first_day")


def _binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    return (target if target.is_absolute() else ROOT / target) / "release" / "durasim"


def test_quick_start_is_read_from_the_readme():
    cmds, py = _script().quick_start()
    assert any(c.startswith("durasim compare") for c in cmds)
    assert "durasim.sweep" in py


def test_a_table_of_ones_is_degenerate():
    fd = _script()
    head = "workload scheme tx/Mcycle norm_tput crit_lat norm_lat write_B/tx norm_wr energy_uJ"
    ones = "btree ideal 10548.36 1.000 728.4 1.000 199.4 1.000 13.506"
    got = fd._ratio_columns("\n".join([head, ones, ones]))
    assert any("norm_tput is 1.000" in x for x in got)
    zero = "btree hoop 7451.97 1.410 1044.9 1.435 0.0 0.000 78.781"
    assert any("hoop on btree writes 0 B/tx" in x for x in fd._ratio_columns(f"{head}\n{zero}"))
    ok = "btree hoop 7451.97 1.410 1044.9 1.435 504.9 2.532 78.781"
    assert fd._ratio_columns("\n".join([head, ones, ok])) == []


@pytest.mark.skipif(not _binary().exists(), reason="needs the release CLI (make build)")
def test_first_day_finds_nothing_degenerate(tmp_path, capsys):
    rc = _script().main(["--bin", str(_binary()), "--tx", "2000", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
