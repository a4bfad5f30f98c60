#!/usr/bin/env bash
# Prepared in session 26 (not run: the device time ran out): s26c = main +
# decode-paged-table-first.patch (this folder: paged kernels plan their splits over the longest
# sequence, so the page-table reads of a block's first step go out together with the read of its
# sequence's length instead of one round trip after it) against s26 = main. The decode GPU tests
# on s26c (a process each: paged ragged batches with lengths 0-4097, pages of 1, 16 and 256 keys),
# then bench/decode_tile_ab.sh on the paged layout only (dense kernels: same plan, same code
# path) at the short caches the tuned paged tiles serve.
# Packs: git worktree add /work/s26c <main>; (cd /work/s26c && git apply
#   bench/data/h200-2026-12-05-s26/decode-paged-table-first.patch); build it and main;
#   bash bench/pack_for_gpu.sh <build> .devcarry-s26c (resp. .devcarry-s26 for main); carry both.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s26/call7.sh
set -uo pipefail
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:RuntimeGpu.MixedVarlen*:TuneGpu.PagedDecode*' SUITE_S=90 JOBS=4 \
  bash bench/gpu_suite.sh .devcarry-s26c > "$OUT/suite-stdout.txt" 2>&1
echo "tests (s26c): exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" > "$OUT/summary.txt"
FLASHTUNE_CACHE_DIR=/tmp/ft-cache-ab PASSES=${PASSES:-2} timeout $(( 300 - ($(date +%s) - t0) )) bash bench/decode_tile_ab.sh \
  "$OUT/bench.txt" .devcarry-s26 .devcarry-s26c "bn32_rm1_w2_s4_cs4 bn32_rm1_w2_s2_cs2 bn64_rm1_w4_s3_cs2" \
  "1 2048,8 2048,1 8192,64 2048,8 32768" paged > "$OUT/ab-summary.txt" 2>&1
echo "tile A/B: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
[ -s "$OUT/ab-summary.txt" ] || python3 bench/bench_ab_summary.py "$OUT/bench.txt" s26 s26c > "$OUT/ab-summary.txt" 2>&1
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab-summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab-summary.txt > /dev/null  # the device returns at most 8 files
