#!/usr/bin/env bash
# Session 27, call 3: hopper_fwd with FT_HOPPER_RESCALE_THRESHOLD=8 (a row's max kept until a
# block passes it by more than 2^8, so the O rescale is skipped for the warp), fast and correct.
# (1) hopper_probe --ab27: the knob against the template, interleaved, on the grid's tuned
# winners (the decision); (2) the forward GPU tests (ForwardGpu*: every d64 / d128 variant, a
# sample of the other head dims, now with key-ramp shapes whose scores grow block after block)
# on .devcarry-s27t, this commit's build with the knob's default 8, a process each;
# (3) hopper_probe --check with the knob on the grid winners' tiles (d64-d256, both dtypes,
# key-ramp shapes included). PACKs: .devcarry-s27 (this commit + flashtune_hopper_probe),
# .devcarry-s27t (the same with `#define FT_HOPPER_RESCALE_THRESHOLD 8`).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s27/call3.sh
set -uo pipefail
t0=$(date +%s)
P=.devcarry-s27
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-probe
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
timeout 180 $P/flashtune_hopper_probe --ab27 > "$OUT/ab27.txt" 2>&1
echo "ab27: exit $? at $(( $(date +%s) - t0 )) s" > "$OUT/summary.txt"
grep '|' "$OUT/ab27.txt" > "$OUT/ab27-table.txt"
mkdir -p "$OUT/t"
left=$(( 330 - ($(date +%s) - t0) ))
OUT=$OUT/t FILTER='ForwardGpu*' SUITE_S=$left JOBS=3 TEST_S=200 bash bench/gpu_suite.sh .devcarry-s27t > "$OUT/suite-stdout.txt" 2>&1
echo "forward tests (T8 default): exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-stdout.txt")" >> "$OUT/summary.txt"
left=$(( 390 - ($(date +%s) - t0) ))
ONLY=bm128_bn80_wg2_s2_p0,bm64_bn128_wg1_s2_p0_pp1_ov0,bm192_bn128_wg3_s2_p0_pp1_ov1,bm128_bn64_wg2_s2_p1
(( left > 20 )) && timeout $left $P/flashtune_hopper_probe --check --define FT_HOPPER_RESCALE_THRESHOLD=8 --only $ONLY > "$OUT/check-t8.txt" 2>&1
echo "probe check T8: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/check-t8.txt" 2>/dev/null)" >> "$OUT/summary.txt"
grep -h '^FAIL' "$OUT/check-t8.txt" "$OUT"/t/gpu_suite.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt" "$OUT/ab27-table.txt"; tail -15 "$OUT/suite-stdout.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt ab27-table.txt suite-stdout.txt > /dev/null
