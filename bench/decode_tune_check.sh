#!/usr/bin/env bash
# Does tuning the decode buckets make decode faster through the runtime? (issue 14/17: with
# the tuner's old per-launch measure, the budgeted decode tune made B8 x 32k/128k 15-16% slower.)
# One GPU call: tunes the 11 decode buckets (bf16 d128, Hq 32, Hkv 8; budgeted) into $OUT/tuned.db,
# then bench/decode_bench.py times the library through that database and, on the same inputs
# in the same run, an identical copy of the library with no database (the untuned defaults),
# dense only, B 1/8/64 x 2k-128k, with SDPA flash and cuDNN. Prints a table last: per shape
# tuned TB/s, untuned TB/s, tuned/untuned (CUDA graphs; and eager), cuDNN TB/s; then the tuned winners.
#
# usage (here, no GPU):  bash bench/decode_tune_check.sh --pack BUILD_DIR CARRY_DIR
#          packs the build (bench/pack_for_gpu.sh), the benchmark scripts, the Python package,
#          and the decode candidates' cubins compiled for sm_90a into CARRY_DIR/ftcache
#          (so the call compiles nothing);
#        (on the GPU)      OUT=... bash bench/decode_tune_check.sh CARRY_DIR
#          step limits: TUNE_S (34), BENCH_S (40); TUNE_ARGS (budget of decode round 4).
set -uo pipefail
if [ "${1:-}" = "--pack" ]; then
  set -e
  BUILD=${2:?usage: decode_tune_check.sh --pack BUILD_DIR CARRY_DIR}
  C=${3:?usage: decode_tune_check.sh --pack BUILD_DIR CARRY_DIR}
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  bash "$ROOT/bench/pack_for_gpu.sh" "$BUILD" "$C"
  mkdir -p "$C/bench" "$C/python" "$C/ftcache"
  cp "$ROOT/bench/decode_tune_check.sh" "$ROOT/bench/decode_bench.py" "$C/bench/"
  rm -rf "$C/python/flashtune" && cp -r "$ROOT/python/flashtune" "$C/python/"
  tmp=$(mktemp -d)
  FLASHTUNE_CACHE_DIR=$(cd "$C/ftcache" && pwd) timeout 900 "$BUILD/flashtune" tune --db "$tmp/compile.db" \
    --decode only --dtypes bf16 --head-dims 128 --compile-only --arch sm_90a > "$C/ftcache/compile.log" 2>&1
  rm -rf "$tmp"
  echo "packed $C: $(ls "$C/ftcache" | grep -c '\.ftcubin$') cubins"
  exit 0
fi
C=$(cd "${1:?usage: decode_tune_check.sh CARRY_DIR}" && pwd)
OUT=${OUT:-$C/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CLI=$C/flashtune FLASHTUNE_WORKER=$C/flashtune PYTHONUNBUFFERED=1
export PYTHONPATH=$C/python:${PYTHONPATH:-}
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache
unset FLASHTUNE_DB FLASHTUNE_ONLINE_TUNE  # the untuned copy must find no database
mkdir -p "$FLASHTUNE_CACHE_DIR" "$C/untuned"
cp "$C"/ftcache/*.ftcubin "$FLASHTUNE_CACHE_DIR/" 2>/dev/null
cp -L "$C/libflashtune.so" "$C/untuned/libflashtune.so"  # named "untuned" in the JSON (base_untuned_*)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/gpu.txt" 2>&1
s=$(date +%s)
timeout ${TUNE_S:-34} "$C/flashtune" tune --db "$OUT/tuned.db" --decode only --dtypes bf16 --head-dims 128 \
  --strategy budgeted ${TUNE_ARGS:---budget-per-problem 10 --budget-total 26s} > "$OUT/tune.log" 2>&1
summary=("tune: exit $? in $(( $(date +%s) - s )) s")
"$C/flashtune" db export --format csv --db "$OUT/tuned.db" --table winners > "$OUT/tuned_winners.csv" 2>&1
s=$(date +%s)
# From an empty folder: ft_runtime_open(NULL) of the untuned copy would read ./flashtune.db.
mkdir -p "$OUT/cwd" && cd "$OUT/cwd" || exit 1
timeout ${BENCH_S:-40} python3 "$C/bench/decode_bench.py" "$C/libflashtune.so" --db "$OUT/tuned.db" --out "$OUT" \
  --layouts dense --baseline "$C/untuned/libflashtune.so" > "$OUT/decode_bench.log" 2>&1
summary+=("decode bench (tuned db; untuned copy as baseline): exit $? in $(( $(date +%s) - s )) s")
grep -E "rror|Traceback" "$OUT/decode_bench.log" | head -5
python3 - "$OUT/decode_bench.json" <<'PY' 2>&1 | tee "$OUT/table.md"
import json, sys
try:
    rows = json.load(open(sys.argv[1]))["rows"]
except Exception as e:
    print(f"no benchmark JSON: {e}"); sys.exit()
def tbps(r, key):
    us = r.get(key)
    return r["kv_bytes"] / us / 1e6 if us and us == us else float("nan")
print("| shape | tuned TB/s | untuned TB/s | tuned/untuned | cuDNN TB/s | tuned/untuned eager |")
print("|---|---|---|---|---|---|")
for r in rows:
    t, u, c = tbps(r, "dense_us"), tbps(r, "base_untuned_us"), tbps(r, "cudnn_us")
    te, ue = r.get("dense_eager_us"), r.get("base_untuned_eager_us")
    eager = f"{ue / te:.3f}" if te and ue else "?"
    print(f"| B{r['batch']} x {r['keys'] // 1024}k | {t:.2f} | {u:.2f} | {t / u:.3f} | {c:.2f} | {eager} |")
print("(ratios > 1: tuned faster; graph replays, median of the benchmark's reps)")
PY
echo "=== winners (tuned.db)"
cut -d, -f1-10 "$OUT/tuned_winners.csv" 2>/dev/null | head -14
printf '%s\n' "${summary[@]}"
