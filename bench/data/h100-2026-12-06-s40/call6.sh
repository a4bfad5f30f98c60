#!/usr/bin/env bash
# Session 40, call 6: on an H200, issue 13's forward grid (session 27's call2.sh, all three head
# dims, ~414 s; NEW's build: hopper_fwd as since session 34); on an H100, call5.sh (the d64
# short-stream A/B).
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s40/call6.sh
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/card.txt"
if grep -q H200 "$OUT/card.txt"; then
  PACK=${NEW:?} DIMS=64,128,256 OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  cat "$OUT/card.txt" "$OUT/summary.txt"; tail -45 "$OUT/fwd/perf_report.txt"
else
  bash bench/data/h100-2026-12-06-s40/call5.sh
fi
