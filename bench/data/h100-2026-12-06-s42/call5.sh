#!/usr/bin/env bash
# Session 42, call 5: how close each system's forward output comes to a float64 reference
# (bench/accuracy.py: relative L2 and largest absolute error, B2 H4 N 512 / 4096, random normal
# inputs, both dtypes, full and causal), NEW at every head dim hopper_fwd serves (64-256, the
# padded 96 / 160 / 224 among them) and OLD at 96 / 160 / 224 (fa2_fwd there), SDPA flash and
# cuDNN on the same inputs. Asked by call 4: hopper_fwd at d224 read 2-3e-3 from SDPA flash
# where d256 reads ~1e-3. Then d96 tuned: `flashtune tune --dtypes bf16 --head-dims 96` (the
# default tune's d96 buckets, now searching hopper_fwd), and bench/perf_report.py d96 through
# that database and untuned, each beside SDPA flash and cuDNN. ~450 s, estimated.
# NEW: main with session 41's two patches applied (decode-one-pass-merge, hopper-padded-head-dims);
# OLD: main (0af7d21).
# usage (GPU): OLD=.devcarry-A NEW=.devcarry-B OUT=$OUT bash bench/data/h100-2026-12-06-s42/call5.sh
set -uo pipefail
t0=$(date +%s)
O=$(cd "${OLD:?}" && pwd) N=$(cd "${NEW:?}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache-s42c5 PYTHONUNBUFFERED=1
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 300 python3 bench/accuracy.py --lib $N/libflashtune.so \
  --json "$OUT/new.json" > "$OUT/new.txt" 2>&1
echo "new: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/gpu.txt"
LD_LIBRARY_PATH=$O:/usr/local/cuda/lib64 timeout 150 python3 bench/accuracy.py --lib $O/libflashtune.so \
  --head-dims 96,160,224 --json "$OUT/old.json" > "$OUT/old.txt" 2>&1
echo "old: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/gpu.txt"
LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 240 $N/flashtune tune --dtypes bf16 --head-dims 96 --decode none \
  --operation fwd --db "$OUT/d96.db" > "$OUT/tune.txt" 2>&1
echo "tune d96: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/gpu.txt"
for db in d96 none; do
  mkdir -p "$OUT/$db"
  LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64 timeout 100 python3 bench/perf_report.py --lib $N/libflashtune.so \
    --db "$OUT/$db.db" --out "$OUT/$db" --head-dims 96 --dtypes bf16 --seqlens 512,2048,8192,16384 --no-extra \
    --rounds 3 > "$OUT/perf-$db.txt" 2>&1
  echo "d96 report, database $db: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/gpu.txt"
done
rm -rf "$OUT/none" "$OUT/d96"
cat "$OUT/gpu.txt"; grep -v "not tuned" "$OUT/new.txt" | sed 's/  hopper_fwd_\|  fa2_fwd_/  /'; echo "== old"; grep -v "not tuned" "$OUT/old.txt"
for db in d96 none; do echo "== d96 report, database $db"; grep -E "^bf16|^d96|^output" "$OUT/perf-$db.txt"; done
tail -3 "$OUT/tune.txt"
bash bench/pack_out.sh "$OUT" gpu.txt new.txt old.txt perf-d96.txt perf-none.txt d96.db
