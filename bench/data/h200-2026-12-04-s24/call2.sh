#!/usr/bin/env bash
# Session 24, call 2: s24a = f00042b (decode_fwd compiled per K/V layout). compute-sanitizer memcheck
# over DecodeGpu's bf16 d128 class in-process (3 tiles x 9 cases; each tile's kv0 kernel on the
# dense cases, its kv1 twin on paged cases with 16-, 256- and 1-key pages); then
# bench/decode_round.sh steps tune (the 22 decode buckets, 11 dense and 11 paged, budgeted) and
# tuned (decode_bench.py --db, CUDA graphs, in the same run as SDPA and the streaming read).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s24/call2.sh
set -uo pipefail
C=.devcarry-s24a
W=/tmp/call2
mkdir -p $W
s=$(date +%s)
LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache2 timeout 200 \
  compute-sanitizer --tool memcheck --error-exitcode 3 $C/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/2' > $W/memcheck.log 2>&1
echo "memcheck: exit $? in $(( $(date +%s) - s )) s: $(grep -E 'ERROR SUMMARY' $W/memcheck.log)"
grep -E "^\[  (PASSED|FAILED)|checked" $W/memcheck.log | head -3
STEPS="tune tuned" TUNE_S=200 TUNED_S=110 OUT=$W bash bench/decode_round.sh $C
cp $W/memcheck.log $W/tune.log $W/tuned_winners.csv $OUT/
cp $W/tuned/decode_table.md $OUT/tuned_decode_table.md
cp $W/tuned/decode_bench.json $OUT/tuned_decode_bench.json
grep -E "problem|winner|s\)" $W/tune.log | tail -3
cut -d, -f4,6,9,10,11 $W/tuned_winners.csv | head -30
