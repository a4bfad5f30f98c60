#!/usr/bin/env bash
# hopper4 call 1: the one-loop overlapped schedule (FT_HOPPER_ZERO_PV=1, the template's new
# default) and a share of the exponentials on the FMA pipe (FT_HOPPER_POLY_EXP): the float64
# check of both, the A/B timings (hopper_probe --ab14), then ncu of the d64 causal N4k winner
# tile and cuDNN on that shape while time is left. Everything lands in $OUT/hopper4-call1.tgz,
# re-packed after every step (a call cut at its limit still brings back the steps done).
D=$(cd "$1" && pwd)
LIMIT=${LIMIT:-165}
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$(mktemp -d)
pack() { (cd "$R" && tar czf "$OUT/hopper4-call1.tgz.tmp" . && mv "$OUT/hopper4-call1.tgz.tmp" "$OUT/hopper4-call1.tgz"); }
step() {  # step NAME STEPS [VAR=VALUE ...]
  local name=$1 steps=$2; shift 2
  mkdir -p "$R/$name"
  echo "######## $name ($(left) s left)"
  env OUT="$R/$name" STEPS="$steps" "$@" bash "$D/round.sh" "$D" 2>&1 | tail -n ${TAIL:-60}
  pack
}
step check check CHECK_S=55 \
  CHECK_ONLY=d64_bm64_bn64_wg1_s2_p1,d64_bm192_bn128_wg3_s2_p1,d128_bm128_bn176_wg2_s2_p1,d256_bm128_bn80_wg2_s2_p0
step checkpoly check CHECK_S=20 CHECK_DEFINE=FT_HOPPER_POLY_EXP=4 \
  CHECK_ONLY=bf16_d64_bm64_bn64_wg1_s2_p0,fwd_f16_d64_bm192_bn128_wg3_s2_p1
TAIL=200 step ab ab14 TIME_S=$(( $(left) - 35 ))
[ "$(left)" -gt 30 ] && step ncu ncu NCU_SHAPE="4 32 4096 1" NCU_CUDNN=1 \
  NCU_VARIANTS="hopper_fwd_bf16_d64_bm64_bn64_wg1_s2_p0_pp1_ov1_causal"
echo "total $(( $(date +%s) - T0 )) s"
