#!/usr/bin/env bash
# Session 18, call 1: hopper_bwd's deterministic mode. (1) What main carried untested from
# session 17: the dQ writer's walk over heads of one query block, det 2 (descending turns), now
# with dispatch groups (dg): HopperBwdGpu* against the float64 reference, det 1 / det 2 bit-identical;
# memcheck / synccheck. (2) The deterministic cost per shape: FA-2's grid (B·N 16k, hidden 2048;
# N 1k / 4k / 16k), bf16, d64 / d128, full / causal; per shape in one `flashtune bench` run the
# default (det0 dqw1), det 1 with dg 0 (all of a head's key blocks dispatched together) / 2 / 4 /
# 8 / 16, and (causal) det 2 with dg 0 / 4.
# usage (GPU, carry .devcarry-s18): OUT=$OUT bash bench/data/h200-2026-12-02-s18/call1.sh
# pack (here): bash bench/data/h200-2026-12-02-s18/call1.sh --pack
set -uo pipefail
C=.devcarry-s18
uris() {
  for d in 64 128; do for m in full causal; do
    h=hopper_bwd_bf16_d${d}_bn128_bm64
    echo ${h}_det0_dg0_dqw1_$m ${h}_det0_dg0_dqw0_$m
    for g in 0 2 4 8 16; do echo ${h}_det1_dg${g}_dqw0_$m; done
    [ $m = causal ] && echo ${h}_det2_dg0_dqw0_$m ${h}_det2_dg2_dqw0_$m ${h}_det2_dg4_dqw0_$m ${h}_det1_dg8_dqw0_$m
    echo hopper_bwd_f16_d${d}_bn128_bm64_det0_dg0_dqw1_$m hopper_bwd_f16_d${d}_bn128_bm64_det0_dg0_dqw0_$m hopper_bwd_f16_d${d}_bn128_bm64_det1_dg0_dqw0_$m
    [ $m = causal ] && echo hopper_bwd_f16_d${d}_bn128_bm64_det2_dg0_dqw0_$m
  done; done
}
if [ "${1:-}" = --pack ]; then
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
export LD_LIBRARY_PATH=$PWD/$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$PWD/$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache
mkdir -p $FLASHTUNE_CACHE_DIR; cp $C/cache/* $FLASHTUNE_CACHE_DIR/ 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $L/gpu.txt 2>&1
timeout -k 1 90 $C/flashtune_gpu_tests --gtest_filter='HopperBwdGpu*' > $L/tests.log 2>&1
echo "tests: exit $? $(grep -cE '^\[ errors' $L/tests.log) shapes, $(grep -c Failure $L/tests.log) failures, $(grep -E '^\[  (PASSED|FAILED) ' $L/tests.log | tr '\n' ' ') [$(el) s]" >> $S
for run in memcheck:64:det1_dg2_dqw0 memcheck:128:det2_dg0_dqw0 synccheck:64:det2_dg2_dqw0 memcheck:64:det0_dg0_dqw1; do
  IFS=: read tool d m <<< "$run"
  log=$L/san-$tool-d$d-$m.log
  timeout -k 2 40 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 $C/flashtune bench \
    --operation bwd --dtype bf16 --head-dim $d --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 300 --heads-q 4 --heads-kv 2 \
    --variant hopper_bwd_bf16_d${d}_bn128_bm64_${m}_causal > $log 2>&1
  echo "$tool d$d $m: exit $? $(grep -E 'ERROR SUMMARY' $log | tail -1) [$(el) s]" >> $S
done
for shape in 128:full:16:1024 128:full:4:4096 128:full:1:16384 128:causal:16:1024 128:causal:4:4096 128:causal:1:16384 \
             64:full:16:1024 64:full:4:4096 64:full:1:16384 64:causal:16:1024 64:causal:4:4096 64:causal:1:16384; do
  IFS=: read d m B N <<< "$shape"
  h=hopper_bwd_bf16_d${d}_bn128_bm64
  v=${h}_det0_dg0_dqw1_$m; for g in 0 2 4 8 16; do v=$v,${h}_det1_dg${g}_dqw0_$m; done
  [ $m = causal ] && v=$v,${h}_det2_dg0_dqw0_$m,${h}_det2_dg4_dqw0_$m
  echo "== d$d $m N$N" >> $L/sweep.log
  timeout -k 1 40 $C/flashtune bench --operation bwd --dtype bf16 --head-dim $d --causal $([ $m = causal ] && echo 1 || echo 0) \
    --batch $B --seqlen-q $N --heads-q $((2048 / d)) --rounds 3 --variant $v >> $L/sweep.log 2>&1
  echo "sweep d$d $m N$N: exit $? [$(el) s]" >> $S
done
tar czf $OUT/logs.tgz -C $OUT logs
cat $S
grep -E 'Failure|FAILED' $L/tests.log | head -5
# per shape: each variant's µs and its ratio to the default (det0 dg0 dqw1)
awk '/^== /{k=$2" "$3" "$4; next} /^hopper_bwd_/{split($1,a,"_"); v=a[7]"_"a[8]; if(v=="det0_dg0") base=$3; printf "%-18s %-9s %-4s %9s %6.3f\n", k, v, $2, $3, (base>0?$3/base:0)}' $L/sweep.log
