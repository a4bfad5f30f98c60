#!/usr/bin/env bash
# Session 51, call 5 (what the budget left: about 220 s). paged-four.patch beside this script
# (hopper_paged over four consumer warpgroups: a short paged d64 stream plans 256x64 wg4 s3,
# claimed, as dense and packed calls do) on FOUR, against MAIN (library only), on either card:
# the d64 cache-prefill GPU tests on FOUR (bf16 and f16, full and causal: every variant, the
# four-warpgroup p3 tile among them, on the float64 reference) and RuntimeGpu.Paged*; then
# `bench/varlen_bench.py --paged --head-dim 64` on MAIN and FOUR interleaved; then memcheck of
# the bf16 d64 causal class on FOUR with what is left.
# usage (GPU): MAIN=.devcarry-M FOUR=.devcarry-W OUT=$OUT [LIMIT=220] bash bench/data/h100-2026-12-07-s51/call5.sh
source bench/device_call.sh 220
M=$(cd "${MAIN:?}" && pwd) W=$(cd "${FOUR:?}" && pwd)
card_line
export FLASHTUNE_CACHE_DIR=/tmp/ftc-four
LD_LIBRARY_PATH=$W:/usr/local/cuda/lib64 timeout 100 $W/flashtune_gpu_tests \
  --gtest_filter='*CachePrefillClasses.*/0:*CachePrefillClasses.*/1:*CachePrefillClasses.*/12:*CachePrefillClasses.*/13:RuntimeGpu.Paged*' \
  > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -E '^\[  FAILED|Failure' "$OUT/tests.txt" | head -5 | tee -a "$OUT/summary.txt"
LD_LIBRARY_PATH=/usr/local/cuda/lib64 timeout $(( $(left) - 40 )) python3 bench/varlen_bench.py "$M/libflashtune.so" \
  "$W/libflashtune.so" --paged --head-dim 64 --out "$OUT" > "$OUT/paged.txt" 2>&1
echo "bench: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
if [ "$(left)" -gt 25 ]; then
  LD_LIBRARY_PATH=$W:/usr/local/cuda/lib64 timeout $(( $(left) - 8 )) compute-sanitizer --tool memcheck --error-exitcode 9 \
    $W/flashtune_gpu_tests --gtest_filter='*CachePrefillClasses.VariantsMatchTheReference/1' > "$OUT/memcheck.txt" 2>&1
  echo "memcheck: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) |ERROR SUMMARY' "$OUT/memcheck.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
fi
grep -A20 '^bf16 Hq' "$OUT/paged.txt" | tee -a "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
