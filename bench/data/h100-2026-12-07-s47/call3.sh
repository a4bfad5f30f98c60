#!/usr/bin/env bash
# Session 47, call 3. On an H200: issue 13's forward grid at d128 on MAIN (session 27's call2.sh
# with DIMS=128, tuned cold, within LIMIT).
# On an H100, on WG4 (main + d64's 256-row tiles over four consumer warpgroups, allowed and not
# searched, with the split tail only where kStages >= kConsumerWarpgroups - 1: call 1's hang):
# 1) ForwardGpu.FourWarpgroupTilesMatchTheReference (two stages without the split tail, three
#    with it; both dtypes, full and causal, the float64 reference on the edge shapes);
# 2) `flashtune bench --rounds 5` (which checks each variant first), bf16 d64, H 32, B*N 16k:
#    the four-warpgroup tiles against the grid's 192x128 p2 and 64x64 one warpgroup p0 without
#    the overlap; full N 512 / 1k / 2k / 16k, causal N 1k / 2k / 8k;
# 3) hopper_paged's cache prefill at d160 / d224 (CachePrefillGpu's cases 6-9 and 18-21) on main's
#    kernels but the named barriers' numbers (call 2 passed them on a build with the merge buffer
#    packed, which main does not have);
# 4) compute-sanitizer memcheck and racecheck on the test, in the time left.
# FAST=1: the bench first, then the test in the time left; nothing else.
# usage (GPU): MAIN=.devcarry-R WG4=.devcarry-W OUT=$OUT LIMIT=540 bash bench/data/h100-2026-12-07-s47/call3.sh
set -uo pipefail
t0=$(date +%s)
M=$(cd "${MAIN:?}" && pwd) W=$(cd "${WG4:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
if grep -q H200 "$OUT/gpu.txt"; then
  PACK=$M DIMS=128 LIMIT=$(( ${LIMIT:-540} - 10 )) OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
step() { echo "$1: exit $2 at $(( $(date +%s) - t0 )) s${3:+; $3}" | tee -a "$OUT/summary.txt"; }
left() { local l=$(( ${LIMIT:-540} - ($(date +%s) - t0) - 10 )); [ $l -gt $1 ] && l=$1; [ $l -lt 5 ] && l=5; echo $l; }
passed() { grep -E '^\[  (PASSED|FAILED) ' "$1" | tr '\n' ' '; }
export LD_LIBRARY_PATH=$W:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s47-wg4
T=ForwardGpu.FourWarp*
tests() {
  timeout $(left 200) $W/flashtune_gpu_tests --gtest_filter="$T" > "$OUT/tests.txt" 2>&1
  step "wg4 tests" $? "$(passed "$OUT/tests.txt")"
}
[ "${FAST:-0}" = 1 ] || tests
v() { echo "$1" | tr ',' '\n' | sed "s/^/hopper_fwd_bf16_d64_/; s/$/_$2/" | paste -sd,; }
for shape in "0 512" "0 1024" "0 2048" "0 16384" "1 1024" "1 2048" "1 8192"; do
  set -- $shape
  m=$([ $1 = 1 ] && echo causal || echo full)
  [ $(left 45) -lt 15 ] && break
  timeout $(left 45) $W/flashtune bench --dtype bf16 --head-dim 64 --causal $1 --batch $((16384 / $2)) --seqlen-q $2 --heads-q 32 \
    --variant "$(v bm192_bn128_wg3_s2_p2_pp1_ov1,bm64_bn64_wg1_s2_p0_pp1_ov0,bm256_bn64_wg4_s2_p2_pp1_ov1,bm256_bn64_wg4_s3_p2_pp1_ov1,bm256_bn80_wg4_s2_p2_pp1_ov0,bm256_bn96_wg4_s2_p2_pp1_ov0 $m)" \
    --rounds 5 > "$OUT/bench-$m-$2.log" 2>&1
  echo "bench $m N $2: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  grep -E "^bf16|^hopper|rror" "$OUT/bench-$m-$2.log" >> "$OUT/bench.txt"
  rm -f "$OUT/bench-$m-$2.log"
done
step "bench" 0
[ "${FAST:-0}" = 1 ] && { tests; cut -c1-100 "$OUT/bench.txt"; cat "$OUT/summary.txt"; exit; }
C=CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference
timeout $(left 150) $W/flashtune_gpu_tests --gtest_filter="$C/6:$C/7:$C/8:$C/9:$C/18:$C/19:$C/20:$C/21" > "$OUT/paged.txt" 2>&1
step "hopper_paged d160/d224 tests" $? "$(passed "$OUT/paged.txt")"
for tool in memcheck racecheck; do
  left=$(( ${LIMIT:-540} - ($(date +%s) - t0) )); [ $left -lt 30 ] && { step "$tool" skipped "no time left"; continue; }
  timeout $(( left / 2 < 150 ? left / 2 : 150 )) compute-sanitizer --tool $tool --error-exitcode 3 $W/flashtune_gpu_tests \
    --gtest_filter="$T" > "$OUT/$tool.txt" 2>&1
  step "$tool" $? "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tail -1) $(passed "$OUT/$tool.txt")"
done
cut -c1-100 "$OUT/bench.txt"
cat "$OUT/summary.txt"
