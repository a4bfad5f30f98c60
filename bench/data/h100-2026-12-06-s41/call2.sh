#!/usr/bin/env bash
# Session 41, call 2 (prepared): hopper_fwd / hopper_paged at head dims 96, 160 and 224 on the
# next multiple of 64's tiles (hopper-padded-head-dims.patch; today those head dims run fa2_fwd /
# fa2_paged). 1) NEW's GPU tests: the sampled spaces of d96 / d160 / d224 (the default, now
# hopper_fwd, and the space's first and last), varlen and prefill over a cache at d96 (both
# dtypes, causal and not: the varlen O store bounded to 96 columns, rows past total_q a canary),
# and hopper_fwd's switched-off tiles at d64 / d128 / d256 (the template changed for every head
# dim). 2) compute-sanitizer memcheck and racecheck on the d96 sample. 3) What a d96 user gets
# untuned (Phi-3-mini-shaped heads: bf16, hidden 2016 = 21 x 96, B*N = 16k, N 512-16k, causal and
# not): bench/perf_report.py through NEW's runtime and through OLD's, each against SDPA flash and
# cuDNN in the same run, 3 rotated rounds.
# NEW is a build of main with bench/data/h100-2026-12-06-s41/hopper-padded-head-dims.patch
# applied (`git apply` it, `ninja -C build`, `bash bench/pack_for_gpu.sh build .devcarry-B`, then
# revert); OLD is main's build. ~400 s, estimated.
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s41/call2.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s41c2 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$N/flashtune FLASHTUNE_WORKER=$N/flashtune
step() { echo "$1: exit $2 at $(( $(date +%s) - t0 )) s${3:+; $3}" >> "$OUT/summary.txt"; }
# SampledSpace: head dims 32, 96, 160, 192, 224, 256 x (full, causal); the classes of varlen and
# cache prefill: (bf16, f16) x (64, 96, 128, 256) x (full, causal).
S=ForwardGpu/SampledSpace.SampleMatchesTheReference V=VarlenGpu/VarlenClasses.VariantsMatchTheReference
C=CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference
timeout 300 $N/flashtune_gpu_tests --gtest_filter="$S/2:$S/3:$S/4:$S/5:$S/8:$S/9:$V/2:$V/3:$V/10:$V/11:$C/2:$C/3:$C/10:$C/11:ForwardGpu.HopperSwitchesOff*" \
  > "$OUT/tests.txt" 2>&1
step "GPU tests" $? "$(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')"
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 $N/flashtune_gpu_tests --gtest_filter="$S/2" \
    > "$OUT/sanitizer-$tool.txt" 2>&1
  step "compute-sanitizer $tool" $? "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1)"
done
for side in new old; do
  P=$N; [ $side = old ] && P=$O
  mkdir -p "$OUT/$side"
  LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 timeout 200 python3 bench/perf_report.py --lib $P/libflashtune.so \
    --db "$OUT/$side/none.db" --out "$OUT/$side" --head-dims 96 --dtypes bf16 --seqlens 512,2048,8192,16384 \
    --no-extra --rounds 3 > "$OUT/$side/perf.txt" 2>&1
  step "d96 untuned, $side" $?
done
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED" "$OUT/tests.txt" | head
for side in new old; do echo "== $side"; grep -E "^(bf16|dtype)" "$OUT/$side/perf.txt" | head -12; done
