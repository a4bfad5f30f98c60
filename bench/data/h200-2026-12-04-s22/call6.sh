#!/usr/bin/env bash
# Session 22, call 6: s22c = s22b with the prologue's K/V copies issued by one loop (not
# unrolled: the bn32 s4 kernel's code 87 -> 61 KB, the bn64 s3 default's 73 -> 60 KB). Decode and
# varlen decode GPU tests, memcheck on a varlen decode class, decode_bench.py of s22c with s22b as
# --baseline (untuned, dense), the decode buckets tuned and the whole table through them (dense
# and paged), then ncu instruction counts and stall reasons at B1 x 2k / B8 x 2k for s22b and s22c.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s22/call6.sh
set -uo pipefail
STEPS="tests sanitize bench tune tuned" TESTS_S=150 SANITIZE_S=60 BENCH_S=150 TUNE_S=120 TUNED_S=60 \
  TEST_FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses*' BASELINE=$PWD/.devcarry-s22b/libflashtune.so \
  BENCH_ARGS="--layouts dense" bash bench/decode_round.sh .devcarry-s22c
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache PYTHONUNBUFFERED=1
S=smsp__warp_issue_stalled
M=gpu__time_duration.sum,smsp__inst_executed.sum,${S}_no_instruction_per_warp_active.pct,${S}_wait_per_warp_active.pct,${S}_long_scoreboard_per_warp_active.pct,${S}_barrier_per_warp_active.pct
for b in s22b s22c; do
  L=$PWD/.devcarry-$b
  DECODE_PROFILE_SHAPES=1x2048,8x2048 LD_LIBRARY_PATH=$L:/usr/local/cuda/lib64 timeout 100 ncu --clock-control none \
    --profile-from-start off --csv --page raw --metrics $M python3 bench/decode_profile.py $L/libflashtune.so \
    > $OUT/ncu-$b.csv 2> $OUT/ncu-$b.err; echo "ncu $b: exit $?"
done
python3 - $OUT <<'PY'
import csv, os, sys
for b in ("s22b", "s22c"):
    rows = [r for r in csv.reader(open(os.path.join(sys.argv[1], f"ncu-{b}.csv"))) if len(r) > 5]
    if not rows: print(b, "no rows"); continue
    h = rows[0]; i = {n: k for k, n in enumerate(h)}
    for r in rows[2:]:
        if "decode_fwd" not in r[i["Kernel Name"]]: continue
        print(b, r[i["Kernel Name"]][-12:], "|", r[i["gpu__time_duration.sum"]], "ns | inst", r[i["smsp__inst_executed.sum"]], "|",
              " | ".join(f"{c.split('stalled_')[1].split('_per')[0]} {r[i[c]]}" for c in h if "stalled" in c))
PY
grep -E "^B[0-9]" $OUT/decode_bench.log | sed 's/ err [0-9.e-]* / /' | cut -c1-40,150-230
