#!/usr/bin/env bash
# Session 18, call 3: the shipped default tune, cold (fresh database, cubin cache and process):
# `flashtune tune` with no arguments but --db, on main after session 18's changes (hopper_bwd's
# dispatch groups are not searched; session 17's budgeted-follower fix and dqw {0, 1} are in).
# The database stays on the machine (/tmp/s18) for call 4 and comes back gzipped.
# usage (GPU, carry .devcarry-s18c = bench/pack_for_gpu.sh build .devcarry-s18c): OUT=$OUT bash bench/data/h200-2026-12-02-s18/call3.sh
set -uo pipefail
BIN=$PWD/.devcarry-s18c
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
unset FLASHTUNE_DB
rm -rf /tmp/s18 && mkdir -p /tmp/s18
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
t=$(date +%s)
timeout -s INT -k 10 ${TUNE_S:-560} "$BIN/flashtune" tune --db /tmp/s18/default.db > "$OUT/tune.log" 2>&1
echo "default tune: exit $?, $(( $(date +%s) - t )) s"
"$BIN/flashtune" db export --format csv --table winners --db /tmp/s18/default.db --output "$OUT/winners.csv" > /dev/null 2>&1
echo "winners: $(( $(wc -l < "$OUT/winners.csv") - 1 ))"
gzip -c /tmp/s18/default.db > "$OUT/default.db.gz"; ls -la /tmp/s18/default.db "$OUT/default.db.gz"
tail -n 8 "$OUT/tune.log"
