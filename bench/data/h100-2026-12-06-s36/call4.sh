#!/usr/bin/env bash
# Session 36, call 4: the default tune's time from a cold start on this build (issue 13 asks for
# at most 10 minutes on one GPU; last measured in session 18: 443 s on an H200), `flashtune
# tune` with an empty database and an empty cubin cache, the CLI's defaults (strategy auto);
# then examples/problem_sets/paged-prefill.problems tuned into its own database, timed, as
# the cost of adding those buckets to the default set.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s36/call4.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=$(mktemp -d) FLASHTUNE_WORKER=$P/flashtune
D=/tmp/s36-default.db; rm -f $D*
$P/flashtune tune --db $D --dry-run 2>&1 | tail -1 >> "$OUT/summary.txt"
s=$(date +%s)
timeout 540 $P/flashtune tune --db $D > "$OUT/tune.log" 2>&1
echo "default tune: exit $? in $(( $(date +%s) - s )) s; $(grep -E 'problem\(s\).*measurements' "$OUT/tune.log" | tail -1)" >> "$OUT/summary.txt"
s=$(date +%s)
timeout 45 $P/flashtune tune --db /tmp/s36-paged.db --problem-set examples/problem_sets/paged-prefill.problems \
  > "$OUT/tune-paged.log" 2>&1
echo "paged prefill tune: exit $? in $(( $(date +%s) - s )) s; $(tail -1 "$OUT/tune-paged.log")" >> "$OUT/summary.txt"
$P/flashtune db list --db /tmp/s36-paged.db >> "$OUT/summary.txt" 2>&1
$P/flashtune db export --db $D --format csv --table winners --output "$OUT/winners.csv" > /dev/null 2>&1
cp $D "$OUT/default.db" 2>/dev/null
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" summary.txt tune.log tune-paged.log winners.csv gpu.txt > /dev/null
