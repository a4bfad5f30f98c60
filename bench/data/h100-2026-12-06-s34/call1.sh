#!/usr/bin/env bash
# Session 34, call 1: hopper_paged (hopper_fwd's template reading K/V through the page table)
# for the first time on a GPU. (1) Correctness: the cache-prefill GPU tests (CachePrefillGpu: per
# class, fa2_fwd on a dense cache with lengths, fa2_paged, and on sm_90a three or four
# hopper_paged tiles on pages of 16, 32 and 256 keys; every cache row past a sequence's keys is
# NaN now), the decode tests (the same NaN rows), the runtime tests (a paged call with packed
# queries, now planned on hopper_paged); compute-sanitizer memcheck and synccheck of the bf16
# d128 causal cache-prefill class. (2) Speed, through the runtime, untuned, in one run:
# bench/decode_bench.py at prefill sizes (Nq 512 / 2048), dense against paged K/V with 16-, 64-
# and 256-key pages, SDPA flash and cuDNN on the dense inputs, and the session's start build
# (the pack's base/, where paged prefill ran on fa2_paged) on the same inputs; then `flashtune
# bench` of hopper_paged tiles against fa2_paged's on 16-key pages, full and causal. (3) A tune of
# paged-prefill.problems where time is left, and the plans it gives.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s34/call1.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*:DecodeGpu*:RuntimeGpu*' SUITE_S=200 JOBS=4 TEST_S=90 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure\|hopper_paged.*:' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -40 >> "$OUT/summary.txt"
# Instance 3 is (bf16, 128, causal): dtype-major, then head dim, then the mask.
for tool in memcheck synccheck; do
  LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-$tool timeout 80 \
    compute-sanitizer --tool $tool --error-exitcode 3 $P/flashtune_gpu_tests \
    --gtest_filter='CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/3' > "$OUT/$tool.log" 2>&1
  echo "$tool CachePrefill/3: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/$tool.log" | tail -1)" >> "$OUT/summary.txt"
done
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-b1 FLASHTUNE_DB=/tmp/ft-b1-absent.db
: > "$OUT/prefill.txt"
for shape in "4 512 4096" "1 2048 8192"; do
  set -- $shape
  timeout 100 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT" --batches $1 --seqlen-q $2 --keys $3 \
    --layouts dense,paged16,paged64,paged256 --baseline $P/base/libflashtune.so >> "$OUT/prefill.txt" 2>&1
  echo "prefill B$1 Nq$2 Nk$3: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
done
: > "$OUT/bench.txt"
for mask in full causal; do
  c=$([ $mask = causal ] && echo 1 || echo 0)
  args="--dtype bf16 --head-dim 128 --batch 4 --seqlen-q 512 --seqlen-k 4096 --heads-q 32 --heads-kv 8 --causal $c --rounds 3 --reps 30"
  timeout 90 $P/flashtune bench $args --layout paged \
    --variant hopper_paged_bf16_d128_bm128_bn128_wg2_s2_p0_pp1_ov1_$mask,hopper_paged_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_$mask,hopper_paged_bf16_d128_bm128_bn176_wg2_s2_p0_pp1_ov1_$mask,fa2_paged_bf16_d128_br128_bc64_w4_s2_$mask >> "$OUT/bench.txt" 2>&1
  timeout 60 $P/flashtune bench $args --layout dense --variant hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p0_pp1_ov1_$mask >> "$OUT/bench.txt" 2>&1
done
echo "bench: at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
# (3) A tune of two paged prefill problems (paged-prefill.problems: hopper_paged and fa2_paged
# searched, verified on ragged paged cases whose rows past the keys are NaN), where time is left.
left=$(( 560 - ($(date +%s) - t0) ))
if [ $left -gt 90 ]; then
  D=/tmp/ft-s34-paged.db
  timeout $left $P/flashtune tune --problem-set bench/data/h100-2026-12-06-s34/paged-prefill.problems --db $D \
    > "$OUT/tune.txt" 2>&1
  echo "tune: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tune.txt")" >> "$OUT/summary.txt"
  for c in 0 1; do
    $P/flashtune plan --db $D --dtype bf16 --head-dim 128 --causal $c --batch 4 --seqlen-q 512 --seqlen-k 4096 \
      --heads-q 32 --heads-kv 8 --layout paged >> "$OUT/summary.txt" 2>&1
  done
  $P/flashtune db list --db $D >> "$OUT/tune.txt" 2>&1
fi
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E '^B[0-9]' "$OUT/prefill.txt" | cut -c1-400; grep -E '^hopper_|^fa2_' "$OUT/bench.txt"
bash bench/pack_out.sh "$OUT" summary.txt tests.txt memcheck.log synccheck.log prefill.txt bench.txt tune.txt > /dev/null
