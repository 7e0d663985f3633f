#!/usr/bin/env python3
"""The readings per abstract claim (the guide's "What durasim finds, claim
by claim" and the README's "Does durasim agree with each abstract?"),
computed from a paper's small-scale report.

    python3 scripts/readings.py hoop                  # guide block, from docs/results/hoop/
    python3 scripts/readings.py hoop --readme         # the README's bullet
    python3 scripts/readings.py hoop --grid           # the grid page's scheme table
    python3 scripts/readings.py hoop --from report/hoop   # from a full report instead
    python3 scripts/readings.py snapshot hoop report/hoop # refresh docs/results/hoop/
    python3 scripts/readings.py times                 # the README's times (scripts/times.py)
    python3 scripts/readings.py quickstart            # the README's quick-start reading

A report directory is either a full `durasim-lab reproduce PAPER` report
(`config.json`, one CSV per experiment) or its trimmed snapshot under
docs/results/PAPER/ (the columns this script reads, `source.json`): the
same column names, the same numbers. `scripts/docs.py check` fails when a
page's block differs from what this prints from docs/results/; `docs.py
gen` rewrites the blocks. Every number is a ratio, range or mean of CSV
columns; the words between them are this script's.
"""

from __future__ import annotations

import json
import math
import re
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
KEYS = ["scheme", "workload", "config_label"]

#: What every claim sweep's CSV holds per point (python/durasim/papers/_claims.py).
CLAIM_COLUMNS = ["axis", "point", "point_order", "x", "rival", "metric", "advantage"]
# The CSV columns each paper's readings use (besides KEYS): what a
# snapshot keeps.
NEEDS: dict[str, dict[str, list[str]]] = {
    "hoop": {
        "a_throughput.csv": [
            "tx",
            "threads",
            "throughput_tx_per_mcycle",
            "window_cycles",
            "stat.gc_data_reduction_ratio",
            "stat.gc_runs_periodic",
            "stat.gc_runs_on_demand",
            "stat.on_demand_gc_stall_cycles",
            "stat.staging_overflow_lines",
        ],
        "b_latency.csv": ["critical_path_cycles_mean"],
        "c_traffic.csv": ["write_bytes_per_tx"],
        "g_recovery.csv": [
            "tx",
            "hoop.recovery_threads",
            "hoop.recovery_bandwidth_gbps",
            "recovery_ms",
        ],
        "i_mapping_table.csv": [
            "hoop.mapping_table_bytes",
            "throughput_tx_per_mcycle",
            "stat.gc_runs_on_demand",
            "stat.on_demand_gc_stall_cycles",
            "stat.gc_data_reduction_ratio",
            "stat.gc_cycles",
            "nvm_write_queue_full_stall_cycles",
        ],
        "l_claim.csv": CLAIM_COLUMNS,
    },
    "morlog": {
        "a_throughput.csv": ["threads", "throughput_tx_per_mcycle", "window_cycles"],
        "b_traffic.csv": ["write_bytes_per_tx"],
        "c_energy.csv": ["write_energy_nj_per_tx"],
        "e_macro.csv": [
            "threads",
            "throughput_tx_per_mcycle",
            "write_bytes_per_tx",
            "window_cycles",
            "measured_tx",
            "program_stores_per_tx",
            "silent_store_share",
            "stat.silent_log_writes_dropped",
        ],
        "k_workloads.csv": ["repeated_store_share"],
        "l_claim.csv": [*CLAIM_COLUMNS, "morlog-slde repeated_store_share"],
    },
    "ehou": {
        "a_overhead.csv": [
            "norm_overhead",
            "norm_overhead_bytes",
            "steady_overhead_ops_per_tx",
            "stat.ait_flushes_lazy_overwrite",
            "measured_tx",
        ],
        "b_throughput.csv": ["threads", "throughput_tx_per_mcycle"],
        "c_persist.csv": ["ehou.persist", "throughput_tx_per_mcycle"],
        "f_claim.csv": CLAIM_COLUMNS,
    },
    "dpc": {
        "a_overall.csv": ["execution_time_ns", "nvm_bytes_written", "overhead_vs_baseline_pct"],
        "c_software.csv": [
            "tx",
            "throughput_tx_per_mcycle",
            "hybrid.dram_cache_bytes",
            "dram_cache_miss_ratio",
        ],
        "h_workloads.csv": ["program_stores_per_tx", "words_per_written_line"],
        "i_claim.csv": [*CLAIM_COLUMNS, "dpc stat.checkpoints"],
    },
}

NAMES = {
    "tpcc": "TPC-C",
    "ycsb": "YCSB",
    "tatp": "TATP",
    "echo": "Echo",
    "ckpt-cow": "CoW",
    "thynvm": "ThyNVM",
    "dudetm": "DudeTM",
    "pmdk-undo": "PMDK",
}


# ------------------------------------------------------------------ input


class Report:
    """One paper's report directory, full or trimmed, read column by column."""

    def __init__(self, paper: str, path: Path) -> None:
        if paper not in NEEDS:
            raise SystemExit(unknown_paper(paper))
        self.paper = paper
        self.path = Path(path)
        if not self.path.is_dir():
            raise SystemExit(f"readings.py: {self.path}: no such report directory")
        self.source = source_of(self.path)

    def csv(self, name: str) -> pd.DataFrame:
        want = set(KEYS) | set(NEEDS[self.paper][name])
        f = self.path / name
        if not f.exists():
            raise SystemExit(f"readings.py: {f} missing (the {self.paper} report's {name})")
        df = pd.read_csv(f, usecols=lambda c: c in want)
        missing = want - set(df.columns) - {"config_label"}
        if missing:
            raise SystemExit(f"readings.py: {f}: columns missing: {sorted(missing)}")
        if "config_label" not in df.columns:
            df["config_label"] = df["workload"]
        return df


def unknown_paper(paper: str) -> str:
    import difflib

    near = difflib.get_close_matches(paper, list(NEEDS), n=1)
    hint = f"; did you mean '{near[0]}'?" if near else ""
    return f"readings.py: unknown paper '{paper}' (valid: {', '.join(NEEDS)}){hint}"


