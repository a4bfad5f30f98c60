#!/usr/bin/env bash
# Session 38, call 4: where decode B64 x 2k (0.976x cuDNN by rounds) and B8 x 2k (0.990x) lose,
# on the shipped build with call 2's tuned decode database (PACK/decode.db).
#  1. bench/decode_bench.py --db --rounds 3 on B8 and B64 x 2k (decode_bench's rounds now through
#     perf_report.interleaved: this checks the refactor on the GPU).
#  2. ncu (--clock-control none) of one call each: flashtune's tuned plan (main kernel and
#     combine), SDPA cuDNN and flash (bench/decode_profile.py), with the wave and cycle metrics.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s38/call4.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s38c4 PYTHONUNBUFFERED=1
export FLASHTUNE_CLI=$P/flashtune FLASHTUNE_WORKER=$P/flashtune
mkdir -p "$OUT/bench"
timeout 120 python3 bench/decode_bench.py $P/libflashtune.so --db $P/decode.db --out "$OUT/bench" --batches 8,64 \
  --keys 2048 --rounds 3 > "$OUT/decode.txt" 2>&1
echo "decode bench: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__waves_per_multiprocessor,lts__t_sector_hit_rate.pct,sm__cycles_active.avg,gpc__cycles_elapsed.max,launch__occupancy_limit_shared_mem,sm__inst_executed.sum
DECODE_PROFILE_SHAPES=64x2048,8x2048 DECODE_PROFILE_DB=$P/decode.db timeout 150 ncu --clock-control none \
  --profile-from-start off --csv --page raw --metrics $M python3 bench/decode_profile.py $P/libflashtune.so \
  > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
python3 - "$OUT/ncu.csv" > "$OUT/ncu-table.txt" 2>&1 <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print("no ncu rows"); sys.exit()
h = rows[0]; idx = {n: i for i, n in enumerate(h)}
want = ["Kernel Name", "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__grid_size", "launch__block_size",
        "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic", "launch__waves_per_multiprocessor",
        "sm__cycles_active.avg", "gpc__cycles_elapsed.max", "sm__inst_executed.sum", "lts__t_sector_hit_rate.pct"]
print(" | ".join(w.split("__")[-1][:24] for w in want))
for r in rows[2:]:
    print(" | ".join(r[idx[w]][:44] if w in idx else "?" for w in want))
PY
cat "$OUT/gpu.txt" "$OUT/summary.txt"; grep "^B" "$OUT/decode.txt" | sed 's/ err [0-9.e-]*//g' | cut -c1-260; cat "$OUT/ncu-table.txt"; tail -3 "$OUT/ncu.err"
bash bench/pack_out.sh "$OUT" summary.txt decode.txt ncu-table.txt ncu.csv gpu.txt > /dev/null
