#!/usr/bin/env bash
# Session 27, call 1: session 26's two prepared decode A/Bs in one device call (a start costs
# minutes): call6.sh (decode-plan-before-wait.patch, pack .devcarry-s26b) into $OUT/c6, then
# call7.sh (decode-paged-table-first.patch, .devcarry-s26c) into $OUT/c7 with what is left of
# the call's 600 s. Both against .devcarry-s26 = main (90c96e9), all three built here from one
# commit. usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s27/call1.sh
set -uo pipefail
t0=$(date +%s)
S26=bench/data/h200-2026-12-05-s26
mkdir -p "$OUT/c6" "$OUT/c7"
OUT=$OUT/c6 bash $S26/call6.sh > "$OUT/c6/stdout.txt" 2>&1
left=$(( 570 - ($(date +%s) - t0) ))
OUT=$OUT/c7 timeout $left bash $S26/call7.sh > "$OUT/c7/stdout.txt" 2>&1
echo "call7 exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/c7/summary.txt"
# call7 may have been cut short before folding its logs (the device returns at most 8 files)
[ -f "$OUT/c7/logs.tgz" ] || bash bench/pack_out.sh "$OUT/c7" gpu.txt summary.txt ab-summary.txt > /dev/null
for c in c6 c7; do echo "== $c"; cat "$OUT/$c/summary.txt" "$OUT/$c/ab-summary.txt" 2>/dev/null; done
