#!/usr/bin/env bash
# hopper5 call 1: the issue's full grid (tune + runtime vs SDPA flash/cuDNN), then probe --ab15.
set -uo pipefail
BIN=$(cd "$1" && pwd)
mkdir -p "$OUT"
cd "$(dirname "$BIN")"
t0=$(date +%s)
OUT=$OUT STEPS=tune TUNE_S=90 REPORT_S=100 GRID_DIMS=64,128,256 GRID_DTYPES=bf16,f16 GRID_EXTRA=1 COMPARE_LINES=8 \
  bash "$BIN/round.sh" "$BIN" > "$OUT/round-stdout.txt" 2>&1
echo "grid: $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} timeout 60 "$BIN/flashtune_hopper_probe" --ab15 > "$OUT/ab15-time.log" 2>&1
echo "ab15: exit $?, $(( $(date +%s) - t1 )) s"
cat "$OUT/round-stdout.txt" | tail -n 40
sed -n '/^shape (bf16)/,$p' "$OUT/ab15-time.log" | awk -F'|' '{printf "%s|%s|%s\n", $1, substr($2,12,44), $4}'
