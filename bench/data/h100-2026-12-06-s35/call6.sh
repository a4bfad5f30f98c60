#!/usr/bin/env bash
# Session 35, call 6: K/V stages on 16-key pages. A 128-key block over 16-key pages is 8 TMA boxes
# a 64-column chunk (32 requests a K/V stage at d128 against 4 dense); with two stages the
# producer is one block ahead, so a slower stage may reach the consumers. `flashtune bench
# --layout paged` (16-key shuffled pages, the variants interleaved over 3 rounds in one process)
# of hopper_paged tiles with 2, 3 and 4 stages, and the same tiles dense (hopper_fwd) for
# comparison: bf16 d128 B4 Nq 512 Nk 4096 Hq 32 Hkv 8 full and causal, B1 Nq 2048 Nk 8192 full;
# d64 B4 Nq 512 Nk 4096 full.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call6.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-c6
: > "$OUT/bench.txt"
run() {  # layout family d mask shape tiles...
  local layout=$1 fam=$2 d=$3 mask=$4 shape=$5; shift 5
  local c=$([ $mask = causal ] && echo 1 || echo 0) list=""
  for t in "$@"; do list="$list,${fam}_bf16_d${d}_${t}_${mask}"; done
  set -- $shape
  echo "== $layout d$d $mask B$1 Nq$2 Nk$3" >> "$OUT/bench.txt"
  timeout 100 $P/flashtune bench --dtype bf16 --head-dim $d --batch $1 --seqlen-q $2 --seqlen-k $3 --heads-q 32 \
    --heads-kv 8 --causal $c --layout $layout --rounds 3 --reps 30 --variant "${list#,}" >> "$OUT/bench.txt" 2>&1
  echo "$layout d$d $mask B$1 Nq$2 Nk$3: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
}
T128="bm128_bn128_wg2_s2_p0_pp1_ov1 bm128_bn128_wg2_s3_p0_pp1_ov1 bm128_bn64_wg2_s4_p0_pp1_ov1 bm128_bn96_wg2_s3_p0_pp1_ov1 bm128_bn128_wg2_s2_p2_pp1_ov1"
T64="bm192_bn128_wg3_s2_p0_pp1_ov1 bm192_bn128_wg3_s3_p0_pp1_ov1 bm192_bn128_wg3_s4_p0_pp1_ov1 bm192_bn128_wg3_s2_p2_pp1_ov1"
for mask in full causal; do
  run paged hopper_paged 128 $mask "4 512 4096" $T128
  run dense hopper_fwd 128 $mask "4 512 4096" $T128
done
run paged hopper_paged 128 full "1 2048 8192" $T128
run paged hopper_paged 64 full "4 512 4096" $T64
run dense hopper_fwd 64 full "4 512 4096" $T64
cat "$OUT/summary.txt"
grep -E "^==|hopper_(paged|fwd)_" "$OUT/bench.txt" | grep -v "^flashtune" | cut -c1-150
bash bench/pack_out.sh "$OUT" summary.txt bench.txt gpu.txt > /dev/null
