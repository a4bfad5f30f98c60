#!/usr/bin/env bash
# Session 21, call 4: call 3's decode_fwd builds beside the probe's cp.async ring made step by
# step like decode_fwd's (rows 272 bytes apart, the zero-fill form, the Q tile's shared memory),
# on constant and on pseudo-random K/V (PROBE_RANDOM=1); then decode_bench.py (the shipped
# build s20c with session 20's default tune, CUDA-graph replays) at B64 x 32k and B8 x 32k.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-02-s21/call4.sh
set -uo pipefail
P=.devcarry-s21probe
for r in 0 1; do
  PROBE_RANDOM=$r timeout 100 $P/decode_load_probe cubin base=$P/decode_fwd.cubin nocomp=$P/nocomp.cubin \
    > $OUT/probe4-random$r.log 2>&1; echo "probe random=$r: exit $?"
done
C=$PWD/.devcarry-s20c
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune
gunzip -c $C/default.db.gz > /tmp/tuned.db
timeout 150 python3 bench/decode_bench.py $C/libflashtune.so --db /tmp/tuned.db --out $OUT --batches 8,64 \
  --keys 32768 --layouts dense > $OUT/decode_bench.log 2>&1; echo "decode_bench: exit $?"
tail -4 $OUT/decode_bench.log
cat $OUT/probe4-random0.log $OUT/probe4-random1.log
