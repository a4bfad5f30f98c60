#!/usr/bin/env bash
# Issue 17 on one H200: GQA ratio 8 against MHA in the default tune, then online tuning
# converging on a planted untuned shape under a calling thread. usage: bench/online_round.sh BIN_DIR
# (BIN_DIR: the CLI, libflashtune.so and flashtune_online_bench built here, as
# bench/pack_for_gpu.sh packs them; logs to $OUT). Steps ($STEPS, default "gqa online"):
#   gqa     tune bf16 d128 and d64, causal and not, N 4096 (hidden 2048, B 4; the default
#           strategy: d128 exhaustive, d64 budgeted) once with Hkv = Hq and once with
#           Hq/Hkv = 8, then time both winners on each GQA-8 problem (flashtune bench,
#           alternating rounds): does GQA change the winner, and by how much?
#   online  flashtune_online_bench on a copy of the MHA database: the planted shape bf16 d128
#           non-causal B2 N8192 H16 is untuned (its class is tuned at N 4096, so the guess is the
#           nearest bucket's winner); before / during / after latency, time to the swap.
set -uo pipefail
BIN=$(cd "$1" && pwd)
OUT=${OUT:-/tmp/online-out}
STEPS=${STEPS:-gqa online}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CACHE_DIR=$(mktemp -d)
FT=$BIN/flashtune
want() { [[ " $STEPS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
# One problem set per ratio, from $GQA_SHAPES ("dtype:D:causal:B:N:Hq" words; default: bf16 d128
# Hq 16 and d64 Hq 32 (hidden 2048), causal and not, B 4, N 4096).
GQA_SHAPES=${GQA_SHAPES:-bf16:128:0:4:4096:16 bf16:64:0:4:4096:32 bf16:128:1:4:4096:16 bf16:64:1:4:4096:32}
problems() {  # $1: K/V heads divisor (1 = MHA, 8 = GQA-8)
  local s dt d c b n hq
  for s in $GQA_SHAPES; do
    IFS=: read -r dt d c b n hq <<< "$s"
    echo "dtype=$dt head_dim=$d causal=$c batch=$b seqlen_q=$n heads_q=$hq heads_kv=$((hq / $1))"
  done
}
if want gqa; then
  for r in 1 8; do
    problems $r > "$OUT/gqa$r.problems"
    t0=$(date +%s.%N)
    timeout 45 "$FT" tune --db "$OUT/gqa$r.db" --problem-set "$OUT/gqa$r.problems" > "$OUT/gqa$r-tune.log" 2>&1
    echo "ratio $r: tune rc=$? seconds=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" | tee -a "$OUT/gqa-time.txt"
    "$FT" db export --db "$OUT/gqa$r.db" --format csv > "$OUT/gqa$r-trials.csv" 2>/dev/null
  done
  python3 - "$FT" "$OUT" <<'PY' 2>&1 | tee "$OUT/gqa-compare.txt"
import json, sqlite3, subprocess, sys
ft, out = sys.argv[1:3]
def winners(path):
    c = sqlite3.connect(path)
    rows = c.execute("SELECT p.head_dim, p.causal, p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, v.uri, w.median_us, p.dtype "
                     "FROM winners w JOIN problems p ON p.id = w.problem_id JOIN variants v ON v.id = w.variant_id").fetchall()
    return {(str(r[9]), str(r[0]), str(r[1]), str(r[3])): (r[7], r[8], {"batch": str(r[2]), "seqlen_q": str(r[3]),
            "seqlen_k": str(r[4]), "heads_q": str(r[5]), "heads_kv": str(r[6])}) for r in rows}
mha, gqa = winners(out + "/gqa1.db"), winners(out + "/gqa8.db")
print("%-33s %-52s %-52s %9s %9s %7s" % ("GQA-8 problem", "MHA winner", "GQA-8 winner", "mha_us", "gqa_us", "loss"))
for key in sorted(gqa):
    dt, d, c, _ = key
    g_uri, _, r = gqa[key]
    m_uri = mha[key][0]
    shape = ["--dtype", dt, "--head-dim", d, "--causal", c, "--batch", r["batch"], "--seqlen-q", r["seqlen_q"],
             "--seqlen-k", r["seqlen_k"], "--heads-q", r["heads_q"], "--heads-kv", r["heads_kv"]]
    name = "%s d%s c%s B%s N%s Hq%s Hkv%s" % (dt, d, c, r["batch"], r["seqlen_q"], r["heads_q"], r["heads_kv"])
    if g_uri == m_uri:
        print("%-33s %-52s %-52s %9s %9s %7s" % (name, m_uri, "same", "-", "-", "0"))
        continue
    b = subprocess.run([ft, "bench", "--json", "--rounds", "3", "--variant", m_uri + "," + g_uri] + shape,
                       capture_output=True, text=True)
    rows = [json.loads(line) for line in b.stdout.splitlines() if line.startswith("{")]
    t = {j["variant"]: j["median_us"] for j in rows if j.get("status") == "ok"}
    a, g = t.get(m_uri), t.get(g_uri)
    loss = "%.1f%%" % (100 * (a / g - 1)) if a and g else "?"
    print("%-33s %-52s %-52s %9s %9s %7s" % (name, m_uri, g_uri, "%.1f" % a if a else "-", "%.1f" % g if g else "-", loss))
    if not (a and g): print("   bench:", b.stdout[-300:], b.stderr[-300:])
PY
fi
if want online; then
  DB=$OUT/online.db
  if [ -f "$OUT/gqa1.db" ]; then cp "$OUT/gqa1.db" "$DB"; else rm -f "$DB"; fi
  timeout 60 "$BIN/flashtune_online_bench" --cli "$FT" --db "$DB" --dtype bf16 --head-dim 128 --causal 0 \
      --batch 2 --seqlen 8192 --heads 16 --before-s 3 --after-s 3 --budget 16 --timeout-s 45 \
      > "$OUT/online-bench.txt" 2> "$OUT/online-bench.log"
  echo "online bench rc=$?" >> "$OUT/online-bench.txt"
  cp "$DB".online/*.log "$OUT/" 2>/dev/null
fi
echo "=== summary"
cat "$OUT/gqa-time.txt" "$OUT/gqa-compare.txt" 2>/dev/null
cat "$OUT/online-bench.txt" 2>/dev/null
