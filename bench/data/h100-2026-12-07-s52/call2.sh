#!/usr/bin/env bash
# Session 52, call 2. On an H200: issue 13's forward grid on MAIN (head dims 64, 128, 256).
# On an H100: the driver and runtime GPU tests in one process on MAIN (call 1's whole-binary run
# lost every test after DriverGpu.IllegalAddressIsAFault to the fault's broken context; that test
# now faults in a child process); `varlen_bench.py --paged --head-dim 64` on BASE's library and
# FOUR's (paged-four.patch; call 1 hit the script's shadowed `paged`); then the GPU tests call 1
# never reached (TuneGpu, DecodeGpu/*, VarlenGpu/*, CachePrefillGpu/*) within what is left.
# usage (GPU): MAIN=.devcarry-A BASE=.devcarry-M FOUR=.devcarry-W OUT=$OUT [LIMIT=560] bash bench/data/h100-2026-12-07-s52/call2.sh
source bench/device_call.sh 560
h200_grid "${MAIN:?}" 64,128,256
N=$(cd "$MAIN" && pwd) M=$(cd "${BASE:?}" && pwd) W=$(cd "${FOUR:?}" && pwd)
card_line
export FLASHTUNE_CACHE_DIR=/tmp/ftc-main
ran() {  # NAME LOG: the log's gtest totals and failures into summary.txt
  echo "$1: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$2" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
  grep -E '^\[  FAILED|Failure' "$2" | head -6 | tee -a "$OUT/summary.txt"
}
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 150 $N/flashtune_gpu_tests \
  --gtest_filter='DriverGpu.*:RuntimeGpu.*:RuntimeGpuChild.*' > "$OUT/runtime.txt" 2>&1
echo "driver+runtime: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
ran driver+runtime "$OUT/runtime.txt"
LD_LIBRARY_PATH=/usr/local/cuda/lib64 timeout 120 python3 bench/varlen_bench.py "$M/libflashtune.so" \
  "$W/libflashtune.so" --paged --head-dim 64 --out "$OUT" > "$OUT/paged.txt" 2>&1
echo "bench: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/paged.txt" | grep -i error | tee -a "$OUT/summary.txt"
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout $(( $(left) - 10 )) $N/flashtune_gpu_tests \
  --gtest_filter='TuneGpu.*:DecodeGpu/*:VarlenGpu/*:CachePrefillGpu/*' > "$OUT/rest.txt" 2>&1
echo "rest: exit $? at $(( $(date +%s) - t0 )) s; ran $(grep -c '^\[       OK' "$OUT/rest.txt") ok; last started: $(grep -E '^\[ RUN' "$OUT/rest.txt" | tail -1)" | tee -a "$OUT/summary.txt"
ran rest "$OUT/rest.txt"
grep -E 'us  /' "$OUT/paged.txt" | tee -a "$OUT/summary.txt"
cat "$OUT/gpu.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
