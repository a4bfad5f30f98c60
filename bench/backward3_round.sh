#!/usr/bin/env bash
# One device call for the backward pass's instruction-overhead round (issue 15, session 15):
#  1. the candidate build (s2) through the backward GPU tests (float64 reference, deterministic
#     bit-identity over 3 runs at d128 and d64) and compute-sanitizer memcheck; s1 the same if
#     s2 fails;
#  2. an A/B of three builds in one run, the builds interleaved per shape (pass A old, s1, s2;
#     pass B s2, s1, old): `flashtune bench --operation bwd --rounds 3`, bf16 B4 N4096 hidden
#     2048, d64 / d128, full / causal, the defaults and their neighbours;
#  3. bench/backward_bench.py (defaults vs SDPA flash and cuDNN) on the fastest build that
#     passed, by the sum of the defaults' medians over the A/B's shapes.
# usage: backward3_round.sh CARRY   (CARRY: old/ s1/ s2/ [CLI, libflashtune.so, tests],
#        cache/ (cubins precompiled on the CPU), python/, backward_bench.py, backward_round.sh)
set -u
C=$(cd "${1:?usage: backward3_round.sh CARRY}" && pwd)
OUT=${OUT:-$PWD/backward3-round}
mkdir -p "$OUT"
cp -r "$C/cache" /tmp/ftcache && export FLASHTUNE_CACHE_DIR=/tmp/ftcache
for b in s1 s2; do
  mkdir -p "$C/$b/python" && cp -r "$C/python/flashtune" "$C/$b/python/" && cp "$C/backward_bench.py" "$C/$b/"
done
export TESTS_BWD_FILTER='BackwardGpu.*:BackwardGpuDeterministic*' TESTS_BWD_S=${TESTS_BWD_S:-50} SANITIZE_S=${SANITIZE_S:-25}
passed() { grep -q "^tests_bwd: rc=0 " "$OUT/$1/summary.txt" && grep -q "^sanitize: rc=0 " "$OUT/$1/summary.txt"; }
OUT=$OUT/s2 STEPS="tests_bwd sanitize" bash "$C/backward_round.sh" "$C/s2" >"$OUT/s2-round.txt" 2>&1
ok=""
passed s2 && ok="s2"
if [ -z "$ok" ]; then
  OUT=$OUT/s1 STEPS="tests_bwd sanitize" bash "$C/backward_round.sh" "$C/s1" >"$OUT/s1-round.txt" 2>&1
  passed s1 && ok="s1"
fi
echo "passed tests + memcheck: ${ok:-none}" | tee "$OUT/tests.txt"

V128="fa2_bwd_bf16_d128_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs1_lay2_full,fa2_bwd_bf16_d128_bc128_br64_w8_s2_det0_dqc64_dqv2_dqs0_lay2_full,fa2_bwd_bf16_d128_bc128_br64_w8_s2_det1_dqc64_dqv2_dqs1_lay2_full"
V64="fa2_bwd_bf16_d64_bc128_br128_w8_s2_det0_dqc64_dqv2_dqs0_lay2_full,fa2_bwd_bf16_d64_bc128_br128_w8_s2_det0_dqc64_dqv2_dqs1_lay2_full,fa2_bwd_bf16_d64_bc128_br128_w8_s2_det1_dqc64_dqv2_dqs0_lay2_full,fa2_bwd_bf16_d64_bc128_br128_w8_s2_det1_dqc64_dqv2_dqs1_lay2_full"
D128=${V128%%,*} D64=${V64%%,*}
ab() {  # build head_dim causal variants
  local suffix=$([ "$3" = 1 ] && echo _causal || echo _full)
  echo "== $1"
  timeout -k 5 25 "$C/$1/flashtune" bench --operation bwd --dtype bf16 --head-dim "$2" --causal "$3" --batch 4 \
    --seqlen-q 4096 --heads-q $((2048 / $2)) --rounds 3 --variant "${4//_full/$suffix}"
}
t0=$(date +%s)
for pass in A B; do
  for shape in "128 0" "128 1" "64 0" "64 1"; do
    set -- $shape
    builds="old s1 s2"; [ $pass = B ] && builds="s2 s1 old"
    vars=$([ "$1" = 128 ] && echo "$V128" || echo "$V64")
    [ $pass = B ] && vars=$([ "$1" = 128 ] && echo "$D128" || echo "$D64")  # pass B: the defaults only
    for b in $builds; do ab "$b" "$1" "$2" "$vars"; done
  done
done >"$OUT/ab.log" 2>&1
echo "ab: $(( $(date +%s) - t0 ))s" >>"$OUT/tests.txt"
# The A/B table: build, variant, median µs, status; one row per (pass, build, variant).
awk '/^== /{b=$2} /^fa2_bwd/{print b, $1, $3, $2}' "$OUT/ab.log" >"$OUT/ab.tsv"
sum_defaults() {  # build: the defaults' medians summed over both passes and the four shapes
  awk -v b="$1" -v a="${D128%_full}" -v c="${D64%_full}" '$1 == b && ($2 == a"_full" || $2 == a"_causal" ||
    $2 == c"_full" || $2 == c"_causal") { s += $3 } END { print int(s) }' "$OUT/ab.tsv"
}
# The bench runs on s2 if it passed and is not slower than s1; on s1 if s1 is faster (tested
# first if it was not yet) or s2 failed.
t1=$(sum_defaults s1) t2=$(sum_defaults s2)
pick=""
if [ "$ok" = s2 ] && [ "$t2" -gt 0 ] && { [ "$t1" -eq 0 ] || [ "$t2" -le "$t1" ]; }; then
  pick=s2
elif [ "$t1" -gt 0 ]; then
  if [ ! -f "$OUT/s1/summary.txt" ]; then
    OUT=$OUT/s1 STEPS="tests_bwd sanitize" bash "$C/backward_round.sh" "$C/s1" >"$OUT/s1-round.txt" 2>&1
  fi
  passed s1 && pick=s1
fi
[ -z "$pick" ] && [ "$ok" = s2 ] && pick=s2
echo "defaults summed: old $(sum_defaults old) s1 $t1 s2 $t2 us; bench on: ${pick:-none}" | tee -a "$OUT/tests.txt"
if [ -n "$pick" ]; then
  OUT=$OUT/bench STEPS="bench" BENCH_S=${BENCH_S:-80} bash "$C/backward_round.sh" "$C/$pick" >"$OUT/bench-round.txt" 2>&1
fi
cat "$OUT/tests.txt"
for b in s2 s1; do [ -f "$OUT/$b-round.txt" ] && { echo "== $b tests"; grep -v "^\s*$" "$OUT/$b-round.txt" | tail -12; }; done
echo "== A/B (build variant median_us status)"; cat "$OUT/ab.tsv"
[ -f "$OUT/bench-round.txt" ] && { echo "== bench"; grep -E "^(bf16|f16|geomean|determ)" "$OUT/bench/bench.log" | cut -c1-112; }
exit 0
