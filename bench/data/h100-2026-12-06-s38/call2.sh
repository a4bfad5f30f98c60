#!/usr/bin/env bash
# Session 38, call 2: issue 14's decode table with rotated rounds, and paged prefill through the
# runtime, on the shipped kernels (PACK: a bench/pack_for_gpu.sh build).
#  1. The decode buckets tuned (decode only, bf16 d128, budgeted), as session 37's call 5.
#  2. bench/decode_bench.py --db --rounds 7: every system of a shape (SDPA flash, cuDNN, dense,
#     16- and 256-key pages) timed 7 times in rotated order; medians, and the per-round
#     dense / cuDNN ratios' median and range.
#  3. Prefill through the runtime (no tuning database: the built-in tiles), --rounds 5: dense, a
#     dense cache with lengths, 16-key pages, against SDPA flash and cuDNN on the dense tensors
#     (session 36's call 5 shapes).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s38/call2.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s38
export FLASHTUNE_CLI=$P/flashtune FLASHTUNE_WORKER=$P/flashtune PYTHONUNBUFFERED=1
mkdir -p /tmp/s38 "$OUT/tuned" "$OUT/prefill"
timeout 120 $P/flashtune tune --db /tmp/s38/decode.db --decode only --dtypes bf16 --head-dims 128 \
  --strategy budgeted > "$OUT/tune.log" 2>&1
echo "decode tune: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tune.log")" >> "$OUT/summary.txt"
timeout 260 python3 bench/decode_bench.py $P/libflashtune.so --db /tmp/s38/decode.db --out "$OUT/tuned" --rounds 7 \
  > "$OUT/decode.txt" 2>&1
echo "decode bench: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/tuned/decode_bench.json" > "$OUT/decode_table.md" 2>&1
cp /tmp/s38/decode.db "$OUT/tuned/decode.db"
export FLASHTUNE_DB=/tmp/ft-s38-absent.db
: > "$OUT/prefill.txt"
for shape in "128 4 512 4096" "128 1 2048 8192" "64 4 512 4096" "256 4 512 4096"; do
  set -- $shape
  left=$(( 570 - ($(date +%s) - t0) ))
  (( left > 20 )) || { echo "prefill d$1 B$2: skipped, $left s left" >> "$OUT/summary.txt"; continue; }
  mkdir -p "$OUT/prefill/d$1b$2"
  timeout $left python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT/prefill/d$1b$2" --head-dim $1 --batches $2 \
    --seqlen-q $3 --keys $4 --layouts dense,dense-lens,paged16 --rounds 5 >> "$OUT/prefill.txt" 2>&1
  echo "prefill d$1 B$2 Nq$3 Nk$4: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/decode_table.md"
grep -h "^B[0-9]" "$OUT/decode.txt" | sort -u | sed 's/ err [0-9.e-]*//g' | grep -o "B[0-9]* *[0-9]* .*dense *[0-9.]* us\|dense x cudnn.*" | paste - - | cut -c1-160
grep -h "^B[0-9]\|output check" "$OUT/prefill.txt" | sort -u | sed 's/ err [0-9.e-]*//g' | cut -c1-330
bash bench/pack_out.sh "$OUT" summary.txt decode_table.md decode.txt prefill.txt gpu.txt > /dev/null
