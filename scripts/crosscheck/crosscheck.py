#!/usr/bin/env python3
"""Cross-check durasim's memory system against DRAMsim3, Ramulator 2, NVMain
and VANS on identical traces. Runs outside CI: the peers take minutes to
build (see the peers recipe's README.md and build.sh; RECIPE is its directory).

Every trace comes from the recipe's gen_trace.py (one seeded stream written in
each simulator's format). durasim replays the DRAMsim3 file with the peers'
clock (trace.cycle_ns = tCK 2 ns, one offer per 2 ns) on the device the
peers' pcm_hoop configs model: 1 channel, 2 ranks x 8 banks, HOOP Table II
timing (durasim's defaults), once per address mapping a peer uses, and each
peer's row is compared with the durasim run whose mapping matches the
peer's (MAPPINGS): DRAMsim3 (rocorabgbach) and NVMain (R:C:RK:BK:CH) with
line-interleaved, Ramulator 2 (RoBaRaCoCh: a 2 KiB row fills before the
bank changes) with row-interleaved; VANS (an Optane model: 4 KiB AIT,
256 B media blocks, no DDR timing) is shown beside line-interleaved but is
not timing-matched.

Traces: random (uniform lines over 1 GiB, reads:writes 2:1), seq (the same
over a sequential stream), rdlow (random reads, one per 1000 memory cycles:
idle latency), chase (the rdlow reads as dependent loads, VANS 'C').

  scripts/crosscheck/crosscheck.py --recipe RECIPE --peers PEERS_WORK \\
      [--durasim target/release/durasim] [--n 1000000] [--work /tmp/crosscheck]

A peer whose binary is absent under PEERS_WORK/src (build.sh's layout) is not
run: its row shows the numbers the recipe measured (results/*.csv, same
traces, same seed), marked "(recipe)". Prints one Markdown table and the
host's load average over the timed runs (the host is shared: only CPU
seconds are comparable); writes WORK/crosscheck.csv. --skip "" runs VANS on
the random trace too (~70-150 CPU-s); --reuse keeps each peer's earlier run
(WORK/<sim>_<trace>/result.json: timing and CPU seconds) so a peer built
later can be added without rerunning the others.
"""
import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time

LINE = 64
DURASIM_MATCH = ["--set", "nvm.channels=1", "--set", "trace.cycle_ns=2",
                 "--set", "trace.offer_interval_ns=2"]
#: Peer -> (the peer's address mapping as its config names it, the durasim
#: nvm.address_mapping that places a sequential stream the same way).
#: durasim's row-interleaved is row:rank:bank:column:channel, Ramulator's
#: row:bank:rank:column:channel: both fill a 2 KiB row of one bank before
#: moving on, and with one rank of 16 banks durasim gives the same numbers
#: on these traces (the rank/bank order does not matter to them).
MAPPINGS = {
    "dramsim3": ("rocorabgbach (row:column:rank:bankgroup:bank:channel)", "line-interleaved"),
    "ramulator2": ("RoBaRaCoCh (row:bank:rank:column:channel)", "row-interleaved"),
    "nvmain": ("R:C:RK:BK:CH (row:column:rank:bank:channel)", "line-interleaved"),
    "vans": ("Optane model: 4 KiB AIT blocks, 256 B media blocks (not timing-matched)",
             "line-interleaved"),
}


LOADS = []  # 1-minute load average after every timed run (the host is shared)


