#!/usr/bin/env bash
# Session 21, call 5: decode_fwd's K/V tiles in swizzled rows (s21a: SwizzledRows in
# templates/ft_device.cuh, used by templates/decode_fwd.cuh at head dims that are multiples of
# 64) against the padded rows of the shipped build (s20c). GPU tests of decode (float64
# reference: every decode class, the varlen decode classes, the graph-replay test), then
# decode_bench.py on s21a with s20c as --baseline (the same dense inputs right after; CUDA-graph
# replays), both untuned (the default variant bn64 w4 s3 cs2), B 1/8/64 x keys 2k-128k.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-02-s21/call5.sh
set -uo pipefail
N=$PWD/.devcarry-s21a O=$PWD/.devcarry-s20c
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune FLASHTUNE_CLI=$N/flashtune
timeout 240 $N/flashtune_gpu_tests --gtest_filter='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*' > $OUT/gpu_tests.log 2>&1
echo "decode gpu tests: exit $?"; grep -E "PASSED|FAILED|tests ran" $OUT/gpu_tests.log | tail -4
timeout 240 python3 bench/decode_bench.py $N/libflashtune.so --out $OUT --layouts dense --baseline $O/libflashtune.so \
  > $OUT/decode_bench.log 2>&1; echo "decode_bench: exit $?"
tail -30 $OUT/decode_bench.log
