#!/usr/bin/env bash
# Session 16, first call: hopper6's round (SPLIT_S / DESC_ADD), the decode tuning check with
# decode6's space, and compute-sanitizer on the decode kernels (trigger moved in decode4) and
# on the backward's deferred staged dQ adds (backward3 removed a barrier).
# usage: OUT=... bash call.sh CARRY_DIR  (CARRY_DIR from `bench/decode_tune_check.sh --pack build
#        CARRY_DIR` plus build/bench/flashtune_hopper_probe, bench/hopper6_round.sh and this file)
set -uo pipefail
BIN=$(cd "$1" && pwd)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=()
t=$(date +%s)
OUT=$OUT/hopper6 bash "$BIN/hopper6_round.sh" "$BIN" > "$OUT/hopper6-stdout.txt" 2>&1
s+=("hopper6: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
san() {  # name secs tool filter
  local name=$1 secs=$2 tool=$3 filter=$4 t0=$(date +%s)
  FLASHTUNE_CACHE_DIR=/tmp/ft-san timeout "$secs" compute-sanitizer --tool "$tool" --error-exitcode 9 \
    "$BIN/flashtune_gpu_tests" --gtest_filter="$filter" > "$OUT/san-$name.log" 2>&1
  s+=("sanitizer $name: exit $?, $(( $(date +%s) - t0 )) s, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san-$name.log" | tail -1)")
}
san bwd-racecheck 80 racecheck 'BackwardGpuDeterministic.*'
san bwd-synccheck 60 synccheck 'BackwardGpuDeterministic.*'
san dec-memcheck 40 memcheck 'VarlenGpu/VarlenDecodeClasses.DecodeVariantsMatchTheReference/3'
san dec-racecheck 40 racecheck 'VarlenGpu/VarlenDecodeClasses.DecodeVariantsMatchTheReference/3'
t=$(date +%s)
OUT=$OUT/decode bash "$BIN/bench/decode_tune_check.sh" "$BIN" > "$OUT/decode-stdout.txt" 2>&1
s+=("decode check: exit $?, $(( $(date +%s) - t )) s")
tail -n 30 "$OUT/hopper6-stdout.txt"
tail -n 24 "$OUT/decode-stdout.txt"
printf '%s\n' "${s[@]}"
