#!/usr/bin/env bash
# Session 40, call 7: the d64 untuned decode rule as committed (dense: the short tile to 2^20 key
# elements, then 128-key steps, 4 stages, one block an SM; paged: the short tile, then 64-key
# steps over 4 warps, 2 stages, 4 blocks an SM). 1) decode GPU tests of every class. 2)
# bench/decode_bench.py d64, untuned, NEW with OLD (main before the session) as --baseline, dense
# and 16- / 256-key pages, B 1/2/4/8/64 x 2k/4k/8k/32k, 3 rotated rounds, same run as SDPA.
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s40/call7.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s40c7 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$N/flashtune FLASHTUNE_WORKER=$N/flashtune
timeout 150 $N/flashtune_gpu_tests --gtest_filter='DecodeGpu/DecodeClasses.*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
mkdir -p "$OUT/d64"
timeout 420 python3 bench/decode_bench.py $N/libflashtune.so --baseline $O/libflashtune.so --out "$OUT/d64" \
  --head-dim 64 --batches 1,2,4,8,64 --keys 2048,4096,8192,32768 --layouts dense,paged16,paged256 --rounds 3 \
  > "$OUT/d64/decode.txt" 2>&1
echo "d64 A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/d64/decode_bench.json" > "$OUT/d64-table.md" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED" "$OUT/tests.txt" | head; cat "$OUT/d64-table.md"
