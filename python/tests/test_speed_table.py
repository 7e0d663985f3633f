"""scripts/speed_table.py: the speed table from criterion's files and the
benchmark's record of each run's simulated work."""

from __future__ import annotations

import json
from pathlib import Path

from scripts_dir import load_script

ROOT = Path(__file__).resolve().parents[2]


def load():
    return load_script("speed_table")


def bench(root: Path, fid: str, ops: int, median_ns: float, work: dict | None) -> None:
    d = root / "sim_speed_paper" / fid
    (d / "new").mkdir(parents=True)
    (d / "new" / "benchmark.json").write_text(
        json.dumps({"function_id": fid, "throughput": {"Elements": ops}})
    )
    (d / "new" / "estimates.json").write_text(json.dumps({"median": {"point_estimate": median_ns}}))
    if work is not None:
        (d / "work.json").write_text(json.dumps(work))


def test_rows_give_speed_ratio_and_work_per_op(tmp_path):
    st = load()
    # ideal: 1e6 ops in 0.1 s = 10 M ops/s, 0.01 write requests per op;
    # fwb: 1e6 ops in 0.4 s = 2.5 M ops/s, 0.09 per op (9x ideal's).
    bench(tmp_path, "ideal@morlog", 1_000_000, 1e8, {"mem_ops": 1000, "nvm_write_requests": 10})
    bench(tmp_path, "fwb@morlog", 1_000_000, 4e8, {"mem_ops": 1000, "nvm_write_requests": 90})
    # A run recorded before the work file existed: speed only.
    bench(tmp_path, "hoop@hoop", 1_000_000, 2e8, None)
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in st.table(st.read_runs(tmp_path)).splitlines()
        if line.startswith("| `")
    }
    assert rows["`ideal`"] == ["morlog", "10.00", "1.00", "0.010", "1.0"]
    assert rows["`fwb`"] == ["morlog", "2.50", "0.25", "0.090", "9.0"]
    assert rows["`hoop`"] == ["hoop", "5.00", "n/a", "n/a", "n/a"]


def test_readme_form_has_one_row_per_preset(tmp_path):
    st = load()
    bench(tmp_path, "ideal@morlog", 1_000_000, 1e8, {"mem_ops": 1000, "nvm_write_requests": 10})
    bench(tmp_path, "fwb@morlog", 1_000_000, 4e8, {"mem_ops": 1000, "nvm_write_requests": 90})
    bench(tmp_path, "morlog@morlog", 1_000_000, 2e8, {"mem_ops": 1000, "nvm_write_requests": 50})
    bench(tmp_path, "ideal@hoop", 1_000_000, 1e8, {"mem_ops": 1000, "nvm_write_requests": 10})
    bench(tmp_path, "hoop@hoop", 1_000_000, 2e8, None)
    rows = [r for r in st.readme_table(st.read_runs(tmp_path)).splitlines() if r.startswith("| ")]
    assert rows[2:] == [
        "| hoop | 10.00 | `hoop` 0.50 |",
        "| morlog | 10.00 | `fwb` 0.25 (9.0×), `morlog` 0.50 (5.0×) |",
    ]


def test_free_memory_column_gives_the_ratio_in_that_build(tmp_path):
    st = load()
    real, free = tmp_path / "real", tmp_path / "free"
    bench(real, "ideal@morlog", 1_000_000, 1e8, {"mem_ops": 1000, "nvm_write_requests": 10})
    bench(real, "fwb@morlog", 1_000_000, 4e8, {"mem_ops": 1000, "nvm_write_requests": 90})
    marked = {"mem_ops": 1000, "nvm_write_requests": 10, "free_memory": True}
    # Free build: ideal 1e6 ops in 0.05 s, fwb in 0.0625 s (0.80 of ideal).
    bench(free, "ideal@morlog", 1_000_000, 5e7, marked)
    bench(free, "fwb@morlog", 1_000_000, 6.25e7, marked)
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in st.table(st.read_runs(real), st.read_runs(free)).splitlines()
        if line.startswith("| `")
    }
    assert rows["`ideal`"][-1] == "1.00"
    assert rows["`fwb`"] == ["morlog", "2.50", "0.25", "0.090", "9.0", "0.80"]


def test_free_memory_runs_are_not_taken_for_the_real_ones(tmp_path, capsys):
    st = load()
    marked = {"mem_ops": 1000, "nvm_write_requests": 10, "free_memory": True}
    bench(tmp_path, "ideal@morlog", 1_000_000, 5e7, marked)
    runs = st.read_runs(tmp_path)
    try:
        st.table(runs)
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("a free-memory run printed as the real table")
    assert "free-memory" in capsys.readouterr().err
    # And a real run is refused as the free one.
    real = tmp_path / "real"
    bench(real, "ideal@morlog", 1_000_000, 1e8, {"mem_ops": 1000, "nvm_write_requests": 10})
    try:
        st.table(st.read_runs(real), st.read_runs(real))
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("a real run was taken as the free-memory one")
