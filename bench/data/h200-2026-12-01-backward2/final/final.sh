#!/usr/bin/env bash
# Final backward round, one device call: the new build (2-D warp layout defaults) is tested
# (BackwardGpu.*, deterministic bit-identity, memcheck) and A/B-timed against the rows layout;
# the bench then runs on the new build if it passed and its defaults were faster, else on the
# safe build (rows-layout defaults, verified in the first call). One .tgz of logs comes back.
# usage: final.sh CARRY   (CARRY: new/ safe/ cache/ python/ backward_bench.py backward_round.sh)
set -u
C=$(cd "${1:?usage: final.sh CARRY}" && pwd)
OUT=${OUT:-$PWD/final-round}
mkdir -p "$OUT"
cp -r "$C/cache" /tmp/ftcache && export FLASHTUNE_CACHE_DIR=/tmp/ftcache
for b in new safe; do
  mkdir -p "$C/$b/python" && cp -r "$C/python/flashtune" "$C/$b/python/" && cp "$C/backward_bench.py" "$C/$b/"
done
L1_128=fa2_bwd_bf16_d128_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs1_lay1_full
L2_128=fa2_bwd_bf16_d128_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs1_lay2_full
L1_64=fa2_bwd_bf16_d64_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs0_lay1_full
L2_64=fa2_bwd_bf16_d64_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs0_lay2_full
export AB_VARIANTS_128=$L1_128,$L2_128,fa2_bwd_bf16_d128_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs0_lay2_full,fa2_bwd_bf16_d128_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs1_lay2_full,fa2_bwd_bf16_d128_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs0_lay2_full
export AB_VARIANTS_64=$L1_64,$L2_64,fa2_bwd_bf16_d64_bc128_br128_w8_s2_det0_dqc64_dqv2_dqs0_lay2_full,fa2_bwd_bf16_d64_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs0_lay2_full,fa2_bwd_bf16_d64_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs1_lay2_full
export AB_ROUNDS=1 TESTS_BWD_FILTER='BackwardGpu.*:BackwardGpuDeterministic*'
export TESTS_BWD_S=${TESTS_BWD_S:-40} SANITIZE_S=${SANITIZE_S:-25} AB_S=${AB_S:-35} BENCH_S=${BENCH_S:-60} NCU_S=${NCU_S:-20}
OUT=$OUT/new STEPS="tests_bwd sanitize ab" bash "$C/backward_round.sh" "$C/new" >"$OUT/new-round.txt" 2>&1
# Sum of the medians (µs) of a URI's rows, full and causal, in the A/B log.
sum_of() { awk -v a="${1%_full}" '$1 == a"_full" || $1 == a"_causal" { s += $3 } END { print s + 0 }' "$OUT/new/ab.log"; }
t1=$(( $(sum_of $L1_128 | cut -d. -f1) + $(sum_of $L1_64 | cut -d. -f1) ))
t2=$(( $(sum_of $L2_128 | cut -d. -f1) + $(sum_of $L2_64 | cut -d. -f1) ))
pick=safe
if grep -q "^tests_bwd: rc=0 " "$OUT/new/summary.txt" && grep -q "^sanitize: rc=0 " "$OUT/new/summary.txt" &&
   [ "$t2" -gt 0 ] && [ "$t2" -lt "$t1" ]; then pick=new; fi
echo "rows-layout defaults $t1 us, 2-D defaults $t2 us (sum of 4 A/B shapes); bench on: $pick" | tee "$OUT/pick.txt"
OUT=$OUT/bench STEPS="bench" bash "$C/backward_round.sh" "$C/$pick" >"$OUT/bench-round.txt" 2>&1
# Nsight Compute on one timed launch of each layout's d128 default (the new build's CLI).
NCU_SKIP=6 NCU_SDPA=0 NCU_VARIANTS=$L2_128,$L1_128 OUT=$OUT/ncu STEPS="ncu" bash "$C/backward_round.sh" "$C/new" \
  >"$OUT/ncu-round.txt" 2>&1
cat "$OUT/new-round.txt" "$OUT/bench-round.txt" "$OUT/ncu-round.txt" | grep -v "^\s*$" | cut -c1-150 | tail -90
(cd "$OUT" && tar czf backward-final.tgz --exclude backward-final.tgz ./* && find . -type f ! -name backward-final.tgz ! -name pick.txt -delete)
