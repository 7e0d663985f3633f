"""The bindings: same documents as the CLI, catalogue, errors, GIL."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import durasim


def _cli_json(exe, scheme, workload, threads, tx, seed, sets=(), config=None) -> dict:
    cmd = [
        str(exe),
        "run",
        "--scheme",
        scheme,
        "--workload",
        workload,
        "--threads",
        str(threads),
        "--tx",
        str(tx),
        "--seed",
        str(seed),
        "--json",
        "-",
    ]
    for k, v in sets:
        cmd += ["--set", f"{k}={v}"]
    if config:
        cmd += ["--config", str(config)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout)


def _same_run(a: dict, b: dict) -> None:
    # Everything but the host-speed block must be identical.
    for k in ("scheme", "workload", "threads", "tx", "seed", "config", "metrics", "scheme_stats"):
        assert a[k] == b[k], k
    assert a["sim"]["version"] == b["sim"]["version"]
    assert a["sim"]["sim_mem_ops"] == b["sim"]["sim_mem_ops"]


# The bindings hand the same arguments to the same engine: every scheme once
# (on its paper machine, as both front ends pick it) and every workload once
# (on the bare machine) cover what each front end converts.
@pytest.mark.parametrize("scheme", durasim.schemes())
def test_run_matches_cli_json_for_every_scheme(cli_binary, scheme):
    py = durasim.run(scheme, "btree", threads=2, tx=150, seed=7)
    cli = _cli_json(cli_binary, scheme, "btree", 2, 150, 7)
    assert py["metrics"]["committed_tx"] == 150
    _same_run(py, cli)


@pytest.mark.parametrize("workload", durasim.workloads())
def test_run_matches_cli_json_for_every_workload(cli_binary, workload):
    py = durasim.run("opt-redo", workload, threads=2, tx=150, seed=7, config="default")
    cli = _cli_json(cli_binary, "opt-redo", workload, 2, 150, 7, config="default")
    assert py["metrics"]["committed_tx"] == 150
    _same_run(py, cli)


def test_overrides_and_config_match_cli(cli_binary, tmp_path):
    cfg = tmp_path / "preset.toml"
    cfg.write_text("[nvm]\narray_write_ns = 300.0\n")
    py = durasim.run(
        "ideal",
        "vector",
        threads=2,
        tx=120,
        seed=3,
        config=cfg,
        workload__item_bytes=256,
        **{"nvm.write_model": "dcw"},
    )
    cli = _cli_json(
        cli_binary,
        "ideal",
        "vector",
        2,
        120,
        3,
        [("workload.item_bytes", 256), ("nvm.write_model", "dcw")],
        cfg,
    )
    _same_run(py, cli)
    assert py["config"]["nvm"]["array_write_ns"] == 300.0
    assert py["config"]["workload"]["item_bytes"] == 256


def test_override_spellings_are_one_convention():
    a = durasim.run("ideal", "vector", threads=2, tx=100, workload__item_bytes=512)
    b = durasim.run("ideal", "vector", threads=2, tx=100, **{"workload.item_bytes": 512})
    c = durasim.run("ideal", "vector", threads=2, tx=100)
    assert a["metrics"] == b["metrics"]
    assert a["metrics"]["stores"] > c["metrics"]["stores"]


def test_catalogue():
    assert "ideal" in durasim.schemes()
    assert "vector" in durasim.workloads()
    p = durasim.params()
    assert p["nvm.array_read_ns"]["default"] == 50.0
    assert p["nvm.array_read_ns"]["unit"] == "ns"
    assert all(v["source"] for v in p.values())
    # The test-only mutant switches stay hidden, as in `durasim list params`.
    assert not [k for k in p if k.endswith(".mutant")]
    d = durasim.describe()
    assert {s["name"] for s in d["schemes"]} == set(durasim.schemes())
    assert durasim.__version__ == durasim.version()


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        ({"scheme": "nope"}, ["scheme", "ideal"]),
        ({"workload": "nope"}, ["workload", "vector"]),
        ({"scheme": 3}, ["scheme", "ideal"]),
        ({"threads": 0}, ["threads", "at least 1"]),
        ({"threads": "2"}, ["threads", "integer"]),
        ({"threads": 1000}, ["threads", "at most"]),
        ({"tx": 0}, ["tx", "at least 1"]),
        ({"seed": -1}, ["seed"]),
        ({"foo__bar": 1}, ["foo.bar", "valid keys"]),
        ({"nvm__array_read_ns": 1e9}, ["nvm.array_read_ns"]),
        ({"workload__item_bytes": "big"}, ["workload.item_bytes", "integer"]),
        ({"workload__item_bytes": 64.5}, ["workload.item_bytes"]),
        ({"workload__item_bytes": [64]}, ["workload.item_bytes"]),
        ({"nvm__write_model": "magic"}, ["nvm.write_model", "uniform", "dcw"]),
        ({"config": "/nonexistent/preset.toml"}, ["config", "/nonexistent/preset.toml"]),
        # Found mid-run: one transaction's log record outgrows a segment.
        (
            {
                "scheme": "lsm",
                "threads": 1,
                "tx": 2,
                "nvm__capacity_bytes": "64MB",
                "workload__item_bytes": 4096,
                "workload__initial_items": 2,
                "workload__update_ratio": 0,
                "lsm__segment_bytes": 4096,
            },
            ["lsm.segment_bytes=4096", "set lsm.segment_bytes to at least 8192"],
        ),
    ],
)
def test_invalid_inputs_raise_value_error(kwargs, needles):
    args = {"scheme": "ideal", "workload": "vector", "threads": 2, "tx": 10}
    args.update(kwargs)
    with pytest.raises(ValueError) as exc:
        durasim.run(args.pop("scheme"), args.pop("workload"), **args)
    for n in needles:
        assert n in str(exc.value), (n, str(exc.value))


def test_front_end_arguments_are_checked_like_the_cli():
    """What the CLI refuses, the Python front refuses before any work: a
    preset that never ends, points with crash_at, a tear mask alone, a
    progress value that is not a bool, a client or scheduler Dask would
    reject with an error naming neither."""
    with pytest.raises(ValueError, match="larger than 1048576 bytes"):
        durasim._core.load_preset("/dev/urandom")
    with pytest.raises(ValueError, match="points=5 with crash_at=3"):
        durasim.crashtest("opt-redo", "vector", tx=10, points=5, crash_at=3)
    with pytest.raises(ValueError, match="tear_mask"):
        durasim.crashtest("opt-redo", "vector", tx=10, tear_mask=3)
    with pytest.raises(ValueError, match="'progress'"):
        durasim.run("ideal", "vector", tx=10, threads=1, progress="yes")
    spec = {"scheme": "ideal", "workload": "vector", "tx": 10, "threads": 1}
    with pytest.raises(ValueError, match=r"'client'.*submit"):
        durasim.sweep(spec, client=object())
    with pytest.raises(ValueError, match=r"'scheduler'.*tcp://"):
        durasim.sweep(spec, scheduler="bogus")
    with pytest.raises(ValueError, match="did you mean 'serial'"):
        durasim.sweep(spec, scheduler="seriel")


def test_gil_released_during_run():
    # If the GIL were held, the main thread could not run at all while the
    # simulation runs: the longest pause between its iterations would span it.
    kw = {"threads": 8, "tx": 20_000, "workload__item_bytes": 1024}
    t0 = time.perf_counter()
    durasim.run("ideal", "vector", **kw)
    duration = time.perf_counter() - t0
    done = threading.Event()
    th = threading.Thread(target=lambda: (durasim.run("ideal", "vector", **kw), done.set()))
    gaps, last = [], time.perf_counter()
    th.start()
    while not done.is_set():
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        time.sleep(0.001)
    th.join()
    assert duration > 0.05, "run too short to tell"
    assert max(gaps) < max(duration / 2, 0.05), (max(gaps), duration)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**63), tx=st.integers(1, 300), threads=st.integers(1, 4))
def test_runs_are_deterministic(seed, tx, threads):
    a = durasim.run("ideal", "vector", threads=threads, tx=tx, seed=seed)
    b = durasim.run("ideal", "vector", threads=threads, tx=tx, seed=seed)
    assert a["metrics"] == b["metrics"]
    assert a["metrics"]["committed_tx"] == tx


def test_numpy_scalars_are_numbers():
    import numpy as np

    a = durasim.run(
        "ideal",
        "vector",
        threads=np.int64(2),
        tx=np.int32(100),
        seed=np.uint64(3),
        workload__item_bytes=np.int64(128),
        nvm__array_read_ns=np.float64(60.0),
        mc__adr=np.bool_(True),
    )
    b = durasim.run(
        "ideal",
        "vector",
        threads=2,
        tx=100,
        seed=3,
        workload__item_bytes=128,
        nvm__array_read_ns=60.0,
        mc__adr=True,
    )
    assert a["metrics"] == b["metrics"] and a["config"] == b["config"]
    df = durasim.sweep(
        {"scheme": "ideal", "workload": "vector", "threads": 2, "tx": np.arange(50, 151, 50)},
        scheduler="serial",
        progress=False,
    )
    assert df["committed_tx"].tolist() == [50, 100, 150]


def test_integral_floats_for_integer_parameters():
    # pandas stores integer columns with gaps as floats: 128.0 means 128.
    a = durasim.run("ideal", "vector", threads=2, tx=50, workload__item_bytes=128.0)
    b = durasim.run("ideal", "vector", threads=2, tx=50, workload__item_bytes=128)
    assert a["config"] == b["config"]


def test_misspelled_keyword_suggests_and_lists_arguments():
    with pytest.raises(ValueError) as e:
        durasim.run("ideal", "vector", thread=8)
    msg = str(e.value)
    assert "did you mean 'threads'" in msg
    assert "threads, tx, seed" in msg and len(msg) < 600, msg
    with pytest.raises(ValueError, match="did you mean 'points'"):
        durasim.crashtest("ideal", "vector", tx=20, point=3)
    with pytest.raises(ValueError, match=r"did you mean 'cache\.llc_size_bytes'"):
        durasim.run("ideal", "vector", tx=20, cache__llc_size=4 << 20)


def test_misspelled_names_suggest():
    with pytest.raises(ValueError, match="did you mean 'hoop'"):
        durasim.run("hop", "vector", tx=20)
    with pytest.raises(ValueError, match="did you mean 'btree'"):
        durasim.run("ideal", "btre", tx=20)
    with pytest.raises(durasim.SweepError, match="did you mean 'opt-redo'"):
        durasim.sweep(
            [{"scheme": "opt_redo", "workload": "vector", "tx": 20}],
            scheduler="serial",
            progress=False,
            errors="raise",
        )


def test_unit_spellings_and_echo():
    for size in ("4M", "4 MB", "4MiB", "4MB"):
        r = durasim.run("ideal", "vector", threads=1, tx=20, cache__llc_size_bytes=size)
        assert r["config"]["cache"]["llc_size_bytes"] == 4 << 20
    r = durasim.run("ideal", "vector", threads=1, tx=20, nvm__array_read_ns="250ns")
    assert r["config"]["nvm"]["array_read_ns"] == 250.0
    with pytest.raises(ValueError, match=r"'3MB' \(= 3145728\)"):
        durasim.run("ideal", "vector", threads=1, tx=20, cache__llc_size_bytes="3MB")


def test_crashtest_progress_callback_and_quiet(capsys):
    calls = []
    bar = durasim._core.Bar(1, False, "", "")
    bar.set = lambda done, total: calls.append((done, total))  # type: ignore[method-assign]
    bar.bar = object()
    doc = durasim._core._crashtest_native(
        bar, "ideal", "vector", 1, 20, 1, "all", None, None, False, None, None, []
    )
    assert calls and calls[-1][0] == calls[-1][1] > 0
    assert '"violations"' in doc
    # Not a terminal (pytest captures stderr): no bar is drawn.
    durasim.crashtest("ideal", "vector", tx=20, points=5)
    assert capsys.readouterr().err == ""


def test_run_progress_reaches_total_and_stays_quiet_off_terminal(monkeypatch, capsys):
    seen = []

    class Recorder:
        def __init__(self, total, enabled, desc, unit, delay_s=0.0):
            seen.append(("new", total, enabled, delay_s))
            self.bar = object() if enabled else None

        def set(self, done, total):
            seen.append((done, total))

        def close(self):
            seen.append("close")

    monkeypatch.setattr(durasim._core, "Bar", Recorder)
    durasim.run("ideal", "vector", threads=2, tx=600, progress=True)
    # A bar over all threads' transactions, drawn only after a second, and
    # the last callback reports every transaction committed.
    assert seen[0] == ("new", 600, True, 1.0)
    updates = [s for s in seen if isinstance(s, tuple) and s[0] != "new"]
    assert updates and updates[-1] == (600, 600)
    assert all(d <= t for d, t in updates) and seen[-1] == "close"
    monkeypatch.undo()
    # Not a terminal (pytest captures stderr): nothing drawn; sweeps pass
    # progress=False so runs inside them never draw their own bar.
    durasim.run("ideal", "vector", threads=1, tx=50)
    assert capsys.readouterr().err == ""


def test_warnings_are_printed_by_run_and_kept_by_sweep(capsys):
    # A run shorter than one HOOP GC period: durasim.run prints the warning
    # on stderr, as the CLI does, and lists it in the document.
    doc = durasim.run("hoop", "btree", threads=2, tx=150)
    assert any("hoop.gc_period_ms" in w for w in doc["warnings"]), doc["warnings"]
    err = capsys.readouterr().err
    assert [f"warning: {w}" for w in doc["warnings"]] == err.splitlines()
    # A sweep prints nothing and keeps each run's warnings in a column.
    df = durasim.sweep(
        [
            {"scheme": "hoop", "workload": "btree", "threads": 2, "tx": 150},
            {"scheme": "ideal", "workload": "btree", "threads": 2, "tx": 150},
        ],
        scheduler="serial",
    )
    assert capsys.readouterr().err == ""
    assert df["warnings"].iloc[0] == "; ".join(doc["warnings"])
    assert pd.isna(df["warnings"].iloc[1])


def test_a_scheme_runs_on_its_papers_machine_by_default():
    # No config: the scheme's paper machine (embedded), its thread count.
    r = durasim.run("dpc", "btree", tx=200)
    assert r["config"]["hybrid"]["dram_cache_bytes"] == 256 << 20
    assert r["threads"] == 4
    # config="default": the bare machine (no DRAM cache), 8 threads.
    bare = durasim.run("dpc", "btree", tx=200, config="default")
    assert bare["config"]["hybrid"]["dram_cache_bytes"] == 0
    assert bare["threads"] == 8
    ehou = durasim.run("ehou", "hashtable", tx=200)
    assert ehou["config"]["dimm"]["model"] == "optane"


def test_counts_come_back_as_ints():
    r = durasim.run("hoop", "btree", threads=2, tx=200)
    s = r["scheme_stats"]
    assert isinstance(s["gc_runs_periodic"], int) and not isinstance(s["gc_runs_periodic"], bool)
    assert isinstance(s["tx_committed"], int)
    assert isinstance(r["metrics"]["committed_tx"], int)
