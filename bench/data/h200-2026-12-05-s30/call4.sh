#!/usr/bin/env bash
# Session 30, call 4: where the paged decode kernel's extra time goes. Call 3 (ncu, each kernel
# alone) timed the split kernel at B1 x 2k at 11.7 us dense with lengths in memory and 15.4 us on
# 16-key pages, the same tile (bn64 w4 s3 cs2, one K/V step a block): 6,600 more active cycles an
# SM. Here Nsight Compute samples warp stalls per SASS instruction of both (SourceCounters), on
# main's build; then the forward, varlen and runtime GPU tests on it (the build shipped in
# session 29, not yet run through them on a GPU).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s30/call4.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt"
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-prof DECODE_PROFILE_SHAPES=1x2048 \
  DECODE_PROFILE_LAYOUTS=dense-lens,paged16 timeout 150 ncu --clock-control none --profile-from-start off \
  --import-source no --section SpeedOfLight --section WarpStateStats --section SourceCounters \
  --section InstructionStats -k 'regex:^decode_fwd' -o "$OUT/paged-2k" python3 bench/decode_profile.py $P/libflashtune.so \
  > "$OUT/ncu.log" 2>&1
echo "ncu: exit $? at $(( $(date +%s) - t0 )) s" > "$OUT/summary.txt"
R=$OUT/paged-2k.ncu-rep
ncu -i "$R" --page details > "$OUT/details.txt" 2>&1
n=0
for k in 'regex:^decode_fwd.*kv0_full$' 'regex:^decode_fwd.*kv1_full$'; do
  n=$((n + 1))
  ncu -i "$R" --page source --csv --print-source sass --kernel-name "$k" > "$OUT/source-kv$((n - 1)).csv" 2> "$OUT/source-$n.err"
  echo "source kv$((n - 1)): exit $?, $(wc -l < "$OUT/source-kv$((n - 1)).csv") lines" >> "$OUT/summary.txt"
done
grep -E "^  [a-zA-Z_]|Duration|SM Active Cycles|Executed Instructions|Warp Cycles Per Issued" "$OUT/details.txt" >> "$OUT/summary.txt"
mkdir -p "$OUT/t"
left=$(( 560 - ($(date +%s) - t0) ))
OUT=$OUT/t FILTER='ForwardGpu*:VarlenGpu*:RuntimeGpu*' SUITE_S=$left JOBS=4 TEST_S=200 \
  bash bench/gpu_suite.sh "$P" > "$OUT/suite-stdout.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL' "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt details.txt source-kv0.csv source-kv1.csv suite-stdout.txt > /dev/null
