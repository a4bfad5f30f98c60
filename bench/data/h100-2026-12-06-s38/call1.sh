#!/usr/bin/env bash
# Session 38, call 1: S's exp2 partly on the FMA pipe (poly_exp2, the FT_HOPPER_EXP2_EMU=E knob:
# every E-th 8-column group of a block's scores). Packs E0 (off: the shipped kernels), E8, E5,
# E4 and E3 are one build each with the knob's default set (bench/pack_for_gpu.sh's flashtune
# and libflashtune.so; E4 also the GPU tests).
#  1. E4's GPU tests over d64 (every searched variant of the four d64 classes, float64
#     reference, edge shapes with rows that see no key; the d64 paged classes; switches off).
#  2. bench/forward_tile_ab.sh E0 against each of E8, E5, E4, E3: the d64 grid's tuned tiles on
#     the shapes under 1.5x SDPA flash (full N 512 192x128, causal N 1k 64x64, causal N 8k
#     192x128), full N 16k, and two d128 tiles as controls.
# usage (GPU): OUT=$OUT bash bench/data/h100-2026-12-06-s38/call1.sh (packs built with call1-exp2emu.patch applied, the knob's default set per pack)
set -uo pipefail
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
E4=$(cd .devcarry-s38e4 && pwd)
mkdir -p "$OUT/t"
OUT=$OUT/t SUITE_S=150 JOBS=4 TEST_S=140 \
  FILTER='ForwardGpu/FullSpace.EveryVariantMatchesTheReference/0:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/1:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/4:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/5:CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/0:CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/7:ForwardGpu.HopperSwitchesOffMatchTheReference' \
  bash bench/gpu_suite.sh "$E4" > "$OUT/tests.txt" 2>&1
echo "tests (E4): exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h 'Failure\|expected\|max ' -A2 "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
v() { echo "hopper_fwd_$1_$2"; }
shapes=(
  "bf16 64 0 32 512 32 $(v bf16 d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full)"
  "f16 64 0 32 512 32 $(v f16 d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full)"
  "bf16 64 1 16 1024 32 $(v bf16 d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal)"
  "f16 64 1 16 1024 32 $(v f16 d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal)"
  "bf16 64 1 2 8192 32 $(v bf16 d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal)"
  "bf16 64 0 1 16384 32 $(v bf16 d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full)"
  "bf16 128 0 1 16384 16 $(v bf16 d128_bm128_bn192_wg2_s2_p0_pp1_ov1_full)"
  "bf16 128 1 16 1024 16 $(v bf16 d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal)"
)
for e in 8 4 5 3; do
  left=$(( 560 - ($(date +%s) - t0) ))
  (( left > 60 )) || { echo "E$e: skipped, $left s left" >> "$OUT/summary.txt"; continue; }
  PASSES=2 ROUNDS=5 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab timeout $left bash bench/forward_tile_ab.sh "$OUT/ab-e$e.log" \
    .devcarry-s38e0 .devcarry-s38e$e "${shapes[@]}" > "$OUT/ab-e$e-summary.txt" 2>&1
  echo "A/B E0 vs E$e: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT"/ab-e*-summary.txt
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests.txt ab-e8-summary.txt ab-e4-summary.txt ab-e5-summary.txt ab-e3-summary.txt > /dev/null
