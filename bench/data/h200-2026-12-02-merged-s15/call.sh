#!/usr/bin/env bash
# Session 15's closing call on merged main: the whole GPU suite (6 tests at a time), the decode
# tuning check (bench/decode_tune_check.sh: tuned against untuned decode), then issue 13's grid (budgeted tune of the grid's classes, then the runtime against SDPA flash and cuDNN).
# usage: OUT=... TUNE_S=150 REPORT_S=100 bash call.sh CARRY_DIR   (CARRY_DIR from
#        `bench/decode_tune_check.sh --pack build CARRY_DIR`, plus bench/gpu_suite.sh,
#        bench/hopper_round.sh as round.sh and bench/sdpa_cudnn_calls.py)
set -uo pipefail
BIN=$(cd "$1" && pwd)
mkdir -p "$OUT"
t0=$(date +%s)
OUT=$OUT SUITE_S=150 TEST_S=140 JOBS=6 bash "$BIN/gpu_suite.sh" "$BIN" > "$OUT/suite-stdout.txt" 2>&1
echo "suite: exit $?, $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
OUT=$OUT/decode bash "$BIN/bench/decode_tune_check.sh" "$BIN" > "$OUT/decode-stdout.txt" 2>&1
echo "decode check: exit $?, $(( $(date +%s) - t1 )) s"
t1=$(date +%s)
cd "$(dirname "$BIN")"
OUT=$OUT STEPS=tune TUNE_S=${TUNE_S:-150} REPORT_S=${REPORT_S:-100} GRID_DIMS=64,128,256 GRID_DTYPES=bf16,f16 GRID_EXTRA=1 \
  COMPARE_LINES=8 bash "$BIN/round.sh" "$BIN" > "$OUT/round-stdout.txt" 2>&1
echo "grid: exit $?, $(( $(date +%s) - t1 )) s"
tail -n 6 "$OUT/suite-stdout.txt"
tail -n 24 "$OUT/decode-stdout.txt"
tail -n 40 "$OUT/round-stdout.txt"
