"""The scheme x workload (item size) grid that HOOP's and MorLog's analyses
share: a run's row label, the scheme statistic an analysis reads, the
normalization to a baseline scheme, and the rows of an experiment with no
runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ._base import missing

#: The item size of a synthetic workload or YCSB (TPC-C rows have fixed layouts).
P_ITEM = "workload.item_bytes"
KB = 1024

#: The columns of an experiment's rows when it has no runs: the spec, the
#: metrics the grid analyses read, and the parameters HOOP's experiments set.
EMPTY_COLUMNS = [
    "scheme",
    "workload",
    "threads",
    "tx",
    "seed",
    "config",
    "committed_tx",
    "measured_tx",
    "sim_cycles",
    "throughput_tx_per_mcycle",
    "critical_path_cycles_mean",
    "nvm_bytes_written",
    "final_drain_bytes_written",
    "write_bytes_per_tx",
    "energy_nj",
    "llc_miss_ratio",
    "error",
    P_ITEM,
    "hoop.gc_period_ms",
    "hoop.mapping_table_bytes",
    "nvm.array_read_ns",
    "nvm.array_write_ns",
    "hoop.recovery_threads",
    "hoop.recovery_bandwidth_gbps",
]


def empty_runs() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in EMPTY_COLUMNS})


def stat_column(df: pd.DataFrame, needles: Sequence[str]) -> str | None:
    """First ``stat.*`` column whose name contains every needle."""
    for c in sorted(df.columns):
        if c.startswith("stat.") and all(n in c for n in needles):
            return c
    return None


def _label(row: pd.Series) -> str:
    item = row.get(P_ITEM)
    if item is None or (isinstance(item, float) and math.isnan(item)):
        return str(row["workload"])
    item = int(item)
    size = f"{item // KB}KB" if item % KB == 0 else f"{item}B"
    return f"{row['workload']}-{size}"


def with_labels(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with ``config_label``: the workload and its item size (``btree-64B``)."""
    df = df.copy()
    if P_ITEM not in df.columns:
        df[P_ITEM] = None
    df["config_label"] = [_label(r) for _, r in df.iterrows()] if len(df) else []
    return df


def normalize(
    df: pd.DataFrame, col: str, baselines: Sequence[str], group: Sequence[str], out: str
) -> str | None:
    """Divide ``col`` by the first available baseline scheme's value in the
    same ``group``; returns the baseline used (None if none was run)."""
    present = set(df["scheme"]) if len(df) else set()
    base = next((b for b in baselines if b in present), None)
    if base is None:
        df[out] = float("nan")
        return None
    ref = df[df["scheme"] == base].set_index(list(group))[col]
    keys = list(zip(*(df[g] for g in group))) if len(group) > 1 else list(df[group[0]])
    df[out] = [
        v / ref.get(k, float("nan")) if ref.get(k, 0) else float("nan")
        for v, k in zip(df[col], keys)
    ]
    # Groups whose baseline is 0 or missing cannot be normalized; the figure
    # says so on its face instead of dropping them silently.
    bad = {}
    for k in dict.fromkeys(keys):
        r = ref.get(k, float("nan"))
        if missing(r):
            bad[k] = f"no {base} run"
        elif r == 0:
            bad[k] = f"{base} {col} = 0"
    if bad:
        df.attrs.setdefault("not_normalizable", {}).update(
            {str(k if len(group) == 1 else " ".join(map(str, k))): v for k, v in bad.items()}
        )
    return base
