#!/usr/bin/env bash
# Session 48, call 2. 1) compute-sanitizer memcheck and racecheck on
# ForwardGpu.FourWarpgroupTilesMatchTheReference on WG4 (call 1 found 256x64 wg4 s3 p2 the fastest
# tile at d64's short shapes); 2) session 47's call4.sh (the split tail against none), with WG4 as
# MAIN: the patch changes no tile of call 4's (wg3 s2 keeps its split tail: 2 >= 3 - 1).
# usage (GPU): WG4=.devcarry-W NOSPLIT=.devcarry-N OUT=$OUT bash bench/data/h100-2026-12-07-s48/call2.sh
set -uo pipefail
t0=$(date +%s)
W=$(cd "${WG4:?}" && pwd)
export LD_LIBRARY_PATH=$W:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s48
for tool in memcheck racecheck; do
  timeout 170 compute-sanitizer --tool $tool --error-exitcode 3 $W/flashtune_gpu_tests \
    --gtest_filter='ForwardGpu.FourWarp*' > "$OUT/$tool.txt" 2>&1
  echo "$tool: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tail -1) $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/$tool.txt" | tr '\n' ' ')" | tee -a "$OUT/sanitizers.txt"
done
mkdir -p "$OUT/call4"
MAIN=$WG4 NOSPLIT=${NOSPLIT:?} OUT=$OUT/call4 timeout $(( 580 - ($(date +%s) - t0) )) bash bench/data/h100-2026-12-07-s47/call4.sh
cat "$OUT/sanitizers.txt"
