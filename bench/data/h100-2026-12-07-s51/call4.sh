#!/usr/bin/env bash
# Session 51, call 4 (call 3 with less time: what the budget left). On an H200: issue 13's
# forward grid on MAIN (head dims 64, 128, 256) within LIMIT. On an H100: compute-sanitizer
# memcheck of the paged claimed tiles (CachePrefillClasses/5, bf16 d128 causal, whose last case
# p3 claims on; call 1 ran synccheck and racecheck of it), then the GPU test suite on MAIN but
# the forward space sweeps (FullSpace, SampledSpace), within what is left.
# usage (GPU): MAIN=.devcarry-N OUT=$OUT [LIMIT=500] bash bench/data/h100-2026-12-07-s51/call4.sh
source bench/device_call.sh 500
N=$(cd "${MAIN:?}" && pwd)
h200_grid "$N" 64,128,256
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-main
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $N/flashtune_gpu_tests \
  --gtest_filter='*CachePrefillClasses.VariantsMatchTheReference/5' > "$OUT/memcheck.txt" 2>&1
echo "memcheck: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) |ERROR SUMMARY' "$OUT/memcheck.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
timeout $(( $(left) - 10 )) $N/flashtune_gpu_tests --gtest_filter='-ForwardGpu/FullSpace.*:ForwardGpu/SampledSpace.*' \
  > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -E '^\[  FAILED|Failure' "$OUT/tests.txt" | head -8 | tee -a "$OUT/summary.txt"
echo "ran: $(grep -c '^\[       OK' "$OUT/tests.txt") ok; last started: $(grep -E '^\[ RUN' "$OUT/tests.txt" | tail -1)" | tee -a "$OUT/summary.txt"
cat "$OUT/gpu.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
