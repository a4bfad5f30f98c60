#!/usr/bin/env bash
# Session 33, call 6: everything but the grid on one warm machine. (1) call5.sh: the forward /
# varlen / runtime GPU tests (now also a paged call with up to 300 packed queries, which runs on
# fa2_paged) and memcheck of the bf16 d64 varlen class, then the Python calls' GPU tests and host
# time; (2) the cache-prefill GPU tests (CachePrefillGpu: fa2_paged on pages of 1, 16 and 256
# keys, fa2_fwd on a dense cache with lengths; 17-300 queries over 0-4097 keys) and memcheck of
# its bf16 d128 causal class; (3) prefill over a paged cache against the same tile on dense K/V
# (the cost of reading through the page table), the decode kernel that served it before, and
# hopper_fwd's default: `flashtune bench`, 3 rounds, 16-key shuffled pages.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-05-s33/call6.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
mkdir -p "$OUT/c5" "$OUT/t"
PACK=$P OUT=$OUT/c5 bash bench/data/h100-2026-12-05-s33/call5.sh > "$OUT/c5-stdout.txt" 2>&1
echo "call5: exit $? at $(( $(date +%s) - t0 )) s" > "$OUT/summary.txt"
cat "$OUT/c5-stdout.txt" >> "$OUT/summary.txt"
OUT=$OUT/t FILTER='CachePrefillGpu*' SUITE_S=200 JOBS=4 TEST_S=180 bash bench/gpu_suite.sh "$P" > "$OUT/prefill-tests.txt" 2>&1
echo "cache-prefill tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/prefill-tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A4 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
# Instance 3 is (bf16, 128, causal): dtype-major, then head dim, then the mask.
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-mc6 timeout 100 \
  compute-sanitizer --tool memcheck --error-exitcode 3 $P/flashtune_gpu_tests \
  --gtest_filter='CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/3' > "$OUT/memcheck-prefill.log" 2>&1
echo "memcheck CachePrefill/3: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/memcheck-prefill.log" | tail -1)" >> "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-b6 FLASHTUNE_DB=/tmp/ft-b6-absent.db
: > "$OUT/bench.txt"
for shape in "4 512 4096" "1 2048 8192"; do
  set -- $shape
  for mask in full causal; do
    c=$([ $mask = causal ] && echo 1 || echo 0)
    args="--dtype bf16 --head-dim 128 --batch $1 --seqlen-q $2 --seqlen-k $3 --heads-q 32 --heads-kv 8 --causal $c --rounds 3 --reps 30"
    echo "== B$1 Nq$2 Nk$3 $mask: paged (16-key shuffled pages)" >> "$OUT/bench.txt"
    timeout 120 $P/flashtune bench $args --layout paged \
      --variant fa2_paged_bf16_d128_br128_bc64_w4_s2_$mask,fa2_paged_bf16_d128_br128_bc128_w8_s2_$mask,decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv1_$mask >> "$OUT/bench.txt" 2>&1
    echo "== B$1 Nq$2 Nk$3 $mask: dense" >> "$OUT/bench.txt"
    timeout 120 $P/flashtune bench $args --layout dense \
      --variant fa2_fwd_bf16_d128_br128_bc64_w4_s2_$mask,fa2_fwd_bf16_d128_br128_bc128_w8_s2_$mask,hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p0_pp1_ov1_$mask >> "$OUT/bench.txt" 2>&1
  done
done
echo "bench: at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"; grep -E '^==|TFLOP|fa2_|decode_|hopper_' "$OUT/bench.txt" | head -60
bash bench/pack_out.sh "$OUT" summary.txt bench.txt memcheck-prefill.log prefill-tests.txt > /dev/null
