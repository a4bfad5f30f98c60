#!/usr/bin/env bash
# Session 43, call 2: decode_fwd's paged kernels, where a page holds a whole step (pages of
# kBlockN keys or more), read one table entry a step and address the step as the dense path
# does (one address, an add a chunk), instead of a table entry and a 64-bit page address per
# 16-row group. 1) NEW's decode GPU tests (every class with 16-, 64- and 256-key pages, varlen
# decode, the mixed batch). 2) bench/decode_bench.py untuned, NEW with OLD as --baseline, same
# run as SDPA: d128 B 1/8/64 x 2k/8k/32k, dense (the same kernels: the run's noise), 16-key
# pages (the grouped path, unchanged) and 256-key pages (the change), 3 rotated rounds.
# 3) compute-sanitizer racecheck and memcheck on bf16 d64 full / causal and d128 full (~300 s
# in all). SANITIZE=0 leaves the sanitizers out and BATCHES / KEYS narrow the A/B, where little
# device time is left.
# NEW: main with decode-whole-page-steps.patch; OLD: main (bench/pack_for_gpu.sh packs both).
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B [SANITIZE=0] [BATCHES=1,8] [KEYS=2048,8192] \
#   OUT=$OUT bash bench/data/h100-2026-12-06-s43/call2.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s43c2 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$N/flashtune FLASHTUNE_WORKER=$N/flashtune
sanitize() {
  timeout 60 compute-sanitizer --tool "$1" --error-exitcode 3 $N/flashtune_gpu_tests \
    --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/0:DecodeGpu/DecodeClasses.VariantsMatchTheReference/1:DecodeGpu/DecodeClasses.VariantsMatchTheReference/2' \
    > "$OUT/sanitizer-$1.txt" 2>&1
  echo "compute-sanitizer $1: exit $? at $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$1.txt" | tail -1)" >> "$OUT/summary.txt"
}
timeout 120 $N/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu/DecodeClasses.*:VarlenGpu/VarlenDecodeClasses*:RuntimeGpu.MixedVarlen*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
mkdir -p "$OUT/d128"
timeout 240 python3 bench/decode_bench.py $N/libflashtune.so --baseline $O/libflashtune.so --out "$OUT/d128" \
  --head-dim 128 --batches ${BATCHES:-1,8,64} --keys ${KEYS:-2048,8192,32768} --layouts dense,paged16,paged256 --rounds 3 \
  > "$OUT/d128/decode.txt" 2>&1
echo "d128 A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/d128/decode_bench.json" > "$OUT/d128-table.md" 2>&1
if [ "${SANITIZE:-1}" = 1 ]; then sanitize racecheck; sanitize memcheck; fi
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED" "$OUT/tests.txt" | head; cat "$OUT/d128-table.md"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests.txt d128-table.md
