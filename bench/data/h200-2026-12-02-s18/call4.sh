#!/usr/bin/env bash
# Session 18, call 4 (right after call 3, on the warm machine): everything through call 3's
# database, as a user runs after `flashtune tune`: (1) the forward grid of issue 13 (d64 / d128 /
# d256, bf16 and fp16, causal and not, B·N 16k hidden 2048, and B1 H32 N8192 d128) against SDPA
# flash and cuDNN (bench/perf_report.py); (2) bench/backward_bench.py (issue 15; deterministic
# calls: det 2 causal, det 1 with dispatch groups); (3) bench/decode_bench.py (issue 14: dense,
# 16- and 256-key pages; streaming read in the same run).
# usage (GPU, carry .devcarry-s18c and, if the machine is not warm, .devcarry-s18c/default.db.gz):
#   OUT=$OUT bash bench/data/h200-2026-12-02-s18/call4.sh
set -uo pipefail
BIN=$PWD/.devcarry-s18c
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DB=/tmp/s18/default.db
if [ ! -f $DB ]; then mkdir -p /tmp/s18 && gunzip -c $BIN/default.db.gz > $DB || exit 1; echo "database from the carried copy"; fi
S=$OUT/summary.txt; : > $S
PYTHONUNBUFFERED=1 timeout 260 python3 bench/perf_report.py --lib $BIN/libflashtune.so --db $DB --out $OUT \
  --time-limit-s 230 > $OUT/grid.txt 2>&1
echo "forward grid: exit $? [$(el) s]" >> $S
PYTHONPATH=$PWD/python FLASHTUNE_LIB=$BIN/libflashtune.so FLASHTUNE_DB=$DB timeout 110 python3 bench/backward_bench.py \
  --db $DB --dtypes bf16,f16 --reps 10 > $OUT/bwd-bench.txt 2>&1
echo "backward_bench: exit $? [$(el) s]" >> $S
PYTHONPATH=$PWD/python timeout 150 python3 bench/decode_bench.py $BIN/libflashtune.so --db $DB --out $OUT > $OUT/decode.txt 2>&1
echo "decode_bench: exit $? [$(el) s]" >> $S
cat $S
grep -E '^d[0-9]+ +x flash' $OUT/grid.txt
tail -3 $OUT/bwd-bench.txt
tail -16 $OUT/decode.txt
