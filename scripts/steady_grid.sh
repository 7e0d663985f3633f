#!/usr/bin/env bash
# The HOOP paper's comparison grid at a steady-state scale: every scheme on
# every workload, with each workload's transaction count chosen so a HOOP run
# lasts about 1.6 periodic-GC periods (10 ms = 25 M cycles at 2.5 GHz), so the
# measured window (after the 25% warm-up) contains periodic GC, log
# truncation and checkpoints. Writes one CSV (all workloads) to $1.
#   scripts/steady_grid.sh grid.csv [extra compare args, e.g. --set k=v]
set -euo pipefail
out=${1:?usage: steady_grid.sh OUT.csv [compare args]}
shift
bin=${DURASIM:-./target/release/durasim}
schemes=${SCHEMES:-ideal,opt-redo,opt-undo,osp,lsm,lad,hoop}
# tx per workload: ~40 M cycles of HOOP at its 5k-tx throughput (measured on
# this build: scripts/grid_diff.py on a 5k grid), rounded.
declare -A TX=([vector]=600000 [hashmap]=300000 [queue]=600000 [rbtree]=150000
               [btree]=300000 [ycsb]=300000 [tpcc]=40000)
tmp=$(mktemp -d)
# Progress on stderr: a line per workload (minutes each), and compare's own
# bar with its ETA when stderr is a terminal.
i=0
for w in vector hashmap queue rbtree btree ycsb tpcc; do
  i=$((i + 1))
  echo "steady_grid: [$i/7] $w, ${TX[$w]} tx x $(echo "$schemes" | tr , ' ' | wc -w) schemes ($(date +%H:%M:%S))" >&2
  "$bin" compare --schemes "$schemes" --workloads "$w" --baseline opt-redo \
    --tx "${TX[$w]}" --csv "$tmp/$w.csv" "$@" > "$tmp/$w.txt"
done
echo "steady_grid: done ($(date +%H:%M:%S)); grid in $out" >&2
head -1 "$tmp/vector.csv" > "$out"
for w in vector hashmap queue rbtree btree ycsb tpcc; do tail -n +2 "$tmp/$w.csv" >> "$out"; done
for w in vector hashmap queue rbtree btree ycsb tpcc; do cat "$tmp/$w.txt"; done
