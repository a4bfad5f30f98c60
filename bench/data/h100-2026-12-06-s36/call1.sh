#!/usr/bin/env bash
# Session 36, call 1. (1) Where prefill over 16-key pages loses against a dense cache: session
# 35's prepared call 9 (ncu of the same tile, bf16 d128 128x128 wg2 s3 full, B4 Nq 512 Nk 4096
# Hq 32 Hkv 8, hopper_paged on 16-key pages against hopper_fwd dense; bench/ncu_source_blocks.py
# compares the SASS pages). (2) The decode table of this build against SDPA flash, cuDNN and a
# streaming read in the same run: the issue's decode buckets tuned (decode only, budgeted),
# then bench/decode_bench.py through that database, B 1/8/64 x 2k-128k keys, dense and 16- /
# 256-key pages, CUDA-graph replays.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s36/call1.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s36
export FLASHTUNE_CLI=$P/flashtune FLASHTUNE_WORKER=$P/flashtune PYTHONUNBUFFERED=1
tile=bf16_d128_bm128_bn128_wg2_s3_p0_pp1_ov1_full
for layout in paged dense; do
  fam=$([ $layout = paged ] && echo hopper_paged || echo hopper_fwd)
  timeout 150 ncu --clock-control none -k regex:$fam --launch-skip 10 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
    -o /tmp/ncu-$layout -f $P/flashtune bench --dtype bf16 --head-dim 128 --batch 4 --seqlen-q 512 \
    --seqlen-k 4096 --heads-q 32 --heads-kv 8 --layout $layout --variant ${fam}_$tile --reps 20 \
    > "$OUT/ncu-$layout.log" 2>&1
  echo "ncu $layout: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  ncu -i /tmp/ncu-$layout.ncu-rep --print-summary none > "$OUT/details-$layout.txt" 2>&1
  ncu -i /tmp/ncu-$layout.ncu-rep --page source --csv --print-source sass > "$OUT/source-$layout.csv" 2>&1
  grep -E "Duration|Warp Cycles Per Issued|No Eligible|Issued Warp|Registers" "$OUT/details-$layout.txt" | head -12 \
    | sed "s/^/$layout /" >> "$OUT/summary.txt"
done
python3 bench/ncu_source_blocks.py "$OUT/source-dense.csv" "$OUT/source-paged.csv" --top 20 > "$OUT/blocks.txt" 2>&1
mkdir -p /tmp/s36 "$OUT/tuned"
timeout 120 $P/flashtune tune --db /tmp/s36/decode.db --decode only --dtypes bf16 --head-dims 128 \
  --strategy budgeted > "$OUT/tune.log" 2>&1
echo "decode tune: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tune.log")" >> "$OUT/summary.txt"
timeout 200 python3 bench/decode_bench.py $P/libflashtune.so --db /tmp/s36/decode.db --out "$OUT/tuned" \
  > "$OUT/decode.txt" 2>&1
echo "decode bench: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/tuned/decode_bench.json" > "$OUT/decode_table.md" 2>&1
cp /tmp/s36/decode.db "$OUT/decode.db"
cat "$OUT/summary.txt"
head -30 "$OUT/blocks.txt"
cat "$OUT/decode_table.md"
bash bench/pack_out.sh "$OUT" summary.txt blocks.txt details-paged.txt details-dense.txt decode_table.md gpu.txt > /dev/null
