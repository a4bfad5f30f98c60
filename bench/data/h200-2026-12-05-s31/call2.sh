#!/usr/bin/env bash
# Session 31, call 2: hopper_fwd's split tail. Call 1 timed the 192-row tile at N 960 / 1024 /
# 1152 (5 tiles a head, 5 + one of a single live warpgroup, 6): the extra tile of N 1024 cost
# 0.89 of a full one, so a lone warpgroup runs its blocks no faster than three sharing the SM.
# Now such a tile deals its K/V blocks to all its consumer warpgroups and merges their partials
# (templates/hopper_fwd.cuh, kSplitTail). Correctness first, then the A/B against main:
# (1) flashtune_hopper_probe --check on the two- and three-warpgroup tiles (float64 reference;
#     the shapes now include N 1024 and 40 x 1500 causal, whose last tiles split);
# (2) compute-sanitizer memcheck, racecheck and synccheck of `--small` on the same tiles;
# (3) the forward, varlen and runtime GPU tests on NEW;
# (4) bench/forward_tile_ab.sh BASE against NEW: shapes whose last tiles split (N 1k, 4k; causal
#     too), and controls whose tiles do not (N 512 and 2k: two live warpgroups; expect 1.00).
# usage (GPU): BASE=.devcarry-s31 NEW=.devcarry-s31t OUT=$OUT bash bench/data/h200-2026-12-05-s31/call2.sh
set -uo pipefail
t0=$(date +%s)
BASE=${BASE:?BASE=.devcarry-NAME (main)}
NEW=${NEW:?NEW=.devcarry-NAME (the change, with flashtune_hopper_probe)}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
ONLY=${ONLY:-d64_bm128,d64_bm192,d128_bm128,d128_bm192,d256_bm128}
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe timeout 200 \
  $NEW/flashtune_hopper_probe --check --only $ONLY > "$OUT/check.log" 2>&1
echo "check: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h '^check:' "$OUT/check.log" | tail -1)" >> "$OUT/summary.txt"
grep -h "FAIL\|fault" "$OUT/check.log" | head -10 >> "$OUT/summary.txt"
for tool in memcheck:80 racecheck:120 synccheck:70; do
  name=${tool%%:*}
  LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe timeout ${tool#*:} \
    compute-sanitizer --tool $name --error-exitcode 9 $NEW/flashtune_hopper_probe --small --only d64_bm128,d64_bm192,d128_bm128 \
    > "$OUT/sanitizer-$name.log" 2>&1
  echo "$name: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/sanitizer-$name.log" | sort | uniq -c | tr '\n' ' ')" >> "$OUT/summary.txt"
done
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER=${FILTER:-'ForwardGpu*:VarlenGpu/VarlenClasses.*:RuntimeGpu*'} SUITE_S=${SUITE_S:-130} JOBS=${JOBS:-4} \
  TEST_S=${TEST_S:-130} bash bench/gpu_suite.sh "$NEW" > "$OUT/suite-stdout.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL' "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
h=hopper_fwd
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=${PASSES:-2} ROUNDS=5 timeout $(( 585 - ($(date +%s) - t0) )) bash bench/forward_tile_ab.sh \
  "$OUT/bench.txt" "$BASE" "$NEW" \
  "bf16 64 0 16 1024 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full,${h}_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_full" \
  "f16 64 0 4 4096 32 ${h}_f16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 64 1 16 1024 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_causal,${h}_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal" \
  "bf16 64 1 4 4096 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_causal,${h}_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal" \
  "bf16 128 0 16 1024 16 ${h}_bf16_d128_bm192_bn80_wg3_s2_p0_pp1_ov1_full" \
  "bf16 64 0 32 512 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 64 1 8 2048 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal" \
  "bf16 128 0 8 2048 16 ${h}_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_full" > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" "${BASE#.devcarry-}" "${NEW#.devcarry-}" > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab-summary.txt suite-stdout.txt bench.txt check.log > /dev/null
