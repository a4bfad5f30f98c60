#!/usr/bin/env bash
# Session 36, call 5: the shipped build (hopper_paged's V from a second producer warp). (1) The GPU
# tests it touches: CachePrefillGpu and RuntimeGpu, and tests/python/layouts_gpu_test.py (the
# Python K/V-cache and varlen calls). (2) What a user sees, through the runtime, untuned, against
# the session's start build in the same run: bench/decode_bench.py at prefill sizes, a dense
# cache, a dense cache with lengths and 16-key pages (full; Hq 32 Hkv 8).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s36/call5.sh
#   (PACK/base/libflashtune.so: the session's start build)
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*:RuntimeGpu*' SUITE_S=150 JOBS=4 TEST_S=120 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
FLASHTUNE_LIB=$P/libflashtune.so FLASHTUNE_CLI=$P/flashtune PYTHONPATH=$PWD/python LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 \
  FLASHTUNE_CACHE_DIR=/tmp/ft-cache-py timeout 150 python3 tests/python/layouts_gpu_test.py -v > "$OUT/layouts_gpu_test.log" 2>&1
echo "layouts_gpu_test: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/layouts_gpu_test.log")" >> "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-b5 FLASHTUNE_DB=/tmp/ft-b5-absent.db
: > "$OUT/prefill.txt"
for shape in "128 4 512 4096" "128 1 2048 8192" "64 4 512 4096" "256 4 512 4096"; do
  set -- $shape
  timeout 100 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT" --head-dim $1 --batches $2 --seqlen-q $3 \
    --keys $4 --layouts dense,dense-lens,paged16 --baseline $P/base/libflashtune.so >> "$OUT/prefill.txt" 2>&1
  echo "prefill d$1 B$2 Nq$3 Nk$4: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
cat "$OUT/summary.txt"
grep -h "^B[0-9]\|output check" "$OUT/prefill.txt" | sort -u | sed 's/ err [0-9.e-]*//g' | cut -c1-330
bash bench/pack_out.sh "$OUT" summary.txt tests.txt layouts_gpu_test.log prefill.txt gpu.txt > /dev/null
