#!/usr/bin/env bash
# Session 28, call B: the correctness left open by session 27, and its prepared A/B.
# (1) compute-sanitizer memcheck, racecheck and synccheck on the tiles the thresholded rescale
# changed (session 27's call6.sh: hopper_probe --small, key-ramp shape included);
# (2) flashtune_hopper_probe --ab28: the threshold on the tiles --ab27 left out;
# (3) the forward GPU tests on main's pack (ForwardGpu*, a process each): the hopper_fwd variants
# with the threshold off had not yet run on the key-ramp shapes.
# PACK: main's build with flashtune_hopper_probe copied in.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h200-2026-12-05-s28/callB.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
ONLY=d256_bm128_bn80_wg2_s2_p0,d256_bm128_bn80_wg2_s2_p1,d64_bm192_bn128_wg3_s2_p1
: > "$OUT/summary.txt"
for tool in memcheck:100 racecheck:150 synccheck:90; do
  name=${tool%%:*}
  timeout ${tool#*:} compute-sanitizer --tool $name --error-exitcode 9 $P/flashtune_hopper_probe --small --only $ONLY \
    > "$OUT/sanitizer-$name.log" 2>&1
  echo "$name: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY' "$OUT/sanitizer-$name.log" | sort | uniq -c | tr '\n' ' ')" >> "$OUT/summary.txt"
done
timeout 90 $P/flashtune_hopper_probe --ab28 > "$OUT/ab28.txt" 2>&1
echo "ab28: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
grep '|' "$OUT/ab28.txt" > "$OUT/ab28-table.txt"
mkdir -p "$OUT/t"
left=$(( 560 - ($(date +%s) - t0) ))
OUT=$OUT/t FILTER='ForwardGpu*' SUITE_S=$left JOBS=3 TEST_S=200 bash bench/gpu_suite.sh "$P" > "$OUT/suite-stdout.txt" 2>&1
echo "forward tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL' "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab28-table.txt"; tail -5 "$OUT/suite-stdout.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab28-table.txt suite-stdout.txt > /dev/null
