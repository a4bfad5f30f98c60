#!/usr/bin/env bash
# One GPU round for hopper_bwd, the first wgmma backward family (templates/hopper_bwd.cuh,
# generator/families/hopper_bwd.cpp; issue 15, docs/perf-notes.md "fa2_bwd round 4"):
#  1. correctness: HopperBwdGpu.EveryClassMatchesTheReference — dq, dk, dv of hopper_bwd against
#     the float64 reference for bf16 and f16, d64 and d128, causal and not, on N 1, 17, 127,
#     1000, Nq != Nk both ways (masked rows), GQA 8:1, MQA, head-major strides (tests.log);
#     then compute-sanitizer memcheck on one small GQA causal call of each head dim (bf16,
#     B1 Nq 200 Nk 300, Hq 4 Hkv 2: a ragged key block, masked rows, two query heads per K/V
#     head) through `flashtune bench` (sanitizer.log);
#  2. the A/B in one run per shape: fa2_bwd's default against hopper_bwd, bf16 d128 and d64,
#     B4 N4096 hidden 2048, full and causal, `flashtune bench --operation bwd --rounds 5` (the
#     order alternates every round; median of the rounds' medians of 20 CUDA-event-timed
#     launches after warm-up; each variant verified against the float64 reference first) (ab.log).
# A failed check still times (the A/B is data) but its status shows in the table. Every step has
# its own time limit (a hung kernel costs only its step): at most 26 + 2 x 7 + 4 x 11 s. The
# GPU's clocks are only read (nvidia-smi's line heads ab.log).
#
# usage: OUT=DIR bash bench/hbwd_round.sh BIN_DIR
#   BIN_DIR: bench/pack_for_gpu.sh's folder plus this script and a cubin cache of the round's 12
#   variants compiled here (same NVRTC as the GPU machine), all made by
#     bash bench/hbwd_round.sh --pack build .devcarry-hbwd
#   (= bench/pack_for_gpu.sh build .devcarry-hbwd; cp bench/hbwd_round.sh .devcarry-hbwd/; then
#   for each URI `flashtune generate --variant URI -o URI` and `FLASHTUNE_CACHE_DIR=
#   .devcarry-hbwd/cache flashtune compile URI --arch sm_90a --option=--minimal` in a scratch
#   folder), then on the GPU (run tool, carry [".devcarry-hbwd"]):
#     OUT=$OUT bash .devcarry-hbwd/hbwd_round.sh .devcarry-hbwd
# Prints last: per shape, fa2_bwd's and hopper_bwd's status and TFLOP/s (backward FLOPs = 2.5x
# the forward's) and the ratio hopper / fa2 (> 1: hopper_bwd faster).
set -uo pipefail
# The round's variants: fa2_bwd's bf16 defaults at d128 / d64 (what `flashtune plan` picks
# untuned) and hopper_bwd of every class the GPU test checks.
FA2_128=fa2_bwd_bf16_d128_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs1_lay2
FA2_64=fa2_bwd_bf16_d64_bc128_br128_w8_s2_det0_dqc64_dqv2_dqs1_lay2
if [ "${1:-}" = --pack ]; then
  BUILD=$(cd "${2:?--pack BUILD_DIR CARRY_DIR}" && pwd)
  CARRY=${3:?--pack BUILD_DIR CARRY_DIR}
  bash "$(dirname "$0")/pack_for_gpu.sh" "$BUILD" "$CARRY" && cp "$0" "$CARRY/" || exit 1
  CACHE=$(cd "$CARRY" && mkdir -p cache && cd cache && pwd)
  scratch=$(mktemp -d)
  for u in ${FA2_128}_full ${FA2_128}_causal ${FA2_64}_full ${FA2_64}_causal \
    hopper_bwd_{bf16,f16}_d{64,128}_bn128_bm64_det0_{full,causal}; do
    (cd "$scratch" && "$BUILD/flashtune" generate --variant "$u" -o "$u" &&
      FLASHTUNE_CACHE_DIR=$CACHE "$BUILD/flashtune" compile "$u" --arch sm_90a --option=--minimal >/dev/null) ||
      { echo "cannot compile $u" >&2; exit 1; }
  done
  rm -rf "$scratch"
  echo "packed $CARRY: $(ls "$CACHE" | wc -l) cubins; run: OUT=\$OUT bash $CARRY/hbwd_round.sh $CARRY"
  exit 0
