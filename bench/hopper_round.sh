#!/usr/bin/env bash
# One GPU round for the hopper_fwd family's switches (docs/perf-notes.md, "hopper_fwd"): the
# runtime's host overhead (tensor-map cache hit vs encode every call vs bare launch), the float64
# check and compute-sanitizer on the switch variants (no ping-pong, no overlap, persistent incl.
# longest-first causal), the interleaved A/B timings, then bf16 d64 tuned (budgeted, both
# families, the switches in the space) and timed through the runtime against SDPA flash/cuDNN.
# Logs go to $OUT; a short table is printed last.
#
# usage: bench/hopper_round.sh BIN_DIR   (BIN_DIR: bench/pack_for_gpu.sh's folder plus
#        flashtune_hopper_probe and bench/sdpa_cudnn_calls.py; STEPS picks from "runtime check
#        sanitize time short d64 ab14 gputests ncu tune" (run in that order); CHECK_ONLY,
#        CHECK_DEFINE (a template knob for --check), SANITIZE_ONLY, SANITIZE_TOOLS, CHECK_S,
#        TIME_S, TUNE_S, GPUTESTS_S, GPUTESTS_FILTER, GRID_DIMS and GRID_DTYPES (comma lists for tune and report), GRID_EXTRA=1 (B1 H32 N8192 d128 too),
#        REPORT_S, ROUNDS (perf_report.py's rounds, default 1), NCU_VARIANTS (space-separated URIs), NCU_SHAPE (B H N causal, e.g. "32 32 512 1";
#        d64 bf16) and NCU_CUDNN=1 (cuDNN's kernel on the same shape) override the defaults below)
set -uo pipefail
BIN=$(cd "${1:?usage: hopper_round.sh BIN_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-round}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
STEPS=${STEPS:-runtime check sanitize time ncu tune}
want() { [[ " $STEPS " == *" $1 "* ]]; }
PROBE=$BIN/flashtune_hopper_probe
summary=()
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/probe.log" 2>&1

if want runtime; then
  start=$(date +%s)
  timeout 45 "$BIN/flashtune_runtime_bench" --benchmark_filter='Forward|Encode|Baseline' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true > "$OUT/runtime.log" 2>&1
  summary+=("runtime bench: exit $?, $(( $(date +%s) - start )) s")
fi
if want check; then
  start=$(date +%s)
  timeout ${CHECK_S:-80} "$PROBE" --check --only "${CHECK_ONLY:-_p1_,_pp0_,_ov0_}" ${CHECK_DEFINE:+--define "$CHECK_DEFINE"} >> "$OUT/probe.log" 2>&1
  summary+=("probe --check: exit $?, $(( $(date +%s) - start )) s: $(grep '^check:' "$OUT/probe.log" | tail -n 1)")
fi
if want tune; then
  start=$(date +%s)
  DB=$(mktemp -d)/flashtune.db
  timeout ${TUNE_S:-70} "$BIN/flashtune" tune --db "$DB" --strategy budgeted --dtypes ${GRID_DTYPES:-bf16} \
    --head-dims ${GRID_DIMS:-64} --decode none > "$OUT/tune.log" 2>&1
  summary+=("tune ${GRID_DTYPES:-bf16} d${GRID_DIMS:-64} budgeted: exit $?, $(( $(date +%s) - start )) s")
  if [ "${GRID_EXTRA:-0}" = 1 ]; then  # B1 H32 N8192 d128, the issue's extra shape
    timeout ${TUNE_S:-70} "$BIN/flashtune" tune --db "$DB" --strategy budgeted --dtypes ${GRID_DTYPES:-bf16} \
      --head-dims 128 --seqlens-q 8192 --hidden 4096 --tokens 8192 --decode none >> "$OUT/tune.log" 2>&1
    summary+=("tune B1 H32 N8192 d128: exit $?, $(( $(date +%s) - start )) s")
  fi
  "$BIN/flashtune" db export --format csv --table winners --db "$DB" --output "$OUT/winners.csv" >> "$OUT/tune.log" 2>&1
  start=$(date +%s)
  REPORT=$(mktemp -d)  # the report's CSV and JSON (its plot, where matplotlib is there) go to $OUT
  PYTHONUNBUFFERED=1 timeout ${REPORT_S:-90} python3 "$ROOT/bench/perf_report.py" --lib "$BIN/libflashtune.so" --db "$DB" \
    --out "$REPORT" --head-dims ${GRID_DIMS:-64} --dtypes ${GRID_DTYPES:-bf16} $([ "${GRID_EXTRA:-0}" = 1 ] || echo --no-extra) \
    --time-limit-s $(( ${REPORT_S:-90} - 20 )) --rounds "${ROUNDS:-1}" > "$OUT/compare.txt" 2>&1
  summary+=("perf report d${GRID_DIMS:-64} ${GRID_DTYPES:-bf16}: exit $?, $(( $(date +%s) - start )) s")
  cp "$REPORT"/perf_report.csv "$REPORT"/perf_report.json "$REPORT"/perf_report.png "$OUT/" 2>/dev/null
fi
if want sanitize; then
  start=$(date +%s)
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    timeout ${SANITIZE_S:-35} compute-sanitizer --tool $tool --error-exitcode 9 "$PROBE" --small --only "${SANITIZE_ONLY:-d64_bm192_bn128_wg3_s2_p1,d128_bm128_bn176_wg2_s2_p1,d64_bm128_bn128_wg2_s2_p0_pp1_ov0}" \
      >> "$OUT/sanitizer.log" 2>&1
    summary+=("sanitizer $tool: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitizer.log") clean summaries so far)")
  done
  summary+=("sanitizers: $(( $(date +%s) - start )) s")
