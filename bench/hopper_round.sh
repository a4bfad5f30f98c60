#!/usr/bin/env bash
# One GPU round for the hopper_fwd family's switches (docs/perf-notes.md, "hopper_fwd"): the
# runtime's host overhead (tensor-map cache hit vs encode every call vs bare launch), the float64
# check and compute-sanitizer on the switch variants (no ping-pong, no overlap, persistent incl.
# longest-first causal), the interleaved A/B timings, then bf16 d64 tuned (budgeted, both
# families, the switches in the space) and timed through the runtime against SDPA flash/cuDNN.
# Logs go to $OUT; a short table is printed last.
#
# usage: bench/hopper_round.sh BIN_DIR   (BIN_DIR: bench/pack_for_gpu.sh's folder plus
#        flashtune_hopper_probe; STEPS picks from "runtime check sanitize time|short ncu tune"; CHECK_ONLY,
#        SANITIZE_ONLY, CHECK_S, TIME_S, TUNE_S, REPORT_S override the defaults below)
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
  timeout ${CHECK_S:-80} "$PROBE" --check --only "${CHECK_ONLY:-_p1_,_pp0_,_ov0_}" >> "$OUT/probe.log" 2>&1
  summary+=("probe --check: exit $?, $(( $(date +%s) - start )) s: $(grep '^check:' "$OUT/probe.log" | tail -n 1)")
fi
if want tune; then
  start=$(date +%s)
  DB=$(mktemp -d)/flashtune.db
  timeout ${TUNE_S:-70} "$BIN/flashtune" tune --db "$DB" --strategy budgeted --dtypes bf16 --head-dims 64 > "$OUT/tune.log" 2>&1
  summary+=("tune bf16 d64 budgeted: exit $?, $(( $(date +%s) - start )) s")
  "$BIN/flashtune" db export --format csv --table winners --db "$DB" --output "$OUT/winners.csv" >> "$OUT/tune.log" 2>&1
  start=$(date +%s)
  REPORT=$(mktemp -d)  # $OUT brings back at most 8 files: only the CSV of the report
  PYTHONUNBUFFERED=1 timeout ${REPORT_S:-90} python3 "$ROOT/bench/perf_report.py" --lib "$BIN/libflashtune.so" --db "$DB" \
    --out "$REPORT" --head-dims 64 --dtypes bf16 --no-extra --time-limit-s $(( ${REPORT_S:-90} - 20 )) > "$OUT/compare.txt" 2>&1
  summary+=("perf report d64 bf16: exit $?, $(( $(date +%s) - start )) s")
  cp "$REPORT"/*.csv "$OUT/" 2>/dev/null
fi
if want sanitize; then
  start=$(date +%s)
  for tool in memcheck racecheck synccheck; do
    timeout ${SANITIZE_S:-35} compute-sanitizer --tool $tool --error-exitcode 9 "$PROBE" --small --only "${SANITIZE_ONLY:-d64_bm192_bn128_wg3_s2_p1,d128_bm128_bn176_wg2_s2_p1,d64_bm128_bn128_wg2_s2_p0_pp1_ov0}" \
      >> "$OUT/sanitizer.log" 2>&1
    summary+=("sanitizer $tool: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitizer.log") clean summaries so far)")
  done
  summary+=("sanitizers: $(( $(date +%s) - start )) s")
fi
if want time || want short; then
  start=$(date +%s)
  timeout ${TIME_S:-110} "$PROBE" $(want time && echo --time || echo --short) > "$OUT/time.log" 2>&1
  summary+=("probe timing: exit $?, $(( $(date +%s) - start )) s")
fi
# ncu on the worst shape of the last grid (d64 bf16 causal B32 H32 N512), the family's default
# tile: where its time goes (clocks left alone).
if want ncu && command -v ncu > /dev/null; then
  start=$(date +%s)
  VARIANT=${NCU_VARIANT:-hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p0_pp1_ov1_causal}
  { echo "==== ncu $VARIANT"; timeout 45 ncu --clock-control none --target-processes all -k regex:hopper_fwd \
      --launch-skip 5 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats \
      "$BIN/flashtune" bench --dtype bf16 --head-dim 64 --causal --batch 32 --seqlen-q 512 --heads-q 32 \
      --variant "$VARIANT"; } >> "$OUT/time.log" 2>&1
  summary+=("ncu d64 causal N512: exit $?, $(( $(date +%s) - start )) s")
fi
echo "==== runtime ===="; grep -E '^BM_.*(median|mean)' "$OUT/runtime.log" 2>/dev/null
echo "==== check ===="; grep -E '^FAIL|^check' "$OUT/probe.log" | tail -n 12
echo "==== time ===="; sed -n '/^shape (bf16)/,$p' "$OUT/time.log" 2>/dev/null | cut -c1-110
echo "==== winners ===="; cut -d, -f1-12 "$OUT/winners.csv" 2>/dev/null | head -n 14
echo "==== compare ===="; tail -n 22 "$OUT/compare.txt" 2>/dev/null
echo "==== round ===="; printf '%s\n' "${summary[@]}"
