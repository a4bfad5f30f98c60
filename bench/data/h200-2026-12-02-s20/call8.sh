#!/usr/bin/env bash
# Session 20, call 8 (s20c = the shipped build, with call 3's database): the decode table through
# the shipped default tune's database (its 11 decode buckets; bench/decode_round.sh step `tuned`:
# B 1/8/64 x keys 2k-128k, dense and 16- / 256-key pages, CUDA-graph replays, against SDPA flash
# and cuDNN and a streaming read in the same run). No decode kernel changed this session; the
# template hash did, so session 19's decode winners do not apply to this build.
# usage (GPU, carry .devcarry-s20c with default.db.gz): OUT=$OUT bash bench/data/h200-2026-12-02-s20/call8.sh
set -uo pipefail
C=$PWD/.devcarry-s20c
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune
mkdir -p $OUT/decode && gunzip -c $C/default.db.gz > $OUT/decode/tuned.db
STEPS="tuned" TUNED_S=170 OUT=$OUT/decode timeout 180 bash bench/decode_round.sh $C > $OUT/decode-summary.txt 2>&1
echo "decode round: exit $?"
cp $OUT/decode/tuned/decode_table.md $OUT/tuned_decode_table.md; cp $OUT/decode/tuned/decode_bench.log $OUT/tuned_decode_bench.log
rm -rf $OUT/decode
tail -16 $OUT/tuned_decode_table.md
