#!/usr/bin/env bash
# Round 2: decode GPU tests, bench (heuristic plans), a budgeted tune of 5 decode buckets, bench with that database.
set -uo pipefail
C=$(cd "$(dirname "$0")" && pwd)
export OUT=${OUT:-$C/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CLI=$C/flashtune
STEPS="tests sanitize bench" SANITIZE_S=60 TEST_FILTER='DecodeGpu*' TESTS_S=50 BENCH_S=60 bash "$C/bench/decode_round.sh" "$C" > "$OUT/round3-heuristic.txt" 2>&1
cp "$OUT/decode_bench.log" "$OUT/decode_bench_heuristic.log"
s=$(date +%s)
timeout 90 "$C/flashtune" tune --db /tmp/decode.db --problem-set "$C/decode_set.txt" --strategy budgeted --budget-per-problem 8 > "$OUT/decode_tune.log" 2>&1
echo "tune: exit $? in $(( $(date +%s) - s )) s" >> "$OUT/round3-heuristic.txt"
STEPS="bench" BENCH_S=60 BENCH_ARGS="--db /tmp/decode.db" bash "$C/bench/decode_round.sh" "$C" > /tmp/round3-tuned.txt 2>&1
tail -25 "$OUT/decode_tune.log"
echo "=== heuristic"; grep -E "^B|streaming|gpu tests|exit" "$OUT/round3-heuristic.txt"
echo "=== tuned"; grep -E "^B|streaming|exit" /tmp/round3-tuned.txt
