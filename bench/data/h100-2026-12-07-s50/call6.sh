#!/usr/bin/env bash
# Session 50, call 6. On an H200: issue 13's forward grid at head dim 64 on MAIN (session 27's
# call2.sh, tuned cold, within LIMIT: what the session's budget left fits). On an H100:
# compute-sanitizer memcheck and synccheck of VarlenGpu.ClaimedTiles* on MAIN (the p3 kernels
# and their p2 twins; the short-sequence case is the one they claim on). Not run in session 50
# (no machine could be started for what its budget left).
# usage (GPU): MAIN=.devcarry-N OUT=$OUT [LIMIT=340] bash bench/data/h100-2026-12-07-s50/call6.sh
source bench/device_call.sh 340
N=$(cd "${MAIN:?}" && pwd)
h200_grid "$N" 64
card_line
for tool in memcheck synccheck; do
  [ "$(left)" -lt 30 ] && break
  LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-main timeout $(( $(left) - 5 )) \
    compute-sanitizer --tool $tool --error-exitcode 9 $N/flashtune_gpu_tests --gtest_filter='VarlenGpu.ClaimedTiles*' \
    > "$OUT/$tool.txt" 2>&1
  echo "$tool: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) |ERROR SUMMARY' "$OUT/$tool.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
