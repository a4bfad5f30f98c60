#!/usr/bin/env bash
# Session 35, call 7: hopper_paged searches three K/V stages at d128 and its d128 default has
# three (call 6: 128x128 on 16-key pages 0.93-0.98 of the two-stage time). (1) CachePrefillGpu:
# the default (now s3 at d128), its two-stage persistent twin and the other tiles on 16-, 32-
# and 256-key pages and on dense caches with lengths; memcheck of bf16 d128 causal. (2) A tune of
# session 34's two paged prefill problems (the tuner verifies every variant, s3 ones included, on
# ragged paged cases with NaN past the keys), its winners and plans.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call7.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*' SUITE_S=150 JOBS=4 TEST_S=120 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
grep -h 'checked.*bf16 d128 .*hopper_paged' "$OUT"/t/gpu_suite.log 2>/dev/null | sort | uniq >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc7 timeout 100 \
  compute-sanitizer --tool memcheck --error-exitcode 3 $P/flashtune_gpu_tests \
  --gtest_filter='CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/3' > "$OUT/memcheck.log" 2>&1
echo "memcheck CachePrefill/3: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" >> "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-t7 FLASHTUNE_WORKER=$P/flashtune
D=/tmp/ft-s35-paged.db
timeout 200 $P/flashtune tune --problem-set bench/data/h100-2026-12-06-s34/paged-prefill.problems --db $D \
  > "$OUT/tune.txt" 2>&1
echo "tune: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tune.txt")" >> "$OUT/summary.txt"
$P/flashtune db list --db $D >> "$OUT/summary.txt" 2>&1
$P/flashtune db export --db $D --format csv > "$OUT/trials.csv" 2>&1
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" summary.txt tests.txt memcheck.log tune.txt trials.csv gpu.txt > /dev/null
