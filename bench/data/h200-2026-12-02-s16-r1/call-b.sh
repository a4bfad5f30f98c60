#!/usr/bin/env bash
# Session 16, call B: the GPU suite on merged main (hopper_fwd's split/addition, det16, hbwd),
# the float64 probe check and sanitizers of the new d64 no-overlap tiles, then det16's and
# hbwd's rounds. Each part writes under its own folder; short tables last.
# usage: OUT=... bash call.sh CARRY_DIR  (CARRY_DIR: bench/pack_for_gpu.sh build DIR;
#        bench/det16_round.sh --pack build DIR; bench/hbwd_round.sh --pack build DIR; plus
#        build/bench/flashtune_hopper_probe and bench/gpu_suite.sh)
set -uo pipefail
BIN=$(cd "$1" && pwd)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=(); t=$(date +%s)
OUT=$OUT/suite SUITE_S=130 TEST_S=120 JOBS=6 bash "$BIN/gpu_suite.sh" "$BIN" > "$OUT/suite-stdout.txt" 2>&1
s+=("suite: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
P=$BIN/flashtune_hopper_probe
NEW=bm64_bn80_wg1_s2_p0_pp0_ov0,bm64_bn128_wg1_s2_p0_pp0_ov0
FLASHTUNE_CACHE_DIR=/tmp/ft-probe timeout 40 "$P" --check --only "$NEW" > "$OUT/probe.log" 2>&1
s+=("probe check: exit $?, $(( $(date +%s) - t )) s: $(grep '^check:' "$OUT/probe.log" | tail -1)"); t=$(date +%s)
for tool in memcheck racecheck; do
  FLASHTUNE_CACHE_DIR=/tmp/ft-probe timeout 20 compute-sanitizer --tool $tool --error-exitcode 9 "$P" --small --only "$NEW" >> "$OUT/probe.log" 2>&1
  s+=("probe $tool: exit $?, $(( $(date +%s) - t )) s, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/probe.log" | tail -1)"); t=$(date +%s)
done
OUT=$OUT/det16 bash "$BIN/det16_round.sh" "$BIN" > "$OUT/det16-stdout.txt" 2>&1
s+=("det16: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
OUT=$OUT/hbwd bash "$BIN/hbwd_round.sh" "$BIN" > "$OUT/hbwd-stdout.txt" 2>&1
s+=("hbwd: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
tail -n 8 "$OUT/suite-stdout.txt"
grep -E '^FAIL|^check:' "$OUT/probe.log" | head -5
tail -n 16 "$OUT/det16-stdout.txt"
tail -n 16 "$OUT/hbwd-stdout.txt"
printf '%s\n' "${s[@]}"
# Few files come back from a call: the per-part logs travel as one archive.
(cd "$OUT" && tar czf logs.tgz suite det16 hbwd && rm -rf suite det16 hbwd)
