#!/usr/bin/env bash
# Session 49, call 4: claimed tiles (p3) in their final form: a call without the counter's
# workspace, or whose sequences are all the longest (total_q = B * Nq and total_k = B * Nk),
# gets the static deal from the p3 kernel's scheduler warp. NEW: this build; OLD: b6bf092.
# 1) VarlenGpu* on NEW (p3 with and without the workspace: VarlenGpu.ClaimedTiles*), and
#    RuntimeGpu* (a varlen call without a workspace through the planner).
# 2) bench/varlen_bench.py at d128 on OLD and NEW (B8 x 2048 packed: the static deal again).
# usage (GPU): OLD=.devcarry-M NEW=.devcarry-N OUT=$OUT [LIMIT=300] bash bench/data/h100-2026-12-07-s49/call4.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
LIMIT=${LIMIT:-300}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ftc-new
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 120 $N/flashtune_gpu_tests --gtest_filter='VarlenGpu*:RuntimeGpu*' > "$OUT/tests.txt" 2>&1
echo "VarlenGpu* RuntimeGpu*: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
for run in "$O old" "$N new"; do
  set -- $run
  [ "$(left)" -lt 75 ] && { echo "varlen d128 $2: skipped (limit)" | tee -a "$OUT/summary.txt"; continue; }
  LD_LIBRARY_PATH=$1:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$1/flashtune FLASHTUNE_CACHE_DIR=/tmp/ftc-$2 \
    timeout $(( $(left) - 3 )) python3 bench/varlen_bench.py "$1/libflashtune.so" --head-dim 128 --out "$OUT/vb-$2" > "$OUT/varlen-$2-d128.txt" 2>&1
  echo "varlen $2 d128: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
done
for f in "$OUT"/varlen-*-d128.txt; do
  echo "== $(basename $f)"; grep -E "ft varlen (ragged|short|8x2048)|ft dense 8x2048" "$f" | cut -c1-64
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
