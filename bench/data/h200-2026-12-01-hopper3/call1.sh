#!/usr/bin/env bash
# hopper3 call 1: d64 A/B (blocks per SM), a short float64 check of the new tiles, ncu vs cuDNN.
D=$(cd "$1" && pwd)
set -x
STEPS="check d64 ncu" CHECK_S=30 CHECK_ONLY="bn48_wg1,bn64_wg1_s2_p1,bn80_wg1" TIME_S=90 \
  NCU_VARIANTS="hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov1_causal hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov1_causal" \
  NCU_SHAPE="32 32 512 1" NCU_CUDNN=1 bash "$D/round.sh" "$D"
mkdir -p "$OUT/n16k"
OUT=$OUT/n16k STEPS="ncu" NCU_VARIANTS="hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal" \
  NCU_SHAPE="1 32 16384 1" NCU_CUDNN=1 bash "$D/round.sh" "$D"
