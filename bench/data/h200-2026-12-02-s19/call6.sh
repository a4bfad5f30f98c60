#!/usr/bin/env bash
# Session 19, call 6. Call 4 tuned with .devcarry-s19b, which was packed before p2 joined the
# searched space (its winners are call 3's old build's p0 / p1), so its grid (call 5) measured
# the old space. Here, with main's build (.devcarry-s19d: p2 searched in place of p1; the
# inter-tile epilogue off, FT_HOPPER_INTER_TILE 0, after call 3), the short buckets where p2
# won in call 1 are re-tuned into call 4's database (carried gzipped): d64 and d128, bf16 and
# fp16, causal and not, N 512 / 1k / 2k (`flashtune tune --retune`, strategy auto); then the
# forward grid through it (bench/perf_report.py, queued), against SDPA flash and cuDNN.
# usage (GPU, carry .devcarry-s19d with default.db.gz): OUT=$OUT bash bench/data/h200-2026-12-02-s19/call6.sh
set -uo pipefail
BIN=$PWD/.devcarry-s19d
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
unset FLASHTUNE_DB
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DB=/tmp/s19d/default.db; mkdir -p /tmp/s19d && gunzip -c $BIN/default.db.gz > $DB || exit 1
timeout -s INT -k 10 200 $BIN/flashtune tune --db $DB --head-dims 64,128 --seqlens-q 512,1024,2048 --retune > $OUT/tune.log 2>&1
echo "short-bucket retune: exit $? [$(el) s]"
$BIN/flashtune db export --format csv --table winners --db $DB --output $OUT/winners.csv > /dev/null 2>&1
PYTHONUNBUFFERED=1 timeout 150 python3 bench/perf_report.py --lib $BIN/libflashtune.so --db $DB --out $OUT \
  --time-limit-s 120 > $OUT/grid.txt 2>&1
echo "forward grid: exit $? [$(el) s]"
grep -E '^d[0-9]+ +x flash|output check' $OUT/grid.txt
tail -1 $OUT/tune.log
