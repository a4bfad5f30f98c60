#!/usr/bin/env bash
# Session 50, call 5. On an H200: issue 13's forward grid on MAIN (session 27's call2.sh, head
# dims 64 and 256, the two under the geomean target on the last H200 grid, session 20; tuned
# cold, within LIMIT). On an H100: the size rule for claims
# (HopperClaimsRepay) on MAIN: VarlenGpu* (each class's cases now with 48 short sequences over 32
# heads, the one case a p3 kernel claims) and RuntimeGpu.PackedCalls* / RuntimeGpu.Varlen*, then
# `bench/varlen_bench.py --sizes` at d128 (claimed against static: from B16 on claimed, below it
# the same static deal either way).
# usage (GPU): MAIN=.devcarry-N OUT=$OUT [LIMIT=400] bash bench/data/h100-2026-12-07-s50/call5.sh
set -uo pipefail
t0=$(date +%s)
LIMIT=${LIMIT:-400}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
N=$(cd "${MAIN:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$N DIMS=64,256 LIMIT=$LIMIT OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ftc-main
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout $(( $(left) - 60 )) $N/flashtune_gpu_tests \
  --gtest_filter='VarlenGpu*:RuntimeGpu.PackedCalls*:RuntimeGpu.Varlen*' > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
grep -E '^\[  FAILED|Failure' "$OUT/tests.txt" | head -5
LD_LIBRARY_PATH=/usr/local/cuda/lib64 timeout $(( $(left) - 5 )) python3 bench/varlen_bench.py "$N/libflashtune.so" --sizes \
  --head-dim 128 --out "$OUT" > "$OUT/sizes-d128.txt" 2>&1
echo "sizes d128: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
grep -E 'claimed / static' "$OUT/sizes-d128.txt" | tail -12 | cut -c1-125
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
