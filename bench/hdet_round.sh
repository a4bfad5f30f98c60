#!/usr/bin/env bash
# One GPU round for hopper_bwd's deterministic mode, det 1 (issue 15: "deterministic mode within
# 20% of the default"; templates/hopper_bwd.cuh "Deterministic mode": per-(head, query block)
# counters, dQ added in key block order by a writer warp group off the consumers' path):
#  1. correctness (tests.log): HopperBwdGpu* — every class, det 0, det 1, dqw 1 and (causal)
#     det 2, on the edge shapes against the float64 reference, and HopperBwdGpuDeterministic
#     (det 1 and det 2, d64 / d128: 3 runs bit-identical + the reference, GQA 2:1, MQA Nk > Nq,
#     MQA with one query block); then compute-sanitizer on one small GQA causal call of det 1
#     and det 2 (bf16, B1 Nq 200 Nk 300, Hq 4 Hkv 2: a ragged key block, masked rows, two query
#     heads per K/V head): memcheck at d128 and d64, synccheck at d64 (the writer's named
#     barriers, its spinning lane) (sanitizer.log);
#  2. the A/B in one run per shape (ab.log): hopper_bwd det 0 (the default) and hopper_bwd det 1
#     (with WITH_FA2=1 also fa2_bwd det 1, what deterministic calls ran before: ~2 s more per
#     shape, past the 60 s budget), bf16 B4 N4096 hidden 2048, d128 /
#     d64, full / causal, `flashtune bench --operation bwd --rounds 5` (order alternating every
#     round; median of the rounds' medians of CUDA-event-timed launches after warm-up; each
#     variant verified against the float64 reference first); WITH_WRITER=1 adds dqw 1 (the
#     default since session 17), WITH_DESC=1 det 2 on the causal shapes.
# Every step has its own time limit (a hung kernel costs only its step; a deterministic kernel
# that deadlocks shows as exit 124): 13 + 6 x 4 + 4 x 12 = 85 s of limits (each step killed 1 s
# after its limit if it ignores the signal); session 17's call 1 (four variants a shape) took 8 s
# of tests, 2 s per sanitizer run and hit the then 7 s A/B limit. The GPU's clocks are only read (nvidia-smi's line heads ab.log).
#
# usage: OUT=DIR bash bench/hdet_round.sh BIN_DIR
#   BIN_DIR: bench/pack_for_gpu.sh's folder plus this script and a cubin cache of the round's 20
#   variants compiled here (same NVRTC as the GPU machine), all made by
#     bash bench/hdet_round.sh --pack build .devcarry-hdet
#   (= bench/pack_for_gpu.sh build .devcarry-hdet; cp bench/hdet_round.sh .devcarry-hdet/; then
#   for each URI `flashtune generate --variant URI -o URI` and `FLASHTUNE_CACHE_DIR=
#   .devcarry-hdet/cache flashtune compile URI --arch sm_90a --option=--minimal` in a scratch
#   folder), then on the GPU (carry [".devcarry-hdet"]):
#     OUT=$OUT bash .devcarry-hdet/hdet_round.sh .devcarry-hdet
# Prints last: per shape, the variants' status and median µs, det1/det0 (hopper_bwd's
# deterministic cost; issue 15's target <= 1.20); with WITH_WRITER=1 also det 0 through the
# writer warps (dqw1) over det 0; with WITH_FA2=1, det1/fa2det1 (< 1: faster than the old
# deterministic path); the geomeans of the ratios; with WITH_DESC=1, det2/det1 and det2/dqw1 per
# causal shape last. Session 18's round: WITH_WRITER=1 WITH_DESC=1.
set -uo pipefail
FA2_128=fa2_bwd_bf16_d128_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs1_lay2
FA2_64=fa2_bwd_bf16_d64_bc128_br128_w8_s2_det1_dqc64_dqv2_dqs1_lay2
if [ "${1:-}" = --pack ]; then
  BUILD=$(cd "${2:?--pack BUILD_DIR CARRY_DIR}" && pwd)
  CARRY=${3:?--pack BUILD_DIR CARRY_DIR}
  bash "$(dirname "$0")/pack_for_gpu.sh" "$BUILD" "$CARRY" && cp "$0" "$CARRY/" || exit 1
  CACHE=$(cd "$CARRY" && mkdir -p cache && cd cache && pwd)
  scratch=$(mktemp -d)
  for u in ${FA2_128}_full ${FA2_128}_causal ${FA2_64}_full ${FA2_64}_causal \
    hopper_bwd_{bf16,f16}_d{64,128}_bn128_bm64_det{0,1}_dg0_dqw0_{full,causal} \
    hopper_bwd_bf16_d{64,128}_bn128_bm64_det0_dg0_dqw1_{full,causal} hopper_bwd_{bf16,f16}_d{64,128}_bn128_bm64_det2_dg0_dqw0_causal; do
    (cd "$scratch" && "$BUILD/flashtune" generate --variant "$u" -o "$u" &&
      FLASHTUNE_CACHE_DIR=$CACHE "$BUILD/flashtune" compile "$u" --arch sm_90a --option=--minimal >/dev/null) ||
      { echo "cannot compile $u" >&2; exit 1; }
  done
  rm -rf "$scratch"
  echo "packed $CARRY: $(ls "$CACHE" | wc -l) cubins; run: OUT=\$OUT bash $CARRY/hdet_round.sh $CARRY"
  exit 0
