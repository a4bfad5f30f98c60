#!/usr/bin/env bash
# Session 26, device call 3, with the build that keeps what calls 1-2 kept (PACK): the decode-only
# tune (the 22 bf16 d128 GQA-8 decode buckets, budgeted) and the tuned table against SDPA and the
# streaming read (bench/decode_round.sh steps tune, tuned: session 24's call 2 form), then, with
# FWD=1 and what is left of the call, the d64 forward grid's buckets tuned cold and the d64 grid
# through that database (bench/perf_report.py, queued, same run as SDPA). Logs under $OUT/dec, $OUT/fwd.
# usage (GPU): PACK=.devcarry-NAME [FWD=1] OUT=$OUT bash bench/data/h200-2026-12-05-s26/call3.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
mkdir -p "$OUT/dec" "$OUT/fwd"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
STEPS="tune tuned" TUNE_S=${TUNE_S:-200} TUNED_S=110 OUT=$OUT/dec bash bench/decode_round.sh $P > "$OUT/dec.txt" 2>&1
echo "decode exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dec.txt"
if [ "${FWD:-0}" = 1 ]; then
  export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-cache-fwd
  left=$(( 585 - ($(date +%s) - t0) ))
  s=$(date +%s)
  timeout $(( left > 200 ? left - 100 : left / 2 )) $P/flashtune tune --db "$OUT/fwd/fwd.db" --head-dims 64 --decode none \
    --operation fwd > "$OUT/fwd/tune.log" 2>&1
  echo "d64 tune: exit $? in $(( $(date +%s) - s )) s" >> "$OUT/fwd.txt"
  left=$(( 585 - ($(date +%s) - t0) ))
  timeout $left python3 bench/perf_report.py --lib $P/libflashtune.so --db "$OUT/fwd/fwd.db" --out "$OUT/fwd" \
    --head-dims 64 --no-extra --time-limit-s $(( left - 15 )) > "$OUT/fwd/perf_report.txt" 2>&1
  echo "d64 grid: exit $?" >> "$OUT/fwd.txt"
  tail -40 "$OUT/fwd/perf_report.txt" >> "$OUT/fwd.txt"
fi
cat "$OUT/gpu.txt"; echo "=== decode ($P)"; cat "$OUT/dec.txt"; cat "$OUT/dec/tuned/decode_table.md" 2>/dev/null
echo "=== d64 forward ($P)"; cat "$OUT/fwd.txt" 2>/dev/null
bash bench/pack_out.sh "$OUT" gpu.txt dec.txt dec/tuned/decode_table.md dec/tuned_winners.csv fwd.txt > /dev/null  # the device returns at most 8 files
