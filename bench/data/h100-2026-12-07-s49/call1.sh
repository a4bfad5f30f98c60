#!/usr/bin/env bash
# Session 49, call 1. On an H200: issue 13's forward grid on main (session 27's call2.sh, head
# dims 64, 128 and 256, tuned cold, within LIMIT). On an H100: session 48's prepared call 6 (d64's
# four-warpgroup tile with four stages and not persistent; the untuned rule on packed sequences).
# MAIN: main's build; PACKED: main + bench/data/h100-2026-12-07-s48/packed-d64-four.patch (the
# patch, rebased onto b6bf092: ProblemTile's d64 test without `layout == kDense`).
# usage (GPU): MAIN=.devcarry-M PACKED=.devcarry-P OUT=$OUT bash bench/data/h100-2026-12-07-s49/call1.sh
set -uo pipefail
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=${MAIN:?} DIMS=64,128,256 LIMIT=${LIMIT:-585} OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
else
  MAIN=${MAIN:?} PACKED=${PACKED:?} OUT=$OUT bash bench/data/h100-2026-12-07-s48/call6.sh
fi
