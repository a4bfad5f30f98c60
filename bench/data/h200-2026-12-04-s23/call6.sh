#!/usr/bin/env bash
# Session 23, call 6: the shipped default tune, cold (fresh database and cubin cache), with the
# build of dad9fdc (s23c: the kernels of 41e5881; the default set now has 170 problems: 22 decode
# buckets, 11 of them paged): bench/fwd_tune_grid_round.sh's tune step. Issue 13 asks for <= 10
# minutes on one H200.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call6.sh
set -uo pipefail
W=/tmp/call6
STEP=tune OUT=$W bash bench/fwd_tune_grid_round.sh .devcarry-s23c
cp $W/tune.log $OUT/call6-tune.log; cp $W/winners.csv $OUT/call6-winners.csv; cp $W/gpu.txt $OUT/call6-gpu.txt
grep -c ",paged," $W/winners.csv
