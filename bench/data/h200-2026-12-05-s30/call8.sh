#!/usr/bin/env bash
# Session 30, call 8 (prepared, not run: the device time ran out): paged decode in a chain of
# calls. Round 17 found the paged split kernel 3 us slower than dense alone under ncu (440 more
# instructions a warp), yet cutting 8% of them changed nothing in graph-replayed calls, where
# paged still trails dense by 7% at B1 x 2k (untuned). bench/decode_chain.py replays a graph
# of 20 chained calls per layout under torch.profiler (CUPTI kernel records): each kernel's
# traced duration, the call period and the lead between calls, dense / dense-lens / paged16 and
# SDPA cuDNN / flash, with the same graph timed without the profiler beside them.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s30/call8.sh
set -uo pipefail
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-chain DECODE_CHAIN_SHAPES=1x2048,1x8192,8x2048 \
  timeout 300 python3 bench/decode_chain.py $P/libflashtune.so --json "$OUT/chain.json" > "$OUT/chain.txt" 2>&1
echo "decode_chain: exit $?" > "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/chain.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt chain.txt chain.json > /dev/null
