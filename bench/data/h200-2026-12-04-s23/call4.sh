#!/usr/bin/env bash
# Session 23, call 4: s23b = f5fc02e (the prologue's page-table reads in one round trip) against
# s23a = 41e5881. The decode, varlen decode and paged-tune GPU tests on s23b (a process per test),
# then bench/decode_round.sh on s23b: bench (untuned, dense and paged 16 / 256, s23a as the
# baseline on the same inputs: new / old time per layout), tune (the 22 decode buckets) and tuned.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call4.sh
set -uo pipefail
W=/tmp/call4
mkdir -p $W
s=$(date +%s)
OUT=$W FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:TuneGpu.Paged*' SUITE_S=200 JOBS=2 \
  bash bench/gpu_suite.sh .devcarry-s23b > $W/suite-stdout.txt 2>&1
echo "suite exit $? in $(( $(date +%s) - s )) s"; tail -4 $W/suite-stdout.txt
STEPS="bench tune tuned" BASELINE=.devcarry-s23a/libflashtune.so BENCH_S=150 TUNE_S=200 TUNED_S=100 OUT=$W \
  bash bench/decode_round.sh .devcarry-s23b
cp $W/suite-stdout.txt $W/decode_table.md $W/decode_bench.log $W/tune.log $W/tuned_winners.csv $OUT/
cp $W/decode_bench.json $OUT/decode_bench.json; cp $W/tuned/decode_table.md $OUT/tuned_decode_table.md
cut -d, -f4,6,9,10,11 $W/tuned_winners.csv | grep paged
