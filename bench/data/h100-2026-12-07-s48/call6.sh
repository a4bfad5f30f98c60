#!/usr/bin/env bash
# Session 48, call 6 (prepared, not run: the session's device time ran out). d64's 256x64 over
# four consumer warpgroups, two questions:
# 1) K/V stages: three stages took the tile from 1.11x to 1.01x 192x128 p2's time at full N 16k
#    (call 1), and it still loses 3-7% at full N 2k-16k. `flashtune bench --rounds 5` (checked
#    against the reference first), bf16 d64 H 32, B*N 16k, on MAIN: wg4 s3 p2 / s4 p2 / s3 p0 (not
#    persistent) against 192x128 s2 p2 and s3 p2; full N 512 / 2k / 16k, causal N 1k / 16k.
# 2) Packed sequences (the untuned rule keeps them off the tile): bench/varlen_bench.py
#    --head-dim 64 (through the runtime, untuned) on MAIN and on PACKED (main +
#    packed-d64-four.patch: the rule on packed sequences' longest one too), in turn, twice.
#    Its equal B8 x 2048 causal and ragged causal shapes (longest 3328 <= 4096) change tile.
# usage (GPU): MAIN=.devcarry-M PACKED=.devcarry-P OUT=$OUT bash bench/data/h100-2026-12-07-s48/call6.sh
set -uo pipefail
t0=$(date +%s)
M=$(cd "${MAIN:?}" && pwd) K=$(cd "${PACKED:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s48c6
v() { echo "$1" | tr ',' '\n' | sed "s/^/hopper_fwd_bf16_d64_/; s/$/_$2/" | paste -sd,; }
for shape in "0 512" "0 2048" "0 16384" "1 1024" "1 16384"; do
  set -- $shape
  m=$([ $1 = 1 ] && echo causal || echo full)
  LD_LIBRARY_PATH=$M:/usr/local/cuda/lib64 timeout 60 $M/flashtune bench --dtype bf16 --head-dim 64 --causal $1 \
    --batch $((16384 / $2)) --seqlen-q $2 --heads-q 32 --rounds 5 \
    --variant "$(v bm256_bn64_wg4_s3_p2_pp1_ov1,bm256_bn64_wg4_s4_p2_pp1_ov1,bm256_bn64_wg4_s3_p0_pp1_ov1,bm192_bn128_wg3_s2_p2_pp1_ov1,bm192_bn128_wg3_s3_p2_pp1_ov1 $m)" \
    >> "$OUT/stages.txt" 2>&1
  echo "stages $m N $2: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
done
for pass in 1 2; do
  for P in "$M" "$K"; do
    name=$(basename "$P" | sed 's/^\.devcarry-//')
    LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune timeout 150 python3 bench/varlen_bench.py \
      "$P/libflashtune.so" --head-dim 64 --out "$OUT/varlen-$name-$pass" > "$OUT/varlen-$name-$pass.txt" 2>&1
    echo "varlen $name pass $pass: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
  done
done
grep -E "^bf16|^hopper" "$OUT/stages.txt" | cut -c1-100
for f in "$OUT"/varlen-*.txt; do echo "== $f"; tail -20 "$f"; done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt stages.txt > /dev/null  # the device returns at most 8 files
