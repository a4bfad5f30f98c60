#!/usr/bin/env bash
# Session 17, call 3: hopper_bwd's two-warp dQ writer (w2: one warp per buffer; det 1's tile
# swizzled and added by one reduction, dqw 1 / det 0 padded rows) against main (old): float64
# checks, sanitizers, the A/B in one run, an N sweep, SDPA's backward; then the d64 forward
# grid tuned and reported against SDPA flash / cuDNN (one build, one call).
set -uo pipefail
T0=$(date +%s)
L=$OUT/logs; mkdir -p $L
el() { echo $(( $(date +%s) - T0 )); }
use() {
  C=.devcarry-$1
  export LD_LIBRARY_PATH=$PWD/$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$PWD/$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-$1
  mkdir -p $FLASHTUNE_CACHE_DIR; cp -n $C/cache/* $FLASHTUNE_CACHE_DIR/ 2>/dev/null
}
S=$L/summary.txt; : > $S
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $L/gpu.txt 2>&1
use w2
timeout -k 1 40 $C/flashtune_gpu_tests --gtest_filter='HopperBwdGpu*' > $L/tests-w2.log 2>&1
echo "tests w2: exit $? $(grep -cE '^\[ errors' $L/tests-w2.log) shapes, $(grep -c Failure $L/tests-w2.log) failures, $(grep -E '^\[  (PASSED|FAILED) ' $L/tests-w2.log | tr '\n' ' ') [$(el) s]" >> $S
for run in memcheck:64:det1_dqw0 memcheck:128:det1_dqw0 memcheck:64:det0_dqw1 synccheck:64:det1_dqw0 synccheck:128:det0_dqw1; do
  IFS=: read tool d m <<< "$run"
  log=$L/san-$tool-d$d-$m.log
  timeout -k 2 40 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 $C/flashtune bench \
    --operation bwd --dtype bf16 --head-dim $d --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 300 --heads-q 4 --heads-kv 2 \
    --variant hopper_bwd_bf16_d${d}_bn128_bm64_${m}_causal > $log 2>&1
  echo "$tool d$d $m: exit $? $(grep -E 'ERROR SUMMARY' $log | tail -1) [$(el) s]" >> $S
done
V3() { h=hopper_bwd_bf16_d$1_bn128_bm64; echo ${h}_det0_dqw0_$2,${h}_det1_dqw0_$2,${h}_det0_dqw1_$2; }
for pass in 1 2; do
  for shape in 128:full 128:causal 64:full 64:causal; do
    d=${shape%:*} m=${shape#*:}
    for b in old w2; do
      use $b
      echo "== d$d $m $b pass$pass" >> $L/ab.log
      timeout -k 1 25 $C/flashtune bench --operation bwd --dtype bf16 --head-dim $d --causal $([ $m = causal ] && echo 1 || echo 0) \
        --batch 4 --seqlen-q 4096 --heads-q $((2048 / d)) --rounds 2 --variant $(V3 $d $m) >> $L/ab.log 2>&1
      echo "ab d$d $m $b pass$pass: exit $? [$(el) s]" >> $S
    done
  done
done
use w2
for shape in 128:full:16:1024 128:full:1:16384 64:full:16:1024 64:full:1:16384 64:causal:16:1024 64:causal:1:16384; do
  IFS=: read d m B N <<< "$shape"
  echo "== d$d $m N$N w2" >> $L/sweep.log
  timeout -k 1 25 $C/flashtune bench --operation bwd --dtype bf16 --head-dim $d --causal $([ $m = causal ] && echo 1 || echo 0) \
    --batch $B --seqlen-q $N --heads-q $((2048 / d)) --rounds 2 --variant $(V3 $d $m) >> $L/sweep.log 2>&1
  echo "sweep d$d $m N$N: exit $? [$(el) s]" >> $S
done
PYTHONPATH=$PWD/python FLASHTUNE_LIB=$PWD/$C/libflashtune.so timeout -k 2 100 python3 bench/backward_bench.py \
  --dtypes bf16,f16 --reps 10 > $L/bwd-bench.txt 2>&1
echo "backward_bench: exit $? [$(el) s]" >> $S
# The d64 forward grid, tuned (budgeted) and reported through the runtime, one build.
left=$(( 500 - $(el) ))
STEPS=tune TUNE_S=$(( left * 45 / 100 )) REPORT_S=$(( left * 50 / 100 )) GRID_DIMS=64 GRID_DTYPES=bf16,f16 OUT=$L/fwd \
  bash bench/hopper_round.sh $C > $L/fwd-stdout.txt 2>&1
echo "forward d64 grid: exit $? [$(el) s]" >> $S
cp $L/fwd/perf_report.csv $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $OUT logs
awk '/^== /{k=$2" "$3" "$4; next} /^hopper_bwd_/{split($1,a,"_"); v=a[7]"_"a[8]; key=k" "v; st[key]=$2; t[key]=t[key]" "$3; if(!(key in seen)){seen[key]=1; order[++n]=key}} END{for(i=1;i<=n;i++) print order[i], st[order[i]], t[order[i]]}' $L/ab.log | sort
awk '/^== /{k=$2" "$3" "$4; next} /^hopper_bwd_/{split($1,a,"_"); print k, a[7]"_"a[8], $2, $3}' $L/sweep.log
grep -E "geomean|deterministic /" $L/bwd-bench.txt
tail -6 $L/fwd-stdout.txt; grep -E "^d[0-9]+ +x flash|under|cut" $L/fwd/compare.txt; tail -32 $L/fwd/compare.txt | head -30
cat $S
