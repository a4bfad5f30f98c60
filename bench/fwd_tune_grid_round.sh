#!/usr/bin/env bash
# The forward's headline figures in two device calls on one H200, with the build in BIN_DIR
# (bench/pack_for_gpu.sh's folder): step `tune` runs the shipped default tune cold (fresh
# database and cubin cache: `flashtune tune --db DB`, the whole default set, forward, decode and
# backward buckets) and keeps the database at $DB on the machine; step `grid` runs issue 13's
# grid through it (bench/perf_report.py, queued timing, against SDPA flash and cuDNN in the same
# run), plus the GPU tests that cover hopper_fwd's switches and varlen classes.
# Why both, with one build: a database's winners are used only with the template that tuned them
# (the runtime falls back to `nearest` / `heuristic` plans otherwise), so a grid measured with a
# database from another build does not measure a tuned result (docs/perf-notes.md, session 19).
# usage: STEP=tune OUT=DIR bash bench/fwd_tune_grid_round.sh BIN_DIR   (about 450 s)
#        STEP=grid OUT=DIR bash bench/fwd_tune_grid_round.sh BIN_DIR   (about 200 s; the same
#        machine, warm, or with $BIN_DIR/default.db.gz from the tune step carried in)
#        ROUNDS: perf_report.py's rotated rounds per shape (default 1 here: three take about 3x
#        the timing, past the step's 170 s)
set -uo pipefail
BIN=$(cd "${1:?usage: fwd_tune_grid_round.sh BIN_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:?set OUT to the folder for the logs}
DB=${DB:-/tmp/ft-round/default.db}
mkdir -p "$OUT" "$(dirname "$DB")"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
unset FLASHTUNE_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
case "${STEP:?set STEP to tune or grid}" in
  tune)
    rm -f "$DB"
    t=$(date +%s)
    timeout -s INT -k 10 570 "$BIN/flashtune" tune --db "$DB" > "$OUT/tune.log" 2>&1
    echo "default tune: exit $?, $(( $(date +%s) - t )) s"
    "$BIN/flashtune" db export --format csv --table winners --db "$DB" --output "$OUT/winners.csv" > /dev/null 2>&1
    gzip -c "$DB" > "$OUT/default.db.gz"
    tail -n 2 "$OUT/tune.log"
    ;;
  grid)
    if [ ! -f "$DB" ]; then gunzip -c "$BIN/default.db.gz" > "$DB" || exit 1; echo "database from the carried copy"; fi
    timeout -k 1 170 "$BIN/flashtune_gpu_tests" \
      --gtest_filter='ForwardGpu.HopperSwitchesOffMatchTheReference:VarlenGpu/VarlenClasses.*' > "$OUT/tests.log" 2>&1
    echo "GPU tests: exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.log" | tr '\n' ' ')"
    PYTHONUNBUFFERED=1 timeout 170 python3 "$ROOT/bench/perf_report.py" --lib "$BIN/libflashtune.so" --db "$DB" \
      --out "$OUT" --time-limit-s 140 --rounds "${ROUNDS:-1}" > "$OUT/grid.txt" 2>&1  # one pass fits 170 s
    echo "forward grid: exit $?"
    grep -c ',exact.\?$' "$OUT/perf_report.csv" | sed 's/^/plans from exact winners: /'
    grep -E '^d[0-9]+ +x flash|output check' "$OUT/grid.txt"
    ;;
  *) echo "STEP must be tune or grid, not '$STEP'" >&2; exit 2 ;;
esac
