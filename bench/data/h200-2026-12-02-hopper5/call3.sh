#!/usr/bin/env bash
# hopper5 call 3: the d64 rows of the grid (bf16 + f16, N 512-16k, causal and not) tuned
# with the new space (no-overlap 64x64 at four blocks) and timed through the runtime against SDPA.
set -uo pipefail
BIN=$(cd "$1" && pwd)
ROOT=$(dirname "$BIN")
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
s=(); t=$(date +%s)
DB=$(mktemp -d)/flashtune.db
timeout 50 "$BIN/flashtune" tune --db "$DB" --strategy budgeted --dtypes bf16,f16 --head-dims 64 --decode none > "$OUT/tune.log" 2>&1
s+=("tune: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
R=$(mktemp -d)
PYTHONUNBUFFERED=1 timeout 30 python3 "$ROOT/bench/perf_report.py" --lib "$BIN/libflashtune.so" --db "$DB" --out "$R" \
  --head-dims 64 --dtypes bf16,f16 --no-extra > "$OUT/compare.txt" 2>&1
s+=("report: exit $?, $(( $(date +%s) - t )) s")
cp "$R"/perf_report.csv "$R"/perf_report.json "$OUT/" 2>/dev/null
grep -E '^\[[0-9]+/[0-9]+\].*: tuned' "$OUT/tune.log" | cut -c1-150
tail -n 30 "$OUT/compare.txt" | cut -c1-160
printf '%s\n' "${s[@]}"
