#!/usr/bin/env bash
# Session 53, call 4: issue 13's forward grid on MAIN on whatever card comes (session 27's
# call2.sh: the grid's buckets of head dims 64, 128 and 256 tuned cold, `flashtune tune --head-dims
# 64,128,256 --decode none --operation fwd`, and B1 H32 N8192 d128's own bucket; then the grid
# through that database against SDPA flash and cuDNN, 3 rotated rounds). Calls 2 and 3 (the whole
# default tune cold, then the grid through it) need more device time than was left after two
# attempts got no machine; this one call gives the grid and the forward classes' cold tune time.
# usage (GPU): MAIN=.devcarry-A OUT=$OUT [LIMIT=585] bash bench/data/h100-2026-12-07-s53/call4.sh
source bench/device_call.sh 585
PACK=$(cd "${MAIN:?}" && pwd) DIMS=64,128,256 LIMIT=$(left) OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
