#!/usr/bin/env bash
# Session 28, call C (prepared, not run: the device time ran out): the A/B of
# decode-prefetch-before-wait.patch (this folder). Before griddepcontrol.wait, the decode split
# kernel prefetches into L2 what it reads right after the wait: the sequence's length and,
# paged, the block table's entries for its split (planned over the longest sequence); dense
# calls without lengths in memory also prefetch their first kStages - 1 steps of K/V rows.
# The chain length -> table -> K/V that starts at the wait then begins from L2, which is what
# paged B1 x 2k (0.85-0.87x cuDNN; about 2 us behind dense at B1 x 2k-8k) is thought to pay.
# First the decode GPU tests on the patched pack, then memcheck on them (the prefetch addresses),
# then bench/decode_tile_ab.sh against main on the tuned short-cache tiles, dense and paged.
# Packs, both from one commit: BASE = main's build, NEW = main + the patch
#   (git worktree add -f --detach /work/X HEAD; cd /work/X && git apply
#   bench/data/h200-2026-12-05-s28/decode-prefetch-before-wait.patch; build;
#   bash bench/pack_for_gpu.sh /work/X/build .devcarry-NAME).
# usage (GPU): BASE=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h200-2026-12-05-s28/callC.sh
set -uo pipefail
t0=$(date +%s)
BASE=${BASE:?BASE=.devcarry-NAME (main)}
NEW=${NEW:?NEW=.devcarry-NAME (main + the patch)}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:RuntimeGpu.MixedVarlen*' SUITE_S=90 JOBS=4 \
  bash bench/gpu_suite.sh "$NEW" > "$OUT/suite-stdout.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" > "$OUT/summary.txt"
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-san timeout 170 compute-sanitizer --tool memcheck \
  --error-exitcode 9 "$NEW/flashtune_gpu_tests" --gtest_filter='DecodeGpu*' > "$OUT/memcheck.log" 2>&1
echo "memcheck: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log")" >> "$OUT/summary.txt"
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=${PASSES:-2} timeout $(( 560 - ($(date +%s) - t0) )) bash bench/decode_tile_ab.sh \
  "$OUT/bench.txt" "$BASE" "$NEW" "${TILES:-bn32_rm1_w2_s4_cs2 bn64_rm1_w4_s3_cs1}" \
  "${SHAPES:-1 2048,8 2048,1 8192,64 2048}" "${LAYOUTS:-paged dense}" > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" "${BASE#.devcarry-}" "${NEW#.devcarry-}" > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab-summary.txt > /dev/null  # the device returns at most 8 files
