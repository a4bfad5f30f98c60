#!/usr/bin/env bash
# hopper3 call 2: session 13's template (three blocks per SM, the un-peeled overlapped loop):
# float64 check, the loop A/B, the full grid (budgeted tune of bf16+f16 d64/d128/d256
# and B1 H32 N8192 d128, then the runtime against SDPA flash/cuDNN), sanitizers, GPU tests while
# time is left. Everything lands in $OUT/hopper3-call2.tgz, re-packed after every step (a call
# cut at its limit still brings back the steps done).
D=$(cd "$1" && pwd)
LIMIT=${LIMIT:-270}
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$(mktemp -d)
pack() { (cd "$R" && tar czf "$OUT/hopper3-call2.tgz.tmp" . && mv "$OUT/hopper3-call2.tgz.tmp" "$OUT/hopper3-call2.tgz"); }
step() {  # step NAME STEPS [VAR=VALUE ...]
  local name=$1 steps=$2; shift 2
  mkdir -p "$R/$name"
  echo "######## $name ($(left) s left)"
  env OUT="$R/$name" STEPS="$steps" "$@" bash "$D/round.sh" "$D" 2>&1 | tail -n ${TAIL:-40}
  pack
}
step check check CHECK_S=30
step loop loop TIME_S=45
step grid tune TUNE_S=90 REPORT_S=100 GRID_DIMS=64,128,256 GRID_DTYPES=bf16,f16 GRID_EXTRA=1 COMPARE_LINES=8
[ "$(left)" -gt 50 ] && step sanitize sanitize SANITIZE_S=15 \
  SANITIZE_ONLY=d64_bm64_bn64_wg1_s2_p1,d128_bm128_bn176_wg2_s2_p1,d256_bm128_bn80_wg2_s2_p0
[ "$(left)" -gt 40 ] && step gputests gputests GPUTESTS_S=$(( $(left) - 10 )) GPUTESTS_FILTER='ForwardGpu/FullSpace.*'
echo "total $(( $(date +%s) - T0 )) s"
