#!/usr/bin/env bash
# Session 35, call 4: paged decode loads its first step's table entries right after the wait,
# planned over the longest sequence, beside the length (decode_fwd.cuh's spec_pages), so the
# chain wait -> length -> table -> K/V loses a round trip where the true plan starts at the same
# step. (1) Correctness: DecodeGpu (12 classes: ragged 0-4097 lengths, shuffled 16- and 256-key
# pages, NaN past the keys: both the speculated and the reloaded paths) and RuntimeGpu (the mixed
# paged batch's decode part); memcheck of the bf16 d128 causal decode class. (2) A/B against the
# build before it (the pack's base/), decode_bench (graph replays; each layout's baseline right
# after it), B1 / B8 x 2k / 8k keys, dense / dense-lens (unchanged kernel: the control) / paged16 /
# paged256, twice.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call4.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='DecodeGpu*:RuntimeGpu*' SUITE_S=200 JOBS=4 TEST_S=150 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
# Instance 3 is (bf16, 128, causal).
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc4 timeout 120 \
  compute-sanitizer --tool memcheck --error-exitcode 3 $P/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/3' > "$OUT/memcheck.log" 2>&1
echo "memcheck DecodeGpu/3: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" >> "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-c4 FLASHTUNE_DB=/tmp/ft-c4-absent.db
: > "$OUT/decode.txt"
for pass in 1 2; do
  timeout 150 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT" --batches 1,8 --keys 2048,8192 \
    --layouts dense,dense-lens,paged16,paged256 --baseline $P/base/libflashtune.so >> "$OUT/decode.txt" 2>&1
  echo "decode_bench pass $pass: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/summary.txt"
grep -h "^B[0-9]" "$OUT/decode.txt" | sort -u | sed 's/ | flash.*| base dense/ | base dense/'
bash bench/pack_out.sh "$OUT" summary.txt tests.txt memcheck.log decode.txt gpu.txt > /dev/null
