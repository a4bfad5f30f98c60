#!/usr/bin/env bash
# Session 29, call H (prepared, not run: the device time ran out): does re-timing under sustained
# load pick the tiles that run faster in sustained use? Call G (bench/data/h100-2026-12-05-s29)
# found an H100 at its 700 W cap after about a second of back-to-back load, its SM clock down
# from 1980 to 1605-1875 MHz, and d64's 64-row tiles 12% slower there against 7% for the 192-row
# ones: the tuner's search (bursts after idle gaps) rates them equal, sustained runs do not.
# The d64 grid buckets are tuned cold twice, with the default re-timing warm-up (25 ms) and with
# `--retime-warmup-ms $HEAT` (the GPU under load that long before each problem's re-timing; call G
# saw the cap engage within about a second of load), nvidia-smi sampling the clock and power
# every 50 ms throughout; then, for every problem whose two winners differ, both winners are timed
# against each other in 12 back-to-back rounds (`flashtune bench --rounds 12`: the sustained
# regime, order reversed each round). The summary lists each differing problem's picks and
# their sustained medians, and the tune times.
# Session 30 added the grid: with GRID=1, both databases then serve the grid's shapes of DIMS
# through bench/perf_report.py (3 rotated rounds against SDPA, each system's SM clock recorded),
# default first, before the pairs: the x cuDNN geomean of each regime's picks.
# usage (GPU): PACK=.devcarry-NAME [HEAT=1000] [DIMS=64] [GRID=1] OUT=$OUT bash bench/data/h200-2026-12-05-s29/callH.sh
set -uo pipefail
t0=$(date +%s)
P=${PACK:?PACK=.devcarry-NAME}
HEAT=${HEAT:-1000}
DIMS=${DIMS:-64}
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$P/flashtune FLASHTUNE_CACHE_DIR=/tmp/ft-cache-h
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
reasons=clocks_event_reasons.active
nvidia-smi --query-gpu=$reasons --format=csv > /dev/null 2>&1 || reasons=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,$reasons --format=csv,noheader -lms 50 > "$OUT/smi.csv" &
smi=$!
for which in default heat; do
  extra=; [ $which = heat ] && extra="--retime-warmup-ms $HEAT"
  s=$(date +%s)
  timeout 200 $P/flashtune tune --db "$OUT/$which.db" --head-dims $DIMS --decode none --operation fwd $extra \
    > "$OUT/tune-$which.log" 2>&1
  echo "tune $which ($extra): exit $? in $(( $(date +%s) - s )) s" >> "$OUT/summary.txt"
done
python3 - "$OUT/default.db" "$OUT/heat.db" > "$OUT/pairs.txt" <<'PY'
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
if [ "${GRID:-0}" = 1 ]; then
  for which in default heat; do
    s=$(date +%s)
    mkdir -p "$OUT/grid-$which"
    timeout 150 python3 bench/perf_report.py --lib $P/libflashtune.so --db "$OUT/$which.db" --out "$OUT/grid-$which" \
      --head-dims $DIMS --no-extra --rounds 3 --time-limit-s 130 > "$OUT/grid-$which/perf_report.txt" 2>&1
    echo "grid $which: exit $? in $(( $(date +%s) - s )) s" >> "$OUT/summary.txt"
    grep -h "geomean\|SM clock" "$OUT/grid-$which/perf_report.txt" | sed "s/^/  $which: /" >> "$OUT/summary.txt"
    tail -40 "$OUT/grid-$which/perf_report.txt" > "$OUT/grid-$which.txt"
  done
fi
echo "problems whose winners differ: $(wc -l < "$OUT/pairs.txt")" >> "$OUT/summary.txt"
while read -r dtype d causal batch n h va vb; do
  (( $(date +%s) - t0 > 540 )) && { echo "time limit: pairs left" >> "$OUT/summary.txt"; break; }
  echo "== $dtype d$d causal$causal B$batch N$n: default $va, heat $vb" >> "$OUT/bench.txt"
  timeout 40 $P/flashtune bench --dtype $dtype --head-dim $d --causal $causal --batch $batch --seqlen-q $n \
    --heads-q $h --variant $va,$vb --rounds 12 >> "$OUT/bench.txt" 2>&1
done < "$OUT/pairs.txt"
kill $smi
grep -h '^==\|^hopper\|^fa2' "$OUT/bench.txt" | awk '{print $1, $2, $3, $4, $5, $6}' >> "$OUT/summary.txt"
cat "$OUT/gpu.txt" "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt pairs.txt bench.txt grid-default.txt grid-heat.txt > /dev/null
