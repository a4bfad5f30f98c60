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
NEW=.devcarry-s26c FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:RuntimeGpu.MixedVarlen*:TuneGpu.PagedDecode*' \
  TILES="bn32_rm1_w2_s4_cs4 bn32_rm1_w2_s2_cs2 bn64_rm1_w4_s3_cs2" SHAPES="1 2048,8 2048,1 8192,64 2048,8 32768" \
  LAYOUTS=paged exec bash "$(dirname "$0")/call6.sh"
