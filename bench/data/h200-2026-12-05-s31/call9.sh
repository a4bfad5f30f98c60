#!/usr/bin/env bash
# Session 31, call 9 (prepared, not run): persistent causal rounds rotated by a block
# (templates/hopper_fwd.cuh's FT_HOPPER_CAUSAL_ROTATE knob, off in the shipped build). With the
# split tail, each row's first pair (query blocks m-1 and 0) costs less than the others; where a
# row's (m + 1) / 2 pairs divide the grid's 132 blocks (d64 192-row tiles at N 1k: 3 pairs),
# those cheap pairs all fall to every third block, as N 1k's short tiles did before the
# non-causal rounds were rotated (docs/perf-notes.md, "a row's last tile"). (1) hopper_probe
# --check with the knob on, on the persistent causal tiles of d64 / d128; (2) `--ab31`: knob on
# against off, interleaved (d64 192x128 p2 causal N 1k / 2k / 4k, d128 128x128 p2 causal N 1k /
# 2k as controls). Ship (default 1) if N 1k / 4k gain and the controls hold.
# usage (GPU): PACK=.devcarry-NAME (with flashtune_hopper_probe) OUT=$OUT bash bench/data/h200-2026-12-05-s31/call9.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe
timeout 150 $P/flashtune_hopper_probe --check --define FT_HOPPER_CAUSAL_ROTATE=1 \
  --only d64_bm192_bn128_wg3_s2_p1_pp1_ov1_causal,d128_bm128_bn176_wg2_s2_p1_pp1_ov1_causal,d64_bm64_bn128_wg1_s2_p1 > "$OUT/check.log" 2>&1
echo "check (rotated): exit $? at $(( $(date +%s) - t0 )) s; $(grep -h '^check:' "$OUT/check.log" | tail -1)" >> "$OUT/summary.txt"
timeout $(( 570 - ($(date +%s) - t0) )) $P/flashtune_hopper_probe --ab31 > "$OUT/ab31.txt" 2>&1
echo "ab31: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"; tail -30 "$OUT/ab31.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt check.log ab31.txt > /dev/null
