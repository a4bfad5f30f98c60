#!/usr/bin/env bash
# Session 23, call 3: on 41e5881, `flashtune bench --layout paged` (now timed on a pool of
# shuffled 16-key pages, as the tuner times it) of the paged buckets' winners against the dense
# buckets' winners of the same shapes (call 1's tune), and the untuned default, three
# interleaved rounds each, checked against the float64 reference and the trusted variant.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call3.sh
set -uo pipefail
C=.devcarry-s23a
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-cache
V=decode_fwd_bf16_d128_; F=_full
for shape in "8 32768 ${V}bn128_rm1_w4_s2_cs2$F,${V}bn64_rm1_w4_s3_cs4$F,${V}bn64_rm1_w4_s3_cs2$F" \
             "8 131072 ${V}bn128_rm1_w4_s2_cs2$F,${V}bn64_rm1_w4_s3_cs4$F,${V}bn64_rm1_w4_s3_cs2$F" \
             "64 32768 ${V}bn64_rm1_w4_s2_cs2$F,${V}bn64_rm1_w4_s3_cs2$F" \
             "1 8192 ${V}bn32_rm1_w2_s4_cs2$F,${V}bn32_rm1_w2_s2_cs4$F,${V}bn64_rm1_w4_s3_cs2$F"; do
  set -- $shape
  for layout in paged dense; do
    timeout 60 $C/flashtune bench --batch $1 --seqlen-q 1 --seqlen-k $2 --heads-q 32 --heads-kv 8 --layout $layout \
      --variant "$3" --rounds 3 2>&1 | tee -a $OUT/call3-bench.txt | grep -E "^bf16|decode_fwd" | cut -c1-110
  done
done
