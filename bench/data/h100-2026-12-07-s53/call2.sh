#!/usr/bin/env bash
# Session 53, call 2. On an H200: issue 13's forward grid on MAIN (head dims 64, 128, 256). On an
# H100: the default tune from a cold start (`flashtune tune`: an empty database and cubin cache,
# the CLI's defaults; issue 13 asks for at most 10 minutes; last measured in session 36, 502 s on
# an H100, before the spaces grew: d64's four-warpgroup tile, the padded head dims, paged tiles),
# within what is left. Session 51's call3.sh without its memcheck, which would leave the tune too
# little time.
# usage (GPU): MAIN=.devcarry-A OUT=$OUT [LIMIT=590] bash bench/data/h100-2026-12-07-s53/call2.sh
source bench/device_call.sh 590
N=$(cd "${MAIN:?}" && pwd)
h200_grid "$N" 64,128,256
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=$(mktemp -d) FLASHTUNE_WORKER=$N/flashtune
D=/tmp/s53-default.db; rm -f $D*
$N/flashtune tune --db $D --dry-run 2>&1 | tail -1 | tee -a "$OUT/summary.txt"
s=$(date +%s)
timeout $(( $(left) - 12 )) $N/flashtune tune --db $D > "$OUT/tune.log" 2>&1
echo "default tune: exit $? in $(( $(date +%s) - s )) s; $(grep -E 'problem\(s\).*measurements' "$OUT/tune.log" | tail -1)" | tee -a "$OUT/summary.txt"
$N/flashtune db export --db $D --format csv --table winners --output "$OUT/winners.csv" > /dev/null 2>&1
cp $D "$OUT/default.db"
gzip -f "$OUT/tune.log"
cat "$OUT/gpu.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt winners.csv tune.log.gz default.db > /dev/null
