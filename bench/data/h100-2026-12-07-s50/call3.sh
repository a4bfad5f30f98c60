#!/usr/bin/env bash
# Session 50, call 3. On an H200: issue 13's forward grid on MAIN (session 27's call2.sh, head
# dims 64, 128 and 256, tuned cold, within LIMIT). On an H100:
#  1) bench/varlen_bench.py on MAIN at d128 and d64, untuned: the packed batches with the tile
#     counter (claims) and without the workspace (the static deal) in one run, and a tiny batch
#     (4 sequences, 17-200 tokens) both ways: the counter's memset on the GPU's timeline;
#  2) racecheck of VarlenGpu.ClaimedTiles* on SYNC2 (MAIN + merge-sync-only.patch beside this
#     script: both merge barriers synchronise on both sides, no bar.arrive): does racecheck
#     still report the merge buffer? (call 2: it did with the reader's arrive made a sync)
# usage (GPU): MAIN=.devcarry-N SYNC2=.devcarry-S2 OUT=$OUT [LIMIT=560] bash bench/data/h100-2026-12-07-s50/call3.sh
set -uo pipefail
t0=$(date +%s)
LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
N=$(cd "${MAIN:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$N DIMS=64,128,256 LIMIT=$LIMIT OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
S=$(cd "${SYNC2:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
for d in 128 64; do
  LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune FLASHTUNE_CACHE_DIR=/tmp/ftc-main \
    timeout 150 python3 bench/varlen_bench.py "$N/libflashtune.so" --head-dim $d --out "$OUT/vb-d$d" > "$OUT/varlen-d$d.txt" 2>&1
  echo "varlen d$d: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
done
LD_LIBRARY_PATH=$S:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-sync2 timeout 150 compute-sanitizer --tool racecheck \
  --error-exitcode 9 $S/flashtune_gpu_tests --gtest_filter='VarlenGpu.ClaimedTiles*' > "$OUT/racecheck-sync2.txt" 2>&1
echo "racecheck on SYNC2: exit $? at $(( $(date +%s) - t0 )) s; $(grep -cE 'Race reported' "$OUT/racecheck-sync2.txt") races reported; $(grep -E '^\[  (PASSED|FAILED) |RACECHECK SUMMARY' "$OUT/racecheck-sync2.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -oE "Race reported between [A-Za-z]+ access at [a-z0-9_]+\+0x[0-9a-f]+" "$OUT/racecheck-sync2.txt" | head -4 | tee -a "$OUT/summary.txt"
grep -oE "Race reported between [A-Za-z]+ access at [a-z0-9_]+" "$OUT/racecheck-sync2.txt" | awk '{print $NF}' | sort | uniq -c | tee -a "$OUT/summary.txt"
gzip -f "$OUT/racecheck-sync2.txt"
for d in 128 64; do
  echo "== d$d"; grep -E "ft varlen (short|tiny)|claimed / static" "$OUT/varlen-d$d.txt" | tail -10 | cut -c1-100
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
