#!/usr/bin/env bash
# Session 26, device call 2: session 25's hopper_fwd dependent-launch A/B
# (bench/data/h200-2026-12-05-s25/call2.sh: s25p = main + hopper-pdl.patch against s25m = main),
# then forward()'s host work on the real driver: flashtune_runtime_bench of main (s25m) and of
# a89946c (s25h: before session 25's host changes; the binary links libflashtune statically),
# each run twice in turn. Logs under $OUT/c2 and $OUT/host.
# Packs carried: .devcarry-s25m, .devcarry-s25p (bench/pack_for_gpu.sh), .devcarry-s25h (a89946c's
# flashtune_runtime_bench + libbenchmark).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s26/call2.sh
set -uo pipefail
t0=$(date +%s)
mkdir -p "$OUT/c2" "$OUT/host"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
W=$OUT/c2 OUT=$OUT/c2 timeout 450 bash bench/data/h200-2026-12-05-s25/call2.sh > "$OUT/c2.txt" 2>&1
echo "call2 exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/c2.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-host
for pass in 1 2; do
  for b in s25h s25m; do
    left=$(( 590 - ($(date +%s) - t0) ))
    (( left < 15 )) && break 2
    LD_LIBRARY_PATH=.devcarry-$b:/usr/local/cuda/lib64 timeout $(( left < 40 ? left : 40 )) .devcarry-$b/flashtune_runtime_bench \
      --benchmark_filter='Warm|Baseline' --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      > "$OUT/host/$b-pass$pass.txt" 2>&1
  done
done
cat "$OUT/gpu.txt"; echo "=== c2 (hopper pdl: s25m old, s25p new)"; cat "$OUT/c2.txt"
echo "=== host (s25h = a89946c, s25m = main): median cpu time"
grep -H -E "_median" "$OUT"/host/*.txt | awk '{print $1, $3, $4}'
