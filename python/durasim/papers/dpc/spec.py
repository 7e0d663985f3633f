"""The run spec every dual-page checkpointing experiment starts from (the
claim's sweep included): the scale's hybrid machine over
``configs/dpc.toml`` and the workload's size. A leaf module, so that the
claim and the experiments both build on it."""

from __future__ import annotations

from typing import Any

#: Table 5's programs, run without transactions.
PROGRAMS = ["pagerank", "cc", "cd", "ann", "kdtree", "stencil3d", "lbm"]

P_EPOCH = "checkpoint.epoch_cycles"
P_POOL = "dpc.pool_bytes"
P_DRAM = "hybrid.dram_cache_bytes"
P_TX = "run.transactions"
P_FOOT = "workload.footprint_bytes"
P_GROUP = "dudetm.group_commit_ms"


def _machine(sc: dict[str, Any]) -> dict[str, Any]:
    """The scaled hybrid machine every run shares (over configs/dpc.toml)."""
    return {
        P_DRAM: sc["dram_cache_bytes"],
        "hybrid.dram_cache_ways": sc["dram_cache_ways"],
        P_EPOCH: sc["epoch_cycles"],
        P_POOL: sc["pool_bytes"],
        "overlay.oms_bytes": sc["pool_bytes"],
        "thynvm.btt_entries": sc["btt_entries"],
        "thynvm.ptt_entries": sc["ptt_entries"],
        P_GROUP: sc["group_commit_ms"],
    }


def _spec(sc: dict[str, Any], scheme: str, workload: str, **extra: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "scheme": scheme,
        "workload": workload,
        "threads": sc["threads"],
        "tx": sc["ops"][workload] * sc["threads"],
        "seed": sc["seed"],
        **_machine(sc),
    }
    if workload in PROGRAMS:
        s[P_TX] = False
        s[P_FOOT] = sc["footprint_bytes"][workload]
    s.update(sc["tx_sizes"].get(workload, {}))
    s.update(extra)
    return s
