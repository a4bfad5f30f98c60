#!/usr/bin/env bash
# Session 18, call 7: hopper_fwd at d128's weakest shapes against cuDNN (call 6's ncu: cuDNN keeps
# more in flight): three K/V stages (s3, allowed, not searched: "3 stages never beat 2 at bn128"
# was measured at long N in session 11) and the persistent schedule, `flashtune bench` (chained
# launches, every variant checked first), 3 rounds alternating, bf16.
# usage (GPU, carry .devcarry-s18c): OUT=$OUT bash bench/data/h200-2026-12-02-s18/call7.sh
set -uo pipefail
BIN=$PWD/.devcarry-s18c
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
h=hopper_fwd_bf16_d128_bm128_bn128_wg2
timeout 60 $BIN/flashtune bench --head-dim 128 --batch 32 --seqlen-q 512 --heads-q 16 --rounds 3 \
  --variant ${h}_s2_p1_pp1_ov1_full,${h}_s3_p1_pp1_ov1_full,${h}_s2_p0_pp1_ov1_full,${h}_s3_p0_pp1_ov1_full > $OUT/full-n512.txt 2>&1
echo "full N512: exit $?"
timeout 60 $BIN/flashtune bench --head-dim 128 --causal 1 --batch 16 --seqlen-q 1024 --heads-q 16 --rounds 3 \
  --variant ${h}_s2_p0_pp1_ov1_causal,${h}_s3_p0_pp1_ov1_causal,${h}_s2_p1_pp1_ov1_causal,${h}_s3_p1_pp1_ov1_causal > $OUT/causal-n1k.txt 2>&1
echo "causal N1k: exit $?"
cat $OUT/full-n512.txt $OUT/causal-n1k.txt
