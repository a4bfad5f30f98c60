#!/usr/bin/env bash
# Session 23, call 1: paged decode buckets (41e5881). The GPU tests that cover them (TuneGpu: a
# paged decode tune verified on pages with a planted wrong variant; DecodeGpu; RuntimeGpu, which
# reads schema-4 databases), then bench/decode_round.sh steps bench (untuned), tune (the 22
# decode buckets: 11 dense, 11 paged, budgeted) and tuned (decode_bench.py --db), all in one run.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call1.sh
set -uo pipefail
C=.devcarry-s23a
W=/tmp/call1
mkdir -p $W
s=$(date +%s)
timeout 240 $C/flashtune_gpu_tests --gtest_filter='TuneGpu.*:DecodeGpu*:RuntimeGpu.*' > $W/gpu_tests.log 2>&1
echo "gpu tests: exit $? in $(( $(date +%s) - s )) s; $(grep -c '^\[       OK' $W/gpu_tests.log) ok, $(grep -c '^\[  FAILED  \] [A-Z]' $W/gpu_tests.log) failed, $(grep -c '^\[  SKIPPED' $W/gpu_tests.log) skipped"
grep -E "FAILED|Failure" $W/gpu_tests.log | head -10
STEPS="bench tune tuned" BENCH_S=80 TUNE_S=200 TUNED_S=100 OUT=$W bash bench/decode_round.sh $C
cp $W/gpu_tests.log $W/tune.log $W/tuned_winners.csv $W/decode_table.md $OUT/
cp $W/tuned/decode_table.md $OUT/tuned_decode_table.md
grep -E "problem|winner|s\)" $W/tune.log | tail -5
cut -d, -f4,6,9,10,11 $W/tuned_winners.csv
