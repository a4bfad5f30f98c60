#!/usr/bin/env bash
# Session 52, call 1. On an H200: issue 13's forward grid on MAIN (head dims 64, 128, 256).
# On an H100: session 51's call5.sh (paged-four.patch on FOUR against BASE's library: the d64
# cache-prefill GPU tests, `varlen_bench.py --paged --head-dim 64`, a memcheck), then its
# call4.sh on MAIN (memcheck of the paged p3 tiles at d128, the GPU suite but the forward space
# sweeps) with what is left, each in its own folder of OUT.
# usage (GPU): MAIN=.devcarry-A BASE=.devcarry-M FOUR=.devcarry-W OUT=$OUT [LIMIT=590] bash bench/data/h100-2026-12-07-s52/call1.sh
source bench/device_call.sh 590
h200_grid "${MAIN:?}" 64,128,256
S51=bench/data/h100-2026-12-07-s51
mkdir -p "$OUT/four" "$OUT/suite"
OUT=$OUT/four LIMIT=220 MAIN=${BASE:?} FOUR=${FOUR:?} bash $S51/call5.sh > "$OUT/four.log" 2>&1
OUT=$OUT/suite LIMIT=$(( $(left) - 5 )) MAIN=$MAIN bash $S51/call4.sh > "$OUT/suite.log" 2>&1
card_line
cat "$OUT/four/summary.txt" "$OUT/suite/summary.txt" > "$OUT/summary.txt" 2>/dev/null
cat "$OUT/gpu.txt" "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