fi
BIN=$(cd "${1:?usage: hdet_round.sh BIN_DIR}" && pwd)
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

timeout -k 1 "${TESTS_S:-13}" "$BIN/flashtune_gpu_tests" --gtest_filter='HopperBwdGpu*' >"$OUT/tests.log" 2>&1
s+=("tests: exit $? (124: timed out, a deadlock?), $(($(date +%s) - t)) s: $(grep -cE '^\[ errors' "$OUT/tests.log") shapes compared, $(grep -cE 'Failure' "$OUT/tests.log") failures")
t=$(date +%s)

: >"$OUT/sanitizer.log"
for run in memcheck:128:1 memcheck:64:1 synccheck:64:1 memcheck:128:2 memcheck:64:2 synccheck:64:2; do
  IFS=: read tool d det <<< "$run"
  echo "== $tool d$d det$det" >>"$OUT/sanitizer.log"
  timeout -k 1 "${SANITIZE_S:-4}" compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 9 "$BIN/flashtune" bench \
    --operation bwd --dtype bf16 --head-dim "$d" --causal 1 --batch 1 --seqlen-q 200 --seqlen-k 300 --heads-q 4 \
    --heads-kv 2 --variant "hopper_bwd_bf16_d${d}_bn128_bm64_det${det}_dg0_dqw0_causal" >>"$OUT/sanitizer.log" 2>&1
  s+=("$tool d$d det$det: exit $? (9: errors), $(($(date +%s) - t)) s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1)")
  t=$(date +%s)
done

for d in 128 64; do
  if [ "$d" = 128 ]; then fa2=$FA2_128; else fa2=$FA2_64; fi
  for c in 0 1; do
    suffix=$([ "$c" = 1 ] && echo _causal || echo _full)
    h=hopper_bwd_bf16_d${d}_bn128_bm64
    variants=${h}_det0_dg0_dqw0$suffix,${h}_det1_dg0_dqw0$suffix
    [ "${WITH_FA2:-0}" = 1 ] && variants=$variants,$fa2$suffix
    [ "${WITH_WRITER:-0}" = 1 ] && variants=$variants,${h}_det0_dg0_dqw1$suffix
    [ "${WITH_DESC:-0}" = 1 ] && [ "$c" = 1 ] && variants=$variants,${h}_det2_dg0_dqw0$suffix
    echo "== d$d causal$c" >>"$OUT/ab.log"
    timeout -k 1 "${AB_S:-12}" "$BIN/flashtune" bench --operation bwd --dtype bf16 --head-dim "$d" --causal "$c" \
      --batch 4 --seqlen-q 4096 --heads-q $((2048 / d)) --rounds "${AB_ROUNDS:-5}" \
      --variant "$variants" >>"$OUT/ab.log" 2>&1
    s+=("ab d$d causal$c: exit $?, $(($(date +%s) - t)) s")
    t=$(date +%s)
  done
