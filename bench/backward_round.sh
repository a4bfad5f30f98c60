#!/usr/bin/env bash
# One GPU round for the backward pass (fa2_bwd), each step under its own time limit so the
# summary always prints: the backward GPU tests (every searched variant of two classes, the
# default variant of 20 classes, deterministic bit-identity), the torch.autograd example
# (gradients vs SDPA), the timing against SDPA flash and cuDNN backward, and compute-sanitizer
# memcheck on the deterministic test. Logs go to $OUT (or ./backward-round).
#
# usage: bench/backward_round.sh BIN_DIR
#   BIN_DIR holds flashtune_gpu_tests and libflashtune.so (bench/pack_for_gpu.sh) and, beside
#   them or in the checkout, flashtune_ctypes.py, flashtune_autograd.py and backward_bench.py.
#   TESTS_S, AUTOGRAD_S, BENCH_S, SANITIZE_S: the steps' limits in seconds; BENCH_ARGS: options
#   for backward_bench.py.
set -uo pipefail
BIN=$(cd "${1:?usage: backward_round.sh BIN_DIR}" && pwd)
OUT=${OUT:-$PWD/backward-round}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CACHE_DIR=$(mktemp -d)  # shared by the steps: the bench reuses the tests' cubins
PY=$BIN
[ -f "$PY/flashtune_autograd.py" ] || PY=$(cd "$(dirname "$0")/.." && pwd)/examples/python
BENCH=$BIN/backward_bench.py
[ -f "$BENCH" ] || BENCH=$(cd "$(dirname "$0")" && pwd)/backward_bench.py
step() {  # name seconds command...
  local name=$1 secs=$2
  shift 2
  local t0=$(date +%s)
  timeout -k 5 "$secs" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc $(( $(date +%s) - t0 ))s" >>"$OUT/summary.txt"
}
: >"$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
# Cheapest first, so a slow step cannot hide the others' verdicts.
step test_det "${DET_S:-25}" "$BIN/flashtune_gpu_tests" --gtest_filter='BackwardGpuDeterministic*'
step test_defaults "${DEFAULTS_S:-50}" "$BIN/flashtune_gpu_tests" --gtest_filter='BackwardGpu.Default*'
step test_space "${SPACE_S:-45}" "$BIN/flashtune_gpu_tests" --gtest_filter='BackwardGpu.Every*'
step autograd "${AUTOGRAD_S:-20}" python3 "$PY/flashtune_autograd.py" "$BIN/libflashtune.so"
step bench "${BENCH_S:-65}" python3 "$BENCH" "$BIN/libflashtune.so" ${BENCH_ARGS:-}
step sanitize "${SANITIZE_S:-20}" compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$BIN/flashtune_gpu_tests" --gtest_filter='BackwardGpuDeterministic*'
echo "== summary"; cat "$OUT/summary.txt"
for t in test_det test_defaults test_space; do
  echo "== $t"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|SKIPPED \]" "$OUT/$t.log" | head -6
  grep -cE "^\[ errors" "$OUT/$t.log"
  grep -E "^\[ errors" "$OUT/$t.log" | sort -g -k9 | tail -2
done
echo "== autograd"; tail -5 "$OUT/autograd.log"
echo "== sanitize"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/sanitize.log" | head -3
echo "== bench"; tail -22 "$OUT/bench.log"
