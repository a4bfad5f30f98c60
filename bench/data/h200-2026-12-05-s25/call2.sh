#!/usr/bin/env bash
# Prepared in session 25 (no device was lent): hopper-pdl.patch (s25p: hopper_fwd launched as a
# programmatic dependent of the kernel before it: griddepcontrol.wait before any global access,
# then launch_dependents; the pack sets the launch attribute on cc 9) against s25m (main). Why:
# queued back-to-back calls of the 64-row d64 kernels ran 5-10% slower than one launch (session
# 20, call 6: 191 against 174 us for cuDNN at bf16 full N 512, 1-4% behind in one launch), and
# the boundary between calls (launch latency, the next call's block scheduling and prologue) is
# the part of that a dependent launch can hide. First the forward GPU tests on s25p (hopper classes
# against the float64 reference, the runtime's tests: queued calls that read what the previous
# call wrote), then `flashtune bench` (queued launches, checked) of each build in turn on the
# tiles session 20's tune picked at d64 / d128 N 512-1k, two passes of five rounds.
# Packs: as call1.sh, with hopper-pdl.patch applied in the s25p worktree.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s25/call2.sh
set -uo pipefail
W=${W:-/tmp/s25call2}
mkdir -p $W
OUT=$W FILTER='ForwardGpu*:RuntimeGpu*:VarlenGpu/VarlenClasses.*' SUITE_S=200 JOBS=2 bash bench/gpu_suite.sh .devcarry-s25p \
  > $W/suite-stdout.txt 2>&1
echo "suite exit $?"; tail -2 $W/suite-stdout.txt
# Not run as such: session 26 ran this A/B inside bench/data/h200-2026-12-05-s26/call12.sh (an
# H100; rejected, docs/perf-notes.md "hopper_fwd as a programmatic dependent").
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-pdl
bash bench/forward_tile_ab.sh $W/bench.txt .devcarry-s25m .devcarry-s25p \
  "bf16 64 0 32 512 32 hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full" \
  "bf16 64 0 16 1024 32 hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full" \
  "bf16 64 1 32 512 32 hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal" \
  "bf16 64 1 16 1024 32 hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov0_causal" \
  "bf16 64 0 32 512 32 hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full" \
  "bf16 128 0 32 512 16 hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_full" \
  "bf16 128 1 16 1024 16 hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal" > $W/ab-summary.txt
cp $W/suite-stdout.txt $W/bench.txt $W/ab-summary.txt $OUT/ 2>/dev/null
cat $W/ab-summary.txt
