#!/usr/bin/env bash
# Session 32, call 1 (prepared; no device was lent in session 32): the Python package's varlen
# and K/V-cache calls on a GPU. (1) tests/python/layouts_gpu_test.py: attention_varlen and
# attention_with_kvcache against a float64 reference (ragged 0-4097 batches, shuffled pages of 16
# and 256 keys, dense caches with lengths, GQA/MQA, Nq 1-16 causal or not, bf16/fp16, d64/128/256,
# lse within 1e-3, a mixed prefill + decode batch, a paged decode step in a CUDA graph);
# (2) bench/python_op.py: its correctness, errors and host-overhead sections (layouts: the new
# calls' host time against ft_forward_ex). Untuned (no database): the built-in tiles.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s32/call1.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
export FLASHTUNE_LIB=$P/libflashtune.so FLASHTUNE_CLI=$P/flashtune PYTHONPATH=$PWD/python
export FLASHTUNE_DB=/tmp/ft-s32-absent.db FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s32 LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64
timeout 300 python3 tests/python/layouts_gpu_test.py -v > "$OUT/layouts_gpu_test.log" 2>&1
echo "layouts_gpu_test: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/layouts_gpu_test.log")" > "$OUT/summary.txt"
grep -E '^(FAIL|ERROR):|AssertionError' "$OUT/layouts_gpu_test.log" | head -20 >> "$OUT/summary.txt"
timeout $(( 570 - ($(date +%s) - t0) )) python3 bench/python_op.py --out "$OUT" --deadline-s 120 > "$OUT/python_op.log" 2>&1
echo "python_op: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
grep -E 'host .* us/call|FAILED|passed,' "$OUT/python_op.log" >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt layouts_gpu_test.log python_op.log > /dev/null
