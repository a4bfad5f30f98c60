#!/usr/bin/env bash
# Session 20, call 5: ncu (--clock-control none), for the notes' next steps. (1) d64 full B32
# N512 H32 bf16, where every candidate trails cuDNN: the tuned winner and cuDNN's kernel
# (bench/data/h200-2026-12-02-s18/ncu_fwd.py through call 3's database), and the 192x128
# three-warpgroup p2 kind: which pipe binds (MUFU = xu, FMA, ALU, tensor). (2) d128 causal p2
# 128x128 at B32 N512 and B8 N2k with longest-first (s20a) and the pairs (s20b): L2 hit rate and
# DRAM bytes, to say why the pairs won.
# usage (GPU, carry .devcarry-s20a .devcarry-s20b .devcarry-s20c with default.db.gz): OUT=$OUT bash bench/data/h200-2026-12-02-s20/call5.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
S=$OUT/summary.txt; : > $S
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
$NCU --query-metrics --chip gh100 > /tmp/metrics.txt 2>&1
M=$(awk '{print $1}' /tmp/metrics.txt | grep -E '^sm__(inst_executed_pipe_xu|pipe_fma_cycles_active|pipe_alu_cycles_active|pipe_fmaheavy_cycles_active|pipe_shared_cycles_active|pipe_tensor_op_gmma_cycles_active|inst_executed_pipe_uniform)$' | sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd, -)
M="$M,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
echo "metrics: $M" >> $S
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats"
prof() {  # tag, then the command
  local tag=$1; shift
  timeout 100 $NCU --clock-control none --target-processes all $SEC --metrics "$M" "$@" > $OUT/ncu-$tag.txt 2>&1
  echo "ncu $tag: exit $? [$(el) s]" >> $S
}
use() { C=$PWD/.devcarry-$1; export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-$1; mkdir -p /tmp/cache-$1; }
use s20c
DB=/tmp/s20/default.db; mkdir -p /tmp/s20 && gunzip -c $C/default.db.gz > $DB
for who in ours cudnn; do
  if [ $who = ours ]; then re='regex:hopper_fwd'; else re='regex:cudnn|sdpa|fmha|fprop'; fi
  PYTHONPATH=$PWD/python FLASHTUNE_LIB=$C/libflashtune.so prof d64_N512_full-$who --kernel-name "$re" --launch-skip 3 --launch-count 1 \
    python3 bench/data/h200-2026-12-02-s18/ncu_fwd.py $DB bf16 64 32 512 32 0
done
B="bench --rounds 1 --reps 20"
prof d64_N512_full-192x128p2 --kernel-name regex:hopper_fwd --launch-skip 8 --launch-count 1 \
  $C/flashtune $B --head-dim 64 --batch 32 --seqlen-q 512 --heads-q 32 --variant hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full
for pk in s20a s20b; do
  use $pk
  for shape in 32:512 8:2048; do
    IFS=: read b n <<< "$shape"
    prof d128_N${n}_causal_p2-$pk --kernel-name regex:hopper_fwd --launch-skip 8 --launch-count 1 \
      $C/flashtune $B --head-dim 128 --causal 1 --batch $b --seqlen-q $n --heads-q 16 --variant hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal
  done
done
cat $S
for f in $OUT/ncu-*.txt; do echo "== $(basename $f)"; grep -E '^\s+(Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Hit Rate|DRAM Throughput|Issue Slots Busy|No Eligible|sm__|lts__|dram__|gpu__time)' $f | sed 's/  */ /g' | head -24; done
