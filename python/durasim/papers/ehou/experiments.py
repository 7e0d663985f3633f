"""What the EHOU paper's evaluation (papers/ehou.md §IV) runs: scales,
plans, analyses and the experiment table. Every run uses
``configs/ehou.toml`` (the paper's Table I) unless another preset is given.

Experiments:

- ``overhead``: PM write overhead (every PM write not issued by the CPU:
  AIT flushes and overflow log for EHOU, consolidations and journaling for
  SSP, log and application for REDU; ``pm_write_overhead_bytes``) per
  measured transaction, EHOU relative to SSP (``osp``), without each
  scheme's end-of-run work (``pm_write_overhead_bytes_end_of_run``) so the
  steady states compare like for like; the totals are in the CSV.
- ``throughput``: throughput of SSP and EHOU relative to REDU per workload.
- ``persist``: EHOU with eager vs lazy persisting of committed AIT entries.
- ``ait_cache``: EHOU throughput vs AIT-cache size (sets x 16 ways).

Workloads (§IV-A): Array, Hash Table, Hash Map, B+Tree (``btree``), B-tree
and RB-tree with Zipfian keys (``workload.key_dist=zipfian``), TATP, TPC-C;
four cores (``threads``), each running its own copy (``workload.copies``
is the per-thread count: the paper's "four copies at the same time" on
four cores is one copy per thread, docs/MODEL.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ... import _core
from .._base import CONFIGS, Avail, Experiment, Plan, Setup, missing

SCHEMES = ["redu", "osp", "ehou"]
#: (label, workload, extra parameters): §IV-A's workload list.
WORKLOADS: list[tuple[str, str, dict[str, Any]]] = [
    ("array", "array", {}),
    ("hashtable", "hashtable", {}),
    ("hashmap", "hashmap", {}),
    ("btree", "btree", {}),
    ("btree-zipf", "btree", {"workload.key_dist": "zipfian"}),
    ("rbtree-zipf", "rbtree", {"workload.key_dist": "zipfian"}),
    ("tatp", "tatp", {}),
    ("tpcc", "tpcc", {}),
]
P_PERSIST = "ehou.persist"
P_SETS = "dimm.ait_cache_sets"
P_COPIES = "workload.copies"
#: EHOU Table I: the AIT cache has 8192 sets x 16 ways.
TABLE_I_SETS = 8192
STAT_OVERHEAD = "stat.pm_write_overhead_bytes"
#: The share of it written at the end of the run (each scheme's ``finish``).
STAT_OVERHEAD_END = "stat.pm_write_overhead_bytes_end_of_run"
STATS_PERSIST = [
    "stat.ait_flushes_eager",
    "stat.ait_flushes_lazy_evict",
    "stat.ait_flushes_lazy_overwrite",
    "stat.overflow_log_entries",
]
#: configs/ehou.toml in the source tree.
DEFAULT_PRESET = CONFIGS / "ehou.toml"

#: Run sizes. ``small``: minutes on 2 cores; ``paper``: long runs for a
#: cluster (the paper states no run length); ``tiny``: smoke tests.
SCALES: dict[str, dict[str, Any]] = {
    "tiny": {
        "threads": 4,
        "tx": 40,
        "seeds": [1],
        "copies": 1,
        "workloads": ["array", "hashtable", "btree-zipf", "tatp"],
        "ait_sets": [1024, 8192],
        "ait_workloads": ["hashtable"],
    },
    "small": {
        "threads": 4,
        "tx": 10_000,
        "seeds": [1, 2, 3],
        "copies": 1,
        "workloads": [w[0] for w in WORKLOADS],
        "ait_sets": [256, 1024, 4096, 8192],
        "ait_workloads": [w[0] for w in WORKLOADS],
    },
    "paper": {
        "threads": 4,
        "tx": 100_000,
        "seeds": [1, 2, 3, 4, 5],
        "copies": 1,
        "workloads": [w[0] for w in WORKLOADS],
        "ait_sets": [128, 256, 512, 1024, 2048, 4096, 8192, 16384],
        "ait_workloads": [w[0] for w in WORKLOADS],
    },
}


def _workloads(sc: dict[str, Any], names: Sequence[str], av: Avail, plan: Plan):
    table = {w[0]: w for w in WORKLOADS}
    wanted = [table[n] for n in names]
    _, ok_w, _ = av.filter(plan, [], sorted({w[1] for w in wanted}))
    return [w for w in wanted if w[1] in ok_w]


def _spec(
    sc: dict[str, Any], scheme: str, w: tuple[str, str, dict[str, Any]], seed: int
) -> dict[str, Any]:
    return {
        "scheme": scheme,
        "workload": w[1],
        "threads": sc["threads"],
        "tx": sc["tx"],
        "seed": seed,
        P_COPIES: sc["copies"],
        **w[2],
    }


def plan_grid(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, _, _ = av.filter(plan, SCHEMES, [])
    for w in _workloads(sc, sc["workloads"], av, plan):
        for seed in sc["seeds"]:
            for s in schemes:
                plan.specs.append(_spec(sc, s, w, seed))
    return plan


def plan_persist(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, _, ok = av.filter(plan, ["ehou"], [], [P_PERSIST])
    if not ok:
        return plan
    for w in _workloads(sc, sc["workloads"], av, plan):
        for seed in sc["seeds"]:
            for s in schemes:
                for mode in ("lazy", "eager"):
                    plan.specs.append({**_spec(sc, s, w, seed), P_PERSIST: mode})
    return plan


def plan_ait(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, _, ok = av.filter(plan, ["ehou"], [], [P_SETS])
    if not ok:
        return plan
    for w in _workloads(sc, sc["ait_workloads"], av, plan):
        for seed in sc["seeds"]:
            for s in schemes:
                for sets in sc["ait_sets"]:
                    plan.specs.append({**_spec(sc, s, w, seed), P_SETS: sets})
    return plan


# ---------------------------------------------------------------------------
# Analyses.


def _labels(raw: pd.DataFrame) -> pd.DataFrame:
    df = raw.copy()
    dist = df.get("workload.key_dist")
    labels = []
    for i, r in df.iterrows():
        zipf = dist is not None and not missing(dist[i]) and dist[i] == "zipfian"
        labels.append(f"{r['workload']}-zipf" if zipf else str(r["workload"]))
    df["config_label"] = labels
    return df


def _per_tx(df: pd.DataFrame, col: str) -> pd.Series:
    tx = df["measured_tx"] if "measured_tx" in df else df["committed_tx"]
    return df[col] / tx.clip(lower=1)


def _relative(df: pd.DataFrame, col: str, base: str, out: str, group: Sequence[str]) -> None:
    """``out`` = ``col`` / the ``base`` scheme's value in the same group."""
    ref = df[df["scheme"] == base].set_index(list(group))[col]
    keys = list(zip(*(df[g] for g in group))) if len(group) > 1 else list(df[group[0]])
    vals = []
    for v, k in zip(df[col], keys):
        r = ref.get(k, float("nan"))
        vals.append(v / r if not missing(r) and r else float("nan"))
    df[out] = vals


