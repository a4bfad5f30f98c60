#!/usr/bin/env bash
# Session 18, call 2: hopper_bwd's lse / delta by bulk copy from the preprocess's padded stats
# (new, .devcarry-s18b) against the producer lanes' loads and shared stores (old, call 1's pack
# .devcarry-s18). (1) correctness of new: HopperBwdGpu*, BackwardGpu* and the runtime's backward
# GPU tests; racecheck (the 120 hazards of session 17), memcheck, synccheck. (2) A/B old / new,
# separate processes alternating, two passes, bf16 B4 N4096 hidden 2048, det0 dqw1 (the default)
# and the deterministic variant the runtime now runs. (3) bench/backward_bench.py through the
# runtime (untuned: hopper_bwd dqw1; deterministic: det 2 causal, det 1 with dispatch groups).
# usage (GPU, carry .devcarry-s18 and .devcarry-s18b): OUT=$OUT bash bench/data/h200-2026-12-02-s18/call2.sh
# pack (here): bash bench/data/h200-2026-12-02-s18/call2.sh --pack
set -uo pipefail
uris() {
  for t in bf16 f16; do for d in 64 128; do for m in full causal; do
    h=hopper_bwd_${t}_d${d}_bn128_bm64
    echo ${h}_det0_dg0_dqw1_$m ${h}_det0_dg0_dqw0_$m ${h}_det1_dg0_dqw0_$m
    if [ $m = causal ]; then echo ${h}_det2_dg0_dqw0_$m ${h}_det2_dg2_dqw0_$m ${h}_det1_dg8_dqw0_$m
    else echo ${h}_det1_dg2_dqw0_$m ${h}_det1_dg8_dqw0_$m; fi
  done; done; done
}
if [ "${1:-}" = --pack ]; then
  C=.devcarry-s18b
  rm -rf $C && bash bench/pack_for_gpu.sh build $C && cp "$0" $C/call.sh || exit 1
  CACHE=$(cd $C && mkdir -p cache && cd cache && pwd); B=$(cd build && pwd)
  scratch=$(mktemp -d)
  for u in $(uris | tr ' ' '\n' | sort -u); do
    (cd $scratch && $B/flashtune generate --variant $u -o $u >/dev/null &&
      FLASHTUNE_CACHE_DIR=$CACHE $B/flashtune compile $u --arch sm_90a --option=--minimal >/dev/null) || { echo "cannot compile $u"; exit 1; }
  done
  echo "packed: $(ls $CACHE | wc -l) cubins"; du -sh $C; exit 0
fi
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
L=$OUT/logs; mkdir -p $L; S=$L/summary.txt; : > $S
use() {
  C=.devcarry-$1
  export LD_LIBRARY_PATH=$PWD/$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$PWD/$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-$1
  mkdir -p $FLASHTUNE_CACHE_DIR; cp -n $C/cache/* $FLASHTUNE_CACHE_DIR/ 2>/dev/null
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $L/gpu.txt 2>&1
use s18b
timeout -k 1 120 $C/flashtune_gpu_tests --gtest_filter='HopperBwdGpu*:BackwardGpu*:*Backward*Gpu*:RuntimeGpu*Backward*' > $L/tests.log 2>&1
echo "tests: exit $? $(grep -cE '^\[ errors' $L/tests.log) shapes, $(grep -c Failure $L/tests.log) failures, $(grep -E '^\[  (PASSED|FAILED) ' $L/tests.log | tr '\n' ' ') [$(el) s]" >> $S
for run in racecheck:64:det1_dg0_dqw0 racecheck:128:det0_dg0_dqw1 racecheck:64:det2_dg0_dqw0 memcheck:128:det0_dg0_dqw1 memcheck:64:det2_dg2_dqw0 synccheck:64:det0_dg0_dqw1; do
  IFS=: read tool d m <<< "$run"
  log=$L/san-$tool-d$d-$m.log
  timeout -k 2 60 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 $C/flashtune bench \
    --operation bwd --dtype bf16 --head-dim $d --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 300 --heads-q 4 --heads-kv 2 \
    --variant hopper_bwd_bf16_d${d}_bn128_bm64_${m}_causal > $log 2>&1
  echo "$tool d$d $m: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $log | tail -1) [$(el) s]" >> $S
done
for pass in 1 2; do
  for shape in 128:full:det1_dg8 128:causal:det2_dg0 64:full:det1_dg8 64:causal:det2_dg0; do
    IFS=: read d m det <<< "$shape"
    for b in s18 s18b; do
      use $b
      h=hopper_bwd_bf16_d${d}_bn128_bm64
      echo "== d$d $m $b pass$pass" >> $L/ab.log
      timeout -k 1 25 $C/flashtune bench --operation bwd --dtype bf16 --head-dim $d --causal $([ $m = causal ] && echo 1 || echo 0) \
        --batch 4 --seqlen-q 4096 --heads-q $((2048 / d)) --rounds 2 --variant ${h}_det0_dg0_dqw1_$m,${h}_${det}_dqw0_$m >> $L/ab.log 2>&1
      echo "ab d$d $m $b pass$pass: exit $? [$(el) s]" >> $S
    done
  done
done
use s18b
PYTHONPATH=$PWD/python FLASHTUNE_LIB=$PWD/$C/libflashtune.so timeout -k 2 150 python3 bench/backward_bench.py \
  --dtypes bf16,f16 --reps 10 > $L/bwd-bench.txt 2>&1
echo "backward_bench: exit $? [$(el) s]" >> $S
tar czf $OUT/logs.tgz -C $OUT logs
cat $S
grep -E 'Failure|FAILED' $L/tests.log | head -5
awk '/^== /{k=$2" "$3" "$4; next} /^hopper_bwd_/{split($1,a,"_"); print k, a[7]"_"a[8]"_"a[9], $2, $3}' $L/ab.log | sort -k1,3 -s
tail -30 $L/bwd-bench.txt
