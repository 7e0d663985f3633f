"""The run spec every EHOU experiment starts from (the claim's sweep
included): §IV-A's workloads and a run of one on the scale's machine. A
leaf module, so that the claim and the experiments both build on it."""

from __future__ import annotations

from typing import Any

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
P_COPIES = "workload.copies"


def _spec(
    sc: dict[str, Any], scheme: str, w: tuple[str, str, dict[str, Any]], seed: int
) -> dict[str, Any]:
    return {
        "scheme": scheme,
        "workload": w[1],
        "threads": sc["threads"],
        "tx": sc["tx_by_workload"].get(w[0]) or sc["tx"],
        "seed": seed,
        P_COPIES: sc["copies"],
        **w[2],
    }
