#!/usr/bin/env bash
# Session 29, call A: hopper_fwd drops the K/V blocks that no row of a consumer warpgroup sees
# (templates/hopper_fwd.cuh, unseen_blocks): the blocks past a warpgroup's causal diagonal when
# kBlockN < kBlockM, and every block of a warpgroup whose rows all lie past the sequence's end
# (the last 192-row tile at N 512 and 1k). Correctness first, then the A/B against main:
# (1) compute-sanitizer memcheck, racecheck and synccheck of `flashtune_hopper_probe --small` on
#     tiles that drop (192-row tiles at N 200-500; d256 128x80 causal; no-overlap 192x112);
# (2) the forward, varlen and runtime GPU tests on NEW (a process each);
# (3) bench/forward_tile_ab.sh, BASE against NEW, on the grid's shapes whose winners drop blocks,
#     with tiles that drop none as controls (expected 1.00).
# Packs, both from one commit: BASE = main's build, NEW = main + the change, with
# build/bench/flashtune_hopper_probe copied in.
# Call E ran this script again on the final form of the change, with the sanitizers on every
# --small tile of two or three consumer warpgroups and the decode tests added:
#   ONLY=d64_bm128,d64_bm192,d128_bm128,d256_bm128 FILTER='ForwardGpu*:VarlenGpu*:RuntimeGpu*:DecodeGpu*'
#   SUITE_S=240 JOBS=4 TEST_S=200 (with BASE, NEW and OUT as below).
# usage (GPU): [ONLY=...] [FILTER=...] [SUITE_S=150] [JOBS=3] [TEST_S=150]
#   BASE=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h200-2026-12-05-s29/callA.sh
set -uo pipefail
t0=$(date +%s)
BASE=${BASE:?BASE=.devcarry-NAME (main)}
NEW=${NEW:?NEW=.devcarry-NAME (the change, with flashtune_hopper_probe)}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
ONLY=${ONLY:-d256_bm128_bn80_wg2_s2_p0,d256_bm128_bn80_wg2_s2_p1,d64_bm192_bn128_wg3_s2_p1,d64_bm192_bn112_wg3}
for tool in memcheck:90 racecheck:150 synccheck:80; do
  name=${tool%%:*}
  LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe timeout ${tool#*:} \
    compute-sanitizer --tool $name --error-exitcode 9 $NEW/flashtune_hopper_probe --small --only $ONLY \
    > "$OUT/sanitizer-$name.log" 2>&1
  echo "$name: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/sanitizer-$name.log" | sort | uniq -c | tr '\n' ' ')" >> "$OUT/summary.txt"
done
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER=${FILTER:-'ForwardGpu*:VarlenGpu/VarlenClasses.*:RuntimeGpu*'} SUITE_S=${SUITE_S:-150} JOBS=${JOBS:-3} \
  TEST_S=${TEST_S:-150} \
  bash bench/gpu_suite.sh "$NEW" > "$OUT/suite-stdout.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL' "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
h=hopper_fwd
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=${PASSES:-2} timeout $(( 570 - ($(date +%s) - t0) )) bash bench/forward_tile_ab.sh \
  "$OUT/bench.txt" "$BASE" "$NEW" \
  "bf16 64 0 32 512 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full,${h}_bf16_d64_bm192_bn112_wg3_s2_p0_pp1_ov1_full" \
  "bf16 64 0 16 1024 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full,${h}_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full" \
  "f16 64 1 16 1024 32 ${h}_f16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal,${h}_f16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_causal,${h}_f16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal" \
  "f16 64 1 8 2048 32 ${h}_f16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal,${h}_f16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_causal,${h}_f16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal" \
  "bf16 256 1 32 512 8 ${h}_bf16_d256_bm128_bn64_wg2_s2_p0_pp1_ov1_causal,${h}_bf16_d256_bm128_bn80_wg2_s2_p0_pp1_ov1_causal,${h}_bf16_d256_bm128_bn64_wg2_s2_p1_pp1_ov1_causal" \
  "bf16 256 1 16 1024 8 ${h}_bf16_d256_bm128_bn80_wg2_s2_p0_pp1_ov1_causal,${h}_bf16_d256_bm128_bn64_wg2_s2_p1_pp1_ov1_causal" \
  "bf16 128 0 8 2048 16 ${h}_bf16_d128_bm192_bn80_wg3_s2_p2_pp1_ov1_full" \
  "bf16 128 1 16 1024 16 ${h}_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal" \
  "bf16 256 0 32 512 8 ${h}_bf16_d256_bm128_bn64_wg2_s2_p1_pp1_ov1_full" > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" "${BASE#.devcarry-}" "${NEW#.devcarry-}" > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab-summary.txt suite-stdout.txt bench.txt > /dev/null  # at most 8 files
