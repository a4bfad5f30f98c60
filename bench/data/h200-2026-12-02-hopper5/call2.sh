#!/usr/bin/env bash
# hopper5 call 2: the no-overlap one-warpgroup tiles (64x64 at four blocks per SM, 64x80 at three)
# under the float64 check and compute-sanitizer, then bf16 d64 N 512-2k tuned with the new space
# and timed through the runtime against SDPA flash / cuDNN.
set -uo pipefail
BIN=$(cd "$1" && pwd)
ROOT=$(dirname "$BIN")
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
P=$BIN/flashtune_hopper_probe
s=(); t=$(date +%s)
timeout 20 "$P" --check --only d64_bm64_bn64_wg1_s2_p0_pp0_ov0,d64_bm64_bn80_wg1_s2_p0_pp0_ov0 > "$OUT/check.log" 2>&1
s+=("check: exit $?, $(( $(date +%s) - t )) s: $(grep '^check:' "$OUT/check.log")"); t=$(date +%s)
for tool in memcheck racecheck; do
  timeout 15 compute-sanitizer --tool $tool --error-exitcode 9 "$P" --small --only d64_bm64_bn64_wg1_s2_p0_pp0_ov0 >> "$OUT/sanitizer.log" 2>&1
  s+=("$tool: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
done
DB=$(mktemp -d)/flashtune.db
timeout 25 "$BIN/flashtune" tune --db "$DB" --strategy budgeted --dtypes bf16 --head-dims 64 --seqlens-q 512,1024,2048 \
  --decode none > "$OUT/tune.log" 2>&1
s+=("tune: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
R=$(mktemp -d)
PYTHONUNBUFFERED=1 timeout 20 python3 "$ROOT/bench/perf_report.py" --lib "$BIN/libflashtune.so" --db "$DB" --out "$R" \
  --head-dims 64 --dtypes bf16 --seqlens 512,1024,2048 --no-extra > "$OUT/compare.txt" 2>&1
s+=("report: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
cp "$R"/perf_report.csv "$R"/perf_report.json "$OUT/" 2>/dev/null
grep -E '^FAIL' "$OUT/check.log" | head -5; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log"
grep -E '^\[[0-9]+/[0-9]+\].*: tuned' "$OUT/tune.log" | cut -c1-150; grep -c 'ov0' "$OUT/tune.log"
tail -n 12 "$OUT/compare.txt" | cut -c1-160
printf '%s\n' "${s[@]}"
