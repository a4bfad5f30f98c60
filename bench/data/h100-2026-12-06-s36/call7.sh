#!/usr/bin/env bash
# Session 36, call 7 (prepared, not run): the final build, 49ba30f (call 6's F with the Q load a
# device function, not a lambda: its persistent paged tiles compile differently from call 6's, and
# hopper_fwd's SASS is the session start's): CachePrefillGpu, then bench/varlen_bench.py --mixed-only (vLLM's
# mixed batch: 30 decode rows over 8192 keys + 2 prefills of 4096 tokens, dense, varlen and over
# 16-key pages, routed by decode_seqs).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s36/call7.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*' SUITE_S=30 JOBS=4 TEST_S=30 bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-v7 timeout 40 \
  python3 bench/varlen_bench.py $P/libflashtune.so --out "$OUT" --mixed-only > "$OUT/varlen.txt" 2>&1
echo "varlen_bench --mixed-only: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
grep -E "^(full|causal)|paged|output check" "$OUT/varlen.txt" | tail -16
bash bench/pack_out.sh "$OUT" summary.txt tests.txt varlen.txt gpu.txt > /dev/null
