#!/usr/bin/env bash
# Session 52, call 3 (what the budget left). On an H200: issue 13's forward grid at d128 on MAIN. On an
# H100: the tuner's GPU tests (TuneGpu.*: a planted fault, planted wrong and faulting hopper_fwd
# variants, the interleaved re-timing, backward and paged decode candidates) with the pack's CLI
# as the worker (call 2 ran them without FLASHTUNE_WORKER: a fork of a process that had
# initialised CUDA); then runtime_bench's warm calls against a bare launch (among them the paged prefill call
# with and without its tile counter, session 51's, never run on a GPU).
# usage (GPU): MAIN=.devcarry-A OUT=$OUT [LIMIT=300] bash bench/data/h100-2026-12-07-s52/call3.sh
source bench/device_call.sh 300
h200_grid "${MAIN:?}" 128  # (the budget left fits one head dim)
N=$(cd "$MAIN" && pwd)
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-main FLASHTUNE_WORKER=$N/flashtune
timeout 200 $N/flashtune_gpu_tests --gtest_filter='TuneGpu.*' > "$OUT/tune.txt" 2>&1
echo "TuneGpu: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tune.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -E '^\[  FAILED|Failure' "$OUT/tune.txt" | head -6 | tee -a "$OUT/summary.txt"
timeout $(( $(left) - 5 )) $N/flashtune_runtime_bench --benchmark_filter='Warm|DriverLaunchBaseline' \
  --benchmark_min_time=0.2 > "$OUT/runtime_bench.txt" 2>&1
echo "runtime_bench: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
grep -E '^BM_' "$OUT/runtime_bench.txt" | tee -a "$OUT/summary.txt"
cat "$OUT/gpu.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
