#!/usr/bin/env bash
# Issue 17 rounds on one H200, each from a cold cubin cache. usage: [STEPS=...] bench/coverage_round.sh BIN_DIR
# (BIN_DIR holds the flashtune CLI built here; logs to $OUT). Steps:
#   guess     tune bf16 d96, d128, d192 at N $SEQ (default 1024,16384; strategy auto: d128
#             exhaustive, d96 and d192 budgeted), then for every d96/d192 problem hide its
#             class's winners and time the runtime's plan (flashtune plan) against the tuned
#             winner (flashtune bench, both in one run, alternating)
#   budgeted  tune bf16 $HEAD_DIMS (default 96,192,256) at every default length, causal or not,
#             under strategy auto (budgeted for those head dims), timed
# TUNE_S limits each tune (default 150 s).
set -uo pipefail
BIN=$(cd "$1" && pwd)
OUT=${OUT:-/tmp/cov-out}
STEPS=${STEPS:-guess}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_WORKER=$BIN/flashtune
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
FT=$BIN/flashtune
want() { [[ " $STEPS " == *" $1 "* ]]; }
# timed_tune NAME DB ARGS...: one tune, its log $OUT/NAME-tune.log, its time $OUT/NAME-time.txt.
timed_tune() {
  local name=$1 db=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  timeout "${TUNE_S:-150}" "$FT" tune --db "$db" "$@" > "$OUT/$name-tune.log" 2>&1
  local rc=$?
  echo "tune rc=$rc seconds=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" | tee "$OUT/$name-time.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
if want budgeted; then
  timed_tune budgeted "$OUT/budgeted.db" --dtypes bf16 --head-dims "${HEAD_DIMS:-96,192,256}"
  grep -v "^  " "$OUT/budgeted-tune.log" | tail -40
fi
want guess || exit 0
DB=$OUT/coverage.db
rm -f "$DB"*
timed_tune guess "$DB" --dtypes bf16 --head-dims 128,96,192 --seqlens-q "${SEQ:-1024,16384}"
"$FT" db export --db "$DB" --format csv > "$OUT/trials.csv" 2>/dev/null
HIDDEN=$OUT/hidden.db
cp "$DB" "$HIDDEN"
python3 - "$HIDDEN" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM winners WHERE head_dim IN (96, 192)"); c.commit()
PY
python3 - "$DB" "$FT" "$HIDDEN" "$OUT" <<'PY' 2>&1 | tee "$OUT/guess.txt"
import json, sqlite3, subprocess, sys
db, ft, hidden, out = sys.argv[1:5]
c = sqlite3.connect(db)
rows = c.execute("SELECT p.dtype, p.head_dim, p.causal, p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, v.uri, w.median_us "
                 "FROM winners w JOIN problems p ON p.id = w.problem_id JOIN variants v ON v.id = w.variant_id "
                 "WHERE w.head_dim IN (96, 192) ORDER BY w.head_dim, w.causal, p.seqlen_q").fetchall()
print("%-40s %-52s %-52s %9s %9s %6s" % ("problem", "tuned winner", "guess (hidden class)", "tuned_us", "guess_us", "ratio"))
for dt, d, causal, b, nq, nk, hq, hkv, uri, us in rows:
    shape = ["--dtype", dt, "--head-dim", str(d), "--causal", str(causal), "--batch", str(b), "--seqlen-q", str(nq),
             "--seqlen-k", str(nk), "--heads-q", str(hq), "--heads-kv", str(hkv)]
    plan = subprocess.run([ft, "plan", "--db", hidden, "--json"] + shape, capture_output=True, text=True)
    try:
        p = json.loads(plan.stdout)
    except Exception:
        print("plan failed:", plan.stdout, plan.stderr); continue
    guess = p["variant"]
    with open(out + "/plan-%s-d%d-c%d-n%d.json" % (dt, d, causal, nq), "w") as f: f.write(plan.stdout)
    if guess == uri:
        print("%-40s %-52s %-52s %9.1f %9s %6.3f  (%s)" % ("%s d%d c%d B%d N%d H%d" % (dt, d, causal, b, nq, hq), uri, "same", us, "-", 1.0, p["source"]))
        continue
    bench = subprocess.run([ft, "bench", "--json", "--rounds", "3", "--variant", uri + "," + guess] + shape, capture_output=True, text=True)
    t = {}
    for line in bench.stdout.splitlines():
        try:
            j = json.loads(line); t[j["variant"]] = j["median_us"] if j.get("status") == "ok" else None
        except Exception: pass
    a, g = t.get(uri), t.get(guess)
    ratio = (g / a) if a and g else float("nan")
    print("%-40s %-52s %-52s %9s %9s %6.3f  (%s)" % ("%s d%d c%d B%d N%d H%d" % (dt, d, causal, b, nq, hq), uri, guess,
          "%.1f" % a if a else "-", "%.1f" % g if g else "-", ratio, p["source"]))
    if not (a and g): print("   bench:", bench.stdout[-400:], bench.stderr[-400:])
PY
tail -25 "$OUT/guess-tune.log" | grep -v "^  "
cat "$OUT/guess-time.txt"
