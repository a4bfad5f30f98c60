#!/usr/bin/env bash
# Session 55, call 1. On an H200: issue 13's forward grid on MAIN (head dims 64, 128, 256).
# Elsewhere, main with hopper_bwd at head dim 96 merged (branch bwd-d96; session 55's A/B on an
# H100 rejected bwd-d96-dqsplit): the backward GPU tests (HopperBwdGpu*, BackwardGpu*, the tuner's: d64 /
# d96 / d128 every mode on the edge shapes, deterministic bit-identity, fa2_bwd's classes, the
# tuner's backward candidates), compute-sanitizer memcheck and synccheck of d96's three modes
# (det 0 / dqw 1, det 0 / dqw 0, det 1) on a small ragged GQA shape, then
# bench/backward_bench.py (untuned, bf16 and f16, d96 and d128, against SDPA flash and cuDNN's
# backward in the same run).
# usage (GPU): MAIN=.devcarry-B OUT=$OUT [LIMIT=300] bash bench/data/h100-2026-12-07-s55/call1.sh
source bench/device_call.sh 300
N=$(cd "${MAIN:?}" && pwd)
h200_grid "$N" 64,128,256
card_line
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-s55 FLASHTUNE_WORKER=$N/flashtune
S=$OUT/summary.txt
timeout 150 $N/flashtune_gpu_tests --gtest_filter='HopperBwdGpu*:BackwardGpu.DefaultVariantsMatchTheReference:BackwardGpuDeterministic*:TuneGpu.BackwardCandidatesAreVerifiedAndTimed' > "$OUT/tests.txt" 2>&1
echo "backward GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" | tee -a $S
for mode in det0_dg0_dqw1 det0_dg0_dqw0 det1_dg0_dqw1; do
  for tool in memcheck synccheck; do
    timeout 40 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
      $N/flashtune bench --operation bwd --head-dim 96 --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 333 --heads-q 4 \
      --heads-kv 2 --variant hopper_bwd_bf16_d96_bn128_bm64_${mode}_causal > "$OUT/san-$tool-$mode.txt" 2>&1
    echo "$tool d96 $mode causal: exit $?; $(grep -E 'ERROR SUMMARY' "$OUT/san-$tool-$mode.txt" | tail -1)" | tee -a $S
  done
done
PYTHONPATH=$PWD/python FLASHTUNE_LIB=$N/libflashtune.so timeout -k 2 $(( $(left) - 10 )) python3 bench/backward_bench.py \
  --head-dims 96,128 --dtypes bf16,f16 --reps 10 > "$OUT/bwd-bench.txt" 2>&1
echo "backward_bench: exit $? at $(( $(date +%s) - t0 )) s" >> $S
tail -30 "$OUT/bwd-bench.txt"
cat "$OUT/gpu.txt" $S
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests.txt bwd-bench.txt > /dev/null
