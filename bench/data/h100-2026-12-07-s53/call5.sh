#!/usr/bin/env bash
# Session 53, call 5: call 4 cut to the device time left after five attempts got no machine (481
# s): issue 13's forward grid at head dim 128 on MAIN on whatever card comes (session 27's
# call2.sh with DIMS=128: the d128 grid's buckets and B1 H32 N8192's tuned cold, then the grid
# through that database against SDPA flash and cuDNN, 3 rotated rounds).
# usage (GPU): MAIN=.devcarry-A OUT=$OUT [LIMIT=390] bash bench/data/h100-2026-12-07-s53/call5.sh
source bench/device_call.sh 390
PACK=$(cd "${MAIN:?}" && pwd) DIMS=128 LIMIT=$(left) OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
