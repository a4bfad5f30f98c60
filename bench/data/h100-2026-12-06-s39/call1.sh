#!/usr/bin/env bash
# Session 39, call 1 (no machine was lent when it was called; not run). On an H200: issue 13's
# forward grid (session 27's call2.sh, all three head dims). On an H100: every hopper_fwd tile of
# the bf16 d64 space at the d64 shapes still under 1.5x SDPA flash in session 38's grid (causal
# N 1k, full N 512, causal N 2k), `flashtune bench --rounds 5`: does the budgeted tune miss a
# faster tile there? (Session 38's call 8, the decode sweep this call first carried, ran in call 2.)
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s39/call1.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
if grep -q H200 "$OUT/gpu.txt"; then
  PACK=$P DIMS=64,128,256 OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s39c1 FLASHTUNE_WORKER=$P/flashtune
for cb in "1 16 1024" "0 32 512" "1 8 2048"; do
  set -- $cb
  L=$($P/flashtune generate --dtype bf16 --head-dim 64 --causal $1 --arch sm_90a 2>/dev/null | grep hopper_fwd | paste -sd,)
  timeout 200 $P/flashtune bench --dtype bf16 --head-dim 64 --causal $1 --batch $2 --seqlen-q $3 --seqlen-k $3 \
    --heads-q 32 --heads-kv 32 --variant "$L" --rounds 5 > "$OUT/d64-c$1-n$3.txt" 2>&1
  echo "d64 causal $1 N $3: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/summary.txt"
for f in "$OUT"/d64-*.txt; do
  echo "$f"; grep -E "^hopper_fwd" "$f" | sort -k3 -n | cut -c1-100 | head -6
done
