#!/usr/bin/env bash
# Session 31, call 4: call 3's A/B found no gain from the split tail: with 132 persistent blocks
# and 6 tiles a row (N 1024), tile slot * 132 + block put every row's last tile on the blocks
# with block % 6 == 5, so the other blocks' 24 full tiles set the time however cheap the last
# tiles got (N 1024 / N 960 = 24 / 20 tiles a block, call 1). Rounds are now rotated by a block
# (ft_sched::full_tile). hopper_probe --check on the persistent d64 / d128 tiles, then the tile
# A/B against main on the persistent non-causal tiles (d128 128x128 at N 1k: no short tiles).
# usage (GPU): BASE=.devcarry-s31 NEW=.devcarry-s31t OUT=$OUT bash bench/data/h200-2026-12-05-s31/call4.sh
set -uo pipefail
t0=$(date +%s)
BASE=${BASE:?} NEW=${NEW:?}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe timeout 60 stdbuf -oL -eL \
  $NEW/flashtune_hopper_probe --check --only d64_bm192_bn128_wg3_s2_p,d64_bm128_bn128_wg2_s2_p,d128_bm128_bn176 > "$OUT/check.log" 2>&1
echo "check: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h '^check:' "$OUT/check.log" | tail -1)" >> "$OUT/summary.txt"
h=hopper_fwd
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=2 ROUNDS=3 timeout $(( 170 - ($(date +%s) - t0) )) bash bench/forward_tile_ab.sh \
  "$OUT/bench.txt" "$BASE" "$NEW" \
  "bf16 64 0 16 1024 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 64 0 32 512 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 64 0 8 2048 32 ${h}_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "f16 64 0 4 4096 32 ${h}_f16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 128 0 8 2048 16 ${h}_bf16_d128_bm192_bn80_wg3_s2_p2_pp1_ov1_full" \
  "bf16 128 0 16 1024 16 ${h}_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_full" > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" "${BASE#.devcarry-}" "${NEW#.devcarry-}" > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab-summary.txt bench.txt check.log > /dev/null
