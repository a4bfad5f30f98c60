#!/usr/bin/env bash
# Session 51, call 1. On an H200: issue 13's forward grid on MAIN (head dims 64, 128, 256).
# On an H100: session 50's call7.sh (paged-claims.patch's GPU tests, synccheck and racecheck on
# PAGED) and then its call6.sh (memcheck and synccheck of the claimed dense tiles on MAIN), each
# in its own folder of OUT.
# usage (GPU): MAIN=.devcarry-N PAGED=.devcarry-P OUT=$OUT [LIMIT=590] bash bench/data/h100-2026-12-07-s51/call1.sh
source bench/device_call.sh 590
h200_grid "${MAIN:?}" 64,128,256
S50=bench/data/h100-2026-12-07-s50
mkdir -p "$OUT/paged" "$OUT/claimed"
OUT=$OUT/paged LIMIT=$(( $(left) - 170 )) PAGED=${PAGED:?} bash $S50/call7.sh > "$OUT/paged.log" 2>&1
OUT=$OUT/claimed LIMIT=$(( $(left) - 5 )) MAIN=$MAIN bash $S50/call6.sh > "$OUT/claimed.log" 2>&1
card_line
cat "$OUT/paged/summary.txt" "$OUT/claimed/summary.txt" > "$OUT/summary.txt" 2>/dev/null
cat "$OUT/gpu.txt" "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
