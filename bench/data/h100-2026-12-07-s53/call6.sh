#!/usr/bin/env bash
# Session 53, call 6: what the device time left after seven attempts got no machine (391 s) fits:
# FA-2's forward grid at head dims 128 then 64 on MAIN without a tuning database (the untuned plan
# a user gets before `flashtune tune`), against SDPA flash and cuDNN in the same run
# (`bench/perf_report.py`, 3 rotated rounds, each output checked), as far as the time goes.
# usage (GPU): MAIN=.devcarry-A OUT=$OUT [LIMIT=280] bash bench/data/h100-2026-12-07-s53/call6.sh
source bench/device_call.sh 280
N=$(cd "${MAIN:?}" && pwd)
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-main
mkdir -p "$OUT/fwd"
timeout $(( $(left) - 8 )) python3 bench/perf_report.py --lib $N/libflashtune.so --db /tmp/s53-untuned-absent.db \
  --out "$OUT/fwd" --head-dims 128,64 --rounds 3 --time-limit-s $(( $(left) - 30 )) > "$OUT/fwd/perf_report.txt" 2>&1
echo "untuned grid: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
tail -62 "$OUT/fwd/perf_report.txt" > "$OUT/grid-table.txt"
cp "$OUT/fwd/perf_report.csv" "$OUT/grid.csv" 2>/dev/null
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/grid-table.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt grid-table.txt grid.csv > /dev/null
