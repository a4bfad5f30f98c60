#!/usr/bin/env bash
# One GPU call for the d64 step prepared in session 15 without a GPU (docs/perf-notes.md,
# "hopper_fwd: S in two wgmma halves"): the FT_HOPPER_SPLIT_S tiles (one consumer warpgroup, no
# overlap, S = Q K^T as two wgmma halves; 64x128 and 64x112 at three blocks per SM) and
# FT_HOPPER_DESC_ADD (wgmma descriptors as base + offset, any tile) under the
# float64 check, compute-sanitizer memcheck and racecheck, then `hopper_probe --ab16`, the
# interleaved A/B against the shipped d64 tiles (bf16, causal N 1k-4k and full N 1k), in that
# order: a failed check still times (the A/B is data), but says so first in the table.
# Logs go to $OUT (check.log, sanitizer.log, ab16.log, nvidia-smi.log); a short table is printed
# last. About 150 s at most (the timeouts below); the GPU's clocks are only read.
#
# usage: OUT=DIR bench/hopper6_round.sh BIN_DIR
#        BIN_DIR: bench/pack_for_gpu.sh's folder plus build/bench/flashtune_hopper_probe, e.g.
#          bench/pack_for_gpu.sh build .devcarry-NAME
#          cp build/bench/flashtune_hopper_probe bench/hopper6_round.sh .devcarry-NAME/
#        then on the GPU (run tool, carry [".devcarry-NAME"], timeout_s 200):
#          OUT=$OUT bash .devcarry-NAME/hopper6_round.sh .devcarry-NAME
set -uo pipefail
BIN=$(cd "${1:?usage: hopper6_round.sh BIN_DIR}" && pwd)
OUT=${OUT:?set OUT to the folder for the logs}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
P=$BIN/flashtune_hopper_probe
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/nvidia-smi.log" 2>&1
s=(); t=$(date +%s)

# float64 check: every split probe (bf16 + f16, causal and not, 11 shapes; 64x128, 64x112 and
# 64x96 at three blocks, 64x128 at two) and every FT_HOPPER_DESC_ADD probe (d64 64x64, 64x128
# split, 192x128; d128 128x128; d256 128x80).
timeout 45 "$P" --check --only SPLIT_S,DESC_ADD > "$OUT/check.log" 2>&1
s+=("check: exit $?, $(( $(date +%s) - t )) s: $(grep '^check:' "$OUT/check.log")"); t=$(date +%s)

# Sanitizers on the candidates (equal halves, causal, with and without FT_HOPPER_DESC_ADD; unequal
# 64 + 48, full).
ONLY=bn128_wg1_s2_p0_pp0_ov0_causal_FT_HOPPER_SPLIT_S_1_FT_HOPPER_BLOCKS_3,bn112_wg1_s2_p0_pp0_ov0_full_FT_HOPPER_SPLIT_S_1_FT_HOPPER_BLOCKS_3
for tool in memcheck racecheck; do
  echo "== $tool" >> "$OUT/sanitizer.log"
  timeout 20 compute-sanitizer --tool $tool --error-exitcode 9 "$P" --small --only "$ONLY" >> "$OUT/sanitizer.log" 2>&1
  s+=("$tool: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
done

# The A/B: interleaved, 6 rounds x 5 launches rotated, median of 30, fa2_fwd's default alongside;
# d64 causal N 1k-4k and full N 1k, then FT_HOPPER_DESC_ADD on d128/d256 at N 16k.
timeout 60 "$P" --ab16 > "$OUT/ab16.log" 2>&1
s+=("ab16: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)

grep -E '^FAIL' "$OUT/check.log" | head -5
grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log"
grep -E 'ptxas note' "$OUT/ab16.log" "$OUT/check.log" | head -3
# TFLOP/s per shape and kernel (the table ab16.log ends with), kernel names shortened.
awk -F' [|] ' '/^d[0-9]+ / && NF == 4 { k = $2; sub(/^hopper_fwd_bf16_/, "", k); sub(/_FT_HOPPER_SPLIT_S_1/, "_split", k);
  sub(/_FT_HOPPER_BLOCKS_/, "_b", k); sub(/_FT_HOPPER_DESC_ADD_1/, "_da", k); gsub(/ +$/, "", k);
  printf "%-26s %-52s %s\n", $1, k, $4 }' "$OUT/ab16.log"
printf '%s\n' "${s[@]}"
