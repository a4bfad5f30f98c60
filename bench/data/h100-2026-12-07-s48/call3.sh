#!/usr/bin/env bash
# Session 48, call 3, on PACK (main + d64's 256x64 over four warpgroups with three stages in the
# search). 1) compute-sanitizer racecheck and synccheck on that tile through `flashtune bench`
# (B1 Nq 300 Nk 333 Hq 2 Hkv 1, bf16: the last tile of 44 rows splits), full and causal (call 2's
# racecheck of the whole GPU test ran past 170 s); 2) issue 13's forward grid at d64, tuned cold
# (session 27's call2.sh with DIMS=64): which buckets the new tile wins, and the grid against SDPA.
# On an H200: issue 13's whole forward grid instead (head dims 64, 128, 256), as call 1's.
# usage (GPU): PACK=.devcarry-X OUT=$OUT [LIMIT=480] bash bench/data/h100-2026-12-07-s48/call3.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?}" && pwd)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PACK=$P DIMS=64,128,256 LIMIT=${LIMIT:-570} OUT=$OUT bash bench/data/h200-2026-12-05-s27/call2.sh
  exit
fi
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s48c3
for mask in full causal; do
  c=$([ $mask = causal ] && echo 1 || echo 0)
  for tool in racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $P/flashtune bench --dtype bf16 --head-dim 64 --causal $c \
      --batch 1 --seqlen-q 300 --seqlen-k 333 --heads-q 2 --heads-kv 1 --rounds 1 \
      --variant hopper_fwd_bf16_d64_bm256_bn64_wg4_s3_p2_pp1_ov1_$mask > "$OUT/$tool-$mask.txt" 2>&1
    echo "$tool $mask: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-$mask.txt" | tail -1); $(grep -cE ' ok ' "$OUT/$tool-$mask.txt") ok" | tee -a "$OUT/sanitizers.txt"
  done
done
mkdir -p "$OUT/grid"
PACK=$P DIMS=64 LIMIT=$(( ${LIMIT:-480} - ($(date +%s) - t0) )) OUT=$OUT/grid bash bench/data/h200-2026-12-05-s27/call2.sh
# (call2.sh folded its database into grid/logs.tgz.) Each bucket's winner, and every trial: the
# new tile's time beside the others'.
db=/tmp/s48c3 && mkdir -p $db && tar xzf "$OUT/grid/logs.tgz" -C $db ./fwd/fwd.db
$P/flashtune db list --db $db/fwd/fwd.db > "$OUT/winners.txt" 2>&1
$P/flashtune db export --db $db/fwd/fwd.db --format csv > "$OUT/trials.csv" 2>&1
bash bench/pack_out.sh "$OUT" sanitizers.txt winners.txt trials.csv grid/grid-table.txt grid/summary.txt grid/gpu.txt > /dev/null
cat "$OUT/sanitizers.txt"
