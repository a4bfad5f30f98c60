#!/usr/bin/env bash
# Packs what a GPU round needs into one folder to carry to the GPU machine (which has the CUDA
# toolkit, PyTorch and libsqlite3, but not Google Benchmark or Boost.Program_options):
# the CLI, the GPU test binary, libflashtune.so, the online-tuning bench, the runtime
# micro-benchmark and its libbenchmark. usage: bench/pack_for_gpu.sh [BUILD_DIR] [OUT_DIR]   (defaults: build .devcarry)
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-.devcarry}
mkdir -p "$OUT"
cp "$BUILD/flashtune" "$BUILD/tests/flashtune_gpu_tests" "$OUT/"
cp -P "$BUILD"/libflashtune.so* "$OUT/"
[ -x "$BUILD/bench/flashtune_online_bench" ] && cp "$BUILD/bench/flashtune_online_bench" "$OUT/"
if [ -x "$BUILD/bench/flashtune_runtime_bench" ]; then
  cp "$BUILD/bench/flashtune_runtime_bench" "$OUT/"
  lib=$(ldd "$BUILD/bench/flashtune_runtime_bench" | awk '/libbenchmark/ {print $3}')
  [ -n "$lib" ] && cp "$lib" "$OUT/"
fi
du -sh "$OUT"
