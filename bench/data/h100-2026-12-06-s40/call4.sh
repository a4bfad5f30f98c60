#!/usr/bin/env bash
# Session 40, call 4: the d64 untuned decode tile (128 keys a step, 4 stages, one block an SM, at
# every length). 1) decode GPU tests of every class (float64 reference; the class default among
# the variants). 2) bench/decode_bench.py d64 untuned, dense and 16- / 256-key pages, B 1/8/64 x
# 2k/8k/32k, 3 rotated rounds, against SDPA flash and cuDNN. 3) `flashtune bench --rounds 5` of
# the old and new defaults at the shapes call 3 did not sweep (B1 x 2k / 32k, B64 x 8k / 32k).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s40/call4.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s40c4 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$P/flashtune FLASHTUNE_WORKER=$P/flashtune
timeout 200 $P/flashtune_gpu_tests --gtest_filter='DecodeGpu/DecodeClasses.*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
mkdir -p "$OUT/d64"
timeout 200 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT/d64" --head-dim 64 \
  --keys 2048,8192,32768 --rounds 3 > "$OUT/d64/decode.txt" 2>&1
echo "d64 untuned: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/d64/decode_bench.json" > "$OUT/d64-table.md" 2>&1
L=decode_fwd_bf16_d64_bn128_rm1_w4_s4_cs1_kv0_full,decode_fwd_bf16_d64_bn32_rm1_w2_s4_cs4_kv0_full,decode_fwd_bf16_d64_bn64_rm1_w4_s3_cs2_kv0_full,decode_fwd_bf16_d64_bn128_rm1_w4_s3_cs2_kv0_full
for bk in 1x2048 1x32768 64x8192 64x32768; do
  b=${bk%x*} k=${bk#*x}
  timeout 60 $P/flashtune bench --dtype bf16 --head-dim 64 --batch $b --seqlen-q 1 --seqlen-k $k --heads-q 32 \
    --heads-kv 8 --variant "$L" --rounds 5 > "$OUT/bench-b$b-k$k.txt" 2>&1
  echo "B$b x $k: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED" "$OUT/tests.txt" | head; cat "$OUT/d64-table.md"
for f in "$OUT"/bench-*.txt; do echo "$f"; grep "decode_fwd" "$f" | cut -c17-96; done