done

grep -E 'FAILED|SKIPPED|Failure|differs' "$OUT/tests.log" | sort | uniq -c | head -6
# The checked shapes' errors: those over their tolerance, and the worst.
grep -E '^\[ errors' "$OUT/tests.log" | awk '{ tol = $NF; sub(/\)/, "", tol); tol += 0; bad = 0
    for (i = 1; i <= NF; ++i) if ($i == "dq" || $i == "dk" || $i == "dv") { v = $(i + 1) + 0; if (v > worst) worst = v; if (v > tol) bad = 1 }
    if (bad && ++shown <= 6) print "over tolerance: " $0 }
  END { printf "worst relative L2 error over %d checked shapes: %g\n", NR, worst }'
printf '%s\n' "${s[@]}"
# The table: one row per shape (median µs of each variant), the ratios, their geomeans last.
awk '/^== d/ { shape = $2 " " $3; order[++n] = shape; next }
  /^hopper_bwd_.*_det0_dg0_dqw0_/ { s0[shape] = $2; t0[shape] = $3 }
  /^hopper_bwd_.*_det1_/ { s1[shape] = $2; t1[shape] = $3 }
  /^hopper_bwd_.*_det2_/ { s2[shape] = $2; t2[shape] = $3 }
  /^hopper_bwd_.*_det0_dg0_dqw1_/ { sw[shape] = $2; tw[shape] = $3 }
  /^fa2_bwd_/ { sf[shape] = $2; tf[shape] = $3 }
  END {
    printf "%-13s %-4s %8s %-4s %8s %-4s %9s %9s %12s\n", "shape", "det0", "us", "det1", "us", "fa2det1", "us", "det1/det0", "det1/fa2det1"
    for (i = 1; i <= n; ++i) {
      k = order[i]; r = "-"; q = "-"
      if (s0[k] == "ok" && s1[k] == "ok" && t0[k] > 0) { r = sprintf("%.3fx", t1[k] / t0[k]); lr += log(t1[k] / t0[k]); nr++ }
      if (s1[k] == "ok" && sf[k] == "ok" && tf[k] > 0) { q = sprintf("%.3fx", t1[k] / tf[k]); lq += log(t1[k] / tf[k]); nq++ }
      printf "%-13s %-4s %8s %-4s %8s %-4s %9s %9s %12s\n", k, (k in s0) ? s0[k] : "-", (k in t0) ? t0[k] : "-",
        (k in s1) ? s1[k] : "-", (k in t1) ? t1[k] : "-", (k in sf) ? sf[k] : "-", (k in tf) ? tf[k] : "-", r, q
    }
    printf "geomean det1/det0 %s (%d shapes), det1/fa2det1 %s (%d shapes)\n",
      nr ? sprintf("%.3fx", exp(lr / nr)) : "-", nr, nq ? sprintf("%.3fx", exp(lq / nq)) : "-", nq
    for (i = 1; i <= n; ++i) {  # WITH_WRITER=1: det 0 through the writer warps (dqw1) over det 0
      k = order[i]
      if (s0[k] == "ok" && sw[k] == "ok" && t0[k] > 0) { printf "%-13s dqw1/dqw0 %.3fx\n", k, tw[k] / t0[k]; lw += log(tw[k] / t0[k]); nw++ }
    }
    if (nw) printf "geomean dqw1/dqw0 %.3fx (%d shapes)\n", exp(lw / nw), nw
    for (i = 1; i <= n; ++i) {  # WITH_DESC=1 (causal shapes): det 2 (descending turns) against det 1 and the default (dqw1)
      k = order[i]
      if (s2[k] == "ok" && s1[k] == "ok") printf "%-13s det2/det1 %.3fx%s\n", k, t2[k] / t1[k],
        (sw[k] == "ok") ? sprintf(", det2/dqw1 %.3fx, det1/dqw1 %.3fx", t2[k] / tw[k], t1[k] / tw[k]) : ""
    }
  }' "$OUT/ab.log"
