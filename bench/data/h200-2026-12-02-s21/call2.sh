#!/usr/bin/env bash
# Session 21, call 2: the probe's second round (bench/decode_load_probe.cu, no argument): the
# cp.async ring of call 1 with the blocks ordered head first, with a fixed or jittered spin per
# step standing in for decode_fwd's arithmetic, and a block per sequence reading all heads' rows.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-02-s21/call2.sh
set -uo pipefail
timeout 200 .devcarry-s21probe/decode_load_probe > $OUT/probe2.log 2>&1; echo "probe: exit $?"
cat $OUT/probe2.log
