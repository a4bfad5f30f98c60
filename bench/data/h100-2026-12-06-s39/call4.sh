#!/usr/bin/env bash
# Session 39, call 4: decode_fwd's paged copies (16-key pages and up) without the address select
# (the address is always a row of a page in the pool; the size alone says what is read), on top
# of call 2's changes (commit 8c44f20, OLD). 1) NEW's decode GPU tests (float64 reference).
# 2) compute-sanitizer memcheck and racecheck on NEW's bf16 d128 decode variants (dense and paged
# twins). 3) bench/decode_tile_ab.sh OLD against NEW, paged, the tuned winners' tiles. 4) If
# time is left, the decode table on NEW (session 38's call6.sh: decode tune, 7 rotated rounds).
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s39/call4.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s39c4 LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune
timeout 150 $N/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*:RuntimeGpu.MixedVarlen*:TuneGpu.PagedDecode*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 $N/flashtune_gpu_tests \
    --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/2' > "$OUT/sanitizer-$tool.txt" 2>&1
  echo "compute-sanitizer $tool: exit $? at $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1)" >> "$OUT/summary.txt"
done
unset LD_LIBRARY_PATH FLASHTUNE_WORKER
bash bench/decode_tile_ab.sh "$OUT/ab.log" "$O" "$N" "bn32_rm1_w2_s2_cs2 bn64_rm1_w4_s3_cs2 bn64_rm1_w4_s4_cs2 bn128_rm1_w4_s2_cs2" \
  "1 2048,8 2048,8 8192,64 2048" "paged" > "$OUT/ab-summary.txt" 2>&1
echo "A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
if (( $(date +%s) - t0 < 330 )); then
  mkdir -p "$OUT/table"
  PACK=$N OUT=$OUT/table bash bench/data/h100-2026-12-06-s38/call6.sh > /dev/null 2>&1
  echo "decode table: at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
fi
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED" "$OUT/tests.txt" | head; cat "$OUT/ab-summary.txt"
[ -f "$OUT/table/decode_table.md" ] && cat "$OUT/table/summary.txt" "$OUT/table/decode_table.md"
