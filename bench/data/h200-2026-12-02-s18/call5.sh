#!/usr/bin/env bash
# Session 18, call 5: how the benchmarks time a call. Call 4's forward grid read 0.85-1.08x (geomean
# 0.96x) of the tuner's own figure for the same variant, lowest at short causal shapes; its timing
# synchronised after every call, so each call started on an idle GPU and its time held the host's
# launch latency. Here, through call 3's database (carried gzipped), the same grid and the backward
# bench twice each, in one run: --timing sync (as before) and --timing queued (the calls back to
# back, one synchronisation at the end), every system timed both ways.
# usage (GPU, carry .devcarry-s18c with default.db.gz): OUT=$OUT bash bench/data/h200-2026-12-02-s18/call5.sh
set -uo pipefail
BIN=$PWD/.devcarry-s18c
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DB=/tmp/s18/default.db; mkdir -p /tmp/s18 && gunzip -c $BIN/default.db.gz > $DB || exit 1
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
for t in queued sync; do
  mkdir -p $OUT/$t
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/perf_report.py --lib $BIN/libflashtune.so --db $DB --out $OUT/$t \
    --timing $t --time-limit-s 130 > $OUT/$t/grid.txt 2>&1
  echo "forward grid $t: exit $? [$(el) s]" >> $S
done
for t in queued sync; do
  PYTHONPATH=$PWD/python FLASHTUNE_LIB=$BIN/libflashtune.so timeout 100 python3 bench/backward_bench.py \
    --db $DB --dtypes bf16,f16 --reps 10 --timing $t > $OUT/$t/bwd-bench.txt 2>&1
  echo "backward_bench $t: exit $? [$(el) s]" >> $S
done
cat $S
for t in queued sync; do echo "== $t"; grep -E '^d[0-9]+ +x flash|output check' $OUT/$t/grid.txt; tail -3 $OUT/$t/bwd-bench.txt; done
