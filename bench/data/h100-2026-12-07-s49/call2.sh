#!/usr/bin/env bash
# Session 49, call 2: packed sequences' tiles claimed at run time (p3, the p2 tile's twin that
# packed calls run). NEW: this build; OLD: main before it (b6bf092).
# 1) Correctness on NEW: VarlenGpu* (every varlen class with each two-Q-buffer tile's p3 twin,
#    and VarlenGpu.ClaimedTilesMatchTheReference); compute-sanitizer memcheck, racecheck and
#    synccheck on VarlenGpu.ClaimedTiles* (d64 192x128 and 256x64, d128 128x128, full and causal).
# 2) Speed: bench/varlen_bench.py through the runtime, untuned, at d128 (its default) and d64, on
#    OLD and NEW in turn (ragged B8, short B64, equal B8 x 2048 against dense), within LIMIT.
# usage (GPU): OLD=.devcarry-M NEW=.devcarry-N OUT=$OUT [LIMIT=570] bash bench/data/h100-2026-12-07-s49/call2.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s49c2
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 150 $N/flashtune_gpu_tests --gtest_filter='VarlenGpu*' > "$OUT/varlen-tests.txt" 2>&1
echo "VarlenGpu*: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/varlen-tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
for tool in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 \
    $N/flashtune_gpu_tests --gtest_filter='VarlenGpu.ClaimedTiles*' > "$OUT/$tool.txt" 2>&1
  echo "$tool: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tail -1); $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/$tool.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done
for pass in 1 2; do
  for dim in 128 64; do
    for P in "$O" "$N"; do
      [ "$(left)" -lt 70 ] && { echo "varlen d$dim pass $pass: skipped (limit)" | tee -a "$OUT/summary.txt"; continue; }
      name=$([ "$P" = "$O" ] && echo old || echo new)
      LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune timeout $(( $(left) - 5 )) python3 bench/varlen_bench.py \
        "$P/libflashtune.so" --head-dim $dim --out "$OUT/vb-$name-d$dim-$pass" > "$OUT/varlen-$name-d$dim-$pass.txt" 2>&1
      echo "varlen $name d$dim pass $pass: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
    done
  done
done
for f in "$OUT"/varlen-*-d*.txt; do
  echo "== $(basename $f)"; grep -E "ft varlen (ragged|short|8x2048)|ft dense 8x2048|TFLOP/s / dense" "$f" | cut -c1-110
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt varlen-tests.txt > /dev/null  # the device returns at most 8 files