fi
BIN=$(cd "${1:?usage: hbwd_round.sh BIN_DIR}" && pwd)
OUT=${OUT:?set OUT to the folder for the logs}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune  # bench's GPU worker: this build's CLI
# The carried cubins (a copy: the cache is written to), else a fresh folder the A/B shares with the tests.
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
[ -d "$BIN/cache" ] && cp "$BIN"/cache/* "$FLASHTUNE_CACHE_DIR/" 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >"$OUT/ab.log" 2>&1
s=()
t=$(date +%s)

timeout -k 3 "${TESTS_S:-26}" "$BIN/flashtune_gpu_tests" --gtest_filter='HopperBwdGpu*' >"$OUT/tests.log" 2>&1
s+=("tests: exit $?, $(($(date +%s) - t)) s: $(grep -cE '^\[ errors' "$OUT/tests.log") shapes compared, $(grep -cE 'Failure' "$OUT/tests.log") failures")
t=$(date +%s)

: >"$OUT/sanitizer.log"
for d in 128 64; do
  echo "== memcheck d$d" >>"$OUT/sanitizer.log"
  timeout -k 2 "${SANITIZE_S:-7}" compute-sanitizer --tool memcheck --target-processes all --error-exitcode 9 "$BIN/flashtune" bench \
    --operation bwd --dtype bf16 --head-dim "$d" --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 300 --heads-q 4 \
    --heads-kv 2 --variant "hopper_bwd_bf16_d${d}_bn128_bm64_det0_causal" >>"$OUT/sanitizer.log" 2>&1
  s+=("memcheck d$d: exit $? (9: errors), $(($(date +%s) - t)) s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1)")
  t=$(date +%s)
done

for d in 128 64; do
  if [ "$d" = 128 ]; then fa2=$FA2_128; else fa2=$FA2_64; fi
  for c in 0 1; do
    suffix=$([ "$c" = 1 ] && echo _causal || echo _full)
    echo "== d$d causal$c" >>"$OUT/ab.log"
    timeout -k 3 "${AB_S:-11}" "$BIN/flashtune" bench --operation bwd --dtype bf16 --head-dim "$d" --causal "$c" \
      --batch 4 --seqlen-q 4096 --heads-q $((2048 / d)) --rounds "${AB_ROUNDS:-5}" \
      --variant "$fa2$suffix,hopper_bwd_bf16_d${d}_bn128_bm64_det0$suffix" >>"$OUT/ab.log" 2>&1
    s+=("ab d$d causal$c: exit $?, $(($(date +%s) - t)) s")
    t=$(date +%s)
  done
done

grep -E 'FAILED|SKIPPED|Failure' "$OUT/tests.log" | sort | uniq -c | head -6
# The checked shapes' errors: those over their tolerance, and the worst.
grep -E '^\[ errors' "$OUT/tests.log" | awk '{ tol = $NF; sub(/\)/, "", tol); tol += 0; bad = 0
    for (i = 1; i <= NF; ++i) if ($i == "dq" || $i == "dk" || $i == "dv") { v = $(i + 1) + 0; if (v > worst) worst = v; if (v > tol) bad = 1 }
    if (bad && ++shown <= 6) print "over tolerance: " $0 }
  END { printf "worst relative L2 error over %d checked shapes: %g\n", NR, worst }'
printf '%s\n' "${s[@]}"
# The table: one row per shape, the ratio last.
awk '/^== d/ { shape = $2 " " $3; next }
  /^fa2_bwd_/ { fs[shape] = $2; ft[shape] = $5; order[++n] = shape }
  /^hopper_bwd_/ { hs[shape] = $2; ht[shape] = $5 }
  END {
    printf "%-16s %-10s %9s %-10s %9s %7s\n", "shape", "fa2", "TFLOP/s", "hopper", "TFLOP/s", "ratio"
    for (i = 1; i <= n; ++i) { k = order[i]; r = (ft[k] > 0 && ht[k] > 0) ? sprintf("%.2fx", ht[k] / ft[k]) : "-"
      printf "%-16s %-10s %9s %-10s %9s %7s\n", k, fs[k], ft[k], (k in hs) ? hs[k] : "missing", (k in ht) ? ht[k] : "-", r }
  }' "$OUT/ab.log"
