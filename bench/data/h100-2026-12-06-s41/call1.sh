#!/usr/bin/env bash
# Session 41, call 1: decode_fwd's warps merged in one pass (each warp writes its own fp32 O rows,
# one barrier, the epilogue adds them) where those rows fit in the pipeline's buffers, against
# the turns (a barrier a warp). 1) NEW's decode GPU tests (every class, varlen decode, the mixed batch).
# 2) compute-sanitizer racecheck and memcheck on bf16 d64 full / causal and d128 full.
# 3) bench/decode_bench.py untuned, NEW with OLD as --baseline, same run as SDPA: d128 B 1/8/64 x
# 2k/8k/32k/128k dense and 16- / 256-key pages, 3 rotated rounds; d64 B 1/8 x 2k/8k dense. Tests
# and racecheck first, memcheck last (~300 s in all, estimated).
# NEW is a build of main with bench/data/h100-2026-12-06-s41/decode-one-pass-merge.patch applied
# (`git apply` it, `ninja -C build`, `bash bench/pack_for_gpu.sh build .devcarry-B`, then revert);
# OLD is main's build.
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s41/call1.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s41c1 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$N/flashtune FLASHTUNE_WORKER=$N/flashtune
# compute-sanitizer TOOL on bf16 d64 full / causal and d128 full decode.
sanitize() {
  timeout 60 compute-sanitizer --tool "$1" --error-exitcode 3 $N/flashtune_gpu_tests \
    --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/0:DecodeGpu/DecodeClasses.VariantsMatchTheReference/1:DecodeGpu/DecodeClasses.VariantsMatchTheReference/2' \
    > "$OUT/sanitizer-$1.txt" 2>&1
  echo "compute-sanitizer $1: exit $? at $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$1.txt" | tail -1)" >> "$OUT/summary.txt"
}
timeout 120 $N/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu/DecodeClasses.*:VarlenGpu/VarlenDecodeClasses*:RuntimeGpu.MixedVarlen*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
sanitize racecheck
mkdir -p "$OUT/d128" "$OUT/d64"
timeout 300 python3 bench/decode_bench.py $N/libflashtune.so --baseline $O/libflashtune.so --out "$OUT/d128" \
  --head-dim 128 --batches 1,8,64 --keys 2048,8192,32768,131072 --layouts dense,paged16,paged256 --rounds 3 \
  > "$OUT/d128/decode.txt" 2>&1
echo "d128 A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/d128/decode_bench.json" > "$OUT/d128-table.md" 2>&1
timeout 60 python3 bench/decode_bench.py $N/libflashtune.so --baseline $O/libflashtune.so --out "$OUT/d64" \
  --head-dim 64 --batches 1,8 --keys 2048,8192 --layouts dense --rounds 3 > "$OUT/d64/decode.txt" 2>&1
echo "d64 A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/d64/decode_bench.json" > "$OUT/d64-table.md" 2>&1
sanitize memcheck
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED" "$OUT/tests.txt" | head; cat "$OUT/d128-table.md" "$OUT/d64-table.md"
