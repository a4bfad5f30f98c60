#!/usr/bin/env bash
# Session 50, call 8 (prepared for a later session, after call7.sh passed): paged-claims.patch's
# speed. `bench/varlen_bench.py` at d128 and d64 on MAIN and on PAGED (main + the patch), one
# after the other: its "paged16 short" batch (64 sequences of 64-963 tokens, keys on shuffled
# 16-key pages, queries packed) runs main's untuned paged tile (the class default, not
# persistent) against the patch's (the short-stream p2 twin, claimed; "static": the same kernel
# without the workspace). The other rows are a check that nothing else moved.
# On an H200: issue 13's forward grid on MAIN instead.
# usage (GPU): MAIN=.devcarry-N PAGED=.devcarry-P OUT=$OUT [LIMIT=560] bash bench/data/h100-2026-12-07-s50/call8.sh
source bench/device_call.sh 560
N=$(cd "${MAIN:?}" && pwd) P=$(cd "${PAGED:?}" && pwd)
h200_grid "$N" 64,128,256
card_line
for d in 128 64; do
  for run in "$N main" "$P paged"; do
    set -- $run
    [ "$(left)" -lt 70 ] && { echo "d$d $2: skipped (limit)" | tee -a "$OUT/summary.txt"; continue; }
    LD_LIBRARY_PATH=$1:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ftc-$2 timeout $(( $(left) - 5 )) \
      python3 bench/varlen_bench.py "$1/libflashtune.so" --head-dim $d --out "$OUT/vb-$2-d$d" > "$OUT/varlen-$2-d$d.txt" 2>&1
    echo "varlen d$d $2: exit $? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
  done
done
for f in "$OUT"/varlen-*.txt; do
  echo "== $(basename $f)"; grep -E "ft (paged16|varlen) short|claimed / static" "$f" | tail -8 | cut -c1-110
done
cat "$OUT/summary.txt"
bash bench/pack_out.sh "$OUT" gpu.txt summary.txt > /dev/null
