#!/usr/bin/env bash
# Session 29, call G: does a tile's time depend on how long the GPU has been busy? The tuner's
# search timed f16 d64 causal B8 N2k's 64x64 one-warpgroup tile at 358 us and the 192x128 wg3
# p0 tile at 355; `flashtune bench` rounds (back to back) read 398-402 and 378, and the tuner's
# re-timing 375 and 387 (bench/data/h100-2026-12-05-s29, calls E and F). Each tile is timed as
# the tuner's search times it (`flashtune bench --rounds 1`: verify, 25 ms warm-up, timing)
# after 8 s of idle, twice, alternating; then both in 12 back-to-back rounds; the same for f16
# d64 full B32 N512 (192x128 p2 against 64x128 one warpgroup). nvidia-smi samples the SM clock,
# power, temperature and the clock-event reasons every 20 ms throughout.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s29/callG.sh
set -uo pipefail
P=${PACK:?PACK=.devcarry-NAME}
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-g
reasons=clocks_event_reasons.active
nvidia-smi --query-gpu=$reasons --format=csv > /dev/null 2>&1 || reasons=clocks_throttle_reasons.active
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > "$OUT/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,$reasons --format=csv,noheader -lms 20 > "$OUT/smi.csv" &
smi=$!
bench() {  # LABEL SHAPE-ARGS VARIANTS ROUNDS
  echo "== $1 $(date +%H:%M:%S.%N | cut -c1-12)" >> "$OUT/bench.txt"
  timeout 60 $P/flashtune bench $2 --variant $3 --rounds $4 --json >> "$OUT/bench.txt" 2>&1
  echo "== end $1 $(date +%H:%M:%S.%N | cut -c1-12)" >> "$OUT/bench.txt"
}
h=hopper_fwd_f16_d64
C="--dtype f16 --head-dim 64 --causal 1 --batch 8 --seqlen-q 2048 --heads-q 32"
CA=${h}_bm192_bn128_wg3_s2_p0_pp1_ov1_causal CB=${h}_bm64_bn64_wg1_s2_p0_pp1_ov0_causal
F="--dtype f16 --head-dim 64 --causal 0 --batch 32 --seqlen-q 512 --heads-q 32"
FA=${h}_bm192_bn128_wg3_s2_p2_pp1_ov1_full FB=${h}_bm64_bn128_wg1_s2_p0_pp1_ov0_full
bench compile-causal "$C" $CA,$CB 1; bench compile-full "$F" $FA,$FB 1
for pair in "C $CA $CB" "F $FA $FB"; do
  set -- $pair
  args=$C; [ $1 = F ] && args=$F
  for v in $2 $3 $2 $3; do sleep 8; bench "idle-$1 $v" "$args" $v 1; done
  sleep 8; bench "sustained-$1" "$args" $2,$3 12
done
kill $smi
grep -h '^==\|"variant"' "$OUT/bench.txt" | sed 's/"message".*//' | cut -c1-200 > "$OUT/summary.txt"
tail -40 "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt smi.csv bench.txt > /dev/null
