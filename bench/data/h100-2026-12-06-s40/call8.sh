#!/usr/bin/env bash
# Session 40, call 8. NEW: the committed d64 decode rule, and the tuner's timed inputs past 3x the
# L2 for small problems too (TimedInputSets: up to 128 sets; OLD, main before the session, took
# at most 8, so d64 decode at B1 x 2k was timed from the L2).
# (Run in the order 3), 1), 2): the A/B first, in case the device time runs out.)
# 1) NEW's decode GPU tests (every decode class, now with the long paged call's untuned tile;
#    varlen decode; the mixed varlen batch; the paged decode tune: the worker with many sets).
# 2) compute-sanitizer memcheck, racecheck and synccheck on bf16 d64 decode, full and causal.
# 3) The d64 decode buckets (bf16, dense, B1 / B8 x 2k / 4k / 8k) tuned by OLD and by NEW, then
#    bench/decode_bench.py: NEW through its database against OLD through its own (--baseline
#    LIB@DB), same run, 3 rotated rounds: does timing from DRAM change what the tuner picks?
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s40/call8.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s40c8 FLASHTUNE_WORKER=$N/flashtune
for side in old new; do
  P=$O; [ $side = new ] && P=$N
  LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune timeout 120 $P/flashtune tune \
    --db "$OUT/$side.db" --decode only --dtypes bf16 --head-dims 64 --hidden 2048 --heads-kv 8 --causal 0 \
    --seqlens-k 2048,4096,8192 --decode-batches 1,8 --decode-layouts dense > "$OUT/tune-$side.log" 2>&1
  echo "tune $side: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
mkdir -p "$OUT/d64"
PYTHONUNBUFFERED=1 timeout 150 python3 bench/decode_bench.py $N/libflashtune.so --db "$OUT/new.db" \
  --baseline "$O/libflashtune.so@$OUT/old.db" --out "$OUT/d64" --head-dim 64 --batches 1,8 --keys 2048,4096,8192 \
  --layouts dense --rounds 3 > "$OUT/d64/decode.txt" 2>&1
echo "d64 tuned A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 bench/decode_table.py "$OUT/d64/decode_bench.json" > "$OUT/d64-table.md" 2>&1
timeout 200 $N/flashtune_gpu_tests \
  --gtest_filter='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*:RuntimeGpu.MixedVarlen*:TuneGpu.PagedDecode*' > "$OUT/tests.txt" 2>&1
echo "decode GPU tests: exit $? at $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $N/flashtune_gpu_tests \
    --gtest_filter='DecodeGpu/DecodeClasses.VariantsMatchTheReference/0:DecodeGpu/DecodeClasses.VariantsMatchTheReference/1' \
    > "$OUT/sanitizer-$tool.txt" 2>&1
  echo "compute-sanitizer $tool: exit $? at $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1)" >> "$OUT/summary.txt"
done
for side in old new; do echo "== $side"; $N/flashtune db list --db "$OUT/$side.db" 2>&1 | grep -i decode | cut -c1-150 | head -8; done > "$OUT/winners.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED|Failure" "$OUT/tests.txt" | head; cat "$OUT/d64-table.md" "$OUT/winners.txt"
