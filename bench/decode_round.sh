#!/usr/bin/env bash
# One GPU round for decode speed and mixed prefill + decode (issue 14): the decode and varlen
# decode GPU tests and the runtime's mixed-batch test (float64 reference), compute-sanitizer
# memcheck on a varlen decode class, bench/decode_bench.py over the issue's grid (dense, paged
# 16 and 256) against SDPA flash/cuDNN and a streaming read with main's library as the A/B
# baseline, bench/varlen_bench.py --mixed-only, and Nsight Compute on three shapes
# (bench/decode_profile.py); step `sweep` times a few decode_fwd variants through `flashtune
# bench` (checked, interleaved rounds) on B1 x 8k and B64 x 32k (SWEEP_LIST, SWEEP_SHAPES: other
# URIs, "B Nk" pairs); step `tune` tunes the decode buckets (budgeted; TUNE_ARGS) into
# $OUT/tuned.db and step `tuned` runs the benchmark through it. Logs go to $OUT; a short
# summary is printed last. BASELINE: the libraries decode_bench.py compares against.
# usage: [STEPS=...] [BASELINE=LIB[,LIB...]] [FALLBACK=LIB] bash bench/decode_round.sh DIR
#        (DIR: bench/pack_for_gpu.sh's folder, with bench/ and python/flashtune/ copied beside
#        it; BASELINE, default DIR/main/libflashtune.so when present: the libraries the
#        benchmark compares against, each named by its folder; FALLBACK: the library benchmarked
#        instead of DIR/libflashtune.so when the GPU tests fail)
set -uo pipefail
C=$(cd "${1:?usage: decode_round.sh DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$C/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CLI=$C/flashtune FLASHTUNE_WORKER=$C/flashtune PYTHONUNBUFFERED=1
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache
STEPS=${STEPS:-tests sanitize bench mixed ncu}
want() { [[ " $STEPS " == *" $1 "* ]]; }
summary=()
LIB=$C/libflashtune.so  # the library benchmarked and profiled
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/gpu.txt" 2>&1
if want tests; then
  s=$(date +%s)
  timeout ${TESTS_S:-75} "$C/flashtune_gpu_tests" \
    --gtest_filter="${TEST_FILTER:-VarlenGpu/VarlenDecodeClasses.*:RuntimeGpu.MixedVarlen*:RuntimeGpu.VarlenCall*:DecodeGpu*}" \
    > "$OUT/gpu_tests.log" 2>&1
  rc=$?
  summary+=("gpu tests: exit $rc in $(( $(date +%s) - s )) s; $(grep -c '^\[       OK' "$OUT/gpu_tests.log") ok, $(grep -c '^\[  FAILED  \] [A-Z]' "$OUT/gpu_tests.log") failed, $(grep -c '^\[  SKIPPED' "$OUT/gpu_tests.log") skipped")
  grep -E "FAILED|Failure|wrote past" "$OUT/gpu_tests.log" | head -20
  if [ $rc -ne 0 ] && [ -n "${FALLBACK:-}" ]; then LIB=$FALLBACK; summary+=("tests failed: benchmarking $LIB"); fi
fi
if want sanitize; then
  s=$(date +%s)
  timeout ${SANITIZE_S:-25} compute-sanitizer --tool memcheck --error-exitcode 3 "$C/flashtune_gpu_tests" \
    --gtest_filter="${SANITIZE_FILTER:-VarlenGpu/VarlenDecodeClasses.DecodeVariantsMatchTheReference/3}" > "$OUT/sanitizer.log" 2>&1
  summary+=("compute-sanitizer memcheck: exit $? in $(( $(date +%s) - s )) s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1)")
fi
if want bench; then
  s=$(date +%s)
  base=${BASELINE:-$C/main/libflashtune.so}
  [ -e "${base%%,*}" ] && base_args="--baseline $base" || base_args=""
  timeout ${BENCH_S:-55} python3 "$ROOT/bench/decode_bench.py" "$LIB" --out "$OUT" \
    $base_args ${BENCH_ARGS:-} > "$OUT/decode_bench.log" 2>&1
  summary+=("decode bench: exit $? in $(( $(date +%s) - s )) s")
  python3 "$ROOT/bench/decode_table.py" "$OUT/decode_bench.json" > "$OUT/decode_table.md" 2>&1
fi
if want tune; then  # the issue's decode buckets (bf16 d128 GQA-8 by default), budgeted, into $OUT/tuned.db
  s=$(date +%s)
  timeout ${TUNE_S:-120} "$C/flashtune" tune --db "$OUT/tuned.db" --decode only --dtypes bf16 --head-dims 128 \
    --strategy budgeted ${TUNE_ARGS:-} > "$OUT/tune.log" 2>&1
  summary+=("tune: exit $? in $(( $(date +%s) - s )) s")
  "$C/flashtune" db export --format csv --db "$OUT/tuned.db" --table winners > "$OUT/tuned_winners.csv" 2>&1
fi
if want tuned; then  # the primary library through the tuned database (what the issue's speed is measured by)
  s=$(date +%s)
  mkdir -p "$OUT/tuned"
  timeout ${TUNED_S:-40} python3 "$ROOT/bench/decode_bench.py" "$LIB" --db "$OUT/tuned.db" --out "$OUT/tuned" \
    ${TUNED_ARGS:-} > "$OUT/tuned/decode_bench.log" 2>&1
  summary+=("tuned decode bench: exit $? in $(( $(date +%s) - s )) s")
  python3 "$ROOT/bench/decode_table.py" "$OUT/tuned/decode_bench.json" > "$OUT/tuned/decode_table.md" 2>&1
fi
if want mixed; then
  s=$(date +%s)
  timeout ${MIXED_S:-25} python3 "$ROOT/bench/varlen_bench.py" "$LIB" --out "$OUT" --mixed-only \
    > "$OUT/varlen_mixed_bench.log" 2>&1
  summary+=("mixed bench: exit $? in $(( $(date +%s) - s )) s")
fi
if want ncu; then
  s=$(date +%s)
  timeout ${NCU_S:-35} ncu --clock-control none --profile-from-start off --csv --page raw --metrics \
gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__shared_mem_per_block_dynamic,lts__t_sector_hit_rate.pct \
    python3 "$ROOT/bench/decode_profile.py" "$LIB" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  summary+=("ncu: exit $? in $(( $(date +%s) - s )) s")
fi
if want sweep; then
  s=$(date +%s)
  V=decode_fwd_bf16_d128_; F=_kv0_full  # dense K/V kernels: the sweep times dense calls
  list=${SWEEP_LIST:-${V}bn64_rm1_w4_s3_cs2$F,${V}bn32_rm1_w2_s4_cs4$F,${V}bn64_rm1_w4_s2_cs4$F,${V}bn64_rm1_w4_s4_cs1$F,${V}bn128_rm1_w8_s2_cs1$F,${V}bn128_rm1_w4_s2_cs2$F}
  IFS=, read -ra shapes <<< "${SWEEP_SHAPES:-1 8192,64 32768}"  # "B Nk" pairs
  for shape in "${shapes[@]}"; do
    set -- $shape
    timeout ${SWEEP_S:-20} "$C/flashtune" bench --batch $1 --seqlen-q 1 --seqlen-k $2 --heads-q 32 --heads-kv 8 \
      --variant "$list" --rounds 3 >> "$OUT/sweep.log" 2>&1
    echo "exit $? B$1 x $2" >> "$OUT/sweep.log"
  done
  summary+=("sweep: in $(( $(date +%s) - s )) s")
fi
echo "=== decode bench"
if [ -s "$OUT/decode_table.md" ] && [ -s "$OUT/decode_bench.json" ]; then cat "$OUT/decode_table.md"
else grep -E "^B|^stream|rror" "$OUT/decode_bench.log" 2>/dev/null | cut -c1-300 | tail -14; fi
want tuned && echo "=== tuned (--db)" && cat "$OUT/tuned/decode_table.md" 2>/dev/null
want sweep && echo "=== sweep" && grep -E "decode_fwd|exit" "$OUT/sweep.log" 2>/dev/null | cut -c1-150
want mixed && echo "=== mixed" && grep -E "^(full|causal)|output check" "$OUT/varlen_mixed_bench.log" | tail -14
want ncu && echo "=== ncu" && python3 - "$OUT/ncu.csv" <<'PY' 2>&1 | tail -24
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print("no ncu rows"); sys.exit()
h = rows[0]; idx = {n: i for i, n in enumerate(h)}
want = ["Kernel Name", "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__grid_size", "launch__registers_per_thread"]
for r in rows[2:]:
    print(" | ".join(r[idx[w]][:40] if w in idx else "?" for w in want))
PY
printf '%s\n' "${summary[@]}"