def source_of(path: Path) -> dict:
    """The report's build, scale and date: `source.json` of a snapshot, or
    `config.json` and the date `index.html` states of a full report."""
    if (path / "source.json").exists():
        return json.loads((path / "source.json").read_text())
    cfg = json.loads((path / "config.json").read_text()) if (path / "config.json").exists() else {}
    date = None
    if (path / "index.html").exists():
        m = re.search(r"(\d{4}-\d\d-\d\d) \d\d:\d\d UTC", (path / "index.html").read_text())
        date = m[1] if m else None
    if date is None and (path / "config.json").exists():
        mtime = (path / "config.json").stat().st_mtime
        date = datetime.fromtimestamp(mtime, timezone.utc).strftime("%Y-%m-%d")
    return {
        "git_commit": cfg.get("git_commit", "unknown"),
        "scale": cfg.get("scale", "unknown"),
        "date": date or "unknown",
    }


def build_of(source: dict) -> str:
    commit = str(source.get("git_commit", "unknown"))
    short = commit.split()[0][:7]
    return short + (", with uncommitted changes" if "uncommitted" in commit else "")


# --------------------------------------------------------------- numbers


def num(v: float) -> str:
    """Two decimals; one from 10 up (as the hand-written tables had them)."""
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def x(v: float) -> str:
    return f"{num(v)}×"


def rng(vals, unit: str = "×") -> str:
    lo, hi = num(min(vals)), num(max(vals))
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def pct(v: float) -> str:
    return f"{100 * v:.0f} %"


def pct1(v: float) -> str:
    return f"{100 * v:.1f} %"


def pct_rng(vals) -> str:
    lo, hi = f"{100 * min(vals):.0f}", f"{100 * max(vals):.0f}"
    return f"{lo} %" if lo == hi else f"{lo}–{hi} %"


def int_rng(vals) -> str:
    lo, hi = f"{min(vals):,.0f}", f"{max(vals):,.0f}"
    return lo if lo == hi else f"{lo}–{hi}"


def geomean(vals) -> float:
    vals = list(vals)
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def name(w: str) -> str:
    return NAMES.get(w, w)


def name_s(s: str) -> str:
    """A checkpointing scheme as the DPC paper names it."""
    return {"ckpt-logging": "Logging", "page-overlay": "PageOverlay", "dpc": "DPC"}.get(s, name(s))


def names(ws) -> str:
    ws = [name(w) for w in ws]
    return ws[0] if len(ws) == 1 else ", ".join(ws[:-1]) + " and " + ws[-1]


def ratio(df: pd.DataFrame, col: str, num: str, den: str, by: str = "workload") -> pd.Series:
    """`col` of scheme `num` over scheme `den`, per `by` (in the CSV's order)."""
    t = df.pivot_table(index=by, columns="scheme", values=col, aggfunc="first", sort=False)
    return (t[num] / t[den]).dropna()


def level(v: float) -> bool:
    """A ratio that reads 1.00× at the tables' precision: neither side leads."""
    return f"{v:.2f}" == "1.00"


def agreement(ratios: pd.Series, unit: str = "workloads") -> str:
    """'yes', 'no' or 'on K of N ...': how many ratios favour the scheme (> 1;
    one that reads 1.00× counts as level, not against)."""
    k = int(sum(1 for v in ratios if v > 1 or level(v)))
    n = len(ratios)
    if k == n:
        return "yes"
    if k == 0:
        return "no"
    return f"on {k} of {n} {unit}"


def size_word(best: float, paper: float) -> str:
    """The scheme's best advantage against the paper's (both as ratios)."""
    return "larger" if best > paper else "smaller"


def claim_points(claim: pd.DataFrame, axis: str, rival: str, metric: str) -> pd.DataFrame:
    c = claim[(claim["axis"] == axis) & (claim["rival"] == rival) & (claim["metric"] == metric)]
    return c.sort_values("point_order")


# ------------------------------------------------------------------ HOOP


def recovery(g: pd.DataFrame) -> dict:
    """Recovery time against threads, per NVM bandwidth: the time with one
    thread, how far it halves with each doubling of threads (until the
    bandwidth cap binds), and the time with the most threads."""
    thr, bwc = "hoop.recovery_threads", "hoop.recovery_bandwidth_gbps"
    g = g[g["scheme"] == "hoop"].sort_values([bwc, thr])
    one = g[g[thr] == g[thr].min()]["recovery_ms"]
    base, t0 = float(one.max()), int(g[thr].min())
    linear: dict[int, list[float]] = {}
    most: list[float] = []
    scales = True
    for bw, runs in g.groupby(bwc, sort=True):
        ms = runs["recovery_ms"].tolist()
        ts = runs[thr].astype(int).tolist()
        scales &= all(b < a for a, b in zip(ms, ms[1:]))
        upto = max(t for t, v in zip(ts, ms) if v <= base * t0 / t * 1.01)
        linear.setdefault(upto, []).append(float(bw))
        most.append(ms[-1])
    tmax = int(g[thr].max())
    bws = sorted(g[bwc].unique())
    halves = "; ".join(f"{int_rng(b)} GB/s up to {t} threads" for t, b in sorted(linear.items()))
    text = (
        f"{base:,.0f} ms with {t0} recovery thread, halving with each doubling of threads "
        f"({halves}), then bound by NVM bandwidth; with {tmax} threads {max(most):,.0f} ms at "
        f"{bws[0]:g} GB/s to {min(most):,.0f} ms at {bws[-1]:g} GB/s"
    )
    return {"text": text, "scales": scales}


