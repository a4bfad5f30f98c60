#!/usr/bin/env bash
# One round of GPU work on the GPU machine: the GPU tests, the default problem set (plus d256)
# tuned end to end from a cold cache, the winners against PyTorch SDPA's flash and cuDNN
# backends, the runtime from Python and its micro-benchmark, and compute-sanitizer on one
# variant per head dim. Full logs go to $OUT (or ./gpu-round); short tables are printed last.
#
# usage: [STEPS="tests tune rerun twice budgeted extra runtime compare sanitize"] bench/gpu_round.sh BIN_DIR [DB]
#   BIN_DIR holds flashtune, flashtune_gpu_tests (and optionally libflashtune.so and
#   flashtune_runtime_bench) built on the development machine: bench/pack_for_gpu.sh makes it.
#   With DB, the tuning database of an earlier round is reused (copied).
#   STEPS picks steps; one device call is limited to 10 minutes, so a full round is two calls:
#   STEPS="tests tune" first (it returns $OUT/flashtune.db), then
#   STEPS="extra runtime compare sanitize" with that database as DB.
#   TUNE_ARGS adds options to the tune steps (e.g. "--strategy budgeted"); EXTRA_ARGS replaces
#   it for step "extra". ROUND_S gives step "compare" whatever is left of that many seconds.
#   FLASHTUNE_TRACE=1 makes the tuner and its worker log each candidate's phase times into tune.log; PERF_ARGS
#   adds options to bench/perf_report.py (e.g. "--head-dims 128,256,64" to order the grid);
#   ROUNDS its rotated rounds per shape (default 1 here, to fit the step's time).
# Every step has its own time limit so the summary is always printed.
set -uo pipefail
BIN=$(cd "${1:?usage: gpu_round.sh BIN_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-round}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}  # $BIN: libbenchmark, libflashtune
export FLASHTUNE_CLI=$BIN/flashtune  # for the GPU tests that run the CLI
export FLASHTUNE_WORKER=$BIN/flashtune  # the CLI the tuner execs as its GPU worker
export FLASHTUNE_CACHE_DIR=$(mktemp -d)   # cold cubin cache: the tune time below includes NVRTC
FT=$BIN/flashtune
DB=$(mktemp -d)/flashtune.db   # copied to $OUT at the end when this round tuned
rm -f "$DB"*
REUSE_DB=${2:-}
[ -n "$REUSE_DB" ] && cp "$REUSE_DB" "$DB"
STEP_S=${STEP_S:-240}
COMPARE_S=${COMPARE_S:-$STEP_S}
ROUND_START=$(date +%s)
# ROUND_S: the whole round's limit; the comparison then gets whatever time is left of it.
[ -n "${ROUND_S:-}" ] && COMPARE_FROM_DEADLINE=1
TUNE_S=${TUNE_S:-540}
STEPS=${STEPS:-tests tune extra compare runtime sanitize}
want() { [[ " $STEPS " == *" $1 "* ]]; }
summary=()

"$FT" info > "$OUT/tune.log" 2>&1  # $OUT brings back at most 8 files: logs are grouped

# 1. GPU tests (kernel vs the float64 reference over the space; driver layer; runtime if built),
#    in one process: the fault test faults in a child process of its own, and the tuner's
#    tests exec FLASHTUNE_WORKER as their worker (CUDA does not survive a fork once initialised).
if want tests; then
  start=$(date +%s)
  timeout "$STEP_S" "$BIN/flashtune_gpu_tests" >> "$OUT/gpu_tests.log" 2>&1
  summary+=("gpu tests: exit $? in $(( $(date +%s) - start )) s")
fi

# 2. Tune the default set (bf16/f16 x d64/d128 x causal/not x N 512..16k), cold cache, timed;
#    a killed run resumes where it stopped when given back as DB.
if want tune; then
  start=$(date +%s)
  timeout "$TUNE_S" "$FT" tune --db "$DB" ${TUNE_ARGS:-} >> "$OUT/tune.log" 2>&1
  summary+=("tune default set: exit $?, $(( $(date +%s) - start )) s")
  cp "$DB" "$OUT/flashtune.db"
fi
# 2b. The same command again with warm caches (cubin cache and database): it resumes, so it
#     only checks what is recorded.
if want rerun; then
  start=$(date +%s)
  timeout "$STEP_S" "$FT" tune --db "$DB" ${TUNE_ARGS:-} >> "$OUT/tune.log" 2>&1
  summary+=("tune default set again, warm: exit $?, $(( $(date +%s) - start )) s")
fi
# 2c. The same set tuned a second time into a fresh database, and the two runs' winners
#     compared (bench/compare_tunes.py): where they differ, both are re-measured side by side
#     in one process (flashtune bench --rounds), so the ratio is the choice, not the drift of
#     the machine between the runs. Target: within 2%.
export_csv() { "$FT" db export --format csv --table winners --db "$1" --output "$1.csv"; }
if want twice; then
  start=$(date +%s)
  DB2=$(mktemp -d)/second.db
  timeout "$TUNE_S" "$FT" tune --db "$DB2" ${TUNE_ARGS:-} >> "$OUT/tune.log" 2>&1
  summary+=("tune default set a second time: exit $?, $(( $(date +%s) - start )) s")
  cp "$DB2" "$OUT/second.db"
  TWICE=$(mktemp)
  { export_csv "$DB" && export_csv "$DB2" &&
    timeout "$STEP_S" python3 "$ROOT/bench/compare_tunes.py" "$DB.csv" "$DB2.csv" --remeasure "$FT"; } > "$TWICE" 2>&1
  summary+=("tuned twice: exit $?: $(tail -n 1 "$TWICE")")
  cat "$TWICE" >> "$OUT/tune.log"  # $OUT brings back at most 8 files
fi
# 2d. The budgeted strategy from a cold cubin cache against the exhaustive winners of DB (the
#     first tune): re-measured side by side, within 3% (one-sided), in <= 25% of the time.
if want budgeted; then
  start=$(date +%s)
  DB3=$(mktemp -d)/budgeted.db
  COLD=$(mktemp -d)  # its own cubin cache, cold like the first tune's; the comparison reuses it
  FLASHTUNE_CACHE_DIR=$COLD timeout "$TUNE_S" "$FT" tune --db "$DB3" --strategy budgeted >> "$OUT/tune.log" 2>&1
  summary+=("tune default set, budgeted, cold cache: exit $?, $(( $(date +%s) - start )) s")
  cp "$DB3" "$OUT/budgeted.db"
  BUDGETED=$(mktemp)
  { export_csv "$DB" && export_csv "$DB3" &&
    FLASHTUNE_CACHE_DIR=$COLD timeout "$STEP_S" python3 "$ROOT/bench/compare_tunes.py" "$DB.csv" "$DB3.csv" --remeasure "$FT" \
      --one-sided --tolerance 0.03; } > "$BUDGETED" 2>&1
  summary+=("budgeted vs exhaustive: exit $?: $(tail -n 1 "$BUDGETED")")
  cat "$BUDGETED" >> "$OUT/tune.log"
fi

# 3. The rest of the benchmark grid: d256 and B1 H32 N8192 d128.
if want extra; then
  start=$(date +%s)
  timeout "$TUNE_S" "$FT" tune --db "$DB" ${EXTRA_ARGS:-${TUNE_ARGS:-}} --head-dims 256 --seqlens 1024,4096,16384 >> "$OUT/tune.log" 2>&1
  timeout "$STEP_S" "$FT" tune --db "$DB" ${EXTRA_ARGS:-${TUNE_ARGS:-}} --dtypes bf16 --head-dims 128 --seqlens 8192 --hidden 4096 --tokens 8192 \
    >> "$OUT/tune.log" 2>&1
  summary+=("tune d256 + B1 H32: exit $?, $(( $(date +%s) - start )) s")
  cp "$DB" "$OUT/flashtune.db"
fi

# 4. The runtime from Python (ctypes, torch tensors, torch's stream) and its host overhead.
if want runtime && [ -e "$BIN/libflashtune.so" ]; then
  # The package of python/ from this tree over $BIN's library: a small model with SDPA swapped out.
  PYTHONPATH=$ROOT/python FLASHTUNE_LIB=$BIN/libflashtune.so FLASHTUNE_DB=$DB \
    timeout 120 python3 "$ROOT/examples/python/sdpa_swap.py" >> "$OUT/checks.log" 2>&1
  summary+=("python example sdpa_swap.py: exit $?")
fi
if want runtime && [ -x "$BIN/flashtune_runtime_bench" ]; then
  # The first-call benchmark needs its small problem tuned (seconds).
  timeout 120 "$FT" tune --db "$DB" --dtypes bf16 --head-dims 64 --causal 0 --seqlens 256 --hidden 256 --tokens 512 \
    >> "$OUT/checks.log" 2>&1
  FLASHTUNE_DB="$DB" FLASHTUNE_BENCH_DB="$DB" timeout 120 "$BIN/flashtune_runtime_bench" >> "$OUT/checks.log" 2>&1
  summary+=("runtime bench: exit $?")
fi

# 5. Winners against torch SDPA flash and cuDNN, same run, same machine.
if [ -n "${COMPARE_FROM_DEADLINE:-}" ]; then COMPARE_S=$(( ROUND_START + ROUND_S - $(date +%s) )); fi
# Through the runtime API when libflashtune.so is here (bench/perf_report.py: table, CSV, JSON,
# PNG), else the winners' raw cubins (bench/compare_torch.py).
if ! want compare; then
  :
elif [ -e "$BIN/libflashtune.so" ]; then
  PYTHONUNBUFFERED=1 timeout "$COMPARE_S" python3 "$ROOT/bench/perf_report.py" --lib "$BIN/libflashtune.so" --db "$DB" \
    --out "$OUT" --time-limit-s $(( COMPARE_S - 30 )) --rounds "${ROUNDS:-1}" ${PERF_ARGS:-} > "$OUT/compare.txt" 2>&1
  summary+=("perf report vs torch (runtime API): exit $?")
else
  PYTHONUNBUFFERED=1 timeout "$STEP_S" python3 "$ROOT/bench/compare_torch.py" "$DB" --out "$OUT" > "$OUT/compare.txt" 2>&1
  summary+=("compare vs torch (raw cubins): exit $?")
fi

# 6. compute-sanitizer memcheck and racecheck, one variant per head dim, small ragged shape.
if want sanitize && command -v compute-sanitizer > /dev/null; then
  for d in ${SANITIZE_DIMS:-32 64 96 128 160 192 224 256}; do
    for tool in memcheck racecheck; do
      timeout 120 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
        "$FT" bench --head-dim $d --causal --batch 1 --seqlen-q 200 --seqlen-k 333 --heads-q 2 --heads-kv 1 \
        --variant "$("$FT" generate --dtype bf16 --head-dim $d --causal 2>/dev/null | head -n 1)" \
        >> "$OUT/checks.log" 2>&1
      summary+=("sanitizer $tool d$d: exit $?")
    done
  done
fi

echo "==== tune summary (tail) ===="; tail -n 45 "$OUT/tune.log" 2>/dev/null
echo "==== compare vs torch ===="; tail -n 60 "$OUT/compare.txt"
echo "==== gpu tests ===="; grep -E '^\[  (PASSED|FAILED|SKIPPED) |checked|tests ran' "$OUT/gpu_tests.log" | tail -n 60
echo "==== runtime ===="; grep -E 'PASS|FAIL|BM_|error' "$OUT/checks.log" 2>/dev/null | tail -n 20
echo "==== round ===="; printf '%s\n' "${summary[@]}"
