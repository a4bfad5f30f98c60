#!/usr/bin/env bash
# Session 40, call 9: on an H200, issue 13's forward grid (session 27's call2.sh, all three head
# dims, up to 580 s: the call's whole time); on an H100, call8.sh (decode GPU tests and
# compute-sanitizer on d64 decode).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s40/call9.sh
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/card.txt"
if grep -q H200 "$OUT/card.txt"; then
  PACK=${PACK:?} DIMS=64,128,256 OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
else
  bash bench/data/h100-2026-12-06-s40/call8.sh
fi
