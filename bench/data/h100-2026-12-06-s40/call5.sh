#!/usr/bin/env bash
# Session 40, call 5: where the short-stream tile (32-key steps, two warps, 4 blocks an SM) still
# wins at d64. bench/decode_bench.py, d64, untuned, NEW (128-key steps at every length) with OLD
# (main before: the short tile up to 2^25 key elements) as --baseline, same run, dense and
# 16-key pages, B 1/2/4/8 x 2k/4k/8k, 3 rotated rounds. Then every paged (kv1) tile of the bf16
# d64 space, `flashtune bench --layout paged --rounds 5` (shuffled 16-key pages) at B8 x 8k and
# B64 x 2k: does the paged default (the dense one on pages) sit near the best there?
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s40/call5.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s40c5 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$N/flashtune FLASHTUNE_WORKER=$N/flashtune
mkdir -p "$OUT/d64"
timeout 400 python3 bench/decode_bench.py $N/libflashtune.so --baseline $O/libflashtune.so --out "$OUT/d64" \
  --head-dim 64 --batches 1,2,4,8 --keys 2048,4096,8192 --layouts dense,paged16 --rounds 3 > "$OUT/d64/decode.txt" 2>&1
echo "d64 A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/d64/decode_bench.json" > "$OUT/d64-table.md" 2>&1
L=$($N/flashtune generate --dtype bf16 --head-dim 64 --arch sm_90a 2>/dev/null | grep '^decode_fwd.*_kv1_' | paste -sd,)
for bk in 8x8192 64x2048; do
  b=${bk%x*} k=${bk#*x}
  timeout 90 $N/flashtune bench --dtype bf16 --head-dim 64 --batch $b --seqlen-q 1 --seqlen-k $k --heads-q 32 \
    --heads-kv 8 --layout paged --variant "$L" --rounds 5 > "$OUT/paged-b$b-k$k.txt" 2>&1
  echo "paged B$b x $k: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/d64-table.md"
for f in "$OUT"/paged-*.txt; do echo "$f"; grep -E "bn128_rm1_w4_s4_cs1|bn32_rm1_w2_s4_cs4" "$f" | cut -c17-96; grep "decode_fwd" "$f" | sort -k3 -n | cut -c17-96 | head -5; done
