#!/usr/bin/env bash
# Session 47, call 2. On an H200: issue 13's forward grid on MAIN (session 43's call 1, ~9 min).
# On an H100, on LAND (main + session 44's d96 192x96 three-warpgroup tile + session 46's split
# tail merge buffer at O's width, without session 45's four-warpgroup tiles, which hung in call 1):
# 1) GPU tests: d96's 192x96 tile, the split tail at padded head dims, and hopper_paged's cache
#    prefill at d160 / d224 (both dtypes, full and causal; the float64 reference);
# 2) the merge buffer's A/B: the two searched hopper_fwd d96 tiles that gain the split tail
#    (128x128 wg2 p2, 192x64 wg3 p2; full) on MAIN (no split tail) and LAND, in turn, twice,
#    `flashtune bench --rounds 5`, bf16, H 21, query counts that leave a short last tile;
# 3) compute-sanitizer memcheck and racecheck on the split tail's test, in the time left.
# usage (GPU): MAIN=.devcarry-R LAND=.devcarry-T OUT=$OUT LIMIT=560 bash bench/data/h100-2026-12-07-s47/call2.sh
set -uo pipefail
t0=$(date +%s)
M=$(cd "${MAIN:?}" && pwd) L=$(cd "${LAND:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
if grep -q H200 "$OUT/gpu.txt"; then
  PACK=$M OUT=$OUT bash bench/data/h100-2026-12-06-s43/call1.sh
  exit
fi
step() { echo "$1: exit $2 at $(( $(date +%s) - t0 )) s${3:+; $3}" | tee -a "$OUT/summary.txt"; }
left() { local l=$(( ${LIMIT:-560} - ($(date +%s) - t0) - 10 )); [ $l -gt $1 ] && l=$1; [ $l -lt 5 ] && l=5; echo $l; }
passed() { grep -E '^\[  (PASSED|FAILED) ' "$1" | tr '\n' ' '; }
C=CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference
T="ForwardGpu.D96Three*:ForwardGpu.PaddedHeadDimsSplit*:$C/6:$C/7:$C/8:$C/9:$C/18:$C/19:$C/20:$C/21"
LD_LIBRARY_PATH=$L:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s47-land timeout $(left 220) \
  $L/flashtune_gpu_tests --gtest_filter="$T" > "$OUT/tests.txt" 2>&1
step "tests" $? "$(passed "$OUT/tests.txt")"
for pass in 1 2; do
  for side in main land; do
    P=$M; [ $side = land ] && P=$L
    for shape in "16 1000" "8 1900" "2 8100"; do
      set -- $shape
      echo "== $side pass $pass" >> "$OUT/bench.txt"
      LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s47-$side timeout 40 $P/flashtune bench \
        --dtype bf16 --head-dim 96 --causal 0 --batch $1 --seqlen-q $2 --heads-q 21 --rounds 5 \
        --variant hopper_fwd_bf16_d96_bm128_bn128_wg2_s2_p2_pp1_ov1_full,hopper_fwd_bf16_d96_bm192_bn64_wg3_s2_p2_pp1_ov1_full \
        2>&1 | grep -E "^bf16|^hopper|rror" >> "$OUT/bench.txt"
    done
  done
  step "bench pass $pass" 0
done
for tool in memcheck racecheck; do
  left=$(( ${LIMIT:-560} - ($(date +%s) - t0) )); [ $left -lt 30 ] && { step "$tool" skipped "no time left"; continue; }
  LD_LIBRARY_PATH=$L:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s47-land \
    timeout $(( left / 2 < 150 ? left / 2 : 150 )) compute-sanitizer --tool $tool --error-exitcode 3 $L/flashtune_gpu_tests \
    --gtest_filter="ForwardGpu.PaddedHeadDimsSplit*" > "$OUT/$tool.txt" 2>&1
  step "$tool" $? "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tail -1) $(passed "$OUT/$tool.txt")"
done
grep -E "^== |^bf16|^hopper" "$OUT/bench.txt" | cut -c1-100
cat "$OUT/summary.txt"
