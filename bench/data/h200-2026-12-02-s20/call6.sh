#!/usr/bin/env bash
# Session 20, call 6 (s20c = the shipped build). (1) d64 short shapes, where the tuner's picks
# (64-row non-persistent kinds, whose timings spread 5-10%) trail cuDNN in the grid by more than
# ncu's single launch says (181 against 179 µs at full N 512): `flashtune bench --rounds 7` of
# the kinds the tuner weighed. (2) ncu of the non-causal persistent order at d128 full N 1k / 2k
# (p2 128x128): L2 hit rate and DRAM bytes against the compulsory ~100-200 MB.
# usage (GPU, carry .devcarry-s20c): OUT=$OUT bash bench/data/h200-2026-12-02-s20/call6.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
S=$OUT/summary.txt; : > $S
C=$PWD/.devcarry-s20c
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-s20c
mkdir -p $FLASHTUNE_CACHE_DIR
for shape in bf16:0:32:512 bf16:0:16:1024 f16:0:16:1024 f16:1:8:2048 bf16:1:16:1024; do
  IFS=: read dt c b n <<< "$shape"
  m=$([ "$c" = 1 ] && echo causal || echo full)
  h=hopper_fwd_${dt}_d64
  vs=${h}_bm64_bn128_wg1_s2_p0_pp1_ov0_$m,${h}_bm64_bn64_wg1_s2_p0_pp1_ov0_$m,${h}_bm64_bn128_wg1_s2_p2_pp1_ov1_$m,${h}_bm192_bn128_wg3_s2_p2_pp1_ov1_$m,${h}_bm128_bn128_wg2_s2_p2_pp1_ov1_$m,${h}_bm64_bn64_wg1_s2_p2_pp1_ov0_$m
  echo "== $dt d64 $m B$b N$n" >> $OUT/ab.log
  timeout -k 1 90 $C/flashtune bench --dtype $dt --head-dim 64 --causal $c --batch $b --seqlen-q $n --heads-q 32 \
    --rounds 7 --variant $vs >> $OUT/ab.log 2>&1
  echo "bench $dt d64 $m N$n: exit $? [$(el) s]" >> $S
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
M="lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
for shape in 16:1024 8:2048; do
  IFS=: read b n <<< "$shape"
  timeout 60 $NCU --clock-control none --metrics "$M" --kernel-name regex:hopper_fwd --launch-skip 8 --launch-count 1 \
    $C/flashtune bench --rounds 1 --head-dim 128 --batch $b --seqlen-q $n --heads-q 16 \
    --variant hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_full > $OUT/ncu-d128_N${n}_full_p2.txt 2>&1
  echo "ncu d128 full N$n: exit $? [$(el) s]" >> $S
done
cat $S
for f in $OUT/ncu-*.txt; do echo "== $(basename $f)"; grep -E '^\s+(lts__|dram__|gpu__time|sm__cycles)' $f | sed 's/  */ /g'; done
grep -E '^(== |hopper_fwd_)' $OUT/ab.log | awk '/^==/{k=$2" "$4" "$6; next} {sub(/hopper_fwd_[a-z0-9]+_d64_/,"",$1); sub(/_(causal|full)$/,"",$1); print k, $1, $3, $4}'
