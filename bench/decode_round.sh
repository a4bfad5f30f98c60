#!/usr/bin/env bash
# One GPU round for the decode family: its GPU tests (float64 reference), compute-sanitizer
# memcheck on one class of them, and bench/decode_bench.py (flashtune dense and paged decode
# against SDPA flash and cuDNN and a streaming read, same run). Logs go to $OUT; a short
# summary is printed last.
# usage: [STEPS="tests sanitize bench"] [BENCH_ARGS=...] bench/decode_round.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: decode_round.sh BIN_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-round}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CLI=$BIN/flashtune FLASHTUNE_WORKER=$BIN/flashtune
STEPS=${STEPS:-tests sanitize bench}
want() { [[ " $STEPS " == *" $1 "* ]]; }
summary=()
if want tests; then
  s=$(date +%s)
  timeout ${TESTS_S:-240} "$BIN/flashtune_gpu_tests" --gtest_filter="${TEST_FILTER:-DecodeGpu*:RuntimeGpu*}" > "$OUT/decode_gpu_tests.log" 2>&1
  summary+=("gpu tests: exit $? in $(( $(date +%s) - s )) s; $(grep -c '^\[       OK' "$OUT/decode_gpu_tests.log") ok, $(grep -c '^\[  FAILED  \] [A-Z]' "$OUT/decode_gpu_tests.log") failed, $(grep -c '^\[  SKIPPED' "$OUT/decode_gpu_tests.log") skipped")
  grep -E "checked|FAILED|Failure|o error" "$OUT/decode_gpu_tests.log" | head -30
fi
if want sanitize; then
  s=$(date +%s)
  timeout ${SANITIZE_S:-150} compute-sanitizer --tool memcheck --error-exitcode 3 "$BIN/flashtune_gpu_tests" \
    --gtest_filter="${SANITIZE_FILTER:-DecodeGpu/DecodeClasses.VariantsMatchTheReference/3}" > "$OUT/decode_sanitizer.log" 2>&1
  summary+=("compute-sanitizer memcheck: exit $? in $(( $(date +%s) - s )) s: $(grep -E 'ERROR SUMMARY' "$OUT/decode_sanitizer.log" | tail -1)")
fi
if want bench; then
  s=$(date +%s)
  timeout ${BENCH_S:-240} python3 "$ROOT/bench/decode_bench.py" "$BIN/libflashtune.so" --out "$OUT" ${BENCH_ARGS:-} > "$OUT/decode_bench.log" 2>&1
  summary+=("decode bench: exit $? in $(( $(date +%s) - s )) s")
  sed -n '/^streaming read .* TB\/s; /,$p' "$OUT/decode_bench.log"
  tail -3 "$OUT/decode_bench.log"
fi
printf '%s\n' "${summary[@]}"
