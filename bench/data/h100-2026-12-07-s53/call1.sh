#!/usr/bin/env bash
# Session 53, call 1. On an H200: issue 13's forward grid at head dims 64, 128 and 256 on MAIN
# (tuned cold, then against SDPA flash and cuDNN; session 27's call2.sh, about 9 minutes). On an
# H100: session 52's prepared call 6 (the forward sweeps in one process) in the time given.
# usage (GPU): MAIN=.devcarry-A OUT=$OUT [LIMIT=580] bash bench/data/h100-2026-12-07-s53/call1.sh
source bench/device_call.sh 580
h200_grid "${MAIN:?}" 64,128,256
MAIN=$MAIN OUT=$OUT LIMIT=$(left) bash bench/data/h100-2026-12-07-s52/call6.sh