def hoop(r: Report) -> dict[str, str]:
    a = r.csv("a_throughput.csv")
    thr_redo = ratio(a, "throughput_tx_per_mcycle", "hoop", "opt-redo")
    thr_lad = ratio(a, "throughput_tx_per_mcycle", "hoop", "lad")
    c = r.csv("c_traffic.csv")
    fewer_redo = ratio(c, "write_bytes_per_tx", "opt-redo", "hoop")
    more_lad = ratio(c, "write_bytes_per_tx", "hoop", "lad")
    b = r.csv("b_latency.csv")
    lat = {
        s: ratio(b, "critical_path_cycles_mean", s, "ideal") for s in ("hoop", "opt-redo", "lad")
    }
    byt = {s: ratio(c, "write_bytes_per_tx", s, "ideal") for s in ("hoop", "opt-redo", "lad")}
    h = a[a["scheme"] == "hoop"]
    lad = a[a["scheme"] == "lad"]
    claim = r.csv("l_claim.csv")
    claim = claim[claim["scheme"] == "hoop"]
    lad_claim = claim_points(claim, "locality", "lad", "throughput_tx_per_mcycle")
    words = claim_points(claim, "words", "opt-redo", "throughput_tx_per_mcycle")
    g = r.csv("g_recovery.csv")
    rec = recovery(g)
    m = r.csv("i_mapping_table.csv")
    m = m[(m["scheme"] == "hoop")].copy()
    # The default table is 2 MB (HOOP §III-C).
    dflt = m[m["hoop.mapping_table_bytes"] == 2 * 1024 * 1024].iloc[0]
    m["norm"] = m["throughput_tx_per_mcycle"] / float(dflt["throughput_tx_per_mcycle"])
    small, big = (
        m.loc[m["hoop.mapping_table_bytes"].idxmin()],
        m.loc[m["hoop.mapping_table_bytes"].idxmax()],
    )

    top = thr_redo.sort_values(ascending=False)
    below = top[top < 1]
    detail = ", ".join(f"{x(v)} on {name(w)}" for w, v in top.head(2).items())
    if len(below):
        detail += "; " + ", ".join(f"{x(v)} on {name(w)}" for w, v in below.items())
    lad_wins = lad_claim[lad_claim["advantage"] > 1]
    lad_claim_txt = (
        " and "
        + "; ".join(
            f"{x(v)} in the claim sweep only at “{p}”"
            for p, v in zip(lad_wins["point"], lad_wins["advantage"])
        )
        if len(lad_wins)
        else ", and below 1 at every point of the claim sweep"
    )
    bytes_closer = int((byt["hoop"] < byt["opt-redo"]).sum())
    lat_closer = int((lat["hoop"] < lat["opt-redo"]).sum())
    n = len(thr_redo)

    rows = [
        (
            "up to 1.7× the performance of the state-of-the-art techniques",
            f"over Opt-Redo {rng(thr_redo)} ({detail}); over LAD {rng(thr_lad)} on every "
            f"workload{lad_claim_txt}",
            f"{agreement(thr_redo)} against Opt-Redo, {size_word(thr_redo.max(), 1.7)}; "
            f"{agreement(thr_lad)} against LAD",
        ),
        (
            "up to 2.1× less write amplification",
            f"{rng(fewer_redo)} fewer bytes than Opt-Redo; {rng(more_lad)} *more* bytes than LAD",
            f"{agreement(fewer_redo)} against Opt-Redo, {size_word(fewer_redo.max(), 2.1)}; "
            f"{agreement(1 / more_lad)} against LAD",
        ),
        (
            "critical-path latency and write amplification close to the native system",
            f"HOOP's critical-path latency {rng(lat['hoop'])} the native system's and its bytes "
            f"{rng(byt['hoop'])}; Opt-Redo's {rng(lat['opt-redo'])} and {rng(byt['opt-redo'])}, "
            f"LAD's {rng(lat['lad'])} and {rng(byt['lad'])}",
            f"closer than redo logging in bytes on {bytes_closer} of {n} workloads and in "
            f"latency on {lat_closer} of {n}; not close to native",
        ),
        (
            "scalable recovery on multi-core systems",
            f"modelled recovery of {name(g['workload'].iloc[0])} after "
            f"{int(g['tx'].iloc[0]):,} transactions: {rec['text']} "
            "(`hoop.recovery_threads`, `hoop.recovery_bandwidth_gbps`; figure (g))",
            "yes" if rec["scales"] else "no",
        ),
    ]
    stall = h["stat.on_demand_gc_stall_cycles"] / h["window_cycles"]
    evidence = [
        "GC coalescing (`gc_data_reduction_ratio`, grid): "
        f"{pct_rng(h['stat.gc_data_reduction_ratio'])} "
        "of the words GC scans are replaced by later ones.",
        f"On-demand GC passes per grid run (full mapping table): "
        f"{int_rng(h['stat.gc_runs_on_demand'])}; they stall every core for "
        f"{pct_rng(stall)} of the window (`on_demand_gc_stall_cycles` / `window_cycles`).",
        f"Mapping-table size, figure (i), {name(m['workload'].iloc[0])}: {x(big['norm'])} the "
        f"default 2 MB table's throughput with {big['hoop.mapping_table_bytes'] / 2**20:g} MB, "
        f"{x(small['norm'])} with {small['hoop.mapping_table_bytes'] / 2**10:g} KB. With "
        f"{big['hoop.mapping_table_bytes'] / 2**20:g} MB against 2 MB: on-demand GC passes "
        f"{dflt['stat.gc_runs_on_demand']:g} → {big['stat.gc_runs_on_demand']:g}, their stalls "
        f"{x(big['stat.on_demand_gc_stall_cycles'] / dflt['stat.on_demand_gc_stall_cycles'])}, "
        f"GC coalescing {pct(big['stat.gc_data_reduction_ratio'])} against "
        f"{pct(dflt['stat.gc_data_reduction_ratio'])}, GC active (`gc_cycles`) "
        f"{x(big['stat.gc_cycles'] / dflt['stat.gc_cycles'])}, write-backs waiting for a full "
        "NVM write queue (`nvm_write_queue_full_stall_cycles`) "
        + x(big["nvm_write_queue_full_stall_cycles"] / dflt["nvm_write_queue_full_stall_cycles"])
        + ".",
        f"LAD's staging overflow in the grid: {int(lad['stat.staging_overflow_lines'].sum()):,} "
        "lines (`staging_overflow_lines`, all runs).",
        "Stores per transaction in the claim sweep (vector): "
        + ", ".join(f"{v:.1f} with {p}" for p, v in zip(words["point"], words["x"]))
        + "; HOOP over Opt-Redo there: "
        + ", ".join(x(v) for v in words["advantage"])
        + ".",
    ]
    intro = (
        f"Grid: {int(h['threads'].iloc[0])} threads, {int_rng(h['tx'])} transactions per run, "
        f"{int_rng(h['stat.gc_runs_periodic'])} periodic GC passes per run."
    )
    best_lad = lad_claim["advantage"].max()
    readme = (
        f"- **HOOP**: faster than redo logging (Opt-Redo) on {int((thr_redo > 1).sum())} of {n} "
        f"workloads (up to {x(thr_redo.max())}"
        + (f"; {', '.join(f'{x(v)} on {name(w)}' for w, v in below.items())}" if len(below) else "")
        + f") and writes {rng(fewer_redo)} fewer bytes; recovery "
        + ("scales with threads" if rec["scales"] else "does not scale with threads")
        + ". Against LAD it "
        + ("does not hold" if (thr_lad < 1).all() else "holds partly")
        + f": LAD writes each line home once, while HOOP's GC coalesces "
        f"{pct_rng(h['stat.gc_data_reduction_ratio'])} of the words it migrates and its full "
        f"mapping table forces on-demand GC that stalls every core for {pct_rng(stall)} of the "
        f"window, so HOOP runs at {rng(thr_lad)} LAD's throughput"
        + (
            f" and leads it (by {pct(best_lad - 1)}) only with a small hot set."
            if best_lad > 1
            else " and trails it at every point of the claim sweep."
        )
    )
    return {"intro": intro, "rows": rows, "evidence": evidence, "readme": readme}


