#!/usr/bin/env bash
# Session 23, call 7: compute-sanitizer memcheck over one decode class's GPU test (bf16 d128
# non-causal: paged cases with 16-, 256- and 1-key pages in shuffled order, ragged lengths 0-4097,
# and dense), in-process (call 2's memcheck of the paged tune did not reach the worker process).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call7.sh
set -uo pipefail
C=.devcarry-s23c
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} FLASHTUNE_CACHE_DIR=/tmp/ft-cache7
s=$(date +%s)
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $C/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/2' > $OUT/call7-memcheck.log 2>&1
echo "memcheck: exit $? in $(( $(date +%s) - s )) s: $(grep -E 'ERROR SUMMARY' $OUT/call7-memcheck.log)"
grep -E "^\[  (PASSED|FAILED)|OK \]" $OUT/call7-memcheck.log | head -3
