#!/usr/bin/env bash
# Session 35, call 5: hopper_paged's producer warpgroup at 32 registers against 24 (A/B). At 24
# the default paged tiles spill 12-32 bytes in the producer (ptxas); at 32 none (the consumers of
# two-warpgroup tiles keep 232 instead of 240). The pack's library is the shipped 24; base/ is the
# same build with the template's kProducerRegs = kPagedKv ? 32 : 24 (FT_HOPPER_PRODUCER_REGS
# knob). decode_bench at prefill sizes through the runtime, untuned: each layout's baseline runs
# right after it; both layout orders. new / base time > 1: 32 registers faster.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s35/call5.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-c5 FLASHTUNE_DB=/tmp/ft-c5-absent.db
: > "$OUT/ab.txt"
for shape in "128 4 512 4096" "128 1 2048 8192" "64 4 512 4096"; do
  set -- $shape
  for order in dense,dense-lens,paged16,paged64 paged64,paged16,dense-lens,dense; do
    timeout 120 python3 bench/decode_bench.py $P/libflashtune.so --out "$OUT" --head-dim $1 --batches $2 \
      --seqlen-q $3 --keys $4 --layouts $order --baseline $P/base/libflashtune.so >> "$OUT/ab.txt" 2>&1
    echo "d$1 B$2 Nq$3 Nk$4 $order: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  done
done
cat "$OUT/summary.txt"
grep -h "^B[0-9]\|output check" "$OUT/ab.txt" | sed 's/ | flash.*| base dense /| base dense /'
bash bench/pack_out.sh "$OUT" summary.txt ab.txt gpu.txt > /dev/null
