"""Where HOOP's headline claim holds: HOOP against LAD and Opt-Redo over
the words a transaction writes (item size) and the locality of its
updates (key distribution, hot set), on vector (the cheapest synthetic
workload; HOOP's word-granular OOP slices and GC against LAD's
line-granular staging and Opt-Redo's log). See :mod:`.._claims`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import _claims
from .._grid import P_ITEM

P_KEYS = "workload.key_dist"
P_ITEMS = "workload.initial_items"
P_UPDATES = "workload.update_ratio"
WORKLOAD = "vector"
#: Item sizes of the words axis (HOOP §IV-A: 64 B and 1 KB items).
ITEMS = [64, 256, 1024]
#: Transactions per item size, relative to the 64 B run: as many simulated
#: cycles as it, so every point holds as many GC periods. Measured on
#: vector, configs/hoop.toml, 8 threads, with LAD, the sweep's fastest
#: scheme: 20,013 / 9,893 / 3,024 tx per Mcycle at 64 B / 256 B / 1 KB.
ITEM_TX_SCALE = {64: 1.0, 256: 0.49, 1024: 0.15}
#: The hot set of the locality axis: 64 items per thread, updates only
#: (the setting under which HOOP's GC coalesces most, docs/model/workloads.md).
HOT_ITEMS = 64


def _base(sc: dict[str, Any], scheme: str) -> dict[str, Any]:
    return {
        "scheme": scheme,
        "workload": WORKLOAD,
        "threads": sc["threads"],
        "tx": sc["claim"]["tx"],
        "seed": sc["seed"],
        P_ITEM: 64,
    }


def _words(sc: dict[str, Any]) -> list[_claims.Point]:
    return [
        _claims.Point(f"{b} B items", {P_ITEM: b}, x=b / 8 + 0.5, tx_scale=ITEM_TX_SCALE[b])
        for b in ITEMS
    ]


def _locality(sc: dict[str, Any]) -> list[_claims.Point]:
    return [
        _claims.Point("uniform keys", {}),
        _claims.Point("Zipfian 0.99", {P_KEYS: "zipfian"}),
        # A hot set stays in the caches (LAD: 59,955 against 20,013 tx per
        # Mcycle with uniform keys): 3x the transactions keep as many GC
        # periods inside its window.
        _claims.Point(
            f"hot set {HOT_ITEMS} items, updates only",
            {P_ITEMS: HOT_ITEMS, P_UPDATES: 1.0},
            tx_scale=3.0,
        ),
    ]


def _notes(runs: pd.DataFrame) -> list[str]:
    out = []
    if "window_cycles" in runs.columns:
        periods = runs["window_cycles"].astype(float) / 25e6
        out.append(
            f"10 ms GC periods in the runs' measured windows: {periods.min():.2f}–"
            f"{periods.max():.2f} (each point sized for at least 2 in the fastest scheme's "
            "window, as the grid runs)"
        )
    return out


CLAIM = _claims.Claim(
    claim=(
        "HOOP abstract: 'improves application performance by up to 1.7×, while reducing "
        "the write amplification by up to 2.1×' against the state of the art (§IV-A: "
        "Opt-Redo, Opt-Undo, OSP, LSM, LAD)"
    ),
    scheme="hoop",
    rivals=("lad", "opt-redo"),
    metrics=(
        _claims.Metric("throughput_tx_per_mcycle", "throughput", True),
        _claims.Metric("write_bytes_per_tx", "NVM bytes written per tx", False),
    ),
    axes=(
        _claims.Axis(
            "words",
            "words stored per transaction (measured) and item size",
            _words,
            x_metric="program_stores_per_tx",
            show=("words_per_written_line", "stat.gc_data_reduction_ratio"),
        ),
        _claims.Axis(
            "locality",
            "update locality (64 B items)",
            _locality,
            show=(
                "stat.gc_data_reduction_ratio",
                "stat.gc_runs_periodic",
                "stat.gc_runs_on_demand",
            ),
        ),
    ),
    base=_base,
    what=(
        f"{WORKLOAD}, 8 threads at the default scale (configs as the grid's); item size 64 B "
        "to 1 KB (fewer transactions for larger items: each run stores about as many words), "
        "and uniform keys / Zipfian / a hot set of 64 items per thread with updates only"
    ),
    labels={"hoop": "HOOP", "lad": "LAD", "opt-redo": "Opt-Redo"},
    notes=_notes,
)

EXPERIMENT = _claims.experiment(
    CLAIM,
    "claim",
    "l",
    "Where HOOP's claim holds: vs LAD and Opt-Redo over words per transaction and locality",
)
