#!/usr/bin/env bash
# Session 31, call 1. On an H200: issue 13's forward grid with the shipped build (the s27 call2
# script, DIMS=64,128,256). On any other card (the H100 every call of sessions 27-30 got):
#  (a) d64 at short N, the shapes under 1.5x SDPA flash: K/V stages 2/3/4 on the 192x128 tile
#      (only s2 is searched at d64; three stages tied at d128 in session 18), and what the last,
#      partly dead 192-row tile costs: N 960 (5 tiles a head, none partial) against 1024 (5 + a
#      tile with one live warpgroup) and 1152 (6 full tiles). `flashtune bench`, interleaved rounds.
#  (b) the decode chain traced (s30 call8: bench/decode_chain.py, its first GPU run) and
#      bench/decode_bench.py once on two shapes (its layout_args refactor's first GPU run).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s31/call1.sh
set -uo pipefail
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
if grep -q H200 "$OUT/gpu.txt"; then
  PACK=$P DIMS=64,128,256 OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-s31
H=hopper_fwd_bf16_d64
full="${H}_bm192_bn128_wg3_s2_p2_pp1_ov1_full,${H}_bm192_bn128_wg3_s3_p2_pp1_ov1_full,${H}_bm192_bn128_wg3_s4_p2_pp1_ov1_full,${H}_bm128_bn128_wg2_s2_p2_pp1_ov1_full,${H}_bm128_bn128_wg2_s3_p2_pp1_ov1_full,${H}_bm64_bn128_wg1_s2_p0_pp1_ov0_full"
causal="${H}_bm192_bn128_wg3_s2_p0_pp1_ov1_causal,${H}_bm192_bn128_wg3_s3_p0_pp1_ov1_causal,${H}_bm192_bn128_wg3_s2_p2_pp1_ov1_causal,${H}_bm192_bn128_wg3_s3_p2_pp1_ov1_causal,${H}_bm64_bn64_wg1_s2_p0_pp1_ov0_causal"
tail3="${H}_bm192_bn128_wg3_s2_p2_pp1_ov1_full,${H}_bm128_bn128_wg2_s2_p2_pp1_ov1_full"
b() { timeout 120 $P/flashtune bench --dtype bf16 --head-dim 64 --heads-q 32 --rounds 7 "$@"; }
{
  echo "== full B32 N512";  b --batch 32 --seqlen-q 512 --variant "$full"
  echo "== full B16 N1024"; b --batch 16 --seqlen-q 1024 --variant "$full"
  echo "== causal B16 N1024"; b --causal 1 --batch 16 --seqlen-q 1024 --variant "$causal"
  echo "== causal B8 N2048"; b --causal 1 --batch 8 --seqlen-q 2048 --variant "$causal"
  for n in 960 1024 1152; do echo "== tail B16 N$n"; b --batch 16 --seqlen-q $n --variant "$tail3"; done
} > "$OUT/d64.txt" 2>&1
echo "d64 bench: exit $?" > "$OUT/summary.txt"
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-chain DECODE_CHAIN_SHAPES=1x2048,1x8192,8x2048 \
  timeout 200 python3 bench/decode_chain.py $P/libflashtune.so --json "$OUT/chain.json" > "$OUT/chain.txt" 2>&1
echo "decode_chain: exit $?" >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-chain timeout 120 python3 bench/decode_bench.py \
  $P/libflashtune.so --batches 1,8 --keys 2048 --layouts dense,dense-lens,paged16 --out "$OUT" > "$OUT/decode-bench.txt" 2>&1
echo "decode_bench: exit $?" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"; tail -25 "$OUT/decode-bench.txt"; tail -40 "$OUT/chain.txt"
grep -E "^==|hopper_fwd" "$OUT/d64.txt" | cut -c1-150
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt d64.txt chain.txt chain.json decode-bench.txt > /dev/null
