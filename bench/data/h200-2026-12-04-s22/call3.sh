#!/usr/bin/env bash
# Session 22, call 3: why the split kernel takes 10 us at B1 x 2k (cuDNN's 7.5 us, call 2):
# warp stall reasons (Nsight Compute, --clock-control none) of flashtune's split kernel and
# combine against SDPA cuDNN's kernels at B1 x 2k and B8 x 2k through call 1's tuned database;
# the same build as calls 1-2 (.devcarry-s22a, commit 850b6e4: its plain variants are the
# shipped kernels under a `_cl0` name).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s22/call3.sh
set -uo pipefail
N=$PWD/.devcarry-s22a
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$N/flashtune FLASHTUNE_CLI=$N/flashtune \
  FLASHTUNE_CACHE_DIR=/tmp/ft-cache PYTHONUNBUFFERED=1
S=smsp__warp_issue_stalled
M=gpu__time_duration.sum,sm__cycles_active.avg,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active,$S\_no_instruction_per_warp_active.pct,$S\_long_scoreboard_per_warp_active.pct,$S\_barrier_per_warp_active.pct,$S\_wait_per_warp_active.pct,$S\_short_scoreboard_per_warp_active.pct,$S\_math_pipe_throttle_per_warp_active.pct,$S\_lg_throttle_per_warp_active.pct,$S\_membar_per_warp_active.pct,$S\_branch_resolving_per_warp_active.pct,$S\_mio_throttle_per_warp_active.pct,$S\_sleeping_per_warp_active.pct
DECODE_PROFILE_SHAPES=1x2048,8x2048 DECODE_PROFILE_DB=$N/tuned.db timeout 200 ncu --clock-control none \
  --profile-from-start off --csv --page raw --metrics $M python3 bench/decode_profile.py $N/libflashtune.so \
  > $OUT/ncu-stalls.csv 2> $OUT/ncu-stalls.err; echo "profile: exit $?"
python3 - $OUT/ncu-stalls.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 8]
h = rows[0]; i = {n: k for k, n in enumerate(h)}
cols = [c for c in h if c.startswith("smsp__warp_issue_stalled")]
print("kernel | us | active cyc | inst | " + " | ".join(c.replace("smsp__warp_issue_stalled_", "").replace("_per_warp_active.pct", "") for c in cols))
for r in rows[2:]:
    print(r[i["Kernel Name"]][:40], "|", r[i["gpu__time_duration.sum"]], "|", r[i["sm__cycles_active.avg"]], "|",
          r[i["smsp__inst_executed.sum"]], "|", " | ".join(r[i[c]] for c in cols))
PY
