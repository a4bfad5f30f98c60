#!/usr/bin/env bash
# Session 19, call 3. hopper_fwd p2 with the next tile's first S issued before a tile's epilogue
# (kInterTile; new, .devcarry-s19c) against p2 without it (old, .devcarry-s19b, call 1's "new"):
# GPU tests on new (ForwardGpu.HopperSwitchesOffMatchTheReference: p2 at d128 wg2, d64 wg1 / wg3,
# ov0; VarlenGpu/VarlenClasses: p2 at d64 wg1 and d128 wg2 on packed ragged batches; float64
# reference; d64 and d128 classes, both dtypes), compute-sanitizer memcheck / synccheck / racecheck on a new p2 call (causal, ragged
# tail), then `flashtune bench --rounds 5` per shape, alternating old new old new.
# usage (GPU, carry .devcarry-s19b .devcarry-s19c): OUT=$OUT bash bench/data/h200-2026-12-02-s19/call3.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
use() { C=$PWD/.devcarry-$1; export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-$1; mkdir -p /tmp/cache-$1; }
S=$OUT/summary.txt; : > $S
use s19c
timeout -k 1 170 $C/flashtune_gpu_tests --gtest_filter='ForwardGpu.HopperSwitchesOffMatchTheReference:VarlenGpu/VarlenClasses.VariantsMatchTheReference/0:VarlenGpu/VarlenClasses.VariantsMatchTheReference/1:VarlenGpu/VarlenClasses.VariantsMatchTheReference/2:VarlenGpu/VarlenClasses.VariantsMatchTheReference/3:VarlenGpu/VarlenClasses.VariantsMatchTheReference/6:VarlenGpu/VarlenClasses.VariantsMatchTheReference/7:VarlenGpu/VarlenClasses.VariantsMatchTheReference/8:VarlenGpu/VarlenClasses.VariantsMatchTheReference/9' > $OUT/tests.log 2>&1
echo "tests new: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/tests.log | tr '\n' ' ') [$(el) s]" >> $S
grep -E '^\[  FAILED' $OUT/tests.log | head -5 >> $S
for V in hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p2_pp1_ov1_full; do
  d=$(echo $V | grep -oE '_d[0-9]+_' | tr -dc 0-9); c=$([[ $V == *causal ]] && echo 1 || echo 0)
  for tool in memcheck synccheck racecheck; do
    timeout -k 2 60 compute-sanitizer --tool $tool --error-exitcode 9 $C/flashtune bench --head-dim $d --causal $c \
      --batch 2 --seqlen-q 1000 --heads-q 8 --rounds 1 --variant $V > $OUT/san-$tool-d$d.log 2>&1
    echo "$tool d$d: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san-$tool-d$d.log | tail -1) [$(el) s]" >> $S
  done
done
# shape = d:causal:batch:N:variants (tile_p_pp_ov, comma-separated)
for shape in 128:0:32:512:bm128_bn128_wg2_s2_p2_pp1_ov1,bm128_bn128_wg2_s2_p0_pp1_ov1 \
             128:0:16:1024:bm128_bn128_wg2_s2_p2_pp1_ov1,bm128_bn128_wg2_s2_p0_pp1_ov1 \
             128:0:8:2048:bm128_bn128_wg2_s2_p2_pp1_ov1,bm128_bn128_wg2_s2_p0_pp1_ov1 \
             128:0:2:8192:bm128_bn128_wg2_s2_p2_pp1_ov1,bm128_bn192_wg2_s2_p0_pp1_ov1 \
             128:1:16:1024:bm128_bn128_wg2_s2_p2_pp1_ov1,bm128_bn128_wg2_s2_p0_pp1_ov1 \
             128:1:8:2048:bm128_bn128_wg2_s2_p2_pp1_ov1,bm128_bn128_wg2_s2_p0_pp1_ov1 \
             128:1:2:8192:bm128_bn128_wg2_s2_p2_pp1_ov1,bm128_bn192_wg2_s2_p0_pp1_ov1 \
             64:0:32:512:bm64_bn128_wg1_s2_p2_pp1_ov1,bm64_bn128_wg1_s2_p0_pp1_ov0,bm192_bn128_wg3_s2_p2_pp1_ov1 \
             64:0:16:1024:bm64_bn128_wg1_s2_p2_pp1_ov1,bm64_bn128_wg1_s2_p0_pp1_ov0,bm192_bn128_wg3_s2_p2_pp1_ov1 \
             64:1:16:1024:bm64_bn128_wg1_s2_p2_pp1_ov1,bm64_bn64_wg1_s2_p0_pp1_ov0; do
  IFS=: read d c b n vs <<< "$shape"
  m=$([ "$c" = 1 ] && echo causal || echo full)
  list=$(echo $vs | tr ',' '\n' | sed "s/^/hopper_fwd_bf16_d${d}_/; s/\$/_$m/" | paste -sd,)
  for pass in 1 2; do
    for pk in s19b s19c; do
      use $pk
      echo "== d$d $m B$b N$n $pk pass $pass" >> $OUT/ab.log
      timeout -k 1 60 $C/flashtune bench --head-dim $d --causal $c --batch $b --seqlen-q $n --heads-q $((2048 / d)) \
        --rounds 5 --variant $list >> $OUT/ab.log 2>&1
    done
  done
done
echo "A/B done [$(el) s]" >> $S
cat $S
grep -E '^(== |hopper_fwd_)' $OUT/ab.log | awk '/^==/{k=$2" "$3" "$5" "$6; p=$8; next} {sub(/hopper_fwd_bf16_d[0-9]+_/,"",$1); sub(/_(full|causal)$/,"",$1); print k, p, $1, $2, $3, $4}'
# The build that won the A/B (new when the geomean of its p2 times over old's is below 1; three
# consumer warpgroups left out: the inter-tile schedule does not apply to them) goes to call 4
# in /tmp/s19/pk.
pk=$(grep -E '^(== |hopper_fwd_)' $OUT/ab.log | awk '/^==/{k=$2" "$3" "$5; p=$6; next} $1 ~ /_p2_pp1_ov1_/ && $1 !~ /wg3/ {t[k" "$1" "p]+=$3; n[k" "$1" "p]++}
  END{for (x in t) if (x ~ / s19c$/) { y=substr(x,1,length(x)-4)"s19b"; if (n[y]) {s+=log((t[x]/n[x])/(t[y]/n[y])); m++} }
      g=exp(s/m); printf "%s %.4f %d\n", (g < 1 ? "s19c" : "s19b"), g, m}')
echo "inter-tile p2 / p2 geomean: $pk" | tee -a $S
rm -rf /tmp/s19 && mkdir -p /tmp/s19 && echo ${pk%% *} > /tmp/s19/pk
