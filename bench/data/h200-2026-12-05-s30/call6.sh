#!/usr/bin/env bash
# Session 30, call 6: the untuned decode tile by problem size (NEW against BASE). Without a
# tuning database every decode problem got bn64 w4 s3 cs2, which ran B1 x 2k at 0.80x cuDNN
# (call 3) where the tuned bn32 w2 s4 tile ran 1.08x (session 28). NEW gives short K/V streams
# (B * Hkv * Nk * D <= 2^25: up to B1 x 32k at Hkv 8, d128) bn32 w2 s4 cs4 (decode_fwd's
# DefaultFor). (1) bench/decode_bench.py NEW against BASE, no database (untuned plans), dense
# and 16-key pages, CUDA graphs, same run as SDPA cuDNN / flash; shapes past the bound are
# controls (same tile in both). (2) `flashtune bench` of the candidate tiles at the short shapes.
# usage (GPU): BASE=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h200-2026-12-05-s30/call6.sh
set -uo pipefail
t0=$(date +%s)
BASE=${BASE:?BASE=.devcarry-NAME (main)}
NEW=${NEW:?NEW=.devcarry-NAME (the change)}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-bench timeout 240 python3 bench/decode_bench.py \
  $NEW/libflashtune.so --out "$OUT" --batches 1,8,64 --keys 2048,8192,32768 --layouts dense,paged16 \
  --baseline $BASE/libflashtune.so > "$OUT/decode-bench.txt" 2>&1
echo "decode_bench: exit $? at $(( $(date +%s) - t0 )) s" > "$OUT/summary.txt"
t=decode_fwd_bf16_d128
for shape in "1 2048" "1 8192" "8 2048" "1 32768"; do
  set -- $shape
  for kv in dense:kv0 paged:kv1; do
    k=${kv#*:}
    LD_LIBRARY_PATH=$NEW:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$NEW/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-tiles timeout 60 \
      $NEW/flashtune bench --batch $1 --seqlen-q 1 --seqlen-k $2 --heads-q 32 --heads-kv 8 --layout ${kv%:*} --rounds 5 \
      --variant ${t}_bn32_rm1_w2_s4_cs4_${k}_full,${t}_bn32_rm1_w2_s4_cs2_${k}_full,${t}_bn64_rm1_w4_s3_cs2_${k}_full \
      >> "$OUT/tiles.txt" 2>&1
  done
done
echo "tiles: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
sed -n '/^streaming read [0-9]/,$p' "$OUT/decode-bench.txt"
grep -E "^bf16|^decode_fwd" "$OUT/tiles.txt" | awk '{print $1, $2, $3, $4, $5, $6, $7, $8}'
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt decode-bench.txt tiles.txt decode_bench.json > /dev/null
