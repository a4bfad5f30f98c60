#!/usr/bin/env bash
# Session 50, call 2. On an H200: issue 13's forward grid on MAIN (session 27's call2.sh, head
# dims 64, 128 and 256, tuned cold, within LIMIT). On an H100:
#  1) the new GPU tests on MAIN: RuntimeGpu.PackedCallsReplayedFromAGraph* (a claimed packed call
#     replayed from a CUDA graph three times), then VarlenGpu.ClaimedTiles* and RuntimeGpu.Varlen*;
#  2) racecheck of VarlenGpu.ClaimedTiles* on SYNC (MAIN + bench/data/h100-2026-12-07-s49/
#     merge-sync.patch: the split tail's reader syncs on the merge buffer's free barrier), its
#     reports counted by kernel (session 49's call 3: 36 on the merge buffer, p2 and p3 alike);
#  3) the split tail's tiles, MAIN against SYNC (bench/forward_tile_ab.sh, bf16 d64 B32 H32:
#     192x128 over three warpgroups and 256x64 over four, full N 512 and causal N 1k);
#  4) forward()'s warm host time on MAIN (runtime_bench): a packed call with and without the
#     tile counter's workspace (the memset), a dense call and the bare launch.
# usage (GPU): MAIN=.devcarry-N SYNC=.devcarry-S OUT=$OUT [LIMIT=560] bash bench/data/h100-2026-12-07-s50/call2.sh
set -uo pipefail
t0=$(date +%s)
LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
N=$(cd "${MAIN:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$N DIMS=64,128,256 LIMIT=$LIMIT OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
S=$(cd "${SYNC:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ftc-main
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 200 $N/flashtune_gpu_tests \
  --gtest_filter='RuntimeGpu.PackedCallsReplayedFromAGraph*:VarlenGpu.ClaimedTiles*:RuntimeGpu.Varlen*' > "$OUT/tests.txt" 2>&1
echo "tests on MAIN: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
LD_LIBRARY_PATH=$S:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-sync timeout 150 compute-sanitizer --tool racecheck \
  --error-exitcode 9 $S/flashtune_gpu_tests --gtest_filter='VarlenGpu.ClaimedTiles*' > "$OUT/racecheck-sync.txt" 2>&1
echo "racecheck on SYNC: exit $? at $(( $(date +%s) - t0 )) s; $(grep -cE 'Race reported' "$OUT/racecheck-sync.txt") races reported; $(grep -E '^\[  (PASSED|FAILED) |RACECHECK SUMMARY' "$OUT/racecheck-sync.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -oE "Race reported between [A-Za-z]+ access at [a-z0-9_]+" "$OUT/racecheck-sync.txt" | awk '{print $NF}' | sort | uniq -c | tee -a "$OUT/summary.txt"
gzip -f "$OUT/racecheck-sync.txt"
if [ "$(left)" -gt 150 ]; then
  v64=hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1
  v4=hopper_fwd_bf16_d64_bm256_bn64_wg4_s3_p2_pp1_ov1
  PASSES=2 ROUNDS=5 timeout $(( $(left) - 60 )) bash bench/forward_tile_ab.sh "$OUT/ab.txt" "$MAIN" "$SYNC" \
    "bf16 64 0 32 512 32 ${v64}_full,${v4}_full" "bf16 64 1 32 1024 32 ${v64}_causal,${v4}_causal" > "$OUT/ab-summary.txt" 2>&1
  echo "A/B MAIN against SYNC: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
fi
if [ -x "$N/flashtune_runtime_bench" ] && [ "$(left)" -gt 25 ]; then
  LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout $(( $(left) - 5 )) $N/flashtune_runtime_bench \
    --benchmark_filter='WarmHostOverhead|WarmPackedHostOverhead|DriverLaunchBaseline' --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true > "$OUT/runtime_bench.txt" 2>&1
  echo "runtime_bench: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
fi
cat "$OUT/ab-summary.txt" 2>/dev/null | tail -12
grep -E 'median' "$OUT/runtime_bench.txt" 2>/dev/null | cut -c1-110
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
