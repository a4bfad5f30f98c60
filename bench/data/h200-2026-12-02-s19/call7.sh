#!/usr/bin/env bash
# Session 19, call 7: the shipped template (main after the inter-tile epilogue's removal; SASS
# identical to call 6's .devcarry-s19d) through the GPU tests that cover p2: ForwardGpu.
# HopperSwitchesOffMatchTheReference and the varlen classes at d64 / d128 (float64 reference).
# usage (GPU, carry .devcarry-s19e): OUT=$OUT bash bench/data/h200-2026-12-02-s19/call7.sh
set -uo pipefail
C=$PWD/.devcarry-s19e
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
timeout -k 1 100 $C/flashtune_gpu_tests --gtest_filter='ForwardGpu.HopperSwitchesOffMatchTheReference:VarlenGpu/VarlenClasses.VariantsMatchTheReference/0:VarlenGpu/VarlenClasses.VariantsMatchTheReference/2:VarlenGpu/VarlenClasses.VariantsMatchTheReference/3:VarlenGpu/VarlenClasses.VariantsMatchTheReference/9' > $OUT/tests.log 2>&1
echo "tests: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/tests.log | tr '\n' ' ')"
grep -E '^\[ +(OK|FAILED) ' $OUT/tests.log
