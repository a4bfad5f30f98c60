#!/usr/bin/env bash
# Session 20, call 1 (main's build, no change). (1) The GPU tests the last session could not run
# on the shipped template: ForwardGpu.HopperSwitchesOffMatchTheReference and the varlen classes
# (p2 at d64 / d128 through the final epilogue). (2) An A/B for d128 at short N, where cuDNN
# leads most (causal N 512 0.81-0.87x): one consumer warpgroup (64-row tiles, two blocks per SM
# where the K/V ring fits, hardware-scheduled) against the tuned 128x128 two-warpgroup kinds.
# `flashtune bench --rounds 5`, two passes per shape.
# usage (GPU, carry .devcarry-s20a): OUT=$OUT bash bench/data/h200-2026-12-02-s20/call1.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
C=$PWD/.devcarry-s20a
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CLI=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-s20a
mkdir -p $FLASHTUNE_CACHE_DIR
S=$OUT/summary.txt; : > $S
timeout -k 1 200 $C/flashtune_gpu_tests --gtest_filter='ForwardGpu.HopperSwitchesOffMatchTheReference:VarlenGpu/VarlenClasses.*' > $OUT/fwd-tests.log 2>&1
echo "fwd tests: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fwd-tests.log | tr '\n' ' ') [$(el) s]" >> $S
for shape in bf16:1:32:512 bf16:1:16:1024 bf16:0:32:512 f16:1:16:1024 bf16:1:8:2048; do
  IFS=: read dt c b n <<< "$shape"
  m=$([ "$c" = 1 ] && echo causal || echo full)
  h=hopper_fwd_${dt}_d128
  vs=${h}_bm128_bn128_wg2_s2_p0_pp1_ov1_$m,${h}_bm128_bn128_wg2_s2_p2_pp1_ov1_$m
  for t in bn64_wg1_s2_p0_pp1_ov1 bn64_wg1_s2_p0_pp1_ov0 bn80_wg1_s2_p0_pp1_ov1 bn96_wg1_s2_p0_pp1_ov1 bn128_wg1_s2_p0_pp1_ov1 bn64_wg1_s2_p2_pp1_ov1; do
    vs=$vs,${h}_bm64_${t}_$m
  done
  for pass in 1 2; do
    echo "== $dt d128 $m B$b N$n pass $pass" >> $OUT/ab.log
    timeout -k 1 90 $C/flashtune bench --dtype $dt --head-dim 128 --causal $c --batch $b --seqlen-q $n --heads-q 16 \
      --rounds 5 --variant $vs >> $OUT/ab.log 2>&1
    echo "bench $dt $m N$n pass $pass: exit $? [$(el) s]" >> $S
  done
done
cat $S
grep -E '^(== |hopper_fwd_)' $OUT/ab.log | awk '/^==/{k=$2" "$4" "$5" "$6" p"$8; next} {sub(/hopper_fwd_[a-z0-9]+_d128_/,"",$1); print k, $1, $2, $3, $4, $6, $7}'
