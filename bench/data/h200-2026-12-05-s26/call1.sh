#!/usr/bin/env bash
# Session 26, device call 1: session 25's decode experiment (bench/data/h200-2026-12-05-s25/call1.sh:
# s25x = main + decode-kv-before-q.patch against s25m = main), then session 24's cap A/B
# (bench/data/h200-2026-12-04-s24/call3.sh: s24b = 5a4e66c against s24a, whose decode kernels are
# main's, so s24a is main's pack) with what is left of the call when RUN_C3=1 (device time is
# short: the cap fixes one tile's regression, the decode tune and the d64 grid come first). Each part logs under $OUT/c1, $OUT/c3.
# Packs carried: .devcarry-s25m (main), .devcarry-s25x, .devcarry-s24b (bench/pack_for_gpu.sh of each build).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s26/call1.sh
set -uo pipefail
t0=$(date +%s)
ln -sfn .devcarry-s25m .devcarry-s24a
mkdir -p "$OUT/c1" "$OUT/c3"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
W=$OUT/c1 OUT=$OUT/c1 MC_S=110 timeout 390 bash bench/data/h200-2026-12-05-s25/call1.sh > "$OUT/c1.txt" 2>&1
echo "call1 exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/c1.txt"
left=$(( 585 - ($(date +%s) - t0) ))
if [ "${RUN_C3:-0}" = 1 ] && (( left > 100 )); then
  W=$OUT/c3 OUT=$OUT/c3 timeout $left bash bench/data/h200-2026-12-04-s24/call3.sh > "$OUT/c3.txt" 2>&1
  echo "call3 exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/c3.txt"
fi
cat "$OUT/gpu.txt"; echo "=== c1 (kv-before-q: s25m old, s25x new)"; cat "$OUT/c1.txt"
echo "=== c3 (cap: s24a old, s24b new)"; cat "$OUT/c3.txt" 2>/dev/null
