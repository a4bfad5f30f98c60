#!/usr/bin/env bash
# Session 56, call 2, chained after session 55's call1.sh on the same machine. On an H200 (where
# call1.sh ran issue 13's forward grid): issue 14's decode table tuned (session 38's call6.sh:
# decode buckets, bf16 d128, budgeted, then bench/decode_bench.py against SDPA flash and cuDNN
# with the streaming-read bandwidth). On an H100 (where call1.sh ran the backward checks): the
# default tune from a cold start (session 53's call2.sh: issue 13 asks for at most 10 minutes).
# usage (GPU): MAIN=.devcarry-B OUT=$OUT [LIMIT=590] bash bench/data/2026-12-08-s56/call2.sh
source bench/device_call.sh 590
N=$(cd "${MAIN:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$N OUT=$OUT bash bench/data/h100-2026-12-06-s38/call6.sh
else
  MAIN=$N LIMIT=$(left) OUT=$OUT bash bench/data/h100-2026-12-07-s53/call2.sh
fi
