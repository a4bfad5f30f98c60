#!/usr/bin/env bash
# Session 30, decode call: where paged decode at short caches loses to dense, and a fix for it.
# Paged calls (and dense calls with seqlens_k, as engines pass cache_seqlens) keep their lengths
# in memory, so the split kernel cannot plan before griddepcontrol.wait: the chain length ->
# table -> K/V starts at the wait. The change under test (NEW) prefetches into L2, before the
# wait, the first kStages - 1 steps of K/V planned over the longest sequence, the pages read
# from the table through L2 only (templates/decode_fwd.cuh, prefetch_first_steps).
# (1) the decode GPU tests on NEW, and memcheck over the paged and dense decode tests;
# (2) bench/decode_bench.py NEW with BASE as baseline (same inputs, untuned plans, CUDA graphs)
#     on dense, dense-lens (dense with lengths in memory), paged16 and paged256, same run as
#     SDPA cuDNN and flash: is the paged gap the lengths-in-memory path, and does NEW close it;
# (3) Nsight Compute (clocks left as they are) of NEW's kernels at B1 x 2k, dense / dense-lens /
#     paged16 against cuDNN: each kernel alone (ncu serialises launches, so no overlap with the
#     kernel before: what differs there is in the kernel itself).
# usage (GPU): BASE=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h200-2026-12-05-s30/call3.sh
set -uo pipefail
t0=$(date +%s)
BASE=${BASE:?BASE=.devcarry-NAME (main)}
NEW=${NEW:?NEW=.devcarry-NAME (the change)}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:RuntimeGpu.MixedVarlen*' SUITE_S=90 JOBS=4 \
  bash bench/gpu_suite.sh "$NEW" > "$OUT/suite-stdout.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" > "$OUT/summary.txt"
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-san timeout 150 compute-sanitizer --tool memcheck \
  --error-exitcode 9 "$NEW/flashtune_gpu_tests" --gtest_filter='DecodeGpu*' \
  > "$OUT/memcheck.log" 2>&1
echo "memcheck: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log")" >> "$OUT/summary.txt"
grep -h "^\[  PASSED\|^\[  FAILED\|tests ran" "$OUT/memcheck.log" | head -3 >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-bench timeout 300 python3 bench/decode_bench.py \
  $NEW/libflashtune.so --out "$OUT" --batches 1,8,64 --keys 2048,8192 --layouts dense,dense-lens,paged16,paged256 \
  --baseline $BASE/libflashtune.so > "$OUT/decode-bench.txt" 2>&1
echo "decode_bench: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-bench DECODE_PROFILE_SHAPES=1x2048 \
  DECODE_PROFILE_LAYOUTS=dense,dense-lens,paged16 timeout 150 ncu --clock-control none --profile-from-start off \
  --import-source no --section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats \
  --section WarpStateStats --section MemoryWorkloadAnalysis -o "$OUT/decode-2k" \
  python3 bench/decode_profile.py $NEW/libflashtune.so > "$OUT/ncu.log" 2>&1
echo "ncu: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
ncu -i "$OUT/decode-2k.ncu-rep" --page details > "$OUT/ncu-details.txt" 2>&1
grep -E "^  [a-zA-Z_]|Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Memory Throughput|DRAM Throughput" \
  "$OUT/ncu-details.txt" > "$OUT/ncu-brief.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
sed -n '/^streaming read/,$p' "$OUT/decode-bench.txt"
cat "$OUT/ncu-brief.txt" | head -60
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt decode-bench.txt decode_bench.json ncu-details.txt suite-stdout.txt > /dev/null
