#!/usr/bin/env bash
# Session 19, call 4: the shipped default tune, cold (fresh database, cubin cache and process):
# `flashtune tune` with no arguments but --db, on the build chosen after call 3 (PK: the
# .devcarry-PK folder; p2 searched in place of p1 wherever it fits). The database stays on the
# machine (/tmp/s19) for call 5 and comes back gzipped.
# usage (GPU, carry .devcarry-$PK): PK=s19c OUT=$OUT bash bench/data/h200-2026-12-02-s19/call4.sh
set -uo pipefail
BIN=$PWD/.devcarry-${PK:?set PK}
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
unset FLASHTUNE_DB
rm -rf /tmp/s19 && mkdir -p /tmp/s19
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
t=$(date +%s)
timeout -s INT -k 10 ${TUNE_S:-570} "$BIN/flashtune" tune --db /tmp/s19/default.db > "$OUT/tune.log" 2>&1
echo "default tune: exit $?, $(( $(date +%s) - t )) s"
"$BIN/flashtune" db export --format csv --table winners --db /tmp/s19/default.db --output "$OUT/winners.csv" > /dev/null 2>&1
echo "winners: $(( $(wc -l < "$OUT/winners.csv") - 1 ))"
gzip -c /tmp/s19/default.db > "$OUT/default.db.gz"; ls -la /tmp/s19/default.db "$OUT/default.db.gz"
tail -n 8 "$OUT/tune.log"
