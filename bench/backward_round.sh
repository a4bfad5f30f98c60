#!/usr/bin/env bash
# One GPU round for the backward pass (fa2_bwd), each step under its own time limit so the
# summary always prints; cheapest and most important first:
#   tests_bwd   the backward GPU tests (the searched space of two classes, the default of 20
#               classes, deterministic bit-identity) and TuneGpu.Backward* (the tuner's worker
#               verifying and timing backward candidates, a planted wrong one)
#   tests_fwd   the forward GPU tests but the space sweeps (a merge broke nothing)
#   sanitize    compute-sanitizer memcheck on the deterministic backward test
#   autograd    examples/python/flashtune_autograd.py (flashtune.attention's gradients vs SDPA)
#               after tests/python/ops_test.py (the ops' fake implementations, torch.compile;
#               OPS_TESTS names a subset)
#   ab          `flashtune bench --operation bwd --rounds R` of named variants on a few shapes
#   tune        `flashtune tune --operation bwd` over the issue's grid at N = TUNE_SEQLENS
#               (default 4096; the other lengths then plan the nearest tuned bucket) into
#               $OUT/bwd.db
#   bench       bench/backward_bench.py on that database vs SDPA flash and cuDNN backward
#   ncu         Nsight Compute (--clock-control none) on one launch of the main kernel of each
#               NCU_VARIANTS URI (B4 N4096, hidden 2048), then on SDPA flash's backward kernel
#               (NCU_SDPA=0 skips it): speed of light, occupancy, warp stalls, pipes, memory;
#               NCU_SKIP launches of the kernel skipped first (bench verifies on small shapes)
# Logs go to $OUT (or ./backward-round); a summary prints last.
#
# usage: [STEPS="tests_bwd ..."] bench/backward_round.sh BIN_DIR
#   BIN_DIR holds flashtune, flashtune_gpu_tests, libflashtune.so (bench/pack_for_gpu.sh), the
#   Python package (BIN_DIR/python/flashtune), flashtune_autograd.py, ops_test.py and
#   backward_bench.py.
#   TESTS_BWD_FILTER / TESTS_FWD_FILTER: other gtest filters for the two test steps (the forward
#   step runs in one process: DriverGpu.IllegalAddressIsAFault poisons device 0's primary
#   context for every later test of that process, so leave it out when it runs with others).
#   AB_VARIANTS_<D>: comma lists of URIs (written with _full) for the A/B step (d64, d128), run
#   for each AB_CAUSAL value (default "0 1") with each CLI of AB_CLIS (default BIN_DIR's: a
#   second build's CLI makes a template change an A/B of one run); TUNE_ARGS, BENCH_ARGS:
#   extra options; <STEP>_S: a step's limit in seconds; PACK=1: the logs as one .tgz.
set -uo pipefail
BIN=$(cd "${1:?usage: backward_round.sh BIN_DIR}" && pwd)
OUT=${OUT:-$PWD/backward-round}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# Shared by the steps (later steps reuse the cubins); a caller's folder may bring cubins compiled
# elsewhere (`flashtune tune --compile-only` for sm_90a with the same NVRTC).
export FLASHTUNE_CACHE_DIR=${FLASHTUNE_CACHE_DIR:-$(mktemp -d)}
export FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CLI=$BIN/flashtune FLASHTUNE_LIB=$BIN/libflashtune.so
export PYTHONPATH=$BIN/python:${PYTHONPATH:-} PYTHONUNBUFFERED=1
STEPS=${STEPS:-tests_bwd tests_fwd sanitize autograd ab tune bench}
NCU_SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables"
want() { [[ " $STEPS " == *" $1 "* ]]; }
step() {  # name seconds command...
  local name=$1 secs=$2
  shift 2
  local t0=$(date +%s)
  timeout -k 5 "$secs" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc $(( $(date +%s) - t0 ))s" >>"$OUT/summary.txt"
}
: >"$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
want tests_bwd && step tests_bwd "${TESTS_BWD_S:-60}" "$BIN/flashtune_gpu_tests" \
  --gtest_filter="${TESTS_BWD_FILTER:-BackwardGpu*:TuneGpu.Backward*}"
want tests_fwd && step tests_fwd "${TESTS_FWD_S:-60}" "$BIN/flashtune_gpu_tests" \
  --gtest_filter="${TESTS_FWD_FILTER:--BackwardGpu*:TuneGpu.Backward*:*FullSpace*:*SampledSpace*}"
want sanitize && step sanitize "${SANITIZE_S:-25}" compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$BIN/flashtune_gpu_tests" --gtest_filter='BackwardGpuDeterministic*'
want autograd && step autograd "${AUTOGRAD_S:-25}" bash -c \
  "python3 '$BIN/ops_test.py' -v ${OPS_TESTS:-} 2>&1 | tail -12; python3 '$BIN/flashtune_autograd.py'"
