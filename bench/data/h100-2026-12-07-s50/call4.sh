#!/usr/bin/env bash
# Session 50, call 4. On an H200: issue 13's forward grid on MAIN (session 27's call2.sh, head
# dims 64, 128 and 256, tuned cold, within LIMIT). On an H100:
#  1) `bench/varlen_bench.py --sizes` at d128 and d64, untuned: the first B = 2 ... 64 sequences
#     of the short batch, claimed (tile counter zeroed before the launch) against static (no
#     workspace), on three libraries timed interleaved in one process: MAIN (the counter zeroed by
#     cuMemsetD8Async), WRITE (MAIN with cuStreamWriteValue32 in its place: write-value.patch
#     beside this script) and FIRST (MAIN with each block's first tile its own number, the
#     counter claimed only after it: first-static.patch);
#  2) RuntimeGpu.PackedCallsReplayedFromAGraph* and VarlenGpu.ClaimedTiles* on WRITE (the write
#     captured into a graph and replayed).
# usage (GPU): MAIN=.devcarry-N WRITE=.devcarry-W FIRST=.devcarry-F OUT=$OUT [LIMIT=560] bash bench/data/h100-2026-12-07-s50/call4.sh
set -uo pipefail
t0=$(date +%s)
LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
N=$(cd "${MAIN:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$N DIMS=64,128,256 LIMIT=$LIMIT OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
W=$(cd "${WRITE:?}" && pwd) F=$(cd "${FIRST:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
for d in 128 64; do
  LD_LIBRARY_PATH=/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-sizes timeout $(( $(left) - 60 )) \
    python3 bench/varlen_bench.py "$N/libflashtune.so" "$W/libflashtune.so" "$F/libflashtune.so" --sizes --head-dim $d \
    --out "$OUT" > "$OUT/sizes-d$d.txt" 2>&1
  echo "sizes d$d: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
done
if [ "$(left)" -gt 40 ]; then
  LD_LIBRARY_PATH=$W:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-write timeout $(( $(left) - 5 )) $W/flashtune_gpu_tests \
    --gtest_filter='RuntimeGpu.PackedCallsReplayedFromAGraph*:VarlenGpu.ClaimedTiles*' > "$OUT/tests-write.txt" 2>&1
  echo "tests on WRITE: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests-write.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
fi
for d in 128 64; do echo "== d$d"; grep -E 'claimed / static|capture failed|error' "$OUT/sizes-d$d.txt" | tail -36 | cut -c1-125; done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