# ---------------------------------------------------------------- MorLog


def morlog(r: Report) -> dict[str, str]:
    me, rival = "morlog-slde", "fwb-crade"
    a = r.csv("a_throughput.csv")
    thr = ratio(a, "throughput_tx_per_mcycle", me, rival)
    b = r.csv("b_traffic.csv")
    fewer = ratio(b, "write_bytes_per_tx", rival, me)
    c = r.csv("c_energy.csv")
    energy = ratio(c, "write_energy_nj_per_tx", me, rival)
    e = r.csv("e_macro.csv")
    mthr = ratio(e, "throughput_tx_per_mcycle", me, rival)
    mfewer = ratio(e, "write_bytes_per_tx", rival, me)
    claim = r.csv("l_claim.csv")
    claim = claim[claim["scheme"] == me]
    rep_thr = claim_points(claim, "repeats", rival, "throughput_tx_per_mcycle")
    rep_byt = claim_points(claim, "repeats", rival, "write_bytes_per_tx")
    rep_slde = claim_points(claim, "repeats", "fwb-slde", "throughput_tx_per_mcycle")
    val_thr = claim_points(claim, "values", rival, "throughput_tx_per_mcycle")
    val_byt = claim_points(claim, "values", rival, "write_bytes_per_tx")
    k = r.csv("k_workloads.csv")
    periods = a["window_cycles"] / 3e6

    def short(p: str) -> str:
        return p.split()[0].split("(")[0]

    def values(c: pd.DataFrame) -> str:
        order = c.sort_values("advantage")
        return ", ".join(f"{x(v)} ({short(p)})" for p, v in zip(order["point"], order["advantage"]))

    def macro(s: pd.Series) -> str:
        return ", ".join(f"{x(v)} ({name(w)})" for w, v in s.sort_values().items())

    val_wl = name(claim[claim["axis"] == "values"]["workload"].iloc[0])
    rep_wl = name(claim[claim["axis"] == "repeats"]["workload"].iloc[0])
    pos_e = energy < 1
    rows = [
        (
            "72.5 % higher performance",
            f"MorLog-SLDE / FWB-CRADE throughput {rng(thr)} on the {len(thr)} micro-benchmarks, "
            f"{macro(mthr)}; in the claim sweep {rng(rep_thr['advantage'])} over {rep_wl}'s "
            f"{rep_thr['point'].iloc[0].split()[0]}–{rep_thr['point'].iloc[-1].split()[0]} "
            "puts per "
            f"transaction and {values(val_thr)} on {val_wl}",
            f"{agreement(pd.concat([thr, mthr]))}, "
            f"{size_word(max(thr.max(), mthr.max(), val_thr['advantage'].max()), 1.725)}",
        ),
        (
            "41.1 % less NVMM write traffic",
            f"{rng(fewer)} fewer bytes on the micro-benchmarks, {macro(mfewer)}; in the claim "
            f"sweep {rng(rep_byt['advantage'])} over {rep_wl}'s puts and {values(val_byt)} on "
            f"{val_wl}",
            f"{agreement(pd.concat([fewer, mfewer]))}; larger than the paper's "
            f"{x(1 / (1 - 0.411))} on "
            + (
                names(
                    [w for w, v in mfewer.items() if v > 1 / (1 - 0.411)]
                    + [
                        f"{short(p)} values"
                        for p, v in zip(val_byt["point"], val_byt["advantage"])
                        if v > 1 / (1 - 0.411)
                    ]
                )
                or "none"
            ),
        ),
        (
            "49.9 % less NVMM write energy",
            f"MorLog-SLDE's write energy {rng(energy)} FWB-CRADE's on the micro-benchmarks "
            "(figure (c))",
            f"{agreement(1 / energy)}, {size_word(1 / energy.min(), 1 / (1 - 0.499))}"
            + (
                f"; not on {names(list(energy[~pos_e].index))}"
                if (~pos_e).any() and pos_e.any()
                else ""
            ),
        ),
    ]
    ycsb = e[(e["scheme"] == me) & (e["workload"] == "ycsb")].iloc[0]
    # MorLog-SLDE's measured repeated-store share at each point of the sweep.
    echo_rep = rep_thr["morlog-slde repeated_store_share"]
    evidence = [
        f"Grid runs: {periods.min():.1f}–{periods.max():.1f} force-write-back periods (3 M cycles) "
        "in each measured window.",
        "`repeated_store_share` of the grid's workloads (figure (k)): "
        f"{pct_rng(k['repeated_store_share'])}; "
        f"in the claim sweep {pct1(echo_rep.iloc[0])} ({rep_wl}, "
        f"{rep_thr['point'].iloc[0]}) to {pct1(echo_rep.iloc[-1])} ({rep_thr['point'].iloc[-1]}).",
        "MorLog-SLDE over FWB-SLDE (same encoder) along the repeated share: "
        + " → ".join(x(v) for v in rep_slde["advantage"])
        + ".",
        f"YCSB: {pct(ycsb['silent_store_share'])} of stores silent; MorLog drops "
        f"{ycsb['stat.silent_log_writes_dropped'] / ycsb['measured_tx']:.1f} log entries per "
        f"transaction of its {ycsb['program_stores_per_tx']:.1f} stores "
        f"(`silent_log_writes_dropped`); {x(mfewer['ycsb'])} fewer bytes than FWB-CRADE.",
    ]
    intro = (
        f"Grid: {len(thr)} micro-benchmarks at {int(a['threads'].iloc[0])} threads, "
        f"{len(mthr)} macro-benchmarks at {int(e['threads'].iloc[0])}."
    )
    readme = (
        "- **MorLog**: "
        + ("same direction" if (pd.concat([thr, mthr]) > 1).all() else "partly the same direction")
        + ", "
        f"{'far ' if thr.max() - 1 < (0.725) / 2 else ''}smaller: {rng(pd.concat([thr, mthr]))} "
        f"FWB-CRADE's throughput against the paper's 1.725×; our transactions store a word "
        f"twice in {pct_rng(k['repeated_store_share'])} of stores where the paper measured 83 % "
        f"of data updated more than once. Its traffic saving reaches {x(mfewer.max())} only on "
        f"{name(mfewer.idxmax())}, whose stores are {pct(ycsb['silent_store_share'])} silent."
    )
    return {"intro": intro, "rows": rows, "evidence": evidence, "readme": readme}


