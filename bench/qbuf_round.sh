#!/usr/bin/env bash
# One GPU round for hopper_fwd's two Q buffers (p2: a persistent block loads the next tile's Q
# into a second buffer while this tile computes; templates/hopper_fwd.cuh, prepared in session 18,
# docs/perf-notes.md "hopper_fwd: two Q buffers"):
#  1. correctness (tests.log): ForwardGpu.HopperSwitchesOffMatchTheReference (p2 at d128 128x128
#     and d64 192x128 against the float64 reference, causal and not, with every other switch
#     variant), then compute-sanitizer memcheck and synccheck on one p2 call;
#  2. the A/B (ab.log): `flashtune bench --rounds 5` per shape, p1 (the persistent winner) against
#     p2 and p0, bf16, the shapes where cuDNN leads most (d128 full N 512 / 1k, causal N 1k / 2k;
#     d64 full N 512 / 1k), B·N 16k, hidden 2048.
# usage: OUT=DIR bash bench/qbuf_round.sh BIN_DIR   (BIN_DIR: bench/pack_for_gpu.sh's folder)
# Prints last: per shape each variant's median µs and p2 / p1.
set -uo pipefail
BIN=$(cd "${1:?usage: qbuf_round.sh BIN_DIR}" && pwd)
OUT=${OUT:?set OUT to the folder for the logs}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CACHE_DIR=$(mktemp -d)
timeout -k 1 120 "$BIN/flashtune_gpu_tests" --gtest_filter='ForwardGpu.HopperSwitchesOffMatchTheReference' >"$OUT/tests.log" 2>&1
echo "tests: exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.log" | tr '\n' ' ')"
for tool in memcheck synccheck; do
  timeout -k 2 60 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/flashtune" bench --head-dim 128 --causal 1 \
    --batch 2 --seqlen-q 1000 --heads-q 8 --variant hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal >"$OUT/san-$tool.log" 2>&1
  echo "$tool p2: exit $? $(grep 'ERROR SUMMARY' "$OUT/san-$tool.log" | tail -1)"
done
for shape in 128:0:32:512 128:0:16:1024 128:1:16:1024 128:1:8:2048 64:0:32:512 64:0:16:1024; do
  IFS=: read d c b n <<< "$shape"
  if [ "$d" = 128 ]; then t=bm128_bn128_wg2; else t=bm192_bn128_wg3; fi
  m=$([ "$c" = 1 ] && echo causal || echo full)
  h=hopper_fwd_bf16_d${d}_${t}_s2
  echo "== d$d $m N$n" >>"$OUT/ab.log"
  timeout -k 1 60 "$BIN/flashtune" bench --head-dim "$d" --causal "$c" --batch "$b" --seqlen-q "$n" --heads-q $((2048 / d)) \
    --rounds 5 --variant ${h}_p1_pp1_ov1_$m,${h}_p2_pp1_ov1_$m,${h}_p0_pp1_ov1_$m >>"$OUT/ab.log" 2>&1
done
awk '/^== /{k=$2" "$3" "$4; next} /^hopper_fwd_/{split($1,a,"_"); v=a[9]; t[k" "v]=$3; print k, v, $2, $3}
     END{for (x in t) if (x ~ / p2$/) { k=substr(x,1,length(x)-3); if (t[k" p1"]>0) printf "%s p2/p1 %.3f\n", k, t[x]/t[k" p1"] }}' "$OUT/ab.log"
