"""Sweeps: grid expansion, LocalCluster == serial, a real distributed run,
failures reported with their spec."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import durasim
from durasim.sweep import SweepError, deterministic, expand

# This file tests the sweep's mechanics (expansion, order, schedulers, the
# same frame everywhere), so the grid is small and on the bare machine: one
# scheme of each kind (none, out-of-place, checkpoint, logging) and three
# workloads. Every scheme x workload runs in the Rust tests (engine_runs).
GRID = {
    "config": "default",
    "scheme": ["ideal", "hoop", "dpc", "morlog"],
    "workload": ["vector", "btree", "tpcc"],
    "threads": 2,
    "tx": 120,
    "seed": [1, 2, 3],
    "workload.item_bytes": [64, 256],
}


@pytest.fixture(scope="module")
def serial_frame() -> pd.DataFrame:
    return durasim.sweep(GRID, scheduler="serial", progress=False)


def test_grid_frame_shape(serial_frame):
    n = len(GRID["scheme"]) * len(GRID["workload"]) * 3 * 2
    assert len(serial_frame) == n
    assert serial_frame["error"].isna().all()
    assert list(serial_frame.columns[:7]) == [
        "scheme",
        "workload",
        "threads",
        "tx",
        "seed",
        "config",
        "workload.item_bytes",
    ]
    assert (serial_frame["committed_tx"] == 120).all()
    # Spec order is kept: the grid's last key varies fastest.
    assert list(serial_frame["workload.item_bytes"][:2]) == [64, 256]
    # Rows equal single runs.
    r = durasim.run(
        GRID["scheme"][0],
        GRID["workload"][0],
        threads=2,
        tx=120,
        seed=2,
        config="default",
        **{"workload.item_bytes": 256},
    )
    row = serial_frame.iloc[3]
    assert row["seed"] == 2 and row["workload.item_bytes"] == 256
    assert row["throughput_tx_per_mcycle"] == r["metrics"]["throughput_tx_per_mcycle"]


def test_default_threads_equal_serial(serial_frame):
    # Default: one thread per core in this process (nothing spawned).
    df = durasim.sweep(GRID, progress=False)
    pd.testing.assert_frame_equal(deterministic(df), deterministic(serial_frame))


def test_local_process_cluster_equals_serial(serial_frame):
    # scheduler="processes": a LocalCluster with one process worker per core.
    df = durasim.sweep(GRID, scheduler="processes", progress=False)
    pd.testing.assert_frame_equal(deterministic(df), deterministic(serial_frame))


@settings(max_examples=30, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["scheme", "workload", "seed", "a.b", "c__d"]),
        st.lists(st.integers(0, 5), min_size=1, max_size=3),
        min_size=2,
    )
)
def test_expand_is_a_cartesian_product(grid):
    grid = dict(grid)
    grid.setdefault("scheme", ["x"])
    grid.setdefault("workload", ["y"])
    specs = expand(grid)
    n = 1
    for v in grid.values():
        n *= len(v)
    assert len(specs) == n
    keys = [k if k in ("scheme", "workload", "seed") else k.replace("__", ".") for k in grid]
    combos = {tuple(s[k] for k in keys) for s in specs}
    distinct = 1
    for v in grid.values():
        distinct *= len(set(v))
    assert len(combos) == distinct
    for s in specs:
        assert set(s) == set(keys)
    # Nested-loop order: the first spec takes every axis' first value, the
    # second differs from it in the last key only.
    assert tuple(specs[0][k] for k in keys) == tuple(v[0] for v in grid.values())
    last = list(grid.values())[-1]
    if len(last) > 1:
        assert specs[1][keys[-1]] == last[1]
        assert all(specs[1][k] == specs[0][k] for k in keys[:-1])


def test_expand_rejects_bad_specs():
    with pytest.raises(ValueError, match="workload"):
        expand([{"scheme": "ideal"}])
    with pytest.raises(ValueError, match="dict"):
        expand(["ideal"])
    with pytest.raises(ValueError, match="errors"):
        durasim.sweep([{"scheme": "ideal", "workload": "vector"}], errors="ignore")


def test_failed_runs_are_reported_with_their_spec():
    runs = [
        {"scheme": "ideal", "workload": "vector", "tx": 50, "threads": 1},
        {"scheme": "nope", "workload": "vector", "tx": 50},
        {"scheme": "ideal", "workload": "vector", "tx": 50, "nvm.array_read_ns": -5},
    ]
    with pytest.raises(SweepError) as exc:
        durasim.sweep(runs, scheduler="serial", progress=False)
    e = exc.value
    assert [s["scheme"] for s, _ in e.failures] == ["nope", "ideal"]
    assert "unknown scheme 'nope'" in str(e) and "nvm.array_read_ns" in str(e)
    assert len(e.frame) == 3
    df = durasim.sweep(runs, scheduler="serial", progress=False, errors="include")
    assert df["error"].isna().tolist() == [True, False, False]
    assert "valid schemes" in df["error"][1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.time() + 15
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


def test_distributed_scheduler_and_two_workers(serial_frame):
    from dask.distributed import Client

    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    procs = [
        _spawn(
            [
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
            ]
        )
    ]
    try:
        for _ in range(2):
            procs.append(
                _spawn(
                    [
                        "distributed.cli.dask_worker",
                        addr,
                        "--nthreads",
                        "1",
                        "--nworkers",
                        "1",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                    ]
                )
            )
        with Client(addr, timeout=60) as c:
            c.wait_for_workers(2, timeout=120)
            assert len(c.scheduler_info()["workers"]) == 2
        df = durasim.sweep(GRID, scheduler=addr, progress=False)
        pd.testing.assert_frame_equal(deterministic(df), deterministic(serial_frame))
        # An existing client works the same way.
        with Client(addr, timeout=60) as c:
            df2 = durasim.sweep(GRID, client=c, progress=False)
        pd.testing.assert_frame_equal(deterministic(df2), deterministic(serial_frame))
    finally:
        _stop(procs)
    assert all(p.poll() is not None for p in procs)


def test_slurm_needs_dask_jobqueue(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("dask_jobqueue"):
            raise ImportError("no dask_jobqueue")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    # The guide's snippet: `durasim.cluster.slurm(...)` after `import durasim`.
    with pytest.raises(ImportError, match=r"pip install '\.\[slurm\]'"):
        durasim.cluster.slurm(jobs=1)


def test_the_slurm_extra_is_declared():
    # `pip install '.[slurm]'` from a checkout installs dask-jobqueue.
    import pathlib

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = pathlib.Path(__file__).resolve().parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(d.startswith("dask-jobqueue") for d in extras["slurm"])
