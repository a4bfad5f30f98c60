#!/usr/bin/env bash
# Session 45, call 1. On an H200: issue 13's forward grid (session 43's call 1, head dims 64, 128
# and 256, tuned cold, about 9 minutes). On an H100, in order:
# 1) hopper_paged at d160 and d224, first GPU run since P V went to the data's width
#    (CachePrefillGpu's d160 / d224 cases: the float64 reference, pages of 16, 32 and 256 keys,
#    and a dense cache with lengths), both dtypes, on MAIN;
# 2) on D96 (main + d96-wg4-tiles.patch): the new tiles' GPU tests, d96's 192x96 three-warpgroup
#    tile (ForwardGpu.D96ThreeWarpgroupTileMatchesTheReference) and d64's 256-row tiles over four
#    consumer warpgroups (ForwardGpu.FourWarpgroupTilesMatchTheReference);
# 3) session 44's prepared call 7 on D96 (d96's 192x96 against 192x80 and 128x128 p2);
# 4) d64's four-warpgroup tiles against the tuned kinds (`flashtune bench --rounds 5`, bf16, H 32,
#    B*N 16k): 256x64 p2, 256x80 / 256x96 without the overlap, against 192x128 p2 and 64x64 one
#    warpgroup p0 without the overlap, full N 512 / 1k / 2k / 16k and causal N 1k / 2k / 8k;
# 5) compute-sanitizer memcheck and racecheck on the new tiles' tests, in the time left.
# LIMIT: the call's seconds (default 560): the sanitizers take what is left of it; FAST=1 runs
# steps 2-4 only.
# usage (GPU): MAIN=.devcarry-R D96=.devcarry-S OUT=$OUT bash bench/data/prepared-2026-12-06-s45/call1.sh
set -uo pipefail
t0=$(date +%s)
M=$(cd "${MAIN:?}" && pwd) D=$(cd "${D96:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
if grep -q H200 "$OUT/gpu.txt"; then
  PACK=$M OUT=$OUT bash bench/data/h100-2026-12-06-s43/call1.sh
  exit
fi
step() { echo "$1: exit $2 at $(( $(date +%s) - t0 )) s${3:+; $3}" | tee -a "$OUT/summary.txt"; }
left() { local l=$(( ${LIMIT:-560} - ($(date +%s) - t0) - 10 )); [ $l -gt $1 ] && l=$1; [ $l -lt 5 ] && l=5; echo $l; }
passed() { grep -E '^\[  (PASSED|FAILED) ' "$1" | tr '\n' ' '; }
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s45-d96
T="${TESTS:-ForwardGpu.D96Three*:ForwardGpu.FourWarp*}"
PACK=$D bash bench/data/h100-2026-12-06-s44/call7.sh > "$OUT/bench.txt" 2>&1
step "d96 tiles bench" $?
v() { echo "$1" | tr ',' '\n' | sed "s/^/hopper_fwd_bf16_d64_/; s/$/_$2/" | paste -sd,; }
for shape in "0 512" "0 1024" "0 2048" "0 16384" "1 1024" "1 2048" "1 8192"; do
  set -- $shape
  m=$([ $1 = 1 ] && echo causal || echo full)
  timeout 60 $D/flashtune bench --dtype bf16 --head-dim 64 --causal $1 --batch $((16384 / $2)) --seqlen-q $2 --heads-q 32 \
    --variant "$(v bm192_bn128_wg3_s2_p2_pp1_ov1,bm64_bn64_wg1_s2_p0_pp1_ov0,bm256_bn64_wg4_s2_p2_pp1_ov1,bm256_bn80_wg4_s2_p2_pp1_ov0,bm256_bn96_wg4_s2_p2_pp1_ov0 $m)" \
    --rounds 5 2>&1 | grep -E "^bf16|^hopper|rror" >> "$OUT/bench.txt"
done
step "d64 wg4 bench" $?
cat "$OUT/bench.txt"
timeout $(left 200) $D/flashtune_gpu_tests --gtest_filter="$T" > "$OUT/new-tests.txt" 2>&1
step "new tiles' tests" $? "$(passed "$OUT/new-tests.txt")"
C=CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference
[ "${FAST:-0}" = 1 ] || LD_LIBRARY_PATH=$M:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s45-main timeout $(left 240) $M/flashtune_gpu_tests \
  --gtest_filter="$C/6:$C/7:$C/8:$C/9:$C/18:$C/19:$C/20:$C/21" > "$OUT/tests.txt" 2>&1
step "hopper_paged d160/d224 tests" $? "$(passed "$OUT/tests.txt")"
for tool in memcheck racecheck; do
  [ "${FAST:-0}" = 1 ] && break
  left=$(( ${LIMIT:-560} - ($(date +%s) - t0) )); [ $left -lt 30 ] && { step "$tool" skipped "no time left"; continue; }
  timeout $(( left / 2 < 150 ? left / 2 : 150 )) compute-sanitizer --tool $tool --error-exitcode 3 $D/flashtune_gpu_tests \
    --gtest_filter="$T" > "$OUT/new-$tool.txt" 2>&1
  step "$tool" $? "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/new-$tool.txt" | tail -1)"
done
