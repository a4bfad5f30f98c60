#!/usr/bin/env bash
# Session 37, call 1: the interleaved re-timing (GpuMeasurerOptions::interleave_retime, `flashtune
# tune --retime-order`), tested and judged, and session 36's prepared call 7.
#  1. GPU tests: TuneGpu.* (the new AnInterleavedRetimingGivesEachFinalistItsOwnTime, and the
#     planted fault/wrong variants through a tune whose re-timing is now interleaved) and
#     CachePrefillGpu.* (hopper_paged's final build: session 36's call 7).
#  2. bench/varlen_bench.py --mixed-only (vLLM's mixed batch over 16-key pages; session 36 call 7).
#  3. The d64 grid buckets tuned cold twice, `--retime-order one-by-one` (the tuner before) and
#     `interleaved` (the new default), nvidia-smi sampling clock and power; both databases
#     through the d64 grid (bench/perf_report.py --rounds 3 against SDPA, one-by-one first); then
#     each problem whose winners differ timed pairwise in 12 back-to-back rounds (`flashtune bench
#     --rounds 12`: the sustained regime the grid runs in), to say whose pick was faster.
# Call 2 ran it as SKIP_CHECKS=1 DIMS=128 SEQS=1024,4096,16384 (steps 1-2 left out; the d128
# buckets of those lengths only, which the tune's exhaustive strategy re-times in up to 3 rounds).
# usage (GPU): PACK=.devcarry-NAME [DIMS=64] [SEQS=N,N,...] [SKIP_CHECKS=1] OUT=$OUT bash bench/data/h100-2026-12-06-s37/call1.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
DIMS=${DIMS:-64}
seqs_tune=; seqs_grid=
[ -n "${SEQS:-}" ] && { seqs_tune="--seqlens-q $SEQS"; seqs_grid="--seqlens $SEQS"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
if [ "${SKIP_CHECKS:-0}" != 1 ]; then
OUT=$OUT/t FILTER='TuneGpu.*:CachePrefillGpu*' SUITE_S=120 JOBS=4 TEST_S=100 bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-v7 timeout 40 \
  python3 bench/varlen_bench.py $P/libflashtune.so --out "$OUT" --mixed-only > "$OUT/varlen.txt" 2>&1
echo "varlen_bench --mixed-only: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
fi

export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-cache-r
reasons=clocks_event_reasons.active
nvidia-smi --query-gpu=$reasons --format=csv > /dev/null 2>&1 || reasons=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,$reasons --format=csv,noheader -lms 50 > "$OUT/smi.csv" &
smi=$!
for which in one-by-one interleaved; do
  s=$(date +%s)
  timeout 150 $P/flashtune tune --db "$OUT/$which.db" --head-dims $DIMS $seqs_tune --decode none --operation fwd \
    --retime-order $which > "$OUT/tune-$which.log" 2>&1
  echo "tune --retime-order $which: exit $? in $(( $(date +%s) - s )) s" >> "$OUT/summary.txt"
done
python3 - "$OUT/one-by-one.db" "$OUT/interleaved.db" > "$OUT/pairs.txt" <<'PY'
import sqlite3, sys
def winners(path):
    q = ("select p.dtype, p.head_dim, p.causal, p.batch, p.seqlen_q, p.heads_q, v.uri from winners w "
         "join problems p on p.id = w.problem_id join variants v on v.id = w.variant_id")
    return {r[:6]: r[6] for r in sqlite3.connect(path).execute(q)}
a, b = winners(sys.argv[1]), winners(sys.argv[2])
for key in sorted(set(a) & set(b)):
    if a[key] != b[key]:
        print(*key, a[key], b[key])
PY
for which in one-by-one interleaved; do
  s=$(date +%s)
  mkdir -p "$OUT/grid-$which"
  timeout 100 python3 bench/perf_report.py --lib $P/libflashtune.so --db "$OUT/$which.db" --out "$OUT/grid-$which" \
    --head-dims $DIMS $seqs_grid --no-extra --rounds 3 --time-limit-s 90 > "$OUT/grid-$which/perf_report.txt" 2>&1
  echo "grid $which: exit $? in $(( $(date +%s) - s )) s" >> "$OUT/summary.txt"
  grep -h "geomean\|SM clock" "$OUT/grid-$which/perf_report.txt" | sed "s/^/  $which: /" >> "$OUT/summary.txt"
  tail -40 "$OUT/grid-$which/perf_report.txt" > "$OUT/grid-$which.txt"
done
echo "problems whose winners differ: $(wc -l < "$OUT/pairs.txt")" >> "$OUT/summary.txt"
while read -r dtype d causal batch n h va vb; do
  (( $(date +%s) - t0 > 560 )) && { echo "time limit: pairs left" >> "$OUT/summary.txt"; break; }
  echo "== $dtype d$d causal$causal B$batch N$n: one-by-one $va, interleaved $vb" >> "$OUT/bench.txt"
  timeout 30 $P/flashtune bench --dtype $dtype --head-dim $d --causal $causal --batch $batch --seqlen-q $n \
    --heads-q $h --variant $va,$vb --rounds 12 >> "$OUT/bench.txt" 2>&1
done < "$OUT/pairs.txt"
kill $smi
grep -h '^==\|^hopper\|^fa2' "$OUT/bench.txt" | awk '{print $1, $2, $3, $4, $5, $6}' >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
grep -E "^(full|causal)|paged|output check" "$OUT/varlen.txt" | tail -8
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt tests.txt varlen.txt bench.txt grid-one-by-one.txt \
  grid-interleaved.txt > /dev/null
