#!/usr/bin/env bash
# Session 27, call 2: the forward grid's d64 and d256 halves (the head dims under issue 13's
# geomean target in session 20's grid), re-measured with perf_report.py's rotated rounds: the
# grid's buckets of those head dims tuned cold (`flashtune tune --head-dims 64,256 --decode none
# --operation fwd`), then the grid through that database (queued, 3 rounds, same run as SDPA).
# PACK: main's build (.devcarry-s26 = 90c96e9's library; the scripts are this checkout's).
# usage (GPU): [PACK=.devcarry-NAME] [DIMS=64,256] OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:-.devcarry-s26}
DIMS=${DIMS:-64,256}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-cache-fwd
mkdir -p "$OUT/fwd"
s=$(date +%s)
timeout 300 $P/flashtune tune --db "$OUT/fwd/fwd.db" --head-dims $DIMS --decode none --operation fwd > "$OUT/fwd/tune.log" 2>&1
echo "tune d$DIMS: exit $? in $(( $(date +%s) - s )) s" > "$OUT/summary.txt"
left=$(( 580 - ($(date +%s) - t0) ))
timeout $left python3 bench/perf_report.py --lib $P/libflashtune.so --db "$OUT/fwd/fwd.db" --out "$OUT/fwd" \
  --head-dims $DIMS --no-extra --rounds 3 --time-limit-s $(( left - 20 )) > "$OUT/fwd/perf_report.txt" 2>&1
echo "grid: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
tail -60 "$OUT/fwd/perf_report.txt" > "$OUT/grid-table.txt"
cp "$OUT/fwd/perf_report.csv" "$OUT/grid.csv" 2>/dev/null
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/grid-table.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt grid-table.txt grid.csv > /dev/null  # the device returns at most 8 files
