#!/usr/bin/env bash
# Session 52, call 6 (the budget's last 270 s). On an H200: issue 13's forward grid at d128 on
# MAIN (tuned cold, then against SDPA flash and cuDNN). On an H100: the forward sweeps in one
# process, as far as the time goes: ForwardGpu/SampledSpace (the default and the space's first
# and last variant of head dims 32, 96, 160, 192, 224, 256, both dtypes and masks), then
# ForwardGpu/FullSpace (every d64 and d128 variant of both families).
# usage (GPU): MAIN=.devcarry-A OUT=$OUT [LIMIT=260] bash bench/data/h100-2026-12-07-s52/call6.sh
source bench/device_call.sh 260
h200_grid "${MAIN:?}" 128  # (the budget left fits one head dim)
N=$(cd "$MAIN" && pwd)
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-main FLASHTUNE_WORKER=$N/flashtune
timeout $(( $(left) - 8 )) $N/flashtune_gpu_tests --gtest_filter='ForwardGpu/SampledSpace.*:ForwardGpu/FullSpace.*' \
  > "$OUT/sweeps.txt" 2>&1
echo "sweeps: exit $? at $(( $(date +%s) - t0 )) s; ran $(grep -c '^\[       OK' "$OUT/sweeps.txt") ok; last started: $(grep -E '^\[ RUN' "$OUT/sweeps.txt" | tail -1)" | tee -a "$OUT/summary.txt"
grep -E '^\[  FAILED|Failure|^\[  PASSED' "$OUT/sweeps.txt" | head -8 | tee -a "$OUT/summary.txt"
grep -E '^\[       OK' "$OUT/sweeps.txt" | tee -a "$OUT/summary.txt"
cat "$OUT/gpu.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
