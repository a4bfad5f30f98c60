#!/usr/bin/env bash
# Session 35, call 8: the session's final build (04a19eb) through the GPU tests its changes
# touch: CachePrefillGpu (hopper_paged on pages and on dense caches with lengths), DecodeGpu
# (paged decode's first-step table entries), VarlenGpu and RuntimeGpu (forward()'s launch-table
# entry for dense calls with lengths, mixed paged batches), and the Python GPU tests.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call8.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*:DecodeGpu*:VarlenGpu*:RuntimeGpu*' SUITE_S=200 JOBS=4 TEST_S=150 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
export FLASHTUNE_LIB=$P/libflashtune.so FLASHTUNE_CLI=$P/flashtune PYTHONPATH=$PWD/python
export FLASHTUNE_DB=/tmp/ft-s35-absent.db FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s35f LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64
timeout 150 python3 tests/python/layouts_gpu_test.py -v > "$OUT/layouts_gpu_test.log" 2>&1
echo "layouts_gpu_test: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/layouts_gpu_test.log")" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" summary.txt tests.txt layouts_gpu_test.log gpu.txt > /dev/null
