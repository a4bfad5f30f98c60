#!/usr/bin/env bash
# The new GPU tests of session 12 on the H200: hopper_fwd's switches off, the warm forward()
# allocation count and pointer-following, and the d64 bf16 causal full space (index 1) (persistent tiles
# walking several tiles: the new 384-tile shape).
D=$(cd "$1" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
cd "$D"
timeout ${T:-50} ./flashtune_gpu_tests --gtest_filter='ForwardGpu.HopperSwitchesOff*:RuntimeGpu.WarmForward*:ForwardGpu/FullSpace.EveryVariantMatchesTheReference/1' 2>&1 | tee "$OUT/gpu_tests.log" | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED|checked) |Failure|error|Expected|Which is" | head -40
echo "exit ${PIPESTATUS[0]}"