if want ab; then
  ab() {  # cli head_dim causal variants
    "$1" bench --operation bwd --dtype bf16 --head-dim "$2" --causal "$3" --batch $((16384 / 4096)) \
      --seqlen-q 4096 --heads-q $((2048 / $2)) --rounds "${AB_ROUNDS:-3}" --variant "$4"
  }
  ab_all() {
    for cli in ${AB_CLIS:-$BIN/flashtune}; do
      echo "== $cli"
      for c in ${AB_CAUSAL:-0 1}; do
        local suffix=$([ "$c" = 1 ] && echo _causal || echo _full)
        [ -n "${AB_VARIANTS_64:-}" ] && ab "$cli" 64 "$c" "${AB_VARIANTS_64//_full/$suffix}"
        [ -n "${AB_VARIANTS_128:-}" ] && ab "$cli" 128 "$c" "${AB_VARIANTS_128//_full/$suffix}"
      done
    done
    true
  }
  export -f ab ab_all
  export BIN
  step ab "${AB_S:-60}" bash -c ab_all
fi
want tune && step tune "${TUNE_S:-60}" "$BIN/flashtune" tune --operation bwd --db "$OUT/bwd.db" \
  --dtypes bf16,f16 --head-dims 64,128 --seqlens-q "${TUNE_SEQLENS:-4096}" --strategy budgeted ${TUNE_ARGS:-}
want bench && step bench "${BENCH_S:-70}" python3 "$BIN/backward_bench.py" --db "$OUT/bwd.db" \
  --dtypes bf16,f16 --reps "${BENCH_REPS:-10}" ${BENCH_ARGS:-}
if want ncu; then
  ncu_all() {
    for u in ${NCU_VARIANTS//,/ }; do
      local dt=${u#fa2_bwd_} d=${u#*_d} c=0
      dt=${dt%%_*} d=${d%%_*}
      [[ $u == *_causal ]] && c=1
      echo "== $u"
      ncu --clock-control none --target-processes all --kernel-name regex:'_main$' \
        --launch-skip "${NCU_SKIP:-0}" --launch-count 1 $NCU_SECTIONS \
        "$BIN/flashtune" bench --operation bwd --dtype "$dt" --head-dim "$d" --causal "$c" --batch 4 \
        --seqlen-q 4096 --heads-q $((2048 / d)) --variant "$u"
    done
    [ "${NCU_SDPA:-1}" = 1 ] || return 0
    echo "== SDPA flash backward, bf16 d128 B4 N4096 full"
    ncu --clock-control none --kernel-name regex:flash_bwd_dq_dk_dv --launch-count 1 $NCU_SECTIONS python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(4, 16, 4096, 128, device='cuda', dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    F.scaled_dot_product_attention(q, k, v).backward(torch.randn_like(q))
torch.cuda.synchronize()"
  }
  export -f ncu_all
  export BIN NCU_SECTIONS
  step ncu "${NCU_S:-60}" bash -c ncu_all
fi
echo "== summary"; cat "$OUT/summary.txt"
for t in tests_bwd tests_fwd; do
  [ -f "$OUT/$t.log" ] || continue
  echo "== $t"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|SKIPPED \]" "$OUT/$t.log" | head -8
  grep -E "^\[ errors" "$OUT/$t.log" | sort -g -k9 | tail -1
done
[ -f "$OUT/sanitize.log" ] && { echo "== sanitize"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/sanitize.log" | head -3; }
[ -f "$OUT/autograd.log" ] && { echo "== autograd"; tail -5 "$OUT/autograd.log"; }
[ -f "$OUT/ab.log" ] && { echo "== ab"; grep -vE "^\s*$" "$OUT/ab.log" | cut -c1-110 | head -40; }
if [ -f "$OUT/tune.log" ]; then
  echo "== tune"; tail -4 "$OUT/tune.log"
  "$BIN/flashtune" db list --db "$OUT/bwd.db" >"$OUT/winners.txt" 2>&1
  "$BIN/flashtune" db export --format csv --db "$OUT/bwd.db" -o "$OUT/trials.csv" >/dev/null 2>&1
  cut -c1-120 "$OUT/winners.txt" | head -12
fi
[ -f "$OUT/bench.log" ] && { echo "== bench"; tail -28 "$OUT/bench.log"; }
[ -f "$OUT/ncu.log" ] && { echo "== ncu"; grep -E "^== |Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall" "$OUT/ncu.log" | cut -c1-100 | head -40; }
# PACK=1: one archive instead of the files (the device tool brings back at most 8 files).
if [ "${PACK:-0}" = 1 ]; then
  (cd "$OUT" && tar czf backward-round.tgz --exclude backward-round.tgz ./* && find . -type f ! -name backward-round.tgz -delete)
fi
exit 0
