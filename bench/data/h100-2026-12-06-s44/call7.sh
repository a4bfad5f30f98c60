#!/usr/bin/env bash
# Session 44, call 7 (prepared, not run: the session's device time ran out): d96's three-warpgroup
# tile with 96-key blocks. With O at the data's width (48 accumulators a thread at d96, not 64),
# 192x96 over three consumer warpgroups fits the consumers' 160 registers (S 48 + O 48 + P 24 +
# 32 <= 160; at the tile's width it did not), and ptxas compiles it at 128 registers without
# spills (bf16 and f16, full and causal). d96-192x96-tiles.patch puts the register rule at the
# data's width (generator/hopper_fwd_pack.cpp's AccumulatorsFit and the template's asserts) and
# searches 192x96 wg3 (p0, p2) at d96 on hopper_fwd only: hopper_paged's spills 56-68 bytes, and
# d160's 192x64 wg3, which the same rule admits, spills 56, so both stay out of the space. The
# patch's CPU tests pass (HopperFwdFamily.PaddedHeadDimsTakeTheNextWholeChunksTiles: the twin's
# space plus exactly those two tiles; HopperPack.PaddedHeadDimTilesCompileWithoutSpills). This
# call decides whether it lands: `flashtune bench --rounds 5` (which checks each variant against
# the reference), d96 bf16, FA-2's grid shapes at N 2k / 16k, full and causal: 192x96 wg3 p2
# against today's 192x80 wg3 p2 and 128x128 p2. ~60 s.
# PACK: main with d96-192x96-tiles.patch applied, built and packed (bash bench/pack_for_gpu.sh).
# usage (GPU): PACK=.devcarry-NAME bash bench/data/h100-2026-12-06-s44/call7.sh
set -uo pipefail
P=$(cd "${PACK:?}" && pwd)
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s44c7
nvidia-smi --query-gpu=name,driver_version,temperature.gpu --format=csv,noheader
for c in 0 1; do
  m=$([ $c = 1 ] && echo causal || echo full)
  for n in 2048 16384; do
    timeout 60 $P/flashtune bench --dtype bf16 --head-dim 96 --causal $c --batch $((16384 / n)) --seqlen-q $n --heads-q 21 \
      --variant hopper_fwd_bf16_d96_bm192_bn80_wg3_s2_p2_pp1_ov1_$m,hopper_fwd_bf16_d96_bm192_bn96_wg3_s2_p2_pp1_ov1_$m,hopper_fwd_bf16_d96_bm128_bn128_wg2_s2_p2_pp1_ov1_$m \
      --rounds 5 2>&1 | grep -E "^bf16|^hopper"
  done
done
