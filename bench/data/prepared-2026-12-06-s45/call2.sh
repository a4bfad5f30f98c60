#!/usr/bin/env bash
# Session 45, call 2. On an H200: issue 14's decode table, tuned (session 38's call 6, ~160 s). On
# an H100: what d96's 192x96 three-warpgroup tile is worth to a user, tuned: the d96 bf16 buckets
# tuned cold on MAIN's build and on D96's (main + d96-192x96-tiles.patch), each then timed through
# the runtime against SDPA flash and cuDNN in the same process (bench/perf_report.py, N 512-16k,
# full and causal, 3 rotated rounds); MAIN, D96, MAIN, D96 so each side's report has a twin.
# usage (GPU): MAIN=.devcarry-R D96=.devcarry-S OUT=$OUT bash bench/data/prepared-2026-12-06-s45/call2.sh
set -uo pipefail
t0=$(date +%s)
M=$(cd "${MAIN:?}" && pwd) D=$(cd "${D96:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
if grep -q H200 "$OUT/gpu.txt"; then
  PACK=$M OUT=$OUT bash bench/data/h100-2026-12-06-s38/call6.sh
  exit
fi
export PYTHONUNBUFFERED=1
for side in main d96; do
  P=$M; [ $side = d96 ] && P=$D
  mkdir -p /tmp/s45c2-$side
  LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s45c2-$side timeout 150 $P/flashtune tune \
    --db /tmp/s45c2-$side/t.db --dtypes bf16 --head-dims 96 --decode none --operation fwd > /tmp/s45c2-$side/tune.log 2>&1
  echo "$side tune: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 /tmp/s45c2-$side/tune.log)" | tee -a "$OUT/summary.txt"
  LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 $P/flashtune db list --db /tmp/s45c2-$side/t.db 2>&1 | grep hopper_fwd | cut -c1-160 > "$OUT/winners-$side.txt"
done
for pass in 1 2; do
  for side in main d96; do
    P=$M; [ $side = d96 ] && P=$D
    LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s45c2-$side timeout 120 python3 bench/perf_report.py \
      --lib $P/libflashtune.so --db /tmp/s45c2-$side/t.db --out /tmp/s45c2-$side --stem report$pass --head-dims 96 \
      --dtypes bf16 --seqlens 512,2048,8192,16384 --no-extra --rounds 3 > /tmp/s45c2-$side/report$pass.log 2>&1
    echo "$side report $pass: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
    cp /tmp/s45c2-$side/report$pass.log "$OUT/report$pass-$side.txt"
  done
done
head -40 "$OUT"/winners-*.txt
for f in "$OUT"/report*.txt; do echo "== $f"; grep -E "^\|" "$f" | head -14; done
