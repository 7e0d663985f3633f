"""durasim.crashtest: the crash oracle from Python, same report as the CLI."""

from __future__ import annotations

import json
import subprocess

import pytest

import durasim

# Host-speed fields differ between any two executions.
HOST_FIELDS = {
    "points_per_second",
    "check_host_seconds",
    "sim_host_seconds",
    "history_pass_host_seconds",
    "point_host_seconds",
}


def _cli(exe, *args) -> tuple[int, dict]:
    out = subprocess.run(
        [str(exe), "crashtest", *args, "--json", "-"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return out.returncode, json.loads(out.stdout)


def _strip(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in HOST_FIELDS}


@pytest.mark.parametrize("workload", ["vector", "btree"])
def test_crashtest_matches_cli(cli_binary, workload):
    py = durasim.crashtest("ideal", workload, threads=2, tx=40, seed=3, points=25)
    code, cli = _cli(
        cli_binary,
        "--scheme",
        "ideal",
        "--workload",
        workload,
        "--threads",
        "2",
        "--tx",
        "40",
        "--seed",
        "3",
        "--points",
        "25",
    )
    assert _strip(py) == _strip(cli)
    # The native system is the oracle's negative control: it must fail.
    assert code == 1 and py["violations"] > 0
    replay = py["first_violation"]["replay"]
    assert replay.startswith("durasim crashtest --scheme ideal")


def test_replay_reproduces_the_violation():
    first = durasim.crashtest("ideal", "vector", tx=40, points="all")["first_violation"]
    point = first["crash_point"]
    again = durasim.crashtest("ideal", "vector", tx=40, crash_at=point)
    assert again["crash_points_tested"] == 1 and again["violations"] == 1


def test_crashtest_is_deterministic():
    a = durasim.crashtest("ideal", "hashmap", tx=30, points=10, seed=5, torn=True)
    b = durasim.crashtest("ideal", "hashmap", tx=30, points=10, seed=5, torn=True)
    assert _strip(a) == _strip(b)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"points": 0}, "points"),
        ({"points": "some"}, "points"),
        ({"points": 1.5}, "points"),
        ({"tear_mask": 300, "crash_at": 1}, "tear-mask"),
        ({"tear_mask": 3}, "without 'crash_at'"),
        ({"recovery_crashes": "many"}, "recovery-crashes"),
        ({"torn": "yes"}, "torn"),
        ({"scheme": "nope"}, "valid schemes"),
        ({"threads": 0}, "threads"),
        ({"hoop__nothing": 1}, "hoop.nothing"),
    ],
)
def test_crashtest_bad_arguments(kwargs, needle):
    args = {"scheme": "ideal", "workload": "vector", "tx": 10}
    args.update(kwargs)
    with pytest.raises(ValueError, match=needle):
        durasim.crashtest(args.pop("scheme"), args.pop("workload"), **args)


def test_declared_recovery_paths_are_reported_and_an_unreached_one_warned(capsys):
    """The document counts the crash points in each recovery path the
    scheme declares; a path no point reached is listed and warned about,
    as the CLI does."""
    doc = durasim.crashtest("opt-redo", "vector", threads=2, tx=100, points=300)
    paths = doc["recovery_paths"]
    assert set(paths) == {"checkpoint", "forced checkpoint"}
    assert paths["forced checkpoint"] == {"windows": 0, "persist_events": 0, "points_tested": 0}
    assert paths["checkpoint"]["windows"] > 0
    assert "forced checkpoint" in doc["uncovered_recovery_paths"]
    err = capsys.readouterr().err
    assert "warning: opt-redo's recovery path 'forced checkpoint' got no crash point" in err
