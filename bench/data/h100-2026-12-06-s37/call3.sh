#!/usr/bin/env bash
# Session 37, call 3 (its build: the session's call 1 build with call3-rowsum.patch applied;
# rejected, not in the repository's history): the row sum by wgmma (kMmaRowSum: P times ones beside each P V k-step,
# HopperMmaRowSum: the tiles without the overlap at 64 or 128 keys, d64's one-warpgroup tiles)
# against the build before it (session 37's call 1 build, whose kernels the new build keeps
# byte for byte where kMmaRowSum is off).
#  1. The new build's GPU tests over d64: every searched variant of the four d64 classes
#     (ForwardGpu/FullSpace), the paged d64 classes, the switches-off test.
#  2. compute-sanitizer memcheck, racecheck and synccheck of the 64x64 tile (causal, ragged N).
#  3. bench/forward_tile_ab.sh: the d64 tiles with the row sum on the shapes where they win
#     (causal N 512-2k, full N 512), and the 192x128 overlap tile (unchanged SASS) as a control.
# usage (GPU): OLD=.devcarry-s37a NEW=.devcarry-s37b OUT=$OUT bash bench/data/h100-2026-12-06-s37/call3.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t SUITE_S=170 JOBS=4 TEST_S=160 \
  FILTER='ForwardGpu/FullSpace.EveryVariantMatchesTheReference/0:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/1:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/4:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/5:CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/0:CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/7:ForwardGpu.HopperSwitchesOffMatchTheReference' \
  bash bench/gpu_suite.sh "$N" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-san
V=hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal
bench_small=(--dtype bf16 --head-dim 64 --causal 1 --batch 2 --seqlen-q 1000 --seqlen-k 1100 --heads-q 4 --heads-kv 2
  --variant $V --reps 20 --rounds 1)
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 60 $N/flashtune bench "${bench_small[@]}" > "$OUT/san-plain.log" 2>&1
for tool in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 \
    $N/flashtune bench "${bench_small[@]}" > "$OUT/$tool.log" 2>&1
  echo "$tool $V: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" >> "$OUT/summary.txt"
done
unset FLASHTUNE_CACHE_DIR
c64() { echo "hopper_fwd_$1_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal,hopper_fwd_$1_d64_bm64_bn64_wg1_s2_p2_pp1_ov0_causal"; }
f64="hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_full,hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full"
f64="$f64,hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full"
PASSES=2 ROUNDS=5 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab bash bench/forward_tile_ab.sh "$OUT/ab.log" "$O" "$N" \
  "bf16 64 1 32 512 32 $(c64 bf16)" "bf16 64 1 16 1024 32 $(c64 bf16)" "f16 64 1 16 1024 32 $(c64 f16)" \
  "bf16 64 1 8 2048 32 $(c64 bf16)" "bf16 64 0 32 512 32 $f64" > "$OUT/ab-summary.txt" 2>&1
echo "A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests.txt ab-summary.txt ab.log > /dev/null
