"""Shared fixtures: the CLI binary (built with cargo) and fake experiment data."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

from durasim import _core
from durasim.papers import hoop
from durasim.papers._base import Avail
from durasim.papers.hoop import experiments as hoop_exp
from durasim.sweep import result_row

ROOT = Path(__file__).resolve().parents[2]

# Property tests assert properties, not speed: a loaded 2-core host must not
# fail them on hypothesis's per-example deadline.
settings.register_profile("durasim", deadline=None)
settings.load_profile("durasim")


@pytest.fixture(scope="session")
def cli_binary() -> Path:
    """`durasim` CLI built from this checkout with the test profile (same
    results as release; optimized, and the binary `cargo test` already built
    for the Rust tests, so after them this is no rebuild)."""
    subprocess.run(
        ["cargo", "build", "-q", "--profile", "test", "-p", "durasim", "--bin", "durasim"],
        cwd=ROOT,
        check=True,
        timeout=1800,
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "debug" / "durasim"
    assert exe.exists(), exe
    return exe


class FullAvail(Avail):
    """Pretend every scheme, workload and parameter the paper needs exists."""

    def __init__(self) -> None:
        self.schemes = set(hoop_exp.SCHEMES)
        self.workloads = set(hoop_exp.WORKLOADS)
        self.params = set(_core.params()) | {
            hoop_exp.P_GC_PERIOD,
            hoop_exp.P_MAPPING,
            hoop_exp.P_REC_THREADS,
            hoop_exp.P_REC_BW,
        }


def fake_report(spec: dict) -> dict:
    """A deterministic stand-in for a run's JSON (for figure/report tests)."""
    h = sum(ord(c) for c in repr(sorted(spec.items()))) % 97
    tx = spec.get("tx", 10_000)
    return {
        "metrics": {
            "committed_tx": tx,
            "sim_cycles": 1_000_000 + h * 1000,
            "throughput_tx_per_mcycle": 100.0 + h,
            "critical_path_cycles_mean": 500.0 + h,
            "nvm_bytes_written": 64 * tx + h,
            "final_drain_bytes_written": 640,
            "write_bytes_per_tx": 64.0 + h / 10,
            "energy_nj": 1000.0 + h,
            "llc_miss_ratio": 0.1 + h / 1000,
        },
        "scheme_stats": {
            "gc_data_reduction_ratio": 0.5 + h / 500,
            "recovery_modeled_ns_at_run_end": 1e6 * (1 + h),
            "recovery_live_oop_bytes_at_run_end": 1 << 20,
            "loads_per_llc_miss": 1.2,
            "parallel_read_fraction": 0.2,
        },
        "sim": {"host_seconds": 0.1},
    }


def fake_frames(scale: str = "tiny") -> dict:
    """Every experiment's analysed frame, from fake runs of its full plan."""
    sc = hoop.PAPER.scale_settings(scale)
    out = {}
    for eid, e in hoop_exp.EXPERIMENTS.items():
        plan = e.plan(sc, FullAvail())
        rows = [result_row(s, fake_report(s)) for s in plan.specs]
        import pandas as pd

        raw = pd.DataFrame(rows)
        raw.attrs["plan_meta"] = dict(plan.meta)
        df = e.analyze(raw)
        df.attrs.pop("plan_meta", None)
        df.attrs.update(
            {
                "experiment": eid,
                "paper_item": f"HOOP §IV ({e.item})",
                "title": e.title,
                "runs": len(rows),
                "skipped": plan.skipped,
            }
        )
        out[eid] = df
    return out
