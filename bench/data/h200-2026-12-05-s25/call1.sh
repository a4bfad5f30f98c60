#!/usr/bin/env bash
# Prepared in session 25 (no device was lent), for the next session's first decode call: the
# experiment decode-kv-before-q.patch (s25x: the first step's K/V copies issued before Q's, Q
# joining their commit group; the packed row -> (query head, token) split without an integer
# division, and the causal mask's tokens computed once; SASS: bn32 w2 s4 dense 2432 -> 2200
# instructions, bn64 w4 s3 2128 -> 1976, paged bn32 s4 5720 -> 5576) against s25m (main
# without it). The decode GPU tests on s25x, a process each (its correctness first; memcheck on
# the bf16 d128 class); decode_bench.py on s25x with s25m as the baseline (untuned bn64 s3 cs2,
# dense and paged); `flashtune bench` of each build in turn (two passes, three rounds) on the
# tiles short caches tune to, dense and 16-key pages; the summary table is printed last.
# Packs: git worktree add /work/s25m <main>; git worktree add /work/s25x <main>, then
#   (cd /work/s25x && git apply bench/data/h200-2026-12-05-s25/decode-kv-before-q.patch); build each;
#   bash bench/pack_for_gpu.sh <worktree>/build .devcarry-s25m (resp. -s25x); carry both.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s25/call1.sh
set -uo pipefail
W=${W:-/tmp/s25call1}
mkdir -p $W
OUT=$W FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*' SUITE_S=120 JOBS=2 bash bench/gpu_suite.sh .devcarry-s25x \
  > $W/suite-stdout.txt 2>&1
echo "suite exit $?"; tail -2 $W/suite-stdout.txt
STEPS="bench" BASELINE=.devcarry-s25m/libflashtune.so BENCH_S=120 OUT=$W bash bench/decode_round.sh .devcarry-s25x | \
  grep -E "^\||streaming|exit"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab
bash bench/decode_tile_ab.sh $W/bench.txt .devcarry-s25m .devcarry-s25x "bn32_rm1_w2_s2_cs4 bn32_rm1_w2_s4_cs2 bn64_rm1_w4_s3_cs2 bn64_rm2_w4_s2_cs1" "1 2048,1 8192,8 2048,64 2048" > $W/ab-summary.txt
# Memcheck last (the A/B first, should the call run short): the bf16 d128 non-causal class (instance 2, as session 23's call 7): paged with 16-, 256- and
# 1-key pages, ragged 0-4097 keys, dense.
LD_LIBRARY_PATH=.devcarry-s25x:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc timeout ${MC_S:-240} \
  compute-sanitizer --tool memcheck --error-exitcode 3 .devcarry-s25x/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/2' > $W/memcheck.log 2>&1
echo "memcheck exit $?: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1)"
cp $W/suite-stdout.txt $W/memcheck.log $W/decode_table.md $W/decode_bench.log $W/bench.txt $OUT/ 2>/dev/null
cp $W/ab-summary.txt $OUT/
cat $W/ab-summary.txt