fi
for mode in time short d64 ab14; do
  want $mode || continue
  start=$(date +%s)
  timeout ${TIME_S:-110} "$PROBE" --$mode >> "$OUT/time.log" 2>&1
  summary+=("probe --$mode: exit $?, $(( $(date +%s) - start )) s")
done
if want gputests; then
  start=$(date +%s)
  (cd "$BIN" && timeout ${GPUTESTS_S:-60} ./flashtune_gpu_tests --gtest_filter="${GPUTESTS_FILTER:-ForwardGpu/FullSpace.*}" > "$OUT/gpu_tests.log" 2>&1)
  summary+=("gpu tests: exit $?, $(( $(date +%s) - start )) s: $(grep -E '^\[ +(PASSED|FAILED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')")
fi
# ncu on one d64 bf16 shape (default the worst of the grid, B32 H32 N512 causal): each variant
# of NCU_VARIANTS, then with NCU_CUDNN=1 cuDNN's kernel on the same shape (clocks left alone).
if want ncu && command -v ncu > /dev/null; then
  start=$(date +%s)
  read -r NB NH NN NC <<< "${NCU_SHAPE:-32 32 512 1}"
  SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
  for VARIANT in ${NCU_VARIANTS:-hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov1_causal}; do
    { echo "==== ncu $VARIANT B$NB H$NH N$NN"; timeout 45 ncu --clock-control none --target-processes all -k regex:hopper_fwd \
        --launch-skip 5 --launch-count 1 $SECTIONS \
        "$BIN/flashtune" bench --dtype bf16 --head-dim 64 --causal=$NC --batch $NB --seqlen-q $NN --heads-q $NH \
        --variant "$VARIANT"; } >> "$OUT/ncu.log" 2>&1
  done
  if [ "${NCU_CUDNN:-0}" = 1 ]; then
    { echo "==== ncu cuDNN (SDPA) B$NB H$NH N$NN causal $NC"; timeout 60 ncu --clock-control none --target-processes all \
        -k regex:'(?i)sdpa|fprop|fmha|cudnn' --launch-skip 2 --launch-count 1 $SECTIONS \
        python3 "$BIN/sdpa_cudnn_calls.py" --batch $NB --heads $NH --seqlen $NN --head-dim 64 \
        $([ "$NC" = 1 ] && echo --causal); } >> "$OUT/ncu.log" 2>&1
  fi
  summary+=("ncu d64 B$NB N$NN causal $NC: exit $?, $(( $(date +%s) - start )) s")
fi
echo "==== runtime ===="; grep -E '^BM_.*(median|mean)' "$OUT/runtime.log" 2>/dev/null
echo "==== check ===="; grep -E '^FAIL|^check' "$OUT/probe.log" | tail -n 12
echo "==== time ===="; sed -n '/^shape (bf16)/,$p' "$OUT/time.log" 2>/dev/null | cut -c1-110
echo "==== ncu ===="; grep -E '^==== ncu|Duration|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit Reg|One or More Eligible|Issued Warp Per' "$OUT/ncu.log" 2>/dev/null
echo "==== winners ===="; cut -d, -f1-12 "$OUT/winners.csv" 2>/dev/null | head -n 14
echo "==== compare ===="; tail -n ${COMPARE_LINES:-22} "$OUT/compare.txt" 2>/dev/null
echo "==== round ===="; printf '%s\n' "${summary[@]}"