# ------------------------------------------------------------------ EHOU


def ehou(r: Report) -> dict[str, str]:
    b = r.csv("b_throughput.csv")
    # Two workloads run twice, with uniform and with Zipfian keys: per label.
    ssp = ratio(b, "throughput_tx_per_mcycle", "ehou", "osp", "config_label")
    redu = ratio(b, "throughput_tx_per_mcycle", "ehou", "redu", "config_label")
    a = r.csv("a_overhead.csv")
    ops = a.pivot_table(index="config_label", columns="scheme", values="norm_overhead", sort=False)
    byts = a.pivot_table(
        index="config_label", columns="scheme", values="norm_overhead_bytes", sort=False
    )
    c = r.csv("c_persist.csv")
    c = c.assign(scheme=c["ehou.persist"])
    lazy = ratio(c, "throughput_tx_per_mcycle", "lazy", "eager", "config_label")
    claim = r.csv("f_claim.csv")
    claim = claim[claim["scheme"] == "ehou"]
    ws = claim_points(claim, "write_set", "osp", "throughput_tx_per_mcycle")

    e_ops = ops["ehou"]
    under, over = e_ops[e_ops <= 1], e_ops[e_ops > 1].sort_values()
    ops_txt = f"EHOU is {rng(under)} SSP on {len(under)} workloads"
    if len(over):
        ops_txt += ", " + " and ".join(f"{x(v)} on {name(w)}" for w, v in over.items())
    lazy_wins, eager_wins = lazy[lazy > 1], lazy[lazy < 1]
    lazy_txt = f"lazy {rng(lazy_wins)} eager on {names(list(lazy_wins.index))}"
    if len(eager_wins):
        eager = (1 / eager_wins).sort_values()
        lazy_txt += "; eager " + " and ".join(
            f"{x(v)} lazy on {name(w)}" if i == 0 else f"{x(v)} on {name(w)}"
            for i, (w, v) in enumerate(eager.items())
        )

    def except_(s: pd.Series, good) -> str:
        bad = [name(w) for w, v in s.items() if not good(v)]
        return "yes" if not bad else ("no" if len(bad) == len(s) else f"yes, except {names(bad)}")

    rows = [
        (
            "EHOU's throughput is 24.0 % above SSP's on average (abstract)",
            f"EHOU / SSP (`osp`) {rng(ssp)} per workload, mean {x(ssp.mean())} (geometric "
            f"{x(geomean(ssp))})",
            f"{except_(ssp, lambda v: v > 1)}, {size_word(ssp.mean(), 1.24)}",
        ),
        (
            "41.2 % above REDU on average (§I)",
            f"EHOU / REDU {rng(redu)}, mean {x(redu.mean())} (geometric {x(geomean(redu))})"
            + (
                "; REDU leads on "
                + ", ".join(f"{name(w)} ({x(v)})" for w, v in redu[redu < 1].items())
                if (redu < 1).any()
                else ""
            ),
            except_(redu, lambda v: v > 1),
        ),
        (
            "lower PM write overhead than SSP and REDU (§IV (a))",
            f"in write operations (the paper's unit, figure (a)) {ops_txt}, and REDU "
            f"{rng(ops['redu'])} SSP; in bytes EHOU writes {pct_rng(byts['ehou'])} of SSP's "
            "overhead",
            except_(e_ops, lambda v: v < 1),
        ),
        (
            "lazy persisting beats eager (§III-B)",
            lazy_txt,
            except_(lazy, lambda v: v > 1),
        ),
    ]
    bt = a[(a["config_label"] == "btree")].set_index("scheme")
    evidence = [
        f"Largest lead over SSP: {name(ssp.idxmax())} ({x(ssp.max())}). Claim sweep "
        f"({name(ws['workload'].iloc[0])}), EHOU / SSP by item size: "
        + ", ".join(
            f"{x(v)} at {p} ({xx:g} line{'s' if xx != 1 else ''} per item)"
            for p, v, xx in zip(ws["point"], ws["advantage"], ws["x"])
        )
        + ".",
        "B+tree (`btree`), PM write overhead operations per transaction "
        f"(`steady_overhead_ops_per_tx`): EHOU {bt.loc['ehou', 'steady_overhead_ops_per_tx']:.2f}, "
        "of them AIT entries flushed on a lazy overwrite (`ait_flushes_lazy_overwrite`) "
        f"{bt.loc['ehou', 'stat.ait_flushes_lazy_overwrite'] / bt.loc['ehou', 'measured_tx']:.2f}; "
        f"SSP {bt.loc['osp', 'steady_overhead_ops_per_tx']:.2f}. In bytes EHOU's overhead is "
        f"{pct(bt.loc['ehou', 'norm_overhead_bytes'])} of SSP's (`norm_overhead_bytes`).",
    ]
    intro = f"Grid: {int(b['threads'].iloc[0])} threads, {len(ssp)} workloads."
    readme = (
        "- **EHOU**: "
        + ("as claimed" if ssp.mean() > 1 and redu.mean() > 1 else "not as claimed")
        + f", {size_word(ssp.mean(), 1.24)}: {x(ssp.mean())} SSP's "
        f"throughput on average (paper 1.24×) and {x(redu.mean())} REDU's (paper 1.41×)"
        + (f", except {names(list(redu[redu < 1].index))} against REDU" if (redu < 1).any() else "")
        + "; fewer PM write operations than SSP"
        + (f" except on {names(list(over.index))}" if len(over) else "")
        + "."
    )
    return {"intro": intro, "rows": rows, "evidence": evidence, "readme": readme}


# ------------------------------------------------------------------- DPC


