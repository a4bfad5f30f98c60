#!/usr/bin/env bash
# Session 35, call 1: a dense K/V cache with per-sequence lengths and more than 16 queries
# (flash_attn_with_kvcache's cache_seqlens: a prompt over a cached prefix) now runs on
# hopper_paged, reading the cache as one page a sequence (no table; maps {D, Hkv, Nk, B}),
# instead of fa2_fwd. (1) Correctness: CachePrefillGpu (per class, hopper_paged's tiles on the
# dense cases too: ragged lengths 0-1000 with NaN past every sequence's keys, a 1000-row cache
# that is not whole boxes) and RuntimeGpu; compute-sanitizer memcheck and racecheck of the bf16
# d128 causal class. (2) Speed, through the runtime, untuned, one run: bench/decode_bench.py at
# prefill sizes, dense / dense-lens / paged16 against the session's start build (the pack's
# base/: dense-lens on fa2_fwd there; its paged16 is the A/B of the table-or-batch branch the
# paged kernel gained), SDPA flash and cuDNN on the dense inputs. (3) forward()'s host time.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call1.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*:RuntimeGpu*' SUITE_S=200 JOBS=4 TEST_S=120 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
grep -h 'checked.*hopper_paged on a dense' "$OUT"/t/gpu_suite.log 2>/dev/null | sort | uniq >> "$OUT/summary.txt"
# Instance 3 is (bf16, 128, causal): dtype-major, then head dim, then the mask.
for tool in memcheck racecheck; do
  LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-$tool timeout 110 \
    compute-sanitizer --tool $tool --error-exitcode 3 $P/flashtune_gpu_tests \
    --gtest_filter='CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/3' > "$OUT/$tool.log" 2>&1
  echo "$tool CachePrefill/3: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" >> "$OUT/summary.txt"
done
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-b1 FLASHTUNE_DB=/tmp/ft-b1-absent.db
: > "$OUT/prefill.txt"
for shape in "128 4 512 4096" "128 1 2048 8192" "64 4 512 4096"; do
  set -- $shape
  timeout 100 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT" --head-dim $1 --batches $2 --seqlen-q $3 \
    --keys $4 --layouts dense,dense-lens,paged16 --baseline $P/base/libflashtune.so >> "$OUT/prefill.txt" 2>&1
  echo "prefill d$1 B$2 Nq$3 Nk$4: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
# (3) forward()'s host time on the real driver: a dense cache with lengths now has its own
# launch-table entry (no fallback search per call), against the plain warm call and a bare launch.
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-rb timeout 60 $P/flashtune_runtime_bench \
  --benchmark_filter='ForwardWarmHostOverhead|DenseCacheWithLengths|DriverLaunchBaseline' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true > "$OUT/host.txt" 2>&1
grep median "$OUT/host.txt" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
grep -h "^B[0-9]\|output check" "$OUT/prefill.txt" | sort -u
bash bench/pack_out.sh "$OUT" summary.txt tests.txt memcheck.log racecheck.log prefill.txt host.txt gpu.txt > /dev/null
