#!/usr/bin/env bash
# Session 35, call 3: prefill over a paged cache by page size (hopper_paged, untuned, through the
# runtime), to say which page sizes serve it best and whether session 34's slow B4 paged256 row is
# real: bench/decode_bench.py at Nq 512 over 4096 keys (B4) and 2048 over 8192 (B1), bf16 d128
# Hq 32 Hkv 8, dense and pages of 16, 32, 64, 128 and 256 keys, each shape twice with the layouts
# in opposite orders (the card's state drifts within a run); then ncu of the B4 paged64 and
# paged256 kernels (dram / L2 throughput, L2 hit rate) where time is left.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call3.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-c3 FLASHTUNE_DB=/tmp/ft-c3-absent.db
: > "$OUT/pages.txt"
for shape in "4 512 4096" "1 2048 8192"; do
  set -- $shape
  for order in dense,paged16,paged32,paged64,paged128,paged256 paged256,paged128,paged64,paged32,paged16,dense; do
    timeout 120 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT" --batches $1 --seqlen-q $2 --keys $3 \
      --layouts $order >> "$OUT/pages.txt" 2>&1
    echo "B$1 Nq$2 Nk$3 $order: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  done
done
left=$(( 540 - ($(date +%s) - t0) ))
if [ $left -gt 120 ]; then
  for layout in paged64 paged256; do
    timeout $(( left / 2 - 10 )) ncu --clock-control none -k regex:hopper_paged --launch-skip 5 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis \
      python3 bench/decode_bench.py $P/libflashtune.so --out /tmp --batches 4 --seqlen-q 512 --keys 4096 \
      --layouts $layout > "$OUT/ncu-$layout.txt" 2>&1
    echo "ncu $layout: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
    grep -E "DRAM Throughput|L2 Hit Rate|Memory Throughput|Duration|L1/TEX Hit|Compute \(SM\)" "$OUT/ncu-$layout.txt" \
      | head -12 | sed "s/^/$layout /" >> "$OUT/summary.txt"
  done
fi
cat "$OUT/summary.txt"
grep -h "^B[0-9]" "$OUT/pages.txt" | sort -u
bash bench/pack_out.sh "$OUT" summary.txt pages.txt gpu.txt ncu-paged64.txt ncu-paged256.txt > /dev/null
