#!/usr/bin/env bash
# hopper4 call 2 (the shipped template: the peeled loop, each tile closed by __syncwarp()): the
# persistent A/B against the template before it (hopper_probe --ab14, FT_HOPPER_SYNCWARP_TILE=0),
# the float64 check of the persistent variants, memcheck and racecheck on one persistent variant
# per head dim, then the forward GPU tests of the switches-off variants while time is left.
# Everything lands in $OUT/hopper4-call2.tgz, re-packed after every step.
D=$(cd "$1" && pwd)
LIMIT=${LIMIT:-70}
T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$(mktemp -d)
pack() { (cd "$R" && tar czf "$OUT/hopper4-call2.tgz.tmp" . && mv "$OUT/hopper4-call2.tgz.tmp" "$OUT/hopper4-call2.tgz"); }
step() {  # step NAME STEPS [VAR=VALUE ...]
  local name=$1 steps=$2; shift 2
  mkdir -p "$R/$name"
  echo "######## $name ($(left) s left)"
  env OUT="$R/$name" STEPS="$steps" "$@" bash "$D/round.sh" "$D" 2>&1 | tail -n ${TAIL:-12}
  pack
}
TAIL=100 step ab ab14 TIME_S=28
step check check CHECK_S=12 CHECK_ONLY=_p1_
step sanitize sanitize SANITIZE_S=11 SANITIZE_TOOLS="memcheck racecheck" \
  SANITIZE_ONLY=d64_bm64_bn64_wg1_s2_p1,d128_bm128_bn176_wg2_s2_p1,d256_bm128_bn80_wg2_s2_p1
[ "$(left)" -gt 12 ] && step gputests gputests GPUTESTS_S=$(( $(left) - 4 )) \
  GPUTESTS_FILTER='ForwardGpu.HopperSwitchesOffMatchTheReference'
echo "total $(( $(date +%s) - T0 )) s"
