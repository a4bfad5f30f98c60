#!/usr/bin/env bash
# Session 34, call 3: call 1's failures re-run after the test fixes (the d64 hopper_paged tile
# with a non-power-of-two key block is now 192x96; the runtime test expects hopper_paged on
# sm_90a): the four d64 cache-prefill classes and the runtime tests, then compute-sanitizer
# memcheck of the bf16 d64 causal class (its hopper_paged tiles: three warpgroups, 192x96, one
# warpgroup without the overlap, and the persistent one).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s34/call3.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*:RuntimeGpu*' SUITE_S=200 JOBS=4 TEST_S=90 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
grep -h 'checked.*hopper_paged' "$OUT"/t/gpu_suite.log 2>/dev/null | sort | uniq >> "$OUT/summary.txt"
# Instance 1 is (bf16, 64, causal).
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc3 timeout 120 \
  compute-sanitizer --tool memcheck --error-exitcode 3 $P/flashtune_gpu_tests \
  --gtest_filter='CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/1' > "$OUT/memcheck.log" 2>&1
echo "memcheck CachePrefill/1: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" summary.txt tests.txt memcheck.log > /dev/null
