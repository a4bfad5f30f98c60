#!/usr/bin/env bash
# Session 53, call 3. On an H200: issue 13's forward grid on MAIN (tuned cold). On an H100: the
# forward grid (head dims 64, 128, 256, both dtypes and masks, and B1 H32 N8192 d128) through
# DB, the database call 2's default tune wrote (carried back in), against SDPA flash and cuDNN
# in the same run (`bench/perf_report.py`, 3 rotated rounds), within what is left.
# usage (GPU): MAIN=.devcarry-A DB=.devcarry-db/default.db OUT=$OUT [LIMIT=400] \
#   bash bench/data/h100-2026-12-07-s53/call3.sh
source bench/device_call.sh 400
N=$(cd "${MAIN:?}" && pwd)
h200_grid "$N" 64,128,256
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-main
mkdir -p "$OUT/fwd" && cp "${DB:?}" /tmp/s53.db
timeout $(( $(left) - 10 )) python3 bench/perf_report.py --lib $N/libflashtune.so --db /tmp/s53.db --out "$OUT/fwd" \
  --head-dims 64,128,256 --rounds 3 --time-limit-s $(( $(left) - 25 )) > "$OUT/fwd/perf_report.txt" 2>&1
echo "grid: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
tail -60 "$OUT/fwd/perf_report.txt" > "$OUT/grid-table.txt"
cp "$OUT/fwd/perf_report.csv" "$OUT/grid.csv" 2>/dev/null
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/grid-table.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt grid-table.txt grid.csv > /dev/null
