#!/usr/bin/env bash
# Session 40, call 8: the committed d64 decode rule's tiles on the GPU. 1) The decode GPU tests
# (every decode class, now with the long paged call's untuned tile among the variants; varlen
# decode; the mixed varlen batch; the paged decode tune). 2) compute-sanitizer memcheck,
# racecheck and synccheck on bf16 d64 decode, full and causal (DecodeClasses /0 and /1).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s40/call8.sh
set -uo pipefail
t0=$(date +%s)
N=$(cd "${PACK:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s40c8 FLASHTUNE_WORKER=$N/flashtune
timeout 200 $N/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*:RuntimeGpu.MixedVarlen*:TuneGpu.PagedDecode*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 $N/flashtune_gpu_tests \
    --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/0:DecodeGpu/DecodeClasses.VariantsMatchTheReference/1' \
    > "$OUT/sanitizer-$tool.txt" 2>&1
  echo "compute-sanitizer $tool: exit $? at $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1)" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED|Failure" "$OUT/tests.txt" | head
