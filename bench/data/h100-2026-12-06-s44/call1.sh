#!/usr/bin/env bash
# Session 44, call 1: hopper_fwd's P V at the tensors' head dim (96, 160, 224) instead of the
# tile's (128, 192, 256): O's accumulators and the P V wgmma's N shrink to the data's columns, and
# the wgmma reads the last 128-byte swizzle chunk's first columns only. 1) NEW's GPU tests: the
# sampled spaces of d96 / d160 / d224 (both dtypes inside each), varlen and cache prefill at d96,
# hopper_fwd's switched-off tiles (the float64 reference; a partial-atom read that the hardware
# did not honour shows here first). 2) memcheck and racecheck on the d96 sample. 3) The A/B:
# `flashtune bench` on OLD's and NEW's binaries in turn (OLD NEW OLD NEW, each --rounds 3), bf16,
# FA-2's grid shapes (B*N 16k, H = 2048 // D): d96 / d160 / d224 untuned tiles (and d96's tuned
# 192x80 p2) at N 2k and 16k full, 16k causal.
# NEW: main with the change (its build packed), OLD: the build before it. ~330 s, estimated.
# usage (GPU): OLD=.devcarry-M NEW=.devcarry-P OUT=$OUT bash bench/data/h100-2026-12-06-s44/call1.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s44c3-new
step() { echo "$1: exit $2 at $(( $(date +%s) - t0 )) s${3:+; $3}" >> "$OUT/summary.txt"; }
S=ForwardGpu/SampledSpace.SampleMatchesTheReference V=VarlenGpu/VarlenClasses.VariantsMatchTheReference
C=CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference
if [ "${TESTS:-1}" = 1 ]; then
  timeout 300 $N/flashtune_gpu_tests --gtest_filter="$S/2:$S/3:$S/4:$S/5:$S/8:$S/9:$V/2:$V/3:$V/10:$V/11:$C/2:$C/3:$C/10:$C/11:ForwardGpu.HopperSwitchesOff*" \
    > "$OUT/tests.txt" 2>&1
  step "GPU tests" $? "$(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')"
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 $N/flashtune_gpu_tests --gtest_filter="$S/2" \
      > "$OUT/sanitizer-$tool.txt" 2>&1
    step "compute-sanitizer $tool" $? "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1)"
  done
fi
# head dim, variants (tile_stages_p), shapes "causal N"
rows=("96 bm128_bn128_wg2_s2_p0,bm192_bn80_wg3_s2_p2" "160 bm128_bn96_wg2_s2_p0" "224 bm128_bn80_wg2_s2_p0")
for pass in 1 2; do
  for side in old new; do
    P=$N; [ $side = old ] && P=$O
    for row in "${rows[@]}"; do
      set -- $row
      d=$1
      for shape in "0 2048" "0 16384" "1 16384"; do
        set -- $shape
        mask=$([ $1 = 1 ] && echo causal || echo full)
        v=$(echo "$row" | cut -d' ' -f2 | tr ',' '\n' | sed "s/^/hopper_fwd_bf16_d${d}_/; s/$/_pp1_ov1_$mask/" | paste -sd,)
        echo "== $side pass$pass" >> "$OUT/bench.txt"
        LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s44c3-$side timeout 60 \
          $P/flashtune bench --dtype bf16 --head-dim $d --causal $1 --batch $((16384 / $2)) --seqlen-q $2 \
          --heads-q $((2048 / d)) --variant "$v" --rounds 3 >> "$OUT/bench.txt" 2>&1
        echo "exit $? $side d$d $mask N$2 at $(( $(date +%s) - t0 )) s" >> "$OUT/bench.txt"
      done
    done
  done
done
# One line a variant and shape: OLD's and NEW's medians (µs, each pass), NEW / OLD of the means.
python3 - "$OUT/bench.txt" > "$OUT/ab.txt" <<'PY'
import re, sys, collections
side, shape, t = None, None, collections.defaultdict(lambda: {"old": [], "new": []})
for line in open(sys.argv[1]):
    if line.startswith("== "):
        side = line.split()[1]; continue
    m = re.match(r"^((bf16|f16) d\d+ \w+ B\d+ Nq\d+)", line)
    if m and " on " in line:
        shape = m.group(1); continue
    f = line.split()
    if len(f) >= 3 and f[0].startswith("hopper_fwd_") and f[1] == "ok":
        t[(shape, re.sub(r"^hopper_fwd_bf16_|_pp1_ov1_(full|causal)$", "", f[0]))][side].append(float(f[2]))
print("shape | variant | OLD µs | NEW µs | NEW/OLD")
for (shape, v), s in t.items():
    if s["old"] and s["new"]:
        o, n = sum(s["old"]) / len(s["old"]), sum(s["new"]) / len(s["new"])
        print(f"{shape} | {v} | {' '.join(f'{x:.1f}' for x in s['old'])} | {' '.join(f'{x:.1f}' for x in s['new'])} | {n / o:.3f}")
PY
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^\[  FAILED" "$OUT/tests.txt" 2>/dev/null | head; grep -E "^exit [^0]" "$OUT/bench.txt"
cat "$OUT/ab.txt"
