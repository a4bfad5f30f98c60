#!/usr/bin/env bash
# Session 38, call 8: call 5's sweep (every dense decode_fwd tile of the bf16 d128 space, full
# mask, `flashtune bench --rounds 5`) at B8 x 8k, B64 x 8k and B1 x 32k, the other shapes call 6
# left under cuDNN or at it: does the budgeted tune (call 6's winners) miss a faster tile there?
# (Prepared in session 38, not run: too little device time was left to start a machine.)
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s38/call8.sh
set -uo pipefail
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s38c5 FLASHTUNE_WORKER=$P/flashtune
L=decode_fwd_bf16_d128_bn32_rm1_w2_s2_cs2_kv0_full,decode_fwd_bf16_d128_bn32_rm1_w2_s2_cs4_kv0_full,decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs2_kv0_full,decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s2_cs1_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s2_cs2_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s2_cs4_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs1_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs4_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s4_cs1_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s4_cs2_kv0_full,decode_fwd_bf16_d128_bn64_rm1_w4_s4_cs4_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s2_cs1_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s2_cs2_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s2_cs4_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s3_cs1_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s3_cs2_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s3_cs4_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s4_cs1_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s4_cs2_kv0_full,decode_fwd_bf16_d128_bn64_rm2_w4_s4_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w4_s2_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w4_s2_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w4_s2_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w4_s3_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w4_s3_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w4_s3_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w8_s2_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w8_s2_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w8_s2_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w8_s3_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w8_s3_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm1_w8_s3_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w4_s2_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w4_s2_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w4_s2_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w4_s3_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w4_s3_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w4_s3_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w8_s2_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w8_s2_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w8_s2_cs4_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w8_s3_cs1_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w8_s3_cs2_kv0_full,decode_fwd_bf16_d128_bn128_rm2_w8_s3_cs4_kv0_full
for bk in 8x8192 64x8192 1x32768; do
  b=${bk%x*} k=${bk#*x}
  timeout 150 $P/flashtune bench --dtype bf16 --head-dim 128 --batch $b --seqlen-q 1 --seqlen-k $k --heads-q 32 \
    --heads-kv 8 --variant "$L" --rounds 5 > "$OUT/sweep-b$b-k$k.txt" 2>&1
  echo "B$b x $k: exit $?" >> "$OUT/summary.txt"
done
cat "$OUT/summary.txt"; for f in "$OUT"/sweep-*.txt; do echo "$f"; grep "decode_fwd" "$f" | sort -k3 -n | cut -c1-110 | head -8; done
