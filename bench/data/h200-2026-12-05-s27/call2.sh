#!/usr/bin/env bash
# Session 27, call 2 (not run): issue 13's forward grid re-measured with perf_report.py's rotated
# rounds: the grid's buckets tuned cold (`flashtune tune --head-dims $DIMS --decode none
# --operation fwd`: about 260 s for all three head dims on an H200, session 19), then the grid
# through that database (queued, 3 rounds, same run as SDPA; B1 H32 N8192 d128 too when DIMS has
# 128). DIMS=64,256 measures the two head dims under the geomean target in session 20's grid.
# PACK: a build of the commit under test (bench/pack_for_gpu.sh); the scripts are this checkout's.
# LIMIT: the call's seconds (default 580; session 47 added it for shorter calls).
# usage (GPU): PACK=.devcarry-NAME [DIMS=64,128,256] [LIMIT=580] OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
DIMS=${DIMS:-64,128,256}
extra=--no-extra
case ",$DIMS," in *,128,*) extra= ;; esac
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-cache-fwd
mkdir -p "$OUT/fwd"
s=$(date +%s)
timeout 300 $P/flashtune tune --db "$OUT/fwd/fwd.db" --head-dims $DIMS --decode none --operation fwd > "$OUT/fwd/tune.log" 2>&1
echo "tune d$DIMS: exit $? in $(( $(date +%s) - s )) s" > "$OUT/summary.txt"
if [ -z "$extra" ]; then  # B1 H32 N8192 d128 (hidden 4096): its own bucket, as perf_report.py's tune()
  s=$(date +%s)
  timeout 60 $P/flashtune tune --db "$OUT/fwd/fwd.db" --head-dims 128 --seqlens 8192 --hidden 4096 --tokens 8192 \
    --decode none --operation fwd >> "$OUT/fwd/tune.log" 2>&1
  echo "tune B1 H32 N8192 d128: exit $? in $(( $(date +%s) - s )) s" >> "$OUT/summary.txt"
fi
left=$(( ${LIMIT:-580} - ($(date +%s) - t0) ))
timeout $left python3 bench/perf_report.py --lib $P/libflashtune.so --db "$OUT/fwd/fwd.db" --out "$OUT/fwd" \
  --head-dims $DIMS $extra --rounds 3 --time-limit-s $(( left - 20 )) > "$OUT/fwd/perf_report.txt" 2>&1
echo "grid: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
tail -60 "$OUT/fwd/perf_report.txt" > "$OUT/grid-table.txt"
cp "$OUT/fwd/perf_report.csv" "$OUT/grid.csv" 2>/dev/null
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/grid-table.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt grid-table.txt grid.csv > /dev/null  # the device returns at most 8 files
