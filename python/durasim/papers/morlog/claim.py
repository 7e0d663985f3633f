"""Where MorLog's headline claim holds: MorLog-SLDE against FWB-CRADE (the
paper's state of the art) and FWB-SLDE (the same encoder without morphable
logging) over the two inputs its two mechanisms feed on: repeated stores
in a transaction (morphable logging: only the first update of a word logs
its undo) and the compressibility of the stored values (selective log
data encoding). See :mod:`.._claims`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import _claims

P_VALUES = "workload.values"
P_BATCH = "workload.echo_batch"
#: Compressibility axis: a micro-benchmark whose shape stores each word once.
VALUES_WORKLOAD = "hashmap"
#: Repeated-store axis: Echo, whose heap cursor and key count are stored once
#: per put of a batch (docs/model/workloads.md "Repeated stores"); one put
#: per transaction stores each word once.
BATCHES = [1, 8, 32]
#: Echo's transactions per hashmap transaction, per batch size, so each
#: point holds at least three force-write-back periods: measured with the
#: fastest design at 1, 8 and 32 puts, 7,147 / 1,135 / 296 tx per Mcycle,
#: against 8,191-11,683 on hashmap.
ECHO_TX_SCALE = {1: 0.6, 8: 0.1, 32: 0.026}


def _base(sc: dict[str, Any], scheme: str) -> dict[str, Any]:
    return {
        "scheme": scheme,
        "workload": VALUES_WORKLOAD,
        "threads": sc["micro_threads"],
        "tx": sc["claim"]["tx"],
        "seed": sc["seed"],
    }


def _values(sc: dict[str, Any]) -> list[_claims.Point]:
    at = {"workload": VALUES_WORKLOAD, "threads": sc.get("micro_threads")}
    return [
        _claims.Point(label, {**at, P_VALUES: v})
        for label, v in (
            ("zero words", "zero"),
            ("realistic (MorLog Table II mix)", "realistic"),
            ("random 64-bit words", "random"),
        )
    ]


def _repeats(sc: dict[str, Any]) -> list[_claims.Point]:
    at = {"workload": "echo", "threads": sc.get("macro_threads")}
    return [
        _claims.Point(
            f"{b} put{'s' if b > 1 else ''}/tx",
            {**at, P_BATCH: b},
            tx_scale=ECHO_TX_SCALE[b],
        )
        for b in BATCHES
    ]


def _notes(runs: pd.DataFrame) -> list[str]:
    if "window_cycles" not in runs.columns:
        return []
    periods = runs["window_cycles"].astype(float) / 3e6
    return [
        f"3 M-cycle force-write-back periods in the runs' windows: {periods.min():.1f}–"
        f"{periods.max():.1f} (each point sized to hold at least 3, as the grid runs: a "
        "design reclaims its log after two passes)"
    ]


CLAIM = _claims.Claim(
    claim=(
        "MorLog abstract: 'MorLog improves performance by 72.5%, reduces NVMM write "
        "traffic by 41.1% ... compared with the state-of-the-art design' (FWB-CRADE, §VI-A)"
    ),
    scheme="morlog-slde",
    rivals=("fwb-crade", "fwb-slde"),
    metrics=(
        _claims.Metric("throughput_tx_per_mcycle", "throughput", True),
        _claims.Metric("write_bytes_per_tx", "NVM bytes written per tx", False),
    ),
    axes=(
        _claims.Axis(
            "repeats",
            "repeated-store share (measured; Echo puts per transaction)",
            _repeats,
            x_metric="repeated_store_share",
            show=("repeated_store_share", "stat.redo_entries_created"),
        ),
        _claims.Axis(
            "values",
            f"stored values ({VALUES_WORKLOAD}; DLDC ratio of written lines in the table)",
            _values,
            show=("written_line_compression_ratio_dldc", "written_line_compression_ratio_fpc"),
        ),
    ),
    base=_base,
    what=(
        "configs/morlog.toml; Echo (4 threads) with 1, 8 or 32 puts per transaction (as many "
        f"puts per run), {VALUES_WORKLOAD} (8 threads, 64 B items) with zero, realistic or "
        "random values"
    ),
    labels={"morlog-slde": "MorLog-SLDE", "fwb-crade": "FWB-CRADE", "fwb-slde": "FWB-SLDE"},
    notes=_notes,
)

EXPERIMENT = _claims.experiment(
    CLAIM,
    "claim",
    "l",
    "Where MorLog's claim holds: vs FWB over repeated stores and value compressibility",
)
