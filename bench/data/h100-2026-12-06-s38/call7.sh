#!/usr/bin/env bash
# Session 38, call 7: the forward side of 4789a24 (the budgeted search measures the untuned plan):
#  1. GPU tests TuneGpu.* (the real tuner on the GPU).
#  2. The d64 grid's buckets tuned cold and the d64 grid against SDPA flash and cuDNN
#     (bench/data/h200-2026-12-05-s27/call2.sh with DIMS=64, whose tune log and database show
#     the winners and the measurements spent).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s38/call7.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
mkdir -p "$OUT/t" "$OUT/g"
OUT=$OUT/t FILTER='TuneGpu.*' SUITE_S=110 JOBS=4 TEST_S=100 bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" > "$OUT/summary0.txt"
PACK=$PACK DIMS=64 OUT=$OUT/g timeout 430 bash bench/data/h200-2026-12-05-s27/call2.sh > "$OUT/grid.txt" 2>&1
echo "d64 tune + grid: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary0.txt"
cat "$OUT/summary0.txt"; tail -45 "$OUT/grid.txt"
(cd "$OUT/g" && tar xzf logs.tgz 2>/dev/null; cp fwd/fwd.db "$OUT/fwd-d64.db" 2>/dev/null; cp fwd/tune.log "$OUT/tune.log" 2>/dev/null)
bash bench/pack_out.sh "$OUT" summary0.txt tests.txt grid.txt tune.log fwd-d64.db > /dev/null
