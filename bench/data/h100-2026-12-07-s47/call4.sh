#!/usr/bin/env bash
# Session 47, call 4 (prepared, not run: the session's device time ran out). Does the split tail
# cost the tiles that have it? Call 2 found it 2-5% slower where d96's 192x64 over three
# warpgroups gained it, and alone it bought nothing when it came in (session 31's call 3: d64
# 192x128 p2 N 1k 1.007, causal 0.997 / 0.995; the gain since then is the rotation's). A/B of
# MAIN against NOSPLIT (main + no-split-tail.patch: HopperSplitTail off, so no split code and no
# merge buffer), bench/forward_tile_ab.sh (two passes, `flashtune bench --rounds 5`, checked
# against the reference first), on the searched tiles whose last tile splits at the grid's shapes
# (N % 192 in 1..64: N 1k, 4k, 16k): d64 192x128 wg3 p2 (the grid's tile) full and causal, bf16
# and f16, and d128 192x80 wg3 p1 (split with one Q buffer). ~3 min.
# SASS (CUDA 13.0, `flashtune compile --arch sm_90a`, cuobjdump), main / NOSPLIT: d64 full 3232 /
# 2360 instructions, 36 / 24 HGMMA (the split tile's loop is a copy of its own), 128 registers
# both; d64 causal 3976 / 3016, NOSPLIT spilling 8 bytes; d128 192x80 p1 3192 / 2240, NOSPLIT
# spilling 8 bytes. So NOSPLIT is not free of its own cost: read its rows with that in mind.
# usage (GPU): MAIN=.devcarry-R NOSPLIT=.devcarry-N OUT=$OUT bash bench/data/h100-2026-12-07-s47/call4.sh
set -uo pipefail
M=$(cd "${MAIN:?}" && pwd) N=$(cd "${NOSPLIT:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
d64() { echo "hopper_fwd_$1_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_$2"; }
d128=hopper_fwd_bf16_d128_bm192_bn80_wg3_s2_p1_pp1_ov1_full
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s47c4 bash bench/forward_tile_ab.sh "$OUT/ab.txt" "$M" "$N" \
  "bf16 64 0 16 1024 32 $(d64 bf16 full)" "bf16 64 1 16 1024 32 $(d64 bf16 causal)" \
  "bf16 64 0 4 4096 32 $(d64 bf16 full)" "bf16 64 0 1 16384 32 $(d64 bf16 full)" \
  "f16 64 0 16 1024 32 $(d64 f16 full)" "bf16 128 0 16 1024 16 $d128" "bf16 128 0 4 4096 16 $d128" \
  | tee "$OUT/summary.txt"
