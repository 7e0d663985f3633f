"""Where dual-page checkpointing's headline claim holds: dpc against
copy-on-write checkpointing (ckpt-cow) and ThyNVM over the two parameters
the comparison turns on: the epoch length (how many writes a checkpoint
covers: CoW copies whole pages per epoch, ThyNVM switches pages between
block and page remapping) and the size of the remapping table (dpc's
derivative pool = DPT entries, ThyNVM's BTT the same size as in §5.1.2
with its PTT twice that; CoW's mapping table is unbounded, so its runs
do not change along that axis). Run on the scale's first sweep workload,
so the points share their runs with the interval and pool experiments.
See :mod:`.._claims`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import _claims
from .spec import P_EPOCH, P_POOL, _spec

P_BTT = "thynvm.btt_entries"
P_PTT = "thynvm.ptt_entries"
PAGE = 4096
MB = 1024 * 1024


def _base(sc: dict[str, Any], scheme: str) -> dict[str, Any]:
    # The experiments' own spec (machine of the scale, the workload's size).
    return _spec(sc, scheme, sc["sweep_workloads"][0])


def _epochs(sc: dict[str, Any]) -> list[_claims.Point]:
    return [
        _claims.Point(f"{p / 1e6:g} M", {P_EPOCH: c}, x=c / 1e6)
        for c, p in zip(sc.get("intervals", []), sc.get("paper_intervals", []))
    ]


def _tables(sc: dict[str, Any]) -> list[_claims.Point]:
    out = []
    for b, p in zip(sc.get("pool_sweep_bytes", []), sc.get("paper_pool_sweep_bytes", [])):
        pages = b // PAGE
        out.append(
            _claims.Point(
                f"{p // MB} MB pool",
                x=pages,
                by_scheme={"dpc": {P_POOL: b}, "thynvm": {P_BTT: pages, P_PTT: 2 * pages}},
            )
        )
    return out


def _notes(runs: pd.DataFrame) -> list[str]:
    out = []
    if "stat.checkpoints" in runs.columns:
        c = pd.to_numeric(runs["stat.checkpoints"], errors="coerce")
        out.append(f"checkpoints per run: {c.min():g}–{c.max():g}")
    return out


CLAIM = _claims.Claim(
    claim=(
        "dual-page checkpointing abstract: '34% less NVM wear-out and 1.28× higher "
        "throughput than state-of-the-art hardware checkpointing solutions' (§5.2: CoW, "
        "ThyNVM, Logging, PageOverlay)"
    ),
    scheme="dpc",
    rivals=("ckpt-cow", "thynvm"),
    metrics=(
        _claims.Metric("execution_time_ns", "execution time", False),
        _claims.Metric("nvm_bytes_written", "NVM bytes written", False),
    ),
    axes=(
        _claims.Axis(
            "epoch",
            "checkpoint interval (M cycles at this scale; labels: at paper scale)",
            _epochs,
            show=("stat.checkpoints",),
        ),
        _claims.Axis(
            "table",
            "table entries at this scale (DPT = pool pages = ThyNVM BTT; labels: at paper scale)",
            _tables,
            show=("stat.checkpoints", "stat.forced_checkpoints"),
        ),
    ),
    base=_base,
    what=(
        "the scale's first sweep workload on configs/dpc.toml at the scale's machine; "
        "advantage in execution time is the rival's time / dpc's (a speed-up), in NVM "
        "writes the rival's bytes / dpc's (1.52× = 34% less wear)"
    ),
    labels={"dpc": "DPC", "ckpt-cow": "CoW", "thynvm": "ThyNVM"},
    notes=_notes,
)

EXPERIMENT = _claims.experiment(
    CLAIM,
    "claim",
    "i",
    "Where DPC's claim holds: vs CoW and ThyNVM over epoch length and table size",
    section="abstract, §5.2, §5.5, §5.6",
)
