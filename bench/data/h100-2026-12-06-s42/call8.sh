#!/usr/bin/env bash
# Session 42, call 8 (prepared, not run): what call 7 left of hopper_fwd's untuned rule. 1) The
# same pairs on packed sequences (`flashtune bench --layout varlen`: B sequences of N rows each),
# where DefaultFor keeps the class default (p0) for want of a measurement: d64 / d96 / d128,
# class default against its p2 twin, and d96's 192x80 three-warpgroup p2 tile. 2) f16, dense,
# the same pairs (the rule was measured on bf16). FA-2's grid shapes (B*N = 16k, H = 2048 // D),
# N 512 / 2k / 16k, full and causal, `--rounds 5`. Decide: packed sequences take the rule where
# the twin is ahead at N 512-2k as dense is (generator/families/hopper_fwd.cpp, ProblemTile);
# f16 keeps it unless it loses. ~250 s, estimated.
# PACK: main's build (bash bench/pack_for_gpu.sh build .devcarry-NAME).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s42/call8.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s42c8
# dtype layout, head dim, the default's tile, extra variants (tile_p, or -)
rows=("bf16 varlen 64 bm192_bn128_wg3 -" "bf16 varlen 96 bm128_bn128_wg2 bm192_bn80_wg3_s2_p2"
      "bf16 varlen 128 bm128_bn128_wg2 -" "f16 dense 64 bm192_bn128_wg3 -"
      "f16 dense 96 bm128_bn128_wg2 bm192_bn80_wg3_s2_p2" "f16 dense 128 bm128_bn128_wg2 -")
for row in "${rows[@]}"; do
  set -- $row
  dt=$1 layout=$2 d=$3 tile=$4 extra=$5
  for causal in 0 1; do
    mask=$([ $causal = 1 ] && echo causal || echo full)
    v="hopper_fwd_${dt}_d${d}_${tile}_s2_p0_pp1_ov1_$mask,hopper_fwd_${dt}_d${d}_${tile}_s2_p2_pp1_ov1_$mask"
    [ "$extra" != - ] && v="$v,hopper_fwd_${dt}_d${d}_${extra}_pp1_ov1_$mask"
    for n in ${NS:-512 2048 16384}; do
      echo "== $layout" >> "$OUT/bench.txt"
      timeout 60 $P/flashtune bench --dtype $dt --head-dim $d --causal $causal --batch $((16384 / n)) \
        --seqlen-q $n --heads-q $((2048 / d)) --layout $layout --variant "$v" --rounds 5 >> "$OUT/bench.txt" 2>&1
      echo "exit $? $dt $layout d$d $mask N$n at $(( $(date +%s) - t0 )) s" >> "$OUT/bench.txt"
    done
  done
done
# One line a shape: each variant's median and its time over the class default's (p0).
python3 - "$OUT/bench.txt" > "$OUT/summary.txt" <<'PY'
import re, sys
layout, shape, rows = "", None, []
def flush():
    if shape and rows:
        base = next((us for v, us in rows if "_p0_" in v), rows[0][1])
        label = lambda v: re.sub(r"^hopper_fwd_(bf16|f16)_|_pp1_ov1_(full|causal)$", "", v)
        print(f"{layout} {shape} | " + " | ".join(f"{label(v)} {us:.1f} ({us / base:.3f})" for v, us in rows))
for line in open(sys.argv[1]):
    if line.startswith("== "):
        flush(); shape, rows, layout = None, [], line[3:].strip()
        continue
    m = re.match(r"^((bf16|f16) d\d+ \w+ B\d+ Nq\d+)", line)
    if m and " on " in line:
        flush(); shape, rows = m.group(1), []
        continue
    f = line.split()
    if len(f) >= 3 and f[0].startswith("hopper_fwd_") and f[1] == "ok":
        rows.append((f[0], float(f[2])))
flush()
PY
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^exit [^0]" "$OUT/bench.txt" || true
