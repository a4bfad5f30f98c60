#!/usr/bin/env bash
# Session 54, call 2 (supersedes call 1 when both packs travel). On an H200: issue 13's forward
# grid on NEW (head dims 64, 128, 256; the forward kernels are main's). Elsewhere, hopper_bwd at
# head dim 96 on d128's tiles, two builds: NEW (branch bwd-d96-dqsplit: consumer 1's dQ product
# at N = 32) and OLD (branch bwd-d96: N = 64 over half zeros).
#  1. the backward GPU tests on NEW (HopperBwdGpu*: every mode at d64 / d96 / d128 on the edge
#     shapes, deterministic bit-identity; BackwardGpu.DefaultVariantsMatchTheReference: d96's
#     default is hopper_bwd); on OLD too when NEW fails;
#  2. compute-sanitizer memcheck, racecheck and synccheck of d96's default (causal, a small
#     ragged GQA shape) on the build that passed;
#  3. when NEW passed, the A/B of the two builds (bench/forward_tile_ab.sh, OPERATION=bwd: d96's
#     hopper_bwd default and fa2_bwd's, which d96 ran before, bf16 B4 N4096 H21, full and
#     causal, 2 passes of 3 rounds);
#  4. bench/backward_bench.py on the build that passed (untuned: d96 and d128 against SDPA flash
#     and cuDNN's backward, the same run).
# usage (GPU): NEW=.devcarry-d96split OLD=.devcarry-d96 OUT=$OUT [LIMIT=590] [AB_MIN_S=250] [AB_PASSES=2] bash bench/data/h100-2026-12-07-s54/call2.sh
source bench/device_call.sh 590
NEWP=$(cd "${NEW:?}" && pwd) OLDP=$(cd "${OLD:?}" && pwd)
h200_grid "$NEWP" 64,128,256
card_line
export FLASHTUNE_CACHE_DIR=/tmp/ftc-s54
S=$OUT/summary.txt
gpu_tests() {  # PACK LABEL
  LD_LIBRARY_PATH=$1:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$1/flashtune timeout 240 $1/flashtune_gpu_tests \
    --gtest_filter='HopperBwdGpu*:BackwardGpu.DefaultVariantsMatchTheReference' > "$OUT/tests-$2.txt" 2>&1
  local rc=$?
  echo "backward GPU tests on $2: exit $rc at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests-$2.txt" | tr '\n' ' ')" | tee -a $S
  return $rc
}
OK=
if gpu_tests "$NEWP" new; then OK=$NEWP; elif gpu_tests "$OLDP" old; then OK=$OLDP; fi
echo "passed: ${OK:-neither}" | tee -a $S
H96=hopper_bwd_bf16_d96_bn128_bm64_det0_dg0_dqw1
F96=fa2_bwd_bf16_d96_bc128_br64_w8_s2_det0_dqc32_dqv2_dqs1_lay1
if [ -n "$OK" ]; then
  export LD_LIBRARY_PATH=$OK:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$OK/flashtune
  for tool in memcheck racecheck synccheck; do
    timeout 90 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
      $OK/flashtune bench --operation bwd --head-dim 96 --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 333 --heads-q 4 \
      --heads-kv 2 --variant ${H96}_causal > "$OUT/san-$tool.txt" 2>&1
    echo "$tool d96 causal: exit $?; $(grep -E 'ERROR SUMMARY' "$OUT/san-$tool.txt" | tail -1)" | tee -a $S
  done
  if [ "$OK" = "$NEWP" ] && [ "$(left)" -gt "${AB_MIN_S:-250}" ]; then
    OPERATION=bwd PASSES=${AB_PASSES:-2} ROUNDS=3 bash bench/forward_tile_ab.sh "$OUT/ab.txt" "$OLDP" "$NEWP" \
      "bf16 96 0 4 4096 21 ${H96}_full,${F96}_full" "bf16 96 1 4 4096 21 ${H96}_causal,${F96}_causal" > "$OUT/ab-summary.txt" 2>&1
    echo "A/B old vs new: exit $?" >> $S
  fi
  PYTHONPATH=$PWD/python FLASHTUNE_LIB=$OK/libflashtune.so timeout -k 2 $(( $(left) - 10 )) python3 bench/backward_bench.py \
    --head-dims 96,128 --dtypes bf16 --reps 10 > "$OUT/bwd-bench.txt" 2>&1
  echo "backward_bench: exit $? at $(( $(date +%s) - t0 )) s" >> $S
fi
cat "$OUT/ab-summary.txt" 2>/dev/null
tail -16 "$OUT/bwd-bench.txt" 2>/dev/null
cat "$OUT/gpu.txt" $S
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests-new.txt san-memcheck.txt ab-summary.txt ab.txt bwd-bench.txt > /dev/null
