#!/usr/bin/env bash
# Session 38, call 6: issue 14's decode table on the build whose budgeted search measures the
# untuned plan (4789a24): the decode buckets tuned (decode only, bf16 d128, budgeted), then
# bench/decode_bench.py --db --rounds 7 (call 2's decode half, same commands).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s38/call6.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s38c6
export FLASHTUNE_CLI=$P/flashtune FLASHTUNE_WORKER=$P/flashtune PYTHONUNBUFFERED=1
mkdir -p /tmp/s38c6 "$OUT/tuned"
timeout 120 $P/flashtune tune --db /tmp/s38c6/decode.db --decode only --dtypes bf16 --head-dims 128 \
  --strategy budgeted > "$OUT/tune.log" 2>&1
echo "decode tune: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tune.log")" >> "$OUT/summary.txt"
timeout 260 python3 bench/decode_bench.py $P/libflashtune.so --db /tmp/s38c6/decode.db --out "$OUT/tuned" --rounds 7 \
  > "$OUT/decode.txt" 2>&1
echo "decode bench: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/tuned/decode_bench.json" > "$OUT/decode_table.md" 2>&1
cp /tmp/s38c6/decode.db "$OUT/tuned/decode.db"
$P/flashtune db list --db /tmp/s38c6/decode.db > "$OUT/winners.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/decode_table.md"; cut -c1-150 "$OUT/winners.txt" | grep -v paged
bash bench/pack_out.sh "$OUT" summary.txt decode_table.md decode.txt winners.txt gpu.txt > /dev/null
