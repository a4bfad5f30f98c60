#!/usr/bin/env bash
# Session 33, call 5: the build with persistent causal rounds rotated by default
# (FT_HOPPER_CAUSAL_ROTATE 1, after call 4's A/B) and the Python calls' faster checks.
# (1) the forward / varlen / runtime GPU tests (s31/call8.sh: ForwardGpu's FullSpace runs every
# searched hopper_fwd variant, now rotated; memcheck of the bf16 d64 varlen class); (2) the
# Python varlen / K/V-cache GPU tests and bench/python_op.py (s32/call1.sh), its layouts section
# now with a part-by-part host time of attention_with_kvcache.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-05-s33/call5.sh
set -uo pipefail
mkdir -p "$OUT/tests" "$OUT/python"
OUT=$OUT/tests bash bench/data/h200-2026-12-05-s31/call8.sh > /dev/null 2>&1
OUT=$OUT/python bash bench/data/h200-2026-12-05-s32/call1.sh > /dev/null 2>&1
grep -h 'part .* us/call' "$OUT/python/python_op.log" >> "$OUT/python/summary.txt" 2>/dev/null
cat "$OUT/tests/gpu.txt" "$OUT/tests/summary.txt" "$OUT/python/summary.txt"
bash bench/pack_out.sh "$OUT" tests/summary.txt python/layouts_gpu_test.log python/python_op.log > /dev/null
