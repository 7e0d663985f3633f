"""What the dual-page checkpointing paper's evaluation
(papers/dual-page-checkpointing.md §5.2–§5.6, the seven measurements its
"results withheld" list names) runs: scales, plans, analyses and the
experiment table.

Every run is on the paper's hybrid memory (``configs/dpc.toml``: 256 MB
DDR3 DRAM cache of 4 KB pages in front of 8 GB PCM, 4 threads), with the
programs of Table 5 run without transactions (``run.transactions=false``)
and the transactional workloads (TATP, TPC-C, Echo, N-Store = ``ycsb``) as
transactions. ``ideal`` on that memory is the paper's Baseline.

Scales: ``paper`` uses the preset's sizes (30 M-cycle epochs, 300 MB pool,
256 MB DRAM cache, Table 5's footprints, about 1.5 B instructions per run);
meant for a cluster. ``small`` (default, minutes on 2 cores) divides the
DRAM cache, the derivative pool (and every size tied to it: ThyNVM's
tables, the overlay store, dpc's cached entries), the epoch length and
DudeTM's group-commit interval by the same factor (64), so that each epoch
dirties a comparable share of the DRAM cache and checkpoints really happen;
footprints are 2x the DRAM cache. ``tiny`` is for tests.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ... import _core
from .. import _characterise
from .._base import CONFIGS, Avail, Experiment, Plan, Setup, missing
from .._scale import Ratio, ScaleDoc, Steady
from .claim import EXPERIMENT as CLAIM_EXPERIMENT
from .spec import (
    P_DRAM,
    P_EPOCH,
    P_POOL,
    PROGRAMS,
    _machine,
    _spec,
)

#: How a frame cites the paper (with the item and section).
PAPER_REF = "DPC §5"

BASELINE = "ideal"
#: Series name of the Baseline run without the DRAM cache (software figure).
DIRECT = "ideal (no DRAM cache)"
DPC = "dpc"
#: The hardware checkpointing systems of §5.1.2, as durasim names them.
CHECKPOINTING = ["dpc", "ckpt-logging", "ckpt-cow", "thynvm", "page-overlay"]
HW_SCHEMES = [BASELINE, *CHECKPOINTING]
SOFTWARE = ["dudetm", "pmdk-undo"]
#: Paper names for the legends.
LABELS = {
    "ideal": "Baseline",
    "dpc": "DPC",
    "ckpt-logging": "Logging",
    "ckpt-cow": "CoW",
    "thynvm": "ThyNVM",
    "page-overlay": "PageOverlay",
    "dudetm": "DudeTM",
    "pmdk-undo": "NVML (PMDK undo)",
    DIRECT: "Baseline, no DRAM cache",
}
#: Table 5's transactional workloads (its programs, run without
#: transactions, are in :mod:`.spec`).
TRANSACTIONAL = ["tatp", "tpcc", "echo", "ycsb"]
WORKLOADS = PROGRAMS + TRANSACTIONAL
#: §5 (software comparison): TATP and TPC-C with four threads.
SOFTWARE_WORKLOADS = ["tatp", "tpcc"]

P_META = "dpc.metadata"
P_CACHED = "dpc.cached_entries"

KB = 1024
MB = 1024 * 1024
PAGE = 4096

#: The paper's values (§5.1, configs/dpc.toml) that the scales divide.
PAPER_EPOCH = 30_000_000
PAPER_POOL = 300 * MB
PAPER_DRAM = 256 * MB
PAPER_GROUP_MS = 16.0
PAPER_BTT = 76_800
PAPER_PTT = 153_600
PAPER_CACHED = [10_240, 20_480, 40_960]
PAPER_POOL_SWEEP = [100 * MB, 200 * MB, 300 * MB, 400 * MB, 500 * MB]
PAPER_INTERVALS = [10_000_000, 20_000_000, 30_000_000, 40_000_000, 50_000_000]
#: Table 5 footprints (MB) of the programs' rows, per thread at 4 threads.
PAPER_FOOTPRINT_MB = {
    "pagerank": 1548,
    "cd": 1357,
    "cc": 1208,
    "ann": 773,
    "kdtree": 576,
    "stencil3d": 1199,
    "lbm": 1473,
}

#: Metadata placements of §5.5, as (label, dpc.metadata, cached entries).
PLACEMENTS = [
    ("all in controller", "controller", None),
    ("BPI+valid in controller, bit vectors in DRAM", "optimized", None),
    ("cached 10K", "cached", 0),
    ("cached 20K", "cached", 1),
    ("cached 40K", "cached", 2),
    ("all in DRAM", "dram", None),
]


#: Sizes of the transactional workloads (their footprints are set by rows,
#: not by workload.footprint_bytes), per scale: about 2x the DRAM cache
#: (tiny), Table 5's footprints / SMALL_DIVISOR (small) or Table 5's
#: footprints (paper), from
#: the footprints measured at the defaults (4 threads, 16,384 items/thread:
#: tatp 93 MB, ycsb 69 MB, echo 15 MB, tpcc 63 MB), linear in the rows.
TX_SIZES: dict[str, dict[str, dict[str, int]]] = {
    "tiny": {
        "tatp": {"workload.initial_items": 180},
        "ycsb": {"workload.initial_items": 256},
        "echo": {"workload.initial_items": 1024},
        "tpcc": {"workload.tpcc_items": 1600, "workload.tpcc_customers_per_district": 48},
    },
    # Table 5's footprints / SMALL_DIVISOR (TPC-C: the specification's).
    "small": {
        "tatp": {"workload.initial_items": 218_000 // 8},
        "ycsb": {"workload.initial_items": 258_000 // 8},
        "echo": {"workload.initial_items": 884_000 // 8},
        "tpcc": {},
    },
    "paper": {
        # Table 5: TATP 1,247 MB, N-Store 1,090 MB, Echo 818 MB over 4 threads.
        "tatp": {"workload.initial_items": 218_000},
        "ycsb": {"workload.initial_items": 258_000},
        "echo": {"workload.initial_items": 884_000},
        # TPC-C keeps the specification's cardinalities (one warehouse per
        # thread, 63 MB; Table 5: 864 MB).
        "tpcc": {},
    },
}


def _scaled(
    div: int,
    threads: int,
    footprint: dict[str, int],
    ops: dict[str, int],
    time_div: int = 1,
    interval_points: Sequence[int] = (0, 1, 2, 3, 4),
    pool_points: Sequence[int] = (0, 1, 2, 3, 4),
) -> dict:
    """Space (DRAM cache, derivative pool and what is tied to it) divided by
    ``div``; time (epoch, intervals, DudeTM's group commit) by ``time_div``."""
    pool = PAPER_POOL // div // PAGE * PAGE
    intervals = [PAPER_INTERVALS[i] for i in interval_points]
    pools = [PAPER_POOL_SWEEP[i] for i in pool_points]
    return {
        "divisor": div,
        "time_divisor": time_div,
        "threads": threads,
        "seed": 1,
        "dram_cache_bytes": PAPER_DRAM // div,
        "epoch_cycles": PAPER_EPOCH // time_div,
        "pool_bytes": pool,
        "btt_entries": PAPER_BTT // div,
        "ptt_entries": PAPER_PTT // div,
        "group_commit_ms": PAPER_GROUP_MS / time_div,
        "cached_entries": [c // div for c in PAPER_CACHED],
        "pool_sweep_bytes": [b // div // PAGE * PAGE for b in pools],
        "paper_pool_sweep_bytes": pools,
        "intervals": [c // time_div for c in intervals],
        "paper_intervals": intervals,
        "footprint_bytes": footprint,
        "ops": ops,
        "sweep_workloads": ["pagerank", "lbm", "tpcc"],
    }


#: The reduced scale's space divisor: the DRAM cache, the derivative pool
#: (ThyNVM's tables, the overlay store and the cached DPT entries with it)
#: and every footprint are the paper's / SMALL_DIVISOR, so the DRAM cache
#: keeps its share of each footprint (Table 5) and the pool its size
#: against the cache; the epoch (and the interval sweep, and DudeTM's group
#: commit) stays the paper's, so an epoch keeps its length against a 4 KB
#: page.
SMALL_DIVISOR = 8
#: Checkpoints a steady-state window holds at least.
MIN_CHECKPOINTS = 3
WARMUP_SHARE = 0.25  # run.warmup_tx_share default
MARGIN = 1.25
#: Cycles per operation per thread of the native system at SMALL_DIVISOR
#: (4 threads, Table 5 footprints / 8, 32 MB DRAM cache started warm,
#: 1,000 operations per thread): the smaller of the whole run's and the
#: window's, so a run sized from it holds at least the checkpoints it is
#: sized for.
CYCLES_PER_OP: dict[str, float] = {
    "pagerank": 68_257,
    "cc": 53_725,
    "cd": 58_382,
    "ann": 10_029,
    "kdtree": 2_376,
    "stencil3d": 10_828,
    "lbm": 12_602,
    "tatp": 22_027,
    "tpcc": 62_571,
    "echo": 120_726,
    "ycsb": 9_853,
}


def steady_ops(workload: str, interval: int = PAPER_EPOCH) -> int:
    """Operations per thread for MIN_CHECKPOINTS intervals in the window."""
    cycles = MIN_CHECKPOINTS * interval / (1 - WARMUP_SHARE) * MARGIN
    return int(-(-cycles / CYCLES_PER_OP[workload] // 100) * 100)


#: Instructions per operation in the measured window of dpc runs
#: (metrics.instructions / metrics.measured_tx; loads and stores included;
#: TATP's transactions are short: 9 memory ops each).
INSTRUCTIONS_PER_OP = {
    "pagerank": 1414,
    "cc": 1367,
    "cd": 4849,
    "ann": 14588,
    "kdtree": 801,
    "stencil3d": 1218,
    "lbm": 415,
    "tatp": 20,
    "tpcc": 374,
    "echo": 106,
    "ycsb": 102,
}
#: ``paper``: about 1.5 B instructions per run (§5.1.3).
PAPER_OPS = {w: 1_500_000_000 // (n * 4) for w, n in INSTRUCTIONS_PER_OP.items()}
SMALL_OPS = {w: steady_ops(w) for w in WORKLOADS}

SCALES: dict[str, dict[str, Any]] = {
    "tiny": {
        **_scaled(
            1024,
            2,
            {w: 256 * KB for w in PROGRAMS},
            {w: 200 for w in WORKLOADS},
            time_div=1024,
        ),
        "dram_cache_ways": 4,
        # Tests only: ThyNVM's tables at the DPT's size (75 / 150 entries)
        # cannot hold one tiny epoch's sparse writes; tiny runs check that
        # everything runs, not the paper's ratios.
        "btt_entries": 4096,
        "ptt_entries": 8192,
        "sweep_workloads": ["pagerank"],
        "tx_sizes": TX_SIZES["tiny"],
    },
    "small": {
        **_scaled(
            SMALL_DIVISOR,
            4,
            {w: mb * MB // 4 // SMALL_DIVISOR for w, mb in PAPER_FOOTPRINT_MB.items()},
            SMALL_OPS,
            interval_points=(0, 1, 2),
            pool_points=(0, 2, 4),
        ),
        "dram_cache_ways": 64,
        # The cheapest program per simulated cycle (pagerank costs 4x).
        "sweep_workloads": ["lbm"],
        "tx_sizes": TX_SIZES["small"],
    },
    "paper": {
        **_scaled(
            1,
            4,
            {w: mb * MB // 4 for w, mb in PAPER_FOOTPRINT_MB.items()},
            PAPER_OPS,
        ),
        "dram_cache_ways": 64,
        "sweep_workloads": ["pagerank", "lbm", "tpcc"],
        "tx_sizes": TX_SIZES["paper"],
    },
}


def preset_path() -> Path:
    return CONFIGS / "dpc.toml"


def _preset() -> dict[str, Any]:
    p = preset_path()
    if not p.is_file():
        raise ValueError(
            f"the dual-page checkpointing preset {p} is missing: the dpc experiments run "
            "from a durasim checkout (configs/dpc.toml)"
        )
    return _core.load_preset(p)


# ---------------------------------------------------------------------------
# Planning.


def plan_grid(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, workloads, _ = av.filter(plan, HW_SCHEMES, WORKLOADS)
    for w in workloads:
        for s in schemes:
            plan.specs.append(_spec(sc, s, w))
    return plan


def plan_software(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, workloads, _ = av.filter(plan, [BASELINE, DPC, *SOFTWARE], SOFTWARE_WORKLOADS)
    for w in workloads:
        for s in schemes:
            if s in SOFTWARE:
                # §5.1.2: NVML needs DRAM and NVM both directly addressable,
                # DudeTM its own (4 GB) DRAM: neither runs behind the DRAM cache.
                plan.specs.append(_spec(sc, s, w, **{P_DRAM: 0}))
            else:
                plan.specs.append(_spec(sc, s, w))
                if s == BASELINE:
                    # The same machine without the DRAM cache: separates the
                    # memory's cost from the software schemes' own.
                    plan.specs.append(_spec(sc, s, w, **{P_DRAM: 0}))
    return plan


def plan_pool(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, workloads, ok = av.filter(plan, [DPC, BASELINE], sc["sweep_workloads"], [P_POOL])
    if not ok:
        return plan
    for w in workloads:
        if BASELINE in schemes:
            plan.specs.append(_spec(sc, BASELINE, w))
        if DPC in schemes:
            for b in sc["pool_sweep_bytes"]:
                plan.specs.append(_spec(sc, DPC, w, **{P_POOL: b}))
    return plan


def plan_metadata(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, workloads, ok = av.filter(plan, [DPC], sc["sweep_workloads"], [P_META, P_CACHED])
    if not ok or not schemes:
        return plan
    for w in workloads:
        for _, mode, ci in PLACEMENTS:
            extra: dict[str, Any] = {P_META: mode}
            if ci is not None:
                extra[P_CACHED] = sc["cached_entries"][ci]
            plan.specs.append(_spec(sc, DPC, w, **extra))
    return plan


def plan_interval(sc: dict[str, Any], av: Avail) -> Plan:
    plan = Plan()
    schemes, workloads, ok = av.filter(plan, HW_SCHEMES, sc["sweep_workloads"], [P_EPOCH])
    if not ok:
        return plan
    for w in workloads:
        for s in schemes:
            if s == BASELINE:
                plan.specs.append(_spec(sc, s, w))  # no checkpoints: one run
                continue
            for c in sc["intervals"]:
                plan.specs.append(_spec(sc, s, w, **{P_EPOCH: c}))
    return plan


# ---------------------------------------------------------------------------
# Analysis.


def _f(df: pd.DataFrame, col: str) -> pd.Series:
    if col in df.columns:
        return pd.to_numeric(df[col], errors="coerce")
    return pd.Series([float("nan")] * len(df), index=df.index, dtype=float)


def _norm_to(df: pd.DataFrame, col: str, ref_scheme: str, group: str, out: str) -> None:
    ref = df[df["scheme"] == ref_scheme].set_index(group)[col]
    vals = []
    for v, k in zip(_f(df, col), df[group]):
        r = ref.get(k, float("nan"))
        vals.append(v / r if not missing(r) and r != 0 else float("nan"))
    df[out] = vals
    bad = sorted(
        {str(k) for k in df[group] if missing(ref.get(k, float("nan"))) or ref.get(k) == 0}
    )
    if bad:
        df.attrs.setdefault("not_normalizable", {}).update(
            {k: f"{ref_scheme} {col} is 0 or missing" for k in bad}
        )


def _labels(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["system"] = [LABELS.get(s, s) for s in df["scheme"]] if len(df) else []
    return df


def _stat_range(df: pd.DataFrame, names: Sequence[str]) -> str:
    parts = []
    for n in names:
        c = f"stat.{n}"
        if c in df.columns and df[c].notna().any():
            lo, hi = df[c].min(), df[c].max()
            parts.append(f"{n} {lo:g}" if lo == hi else f"{n} {lo:g}–{hi:g}")
    return ", ".join(parts)


def _scale_note(df: pd.DataFrame) -> list[str]:
    if not len(df):
        return []
    div = int(df.attrs.get("divisor", 1) or 1)
    tdiv = int(df.attrs.get("time_divisor", div) or 1)
    if div == 1 and tdiv == 1:
        return []
    note = (
        f"scaled machine: DRAM cache, derivative pool (and ThyNVM tables, overlay store, cached "
        f"entries) and footprints are the paper's / {div}"
    )
    if tdiv == 1:
        note += "; epoch, intervals and DudeTM's group commit are the paper's"
    else:
        note += f"; epoch and DudeTM group commit / {tdiv}"
    return [note]


def an_overall(raw: pd.DataFrame) -> pd.DataFrame:
    """§5.2: execution time and NVM writes normalized to dpc, and each
    system's overhead over the Baseline."""
    df = _labels(raw)
    if len(df):
        df["nvm_write_mb"] = _f(df, "nvm_bytes_written") / MB
        df["execution_time_ms"] = _f(df, "execution_time_ns") / 1e6
        _norm_to(df, "execution_time_ns", DPC, "workload", "time_vs_dpc")
        _norm_to(df, "nvm_bytes_written", DPC, "workload", "writes_vs_dpc")
        _norm_to(df, "execution_time_ns", BASELINE, "workload", "time_vs_baseline")
        df["overhead_vs_baseline_pct"] = (df["time_vs_baseline"] - 1.0) * 100.0
    else:
        for c in ("time_vs_dpc", "writes_vs_dpc", "overhead_vs_baseline_pct"):
            df[c] = []
    df.attrs["normalization"] = (
        "execution time and NVM bytes written / dpc's, same workload; overhead = "
        "execution time / Baseline's − 1"
    )
    df.attrs["stat_keys"] = {
        "Logging": "log_entries, coalesced_writebacks",
        "CoW": "page_copies, copied_clean_lines",
        "ThyNVM": "clean_lines_copied, migration_lines_written, switches_to_page_mode",
        "PageOverlay": "merge_lines_written, segment_migrations",
    }
    notes = []
    for s, names in (
        ("ckpt-logging", ["log_entries", "coalesced_writebacks"]),
        ("ckpt-cow", ["page_copies", "copied_clean_lines"]),
        ("thynvm", ["clean_lines_copied", "migration_lines_written"]),
        ("page-overlay", ["merge_lines_written", "segment_migrations"]),
        ("dpc", ["data_lines_written", "reclaim_lines_written", "forced_checkpoints"]),
    ):
        r = _stat_range(df[df["scheme"] == s], names) if len(df) else ""
        if r:
            notes.append(f"{LABELS[s]}: {r}")
    if len(df) and (_f(df[df["scheme"] == BASELINE], "nvm_bytes_written") == 0).any():
        notes.append(
            "the Baseline writes 0 B to NVM in some windows (dirty data stays in the DRAM "
            "cache): write amounts are compared with dpc only"
        )
    df.attrs["notes"] = notes
    return df


def _ckpt_share(df: pd.DataFrame) -> pd.Series:
    share = _f(df, "stat.checkpoint_time_share")
    # ThyNVM overlaps the checkpoint with the next epoch: the time lost to
    # checkpointing is the cores' stall for it (cache flush + waiting).
    stall = _f(df, "stat.checkpoint_stall_share")
    return share.where(share.notna(), stall)


def an_checkpoints(raw: pd.DataFrame) -> pd.DataFrame:
    """§5.3: checkpoint count and the share of time spent checkpointing."""
    df = _labels(raw)
    df = df[df["scheme"] != BASELINE].reset_index(drop=True) if len(df) else df
    df["checkpoints"] = _f(df, "stat.checkpoints")
    df["forced_checkpoints"] = _f(df, "stat.forced_checkpoints")
    df["checkpoint_time_pct"] = _ckpt_share(df) * 100.0
    df.attrs["normalization"] = (
        "none (checkpoints in the measured window; % of the window spent checkpointing, "
        "ThyNVM: stalled for its overlapped checkpoint)"
    )
    df.attrs["stat_keys"] = {
        "checkpoints": "stat.checkpoints",
        "checkpoint_time_pct": "stat.checkpoint_time_share (thynvm: stat.checkpoint_stall_share)",
    }
    notes = []
    if len(df):
        notes.append(
            "overlapped ThyNVM checkpoint cycles (not stalled): "
            + (_stat_range(df[df["scheme"] == "thynvm"], ["overlapped_checkpoint_cycles"]) or "n/a")
        )
        if (df["forced_checkpoints"].fillna(0) > 0).any():
            notes.append("forced checkpoints: " + _stat_range(df, ["forced_checkpoints"]))
    df.attrs["notes"] = notes
    return df


def an_software(raw: pd.DataFrame) -> pd.DataFrame:
    """§5.4: throughput and NVM writes against DudeTM and PMDK undo logging."""
    df = _labels(raw)
    if len(df):
        direct = (df["scheme"] == BASELINE) & (_f(df, P_DRAM) == 0)
        df["series"] = df["scheme"].where(~direct, DIRECT)
        df["system"] = [LABELS.get(x, x) for x in df["series"]]
        tx = _f(df, "measured_tx").where(lambda s: s > 0, _f(df, "committed_tx")).clip(lower=1)
        df["throughput_ktx_per_s"] = _f(df, "throughput_tx_per_sec") / 1e3
        # NVM bytes per transaction over the whole run (DudeTM's group
        # commits and replays fall at the end of short runs, outside the
        # window; the checkpointing schemes' too): run totals.
        total = _f(df, "nvm_bytes_written") + _f(df, "final_drain_bytes_written").fillna(0)
        df["nvm_bytes_per_tx"] = _f(df, "nvm_bytes_written") / tx
        df["nvm_bytes_per_tx_incl_drain"] = total / _f(df, "committed_tx").clip(lower=1)
        _norm_to(df, "throughput_tx_per_sec", DPC, "workload", "throughput_vs_dpc")
    else:
        df["throughput_vs_dpc"], df["series"] = [], []
    df.attrs["normalization"] = "throughput / dpc's, same workload; NVM bytes per transaction"
    df.attrs["notes"] = [
        "durability differs: PMDK per transaction, DudeTM per 16 ms group commit (divided "
        "like the epoch where a scale divides it), dpc only per checkpoint (a transaction is "
        "durable when the next checkpoint completes)",
        "PMDK and DudeTM run without the DRAM cache (§5.1.2: NVML addresses DRAM and NVM "
        "directly; DudeTM has its own DRAM); Baseline and dpc on the hybrid memory",
    ]
    return df


def _paper_value(
    df: pd.DataFrame, col: str, key: str, paper: Sequence[int], attrs: dict | None = None
) -> pd.Series:
    """The paper-scale value a scaled run stands for (the sweep's list
    entry it came from; otherwise value x divisor)."""
    attrs = attrs if attrs is not None else df.attrs
    sc = attrs.get("scale_settings") or {}
    div = attrs.get("divisor", 1) or 1
    if key == "intervals":
        div = attrs.get("time_divisor", sc.get("time_divisor", div)) or 1
    m = dict(zip(sc.get(key, []), sc.get(f"paper_{key}", paper)))
    return pd.Series([float(m.get(v, v * div)) for v in _f(df, col)], index=df.index)


def an_pool(raw: pd.DataFrame) -> pd.DataFrame:
    """§5.5: derivative page pool size 100–500 MB (time and NVM writes)."""
    df = _labels(raw)
    if len(df):
        _norm_to(df, "execution_time_ns", BASELINE, "workload", "time_vs_baseline")
        d = df[df["scheme"] == DPC].copy()
        d["pool_mb"] = _f(d, P_POOL) / MB
        d["paper_pool_mb"] = (
            _paper_value(d, P_POOL, "pool_sweep_bytes", PAPER_POOL_SWEEP, raw.attrs) / MB
        )
        d["nvm_write_mb"] = _f(d, "nvm_bytes_written") / MB
        d.attrs.update(df.attrs)
        df = d.reset_index(drop=True)
    else:
        df["pool_mb"], df["paper_pool_mb"], df["time_vs_baseline"] = [], [], []
    df.attrs["normalization"] = "execution time / Baseline's, same workload; NVM MB written"
    r = _stat_range(
        df,
        [
            "allocation_failures",
            "preallocation_failures",
            "forced_checkpoints",
            "reclaims_uncached",
            "reclaims_cached",
            "fallback_lines_written",
        ],
    )
    df.attrs["notes"] = [f"pool pressure in these runs: {r}"] if r else []
    return df


def an_metadata(raw: pd.DataFrame) -> pd.DataFrame:
    """§5.5: DPT placement (controller / optimized / 10K-40K cached / DRAM)."""
    df = _labels(raw)
    if len(df):
        labels = []
        for _, row in df.iterrows():
            mode = row.get(P_META)
            lbl = next(p[0] for p in PLACEMENTS if p[1] == mode)
            if mode == "cached":
                lbl = f"cached {int(row[P_CACHED])} entries"
            labels.append(lbl)
        df["placement"] = labels
        ref = df[df[P_META] == "controller"].set_index("workload")["execution_time_ns"]
        df["time_vs_controller"] = [
            v / ref.get(w, float("nan"))
            for v, w in zip(_f(df, "execution_time_ns"), df["workload"])
        ]
        hits, misses = _f(df, "stat.dpt_controller_hits"), _f(df, "stat.dpt_controller_misses")
        df["controller_hit_ratio"] = hits / (hits + misses).where(lambda s: s > 0)
    else:
        df["placement"], df["time_vs_controller"] = [], []
    df.attrs["normalization"] = "execution time / time with the whole DPT in the controller"
    if len(df):
        div = df.attrs.get("divisor", 1)
        df.attrs["notes"] = (
            [
                f"cached entries are the paper's 10K/20K/40K / {div} (the pool, hence the DPT, "
                "is scaled by the same factor)"
            ]
            if div != 1
            else []
        )
    return df


def an_interval(raw: pd.DataFrame) -> pd.DataFrame:
    """§5.6: checkpoint interval from 10 M cycles up, for every system."""
    df = _labels(raw)
    if len(df):
        _norm_to(df, "execution_time_ns", BASELINE, "workload", "time_vs_baseline")
        df["nvm_write_mb"] = _f(df, "nvm_bytes_written") / MB
        df = df[df["scheme"] != BASELINE].reset_index(drop=True)
        df["interval_mcycles"] = _f(df, P_EPOCH) / 1e6
        df["paper_interval_mcycles"] = (
            _paper_value(df, P_EPOCH, "intervals", PAPER_INTERVALS, raw.attrs) / 1e6
        )
        df["checkpoints"] = _f(df, "stat.checkpoints")
    else:
        df["interval_mcycles"], df["time_vs_baseline"] = [], []
    df.attrs["normalization"] = "execution time / Baseline's, same workload; NVM MB written"
    return df


def an_metadata_space(raw: pd.DataFrame) -> pd.DataFrame:
    """Table 3: metadata space per system, from the simulated structures
    (each scheme reports its entry sizes and peaks in scheme_stats)."""
    rows: list[dict[str, Any]] = []
    for scheme in CHECKPOINTING:
        d = raw[raw["scheme"] == scheme] if len(raw) else raw
        if not len(d):
            continue

        def mx(k: str, d: pd.DataFrame = d) -> float:
            return float(_f(d, f"stat.{k}").max())

        def row(
            structure: str,
            where: str,
            bits: float,
            unit: str,
            entries: float,
            src: str,
            scheme: str = scheme,
        ):
            rows.append(
                {
                    "scheme": scheme,
                    "system": LABELS[scheme],
                    "structure": structure,
                    "where": where,
                    "bits_per_unit": bits,
                    "unit": unit,
                    "entries": entries,
                    "bytes": bits * entries / 8 if not missing(entries) else float("nan"),
                    "source": src,
                }
            )

        sc_pool = float(_f(d, P_POOL).max()) / PAGE
        if scheme == "dpc":
            row(
                "DPT entry (controller part)",
                "controller",
                mx("controller_metadata_bits_per_entry"),
                "pool page",
                sc_pool,
                "stat.controller_metadata_bits_per_entry x dpc.pool_bytes/4 KB",
            )
            row(
                "DPT backup in NVM",
                "NVM",
                mx("nvm_metadata_bytes_per_page") * 8,
                "pool page",
                sc_pool,
                "stat.nvm_metadata_bytes_per_page x pool pages",
            )
        elif scheme == "ckpt-logging":
            row(
                "mapping table (ideal, unbounded)",
                "controller",
                mx("mapping_bits_per_line"),
                "logged line (peak per epoch)",
                mx("mapping_table_peak_lines"),
                "stat.mapping_bits_per_line x stat.mapping_table_peak_lines",
            )
        elif scheme == "ckpt-cow":
            row(
                "mapping table (ideal, unbounded)",
                "controller",
                mx("mapping_bits_per_page"),
                "mapped page (peak)",
                mx("mapping_table_peak_entries"),
                "stat.mapping_bits_per_page x stat.mapping_table_peak_entries",
            )
        elif scheme == "thynvm":
            btt = float(_f(d, "thynvm.btt_entries").max())
            ptt = float(_f(d, "thynvm.ptt_entries").max())
            row(
                "BTT entry",
                "controller",
                mx("controller_bits_per_btt_entry"),
                "BTT entry",
                btt,
                "stat.controller_bits_per_btt_entry x thynvm.btt_entries",
            )
            row(
                "PTT entry",
                "controller",
                mx("controller_bits_per_ptt_entry"),
                "PTT entry",
                ptt,
                "stat.controller_bits_per_ptt_entry x thynvm.ptt_entries",
            )
        elif scheme == "page-overlay":
            pages = mx("overlaid_pages_per_epoch")
            unit = "overlaid page (mean per epoch, largest run)"
            row(
                "OMT entry (slot pointers + free vector)",
                "controller",
                mx("controller_pointer_bits_per_page"),
                unit,
                pages,
                "stat.controller_pointer_bits_per_page x stat.overlaid_pages_per_epoch",
            )
            row(
                "OMT entry (with overlay bit vector + segment pointer)",
                "controller",
                mx("controller_bits_per_page"),
                unit,
                pages,
                "stat.controller_bits_per_page x stat.overlaid_pages_per_epoch",
            )
            row(
                "overlay memory store (peak)",
                "NVM",
                8.0,
                "byte",
                mx("oms_peak_bytes"),
                "stat.oms_peak_bytes",
            )
    df = pd.DataFrame(rows)
    if not len(df):
        df = pd.DataFrame(columns=["scheme", "system", "structure", "bits_per_unit", "bytes"])
    df.attrs["normalization"] = (
        "none (bits per unit from the simulated entry layouts; bytes = bits x entries, "
        "entries at this scale: configured table sizes or the run's peak)"
    )
    return df


#: Table 5 (DRAM cache miss rate, read/write ratio, footprint), by durasim's
#: workload names (SPEC1 = stencil3d, SPEC2 = lbm, Flann = kdtree, N-Store = ycsb).
TABLE_5 = {
    "pagerank": ("17.61%", 2.23, 1548),
    "cd": ("15.14%", 1.91, 1357),
    "cc": ("5.30%", 2.27, 1208),
    "ann": ("13.26%", 2.15, 773),
    "kdtree": ("12.58%", 1.55, 576),
    "stencil3d": ("16.08%", 4.54, 1199),
    "lbm": ("5.43%", 1.80, 1473),
    "tatp": ("56.72%", 2.47, 1247),
    "tpcc": ("53.96%", 1.72, 864),
    "echo": ("43.57%", 1.43, 818),
    "ycsb": ("35.82%", 1.38, 1090),
}


def plan_workloads(sc: dict[str, Any], av: Avail) -> Plan:
    """The Baseline's runs of the grid (native system on the hybrid memory)."""
    plan = Plan()
    schemes, workloads, _ = av.filter(plan, [BASELINE], WORKLOADS)
    for w in workloads:
        for s in schemes:
            plan.specs.append(_spec(sc, s, w))
    return plan


def an_workloads(raw: pd.DataFrame) -> pd.DataFrame:
    paper = {
        w: {"DRAM cache miss rate": m, "read/write": rw, "footprint (MB)": fp}
        for w, (m, rw, fp) in TABLE_5.items()
    }
    return _characterise.analyze(
        raw,
        lambda r: str(r["workload"]),
        paper,
        "Table 5 (DRAM cache miss rate, read/write ratio, footprint at the paper's size; "
        "the runs' footprints are the paper's / the scale's divisor)",
        extra=[
            ("dram_cache_miss_ratio", "DRAM cache miss ratio"),
            ("memory_read_write_ratio", "DRAM cache reads/writes"),
        ],
    )


# ---------------------------------------------------------------------------
# The experiment table.


EXPERIMENTS: dict[str, Experiment] = {
    e.id: e
    for e in [
        Experiment(
            "overall",
            "a",
            "Execution time and NVM writes normalized to DPC; overhead over the Baseline",
            plan_grid,
            an_overall,
            section="§5.2",
        ),
        Experiment(
            "checkpoints",
            "b",
            "Checkpoint count and share of time spent checkpointing",
            plan_grid,
            an_checkpoints,
            section="§5.3",
        ),
        Experiment(
            "software",
            "c",
            "Throughput and NVM writes against DudeTM and PMDK (TATP, TPC-C)",
            plan_software,
            an_software,
            section="§5.4",
        ),
        Experiment(
            "pool_size",
            "d",
            "Derivative page pool size (100–500 MB at paper scale)",
            plan_pool,
            an_pool,
            section="§5.5",
        ),
        Experiment(
            "metadata",
            "e",
            "DPT metadata placement",
            plan_metadata,
            an_metadata,
            section="§5.5",
        ),
        Experiment(
            "interval",
            "f",
            "Checkpoint interval (10 M cycles and up at paper scale)",
            plan_interval,
            an_interval,
            section="§5.6",
        ),
        Experiment(
            "metadata_space",
            "g",
            "Metadata space (Table 3)",
            plan_grid,
            an_metadata_space,
            section="§4/Table 3",
        ),
        Experiment(
            "workloads",
            "h",
            "Workload characteristics (Baseline runs) beside Table 5",
            plan_workloads,
            an_workloads,
            section="§5.1.3/Table 5",
            table=_characterise.table,
        ),
        CLAIM_EXPERIMENT,
    ]
}


def setup(sc: dict[str, Any], preset: str | os.PathLike[str] | None) -> Setup:
    """Every run starts from configs/dpc.toml; ``preset`` overrides it, and
    what an experiment sets overrides both."""
    base = _preset()
    if preset is not None:
        base.update(_core.load_preset(preset))
    # A run that stops (a table or buffer too small for the workload, e.g.
    # the smallest derivative pool) is a result, not a crash (the sweep runs
    # with errors="include"): it is listed on the figure and in the notes
    # instead of failing the whole report.

    def merge(s: dict[str, Any]) -> dict[str, Any]:
        return {**base, **s}

    def rows(p: Plan, part: pd.DataFrame) -> pd.DataFrame:
        p.meta["stopped"] = _stopped(part, sc)
        if "error" in part.columns:
            part = part[part["error"].isna()].reset_index(drop=True)
        part.attrs["divisor"] = sc["divisor"]
        part.attrs["time_divisor"] = sc.get("time_divisor", sc["divisor"])
        part.attrs["scale_settings"] = sc
        return part

    def attrs(p: Plan, df: pd.DataFrame) -> None:
        stopped = p.meta["stopped"]
        df.attrs["notes"] = list(df.attrs.get("notes") or []) + _scale_note(df) + stopped
        df.attrs["stopped_runs"] = len(stopped)

    shown = {
        "divisor": sc["divisor"],
        "preset": {"path": str(preset), "values": _core.load_preset(preset)}
        if preset is not None
        else None,
    }
    return Setup(merge=merge, extra=shown, rows=rows, attrs=attrs)


def cite(e: Experiment) -> str:
    return f"{PAPER_REF} ({e.item}, {e.section})"


def no_runs() -> pd.DataFrame:
    """The sweep's frame when no experiment has a run."""
    return pd.DataFrame({"scheme": pd.Series(dtype=object), "workload": pd.Series(dtype=object)})


def _stopped(part: pd.DataFrame, sc: dict[str, Any]) -> list[str]:
    """'run stopped' notes for the runs of ``part`` that ended in an error."""
    if "error" not in part.columns:
        return []
    out = []
    machine = _machine(sc)
    for _, r in part[part["error"].notna()].iterrows():
        varied = [
            f"{k}={r[k]}"
            for k in (P_POOL, P_EPOCH, P_DRAM)
            if k in r.index and not missing(r[k]) and r[k] != machine[k]
        ]
        if r.get(P_META, "optimized") != "optimized":
            varied.append(f"{P_META}={r[P_META]}")
        if not missing(r.get(P_CACHED)):
            varied.append(f"{P_CACHED}={r[P_CACHED]}")
        msg = str(r["error"]).splitlines()[0].removeprefix("ValueError: ")
        where = f"{r['scheme']} on {r['workload']}" + (f" ({', '.join(varied)})" if varied else "")
        out.append(f"run stopped, not plotted: {where}: {msg}")
    return out


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
        "91 distinct runs, the claim sweep (i) included; 1,819 s for all of them one after "
        "the other at load 3 (≈ 15 min wall on two idle cores), ann, kdtree, TPC-C and the "
        "lbm sweeps the largest shares (measured 2026-11-29)"
    ),
}

#: Footprint (MB, 4 threads) of the transactional workloads at 16,384
#: items per thread, measured (linear in the rows; see TX_SIZES).
MB_AT_DEFAULT_ITEMS = {"tatp": 93, "ycsb": 69, "echo": 15}


def footprint_mb(sc: dict[str, Any], w: str) -> float | None:
    """The run's footprint (MB, all threads) as the scale sets it."""
    if w in PROGRAMS:
        return sc["footprint_bytes"][w] * sc["threads"] / MB
    items = sc["tx_sizes"].get(w, {}).get("workload.initial_items")
    if w in MB_AT_DEFAULT_ITEMS and items:
        return MB_AT_DEFAULT_ITEMS[w] * items / 16384 * sc["threads"] / 4
    return None


def _checkpoints(row: pd.Series) -> float:
    return float(row.get("stat.checkpoints", float("nan")))


def scale_doc(scale: str, sc: dict[str, Any] | None = None) -> ScaleDoc:
    """What ``scale`` (its settings ``sc``, default ``SCALES[scale]``) keeps."""
    sc = sc if sc is not None else SCALES[scale]
    steady = [
        Steady(
            "checkpointing (every hardware scheme)",
            "checkpoints",
            _checkpoints,
            MIN_CHECKPOINTS,
            ("overall", "checkpoints", "pool_size", "metadata", "interval"),
            tuple(CHECKPOINTING),
        )
    ]
    if scale == "tiny":
        return ScaleDoc(
            scale,
            "A smoke test (2 threads, 200 operations per thread, machine and epoch / 1024, "
            "ThyNVM's tables enlarged): it keeps none of the paper's ratios. Do not read "
            "its numbers.",
            shortens=["everything"],
            steady=steady,
        )
    rel = {}
    for w in WORKLOADS:
        fp = footprint_mb(sc, w)
        if fp:
            rel[w] = (sc["dram_cache_bytes"] / MB / fp) / (PAPER_DRAM / MB / TABLE_5[w][2])
    worst = max(rel, key=lambda w: abs(rel[w] - 1))
    tpcc_share = (sc["dram_cache_bytes"] / MB) / 63
    window = 1 - WARMUP_SHARE
    est = {
        w: sc["ops"][w] * CYCLES_PER_OP[w] * window / sc["epoch_cycles"]
        for w in WORKLOADS
        if w in CYCLES_PER_OP
    }
    keeps = [
        Ratio(
            "epoch / 4 KB page (cycles per page)",
            "CoW page copies, ThyNVM block/page switching, dirty lines per page",
            sc["epoch_cycles"] / PAGE,
            PAPER_EPOCH / PAGE,
            rel_tol=0,
        ),
        Ratio(
            f"DRAM cache / footprint, relative to the paper's (worst: {worst})",
            "DRAM-cache misses, dirty pages per epoch (Table 5)",
            rel[worst],
            1.0,
            rel_tol=0.05,
        ),
        Ratio(
            "derivative pool / DRAM cache",
            "dpc's pool pressure, forced checkpoints",
            sc["pool_bytes"] / sc["dram_cache_bytes"],
            PAPER_POOL / PAPER_DRAM,
            rel_tol=0.01,
        ),
        Ratio(
            "ThyNVM BTT entries / derivative pool pages (§5.1.2: the DPT's size)",
            "ThyNVM table overflow",
            sc["btt_entries"] / (sc["pool_bytes"] / PAGE),
            PAPER_BTT / (PAPER_POOL / PAGE),
            rel_tol=0.01,
        ),
        Ratio(
            "TPC-C: DRAM cache / footprint (the specification's 63 MB, one warehouse per "
            "thread; not scalable: a stated exception)",
            "DRAM-cache misses",
            tpcc_share,
            (PAPER_DRAM / MB) / TABLE_5["tpcc"][2],
        ),
    ]
    if est:
        fewest = min(est, key=est.get)
        keeps.append(
            Ratio(
                f"checkpoints in the measured window (fewest: {fewest}, estimated from "
                "the native system's rate)",
                "checkpointing (every scheme)",
                est[fewest],
                at_least=MIN_CHECKPOINTS,
            )
        )
    shortens = []
    if scale == "small":
        shortens = [
            f"space: DRAM cache ({sc['dram_cache_bytes'] // MB} MB), derivative pool and "
            f"footprints are the paper's / {sc['divisor']}; an epoch's writes are therefore "
            f"a {sc['divisor']}× larger share of the DRAM cache than at paper scale",
            f"run length: at least {MIN_CHECKPOINTS} checkpoints in each window instead of "
            "1.5 B instructions",
            "sweeps on " + ", ".join(sc["sweep_workloads"]) + " (paper scale: pagerank, lbm, "
            "tpcc); intervals "
            + "/".join(f"{c // 1_000_000} M" for c in sc["intervals"])
            + " cycles (paper: 10–50 M; longer intervals need longer runs); pools "
            + "/".join(f"{b // MB} MB" for b in sc["paper_pool_sweep_bytes"])
            + " at paper scale",
        ]
    purpose = (
        "The paper's hybrid memory (configs/dpc.toml) with its 30 M-cycle epoch and 4 KB "
        "pages, the DRAM cache in the same proportion to each footprint as Table 5, and runs "
        f"long enough for at least {MIN_CHECKPOINTS} checkpoints inside the measured window."
    )
    return ScaleDoc(scale, purpose, keeps, shortens, steady, COST.get(scale, ""))
