#!/usr/bin/env bash
# One GPU round for varlen (issue 14): the varlen GPU tests (float64 reference) and the
# runtime's varlen call, bench/varlen_bench.py (varlen vs dense prefill, SDPA, torch varlen_attn,
# mixed prefill + decode; same run), the dense forward and decode GPU tests again (the shared
# softmax/P·V helpers of templates/ft_device.cuh), and compute-sanitizer memcheck on one varlen
# class (fa2_fwd and hopper_fwd variants). Logs go to $OUT; a short summary is printed last.
# usage: [STEPS="tests bench regress sanitize"] bench/varlen_round.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: varlen_round.sh BIN_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-round}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CLI=$BIN/flashtune FLASHTUNE_WORKER=$BIN/flashtune PYTHONUNBUFFERED=1
STEPS=${STEPS:-tests bench regress sanitize}
want() { [[ " $STEPS " == *" $1 "* ]]; }
summary=()
gtest() {  # NAME FILTER TIMEOUT
  local s=$(date +%s)
  timeout "$3" "$BIN/flashtune_gpu_tests" --gtest_filter="$2" > "$OUT/$1.log" 2>&1
  local rc=$?
  summary+=("$1: exit $rc in $(( $(date +%s) - s )) s; $(grep -c '^\[       OK' "$OUT/$1.log") ok, $(grep -c '^\[  FAILED  \] [A-Z]' "$OUT/$1.log") failed, $(grep -c '^\[  SKIPPED' "$OUT/$1.log") skipped")
  grep -E "checked|FAILED|Failure|error|wrote past" "$OUT/$1.log" | head -30
}
want tests && gtest varlen_gpu_tests "${TEST_FILTER:-VarlenGpu*:RuntimeGpu.VarlenCallRunsThroughThePlanner}" ${TESTS_S:-100}
if want bench; then
  s=$(date +%s)
  timeout ${BENCH_S:-80} python3 "$ROOT/bench/varlen_bench.py" "$BIN/libflashtune.so" --out "$OUT" > "$OUT/varlen_bench.log" 2>&1
  summary+=("varlen bench: exit $? in $(( $(date +%s) - s )) s")
  sed -n '/^torch .*varlen/,$p' "$OUT/varlen_bench.log" | tail -40
fi
want regress && gtest forward_decode_gpu_tests "${REGRESS_FILTER:-ForwardGpu/FullSpace*:ForwardGpu.HopperSwitches*:DecodeGpu*}" ${REGRESS_S:-90}
if want sanitize; then
  s=$(date +%s)
  timeout ${SANITIZE_S:-45} compute-sanitizer --tool memcheck --error-exitcode 3 "$BIN/flashtune_gpu_tests" \
    --gtest_filter="${SANITIZE_FILTER:-VarlenGpu/VarlenClasses.VariantsMatchTheReference/0}" > "$OUT/varlen_sanitizer.log" 2>&1
  summary+=("compute-sanitizer memcheck: exit $? in $(( $(date +%s) - s )) s: $(grep -E 'ERROR SUMMARY' "$OUT/varlen_sanitizer.log" | tail -1)")
fi
printf '%s\n' "${summary[@]}"
