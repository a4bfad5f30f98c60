#!/usr/bin/env bash
# Session 20, call 2. The persistent causal tile order: pairs of query blocks m-1-i and i of one
# (head, batch) per block per round (templates/ft_tile_schedule.cuh; new, .devcarry-s20b)
# against longest-first (main's, old, .devcarry-s20a). GPU tests and compute-sanitizer on new,
# then `flashtune bench --rounds 5` per causal shape: old's persistent kinds and the tuned
# non-persistent kinds, then new's persistent kinds; old new old new.
# usage (GPU, carry .devcarry-s20a .devcarry-s20b): OUT=$OUT bash bench/data/h200-2026-12-02-s20/call2.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
use() { C=$PWD/.devcarry-$1; export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CLI=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-$1; mkdir -p /tmp/cache-$1; }
S=$OUT/summary.txt; : > $S
use s20b
timeout -k 1 200 $C/flashtune_gpu_tests --gtest_filter='ForwardGpu.HopperSwitchesOffMatchTheReference:VarlenGpu/VarlenClasses.*:ForwardGpu.Hopper*' > $OUT/fwd-tests.log 2>&1
echo "fwd tests new: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fwd-tests.log | tr '\n' ' ') [$(el) s]" >> $S
for V in hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal:128 hopper_fwd_bf16_d256_bm128_bn80_wg2_s2_p1_pp1_ov1_causal:256; do
  IFS=: read v d <<< "$V"
  for tool in memcheck synccheck racecheck; do
    timeout -k 2 60 compute-sanitizer --tool $tool --error-exitcode 9 $C/flashtune bench --head-dim $d --causal 1 \
      --batch 2 --seqlen-q 1000 --heads-q 8 --rounds 1 --variant $v > $OUT/san-$tool-$d.log 2>&1
    echo "$tool d$d new: exit $? $(grep 'ERROR SUMMARY' $OUT/san-$tool-$d.log | tail -1) [$(el) s]" >> $S
  done
done
# d:B:N:persistent kinds (tile_wg_p):tuned non-persistent kind
for shape in 128:32:512:bm128_bn128_wg2_s2_p2:bm128_bn128_wg2_s2_p0 128:16:1024:bm128_bn128_wg2_s2_p2:bm128_bn128_wg2_s2_p0 \
             128:8:2048:bm128_bn128_wg2_s2_p2:bm128_bn128_wg2_s2_p0 128:4:4096:bm128_bn176_wg2_s2_p1:bm128_bn192_wg2_s2_p0 \
             128:2:8192:bm128_bn176_wg2_s2_p1:bm128_bn176_wg2_s2_p0 64:16:1024:bm192_bn128_wg3_s2_p2:bm64_bn64_wg1_s2_p0 \
             64:8:2048:bm192_bn128_wg3_s2_p2:bm64_bn64_wg1_s2_p0 256:32:512:bm128_bn80_wg2_s2_p1:bm128_bn64_wg2_s2_p0 \
             256:16:1024:bm128_bn80_wg2_s2_p1:bm128_bn80_wg2_s2_p0 256:8:2048:bm128_bn80_wg2_s2_p1:bm128_bn80_wg2_s2_p0; do
  IFS=: read d b n pk tk <<< "$shape"
  h=hopper_fwd_bf16_d${d}
  po=pp1_ov1; [ "$tk" = bm64_bn64_wg1_s2_p0 ] && to=pp1_ov0 || to=pp1_ov1
  extra=""; [ "$d" = 128 ] && [ "$n" -le 2048 ] && extra=,${h}_bm128_bn128_wg2_s2_p1_pp1_ov1_causal
  for pass in 1 2; do
    for pkg in s20a s20b; do
      use $pkg
      if [ $pkg = s20a ]; then vs=${h}_${pk}_${po}_causal,${h}_${tk}_${to}_causal$extra; else vs=${h}_${pk}_${po}_causal$extra; fi
      echo "== d$d causal B$b N$n $pkg pass $pass" >> $OUT/ab.log
      timeout -k 1 90 $C/flashtune bench --head-dim $d --causal 1 --batch $b --seqlen-q $n --heads-q $((2048 / d)) \
        --rounds 5 --variant $vs >> $OUT/ab.log 2>&1
    done
  done
  echo "d$d N$n [$(el) s]" >> $S
done
cat $S
grep -E '^(== |hopper_fwd_)' $OUT/ab.log | awk '/^==/{k=$2" "$4" "$5" "$6" p"$8; next} {sub(/hopper_fwd_bf16_d[0-9]+_/,"",$1); sub(/_causal/,"",$1); print k, $1, $3, $4}'
