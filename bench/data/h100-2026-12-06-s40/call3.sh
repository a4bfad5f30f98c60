#!/usr/bin/env bash
# Session 40, call 3: every dense decode_fwd tile of the bf16 d64 space (58), `flashtune bench
# --rounds 5`, at the d64 shapes call 2 put under cuDNN untuned (B8 x 2k / 8k / 32k) and at
# B64 x 2k / B1 x 8k: which tile should the untuned plan pick at d64?
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s40/call3.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s40c3 FLASHTUNE_WORKER=$P/flashtune
L=$($P/flashtune generate --dtype bf16 --head-dim 64 --arch sm_90a 2>/dev/null | grep '^decode_fwd.*_kv0_' | paste -sd,)
: > "$OUT/summary.txt"
for bk in 8x32768 8x8192 8x2048 64x2048 1x8192; do
  b=${bk%x*} k=${bk#*x}
  timeout 110 $P/flashtune bench --dtype bf16 --head-dim 64 --batch $b --seqlen-q 1 --seqlen-k $k --heads-q 32 \
    --heads-kv 8 --variant "$L" --rounds 5 > "$OUT/sweep-b$b-k$k.txt" 2>&1
  echo "B$b x $k: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt"
for f in "$OUT"/sweep-*.txt; do echo "$f"; grep "decode_fwd" "$f" | sort -k3 -n | cut -c17-96 | head -7; done
