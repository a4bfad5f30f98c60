#!/usr/bin/env bash
# hopper3 call 3: the shipped template (three blocks per SM, the peeled overlapped loop): bf16 d64
# tuned (budgeted, both families) and timed through the runtime against SDPA flash/cuDNN, then
# compute-sanitizer on the three-block persistent tile while time is left. $OUT/hopper3-call3.tgz.
D=$(cd "$1" && pwd)
T0=$(date +%s)
R=$(mktemp -d)
pack() { (cd "$R" && tar czf "$OUT/hopper3-call3.tgz.tmp" . && mv "$OUT/hopper3-call3.tgz.tmp" "$OUT/hopper3-call3.tgz"); }
mkdir -p "$R/grid" "$R/sanitize"
env OUT="$R/grid" STEPS=tune TUNE_S=45 REPORT_S=40 GRID_DIMS=64 GRID_DTYPES=bf16 COMPARE_LINES=20 bash "$D/round.sh" "$D" 2>&1 | tail -n 30
pack
if [ $(( $(date +%s) - T0 )) -lt 55 ]; then
  env OUT="$R/sanitize" STEPS=sanitize SANITIZE_S=8 SANITIZE_ONLY=d64_bm64_bn64_wg1_s2_p1 bash "$D/round.sh" "$D" 2>&1 | tail -n 6
  pack
fi
echo "total $(( $(date +%s) - T0 )) s"
