#!/usr/bin/env bash
# Session 31, call 8 (prepared, not run: the device time ran out): the GPU tests the split tail
# and rotated rounds have not yet run. (1) The forward, varlen and runtime GPU tests
# (bench/gpu_suite.sh; ForwardGpu's FullSpace runs every searched hopper_fwd variant, and the
# varlen classes now include the d64 192x128 three-warpgroup persistent tile, whose sequences'
# own short last tiles split); (2) compute-sanitizer memcheck of the bf16 d64 non-causal varlen
# class (ragged 0-4097, Nq != Nk, mixed prefill + decode). Then, with the same pack, the whole grid
# tuned cold: PACK=... DIMS=64,128,256 OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s31/call8.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='ForwardGpu*:VarlenGpu/VarlenClasses.*:RuntimeGpu*' SUITE_S=360 JOBS=4 TEST_S=300 \
  bash bench/gpu_suite.sh "$P" > "$OUT/suite-stdout.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL' "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
# Instance 0 is (bf16, 64, non-causal): gtest prints the DType as bytes, <01-00 00-00> = kBF16.
test_id=VariantsMatchTheReference/0
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc timeout $(( 580 - ($(date +%s) - t0) )) \
  compute-sanitizer --tool memcheck --error-exitcode 3 $P/flashtune_gpu_tests \
  --gtest_filter="VarlenGpu/VarlenClasses.$test_id" > "$OUT/memcheck.log" 2>&1
echo "memcheck $test_id: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt suite-stdout.txt memcheck.log > /dev/null
