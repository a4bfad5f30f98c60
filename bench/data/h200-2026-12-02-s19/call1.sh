#!/usr/bin/env bash
# Session 19, call 1. Forward: hopper_fwd's two Q buffers (p2) measured for the first time, and
# p2 with the O store's read wait deferred to the next tile's first wgmma issue (new,
# .devcarry-s19b) against main's p2 (old, .devcarry-s19a, which waits at once): GPU test
# ForwardGpu.HopperSwitchesOffMatchTheReference on new (p2 at d128 / d64 against float64),
# compute-sanitizer memcheck / synccheck / racecheck on a new p2 call, then `flashtune bench
# --rounds 5` per shape: p1 / p2 / p0 of old, p2 of new, alternating old new old new.
# Decode (unchanged by the forward change; round 8's page-table prefetch): bench/decode_round.sh
# steps tests and sanitize on new (call 2 runs its benchmark and tune).
# usage (GPU, carry .devcarry-s19a .devcarry-s19b): OUT=$OUT bash bench/data/h200-2026-12-02-s19/call1.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
use() { C=$PWD/.devcarry-$1; export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-$1; mkdir -p /tmp/cache-$1; }
S=$OUT/summary.txt; : > $S
use s19b
timeout -k 1 150 $C/flashtune_gpu_tests --gtest_filter='ForwardGpu.HopperSwitchesOffMatchTheReference' > $OUT/fwd-tests.log 2>&1
echo "fwd tests new: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fwd-tests.log | tr '\n' ' ') [$(el) s]" >> $S
V=hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal
for tool in memcheck synccheck racecheck; do
  timeout -k 2 60 compute-sanitizer --tool $tool --error-exitcode 9 $C/flashtune bench --head-dim 128 --causal 1 \
    --batch 2 --seqlen-q 1000 --heads-q 8 --rounds 1 --variant $V > $OUT/san-$tool.log 2>&1
  echo "$tool p2 new: exit $? $(grep 'ERROR SUMMARY' $OUT/san-$tool.log | tail -1) [$(el) s]" >> $S
done
for shape in 128:0:32:512 128:0:16:1024 128:1:16:1024 128:1:8:2048 64:0:32:512 64:0:16:1024; do
  IFS=: read d c b n <<< "$shape"
  if [ "$d" = 128 ]; then t=bm128_bn128_wg2; else t=bm192_bn128_wg3; fi
  m=$([ "$c" = 1 ] && echo causal || echo full)
  h=hopper_fwd_bf16_d${d}_${t}_s2
  for pass in 1 2; do
    for pk in s19a s19b; do
      use $pk
      if [ $pk = s19a ]; then vs=${h}_p1_pp1_ov1_$m,${h}_p2_pp1_ov1_$m,${h}_p0_pp1_ov1_$m; else vs=${h}_p2_pp1_ov1_$m,${h}_p1_pp1_ov1_$m; fi
      echo "== d$d $m B$b N$n $pk pass $pass" >> $OUT/ab.log
      timeout -k 1 60 $C/flashtune bench --head-dim $d --causal $c --batch $b --seqlen-q $n --heads-q $((2048 / d)) \
        --rounds 5 --variant $vs >> $OUT/ab.log 2>&1
    done
  done
done
echo "forward A/B done [$(el) s]" >> $S
mkdir -p $OUT/decode
use s19b
STEPS="tests sanitize" SANITIZE_S=60 OUT=$OUT/decode timeout 150 bash bench/decode_round.sh $C > $OUT/decode-summary.txt 2>&1
echo "decode round: exit $? [$(el) s]" >> $S
cd $OUT && tar czf decode-logs.tgz decode && rm -rf decode; cd - > /dev/null
cat $S
tail -8 $OUT/decode-summary.txt
grep -E '^(== |hopper_fwd_)' $OUT/ab.log | awk '/^==/{k=$2" "$3" "$5" "$6; p=$8; next} {split($1,a,"_"); print k, p, a[9], $2, $3, $4}'
