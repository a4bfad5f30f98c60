#!/usr/bin/env bash
# Session 31, call 3: call 2 again on the fixed split tail, shortened to the device time left.
# Call 2 hung in every step that ran a split tile: the producer made the non-owners' arrivals on
# V's empty barrier but not on K's (the K arrival sat inside the skip branch that split tiles
# bypass), so a split tile's second K load never came. Here: (1) hopper_probe --check on the
# two- and three-warpgroup d64 / d128 tiles (float64 reference); (2) compute-sanitizer memcheck,
# racecheck and synccheck of --small on the d64 tiles; (3) the tile A/B against main.
# usage (GPU): BASE=.devcarry-s31 NEW=.devcarry-s31t OUT=$OUT bash bench/data/h200-2026-12-05-s31/call3.sh
set -uo pipefail
t0=$(date +%s)
BASE=${BASE:?} NEW=${NEW:?}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 timeout 130 stdbuf -oL -eL \
  $NEW/flashtune_hopper_probe --check --only d64_bm128,d64_bm192,d128_bm128,d128_bm192 > "$OUT/check.log" 2>&1
echo "check: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h '^check:' "$OUT/check.log" | tail -1)" >> "$OUT/summary.txt"
grep -h "FAIL\|fault\|mismatch" "$OUT/check.log" | head -10 >> "$OUT/summary.txt"
for tool in memcheck:60 racecheck:90 synccheck:50; do
  name=${tool%%:*}
  LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 timeout ${tool#*:} stdbuf -oL -eL \
    compute-sanitizer --tool $name --error-exitcode 9 $NEW/flashtune_hopper_probe --small --only d64_bm128,d64_bm192 \
    > "$OUT/sanitizer-$name.log" 2>&1
  echo "$name: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY\|^check:' "$OUT/sanitizer-$name.log" | sort | uniq -c | tr '\n' ' ')" >> "$OUT/summary.txt"
done
h=hopper_fwd
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=2 ROUNDS=5 timeout $(( 440 - ($(date +%s) - t0) )) bash bench/forward_tile_ab.sh \
  "$OUT/bench.txt" "$BASE" "$NEW" \
  "bf16 64 0 16 1024 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 64 1 16 1024 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_causal,${h}_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal" \
  "f16 64 0 4 4096 32 ${h}_f16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 64 0 32 512 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" "${BASE#.devcarry-}" "${NEW#.devcarry-}" > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"; tail -3 "$OUT/check.log"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab-summary.txt bench.txt check.log > /dev/null
