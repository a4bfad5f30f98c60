#!/usr/bin/env bash
# Session 49, call 5 (prepared, not run: the session's device time ran out). On an H200: issue
# 13's forward grid on MAIN (session 27's call2.sh, head dims 64, 128 and 256, tuned cold, within
# LIMIT). On an H100: packed calls at d64 with claimed tiles, bench/varlen_bench.py --head-dim 64
# through the runtime, untuned, on OLD (main before claims, b6bf092), MAIN (this session's final
# build: call 4 ran d128 only) and FOUR (MAIN + packed-d64-four.patch beside this script: packed
# d64 calls of at most 1024 keys, 4096 causal, on 256x64 over four warpgroups, now claimed), in
# turn; then VarlenGpu* on FOUR.
# usage (GPU): OLD=.devcarry-M MAIN=.devcarry-N FOUR=.devcarry-F OUT=$OUT [LIMIT=570] bash bench/data/h100-2026-12-07-s49/call5.sh
set -uo pipefail
t0=$(date +%s)
LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
N=$(cd "${MAIN:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$N DIMS=64,128,256 LIMIT=$LIMIT OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
O=$(cd "${OLD:?}" && pwd) F=$(cd "${FOUR:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
for run in "$O old" "$N main" "$F four"; do
  set -- $run
  [ "$(left)" -lt 75 ] && { echo "varlen d64 $2: skipped (limit)" | tee -a "$OUT/summary.txt"; continue; }
  LD_LIBRARY_PATH=$1:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$1/flashtune FLASHTUNE_CACHE_DIR=/tmp/ftc-$2 \
    timeout $(( $(left) - 3 )) python3 bench/varlen_bench.py "$1/libflashtune.so" --head-dim 64 --out "$OUT/vb-$2" > "$OUT/varlen-$2-d64.txt" 2>&1
  echo "varlen $2 d64: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
done
if [ -x "$F/flashtune_gpu_tests" ] && [ "$(left)" -gt 90 ]; then
  LD_LIBRARY_PATH=$F:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-four timeout $(( $(left) - 3 )) \
    $F/flashtune_gpu_tests --gtest_filter='VarlenGpu*' > "$OUT/tests.txt" 2>&1
  echo "VarlenGpu* on FOUR: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
fi
for f in "$OUT"/varlen-*-d64.txt; do
  echo "== $(basename $f)"; grep -E "ft varlen (ragged|short|8x2048)|ft dense 8x2048" "$f" | cut -c1-64
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