def dpc(r: Report) -> dict[str, str]:
    time_, byts = "execution_time_ns", "nvm_bytes_written"
    a = r.csv("a_overall.csv")
    rivals = ("thynvm", "ckpt-logging", "ckpt-cow")
    # Lower is better for both: the rival's over DPC's.
    t_over = {s: ratio(a, time_, s, "dpc") for s in rivals}
    b_over = {s: ratio(a, byts, s, "dpc") for s in rivals}
    claim = r.csv("i_claim.csv")
    claim = claim[claim["scheme"] == "dpc"]
    wl = name(claim["workload"].iloc[0])
    thy_epoch = claim_points(claim, "epoch", "thynvm", time_)["advantage"]
    thy_table = claim_points(claim, "table", "thynvm", time_)["advantage"]
    cow_epoch = claim_points(claim, "epoch", "ckpt-cow", byts)
    cow_table = claim_points(claim, "table", "ckpt-cow", byts)

    def cow_epochs() -> str:
        # The paper's interval is 30 M cycles (§5.1.2); the points are labelled
        # in paper-scale cycles.
        items = [
            (f"{x(v)} DPC's bytes at " if k == 0 else f"{x(v)} at ")
            + (f"the paper's {p.strip()}-cycle interval" if p.strip() == "30 M" else p.strip())
            for k, (p, v) in enumerate(zip(cow_epoch["point"], cow_epoch["advantage"]))
        ]
        return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]

    def cow_tables() -> str:
        items = [
            (
                f"{x(v)} DPC's bytes at a {p.replace(' pool', '')} derivative pool"
                if k == 0
                else f"{x(v)} at {p.replace(' pool', '')}"
            )
            for k, (p, v) in enumerate(zip(cow_table["point"], cow_table["advantage"]))
        ]
        return ", ".join(items)

    thy_t = t_over["thynvm"]
    lvl = [w for w, v in thy_t.items() if level(v)]
    below = [w for w, v in thy_t.items() if v < 1 and not level(v)]
    row1 = (
        f"ThyNVM's execution time {rng(thy_t)} DPC's on the {len(thy_t)} workloads"
        + (f" (level on {names(lvl)})" if lvl else "")
        + (f" (below 1 on {names(below)})" if below else "")
        + f"; {rng(thy_epoch)} over the checkpoint intervals and {rng(thy_table)} over the "
        "table sizes in the claim sweep"
    )
    against = [(s, w) for s in rivals for w, v in b_over[s].items() if v < 1 and not level(v)]
    parts = []
    for s in rivals:
        v = b_over[s]
        bad = v[(v < 1) & ~v.map(level)]
        good = v.drop(bad.index)
        txt = f"{name_s(s)} {rng(good)}"
        if len(bad):
            txt += f" on {len(good)} workloads and " + ", ".join(
                f"{x(b)} on {name(w)}" for w, b in bad.items()
            )
        parts.append(txt)
    row2 = (
        f"ThyNVM writes {parts[0].split(' ', 1)[1]} DPC's bytes, "
        + ", ".join(parts[1:])
        + f"; on {wl} CoW writes {cow_epochs()} (claim sweep)"
    )
    row2_dir = "yes" + (
        ", except " + "; ".join(f"{name_s(s)} on {name(w)}" for s, w in against) if against else ""
    )

    sw = r.csv("c_software.csv")
    sw_txt, wins, losses = [], [], []
    for w, runs in sw.groupby("workload", sort=False):
        thr = runs.groupby("scheme")["throughput_tx_per_mcycle"].first()
        libs = [s for s in ("pmdk-undo", "dudetm") if s in thr]
        q = {s: thr["dpc"] / thr[s] for s in libs}
        wins += [(s, w) for s in libs if q[s] > 1]
        losses += [(s, w) for s in libs if q[s] <= 1]
        if any(v > 1 for v in q.values()):
            order = sorted(libs, key=lambda s: -q[s])
            sw_txt.append(
                f"{name(w)}: DPC "
                + " and ".join(
                    f"{x(q[s])} {name(s)}'s" + (" throughput" if i == 0 else "")
                    for i, s in enumerate(order)
                )
            )
        else:
            order = sorted(libs, key=lambda s: q[s])
            sw_txt.append(
                f"{name(w)}: "
                + ", ".join(
                    f"{name(s)} {x(1 / q[s])}" + (" DPC's" if i == 0 else "")
                    for i, s in enumerate(order)
                )
            )
    sw_txt.sort(key=lambda t: 0 if "DPC " in t.split(":")[1][:5] else 1)
    if not losses:
        sw_dir = "yes"
    elif not wins:
        sw_dir = "no"
    else:
        sw_dir = "no, except " + "; ".join(f"{name(s)} on {name(w)}" for s, w in wins)
    cow_bad = any(v < 1 and not level(v) for v in cow_table["advantage"])
    rows = [
        (
            "1.28× higher throughput than the state-of-the-art hardware checkpointing (ThyNVM)",
            row1,
            f"{agreement(thy_t)}, {size_word(thy_t.max(), 1.28)}",
        ),
        ("34 % less NVM wear-out than hardware checkpointing", row2, row2_dir),
        (
            "13.6× the throughput of NVM software libraries (DudeTM, PMDK)",
            "; ".join(sw_txt) + " (the libraries without the DRAM cache, §5.1.2)",
            sw_dir,
        ),
        (
            "low metadata with few extra writes (the trade-off it breaks)",
            f"on {wl} CoW writes {cow_tables()} (claim sweep)",
            f"not on {wl}" if cow_bad else "yes",
        ),
    ]
    evidence = []
    slowest = None
    for w, runs in sw.groupby("workload", sort=False):
        nat = runs[runs["scheme"] == "ideal"]
        cached = nat[nat["hybrid.dram_cache_bytes"] > 0].iloc[0]
        bare = nat[nat["hybrid.dram_cache_bytes"] == 0].iloc[0]
        d = runs[runs["scheme"] == "dpc"].iloc[0]
        slow = bare["throughput_tx_per_mcycle"] / cached["throughput_tx_per_mcycle"]
        if slowest is None or slow > slowest[1]:
            slowest = (w, slow, cached["dram_cache_miss_ratio"])
        evidence.append(
            f"{name(w)} ({int(d['tx']):,} transactions): the native system misses the DRAM "
            f"cache on {pct(cached['dram_cache_miss_ratio'])} of accesses "
            "(`dram_cache_miss_ratio`) and runs "
            f"{x(bare['throughput_tx_per_mcycle'] / cached['throughput_tx_per_mcycle'])} slower "
            f"behind it than without it ({cached['throughput_tx_per_mcycle']:,.0f} against "
            f"{bare['throughput_tx_per_mcycle']:,.0f} tx/Mcycle); DPC behind it "
            f"{d['throughput_tx_per_mcycle']:,.0f}."
        )
    h = r.csv("h_workloads.csv").set_index("workload")
    lw = claim["workload"].iloc[0]
    if lw in h.index:
        evidence.append(
            f"{wl} (figure (h)): {h.loc[lw, 'program_stores_per_tx']:.0f} stores per operation, "
            f"{h.loc[lw, 'words_per_written_line']:.1f} of a line's 8 words written."
        )
    ov = a[a["workload"] == "echo"].set_index("scheme")["overhead_vs_baseline_pct"]
    if len(ov):
        neg = ov[ov < 0].sort_values()
        if len(neg):
            evidence.append(
                "Echo, overhead over the Baseline (`overhead_vs_baseline_pct`, figure (a)): "
                + ", ".join(f"{name_s(s)} {v:+.0f} %" for s, v in neg.items())
                + "."
            )
    ck = claim_points(claim, "table", "ckpt-cow", time_)
    evidence.append(
        "Checkpoints per DPC run along the claim sweep's pool sizes (`checkpoints`): "
        + ", ".join(f"{v:g} at {p}" for p, v in zip(ck["point"], ck["dpc stat.checkpoints"]))
        + "."
    )
    intro = (
        f"Figure (a) on {len(thy_t)} workloads, the software libraries on "
        + names(list(sw["workload"].unique()))
        + f", the claim sweep on {wl}."
    )
    hw = [
        s for s in ("ckpt-logging", "ckpt-cow", "thynvm", "page-overlay") if s in set(a["scheme"])
    ]
    hw_b = pd.DataFrame({s: ratio(a, byts, s, "dpc") for s in hw})
    fewer = hw_b.gt(1).all(axis=1)
    exceptions = "; ".join(
        f"on {name(w)} "
        + " and ".join(f"{name_s(s)} writes {x(v)}" for s, v in hw_b.loc[w].items() if v <= 1)
        + " DPC's bytes"
        for w in hw_b.index[~fewer]
    )
    readme = (
        f"- **Dual-page checkpointing**: ThyNVM's execution time {rng(thy_t)} DPC's; DPC "
        f"writes fewer bytes than every hardware baseline on {int(fewer.sum())} of "
        f"{len(fewer)} workloads"
        + (f" ({exceptions})" if exceptions else "")
        + ". Against the software libraries: "
        + "; ".join(sw_txt)
        + "."
    )
    if losses and slowest is not None:
        readme += (
            f" Where DPC trails them, the DRAM cache is the cause: {name(slowest[0])} misses it "
            f"on {pct(slowest[2])} of accesses, each miss fills a 4 KB page from PCM, and the "
            "libraries run without the cache, as the paper runs them (§5.1.2); with a footprint "
            "that fits the cache DPC leads them (the guide page)."
        )
    return {"intro": intro, "rows": rows, "evidence": evidence, "readme": readme}


