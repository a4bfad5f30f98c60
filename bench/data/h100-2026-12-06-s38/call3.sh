#!/usr/bin/env bash
# Session 38, call 3: the overlapped loop's wait for P V kept below the softmax
# (FT_HOPPER_LATE_PV_WAIT: a never-taken branch ends the basic block before the wait; ptxas
# otherwise schedules the wait at the top of the block, before every exp2). Packs: W0 (the knob
# off: the shipped kernels) and W1 (on), one build each with the knob's default set.
#  1. W1's GPU tests over d64 (every searched variant of the four d64 classes, float64
#     reference; the d64 paged classes; switches off).
#  2. bench/forward_tile_ab.sh W0 against W1 on the d64 overlap tiles the grid's tunes pick
#     (192x128 p2 full N 512-16k, p0 full N 8k, p2 / p0 causal N 2k-8k), f16 at N 512 and causal
#     N 4k, and the 64x64 no-overlap tile (causal N 1k) as a control (the same SASS).
# usage (GPU): OUT=$OUT bash bench/data/h100-2026-12-06-s38/call3.sh   (.devcarry-s38w0, -w1 carried)
set -uo pipefail
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
W1=$(cd .devcarry-s38w1 && pwd)
mkdir -p "$OUT/t"
OUT=$OUT/t SUITE_S=150 JOBS=4 TEST_S=140 \
  FILTER='ForwardGpu/FullSpace.EveryVariantMatchesTheReference/0:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/1:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/4:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/5:CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/0:CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/7:ForwardGpu.HopperSwitchesOffMatchTheReference' \
  bash bench/gpu_suite.sh "$W1" > "$OUT/tests.txt" 2>&1
echo "tests (W1): exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h 'Failure\|expected\|max ' -A2 "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
v() { echo "hopper_fwd_$1_d64_$2"; }
shapes=(
  "bf16 64 0 32 512 32 $(v bf16 bm192_bn128_wg3_s2_p2_pp1_ov1_full)"
  "f16 64 0 32 512 32 $(v f16 bm192_bn128_wg3_s2_p2_pp1_ov1_full)"
  "bf16 64 0 4 4096 32 $(v bf16 bm192_bn128_wg3_s2_p2_pp1_ov1_full)"
  "bf16 64 0 2 8192 32 $(v bf16 bm192_bn128_wg3_s2_p0_pp1_ov1_full)"
  "bf16 64 0 1 16384 32 $(v bf16 bm192_bn128_wg3_s2_p2_pp1_ov1_full)"
  "bf16 64 1 8 2048 32 $(v bf16 bm192_bn128_wg3_s2_p2_pp1_ov1_causal)"
  "f16 64 1 4 4096 32 $(v f16 bm192_bn128_wg3_s2_p2_pp1_ov1_causal)"
  "bf16 64 1 2 8192 32 $(v bf16 bm192_bn128_wg3_s2_p0_pp1_ov1_causal)"
  "bf16 64 1 16 1024 32 $(v bf16 bm64_bn64_wg1_s2_p0_pp1_ov0_causal)"
)
left=$(( 560 - ($(date +%s) - t0) ))
PASSES=3 ROUNDS=5 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab timeout $left bash bench/forward_tile_ab.sh "$OUT/ab.log" \
  .devcarry-s38w0 .devcarry-s38w1 "${shapes[@]}" > "$OUT/ab-summary.txt" 2>&1
echo "A/B W0 vs W1: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests.txt ab-summary.txt ab.log > /dev/null
