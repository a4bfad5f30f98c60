#!/usr/bin/env bash
# Session 49, call 3: claimed tiles (p3) after call 2. Not causal, claims now go row by row
# (ft_sched::claim_tile), as the static rounds do; causal keeps the last query block first. And
# two producers for two consumer warpgroups: NEW keeps 24 registers there (the consumers 240;
# the loading thread spills 44-48 bytes), N32 keeps 32 (the consumers 232; no spill).
# OLD: main before (b6bf092), NEW: this build, N32: NEW with the producer at 32 for every p3.
# 1) VarlenGpu* on NEW; racecheck of VarlenGpu.ClaimedTiles* on NEW (p3 beside its p2 twin: does
#    call 2's merge-buffer report come with the static deal too?) and synccheck.
# 2) bench/varlen_bench.py through the runtime, untuned: d128 on OLD, NEW, N32; d64 on OLD, NEW.
# usage (GPU): OLD=.devcarry-M NEW=.devcarry-N N32=.devcarry-N3 OUT=$OUT [LIMIT=560] bash bench/data/h100-2026-12-07-s49/call3.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd) T=$(cd "${N32:?}" && pwd)
LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-new timeout 150 $N/flashtune_gpu_tests --gtest_filter='VarlenGpu*' > "$OUT/varlen-tests.txt" 2>&1
echo "VarlenGpu*: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/varlen-tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
for tool in racecheck synccheck; do
  LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-new timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 \
    --print-limit 100000 $N/flashtune_gpu_tests --gtest_filter='VarlenGpu.ClaimedTiles*' > "$OUT/$tool.txt" 2>&1
  echo "$tool: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tail -1); $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/$tool.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done
# racecheck's reports by kernel (p2 against p3)
grep -oE "Race reported between [A-Za-z]+ access at [a-z0-9_]+" "$OUT/racecheck.txt" | awk '{print $NF}' | sort | uniq -c | tee -a "$OUT/summary.txt"
for run in "128 $O old" "128 $N new" "128 $T n32" "64 $O old" "64 $N new"; do
  set -- $run
  [ "$(left)" -lt 75 ] && { echo "varlen d$1 $3: skipped (limit)" | tee -a "$OUT/summary.txt"; continue; }
  LD_LIBRARY_PATH=$2:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$2/flashtune FLASHTUNE_CACHE_DIR=/tmp/ftc-$3 \
    timeout $(( $(left) - 5 )) python3 bench/varlen_bench.py "$2/libflashtune.so" --head-dim $1 --out "$OUT/vb-$3-d$1" > "$OUT/varlen-$3-d$1.txt" 2>&1
  echo "varlen $3 d$1: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
done
for f in "$OUT"/varlen-*-d*.txt; do
  echo "== $(basename $f)"; grep -E "ft varlen (ragged|short|8x2048)|ft dense 8x2048" "$f" | cut -c1-64
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null  # the device returns at most 8 files
