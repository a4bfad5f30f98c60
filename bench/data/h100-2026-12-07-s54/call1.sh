#!/usr/bin/env bash
# Session 54, call 1. On an H200: issue 13's forward grid on MAIN (head dims 64, 128, 256; the
# forward kernels are main's). Elsewhere, hopper_bwd at head dim 96 on d128's tiles (branch
# bwd-d96): the backward GPU tests (HopperBwdGpu*: every mode at d64 / d96 / d128 on the edge
# shapes, deterministic bit-identity; BackwardGpu.DefaultVariantsMatchTheReference: d96's default
# is now hopper_bwd), compute-sanitizer memcheck, racecheck and synccheck of d96's default on a
# small ragged GQA shape, an A/B of d96's default against fa2_bwd's (what d96 ran before), bf16 B4
# N4096 H21, full and causal, 3 rounds, and bench/backward_bench.py (untuned: d96 and d128
# against SDPA flash and cuDNN's backward, the same run).
# usage (GPU): MAIN=.devcarry-B OUT=$OUT [LIMIT=590] bash bench/data/h100-2026-12-07-s54/call1.sh
source bench/device_call.sh 590
N=$(cd "${MAIN:?}" && pwd)
h200_grid "$N" 64,128,256
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-s54 FLASHTUNE_WORKER=$N/flashtune
S=$OUT/summary.txt
timeout 240 $N/flashtune_gpu_tests --gtest_filter='HopperBwdGpu*:BackwardGpu.DefaultVariantsMatchTheReference' \
  > "$OUT/tests.txt" 2>&1
echo "backward GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a $S
H96=hopper_bwd_bf16_d96_bn128_bm64_det0_dg0_dqw1
F96=fa2_bwd_bf16_d96_bc128_br64_w8_s2_det0_dqc32_dqv2_dqs1_lay1
for tool in memcheck racecheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
    $N/flashtune bench --operation bwd --head-dim 96 --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 333 --heads-q 4 \
    --heads-kv 2 --variant ${H96}_causal > "$OUT/san-$tool.txt" 2>&1
  echo "$tool d96 causal: exit $?; $(grep -E 'ERROR SUMMARY' "$OUT/san-$tool.txt" | tail -1)" | tee -a $S
done
for m in full causal; do
  [ "$(left)" -gt 200 ] || break
  timeout 60 $N/flashtune bench --operation bwd --head-dim 96 --causal $([ $m = causal ] && echo 1 || echo 0) --batch 4 \
    --seqlen-q 4096 --heads-q 21 --rounds 3 --variant ${H96}_$m,${F96}_$m > "$OUT/ab-$m.txt" 2>&1
  echo "A/B d96 $m: exit $?" >> $S
done
PYTHONPATH=$PWD/python FLASHTUNE_LIB=$N/libflashtune.so timeout -k 2 $(( $(left) - 10 )) python3 bench/backward_bench.py \
  --head-dims 96,128 --dtypes bf16 --reps 10 > "$OUT/bwd-bench.txt" 2>&1
echo "backward_bench: exit $? at $(( $(date +%s) - t0 )) s" >> $S
cat "$OUT"/ab-*.txt 2>/dev/null | grep -E "^(hopper|fa2)_bwd|variant" | head -12
tail -16 "$OUT/bwd-bench.txt"
cat "$OUT/gpu.txt" $S
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests.txt san-memcheck.txt ab-full.txt ab-causal.txt bwd-bench.txt > /dev/null
