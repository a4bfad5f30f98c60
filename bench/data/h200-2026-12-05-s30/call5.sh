#!/usr/bin/env bash
# Session 30, call 5: the paged decode kernel's table and address work, cut (NEW against BASE).
# Call 4's ncu found the paged split kernel at B1 x 2k executing 1,852k instructions against
# dense's 1,399k (same tile, one K/V step a block): 440 more a warp, most of them the 64-bit
# address of every page-table entry and of every 16-row group, and the table reads of the two
# steps after the block's only one (predicated off, their addresses formed anyway). NEW skips a
# step past the block's last by a uniform branch, reads a step's entries from one row pointer
# with 32-bit indices, and forms the thread's row offset once a block.
# (1) decode GPU tests on NEW and memcheck of them; (2) decode_bench.py NEW against BASE
# (same inputs, untuned plans, CUDA graphs; dense is unchanged code: SASS identical);
# (3) bench/decode_tile_ab.sh on the tuned short-cache tiles, paged; (4) ncu's executed
# instructions and duration of both builds' paged split kernel at B1 x 2k.
# usage (GPU): BASE=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h200-2026-12-05-s30/call5.sh
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
  --error-exitcode 9 "$NEW/flashtune_gpu_tests" --gtest_filter='DecodeGpu*' > "$OUT/memcheck.log" 2>&1
echo "memcheck: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log")" >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-bench timeout 200 python3 bench/decode_bench.py \
  $NEW/libflashtune.so --out "$OUT" --batches 1,8,64 --keys 2048,8192 --layouts dense,paged16,paged256 \
  --baseline $BASE/libflashtune.so > "$OUT/decode-bench.txt" 2>&1
echo "decode_bench: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
for C in "$BASE" "$NEW"; do
  LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-prof-$(basename $C) DECODE_PROFILE_SHAPES=1x2048 \
    DECODE_PROFILE_LAYOUTS=paged16 timeout 60 ncu --clock-control none --profile-from-start off \
    --section SpeedOfLight --section InstructionStats -k 'regex:^decode_fwd.*kv1_full$' \
    python3 bench/decode_profile.py $C/libflashtune.so > "$OUT/ncu-$(basename $C).txt" 2>&1
  echo "ncu $(basename $C): $(grep -E '^ +(Duration|Executed Instructions) ' "$OUT/ncu-$(basename $C).txt" | awk '{print $1, $2, $NF}' | tr '\n' ' ')" >> "$OUT/summary.txt"
done
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=2 timeout $(( 520 - ($(date +%s) - t0) )) bash bench/decode_tile_ab.sh \
  "$OUT/bench.txt" "$BASE" "$NEW" "bn32_rm1_w2_s4_cs2 bn64_rm1_w4_s3_cs1" "1 2048,1 8192,8 2048,64 2048" "paged" \
  > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" "${BASE#.devcarry-}" "${NEW#.devcarry-}" > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt"
sed -n '/^streaming read [0-9]/,$p' "$OUT/decode-bench.txt"
cat "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt decode-bench.txt ab-summary.txt bench.txt suite-stdout.txt > /dev/null
