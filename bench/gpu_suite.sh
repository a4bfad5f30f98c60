#!/usr/bin/env bash
# The whole GPU test suite on the GPU machine, each test in a process of its own as ctest runs
# it (a test that faults on purpose poisons its process's CUDA context; the tuner's GPU worker
# must start from a process that has not initialised CUDA). Logs to $OUT/gpu_suite.log; a
# one-line-per-failure table last.
# usage: bench/gpu_suite.sh BIN_DIR   (BIN_DIR from bench/pack_for_gpu.sh)
#   SUITE_S: the whole suite's time limit (default 300); TEST_S: one test's (default 120);
#   FILTER: a gtest filter over the tests to run (default all); JOBS: tests run at once (default 1).
set -uo pipefail
BIN=$(cd "${1:?usage: gpu_suite.sh BIN_DIR}" && pwd)
OUT=${OUT:-./gpu-suite}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CLI=$BIN/flashtune FLASHTUNE_WORKER=$BIN/flashtune
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
LOG=$OUT/gpu_suite.log
deadline=$(( $(date +%s) + ${SUITE_S:-300} ))
# gtest's listing: suite lines end in '.', test lines are indented; drop parameter comments.
mapfile -t tests < <("$BIN/flashtune_gpu_tests" --gtest_list_tests --gtest_filter="${FILTER:-*}" |
  awk '/^[^ ]/ {suite=$1; next} {print suite $1}')
# One test: its output to $RUNS/<index>.log, its exit code (or "notrun") to $RUNS/<index>.rc.
run_one() {
  local i=$1 t=$2 left limit rc
  left=$(( deadline - $(date +%s) ))
  if (( left <= 5 )); then echo notrun > "$RUNS/$i.rc"; return; fi
  limit=$(( left < TEST_S ? left : TEST_S ))
  timeout "$limit" "$BIN/flashtune_gpu_tests" --gtest_filter="$t" > "$RUNS/$i.log" 2>&1
  rc=$?
  (( rc == 124 )) && echo "[ timed out after $limit s ] $t" >> "$RUNS/$i.log"
  echo "$rc" > "$RUNS/$i.rc"
}
export -f run_one
export BIN deadline TEST_S=${TEST_S:-120} RUNS=$(mktemp -d)
# JOBS tests at a time share the GPU: they check results, not speed (NVRTC compiles dominate).
for i in "${!tests[@]}"; do echo "$i ${tests[$i]}"; done | xargs -P "${JOBS:-1}" -n 2 bash -c 'run_one "$0" "$1"'
pass=0 fail=0 skip=0 timeout=0 notrun=0 failed=()
for i in "${!tests[@]}"; do
  t=${tests[$i]} rc=$(cat "$RUNS/$i.rc" 2>/dev/null || echo notrun)
  [ -f "$RUNS/$i.log" ] && cat "$RUNS/$i.log" >> "$LOG"
  if [ "$rc" = notrun ]; then notrun=$((notrun + 1))
  elif (( rc == 124 )); then timeout=$((timeout + 1)); failed+=("$t (timed out)")
  elif (( rc != 0 )); then fail=$((fail + 1)); failed+=("$t (exit $rc)")
  elif grep -q '^\[  SKIPPED \] 1 test' "$RUNS/$i.log"; then skip=$((skip + 1))
  else pass=$((pass + 1)); fi
done
echo "GPU suite: ${#tests[@]} tests: $pass passed, $fail failed, $timeout timed out, $skip skipped, $notrun not run (time limit)"
for f in "${failed[@]}"; do echo "  FAILED $f"; done
(( fail == 0 && timeout == 0 && notrun == 0 ))
