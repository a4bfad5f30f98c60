#!/usr/bin/env bash
# Session 50, call 7 (prepared for a later session): paged-claims.patch beside this script
# (hopper_paged's p3: the zeroing warp claims tiles and publishes each id to the load warps and
# the consumers; the planner runs a paged call's p2 tile as it; see docs/perf-notes.md, "Paged
# prefill, open"). On an H100: the cache-prefill GPU tests on PAGED (every hopper_paged class
# with the p3 twin; the 24-sequence, 64-head case is the one it claims on, which the test
# asserts) and RuntimeGpu.Paged*, then synccheck and racecheck of one class (bf16 d128 causal).
# The patch also plans a short paged K/V stream (at most 2048 keys) on the class default's p2
# twin, run claimed: call8.sh measures that against main. On an H200: issue 13's forward grid on
# PAGED instead (all three head dims).
# usage (GPU): PAGED=.devcarry-P OUT=$OUT [LIMIT=560] bash bench/data/h100-2026-12-07-s50/call7.sh
#   (the pack: main + paged-claims.patch, built with its GPU tests: bash bench/pack_for_gpu.sh)
source bench/device_call.sh 560
P=$(cd "${PAGED:?}" && pwd)
h200_grid "$P" 64,128,256
card_line
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-paged
timeout $(( $(left) - 200 )) $P/flashtune_gpu_tests --gtest_filter='*CachePrefillClasses*:RuntimeGpu.Paged*' \
  > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -E '^\[  FAILED|Failure' "$OUT/tests.txt" | head -5 | tee -a "$OUT/summary.txt"
for tool in synccheck racecheck; do
  [ "$(left)" -lt 40 ] && break
  timeout $(( $(left) - 10 )) compute-sanitizer --tool $tool --error-exitcode 9 $P/flashtune_gpu_tests \
    --gtest_filter='*CachePrefillClasses.VariantsMatchTheReference/5' > "$OUT/$tool.txt" 2>&1
  echo "$tool: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) |SUMMARY' "$OUT/$tool.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
  gzip -f "$OUT/$tool.txt"
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
