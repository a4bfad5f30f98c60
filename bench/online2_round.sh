#!/usr/bin/env bash
# Issue 17's closing round on one H200. usage: OUT=DIR bench/online2_round.sh BIN_DIR
# (BIN_DIR holds the flashtune CLI built here; its GPU worker is the same binary).
#  1. default  `flashtune tune` of the whole default set (forward, GQA-8, decode and backward
#              buckets; strategy auto) into a fresh database, from a fresh cubin cache, in a fresh
#              process: timed; every progress line stamped with the wall clock (per-class times).
#  2. record   on the same database, `--strategy exhaustive --top-k 1` over the grid shapes of
#              $RECORD_SET (a problem-set file; default: bf16 d64 causal, bf16 d128, bf16 d64
#              full, in that order) until $END_S seconds after the start: the exhaustive search
#              resumes from the default tune's trials, so it measures only what that skipped and
#              every candidate of those shapes ends up with a recorded time.
#  3. export   trials and winners (`flashtune db export`), for replaying strategies on the CPU.
# DB=PATH keeps the database there (default: a fresh temporary file), so that a later call can
# resume the recording (carry it back); SKIP_DEFAULT=1 skips step 1 (a resumed database).
# bench/issue17-record.problems lists the grid shapes not yet recorded (session 16).
set -uo pipefail
BIN=$(cd "$1" && pwd)
OUT=${OUT:-/tmp/online2-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune
FLASHTUNE_CACHE_DIR=$(mktemp -d)
export FLASHTUNE_CACHE_DIR
FT=$BIN/flashtune
T0=$(date +%s)
now() { python3 -c "import time; print(round(time.time() - $T0, 1))"; }
# Prefixes each line with seconds since the start.
stamp() { python3 -u -c "
import sys, time
for line in sys.stdin: print('%.2f %s' % (time.time() - $T0, line), end='', flush=True)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
DB=${DB:-$(mktemp -d)/default.db}
: > "$OUT/summary.txt"
if [ "${SKIP_DEFAULT:-0}" != 1 ]; then
  {
    echo "default tune: start $(now) s"
    timeout "${TUNE_S:-360}" "$FT" tune --db "$DB" 2>&1 | stamp > "$OUT/default-tune.log"
    echo "default tune: rc ${PIPESTATUS[0]} end $(now) s"
  } | tee "$OUT/summary.txt"
fi
"$FT" db export --db "$DB" --table winners --format csv > "$OUT/default-winners.csv" 2>>"$OUT/summary.txt"
SET=${RECORD_SET:-$BIN/record.problems}
LEFT=$(( ${END_S:-470} - ($(date +%s) - T0) ))
if [ "$LEFT" -gt 20 ]; then
  {
    echo "record: start $(now) s, budget $((LEFT - 10)) s"
    timeout "$LEFT" "$FT" tune --db "$DB" --problem-set "$SET" --strategy exhaustive --top-k 1 \
      --budget-total "$((LEFT - 10))s" 2>&1 | stamp > "$OUT/record-tune.log"
    echo "record: rc ${PIPESTATUS[0]} end $(now) s"
  } | tee -a "$OUT/summary.txt"
fi
"$FT" db export --db "$DB" --format csv > "$OUT/trials.csv" 2>>"$OUT/summary.txt"
[ -f "$OUT/default-tune.log" ] && grep -v "^[0-9.]*   " "$OUT/default-tune.log" | tail -n 8
cat "$OUT/summary.txt"
echo "total $(now) s"
