#!/usr/bin/env bash
# Session 21, call 3: decode_fwd's main kernel (the template's default configuration, d128 bf16
# bn64 w4 s3) and edited copies of it, against its own load path, through
# `decode_load_probe cubin`. The copies (made from templates/decode_fwd.cuh of 55fe6fd by the
# Python in this folder's call3-variants.txt, each compiled with
# `nvcc -arch=sm_90a -cubin -I. -o NAME.cubin NAME.cu` where NAME.cu includes NAME.cuh):
#   decode_fwd  the template as shipped        nocomp  no QK, softmax or PV in the key loop
#   nopv        QK and softmax, no PV           early   the next stage's copies issued before
#                                                       waiting for this stage (two barriers)
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-02-s21/call3.sh
set -uo pipefail
P=.devcarry-s21probe
timeout 200 $P/decode_load_probe cubin base=$P/decode_fwd.cubin nocomp=$P/nocomp.cubin nopv=$P/nopv.cubin \
  early=$P/early.cubin base2=$P/decode_fwd.cubin > $OUT/probe3.log 2>&1; echo "probe: exit $?"
cat $OUT/probe3.log