def _relative_to(df: pd.DataFrame, mask: pd.Series, out: str) -> None:
    """``out`` = throughput / the throughput of the ``mask`` row with the
    same ``config_label`` and seed (paired runs)."""
    col = "throughput_tx_per_mcycle"
    ref = df[mask].set_index(["config_label", "seed"])[col]
    keys = zip(df["config_label"], df["seed"])
    df[out] = [v / ref.get(k, float("nan")) for v, k in zip(df[col], keys)]


def an_overhead(raw: pd.DataFrame) -> pd.DataFrame:
    """Figure (a) compares steady-state overheads: each scheme's end-of-run
    work (EHOU's AIT flush and lines brought home, SSP's final
    consolidations, REDU's final log application) is run-length dependent,
    so ``norm_overhead`` leaves it out; ``norm_overhead_total`` keeps it."""
    df = _labels(raw)
    if len(df) and STAT_OVERHEAD in df.columns:
        df["overhead_bytes_per_tx"] = _per_tx(df, STAT_OVERHEAD)
        _steady(df)
        group = ["config_label", "seed"]
        _relative(df, "overhead_bytes_per_tx", "osp", "norm_overhead_total", group)
        _relative(df, "steady_overhead_bytes_per_tx", "osp", "norm_overhead", group)
    else:
        for c in ["overhead_bytes_per_tx", "steady_overhead_bytes_per_tx"]:
            df[c] = float("nan")
        df["norm_overhead"] = float("nan")
        df["norm_overhead_total"] = float("nan")
    df.attrs["normalization"] = (
        "PM write overhead bytes per tx without end-of-run work / SSP's (osp), same workload"
    )
    df.attrs["stat_keys"] = {
        "overhead_bytes_per_tx": STAT_OVERHEAD + " / measured_tx",
        "steady_overhead_bytes_per_tx": f"({STAT_OVERHEAD} - {STAT_OVERHEAD_END}) / measured_tx",
    }
    if len(df) and df["overhead_bytes_per_tx"].notna().any():
        notes = df.attrs.setdefault("notes", [])
        notes.append(
            "steady-state PM write overhead B/tx: "
            + _ranges(df, "steady_overhead_bytes_per_tx", "scheme")
            + " (REDU's is in the CSV; the paper compares EHOU with SSP only)"
        )
        shares = []
        for k, part in df.groupby("scheme", sort=False):
            share = 1 - part["steady_overhead_bytes_per_tx"] / part["overhead_bytes_per_tx"]
            if share.notna().any():
                shares.append(f"{k} {share.min():.1%}–{share.max():.1%}")
        if shares:
            notes.append(
                "share written at the end of the run (left out of the ratio; with it: "
                "column norm_overhead_total): " + ", ".join(shares)
            )
    return df


