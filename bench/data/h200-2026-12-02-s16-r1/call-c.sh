#!/usr/bin/env bash
# Session 16, call C (run from the checkout root): the GPU suite on main (hopper_bwd the default
# backward on sm_90a), the backward benchmark (untuned defaults vs SDPA flash and cuDNN), decode7's
# round (its branch's build in D7_DIR), then issue 13's grid through the cold default tune's
# database (call A's default.db) against SDPA flash and cuDNN.
# usage: OUT=... bash call.sh CARRY_DIR D7_DIR   (CARRY_DIR: bench/pack_for_gpu.sh build DIR plus
#        call A's default.db; D7_DIR: decode7's pack, see bench/decode7_round.sh)
set -uo pipefail
BIN=$(cd "$1" && pwd); D7=$(cd "$2" && pwd)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
s=(); t=$(date +%s)
OUT=$OUT/suite SUITE_S=120 TEST_S=110 JOBS=6 bash bench/gpu_suite.sh "$BIN" > "$OUT/suite-stdout.txt" 2>&1
s+=("suite: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
( export FLASHTUNE_CACHE_DIR=$(mktemp -d) FLASHTUNE_WORKER=$BIN/flashtune FLASHTUNE_CLI=$BIN/flashtune \
    FLASHTUNE_LIB=$BIN/libflashtune.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
  unset FLASHTUNE_DB
  timeout 110 python3 bench/backward_bench.py --dtypes bf16,f16 --reps 10 ) > "$OUT/bwd-bench.txt" 2>&1
s+=("backward bench: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
LD_LIBRARY_PATH=$D7:/usr/local/cuda/lib64 OUT=$OUT/decode7 bash "$D7/decode7_round.sh" "$D7" > "$OUT/decode7-stdout.txt" 2>&1
s+=("decode7: exit $?, $(( $(date +%s) - t )) s"); t=$(date +%s)
mkdir -p "$OUT/grid"
( export FLASHTUNE_CACHE_DIR=$(mktemp -d) FLASHTUNE_WORKER=$BIN/flashtune PYTHONUNBUFFERED=1
  timeout 120 python3 bench/perf_report.py --lib "$BIN/libflashtune.so" --db "$BIN/default.db" --out "$OUT/grid" \
    --head-dims 64,128,256 --dtypes bf16,f16 --time-limit-s 100 ) > "$OUT/grid-stdout.txt" 2>&1
s+=("grid (default tune's db): exit $?, $(( $(date +%s) - t )) s")
tail -n 6 "$OUT/suite-stdout.txt"
grep -E "^(bf16|f16|geomean|determ|shape)" "$OUT/bwd-bench.txt" | cut -c1-130 | tail -30
tail -n 14 "$OUT/decode7-stdout.txt"
tail -n 12 "$OUT/grid-stdout.txt"
printf '%s\n' "${s[@]}"
cp "$OUT"/grid/perf_report.csv "$OUT"/grid/perf_report.json "$OUT"/ 2>/dev/null
(cd "$OUT" && tar czf logs.tgz suite decode7 grid && rm -rf suite decode7 grid)
