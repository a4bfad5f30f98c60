#!/usr/bin/env bash
# Session 21, call 1: the decode K/V stream without attention arithmetic, load path by load path
# (bench/decode_load_probe.cu, built on the development machine with
#   nvcc -O3 -std=c++17 -arch=sm_90a -o .devcarry-s21probe/decode_load_probe bench/decode_load_probe.cu -lcuda),
# then the shipped decode kernels (s20c, session 20's default tune) and SDPA in the same run, dense.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-02-s21/call1.sh
set -uo pipefail
C=$PWD/.devcarry-s20c
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
timeout 120 .devcarry-s21probe/decode_load_probe > $OUT/probe.log 2>&1; echo "probe: exit $?"
gunzip -c $C/default.db.gz > /tmp/tuned.db
mkdir -p $OUT/dec
timeout 200 python3 bench/decode_bench.py $C/libflashtune.so --db /tmp/tuned.db --out $OUT/dec --batches 1,8,64 \
  --keys 8192,32768 --layouts dense > $OUT/decode_bench.log 2>&1; echo "decode_bench: exit $?"
tail -12 $OUT/decode_bench.log
cat $OUT/probe.log
