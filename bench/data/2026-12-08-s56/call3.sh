#!/usr/bin/env bash
# Session 56, call 3, on either card: the default tune from a cold start (`flashtune tune`: an
# empty database and cubin cache, the CLI's defaults), issue 13's "at most 10 minutes cold on one
# H200". Session 53's call2.sh without its H200 branch (which runs the grid instead).
# usage (GPU): MAIN=.devcarry-B OUT=$OUT [LIMIT=595] bash bench/data/2026-12-08-s56/call3.sh
source bench/device_call.sh 595
N=$(cd "${MAIN:?}" && pwd)
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=$(mktemp -d) FLASHTUNE_WORKER=$N/flashtune
D=/tmp/s56-default.db; rm -f $D*
$N/flashtune tune --db $D --dry-run 2>&1 | tail -1 | tee -a "$OUT/summary.txt"
s=$(date +%s)
timeout $(( $(left) - 10 )) $N/flashtune tune --db $D > "$OUT/tune.log" 2>&1
echo "default tune: exit $? in $(( $(date +%s) - s )) s; $(grep -E 'problem\(s\).*measurements' "$OUT/tune.log" | tail -1)" | tee -a "$OUT/summary.txt"
$N/flashtune db export --db $D --format csv --table winners --output "$OUT/winners.csv" > /dev/null 2>&1
cp $D "$OUT/default.db"
gzip -f "$OUT/tune.log"
cat "$OUT/gpu.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt winners.csv tune.log.gz default.db > /dev/null
