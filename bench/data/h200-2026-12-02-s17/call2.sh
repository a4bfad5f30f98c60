#!/usr/bin/env bash
# Session 17, call 2: hopper_bwd's dQ N split at d64 (ns) and the swizzled one-reduction tile
# (swz) against main (old): float64 checks, sanitizers, the A/B in one run, an N sweep and
# SDPA's backward; then issue 17's recording resumed (old build: call 1's template identity).
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
# 1. float64 checks (every class, det 0 / det 1 / dqw 1, edge shapes; det 1 bit-identity)
for b in ns swz; do
  use $b
  timeout -k 1 40 $C/flashtune_gpu_tests --gtest_filter='HopperBwdGpu*' > $L/tests-$b.log 2>&1
  echo "tests $b: exit $? $(grep -cE '^\[ errors' $L/tests-$b.log) shapes, $(grep -c Failure $L/tests-$b.log) failures, $(grep -E '^\[  (PASSED|FAILED) ' $L/tests-$b.log | tr '\n' ' ') [$(el) s]" >> $S
done
# 2. sanitizers on swz (bf16 B1 Nq200 Nk300 Hq4 Hkv2 causal: ragged blocks, masked rows, GQA)
use swz
for run in memcheck:64:det0_dqw0 memcheck:64:det1_dqw0 memcheck:64:det0_dqw1 memcheck:128:det0_dqw1 synccheck:64:det0_dqw1 \
           racecheck:64:det1_dqw0 racecheck:128:det0_dqw1 racecheck:64:det0_dqw0; do
  IFS=: read tool d m <<< "$run"
  log=$L/san-$tool-d$d-$m.log
  timeout -k 2 40 compute-sanitizer --tool $tool --print-limit 100000 --target-processes all --error-exitcode 9 $C/flashtune bench \
    --operation bwd --dtype bf16 --head-dim $d --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 300 --heads-q 4 --heads-kv 2 \
    --variant hopper_bwd_bf16_d${d}_bn128_bm64_${m}_causal > $log 2>&1
  echo "$tool d$d $m: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $log | tail -1) [$(el) s]" >> $S
done
# 3. the A/B: bf16 B4 N4096 hidden 2048; builds alternate, two passes, --rounds 2 each
V3() { h=hopper_bwd_bf16_d$1_bn128_bm64; echo ${h}_det0_dqw0_$2,${h}_det1_dqw0_$2,${h}_det0_dqw1_$2; }
for pass in 1 2; do
  for shape in 128:full 128:causal 64:full 64:causal; do
    d=${shape%:*} m=${shape#*:}
    builds="old swz"; [ $d = 64 ] && builds="old ns swz"
    for b in $builds; do
      use $b
      echo "== d$d $m $b pass$pass" >> $L/ab.log
      timeout -k 1 25 $C/flashtune bench --operation bwd --dtype bf16 --head-dim $d --causal $([ $m = causal ] && echo 1 || echo 0) \
        --batch 4 --seqlen-q 4096 --heads-q $((2048 / d)) --rounds 2 --variant $(V3 $d $m) >> $L/ab.log 2>&1
      echo "ab d$d $m $b pass$pass: exit $? [$(el) s]" >> $S
    done
  done
done
# 4. N sweep on swz (B.N = 16k): where det 1 costs
use swz
for shape in 128:full:16:1024 128:full:1:16384 64:full:16:1024 64:full:1:16384 128:causal:1:16384 64:causal:1:16384; do
  IFS=: read d m B N <<< "$shape"
  echo "== d$d $m N$N swz" >> $L/sweep.log
  timeout -k 1 25 $C/flashtune bench --operation bwd --dtype bf16 --head-dim $d --causal $([ $m = causal ] && echo 1 || echo 0) \
    --batch $B --seqlen-q $N --heads-q $((2048 / d)) --rounds 2 --variant $(V3 $d $m) >> $L/sweep.log 2>&1
  echo "sweep d$d $m N$N: exit $? [$(el) s]" >> $S
done
# 5. SDPA flash / cuDNN backward against swz's untuned default (dqw 1) and deterministic (det 1)
PYTHONPATH=$PWD/python FLASHTUNE_LIB=$PWD/$C/libflashtune.so timeout -k 2 120 python3 bench/backward_bench.py \
  --dtypes bf16,f16 --reps 10 > $L/bwd-bench.txt 2>&1
echo "backward_bench: exit $? [$(el) s]" >> $S
# 6. issue 17's recording, resumed on call 1's database (old build), then bf16 d64 causal
use old
cp .devcarry-old/rec.db $OUT/rec.db && chmod u+w $OUT/rec.db
END_S=$(( 560 - $(el) )) SKIP_DEFAULT=1 DB=$OUT/rec.db RECORD_SET=bench/issue17-record.problems OUT=$L/rec2 \
  bash bench/online2_round.sh $C > $L/rec2-stdout.txt 2>&1
END_S=$(( 575 - $(el) )) SKIP_DEFAULT=1 DB=$OUT/rec.db RECORD_SET=bench/issue17-record2.problems OUT=$L/rec3 \
  bash bench/online2_round.sh $C > $L/rec3-stdout.txt 2>&1
echo "recording: $(grep -h 'problem(s)' $L/rec2/record-tune.log $L/rec3/record-tune.log | sed 's/^[0-9.]* //' | tr '\n' ' ') [$(el) s]" >> $S
cp $L/rec3/trials.csv $OUT/rec-trials.csv 2>/dev/null || cp $L/rec2/trials.csv $OUT/rec-trials.csv
tar czf $OUT/logs.tgz -C $OUT logs
# The table last.
awk '/^== /{k=$2" "$3" "$4; next} /^hopper_bwd_/{split($1,a,"_"); v=a[7]"_"a[8]; key=k" "v; st[key]=$2; t[key]=t[key]" "$3; if(!(key in seen)){seen[key]=1; order[++n]=key}} END{for(i=1;i<=n;i++) print order[i], st[order[i]], t[order[i]]}' $L/ab.log | sort
awk '/^== /{k=$2" "$3" "$4; next} /^hopper_bwd_/{split($1,a,"_"); print k, a[7]"_"a[8], $2, $3}' $L/sweep.log
grep -E "geomean|^ *d?[0-9]" $L/bwd-bench.txt | tail -16
cat $S
