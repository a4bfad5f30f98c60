#!/usr/bin/env bash
# Session 39, call 5: decode at head dims 64 and 256, untuned (the runtime's size rule, set from
# d128 measurements), against SDPA flash and cuDNN in the same run: bench/decode_bench.py, dense,
# B 1/8/64 x 2k/8k/32k keys, Hq 32 Hkv 8, 3 rotated rounds.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s39/call5.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s39c5 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$P/flashtune FLASHTUNE_WORKER=$P/flashtune
for d in 64 256; do
  mkdir -p "$OUT/d$d"
  timeout 170 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT/d$d" --head-dim $d --layouts dense \
    --keys 2048,8192,32768 --rounds 3 > "$OUT/d$d/decode.txt" 2>&1
  echo "d$d untuned: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  python3 bench/decode_table.py "$OUT/d$d/decode_bench.json" > "$OUT/d$d-table.md" 2>&1
done
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT"/d64-table.md "$OUT"/d256-table.md