# The grid's schemes in the order docs/model/hoop-grid.md reads them.
GRID_ORDER = ["ideal", "lad", "hoop", "osp", "opt-redo", "opt-undo", "lsm"]
GRID_NAMES = {
    "ideal": "native (`ideal`)",
    "lad": "LAD",
    "hoop": "HOOP",
    "osp": "OSP",
    "opt-redo": "Opt-Redo",
    "opt-undo": "Opt-Undo",
    "lsm": "LSM",
}


def hoop_grid_block(path: Path | None = None) -> str:
    """Every scheme of the HOOP report's grid, (a)-(c): throughput against
    Opt-Redo, critical-path latency and bytes written against the native
    system, as ranges over the workloads (docs/model/hoop-grid.md)."""
    rep = Report("hoop", path or RESULTS / "hoop")
    a, b, c = rep.csv("a_throughput.csv"), rep.csv("b_latency.csv"), rep.csv("c_traffic.csv")
    s = rep.source
    schemes = [x for x in GRID_ORDER if x in set(a["scheme"])]
    schemes += sorted(set(a["scheme"]) - set(schemes))
    out = [
        wrap(
            f"Numbers: `python3 scripts/readings.py hoop --grid` from "
            f"[docs/results/hoop/](../results/hoop/SOURCE.md) (the {s['scale']} report of "
            f"{s['date']}, build {build_of(s)}; {a['workload'].nunique()} workloads, "
            f"{int_rng(a['tx'])} transactions per run, 8 threads). Each cell is the range "
            "over the workloads; per-workload values are the report's figures (a)-(c)."
        ),
        "",
        "| scheme | throughput / Opt-Redo | ahead of Opt-Redo on | ahead of LAD on "
        "| critical path / native | bytes written / native |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    thr = "throughput_tx_per_mcycle"
    for sc in schemes:
        t = ratio(a, thr, sc, "opt-redo")
        ahead = sum(1 for v in t if v > 1 and not level(v))
        lad = ratio(a, thr, sc, "lad")
        ahead_lad = sum(1 for v in lad if v > 1 and not level(v))
        lat = ratio(b, "critical_path_cycles_mean", sc, "ideal")
        byt = ratio(c, "write_bytes_per_tx", sc, "ideal")
        out.append(
            f"| {GRID_NAMES.get(sc, sc)} | "
            f"{'—' if sc == 'opt-redo' else rng(t)} | "
            f"{'—' if sc == 'opt-redo' else f'{ahead} of {len(t)}'} | "
            f"{'—' if sc == 'lad' else f'{ahead_lad} of {len(lad)}'} | "
            f"{'—' if sc == 'ideal' else rng(lat)} | {'—' if sc == 'ideal' else rng(byt)} |"
        )
    return "\n".join(out)


PAPERS = {"hoop": hoop, "morlog": morlog, "ehou": ehou, "dpc": dpc}
HEADERS = {
    "hoop": "the paper says (abstract)",
    "morlog": "the paper says (abstract, against FWB-CRADE)",
    "ehou": "the paper says",
    "dpc": "the paper says (abstract)",
}


# ---------------------------------------------------------------- output


def wrap(text: str, indent: str = "") -> str:
    """A paragraph or list item wrapped as the hand-written pages are."""
    # A number stays on the line of its unit.
    text = re.sub(r"(\d) (%|[KMG]B\b|B\b|M\b|ms\b)", "\\1\x00\\2", text)
    for width in range(74, 60, -1):
        out = textwrap.fill(
            text,
            width=width,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        # No wrapped line may read as a list item or heading of its own.
        if not any(re.match(r"\s*([-+*#>]|\d+[.)])(\s|$)", ln) for ln in out.split("\n")[1:]):
            return out.replace("\x00", " ")
    return text.replace("\x00", " ")


def guide_block(paper: str, path: Path | None = None) -> str:
    rep = Report(paper, path or RESULTS / paper)
    d = PAPERS[paper](rep)
    s = rep.source
    out = [
        wrap(
            f"Numbers: `python3 scripts/readings.py {paper}` from "
            f"[docs/results/{paper}/](../../results/{paper}/SOURCE.md) (the {s['scale']} "
            f"report of {s['date']}, build {build_of(s)}). {d['intro']}"
        ),
        "",
        f"| {HEADERS[paper]} | durasim at {s['scale']} scale | same direction? |",
        "| --- | --- | --- |",
    ]
    out += [f"| {a} | {b} | {c} |" for a, b, c in d["rows"]]
    out += ["", "Evidence for the notes below:", ""]
    out += [wrap(f"- {e}", "  ") for e in d["evidence"]]
    return "\n".join(out)


def readme_block(paper: str, path: Path | None = None) -> str:
    rep = Report(paper, path or RESULTS / paper)
    return wrap(PAPERS[paper](rep)["readme"], "  ")


QUICKSTART = RESULTS / "quickstart" / "compare.csv"
QUICKSTART_COLUMNS = [
    "workload",
    "scheme",
    "tx",
    "threads",
    "throughput_tx_per_mcycle",
    "write_bytes_per_tx",
    "stat.gc_runs_periodic",
]


def quickstart_block(path: Path = QUICKSTART) -> str:
    """The README's reading of its quick-start comparison (`durasim compare
    --csv` of opt-redo, hoop, lad, ideal on btree and hashmap)."""
    df = pd.read_csv(path).set_index(["workload", "scheme"])
    bt, hm = df.loc["btree"], df.loc["hashmap"]
    tput = "throughput_tx_per_mcycle"
    wr = "write_bytes_per_tx"
    least = bt[wr].drop("ideal").idxmin()
    return wrap(
        f"On btree HOOP writes {num(bt.loc['hoop', wr] / bt.loc['opt-redo', wr])}× what "
        f"redo logging writes ({bt.loc['hoop', wr]:.0f} against "
        f"{bt.loc['opt-redo', wr]:.0f} B per transaction, its GC's migration included) at "
        f"{x(bt.loc['hoop', tput] / bt.loc['opt-redo', tput])} its throughput "
        f"({x(hm.loc['hoop', tput] / hm.loc['opt-redo', tput])} on hashmap); "
        + (
            "LAD, staging in the controller's ADR queues, writes least"
            if least == "lad"
            else f"{least} writes least"
        )
        + ". `durasim run` shows one run's detail, HOOP's GC among its scheme statistics "
        f"(`gc_runs_periodic`: {int(bt.loc['hoop', 'stat.gc_runs_periodic'])} on btree at "
        "this length):"
    )


def quickstart_snapshot(csv: Path) -> Path:
    """Trim a `durasim compare --csv` of the quick start to the columns read."""
    df = pd.read_csv(csv, usecols=lambda c: c in QUICKSTART_COLUMNS)[QUICKSTART_COLUMNS]
    df.to_csv(QUICKSTART, index=False)
    return QUICKSTART


def block(args: list[str]) -> str:
    """The text of the block `scripts/readings.py ARGS` prints (as a marker names it)."""
    if args == ["quickstart"]:
        return quickstart_block()
    if args == ["times"]:
        # The README's measured times (scripts/times.py, docs/results/times.json).
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import times

        return times.table()
    paper, rest = args[0], args[1:]
    path = None
    if "--from" in rest:
        path = Path(rest[rest.index("--from") + 1])
    if "--grid" in rest:
        if paper != "hoop":
            raise SystemExit("readings.py: --grid: only the hoop report has a grid page")
        return hoop_grid_block(path)
    return readme_block(paper, path) if "--readme" in rest else guide_block(paper, path)


def snapshot(paper: str, report: Path, dest: Path | None = None) -> Path:
    """Write the columns the readings use of a full report to docs/results/PAPER/."""
    rep = Report(paper, report)
    dest = dest or RESULTS / paper
    dest.mkdir(parents=True, exist_ok=True)
    for f in NEEDS[paper]:
        df = pd.read_csv(
            report / f, usecols=lambda col, f=f: col in set(KEYS) | set(NEEDS[paper][f])
        )
        df.to_csv(dest / f, index=False)
    src = {**rep.source, "paper": paper, "command": f"durasim-lab reproduce {paper}"}
    (dest / "source.json").write_text(json.dumps(src, indent=2) + "\n")
    (dest / "SOURCE.md").write_text(
        f"# {paper}: small-report snapshot\n\n"
        f"The columns `scripts/readings.py {paper}` reads of the report "
        f"`durasim-lab reproduce {paper}` wrote (scale `{src['scale']}`, "
        f"{src['date']}, build `{src['git_commit']}`). The full report has every "
        "metric of every run, the figures and `config.json`; regenerate it with that command "
        f"and refresh this snapshot with `python3 scripts/readings.py snapshot {paper} "
        f"report/{paper}`, then `python3 scripts/docs.py gen`.\n"
    )
    return dest


def main(argv: list[str]) -> int:
    try:
        return run(argv[1:])
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise


def run(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    if args[:2] == ["snapshot", "quickstart"] and len(args) == 3:
        print(f"wrote {quickstart_snapshot(Path(args[2]))}")
        return 0
    if args[0] == "snapshot":
        if len(args) != 3:
            raise SystemExit("readings.py: usage: readings.py snapshot PAPER REPORT_DIR")
        print(f"wrote {snapshot(args[1], Path(args[2]))}")
        return 0
    if args in (["times"], ["quickstart"]):
        print(block(args))
        return 0
    if args[0] not in PAPERS:
        raise SystemExit(unknown_paper(args[0]))
    rest = args[1:]
    i = 0
    while i < len(rest):
        if rest[i] in ("--readme", "--grid"):
            i += 1
        elif rest[i] == "--from" and i + 1 < len(rest):
            i += 2
        else:
            raise SystemExit(
                f"readings.py: unknown argument '{rest[i]}'"
                " (valid: --readme, --grid, --from REPORT_DIR)"
            )
    print(block(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
