"""What the MorLog paper's evaluation (papers/morlog.md §VI) runs: scales,
plans, analyses and the experiment table.

The six designs of §VI-A are named presets of durasim (``durasim list
schemes``); :data:`DESIGNS` is the one list every experiment takes them
from. Every run uses the paper's system (Table III), ``configs/morlog.toml``,
unless another preset is given; what an experiment sweeps wins over it.

Scales: ``small`` (minutes on 2 cores; the default), ``paper`` (§VI-A's
sizes: 100K transactions, eight threads for the micro-benchmarks and four
for the macro-benchmarks; meant for a cluster) and ``tiny`` (smoke tests).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ... import _core
from .. import _characterise
from .._base import CONFIGS, Avail, Experiment, Plan, Setup
from .._grid import KB, P_ITEM, normalize, stat_column, with_labels
from .._scale import Ratio, ScaleDoc, Steady
from .claim import CLAIM
from .claim import EXPERIMENT as CLAIM_EXPERIMENT

#: The paper's six designs (§VI-A) as durasim's presets, in the paper's order.
#: Every experiment takes its designs from here.
DESIGNS = [
    "fwb-crade",
    "fwb-unsafe-crade",
    "fwb-slde",
    "morlog-crade",
    "morlog-slde",
    "morlog-dp-slde",
]
#: §VI-B normalizes throughput (and we normalize every per-design figure) to FWB-CRADE.
BASELINE = "fwb-crade"
#: Table IV.
MICRO = ["btree", "hashmap", "queue", "rbtree", "sdg", "sps"]
MACRO = ["echo", "ycsb", "tpcc"]
#: §VI-A: both datasets for every benchmark except TPC-C (new-order, fixed rows).
FIXED_ITEM = {"tpcc"}

#: Sensitivity sweeps: the undo+redo and redo buffer sizes (§VI-E) are swept
#: on Echo, as the paper does for the redo buffer; threads and latency on
#: the workloads of the scale's ``sens_workloads``.
P_TLC_WRITE_NS = [f"nvm.tlc_write_ns_{s:03b}" for s in range(8)]
#: §VI-A: MorLog's buffers hold 16 undo+redo and 32 redo entries; FWB-Unsafe's
#: one buffer is as large as both together.
DEFAULT_UNDO_REDO = 16
DEFAULT_REDO = 32

#: The paper's system (Table III); found beside the package in a checkout.
DEFAULT_PRESET = CONFIGS / "morlog.toml"

#: MorLog §VI-A: force-write-back every three million cycles; Table III:
#: 3 GHz cores. A design's log space is reclaimed after two passes, so a
#: steady-state window holds at least three.
FWB_PERIOD_CYCLES = 3_000_000
MIN_FWB_PERIODS = 3
WARMUP_SHARE = 0.25  # run.warmup_tx_share default
MARGIN = 1.2
#: FWB-CRADE's throughput (tx per Mcycle) on configs/morlog.toml, 64 B
#: items, 8 threads (micro) / 4 threads (macro), short runs (4,000 / 2,000
#: transactions): the force-write-back passes of a long run only lower it,
#: so a run sized from it holds at least the periods it is sized for.
#: YCSB is the exception: its skewed keys warm the caches as it runs, and
#: its rate rises with the run's length (FWB-CRADE: 10,764 at 2,000
#: transactions, 15,409 at 20,000, 22,380 at 176,000), and the MorLog
#: designs run faster than FWB-CRADE on it, so its entry is the fastest
#: design's (MorLog-SLDE) at 328,000 transactions.
TX_PER_MCYCLE = {
    "btree": 5387,
    "hashmap": 9444,
    "queue": 18362,
    "rbtree": 3263,
    "sdg": 8100,
    "sps": 6611,
    "echo": 1168,
    "ycsb": 27888,
    "tpcc": 776,
}


def steady_tx(rate_tx_per_mcycle: float, periods: float = MIN_FWB_PERIODS) -> int:
    """Transactions for ``periods`` force-write-back periods inside the
    measured window, rounded up to 8,000."""
    cycles = periods * FWB_PERIOD_CYCLES / (1 - WARMUP_SHARE) * MARGIN
    tx = rate_tx_per_mcycle * cycles / 1e6
    return int(-(-tx // 8000) * 8000)


STEADY_TX = {w: steady_tx(r) for w, r in TX_PER_MCYCLE.items()}


def run_tx(sc: dict[str, Any], workload: str) -> int:
    return sc["tx_by_workload"].get(workload) or sc["tx"]


#: Run sizes. ``small`` (default) and ``paper`` run every workload for at
#: least MIN_FWB_PERIODS force-write-back periods in the window (``paper``:
#: and at least §VI-A's 100K transactions); ``small`` shortens the
#: datasets (64 B only) and the sweeps (fewer points, one workload).
#: ``tiny`` is a smoke test.
SCALES: dict[str, dict[str, Any]] = {
    "tiny": {
        "seed": 1,
        "micro_threads": 2,
        "macro_threads": 2,
        "tx": 100,
        "tx_by_workload": {},
        "items": [64],
        "micro": ["btree", "queue"],
        "macro": ["echo", "tpcc"],
        "undo_redo_entries": [4, 16],
        "redo_entries": [2, 32],
        "sens_threads": [1, 2],
        "sens_workloads": ["btree"],
        "sens_item": 64,
        "latency_scale": [1, 32],
        "tx_table_entries": [2, 64],
        "claim": {"tx": 100},
    },
    "small": {
        "seed": 1,
        "micro_threads": 8,
        "macro_threads": 4,
        "tx": None,
        "tx_by_workload": STEADY_TX,
        "items": [64],
        "micro": MICRO,
        "macro": MACRO,
        "undo_redo_entries": [1, 16],
        "redo_entries": [2, 32],
        "sens_threads": [1, 8],
        "sens_workloads": ["btree"],
        "sens_item": 64,
        "latency_scale": [1, 8, 32],
        "tx_table_entries": [16, 1024],
        # 3.4 force-write-back periods on hashmap for the fastest design
        # (zero values, 11,683 tx per Mcycle): every point at least three.
        "claim": {"tx": 160_000},
    },
    "paper": {
        "seed": 1,
        "micro_threads": 8,  # §VI-A
        "macro_threads": 4,  # §VI-A
        # §VI-A: every workload executes 100K transactions; more where 100K
        # hold fewer than MIN_FWB_PERIODS force-write-back periods.
        "tx": 100_000,
        "tx_by_workload": {w: max(100_000, t) for w, t in STEADY_TX.items()},
        "items": [64, 4 * KB],  # §VI-A: small (64 B) and large (4 KB) datasets
        "micro": MICRO,
        "macro": MACRO,
        "undo_redo_entries": [1, 2, 4, 8, 16, 32, 64],
        "redo_entries": [2, 4, 8, 16, 32, 64],  # §VI-E: 2..64 entries
        "sens_threads": [1, 2, 4, 8],
        "sens_workloads": MICRO,
        "sens_item": 64,
        "latency_scale": [1, 2, 4, 8, 16, 32],  # §VI-E: 1x..32x
        # §III-F gives no table size (not evaluated there): a sweep.
        "tx_table_entries": [16, 64, 256, 1024, 4096],
        "claim": {"tx": STEADY_TX["hashmap"]},
    },
}


# ---------------------------------------------------------------------------
# Which parameter sizes each design's buffers (found in the catalogue, so a
# design that lands later needs no change here).


def _scheme_params() -> dict[str, list[str]]:
    return {s["name"]: list(s.get("params", [])) for s in _core.describe()["schemes"]}


def buffer_param(
    design: str, which: str, catalogue: dict[str, list[str]] | None = None
) -> str | None:
    """The parameter sizing ``design``'s undo+redo (``which="undo_redo"``) or
    redo (``"redo"``) buffer: MorLog's ``*.undo_redo_buffer_entries`` /
    ``*.redo_buffer_entries``, FWB's single ``*.log_buffer_entries`` (its
    undo+redo buffer; FWB has no redo buffer). None if it has none."""
    keys = (catalogue if catalogue is not None else _scheme_params()).get(design, [])
    entries = [k for k in keys if k.endswith("_entries") and "buffer" in k]
    if which == "undo_redo":
        hit = [k for k in entries if "undo_redo" in k] or [k for k in entries if "log_buffer" in k]
    elif which == "redo":
        hit = [k for k in entries if "redo" in k.rsplit(".", 1)[-1] and "undo" not in k]
    else:
        raise ValueError(f"invalid buffer {which!r}: valid choices: undo_redo, redo")
    return hit[0] if hit else None


def _is_unsafe(design: str) -> bool:
    return "unsafe" in design


# ---------------------------------------------------------------------------
# Plans.


def _spec(sc: dict[str, Any], design: str, workload: str, threads: int, tx: int) -> dict:
    return {
        "scheme": design,
        "workload": workload,
        "threads": threads,
        "tx": tx,
        "seed": sc["seed"],
    }


def _items(sc: dict[str, Any], workload: str) -> list[int | None]:
    return [None] if workload in FIXED_ITEM else list(sc["items"])


def _grid(sc: dict[str, Any], av: Avail, workloads: Sequence[str], threads: int) -> Plan:
    plan = Plan()
    designs, wls, _ = av.filter(plan, DESIGNS, workloads, [P_ITEM])
    for w in wls:
        for item in _items(sc, w):
            for d in designs:
                spec = _spec(sc, d, w, threads, run_tx(sc, w))
                if item is not None:
                    spec[P_ITEM] = item
                plan.specs.append(spec)
    return plan


def plan_micro(sc: dict[str, Any], av: Avail) -> Plan:
    return _grid(sc, av, sc["micro"], sc["micro_threads"])


def plan_macro(sc: dict[str, Any], av: Avail) -> Plan:
    return _grid(sc, av, sc["macro"], sc["macro_threads"])


def plan_undo_redo_buffer(sc: dict[str, Any], av: Avail) -> Plan:
    """Every design with its undo+redo buffer (FWB: its log buffer) at each
    size; FWB-Unsafe's buffer is that size plus MorLog's redo buffer (§VI-A)."""
    plan = Plan()
    designs, wls, _ = av.filter(plan, DESIGNS, ["echo"], [P_ITEM])
    cat = getattr(av, "scheme_params", None) or _scheme_params()
    for w in wls:
        for n in sc["undo_redo_entries"]:
            for d in designs:
                key = buffer_param(d, "undo_redo", cat)
                if key is None:
                    if n == sc["undo_redo_entries"][0]:
                        plan.skipped.append(f"scheme '{d}' (no undo+redo buffer parameter)")
                    continue
                spec = _spec(sc, d, w, sc["macro_threads"], run_tx(sc, w))
                spec[P_ITEM] = sc["sens_item"]
                spec[key] = n + DEFAULT_REDO if _is_unsafe(d) else n
                spec["undo_redo_entries"] = n
                plan.specs.append(spec)
    return plan


def plan_redo_buffer(sc: dict[str, Any], av: Avail) -> Plan:
    """MorLog's redo buffer at 2..64 entries on Echo (§VI-E); FWB has no redo
    buffer, so FWB-CRADE at its defaults is the reference."""
    plan = Plan()
    designs, wls, _ = av.filter(plan, DESIGNS, ["echo"], [P_ITEM])
    cat = getattr(av, "scheme_params", None) or _scheme_params()
    for w in wls:
        if BASELINE in designs:
            spec = _spec(sc, BASELINE, w, sc["macro_threads"], run_tx(sc, w))
            spec[P_ITEM] = sc["sens_item"]
            plan.specs.append(spec)
        for d in designs:
            key = buffer_param(d, "redo", cat)
            if key is None:
                if d != BASELINE and not d.startswith("fwb"):
                    plan.skipped.append(f"scheme '{d}' (no redo buffer parameter)")
                continue
            for n in sc["redo_entries"]:
                spec = _spec(sc, d, w, sc["macro_threads"], run_tx(sc, w))
                spec[P_ITEM] = sc["sens_item"]
                spec[key] = n
                spec["redo_entries"] = n
                plan.specs.append(spec)
    if designs and not any("redo_entries" in s for s in plan.specs):
        plan.meta["note"] = "no design in this build has a redo buffer (MorLog's); FWB has none"
    return plan


def mgmt_params(design: str, catalogue: dict[str, list[str]]) -> tuple[str, str] | None:
    """``design``'s log-management and table-size parameters (MorLog's
    ``*.log_management`` / ``*.tx_table_entries``), or None."""
    keys = catalogue.get(design, [])
    mode = [k for k in keys if k.endswith(".log_management")]
    size = [k for k in keys if k.endswith(".tx_table_entries")]
    return (mode[0], size[0]) if mode and size else None


def plan_log_management(sc: dict[str, Any], av: Avail) -> Plan:
    """MorLog's two log-management options (§III-F): the force-write-back
    scan (each design's reference) and the transaction table at each size,
    on the sensitivity workloads."""
    plan = Plan()
    designs, wls, _ = av.filter(plan, DESIGNS, sc["sens_workloads"], [P_ITEM])
    cat = getattr(av, "scheme_params", None) or _scheme_params()
    for w in wls:
        for d in designs:
            keys = mgmt_params(d, cat)
            if keys is None:
                if not d.startswith("fwb"):
                    plan.skipped.append(f"scheme '{d}' (no log-management parameter)")
                continue
            mode, size = keys
            for n in [None, *sc["tx_table_entries"]]:
                spec = _spec(sc, d, w, sc["micro_threads"], run_tx(sc, w))
                spec[P_ITEM] = sc["sens_item"]
                spec[mode] = "force-write-back" if n is None else "tx-table"
                if n is not None:
                    spec[size] = n
                    spec["tx_table_entries"] = n
                plan.specs.append(spec)
    if designs and not plan.specs:
        plan.meta["note"] = "no design in this build has a log-management parameter (MorLog's)"
    return plan


def plan_threads(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    designs, wls, _ = av.filter(plan, DESIGNS, sc["sens_workloads"], [P_ITEM])
    for w in wls:
        for t in sc["sens_threads"]:
            for d in designs:
                spec = _spec(sc, d, w, t, run_tx(sc, w))
                spec[P_ITEM] = sc["sens_item"]
                plan.specs.append(spec)
    return plan


def plan_write_latency(sc: dict[str, Any], av: Avail) -> Plan:
    """Every TLC state's write latency (Table III) times 1..32 (§VI-E)."""
    plan = Plan()
    designs, wls, ok = av.filter(plan, DESIGNS, sc["sens_workloads"], [P_ITEM, *P_TLC_WRITE_NS])
    if not ok:
        return plan
    params = _core.params()
    base = {k: float(params[k]["default"]) for k in P_TLC_WRITE_NS}
    for w in wls:
        for k in sc["latency_scale"]:
            for d in designs:
                spec = _spec(sc, d, w, sc["micro_threads"], run_tx(sc, w))
                spec[P_ITEM] = sc["sens_item"]
                for key, ns in base.items():
                    spec[key] = round(ns * k, 6)
                spec["write_latency_scale"] = k
                plan.specs.append(spec)
    return plan


# ---------------------------------------------------------------------------
# Analyses.

#: Log bits as the paper counts them (§VI-C, expansion coding disabled):
#: the data-aware media's code-word bits of log-region line writes
#: (docs/model/nvm-media.md "Log bits"), flattened by durasim.sweep.
COL_LOG_BITS = "nvm_media.log_bits_written"
#: Fallback: the schemes' count before encoding (Fig. 7 record sizes).
STAT_LOG_BITS = ("log_bits",)
#: nvm_media block (README "Data-aware NVM"), flattened by durasim.sweep.
COL_CELL_ENERGY = "nvm_media.write_energy_pj_total"

#: Columns that are bookkeeping of a plan, not parameters of a run.
PLAN_COLUMNS = ("undo_redo_entries", "redo_entries", "write_latency_scale", "tx_table_entries")


def _per_tx(df: pd.DataFrame, col: str) -> pd.Series:
    tx = df["measured_tx"] if "measured_tx" in df else df["committed_tx"]
    return pd.to_numeric(df[col], errors="coerce") / tx.clip(lower=1)


def _norm(df: pd.DataFrame, col: str, group: Sequence[str], out: str, what: str) -> None:
    base = normalize(df, col, [BASELINE], group, out)
    df.attrs["normalization"] = f"{what} / {base or BASELINE + ' (not run)'}, same workload"
    df.attrs["baseline"] = base or BASELINE


def an_throughput(raw: pd.DataFrame) -> pd.DataFrame:
    df = with_labels(raw)
    _norm(df, "throughput_tx_per_mcycle", ["config_label"], "norm_throughput", "throughput")
    return df


def an_traffic(raw: pd.DataFrame) -> pd.DataFrame:
    df = with_labels(raw)
    # Steady-state NVM bytes written per measured tx (docs/model/metrics.md).
    _norm(
        df, "write_bytes_per_tx", ["config_label"], "norm_write_traffic", "NVM bytes written per tx"
    )
    return df


def an_energy(raw: pd.DataFrame) -> pd.DataFrame:
    df = with_labels(raw)
    if len(df) and COL_CELL_ENERGY in df.columns:
        # The TLC cells' programming energy (Table III per-state pJ) in the
        # measured window: what the paper's "NVMM write energy" counts.
        df["write_energy_nj_per_tx"] = _per_tx(df, COL_CELL_ENERGY) / 1000.0
    else:
        df["write_energy_nj_per_tx"] = float("nan")
        if len(df):
            df.attrs.setdefault("notes", []).append(
                f"no {COL_CELL_ENERGY} in these runs (not on the TLC device?)"
            )
    _norm(
        df,
        "write_energy_nj_per_tx",
        ["config_label"],
        "norm_write_energy",
        "NVM cell write energy per tx",
    )
    df.attrs["stat_keys"] = {"write_energy_nj_per_tx": COL_CELL_ENERGY}
    return df


def an_log_bits(raw: pd.DataFrame) -> pd.DataFrame:
    df = with_labels(raw)
    key = COL_LOG_BITS if COL_LOG_BITS in df.columns else None
    if key is None:
        key = stat_column(df, STAT_LOG_BITS)
        if key is not None and len(df):
            df.attrs.setdefault("notes", []).append(
                f"no {COL_LOG_BITS} (device not data-aware?): {key}, counted before encoding"
            )
    if key is not None:
        df["log_bits_per_tx"] = _per_tx(df, key)
        missing = sorted(set(df.loc[df[key].isna(), "scheme"])) if len(df) else []
        if missing:
            df.attrs.setdefault("notes", []).append(
                f"{key} not reported by {', '.join(missing)} in this build: no bars for them"
            )
    else:
        df["log_bits_per_tx"] = float("nan")
        if len(df):
            df.attrs.setdefault("notes", []).append(
                f"no scheme statistic containing {STAT_LOG_BITS} in these runs: "
                "no design of this build reports log bits written"
            )
    _norm(
        df,
        "log_bits_per_tx",
        ["config_label"],
        "norm_log_bits",
        "log bits written per tx (expansion coding disabled)",
    )
    # A baseline that ran but reports no such statistic is not "no run".
    bad = df.attrs.get("not_normalizable") or {}
    ran = set(df.loc[df["scheme"] == BASELINE, "config_label"]) if len(df) else set()
    for k in list(bad):
        if k in ran:
            bad[k] = f"{BASELINE} reports no log-bits statistic"
    if len(df) and df["norm_log_bits"].isna().all() and df["log_bits_per_tx"].notna().any():
        # Nothing to normalize to: show the designs that report the bits,
        # in bits, rather than an empty figure.
        df.attrs["normalization"] = (
            f"none (log bits written per tx; {BASELINE} reports no log-bits statistic)"
        )
        df.attrs.pop("not_normalizable", None)
        df.attrs["plot"] = ["log_bits_per_tx", "log bits written per tx (bits)"]
    df.attrs["stat_keys"] = {"log_bits_per_tx": key}
    return df


def _norm_same(df: pd.DataFrame, x: str, out: str, group: Sequence[str] = ()) -> str | None:
    """throughput / FWB-CRADE's at the same ``x`` (and group)."""
    g = [*group, x] if x else list(group)
    return normalize(df, "throughput_tx_per_mcycle", [BASELINE], g, out)


def _sens(raw: pd.DataFrame, x: str, what: str) -> pd.DataFrame:
    df = with_labels(raw)
    if len(df):
        df[x] = pd.to_numeric(df[x])
    base = _norm_same(df, x, "norm_throughput", ["config_label"])
    df.attrs["normalization"] = f"throughput / {base or BASELINE} throughput at the same {what}"
    df.attrs["baseline"] = base or BASELINE
    df.attrs["x"] = x
    return df


def an_undo_redo_buffer(raw: pd.DataFrame) -> pd.DataFrame:
    df = _sens(raw, "undo_redo_entries", "undo+redo buffer size")
    if len(df):
        df.attrs.setdefault("notes", []).append(
            f"FWB's one log buffer is its undo+redo buffer; FWB-Unsafe's holds the size shown "
            f"+ {DEFAULT_REDO} entries (MorLog's redo buffer, §VI-A)"
        )
    return df


def an_redo_buffer(raw: pd.DataFrame) -> pd.DataFrame:
    df = with_labels(raw)
    if len(df):
        if "redo_entries" not in df.columns:
            df["redo_entries"] = float("nan")
        df["redo_entries"] = pd.to_numeric(df["redo_entries"])
    base = normalize(
        df, "throughput_tx_per_mcycle", [BASELINE], ["config_label"], "norm_throughput"
    )
    df.attrs["normalization"] = (
        f"throughput / {base or BASELINE} throughput (its defaults; FWB has no redo buffer)"
    )
    df.attrs["baseline"] = base or BASELINE
    df.attrs["x"] = "redo_entries"
    return df


def an_log_management(raw: pd.DataFrame) -> pd.DataFrame:
    """Throughput of each MorLog design with the transaction table, over the
    same design with the force-write-back scan (same workload)."""
    df = with_labels(raw)
    if len(df):
        if "tx_table_entries" not in df.columns:
            df["tx_table_entries"] = float("nan")
        df["tx_table_entries"] = pd.to_numeric(df["tx_table_entries"])
        scan = df[df["tx_table_entries"].isna()].set_index(["scheme", "config_label"])
        ref = scan["throughput_tx_per_mcycle"]
        df["norm_throughput"] = [
            v / ref.get((s, c), float("nan")) if ref.get((s, c), 0) else float("nan")
            for v, s, c in zip(df["throughput_tx_per_mcycle"], df["scheme"], df["config_label"])
        ]
        for c in ("stat.tx_table_full_events", "stat.tx_table_occupancy_mean"):
            if c in df.columns:
                df[c] = pd.to_numeric(df[c])
        df.attrs.setdefault("notes", []).append(
            "not evaluated in the paper (§III-F describes the table, §VI-A runs the scan); "
            "the scan retires nothing in runs shorter than two 3 M-cycle passes"
        )
    df.attrs["normalization"] = "throughput / the same design with force-write-back"
    df.attrs["baseline"] = "force-write-back"
    df.attrs["x"] = "tx_table_entries"
    df.attrs["stat_keys"] = {"norm_throughput": "stat.tx_table_full_events"}
    return df


def an_threads(raw: pd.DataFrame) -> pd.DataFrame:
    return _sens(raw, "threads", "thread count")


def an_write_latency(raw: pd.DataFrame) -> pd.DataFrame:
    return _sens(raw, "write_latency_scale", "NVM write latency scale")


def plan_workloads(sc: dict[str, Any], av: Avail) -> Plan:
    """The native system on every workload configuration of (a) and (e),
    with the runs' threads and lengths (characterisation)."""
    plan = Plan()
    schemes, wls, _ = av.filter(plan, ["ideal"], [*sc["micro"], *sc["macro"]], [P_ITEM])
    for w in wls:
        threads = sc["micro_threads"] if w in sc["micro"] else sc["macro_threads"]
        for item in _items(sc, w):
            for d in schemes:
                spec = _spec(sc, d, w, threads, run_tx(sc, w))
                if item is not None:
                    spec[P_ITEM] = item
                plan.specs.append(spec)
    return plan


def an_workloads(raw: pd.DataFrame) -> pd.DataFrame:
    return _characterise.analyze(
        with_labels(raw),
        lambda r: r["config_label"],
        {},
        "MorLog gives no per-workload characterisation (Table IV names the benchmarks; "
        "Table II gives the data-pattern shares of dirty log data measured on WHISPER, "
        "which the FPC/DLDC columns stand beside)",
    )


# ---------------------------------------------------------------------------
# The experiment table (items are the report's order; §VI subsections).

EXPERIMENTS: dict[str, Experiment] = {
    e.id: e
    for e in [
        Experiment("throughput", "a", "Micro-benchmark throughput", plan_micro, an_throughput),
        Experiment("traffic", "b", "NVM write traffic", plan_micro, an_traffic),
        Experiment("energy", "c", "NVM write energy", plan_micro, an_energy),
        Experiment(
            "log_bits",
            "d",
            "Log bits written (expansion coding disabled)",
            plan_micro,
            an_log_bits,
        ),
        Experiment("macro", "e", "Macro-benchmark throughput", plan_macro, an_throughput),
        Experiment(
            "undo_redo_buffer",
            "f",
            "Throughput vs undo+redo buffer size (Echo)",
            plan_undo_redo_buffer,
            an_undo_redo_buffer,
        ),
        Experiment(
            "redo_buffer",
            "g",
            "Throughput vs redo buffer size (Echo)",
            plan_redo_buffer,
            an_redo_buffer,
        ),
        Experiment("threads", "h", "Throughput vs thread count", plan_threads, an_threads),
        Experiment(
            "write_latency",
            "i",
            "Throughput vs NVM write latency (TLC write latencies scaled)",
            plan_write_latency,
            an_write_latency,
        ),
        Experiment(
            "log_management",
            "j",
            "Log management: transaction table vs force-write-back",
            plan_log_management,
            an_log_management,
        ),
        Experiment(
            "workloads",
            "k",
            "Workload characteristics (native system's runs)",
            plan_workloads,
            an_workloads,
            table=_characterise.table,
        ),
        CLAIM_EXPERIMENT,
    ]
}

#: Where each experiment sits in the paper's §VI (its results are withheld
#: from our copy: only what was measured is known).
PAPER_ITEMS = {
    "throughput": "MorLog §VI-B",
    "traffic": "MorLog §VI-B",
    "energy": "MorLog §VI-B",
    "log_bits": "MorLog §VI-C",
    "macro": "MorLog §VI-D",
    "undo_redo_buffer": "MorLog §VI-E",
    "redo_buffer": "MorLog §VI-E",
    "threads": "MorLog §VI-E",
    "write_latency": "MorLog §VI-E",
    "log_management": "MorLog §III-F (not evaluated there)",
    "workloads": "MorLog §VI-A (Table IV workloads)",
    "claim": "MorLog §VI-B (the abstract's claim)",
}


def _shown_path(path: str | os.PathLike[str]) -> str:
    """The default preset as ``configs/morlog.toml`` (not this host's path)."""
    p = Path(path).resolve()
    root = DEFAULT_PRESET.parents[1]
    return p.relative_to(root).as_posix() if p.is_relative_to(root) else os.fspath(path)


def _preset_settings() -> dict[str, dict[str, Any]]:
    """``{design: settings it fixes}`` for the named presets of this build."""
    return {
        s["name"]: dict(s["preset"].get("set", {}))
        for s in _core.describe()["schemes"]
        if s.get("preset")
    }


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A plan's spec without its bookkeeping columns (what the sweep runs)."""
    return {k: v for k, v in spec.items() if k not in PLAN_COLUMNS}


def setup(sc: dict[str, Any], preset: str | os.PathLike[str] | None) -> Setup:
    """Every run on ``preset`` (default: ``configs/morlog.toml``, Table III)
    under what each design fixes and what the experiment sweeps."""
    if preset is None:
        if not DEFAULT_PRESET.is_file():
            raise ValueError(
                f"the MorLog system preset {DEFAULT_PRESET} is not there (installed without the "
                "repository?): pass preset= / --config configs/morlog.toml"
            )
        preset = DEFAULT_PRESET
    base = _core.load_preset(preset)
    fixed = _preset_settings()

    # A design's own settings (its encoding) win over the system preset:
    # durasim refuses a --set that contradicts a named design.
    def merge(s: dict[str, Any]) -> dict[str, Any]:
        return {**{k: v for k, v in base.items() if k not in fixed.get(s["scheme"], {})}, **s}

    def rows(p: Plan, part: pd.DataFrame) -> pd.DataFrame:
        # The plan's bookkeeping columns, run by run (the sweep drops them).
        for col in PLAN_COLUMNS:
            if any(col in s for s in p.specs):
                part[col] = [s.get(col) for s in p.specs]
        return part

    def attrs(p: Plan, df: pd.DataFrame) -> None:
        if p.meta.get("note"):
            df.attrs["notes"].append(p.meta["note"])

    shown = {"preset": {"path": _shown_path(preset), "values": base}, "scheme_order": list(DESIGNS)}
    return Setup(merge=merge, extra=shown, rows=rows, attrs=attrs)


def cite(e: Experiment) -> str:
    return PAPER_ITEMS[e.id]


# ---------------------------------------------------------------------------
# What each scale keeps and shortens.

#: Cost per scale on the 2-core reference host, estimated 2026-11-29 on a
#: loaded host: every distinct run of the plan at 1/20 of its length, CPU
#: time extrapolated per run with its fixed set-up counted once (one full
#: HOOP vector run took 8.5 s of CPU against 6.1 s estimated: read these
#: as lower bounds, up to ~40 % low); wall time on two idle cores is about
#: half the CPU time.
COST: dict[str, str] = {
    "small": (
        "114 distinct runs, the claim sweep (l) included; about 900 s of host time summed "
        "over its runs (≈ 8 min wall on two idle cores); the TLC device model is most of it "
        "(measured 2026-11-29, runs one after the other at load 3)"
    ),
}


def _fwb_periods_in_window(row: pd.Series) -> float:
    period = FWB_PERIOD_CYCLES
    for k, v in row.items():
        if str(k).endswith(".period_cycles") and isinstance(v, (int, float)) and v == v:
            period = float(v)
            break
    return float(row.get("window_cycles", float("nan"))) / period


def scale_doc(scale: str, sc: dict[str, Any] | None = None) -> ScaleDoc:
    """What ``scale`` (its settings ``sc``, default ``SCALES[scale]``) keeps."""
    sc = sc if sc is not None else SCALES[scale]
    steady = [
        Steady(
            "force write-back (every design)",
            "periods of 3 M cycles",
            _fwb_periods_in_window,
            MIN_FWB_PERIODS,
            tuple(e for e in EXPERIMENTS if e not in ("workloads", "log_management", "claim")),
            tuple(DESIGNS),
        )
    ]
    if scale == "tiny":
        return ScaleDoc(
            scale,
            "A smoke test (2 threads, 100 transactions, two workloads per group): no "
            "force-write-back period completes; it keeps none of the paper's ratios. Do not "
            "read its numbers.",
            shortens=["everything: thread counts, run length, workloads, sweep points"],
            steady=steady,
        )
    window = 1 - WARMUP_SHARE
    per_w = {
        w: run_tx(sc, w) / TX_PER_MCYCLE[w] * 1e6 * window / FWB_PERIOD_CYCLES
        for w in [*sc["micro"], *sc["macro"]]
    }
    fewest = min(per_w, key=per_w.get)
    swept = {P_ITEM, *P_TLC_WRITE_NS, *CLAIM.swept_keys(sc)}
    av = Avail()
    av.scheme_params = _scheme_params()  # type: ignore[attr-defined]
    machine = _characterise.set_by_scale(
        EXPERIMENTS,
        sc,
        swept,
        keep=lambda k, _: not k.endswith(("_entries", ".log_management")),
        av=av,
    )
    keeps = [
        _characterise.unchanged_ratio(machine, "Table III system, Table IV workloads"),
        Ratio(
            f"force-write-back periods (3 M cycles) in the measured window (fewest: {fewest}, "
            "estimated from FWB-CRADE's rate)",
            "force write-back and log truncation after two passes",
            per_w[fewest],
            at_least=MIN_FWB_PERIODS,
        ),
        Ratio("micro-benchmark threads", "contention", sc["micro_threads"], 8, rel_tol=0),
        Ratio("macro-benchmark threads", "contention", sc["macro_threads"], 4, rel_tol=0),
    ]
    shortens = []
    if scale == "small":
        shortens = [
            f"run length: at least {MIN_FWB_PERIODS} force-write-back periods in each window "
            "instead of 100K transactions (more than 100K on the fast workloads, fewer on "
            "the slow ones)",
            "datasets: 64 B only (the paper also runs 4 KB: scale 'paper')",
            "undo+redo buffer sweep "
            + "/".join(map(str, sc["undo_redo_entries"]))
            + " and redo buffer sweep "
            + "/".join(map(str, sc["redo_entries"]))
            + " entries (paper: 1–64 and 2–64)",
            "thread sweep "
            + "/".join(map(str, sc["sens_threads"]))
            + ", write-latency sweep "
            + "/".join(f"{k}×" for k in sc["latency_scale"])
            + ", transaction-table sizes "
            + "/".join(map(str, sc["tx_table_entries"]))
            + " on "
            + ", ".join(sc["sens_workloads"])
            + " (paper: every micro-benchmark)",
        ]
    else:
        shortens = [
            "nothing: §VI-A's sizes; runs longer than 100K transactions where 100K "
            f"hold fewer than {MIN_FWB_PERIODS} force-write-back periods"
        ]
    purpose = (
        "The paper's system (Table III, configs/morlog.toml) and workloads at §VI-A's thread "
        f"counts, each run long enough for at least {MIN_FWB_PERIODS} force-write-back "
        "passes (every 3 M cycles) inside the measured window, so log truncation after two "
        "passes is in steady state in every measured number."
    )
    return ScaleDoc(scale, purpose, keeps, shortens, steady, COST.get(scale, ""))
