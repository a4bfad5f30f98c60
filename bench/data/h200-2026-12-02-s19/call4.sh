#!/usr/bin/env bash
# Session 19, call 4 (right after call 3, warm): the forward buckets of the default set (d64,
# d128, d256; bf16 and fp16; causal and not; N 512-16k; the shipped strategy `auto`: d128
# exhaustive, the others budgeted), cold cubin cache, tuned with the build that won call 3's A/B
# (its name in /tmp/s19/pk) into /tmp/s19/default.db for call 5; the database comes back gzipped.
# usage (GPU, carry .devcarry-s19b .devcarry-s19c): OUT=$OUT bash bench/data/h200-2026-12-02-s19/call4.sh
set -uo pipefail
PK=${PK:-$(cat /tmp/s19/pk 2>/dev/null)}
BIN=$PWD/.devcarry-${PK:?set PK (call 3 leaves it in /tmp/s19/pk)}
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
unset FLASHTUNE_DB
mkdir -p /tmp/s19 && rm -f /tmp/s19/default.db
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
t=$(date +%s)
timeout -s INT -k 10 570 $BIN/flashtune tune --db /tmp/s19/default.db --head-dims 64,128,256 > $OUT/tune.log 2>&1
echo "forward tune ($PK): exit $?, $(( $(date +%s) - t )) s"
$BIN/flashtune db export --format csv --table winners --db /tmp/s19/default.db --output $OUT/winners.csv > /dev/null 2>&1
gzip -c /tmp/s19/default.db > $OUT/default.db.gz
tail -2 $OUT/tune.log