def run_timed(cmd, cwd, stdout_path):
    """Run cmd; return (exit code, CPU seconds of the child, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    with open(stdout_path, "w") as out:
        rc = subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    LOADS.append(os.getloadavg()[0])
    return rc, cpu, wall


def gen(recipe, traces, name, args):
    marker = os.path.join(traces, name + ".dramsim3.trace")
    if os.path.exists(marker):
        return
    subprocess.check_call([sys.executable, os.path.join(recipe, "gen_trace.py"), *args,
                           "--out-prefix", os.path.join(traces, name)])


def durasim_row(durasim, trace, work, mapping):
    out = os.path.join(work, "durasim_%s_%s.json" % (mapping, os.path.basename(trace)))
    cmd = [durasim, "trace", "replay", trace, *DURASIM_MATCH,
           "--set", "nvm.address_mapping=" + mapping, "--json"]
    rc, cpu, wall = run_timed(cmd, work, out)
    if rc != 0:
        raise SystemExit("durasim failed on %s" % trace)
    r = json.load(open(out))
    n = r["requests"]
    return dict(lat=r["read_latency_mean_ns"], bw=r["bandwidth_gb_per_s"],
                req_cpu=n / cpu if cpu > 0 else None, sim_ns=r["sim_ns"],
                row_hits=r["row_hit_ratio"], cpu=cpu, wall=wall)


def peer_cmds(recipe, src, traces, t):
    """(sim, binary, run-dir key, command, meta) per peer for trace t."""
    cfg = os.path.join(recipe, "configs")
    ds3 = os.path.join(src, "DRAMsim3/build/dramsim3main")
    ram = os.path.join(src, "ramulator2/build/ramulator2")
    vans = os.path.join(src, "VANS/bin/vans")
    nvm = os.path.join(src, "NVmain/nvmain.fast")
    f = lambda ext: os.path.join(traces, "%s.%s" % (t, ext))
    out = [
        ("dramsim3", ds3, f("dramsim3.trace"),
         [ds3, os.path.join(cfg, "dramsim3_pcm_hoop.ini"), "-c", "5000000000", "-t",
          f("dramsim3.trace"), "-o", "."], {"tck_ns": "2.0"}),
        ("ramulator2", ram, f("ramulator2.trace"),
         [ram, "-f", os.path.join(cfg, "ramulator2_pcm_hoop.yaml"), "-p",
          "Frontend.path=" + f("ramulator2.trace")], {"tck_ns": "2.0"}),
        ("nvmain", nvm, f("nvmain.nvt"),
         [nvm, os.path.join(cfg, "nvmain_pcm_hoop.config"), f("nvmain.nvt"), "0"],
         {"clk_mhz": "500"}),
        ("vans", vans, f("vans.trace"),
         [vans, "-c", os.path.join(src, "VANS/config/vans.cfg"), "-t", f("vans.trace")], {}),
    ]
    if t.startswith("rdlow"):
        out.append(("vans", vans, f("vanschase.trace"),
                    [vans, "-c", os.path.join(src, "VANS/config/vans.cfg"), "-t",
                     f("vanschase.trace")], {"chase": "1"}))
    return out


def nreq(path):
    with open(path) as fh:
        return sum(1 for l in fh if not l.startswith("NVMV"))


def recipe_rows(recipe):
    rows = {}
    for name in ("first_pass.csv", "repeat.csv"):  # repeat overrides (unloaded host)
        p = os.path.join(recipe, "results", name)
        if os.path.exists(p):
            for r in csv.DictReader(open(p)):
                rows[(r["sim"], r["config"], r["trace"])] = r
    return rows


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", required=True, help="shared/peers (gen_trace.py, configs/, results/)")
    ap.add_argument("--peers", default="", help="build.sh's PEERS folder (src/ inside)")
    ap.add_argument("--durasim", default="target/release/durasim")
    ap.add_argument("--n", type=int, default=1_000_000, help="requests of random/seq")
    ap.add_argument("--vans-n", type=int, default=20_000,
                    help="VANS runs ~700x slower on random lines: its traces' length")
    ap.add_argument("--work", default="/tmp/crosscheck")
    ap.add_argument("--skip", default="vans:random",
                    help="runs to take from the recipe's results instead: SIM or SIM:KIND "
                         "(kind idle, random, seq), comma list; default vans:random (about "
                         "150 CPU-s for 20k requests)")
    ap.add_argument("--reuse", action="store_true",
                    help="keep a peer's earlier run in WORK (its result.json) instead of "
                         "running it again (durasim always runs)")
    a = ap.parse_args()
    recipe = os.path.abspath(a.recipe)
    sys.path.insert(0, recipe)
    import parse_results  # the recipe's parsers of each peer's output

    durasim = os.path.abspath(a.durasim)
    work = os.path.abspath(a.work)
    traces = os.path.join(work, "traces")
    os.makedirs(traces, exist_ok=True)
    src = os.path.join(os.path.abspath(a.peers), "src") if a.peers else ""
    skip = set(x for x in a.skip.split(",") if x)
    sfx = lambda n: "%dk" % (n // 1000) if n < 1_000_000 else "%dM" % (n // 1_000_000)
    big, small = sfx(a.n), sfx(a.vans_n)
    gen(recipe, traces, "random_" + big, ["--pattern", "random", "--n", str(a.n)])
    gen(recipe, traces, "seq_" + big, ["--pattern", "seq", "--n", str(a.n)])
    gen(recipe, traces, "random_" + small, ["--pattern", "random", "--n", str(a.vans_n)])
    gen(recipe, traces, "seq_" + small, ["--pattern", "seq", "--n", str(a.vans_n)])
    gen(recipe, traces, "rdlow_2k", ["--pattern", "random", "--n", "2000", "--read-frac", "1",
                                     "--gap", "1000", "--formats",
                                     "dramsim3,vans,vanschase,nvmain,canon"])
    kinds = [("idle", "rdlow_2k"), ("random", "random_" + big), ("seq", "seq_" + big)]
    rec = recipe_rows(recipe)
    results = {}  # (sim, kind) -> dict(lat, bw, req_cpu, src)

    mappings = list(dict.fromkeys(m for _, m in MAPPINGS.values()))
    for kind, t in kinds:
        for mapping in mappings:
            d = durasim_row(durasim, os.path.join(traces, t + ".dramsim3.trace"), work, mapping)
            d["src"] = "run"
            d["trace"] = t
            results[("durasim " + mapping, kind)] = d
            print("[durasim %s] %s: %.1f ns, %.2f GB/s, %.0f req/CPU-s (%.2fs CPU, %.2fs wall, "
                  "load %.1f)" % (mapping, t, d["lat"], d["bw"], d["req_cpu"] or 0, d["cpu"],
                                  d["wall"], LOADS[-1]), file=sys.stderr)
        for sim, binary, tr, cmd, meta in peer_cmds(recipe, src, traces, t):
            chase = meta.get("chase") == "1"
            tt = t
            if sim == "vans" and kind != "idle":
                tt = t.replace(big, small)
                tr = tr.replace(t, tt)
                cmd = [c.replace(t, tt) for c in cmd]
            key = (sim, kind + ("_chase" if chase else ""))
            if sim in skip or "%s:%s" % (sim, kind) in skip or not (src and os.access(binary, os.X_OK)) or not os.path.exists(tr):
                r = rec.get((sim, "pcm_hoop" if sim != "vans" else "optane",
                             tt + ("_chase" if chase else "")))
                if r:
                    results[key] = dict(lat=fnum(r["mean_read_latency_ns"]),
                                        bw=fnum(r["bandwidth_GBps"]),
                                        req_cpu=fnum(r["req_per_cpu_s"]), src="recipe",
                                        trace=tt)
                continue
            rd = os.path.join(work, "%s_%s" % (sim, tt + ("_chase" if chase else "")))
            os.makedirs(rd, exist_ok=True)
            done = os.path.join(rd, "result.json")
            if a.reuse and os.path.exists(done):
                # A run made earlier with the same binary and trace (the
                # peers are deterministic): keep its timing and its CPU time.
                results[key] = json.load(open(done))
                LOADS.append(results[key].get("load", 0.0))
                print("[%s] %s: reused %s" % (sim, tt, done), file=sys.stderr)
                continue
            rc, cpu, wall = run_timed(cmd, rd, os.path.join(rd, "stdout"))
            m = dict(meta, requests=str(nreq(tr)))
            p = parse_results.PARSERS[sim](rd, m)
            n = float(m["requests"])
            results[key] = dict(lat=p["lat_ns"], bw=p["bw"], req_cpu=n / cpu if cpu else None,
                                src="run" if rc == 0 else "rc=%d" % rc, trace=tt,
                                lat_kind=p.get("lat_kind", "R"), cpu=cpu, wall=wall,
                                load=LOADS[-1], sim_ns=p.get("sim_ns"))
            if rc == 0:
                json.dump(results[key], open(done, "w"))
            print("[%s] %s: rc %d, %.1fs CPU, %.1fs wall, load %.1f: %s ns, %s GB/s" % (
                sim, tt, rc, cpu, wall, LOADS[-1], p["lat_ns"], p["bw"]), file=sys.stderr)

    sims = ["durasim " + m for m in mappings] + list(MAPPINGS)
    f = lambda x, s="%.1f": "-" if x is None else s % x
    gap = lambda a, b: "-" if a is None or b is None or not b else "%+.1f %%" % (100 * (a / b - 1))
    rows = []
    print("| simulator | address mapping | idle read latency ns | loaded mean read latency ns "
          "(random / seq) | bandwidth GB/s (random / seq) | durasim vs this row, same mapping: "
          "latency (random / seq), bandwidth (random / seq) | requests per CPU-s "
          "(random / seq) | source |")
    print("|---|---|---|---|---|---|---|---|")
    for s in sims:
        idle = results.get((s, "idle_chase")) if s == "vans" else results.get((s, "idle"))
        rnd, seq = results.get((s, "random")), results.get((s, "seq"))
        g = lambda r, k: r.get(k) if r else None
        srcs = sorted(set(r["src"] for r in (idle, rnd, seq) if r))
        note = ""
        if s == "nvmain":
            note = " (R+W latency under load)"
        if s == "vans":
            note = " (Optane model, %s traces; idle = dependent C loads)" % small
        if s in MAPPINGS:
            peer_map, ours = MAPPINGS[s]
            mapping = "%s; durasim %s" % (peer_map, ours)
            d = "durasim " + ours
            dr, ds = results.get((d, "random")), results.get((d, "seq"))
            vs = "%s / %s, %s / %s" % (
                gap(g(dr, "lat"), g(rnd, "lat")), gap(g(ds, "lat"), g(seq, "lat")),
                gap(g(dr, "bw"), g(rnd, "bw")), gap(g(ds, "bw"), g(seq, "bw")))
            if s == "nvmain":
                vs = "- / -, " + vs.split(", ")[1]  # no read latency to compare under load
            if s == "vans":
                vs = "not timing-matched"
        else:
            mapping, vs = s.split(" ", 1)[1], "(reference)"
        row = dict(sim=s, mapping=mapping, idle_ns=g(idle, "lat"), rnd_lat=g(rnd, "lat"),
                   seq_lat=g(seq, "lat"), rnd_bw=g(rnd, "bw"), seq_bw=g(seq, "bw"),
                   durasim_vs=vs, rnd_req_cpu=g(rnd, "req_cpu"),
                   seq_req_cpu=g(seq, "req_cpu"), source="/".join(srcs))
        rows.append(row)
        print("| %s | %s | %s | %s / %s | %s / %s | %s | %s / %s | %s%s |" % (
            s, mapping, f(row["idle_ns"]), f(row["rnd_lat"]), f(row["seq_lat"]),
            f(row["rnd_bw"], "%.2f"), f(row["seq_bw"], "%.2f"), vs,
            f(row["rnd_req_cpu"], "%.0f"), f(row["seq_req_cpu"], "%.0f"), row["source"], note))
    # The sequential gap against Ramulator 2 (same mapping) is write recovery:
    # durasim holds a bank for the 150 ns array write after every write burst
    # (any access waits, as NVMain's write-through tWP), Ramulator 2 and
    # DRAMsim3 only delay that bank's precharge by tWR = 150 ns. With the
    # row-interleaved mapping a sequential stream's 32 lines of a row sit in
    # one bank, so each write stalls the row hits behind it; line-interleaved
    # spreads them over banks. Holding the bank only tWR (10 ns) closes it.
    seq_t = os.path.join(traces, "seq_%s.dramsim3.trace" % big)
    out = os.path.join(work, "durasim_row-interleaved_write10_seq.json")
    rc, _, _ = run_timed([durasim, "trace", "replay", seq_t, *DURASIM_MATCH, "--set",
                          "nvm.address_mapping=row-interleaved", "--set",
                          "nvm.array_write_ns=10", "--json"], work, out)
    ram = results.get(("ramulator2", "seq"))
    if rc == 0 and ram:
        r = json.load(open(out))
        print("\nCheck of the sequential gap against Ramulator 2 (write recovery): durasim "
              "row-interleaved with a write holding its bank tWR = 10 ns instead of the "
              "150 ns array write (--set nvm.array_write_ns=10): %.1f ns, %.2f GB/s on "
              "seq_%s (Ramulator 2: %.1f ns, %.2f GB/s; %s latency, %s bandwidth)" % (
                  r["read_latency_mean_ns"], r["bandwidth_gb_per_s"], big, ram["lat"],
                  ram["bw"], gap(r["read_latency_mean_ns"], ram["lat"]),
                  gap(r["bandwidth_gb_per_s"], ram["bw"])))
    if LOADS:
        print("\nHost load average (1 min) after the timed runs: min %.1f, max %.1f "
              "(%d CPUs); requests per CPU-s use the child's user+sys time." % (
                  min(LOADS), max(LOADS), os.cpu_count()))
    with open(os.path.join(work, "crosscheck.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
