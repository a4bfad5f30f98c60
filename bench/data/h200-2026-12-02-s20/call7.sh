#!/usr/bin/env bash
# Session 20, call 7 (s20c = the shipped build): tiles that let two Q buffers (p2) fit where the
# searched key tiles do not, against the tuned kinds. d256: p2 needs 128 KB for its two Q tiles, so
# only 32-48-key K/V blocks fit (p1 128x64-80 and p0 are what the space has); d128 N 4k-8k: p2 with
# 144-160-key blocks (the space's 176 / 192 fit only p1 / p0). `flashtune bench --rounds 5`.
# usage (GPU, carry .devcarry-s20c): OUT=$OUT bash bench/data/h200-2026-12-02-s20/call7.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
S=$OUT/summary.txt; : > $S
C=$PWD/.devcarry-s20c
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-s20c
mkdir -p $FLASHTUNE_CACHE_DIR
run() {  # d causal B N variants (tile_p, comma list)
  local d=$1 c=$2 b=$3 n=$4 list=$5 m vs=""
  m=$([ "$c" = 1 ] && echo causal || echo full)
  for t in ${list//,/ }; do vs=$vs${vs:+,}hopper_fwd_bf16_d${d}_bm128_${t}_pp1_ov1_$m; done
  echo "== d$d $m B$b N$n" >> $OUT/ab.log
  timeout -k 1 90 $C/flashtune bench --head-dim $d --causal $c --batch $b --seqlen-q $n --heads-q $((2048 / d)) \
    --rounds 5 --variant $vs >> $OUT/ab.log 2>&1
  echo "d$d $m N$n: exit $? [$(el) s]" >> $S
}
D256=bn64_wg2_s2_p1,bn80_wg2_s2_p1,bn64_wg2_s2_p0,bn80_wg2_s2_p0,bn48_wg2_s2_p2,bn32_wg2_s2_p2
run 256 0 32 512 $D256
run 256 0 16 1024 $D256
run 256 0 8 2048 $D256
run 256 1 32 512 $D256
run 256 1 16 1024 $D256
D128=bn192_wg2_s2_p0,bn176_wg2_s2_p1,bn128_wg2_s2_p2,bn160_wg2_s2_p2,bn144_wg2_s2_p2
run 128 0 4 4096 $D128
run 128 0 2 8192 $D128
run 128 1 4 4096 $D128
run 128 0 8 2048 $D128
cat $S
grep -E '^(== |hopper_fwd_)' $OUT/ab.log | awk '/^==/{k=$2" "$3" "$5; next} {sub(/hopper_fwd_bf16_d[0-9]+_bm128_/,"",$1); sub(/_pp1_ov1_(causal|full)$/,"",$1); print k, $1, $2, $3, $4}'
