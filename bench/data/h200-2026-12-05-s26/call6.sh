#!/usr/bin/env bash
# Prepared in session 26 (its device time ran out before it could run): s26b = main +
# decode-plan-before-wait.patch (this folder: the decode kernels' plan before the wait (the split
# kernel's plan and K/V base addresses computed before griddepcontrol.wait where no length lives
# in memory; the combine's row coordinates before its wait, which is predicated on them so ptxas
# keeps it after) against s26 = main. The decode GPU tests on s26b (a process each),
# then bench/decode_tile_ab.sh (flashtune bench, queued calls: each call's split kernel a
# programmatic dependent of the previous call's combine) on the tuned short-cache tiles.
# Packs: git worktree add /work/s26b <main>; (cd /work/s26b && git apply
#   bench/data/h200-2026-12-05-s26/decode-plan-before-wait.patch); build it and main;
#   bash bench/pack_for_gpu.sh <build> .devcarry-s26b (resp. .devcarry-s26 for main); carry both.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s26/call6.sh
#   call7.sh runs this A/B form for another patch: NEW (the patched pack), FILTER, TILES, SHAPES
#   and LAYOUTS replace this call's values.
set -uo pipefail
t0=$(date +%s)
NEW=${NEW:-.devcarry-s26b}
name=${NEW#.devcarry-}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER=${FILTER:-'DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:RuntimeGpu.MixedVarlen*'} SUITE_S=90 JOBS=4 \
  bash bench/gpu_suite.sh "$NEW" > "$OUT/suite-stdout.txt" 2>&1
echo "tests ($name): exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" > "$OUT/summary.txt"
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=${PASSES:-2} timeout $(( 300 - ($(date +%s) - t0) )) bash bench/decode_tile_ab.sh \
  "$OUT/bench.txt" .devcarry-s26 "$NEW" "${TILES:-bn32_rm1_w2_s4_cs2 bn64_rm1_w4_s3_cs1}" \
  "${SHAPES:-1 2048,8 2048,1 8192,64 2048}" "${LAYOUTS:-paged dense}" > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" s26 "$name" > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab-summary.txt > /dev/null  # the device returns at most 8 files
