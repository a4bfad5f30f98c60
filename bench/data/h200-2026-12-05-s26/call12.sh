#!/usr/bin/env bash
# Session 26, device calls 1 and 2 in one (device time was short after failed starts): each part
# under a time limit of its own, so the summaries always print.
#  a. session 25's decode experiment, s25x = main + decode-kv-before-q.patch against s25m = main:
#     the decode GPU tests on s25x (a process each), then bench/decode_tile_ab.sh (flashtune bench
#     of each build in turn, two passes) on the short-cache tiles.
#  b. hopper_fwd as a programmatic dependent, s25p = main + hopper-pdl.patch against s25m: the
#     forward, runtime and varlen GPU tests on s25p, then flashtune bench (queued launches) of each
#     build in turn on the tiles session 20's tune picked at d64 / d128 N 512-1k (two passes).
#  c. with what is left: compute-sanitizer memcheck of s25x's bf16 d128 decode class.
# Packs carried: .devcarry-s25m, .devcarry-s25x, .devcarry-s25p (bench/pack_for_gpu.sh of each build).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s26/call12.sh
set -uo pipefail
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
mkdir -p "$OUT/a" "$OUT/b"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
# a.
OUT=$OUT/a FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*' SUITE_S=100 JOBS=2 bash bench/gpu_suite.sh .devcarry-s25x \
  > "$OUT/a/suite-stdout.txt" 2>&1
echo "a. decode tests (s25x): exit $? at $(el) s; $(tail -1 "$OUT/a/suite-stdout.txt")" >> "$OUT/summary.txt"
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab timeout 160 bash bench/decode_tile_ab.sh "$OUT/a/bench.txt" .devcarry-s25m .devcarry-s25x \
  "bn32_rm1_w2_s2_cs4 bn32_rm1_w2_s4_cs2 bn64_rm1_w4_s3_cs2 bn64_rm2_w4_s2_cs1" "1 2048,1 8192,8 2048,64 2048" \
  > "$OUT/a/ab-summary.txt" 2>&1
echo "a. tile A/B: exit $? at $(el) s" >> "$OUT/summary.txt"
# b.
OUT=$OUT/b FILTER='ForwardGpu*:RuntimeGpu*:VarlenGpu/VarlenClasses.*' SUITE_S=150 JOBS=2 bash bench/gpu_suite.sh .devcarry-s25p \
  > "$OUT/b/suite-stdout.txt" 2>&1
echo "b. forward tests (s25p): exit $? at $(el) s; $(tail -1 "$OUT/b/suite-stdout.txt")" >> "$OUT/summary.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-pdl
shapes=(  # dtype head_dim causal B N H variant
  "bf16 64 0 32 512 32 hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full"
  "bf16 64 0 16 1024 32 hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full"
  "bf16 64 1 32 512 32 hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal"
  "bf16 64 1 16 1024 32 hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal"
  "bf16 64 0 32 512 32 hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full"
  "bf16 128 0 32 512 16 hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_full"
)
for pass in 1 2; do
  for build in s25m s25p; do
    C=.devcarry-$build
    for shape in "${shapes[@]}"; do
      (( $(el) > 540 )) && break 3
      set -- $shape
      echo "== pass $pass $build B$4 x $5 d$2c$3" >> "$OUT/b/bench.txt"  # bench_ab_summary.py's header
      LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune timeout 40 $C/flashtune bench --dtype $1 \
        --head-dim $2 --causal $3 --batch $4 --seqlen-q $5 --heads-q $6 --variant $7 --rounds 5 >> "$OUT/b/bench.txt" 2>&1
    done
  done
done
echo "b. bench A/B: at $(el) s" >> "$OUT/summary.txt"
python3 bench/bench_ab_summary.py "$OUT/b/bench.txt" s25m s25p > "$OUT/b/ab-summary.txt" 2>&1
# c.
left=$(( 585 - $(el) ))
if (( left > 30 )); then
  LD_LIBRARY_PATH=.devcarry-s25x:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc timeout $left \
    compute-sanitizer --tool memcheck --error-exitcode 3 .devcarry-s25x/flashtune_gpu_tests \
    --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/2' > "$OUT/a/memcheck.log" 2>&1
  echo "c. memcheck (s25x): exit $? at $(el) s: $(grep -E 'ERROR SUMMARY' "$OUT/a/memcheck.log" | tail -1)" >> "$OUT/summary.txt"
fi
cat "$OUT/gpu.txt" "$OUT/summary.txt"
echo "=== a. decode kv-before-q: s25m old, s25x new"; cat "$OUT/a/ab-summary.txt"
echo "=== b. hopper pdl: s25m old, s25p new"; cat "$OUT/b/ab-summary.txt"
