#!/usr/bin/env bash
# Session 27, call 6 (not run): compute-sanitizer memcheck, racecheck and synccheck of the tiles the
# thresholded rescale changed (the generator turns it on at d256 and in d64's three-warpgroup
# tiles): hopper_probe --small (one small shape per class, bf16, causal and not; the small
# key-ramp shape too, so the rescale branch runs both ways) under each tool.
# PACK: a build of this commit with flashtune_hopper_probe copied in (bench/pack_for_gpu.sh, then
# cp build/bench/flashtune_hopper_probe PACK/).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s27/call6.sh
set -uo pipefail
P=${PACK:?PACK=.devcarry-NAME}
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe
ONLY=d256_bm128_bn80_wg2_s2_p0,d256_bm128_bn80_wg2_s2_p1,d64_bm192_bn128_wg3_s2_p1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $P/flashtune_hopper_probe --small --only $ONLY \
    > "$OUT/sanitizer-$tool.log" 2>&1
  echo "$tool: exit $?; $(grep -h 'ERROR SUMMARY' "$OUT/sanitizer-$tool.log" | sort | uniq -c | tr '\n' ' ')" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt"
