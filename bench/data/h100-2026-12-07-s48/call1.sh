#!/usr/bin/env bash
# Session 48, call 1. On an H200: issue 13's forward grid (session 27's call2.sh, head dims 64,
# 128 and 256, tuned cold) on MAIN. On an H100: session 47's prepared call 3 (the four-warpgroup
# tiles against 192x128 p2 at d64's short shapes, then their GPU test), FAST.
# usage (GPU): MAIN=.devcarry-R WG4=.devcarry-W OUT=$OUT [LIMIT=570] bash bench/data/h100-2026-12-07-s48/call1.sh
set -uo pipefail
M=$(cd "${MAIN:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$M DIMS=64,128,256 LIMIT=${LIMIT:-570} OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
else
  FAST=1 MAIN=$MAIN WG4=${WG4:?} LIMIT=${LIMIT:-570} OUT=$OUT bash bench/data/h100-2026-12-07-s47/call3.sh
fi
