#!/usr/bin/env bash
# Session 52, call 4 (what the budget left). paged-four.patch on FOUR: synccheck and racecheck of
# the bf16 d64 causal cache-prefill class (every searched variant, the 256x64 four-warpgroup
# tile over pages among them; call 1 ran its memcheck), then the paged prefill problem set
# (examples/problem_sets/paged-prefill.problems) at head dim 64 tuned: which tile the search picks.
# usage (GPU): FOUR=.devcarry-W OUT=$OUT [LIMIT=200] bash bench/data/h100-2026-12-07-s52/call4.sh
source bench/device_call.sh 200
W=$(cd "${FOUR:?}" && pwd)
card_line
export LD_LIBRARY_PATH=$W:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-four FLASHTUNE_WORKER=$W/flashtune
for tool in synccheck racecheck; do
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 $W/flashtune_gpu_tests \
    --gtest_filter='*CachePrefillClasses.VariantsMatchTheReference/1' > "$OUT/$tool.txt" 2>&1
  echo "$tool: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) |ERROR SUMMARY|HAZARD' "$OUT/$tool.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done
sed 's/head_dim=128/head_dim=64/' examples/problem_sets/paged-prefill.problems > "$OUT/paged-d64.problems"
timeout $(( $(left) - 5 )) $W/flashtune tune --db "$OUT/paged.db" --problem-set "$OUT/paged-d64.problems" \
  > "$OUT/tune.txt" 2>&1
echo "tune: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
$W/flashtune db list --db "$OUT/paged.db" 2>&1 | tee "$OUT/winners.txt" | tee -a "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
