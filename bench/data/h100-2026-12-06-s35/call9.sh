#!/usr/bin/env bash
# Session 35, call 9 — prepared, not run (the session's device time ran out): where prefill over
# 16-key pages loses its 16% against a dense cache. The same tile, bf16 d128 128x128 wg2 s3 full,
# B4 Nq 512 Nk 4096 Hq 32 Hkv 8: hopper_paged on 16-key pages (8 TMA boxes a 64-column chunk)
# and hopper_fwd dense (one box), each run by `flashtune bench` under ncu (`--clock-control none`,
# SourceCounters for the SASS page, WarpStateStats and SchedulerStats for the stall reasons);
# then bench/ncu_source_blocks.py compares the two kernels' executed instructions and stalls.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call9.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-c9
tile=bf16_d128_bm128_bn128_wg2_s3_p0_pp1_ov1_full
for layout in paged dense; do
  fam=$([ $layout = paged ] && echo hopper_paged || echo hopper_fwd)
  timeout 200 ncu --clock-control none -k regex:$fam --launch-skip 10 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
    -o /tmp/ncu-$layout -f $P/flashtune bench --dtype bf16 --head-dim 128 --batch 4 --seqlen-q 512 \
    --seqlen-k 4096 --heads-q 32 --heads-kv 8 --layout $layout --variant ${fam}_$tile --reps 20 \
    > "$OUT/ncu-$layout.log" 2>&1
  echo "ncu $layout: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  ncu -i /tmp/ncu-$layout.ncu-rep --print-summary none > "$OUT/details-$layout.txt" 2>&1
  ncu -i /tmp/ncu-$layout.ncu-rep --page source --csv --print-source sass > "$OUT/source-$layout.csv" 2>&1
  grep -E "Duration|Warp Cycles Per Issued|No Eligible|Stall" "$OUT/details-$layout.txt" | head -12 \
    | sed "s/^/$layout /" >> "$OUT/summary.txt"
done
python3 bench/ncu_source_blocks.py "$OUT/source-dense.csv" "$OUT/source-paged.csv" --top 20 > "$OUT/blocks.txt" 2>&1
cat "$OUT/summary.txt"
head -40 "$OUT/blocks.txt"
bash bench/pack_out.sh "$OUT" summary.txt blocks.txt details-paged.txt details-dense.txt gpu.txt > /dev/null
