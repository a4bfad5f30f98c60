#!/usr/bin/env bash
# Session 39, call 2: two decode_fwd key-loop changes. MID: empty row halves skipped (a GQA group
# of <= 8 heads at one query token fills only the first 8 rows of a 16-row tile; the other half's
# softmax and O rescale are skipped by a warp-uniform branch). NEW: MID plus dense steps whose keys
# all exist issue their K/V copies without the per-row test and select.
# 1) NEW's decode GPU tests (float64 reference). 2) bench/decode_tile_ab.sh of the build before
# (OLD) against NEW: the tuned winners' tiles at B1 x 2k, B8 x 2k, B8 x 8k, B64 x 2k, B64 x 8k,
# dense and 16-key pages, 2 passes of 3 rounds. 3) MID against NEW, dense, three shapes.
# 4) If time is left, session 38's call 8 sweep on NEW.
# usage (GPU): OLD=.devcarry-A MID=.devcarry-B NEW=.devcarry-C OUT=$OUT bash bench/data/h100-2026-12-06-s39/call2.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) M=$(cd "${MID:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s39c2
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune timeout 200 $N/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*:RuntimeGpu.MixedVarlen*:TuneGpu.PagedDecode*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
bash bench/decode_tile_ab.sh "$OUT/ab.log" "$O" "$N" "bn32_rm1_w2_s4_cs4 bn64_rm1_w4_s4_cs1 bn64_rm1_w4_s3_cs2 bn128_rm1_w4_s2_cs2" \
  "1 2048,8 2048,8 8192,64 2048,64 8192" "dense paged" > "$OUT/ab-summary.txt" 2>&1
echo "A/B old-new: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
PASSES=1 bash bench/decode_tile_ab.sh "$OUT/ab2.log" "$M" "$N" "bn32_rm1_w2_s4_cs4 bn64_rm1_w4_s3_cs2 bn128_rm1_w4_s2_cs2" \
  "1 2048,8 2048,64 2048" "dense" > "$OUT/ab2-summary.txt" 2>&1
echo "A/B mid-new: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
if (( $(date +%s) - t0 < 420 )); then
  mkdir -p "$OUT/sweep"
  PACK=$N OUT=$OUT/sweep bash bench/data/h100-2026-12-06-s38/call8.sh > /dev/null 2>&1
  echo "call 8 sweep (new build) at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
fi
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "FAILED|^\[  FAILED" "$OUT/tests.txt" | head; cat "$OUT/ab-summary.txt" "$OUT/ab2-summary.txt"
for f in "$OUT"/sweep/sweep-*.txt; do [ -f "$f" ] && { echo "$f"; grep "decode_fwd" "$f" | sort -k3 -n | cut -c1-100 | head -5; }; done
