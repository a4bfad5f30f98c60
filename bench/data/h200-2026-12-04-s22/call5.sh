#!/usr/bin/env bash
# Session 22, call 5: the split kernel's fixed cost (docs/perf-notes.md "Decode round 10"): s22b =
# per-row statistics once per row in the epilogue and dense K/V addresses by addition (one per
# step, an add per chunk) against s22a (commit 850b6e4, the same kernels as 41fadec). Decode and
# varlen decode GPU tests on s22b (float64 reference); decode_bench.py of s22b with s22a as
# --baseline, untuned (the default bn64 w4 s3 cs2), dense; ncu instruction counts and stall
# reasons at B1 x 2k and B8 x 2k for both builds' untuned plans.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s22/call5.sh
set -uo pipefail
N=$PWD/.devcarry-s22b O=$PWD/.devcarry-s22a
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache PYTHONUNBUFFERED=1
env LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune FLASHTUNE_CLI=$N/flashtune \
  timeout 150 $N/flashtune_gpu_tests --gtest_filter='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*' > $OUT/gpu_tests.log 2>&1
echo "gpu tests: exit $?"; grep -E "PASSED|FAILED|Failure" $OUT/gpu_tests.log | head -6
env LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 200 python3 bench/decode_bench.py $N/libflashtune.so --out $OUT \
  --layouts dense --baseline $O/libflashtune.so > $OUT/decode_bench.log 2>&1; echo "decode_bench: exit $?"
S=smsp__warp_issue_stalled
M=gpu__time_duration.sum,sm__cycles_active.avg,smsp__inst_executed.sum,${S}_no_instruction_per_warp_active.pct,${S}_wait_per_warp_active.pct,${S}_long_scoreboard_per_warp_active.pct,${S}_barrier_per_warp_active.pct,${S}_short_scoreboard_per_warp_active.pct
for b in s22a s22b; do
  L=$PWD/.devcarry-$b
  DECODE_PROFILE_SHAPES=1x2048,8x2048 LD_LIBRARY_PATH=$L:/usr/local/cuda/lib64 timeout 100 ncu --clock-control none \
    --profile-from-start off --csv --page raw --metrics $M python3 bench/decode_profile.py $L/libflashtune.so \
    > $OUT/ncu-$b.csv 2> $OUT/ncu-$b.err; echo "ncu $b: exit $?"
done
python3 - $OUT <<'PY'
import csv, os, sys
for b in ("s22a", "s22b"):
    rows = [r for r in csv.reader(open(os.path.join(sys.argv[1], f"ncu-{b}.csv"))) if len(r) > 5]
    if not rows: print(b, "no rows"); continue
    h = rows[0]; i = {n: k for k, n in enumerate(h)}
    for r in rows[2:]:
        if "decode_fwd" not in r[i["Kernel Name"]]: continue
        print(b, r[i["Kernel Name"]][-12:], "|", r[i["gpu__time_duration.sum"]], "ns | inst", r[i["smsp__inst_executed.sum"]], "|",
              " | ".join(f"{c.split('stalled_')[1].split('_per')[0]} {r[i[c]]}" for c in h if "stalled" in c))
PY
tail -16 $OUT/decode_bench.log
