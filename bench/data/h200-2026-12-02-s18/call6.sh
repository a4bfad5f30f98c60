#!/usr/bin/env bash
# Session 18, call 6: (1) bench/backward_bench.py queued with its warm-up fixed (3 calls, then
# 0.1 s of calls, per timed function: call 5's default at causal N 1k read 8-13% slow, the first
# system timed after new inputs); (2) ncu (--clock-control none) of the forward's weakest shapes
# against cuDNN, for the next session: bf16 d128 full B32 N512 H16 and causal B16 N1k H16, our
# kernel (the database's winner) and cuDNN's, one call each after three.
# usage (GPU, carry .devcarry-s18c with default.db.gz): OUT=$OUT bash bench/data/h200-2026-12-02-s18/call6.sh
set -uo pipefail
BIN=$PWD/.devcarry-s18c
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DB=/tmp/s18/default.db; mkdir -p /tmp/s18 && gunzip -c $BIN/default.db.gz > $DB || exit 1
S=$OUT/summary.txt; : > $S
PYTHONPATH=$PWD/python FLASHTUNE_LIB=$BIN/libflashtune.so timeout 110 python3 bench/backward_bench.py \
  --db $DB --dtypes bf16,f16 --reps 10 > $OUT/bwd-bench.txt 2>&1
echo "backward_bench queued, warm-up 0.1 s: exit $? [$(el) s]" >> $S
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
for shape in "128 32 512 16 0" "128 16 1024 16 1"; do
  set -- $shape; tag=d$1_N$3_c$5
  for who in ours cudnn; do
    if [ $who = ours ]; then re='regex:hopper_fwd'; else re='regex:cudnn|sdpa|fmha|fprop'; fi
    PYTHONPATH=$PWD/python FLASHTUNE_LIB=$BIN/libflashtune.so timeout 90 $NCU --clock-control none --target-processes all \
      --kernel-name "$re" --launch-skip 3 --launch-count 1 $SECTIONS \
      python3 bench/data/h200-2026-12-02-s18/ncu_fwd.py $DB bf16 $1 $2 $3 $4 $5 > $OUT/ncu-$tag-$who.txt 2>&1
    echo "ncu $tag $who: exit $? [$(el) s] $(grep -c 'Section:' $OUT/ncu-$tag-$who.txt) sections" >> $S
  done
done
cat $S
tail -3 $OUT/bwd-bench.txt
grep -E 'bf16 d(64|128) N1024 .* causal' $OUT/bwd-bench.txt
for f in $OUT/ncu-*.txt; do echo "== $f"; grep -E '^\s+(Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|Registers Per Thread|Achieved Occupancy|Grid Size|Block Size|Dynamic Shared Memory Per Block|Waves Per SM|Issue Slots Busy|No Eligible)' $f | head -14; grep -E '^  [a-zA-Z_].*\(' $f | head -2; done
