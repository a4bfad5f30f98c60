#!/usr/bin/env bash
# Session 17, call 1: hdet round (dqw1 A/B, fa2 det1 at d64), racecheck of hopper_bwd, then
# issue 17's recording (bf16 shapes first) into $OUT/rec.db until ~560 s.
set -uo pipefail
C=.devcarry-c1
T0=$(date +%s)
L=$OUT/logs; mkdir -p $L
WITH_WRITER=1 WITH_FA2=1 OUT=$L/hdet bash $C/hdet_round.sh $C > $L/hdet-stdout.txt 2>&1
export LD_LIBRARY_PATH=$PWD/$C:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$PWD/$C/flashtune
export FLASHTUNE_CACHE_DIR=$(mktemp -d); cp $C/cache/* $FLASHTUNE_CACHE_DIR/ 2>/dev/null
: > $L/racecheck.log
for v in d64_bn128_bm64_det0_dqw0 d64_bn128_bm64_det1_dqw0 d128_bn128_bm64_det0_dqw0 d128_bn128_bm64_det1_dqw0; do
  d=${v%%_*}; d=${d#d}
  t=$(date +%s)
  echo "== racecheck $v" >> $L/racecheck.log
  timeout -k 2 60 compute-sanitizer --tool racecheck --target-processes all --error-exitcode 9 $C/flashtune bench \
    --operation bwd --dtype bf16 --head-dim $d --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 300 --heads-q 4 \
    --heads-kv 2 --variant hopper_bwd_bf16_${v}_causal >> $L/racecheck.log 2>&1
  echo "racecheck $v: exit $? $(( $(date +%s) - t )) s $(grep 'RACECHECK SUMMARY\|ERROR SUMMARY' $L/racecheck.log | tail -1)" | tee -a $L/summary.txt
done
used=$(( $(date +%s) - T0 ))
END_S=$(( 560 - used )) SKIP_DEFAULT=1 DB=$OUT/rec.db RECORD_SET=bench/issue17-record.problems OUT=$L/rec \
  bash bench/online2_round.sh $C > $L/rec-stdout.txt 2>&1
cp $L/rec/trials.csv $OUT/rec-trials.csv 2>/dev/null
tar czf $OUT/logs.tgz -C $OUT logs
echo "== recording"; tail -5 $L/rec-stdout.txt; grep -c "" $L/rec/trials.csv
echo "== racecheck"; cat $L/summary.txt
echo "== hdet"; tail -22 $L/hdet-stdout.txt