def _steady(df: pd.DataFrame) -> None:
    """``steady_overhead_bytes_per_tx``: the overhead without end-of-run
    work (EHOU, SSP and REDU report it)."""
    if STAT_OVERHEAD_END in df.columns:
        df["steady_overhead_bytes_per_tx"] = (df[STAT_OVERHEAD] - df[STAT_OVERHEAD_END]) / (
            df["measured_tx"] if "measured_tx" in df else df["committed_tx"]
        ).clip(lower=1)
    else:
        df["steady_overhead_bytes_per_tx"] = float("nan")


def _ranges(df: pd.DataFrame, col: str, by: str) -> str:
    """'a 1–2, b 3–4' over the groups of ``by`` (the notes under a figure)."""
    parts = []
    for k, part in df.groupby(by, sort=False):
        lo, hi = part[col].min(), part[col].max()
        parts.append(f"{k} {lo:.3g}" if lo == hi else f"{k} {lo:.3g}–{hi:.3g}")
    return ", ".join(parts)


def an_throughput(raw: pd.DataFrame) -> pd.DataFrame:
    df = _labels(raw)
    if len(df):
        _relative(
            df, "throughput_tx_per_mcycle", "redu", "norm_throughput", ["config_label", "seed"]
        )
    else:
        df["norm_throughput"] = []
    df.attrs["normalization"] = "throughput / REDU throughput, same workload"
    if len(df) and "threads" in df.columns:
        df.attrs.setdefault("notes", []).append(
            f"{int(df['threads'].iloc[0])} threads, one workload copy each (the paper's four "
            "copies on four cores); throughput in tx per million cycles is in the CSV"
        )
    return df


