#!/usr/bin/env bash
# Session 22, call 1: decode_fwd's cluster variants (cl 4/8/16: the splits merged through
# distributed shared memory, no combine kernel). The decode GPU tests (float64 reference; every
# decode class and varlen decode class now carries cluster variants on sm_90), memcheck on a
# varlen decode class with a cluster of 8, a sweep of cluster against plain variants through
# `flashtune bench` (checked, interleaved rounds) on the short shapes, then a decode-only tune
# (budgeted, the default strategy for decode buckets) and the decode table through it.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s22/call1.sh
set -uo pipefail
V=decode_fwd_bf16_d128_; F=_full
export SWEEP_LIST=${V}bn64_rm1_w4_s3_cs2_cl0$F,${V}bn32_rm1_w2_s4_cs4_cl0$F,${V}bn64_rm1_w4_s3_cs2_cl4$F,${V}bn64_rm1_w4_s3_cs2_cl8$F,${V}bn64_rm1_w4_s3_cs2_cl16$F,${V}bn32_rm1_w2_s4_cs2_cl8$F,${V}bn32_rm1_w2_s4_cs2_cl16$F,${V}bn64_rm1_w4_s2_cs2_cl16$F
export SWEEP_SHAPES="1 2048,1 8192,1 32768,8 2048,8 8192,64 2048"
STEPS="tests sanitize sweep tune tuned" TESTS_S=170 SANITIZE_S=45 SWEEP_S=22 TUNE_S=130 TUNED_S=50 \
  TEST_FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*' \
  bash bench/decode_round.sh .devcarry-s22a
