#!/usr/bin/env bash
# Session 22, call 7: call 6's tuned table read paged K/V at 68-70% of the read at B8 x 32k-128k
# (call 1: 88-95%). decode_bench.py's --baseline times dense inputs only, so each build runs the
# whole bench in turn (untuned, dense and paged 16 / 256, B8 and B64 x 32k-128k), twice, in the
# order a b c a b c: s22a (the kernels of 41fadec), s22b (epilogue statistics per row, dense
# addresses by addition), s22c (s22b with the prologue's copies in a loop).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s22/call7.sh
set -uo pipefail
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache PYTHONUNBUFFERED=1
for pass in 1 2; do
  for b in s22a s22b s22c; do
    N=$PWD/.devcarry-$b
    mkdir -p $OUT/$b-$pass
    LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 120 python3 bench/decode_bench.py $N/libflashtune.so \
      --out $OUT/$b-$pass --batches 8,64 --keys 32768,131072 > $OUT/$b-$pass/decode_bench.log 2>&1
    echo "== $b pass $pass: exit $?"
    grep -E "^B[0-9]" $OUT/$b-$pass/decode_bench.log | grep -v skipped | sed -E 's/ err [0-9.e-]+//g' | cut -c1-170
  done
done
