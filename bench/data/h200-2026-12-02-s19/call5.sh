#!/usr/bin/env bash
# Session 19, call 5 (right after call 3, warm): issue 13's forward grid through call 3's database
# (bench/perf_report.py, queued timing: d64 / d128 / d256, bf16 and fp16, causal and not, B·N 16k
# hidden 2048, and B1 H32 N8192 d128) against SDPA flash and cuDNN in the same run.
# usage (GPU, carry .devcarry-$PK, and default.db.gz in it if the machine is not warm):
#   PK=s19c OUT=$OUT bash bench/data/h200-2026-12-02-s19/call5.sh
set -uo pipefail
PK=${PK:-$(cat /tmp/s19/pk 2>/dev/null)}
BIN=$PWD/.devcarry-${PK:?set PK (call 3 leaves it in /tmp/s19/pk)}
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DB=/tmp/s19/default.db
if [ ! -f $DB ]; then mkdir -p /tmp/s19 && gunzip -c $BIN/default.db.gz > $DB || exit 1; echo "database from the carried copy"; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
PYTHONUNBUFFERED=1 timeout 170 python3 bench/perf_report.py --lib $BIN/libflashtune.so --db $DB --out $OUT \
  --time-limit-s 140 > $OUT/grid.txt 2>&1
echo "forward grid: exit $? [$(el) s]"
grep -E '^d[0-9]+ +x flash|output check' $OUT/grid.txt