def an_persist(raw: pd.DataFrame) -> pd.DataFrame:
    df = _labels(raw)
    if len(df):
        df["variant"] = "ehou-" + df[P_PERSIST].astype(str)
        _relative_to(df, df[P_PERSIST] == "lazy", "norm_throughput")
        for c in [*STATS_PERSIST, STAT_OVERHEAD]:
            if c in df.columns:
                df[c.replace("stat.", "") + "_per_tx"] = _per_tx(df, c)
        if "pm_write_overhead_bytes_per_tx" in df.columns:
            _steady(df)
            note = "PM write overhead B/tx: " + _ranges(
                df, "pm_write_overhead_bytes_per_tx", "variant"
            )
            if df["steady_overhead_bytes_per_tx"].notna().any():
                note += "; without end-of-run work: " + _ranges(
                    df, "steady_overhead_bytes_per_tx", "variant"
                )
            df.attrs.setdefault("notes", []).append(note)
    else:
        df["variant"], df["norm_throughput"] = [], []
    df.attrs["normalization"] = "throughput / lazy persisting (EHOU) throughput, same workload"
    return df


def an_ait(raw: pd.DataFrame) -> pd.DataFrame:
    df = _labels(raw)
    if len(df):
        df["ait_cache_entries"] = df[P_SETS] * 16
        # Table I's 8192 sets when swept, else the largest cache.
        ref_sets = TABLE_I_SETS if TABLE_I_SETS in set(df[P_SETS]) else max(df[P_SETS])
        _relative_to(df, df[P_SETS] == ref_sets, "norm_throughput")
        for c in (
            "stat.ait_cache_misses",
            "stat.overflow_log_entries",
            "stat.ait_flushes_lazy_evict",
        ):
            if c in df.columns:
                df[c.replace("stat.", "") + "_per_tx"] = _per_tx(df, c)
        if "ait_cache_misses_per_tx" in df.columns:
            df.attrs.setdefault("notes", []).append(
                "AIT-cache misses per tx: "
                + _ranges(df, "ait_cache_misses_per_tx", "ait_cache_entries")
                + " (by entries); committed entries flushed on eviction per tx: "
                + _ranges(df, "ait_flushes_lazy_evict_per_tx", "ait_cache_entries")
                + "; overflow-log entries per tx: "
                + _ranges(df, "overflow_log_entries_per_tx", "ait_cache_entries")
            )
        df.attrs["normalization"] = (
            f"throughput / throughput at {P_SETS}={ref_sets} (x 16 ways), same workload"
        )
    else:
        df["norm_throughput"] = []
        df.attrs["normalization"] = "throughput / throughput at Table I's AIT cache"
    return df


EXPERIMENTS: dict[str, Experiment] = {
    e.id: e
    for e in [
        Experiment("overhead", "a", "PM write overhead, EHOU vs SSP", plan_grid, an_overhead),
        Experiment(
            "throughput",
            "b",
            "Throughput of SSP and EHOU relative to REDU",
            plan_grid,
            an_throughput,
        ),
        Experiment("persist", "c", "EHOU eager vs lazy persisting", plan_persist, an_persist),
        Experiment("ait_cache", "d", "EHOU throughput vs AIT-cache size", plan_ait, an_ait),
    ]
}


def setup(sc: dict[str, Any], preset: str | os.PathLike[str] | None) -> Setup:
    """Every run on ``preset`` (default: configs/ehou.toml, Table I) under
    what the experiment sets."""
    path = preset if preset is not None else DEFAULT_PRESET
    if preset is None and not Path(path).exists():
        raise ValueError(
            f"configs/ehou.toml not found at {path}; pass --config PATH (the EHOU preset)"
        )
    base = _core.load_preset(path)
    shown = {"preset": {"path": str(path), "values": base}}
    return Setup(merge=lambda s: {**base, **s}, extra=shown)


def cite(e: Experiment) -> str:
    return f"EHOU §IV ({e.item})"


def empty_runs() -> pd.DataFrame:
    """The rows of an experiment with no runs."""
    return pd.DataFrame(
        {c: pd.Series(dtype="object") for c in ("scheme", "workload", "config_label")}
    )
