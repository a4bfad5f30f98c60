#!/usr/bin/env bash
# Session 27, call 3: hopper_fwd with FT_HOPPER_RESCALE_THRESHOLD=8 (a row's max kept until a
# block passes it by more than 2^8, so the O rescale is skipped for the warp), first correct,
# then fast. (1) hopper_probe --check with the knob on the grid winners' tiles (every --check
# shape, plus key-ramp shapes whose scores grow block after block, so both the rescale and the
# kept max run); (2) the same check without the knob on the ramp's tiles (the ramp is a test
# that can fail); (3) hopper_probe --ab27: the knob against the template, interleaved, on the
# grid's tuned winners. PACK: .devcarry-s27 (this commit's build plus flashtune_hopper_probe).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s27/call3.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:-.devcarry-s27}
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
ONLY=bm128_bn80_wg2_s2_p0,bm64_bn128_wg1_s2_p0_pp1_ov0,bm128_bn128_wg2_s2_p0,bm192_bn128_wg3_s2_p0_pp1_ov1,bm128_bn64_wg2_s2_p1
timeout 200 $P/flashtune_hopper_probe --check --define FT_HOPPER_RESCALE_THRESHOLD=8 --only $ONLY > "$OUT/check-t8.txt" 2>&1
echo "check T8: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/check-t8.txt")" > "$OUT/summary.txt"
timeout 240 $P/flashtune_hopper_probe --ab27 > "$OUT/ab27.txt" 2>&1
echo "ab27: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
left=$(( 560 - ($(date +%s) - t0) ))
timeout $left $P/flashtune_hopper_probe --check --only bm128_bn80_wg2_s2_p0,bm64_bn128_wg1_s2_p0_pp1_ov0 > "$OUT/check-t0.txt" 2>&1
echo "check template: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/check-t0.txt")" >> "$OUT/summary.txt"
grep '^FAIL' "$OUT/check-t8.txt" | head -20 >> "$OUT/summary.txt"
grep '|' "$OUT/ab27.txt" > "$OUT/ab27-table.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab27-table.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab27-table.txt > /dev/null
