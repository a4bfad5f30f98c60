#!/usr/bin/env bash
# Session 30, call 7: the size-aware untuned decode tile (decode_fwd's DefaultFor, bn32 w2 s4 cs4
# for short K/V streams) on the head dims and dtypes call 6 did not time: d64 and d256, bf16 and
# f16, full and causal (4 query tokens), dense and paged. `flashtune bench` checks each variant's
# output against the float64 reference before timing it (status ok / wrong); the class default
# runs beside it. Then the decode GPU tests on the same pack.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s30/call7.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-c7
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
for d in 64 256; do
  for dt in bf16 f16; do
    for mode in "0 1" "1 4"; do
      set -- $mode
      for kv in dense:kv0 paged:kv1; do
        k=${kv#*:}
        c=full; [ $1 = 1 ] && c=causal
        timeout 60 $P/flashtune bench --dtype $dt --head-dim $d --causal $1 --batch 2 --seqlen-q $2 --seqlen-k 2000 \
          --heads-q 16 --heads-kv 4 --layout ${kv%:*} --rounds 1 \
          --variant decode_fwd_${dt}_d${d}_bn32_rm1_w2_s4_cs4_${k}_${c},decode_fwd_${dt}_d${d}_bn64_rm1_w4_s3_cs2_${k}_${c} \
          >> "$OUT/bench.txt" 2>&1
        echo "d$d $dt causal$1 Nq$2 ${kv%:*}: exit $?" >> "$OUT/summary.txt"
      done
    done
  done
done
echo "variants: $(grep -c ' ok ' "$OUT/bench.txt") ok, $(grep -cE ' (wrong|failed|fault|timeout)' "$OUT/bench.txt") not" >> "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:RuntimeGpu.MixedVarlen*' SUITE_S=90 JOBS=4 \
  bash bench/gpu_suite.sh "$P" > "$OUT/suite-stdout.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
grep -E "^decode_fwd" "$OUT/bench.txt" | awk '{print $1, $2, $3}'
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt bench.txt suite-stdout.txt > /dev/null
