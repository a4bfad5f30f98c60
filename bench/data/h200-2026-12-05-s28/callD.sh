#!/usr/bin/env bash
# Session 28, call D (prepared, not run): why the thresholded rescale costs d128's two-warpgroup
# 128x192 tile 8% (session 27's --ab27: 3.260 against 3.017 ms at full B1 H16 N16k, while the
# loop's SASS differs only by the vote and a branch). ncu (--clock-control none) of one launch
# of each side, from hopper_probe --ab27 restricted to that tile: speed of light, warp states
# (the stall reasons), scheduler issue, compute pipes, instruction mix.
# PACK: main's build with flashtune_hopper_probe copied in.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s28/callD.sh
set -uo pipefail
P=${PACK:?PACK=.devcarry-NAME}
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
for side in t0:'regex:bn192_wg2_s2_p0_pp1_ov1_full_FT_HOPPER_RESCALE_THRESHOLD_0$' \
            t8:'regex:bn192_wg2_s2_p0_pp1_ov1_full_FT_HOPPER_RESCALE_THRESHOLD_8$'; do
  name=${side%%:*}
  timeout 150 "$NCU" --clock-control none --kernel-name "${side#*:}" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section InstructionStats "$P/flashtune_hopper_probe" --ab27 --only d128_bm128_bn192 > "$OUT/ncu-$name.txt" 2>&1
  echo "ncu $name: exit $?" >> "$OUT/summary.txt"
done
cat "$OUT/gpu.txt" "$OUT/summary.txt"
for f in "$OUT"/ncu-*.txt; do echo "== $(basename "$f")"; grep -E 'Duration|Issue Slots Busy|No Eligible|Stall|Executed Ipc|Warp Cycles Per Issued' "$f" | sed 's/  */ /g' | head -30; done
