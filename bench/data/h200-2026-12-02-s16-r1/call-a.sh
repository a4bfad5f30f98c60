#!/usr/bin/env bash
# Session 16, call A: the shipped default tune, cold (fresh database, cubin cache and process),
# one H200: `flashtune tune` with no arguments but --db. Its winners feed call B's grid.
# usage: OUT=... bash call.sh CARRY_DIR   (CARRY_DIR from bench/pack_for_gpu.sh build CARRY_DIR)
set -uo pipefail
BIN=$(cd "$1" && pwd)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
unset FLASHTUNE_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
t=$(date +%s)
timeout -s INT -k 10 ${TUNE_S:-575} "$BIN/flashtune" tune --db "$OUT/default.db" > "$OUT/tune.log" 2>&1
echo "default tune: exit $?, $(( $(date +%s) - t )) s"
"$BIN/flashtune" db export --format csv --table winners --db "$OUT/default.db" --output "$OUT/winners.csv" > /dev/null 2>&1
echo "winners: $(( $(wc -l < "$OUT/winners.csv") - 1 ))"
tail -n 8 "$OUT/tune.log"
