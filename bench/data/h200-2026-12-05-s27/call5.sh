#!/usr/bin/env bash
# Session 27, call 5 (the last of the device time): the d256 half of the forward grid through the
# runtime with the thresholded rescale on at d256 (the generator's policy, commit after call 3):
# the grid's d256 buckets tuned cold, then bench/perf_report.py (queued, 3 rotated rounds, same
# run as SDPA flash / cuDNN). PACK: .devcarry-s27p (this commit's build).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s27/call5.sh
set -uo pipefail
t0=$(date +%s)
P=.devcarry-s27p
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-cache-fwd
mkdir -p "$OUT/fwd"
timeout 150 $P/flashtune tune --db "$OUT/fwd/fwd.db" --head-dims 256 --decode none --operation fwd > "$OUT/fwd/tune.log" 2>&1
echo "tune d256: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/fwd/tune.log")" > "$OUT/summary.txt"
left=$(( 290 - ($(date +%s) - t0) ))
PYTHONUNBUFFERED=1 timeout $left python3 bench/perf_report.py --lib $P/libflashtune.so --db "$OUT/fwd/fwd.db" --out "$OUT/fwd" \
  --head-dims 256 --no-extra --rounds 3 --time-limit-s $(( left - 25 )) > "$OUT/fwd/perf_report.txt" 2>&1
echo "grid: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
grep -E '^\[|^(bf16|f16) |x flash|pass' "$OUT/fwd/perf_report.txt" | grep -v '^\[' > "$OUT/grid-table.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/grid-table.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt grid-table.txt > /dev/null
