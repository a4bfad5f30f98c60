#!/usr/bin/env bash
# Session 18, call 8: decode_fwd's page-table loads one step ahead of their copies (new,
# .devcarry-s18d) against main before it (old, .devcarry-s18c): DecodeGpu* on new (float64
# reference, pages shuffled, block sizes 16 / 256, every class), then bench/decode_bench.py on
# B64 x 32k and B8 x 32k, dense / 16-key / 256-key pages, untuned defaults, new old new old.
# usage (GPU, carry .devcarry-s18c and .devcarry-s18d): OUT=$OUT bash bench/data/h200-2026-12-02-s18/call8.sh
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
use() { C=$PWD/.devcarry-$1; export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune FLASHTUNE_CACHE_DIR=/tmp/cache-$1; mkdir -p /tmp/cache-$1; }
use s18d
timeout 60 $C/flashtune_gpu_tests --gtest_filter='DecodeGpu*' > $OUT/tests.log 2>&1
echo "DecodeGpu* new: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/tests.log | tr '\n' ' ') [$(el) s]"
for pass in 1 2; do
  for b in s18d s18c; do
    use $b
    PYTHONPATH=$PWD/python timeout 40 python3 bench/decode_bench.py $C/libflashtune.so --out /tmp/o-$b-$pass --batches 64,8 \
      --keys 32768 > $OUT/decode-$b-$pass.txt 2>&1
    echo "decode $b pass $pass: exit $? [$(el) s]"
  done
done
for f in $OUT/decode-*.txt; do echo "== $(basename $f)"; grep -E '^B(64|8) ' $f | sed 's/ err [0-9.e-]*//g' | cut -c1-150; done
