#!/usr/bin/env bash
# Session 24, call 3 (not run in session 24 or 25: no device was lent): s24b = commit 5a4e66c (on sm_90,
# decode launches ask for the shared memory that leaves room for exactly the split rule's blocks per
# SM; reverted on main until measured) against s24a = f00042b (the kernel per K/V layout, no cap: a
# dense bn32 w2 kernel (152 registers, 36 KB) fits 6 blocks per SM where cs4 fills 4). The decode GPU
# tests on s24b, a process each; decode_bench.py on s24b with s24a as the baseline (untuned bn64 s3
# cs2: 100 KB, two per SM either way, so this is a control); `flashtune bench` of each build in turn
# (two passes, three rounds) on the small-shared-memory tiles the cap changes, dense and paged 16.
# Packs: git worktree add /work/ab-a f00042b; git worktree add /work/ab-b 5a4e66c; build each and
#   bash bench/pack_for_gpu.sh <worktree>/build .devcarry-s24a (resp. -s24b), carried.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s24/call3.sh
set -uo pipefail
W=${W:-/tmp/call3}
mkdir -p $W
OUT=$W FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*' SUITE_S=120 JOBS=2 bash bench/gpu_suite.sh .devcarry-s24b \
  > $W/suite-stdout.txt 2>&1
echo "suite exit $?"; tail -2 $W/suite-stdout.txt
STEPS="bench" BASELINE=.devcarry-s24a/libflashtune.so BENCH_S=120 OUT=$W bash bench/decode_round.sh .devcarry-s24b | \
  grep -E "^\||streaming|exit"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab
bash bench/decode_tile_ab.sh $W/bench.txt .devcarry-s24a .devcarry-s24b "bn32_rm1_w2_s2_cs4 bn32_rm1_w2_s4_cs4 bn32_rm1_w2_s2_cs2 bn32_rm1_w2_s4_cs2 bn64_rm1_w4_s2_cs4 bn64_rm1_w4_s2_cs2" "1 2048,1 8192,8 2048,8 32768,64 8192" > $W/ab-summary.txt
cp $W/suite-stdout.txt $W/decode_table.md $W/decode_bench.log $W/bench.txt $OUT/
cp $W/ab-summary.txt $OUT/
cat $W/ab-summary.txt
