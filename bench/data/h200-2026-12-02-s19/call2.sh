#!/usr/bin/env bash
# Session 19, call 2 (right after call 1, warm): decode on round 8's page-table prefetch (the
# .devcarry-s19b build; decode_fwd as on main): bench/decode_round.sh's benchmark over the whole
# table (B 1/8/64 x keys 2k-128k, dense and 16-/256-key pages, untuned defaults, against SDPA flash
# and cuDNN and a streaming read), a budgeted tune of the decode buckets, and the benchmark
# through the tuned database.
# usage (GPU, carry .devcarry-s19b): OUT=$OUT bash bench/data/h200-2026-12-02-s19/call2.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
C=$PWD/.devcarry-s19b
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune
mkdir -p $OUT/decode
STEPS="bench tune tuned" BENCH_S=170 TUNE_S=150 TUNED_S=170 OUT=$OUT/decode timeout 560 bash bench/decode_round.sh $C > $OUT/decode-summary.txt 2>&1
echo "decode round: exit $? [$(el) s]"
cp $OUT/decode/decode_table.md $OUT/decode_table.md; cp $OUT/decode/tuned/decode_table.md $OUT/tuned_decode_table.md
cd $OUT && tar czf decode-logs.tgz decode && rm -rf decode; cd - > /dev/null
cat $OUT/decode-summary.txt | tail -8
tail -14 $OUT/tuned_decode_table.md
