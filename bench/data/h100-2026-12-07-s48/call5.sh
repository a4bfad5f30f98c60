#!/usr/bin/env bash
# Session 48, call 5, on PACK (main with d64's untuned four-warpgroup rule). On an H200: issue
# 13's forward grid at d128 (session 27's call2.sh, tuned cold, within LIMIT). On an H100:
# VarlenGpu/VarlenClasses at d64 (bf16 and f16, full and causal: now with 256x64 over four
# warpgroups, which the tuner may pick for packed buckets) and the runtime's GPU tests.
# usage (GPU): PACK=.devcarry-Y OUT=$OUT [LIMIT=420] bash bench/data/h100-2026-12-07-s48/call5.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$P DIMS=128 LIMIT=${LIMIT:-420} OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
# FLASHTUNE_CLI: RuntimeGpu.TunedProblemRunsFromTheDatabase runs the CLI (its build-tree path is not here;
# the call as run left it out, and that test failed on it: call5/runtime.txt, then runtime2.txt with it).
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s48c5 FLASHTUNE_WORKER=$P/flashtune \
  FLASHTUNE_CLI=$P/flashtune
passed() { grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$1" | tr '\n' ' '; }
V=VarlenGpu/VarlenClasses.VariantsMatchTheReference
timeout 240 $P/flashtune_gpu_tests --gtest_filter="$V/0:$V/1:$V/8:$V/9" > "$OUT/varlen.txt" 2>&1
echo "varlen d64: exit $? at $(( $(date +%s) - t0 )) s; $(passed "$OUT/varlen.txt")" | tee -a "$OUT/summary.txt"
timeout $(( ${LIMIT:-420} - ($(date +%s) - t0) - 10 )) $P/flashtune_gpu_tests --gtest_filter='RuntimeGpu*' > "$OUT/runtime.txt" 2>&1
echo "runtime: exit $? at $(( $(date +%s) - t0 )) s; $(passed "$OUT/runtime.txt")" | tee -a "$OUT/summary.txt"
grep -E "FAILED|Failure" "$OUT/varlen.txt" "$OUT/runtime.txt" | head -20
cat "$OUT/gpu.txt" "$OUT/summary.txt"
