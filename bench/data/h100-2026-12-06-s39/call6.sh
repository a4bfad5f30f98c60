#!/usr/bin/env bash
# Session 39, call 6: decode-halves-blocks.patch (NEW) against 843077b (OLD): bench/decode_tile_ab.sh,
# one pass of 3 rounds, the tuned winners' tiles at B1 / B8 / B64 x 2k, dense and 16-key pages;
# then NEW's decode GPU tests (float64 reference).
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s39/call6.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s39c6
PASSES=1 bash bench/decode_tile_ab.sh "$OUT/ab.log" "$O" "$N" "bn32_rm1_w2_s2_cs2 bn64_rm1_w4_s3_cs2 bn64_rm1_w4_s4_cs2 bn128_rm1_w4_s2_cs2" \
  "1 2048,8 2048,64 2048" "dense paged" > "$OUT/ab-summary.txt" 2>&1
echo "A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune timeout 100 $N/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
