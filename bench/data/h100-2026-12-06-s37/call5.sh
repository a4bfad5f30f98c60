#!/usr/bin/env bash
# Session 37, call 5: issue 14's decode table on the shipped build (interleaved re-timing): the
# decode buckets tuned (decode only, bf16 d128, budgeted), then bench/decode_bench.py through
# them against SDPA flash, cuDNN and a streaming read (session 36 call 1's second half).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s37/call5.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s37
export FLASHTUNE_CLI=$P/flashtune FLASHTUNE_WORKER=$P/flashtune PYTHONUNBUFFERED=1
mkdir -p /tmp/s37 "$OUT/tuned"
timeout 120 $P/flashtune tune --db /tmp/s37/decode.db --decode only --dtypes bf16 --head-dims 128 \
  --strategy budgeted > "$OUT/tune.log" 2>&1
echo "decode tune: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tune.log")" >> "$OUT/summary.txt"
timeout 200 python3 bench/decode_bench.py $P/libflashtune.so --db /tmp/s37/decode.db --out "$OUT/tuned" \
  > "$OUT/decode.txt" 2>&1
echo "decode bench: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/tuned/decode_bench.json" > "$OUT/decode_table.md" 2>&1
cp /tmp/s37/decode.db "$OUT/decode.db"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/decode_table.md"
bash bench/pack_out.sh "$OUT" summary.txt decode_table.md gpu.txt > /dev/null
