#!/usr/bin/env bash
# Session 22, call 8: the shipped decode kernels (s22b = d533f7e: epilogue statistics per row,
# dense addresses by addition) through a decode-only tune (bench/decode_round.sh steps tune and
# tuned: the 11 decode buckets, budgeted, then decode_bench.py --db, dense and paged, CUDA graphs,
# same run as SDPA). Prints the winners and the table; keeps only those files in $OUT.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s22/call8.sh
set -uo pipefail
W=/tmp/call8
STEPS="tune tuned" TUNE_S=120 TUNED_S=90 OUT=$W bash bench/decode_round.sh .devcarry-s22b
cp $W/tuned/decode_table.md $OUT/tuned_decode_table.md; cp $W/tuned_winners.csv $OUT/; cp $W/tune.log $OUT/
cut -d, -f4,6,10,11 $W/tuned_winners.csv
