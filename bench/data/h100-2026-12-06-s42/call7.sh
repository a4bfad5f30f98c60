#!/usr/bin/env bash
# Session 42, call 7: hopper_fwd's class default (p0: one tile a block, no persistence) against its
# persistent twin (p2: persistent, two Q buffers; p1 where a second Q tile does not fit: the bn96
# tiles of d160 / d192 and the bn80 tiles of d224 / d256), by `flashtune bench --rounds 5`
# (queued launches, checked against the reference, the variants' order alternating by round),
# bf16, FA-2's grid shapes (B*N = 16k, H = 2048 // D) at N 512 / 2k / 16k (env NS), full and causal.
# At d96 the tuner's pick from call 5 (192x80 three warpgroups p2) is timed beside them.
# Asked by call 5's and 6's tunes: the d96 winners beat the class default (128x128 p0) by 1.04-
# 1.22x, p2 winning at N 512-1k; the d128 default is the same tile. ~200 s, estimated.
# usage (GPU): PACK=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s42/call7.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s42c7
# head dim, the default's tile, its persistent twin's p, extra variants (tile_p, comma list)
rows=("64 bm192_bn128_wg3 2 -" "96 bm128_bn128_wg2 2 bm192_bn80_wg3_s2_p2" "128 bm128_bn128_wg2 2 -"
      "160 bm128_bn96_wg2 1 -" "192 bm128_bn96_wg2 1 -" "224 bm128_bn80_wg2 1 -" "256 bm128_bn80_wg2 1 -")
for row in "${rows[@]}"; do
  set -- $row
  d=$1 tile=$2 tp=$3 extra=$4
  for causal in 0 1; do
    mask=$([ $causal = 1 ] && echo causal || echo full)
    v="hopper_fwd_bf16_d${d}_${tile}_s2_p0_pp1_ov1_$mask,hopper_fwd_bf16_d${d}_${tile}_s2_p${tp}_pp1_ov1_$mask"
    [ "$extra" != - ] && v="$v,hopper_fwd_bf16_d${d}_${extra}_pp1_ov1_$mask"
    for n in ${NS:-512 2048 16384}; do
      timeout 60 $P/flashtune bench --dtype bf16 --head-dim $d --causal $causal --batch $((16384 / n)) \
        --seqlen-q $n --heads-q $((2048 / d)) --variant "$v" --rounds 5 >> "$OUT/bench.txt" 2>&1
      echo "exit $? d$d $mask N$n at $(( $(date +%s) - t0 )) s" >> "$OUT/bench.txt"
    done
  done
done
# One line a shape: each variant's median and its time over the default's (p0).
python3 - "$OUT/bench.txt" > "$OUT/summary.txt" <<'PY'
import re, sys
shape, rows = None, []
def flush():
    if shape and rows:
        base = next((us for v, us in rows if "_p0_" in v), rows[0][1])
        label = lambda v: re.sub(r"^hopper_fwd_bf16_|_pp1_ov1_(full|causal)$", "", v)
        print(shape + " | " + " | ".join(f"{label(v)} {us:.1f} ({us / base:.3f})" for v, us in rows))
for line in open(sys.argv[1]):
    m = re.match(r"^(bf16 d\d+ \w+ B\d+ Nq\d+)", line)
    if m and " on " in line:
        flush(); shape, rows = m.group(1), []
        continue
    f = line.split()
    if len(f) >= 3 and f[0].startswith("hopper_fwd_") and f[1] == "ok":
        rows.append((f[0], float(f[2])))
flush()
PY
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep -E "^exit [^0]" "$OUT/bench.txt"; grep -iE "wrong|fail|error" "$OUT/bench.txt" | head -5
