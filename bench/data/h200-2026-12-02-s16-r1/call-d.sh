#!/usr/bin/env bash
# Session 16, call D (run from the checkout root), on main with hdet merged: hdet's round
# (hopper_bwd det 1: GPU tests, memcheck / synccheck, det 0 vs det 1 A/B), the backward
# benchmark against SDPA (det / default on every shape), then the GPU suite and a racecheck of
# hopper_bwd on one small call, each while time is left.
# usage: OUT=... bash call.sh CARRY_DIR   (CARRY_DIR: bench/hdet_round.sh --pack build DIR)
set -uo pipefail
BIN=$(cd "$1" && pwd)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=(); t=$(date +%s)
OUT=$OUT/hdet bash "$BIN/hdet_round.sh" "$BIN" > "$OUT/hdet-stdout.txt" 2>&1
s+=("hdet: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
( export FLASHTUNE_CACHE_DIR=$(mktemp -d) FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CLI=$BIN/flashtune \
    FLASHTUNE_LIB=$BIN/libflashtune.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
  unset FLASHTUNE_DB
  timeout 45 python3 bench/backward_bench.py --dtypes bf16,f16 --reps 10 ) > "$OUT/bwd-bench.txt" 2>&1
s+=("backward bench: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
OUT=$OUT/suite SUITE_S=${SUITE_S:-60} TEST_S=55 JOBS=6 bash bench/gpu_suite.sh "$BIN" > "$OUT/suite-stdout.txt" 2>&1
s+=("suite: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
[ "${RACE_S:-15}" -gt 0 ] && FLASHTUNE_CACHE_DIR=$BIN/cache timeout ${RACE_S:-15} compute-sanitizer --tool racecheck --target-processes all --error-exitcode 9 \
  "$BIN/flashtune" bench --operation bwd --dtype bf16 --head-dim 128 --causal 1 --batch 1 --seqlen-q 128 --seqlen-k 192 \
  --heads-q 2 --heads-kv 1 --reps 20 --rounds 1 --variant hopper_bwd_bf16_d128_bn128_bm64_det0_causal > "$OUT/racecheck.log" 2>&1
s+=("racecheck hopper_bwd d128: exit $?, $(( $(date +%s) - t )) s, $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck.log" | tail -1)")
tail -n 22 "$OUT/hdet-stdout.txt"
grep -E "^(geomean|determ)" "$OUT/bwd-bench.txt"
tail -n 4 "$OUT/suite-stdout.txt"
printf '%s\n' "${s[@]}"
(cd "$OUT" && tar czf logs.tgz hdet suite && rm -rf hdet suite)
