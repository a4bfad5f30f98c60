#!/usr/bin/env bash
# Session 35, call 2: vLLM's mixed batch over a paged cache (packed queries, decode sequences
# first, varlen.decode_seqs) now runs its decode sequences on decode_fwd's paged kernel and the
# rest on the prefill kernel over pages (two launches), as mixed varlen batches did. (1)
# Correctness: RuntimeGpu (PagedCallWithPackedQueriesMatchesTheReference: a mixed batch of three
# decode sequences and 200 / 40-token chunks on shuffled 16-key pages, with decode_seqs and
# without, float64 reference, lse too), tests/python/layouts_gpu_test.py (the same through
# attention_varlen, check_tables on), compute-sanitizer memcheck of the runtime test. (2) Speed:
# bench/varlen_bench.py --mixed-only: 30 decode rows over 8192 keys + 2 prefills of 4096 tokens,
# varlen and on 16-key pages, each routed and unrouted, interleaved rounds.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call2.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='RuntimeGpu*:VarlenGpu*' SUITE_S=200 JOBS=4 TEST_S=150 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
export FLASHTUNE_LIB=$P/libflashtune.so FLASHTUNE_CLI=$P/flashtune PYTHONPATH=$PWD/python
export FLASHTUNE_DB=/tmp/ft-s35-absent.db FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s35 LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64
timeout 200 python3 tests/python/layouts_gpu_test.py -v > "$OUT/layouts_gpu_test.log" 2>&1
echo "layouts_gpu_test: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/layouts_gpu_test.log")" >> "$OUT/summary.txt"
grep -E '^(FAIL|ERROR):|AssertionError' "$OUT/layouts_gpu_test.log" | head -20 >> "$OUT/summary.txt"
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 \
  $P/flashtune_gpu_tests --gtest_filter='RuntimeGpu.PagedCallWithPackedQueriesMatchesTheReference' > "$OUT/memcheck.log" 2>&1
echo "memcheck paged packed/mixed: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" >> "$OUT/summary.txt"
timeout 200 python3 bench/varlen_bench.py $P/libflashtune.so --out "$OUT" --mixed-only > "$OUT/varlen.txt" 2>&1
echo "varlen_bench --mixed-only: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
grep -E "^(full|causal) |output check" "$OUT/varlen.txt" | sort -u
bash bench/pack_out.sh "$OUT" summary.txt tests.txt layouts_gpu_test.log memcheck.log varlen.txt gpu.txt > /dev/null
