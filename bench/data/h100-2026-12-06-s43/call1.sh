#!/usr/bin/env bash
# Session 43, call 1: on an H200, issue 13's forward grid (session 27's call2.sh, head dims 64,
# 128 and 256, tuned cold, about 9 minutes); on an H100, session 42's prepared call 8 (hopper_fwd's
# untuned rule on packed sequences and in f16, about 250 s).
# PACK: main's build (bash bench/pack_for_gpu.sh build .devcarry-NAME).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s43/call1.sh
set -uo pipefail
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$P DIMS=64,128,256 OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
else
  PACK=$P OUT=$OUT bash bench/data/h100-2026-12-06-s42/call8.sh
fi
