#!/usr/bin/env bash
# Session 26, device call 5 (the last of the session's device time): where the decode split
# kernel's time goes at B1 x 2k. Nsight Compute (clocks left as they are) with the sections that
# sample warp stalls per SASS instruction, over flashtune's tuned tile (the database of call 4,
# carried as .devcarry-db/tuned.db) and cuDNN's kernel, one call each after warm-up
# (bench/decode_profile.py). Writes $OUT/decode-2k.ncu-rep, the details page, and the source
# page of each kernel as SASS with its stall samples.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s26/call5.sh
set -uo pipefail
P=.devcarry-s26
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 DECODE_PROFILE_SHAPES="1x2048" DECODE_PROFILE_DB=$PWD/.devcarry-db/tuned.db
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
timeout 200 ncu --clock-control none --profile-from-start off --import-source no \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats \
  --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis \
  -o "$OUT/decode-2k" python3 bench/decode_profile.py $P/libflashtune.so > "$OUT/ncu.log" 2>&1
echo "ncu exit $?"
R=$OUT/decode-2k.ncu-rep
ncu -i "$R" --page details --csv > "$OUT/details.csv" 2> "$OUT/details.err"; echo "details exit $?"
ncu -i "$R" --page details > "$OUT/details.txt" 2>&1
n=0
for k in 'regex:^decode_fwd.*kv0_full$' 'regex:^decode_fwd.*_combine$' 'regex:cudnn_generated' 'regex:lean_reduction'; do
  n=$((n + 1))
  ncu -i "$R" --page source --csv --print-source sass --kernel-name "$k" > "$OUT/source-$n.csv" 2> "$OUT/source-$n.err"
  echo "source $n ($k): exit $?, $(wc -l < "$OUT/source-$n.csv") lines"
done
grep -E "^  [a-zA-Z_]|Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Stall" "$OUT/details.txt" | head -80
bash bench/pack_out.sh "$OUT" gpu.txt details.txt source-1.csv source-2.csv source-3.csv source-4.csv > /dev/null  # at most 8 files come back
