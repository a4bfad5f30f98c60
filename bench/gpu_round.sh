#!/usr/bin/env bash
# One round of GPU work on the GPU machine, in one call: the GPU tests, the default problem
# set (plus d256) tuned end to end from a cold cache, the winners against PyTorch SDPA's flash
# and cuDNN backends, and compute-sanitizer on one variant per head dim. Full logs go to
# $OUT (or ./gpu-round); the short tables are printed last.
#
# usage: bench/gpu_round.sh BIN_DIR   (BIN_DIR holds flashtune and flashtune_gpu_tests built here)
set -uo pipefail
BIN=$(cd "${1:?usage: gpu_round.sh BIN_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-round}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHTUNE_CACHE_DIR=$(mktemp -d)   # cold cubin cache: the tune time below includes NVRTC
FT=$BIN/flashtune
DB=$OUT/flashtune.db
rm -f "$DB"*
summary=()

"$FT" info > "$OUT/info.txt" 2>&1

# 1. GPU tests (kernel vs the float64 reference over the space; driver layer; runtime if built).
start=$(date +%s)
for t in "$BIN"/*_gpu_tests; do
  "$t" --gtest_brief=1 >> "$OUT/gpu_tests.log" 2>&1
  summary+=("$(basename "$t"): exit $? ($(grep -c '^\[  FAILED  \]' "$OUT/gpu_tests.log") failed lines)")
done
summary+=("gpu tests: $(( $(date +%s) - start )) s")

# 2. Tune the default set (bf16/f16 x d64/d128 x causal/not x N 512..16k), cold cache, timed.
start=$(date +%s)
"$FT" tune --db "$DB" > "$OUT/tune.log" 2>&1
rc=$?
t1=$(( $(date +%s) - start ))
summary+=("tune default set (cold): exit $rc, ${t1} s")
start=$(date +%s)
"$FT" tune --db "$DB" --retune --dtypes bf16 --head-dims 64 --causal 0 --seqlens 4096 >> "$OUT/tune.log" 2>&1
summary+=("retune one problem (warm cubin cache): $(( $(date +%s) - start )) s")
"$FT" tune --db "$DB" --head-dims 256 --seqlens 1024,4096,16384 >> "$OUT/tune.log" 2>&1
"$FT" tune --db "$DB" --dtypes bf16 --head-dims 128 --seqlens 8192 --hidden 4096 --tokens 8192 >> "$OUT/tune.log" 2>&1

# 3. Winners against torch SDPA flash and cuDNN, same run, same machine.
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/compare_torch.py" "$DB" --out "$OUT" > "$OUT/compare.txt" 2>&1
summary+=("compare vs torch: exit $?")

# 4. compute-sanitizer memcheck and racecheck, one variant per head dim, small ragged shape.
if command -v compute-sanitizer > /dev/null; then
  for d in 32 64 96 128 160 192 224 256; do
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
        "$FT" bench --head-dim $d --causal --batch 1 --seqlen-q 200 --seqlen-k 333 --heads-q 2 --heads-kv 1 \
        --variant "$("$FT" generate --dtype bf16 --head-dim $d --causal 2>/dev/null | head -n 1)" \
        >> "$OUT/sanitizer.log" 2>&1
      summary+=("sanitizer $tool d$d: exit $?")
    done
  done
fi

echo "==== tune summary (tail) ===="; tail -n 45 "$OUT/tune.log"
echo "==== compare vs torch ===="; sed -n '/^dtype /,$p' "$OUT/compare.txt"
echo "==== gpu tests ===="; grep -E '^\[  (PASSED|FAILED) |checked' "$OUT/gpu_tests.log" | tail -n 50
echo "==== round ===="; printf '%s\n' "${summary[@]}"
