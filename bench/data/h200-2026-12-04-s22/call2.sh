#!/usr/bin/env bash
# Session 22, call 2: where B1 x 2k's time goes. Nsight Compute (--clock-control none) on
# bench/decode_profile.py at B1 x 2k, B1 x 8k and B8 x 2k through call 1's tuned database
# (flashtune's split kernel and combine, SDPA cuDNN and flash), then on `flashtune bench` at
# B1 x 2k for the tuned plain winner (bn32 s4 cs4, 64 splits + combine) and its cluster-of-16
# counterpart (bn32 s4 cl16) and the default tile's (bn64 s3 cl16).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s22/call2.sh   (call 1's tuned.db in .devcarry-s22a)
set -uo pipefail
N=$PWD/.devcarry-s22a
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune FLASHTUNE_CLI=$N/flashtune \
  FLASHTUNE_CACHE_DIR=/tmp/ft-cache PYTHONUNBUFFERED=1
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__cycles_active.avg,gpc__cycles_elapsed.max
DECODE_PROFILE_SHAPES=1x2048,1x8192,8x2048 DECODE_PROFILE_DB=$N/tuned.db timeout 150 ncu --clock-control none \
  --profile-from-start off --csv --page raw --metrics $M python3 bench/decode_profile.py $N/libflashtune.so \
  > $OUT/ncu-profile.csv 2> $OUT/ncu-profile.err; echo "profile: exit $?"
V=decode_fwd_bf16_d128_; F=_full
for k in bn32_rm1_w2_s4_cs4_cl0 bn32_rm1_w2_s4_cs2_cl16 bn64_rm1_w4_s3_cs2_cl16; do
  timeout 90 ncu --clock-control none -k regex:$k --launch-skip 20 --launch-count 4 --csv --page raw --metrics $M \
    $N/flashtune bench --batch 1 --seqlen-q 1 --seqlen-k 2048 --heads-q 32 --heads-kv 8 --variant $V$k$F --rounds 3 \
    > $OUT/ncu-$k.csv 2> $OUT/ncu-$k.err; echo "$k: exit $?"
done
python3 - $OUT <<'PY'
import csv, glob, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncu-*.csv"))):
    rows = [r for r in csv.reader(open(f)) if len(r) > 8]
    if not rows: print(os.path.basename(f), "no rows"); continue
    h = rows[0]; i = {n: k for k, n in enumerate(h)}
    print("==", os.path.basename(f))
    for r in rows[2:]:
        g = lambda n: r[i[n]] if n in i else "?"
        print(g("Kernel Name")[:60], "|", g("gpu__time_duration.sum"), "ns |", g("dram__bytes_read.sum"), "|",
              g("dram__throughput.avg.pct_of_peak_sustained_elapsed"), "% dram | grid", g("launch__grid_size"), "x",
              g("launch__block_size"), "| regs", g("launch__registers_per_thread"), "| active", g("sm__cycles_active.avg"),
              "/", g("gpc__cycles_elapsed.max"))
PY
